// libFuzzer target: any byte string given to the GGUF reader must either load or fail with
// qinfer::Error — never crash, hang, leak or allocate by an unchecked field. A file that
// loads is also walked (metadata, arrays, tensor data) and written back.
#include <cstddef>
#include <cstdint>

#include "loader/gguf.hpp"
#include "loader/gguf_writer.hpp"
#include "qinfer/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const qinfer::GgufFile f = qinfer::GgufFile::from_bytes(data, size, "fuzz.gguf");
    for (const qinfer::MetaEntry& e : f.metadata()) {
      if (e.value.type == qinfer::ValueType::ARRAY &&
          e.value.array.elem_type() == qinfer::ValueType::STRING) {
        (void)e.value.array.strings();
      }
    }
    volatile uint8_t sink = 0;
    for (const qinfer::TensorInfo& t : f.tensors()) {
      if (t.size_bytes > 0) sink ^= t.data[0] ^ t.data[t.size_bytes - 1];
    }
    (void)qinfer::GgufWriter::copy_of(f).to_bytes();
  } catch (const qinfer::Error&) {
  }
  return 0;
}
