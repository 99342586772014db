// libFuzzer target past the file format: a real model (stories260K, or the file named by
// QINFER_FUZZ_MODEL) whose metadata values and tensor infos (type, dimensions) the fuzzer
// rewrites in place, keeping the file's layout and data section. Each input is a list of
// edits: a 2-byte field index and 8 value bytes, written over the field (truncated to its
// size). The edited file is loaded and three tokens generated: the run must end normally
// or with qinfer::Error, never a crash, hang or sanitizer report.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "loader/gguf.hpp"
#include "qinfer/error.hpp"

namespace {

struct Field {
  size_t offset, size;
};

struct Base {
  std::vector<uint8_t> bytes;
  std::vector<Field> fields;
};

// Walks the header of a well-formed GGUF file and lists every editable field: numeric
// metadata values, the elements of numeric arrays, the bytes of strings, and each tensor's
// dimension count, dimensions and type.
class Walker {
 public:
  explicit Walker(Base& b) : b_(b) {}
  void walk() {
    pos_ = 8;  // magic, version
    const uint64_t n_tensors = u64(), n_kv = u64();
    for (uint64_t i = 0; i < n_kv; ++i) {
      skip_string();  // key
      value(u32());
    }
    for (uint64_t i = 0; i < n_tensors; ++i) {
      skip_string();
      add(pos_, 4);
      const uint32_t n_dims = u32();
      for (uint32_t d = 0; d < n_dims; ++d) add(pos_, 8), pos_ += 8;
      add(pos_, 4);   // type
      pos_ += 4 + 8;  // type, offset
    }
  }

 private:
  uint32_t u32() {
    uint32_t v;
    std::memcpy(&v, b_.bytes.data() + pos_, 4);
    pos_ += 4;
    return v;
  }
  uint64_t u64() {
    uint64_t v;
    std::memcpy(&v, b_.bytes.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  void add(size_t off, size_t size) { b_.fields.push_back({off, size}); }
  void skip_string() { pos_ += u64(); }
  void string_field() {
    const uint64_t n = u64();
    if (n > 0) add(pos_, n);
    pos_ += n;
  }
  static size_t scalar_size(uint32_t t) {
    static const size_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < 13 ? sizes[t] : 0;
  }
  void value(uint32_t type) {
    if (type == 8) return string_field();
    if (type == 9) {
      const uint32_t elem = u32();
      const uint64_t n = u64();
      for (uint64_t i = 0; i < n; ++i) value(elem);
      return;
    }
    add(pos_, scalar_size(type));
    pos_ += scalar_size(type);
  }
  Base& b_;
  size_t pos_ = 0;
};

const Base& base() {
  static const Base b = [] {
    Base out;
    const char* env = std::getenv("QINFER_FUZZ_MODEL");
    const std::string path = env != nullptr ? env : QINFER_FUZZ_DEFAULT_MODEL;
    std::ifstream f(path, std::ios::binary);
    out.bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (out.bytes.empty()) std::abort();  // no base model: nothing to fuzz
    Walker(out).walk();
    return out;
  }();
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Base& b = base();
  std::vector<uint8_t> file = b.bytes;
  for (size_t i = 0; i + 10 <= size; i += 10) {
    uint16_t index;
    std::memcpy(&index, data + i, 2);
    const Field& f = b.fields[index % b.fields.size()];
    std::memcpy(file.data() + f.offset, data + i + 2, f.size < 8 ? f.size : 8);
  }
  try {
    const auto model = qinfer::engine::Model::from_file(
        qinfer::GgufFile::from_bytes(file.data(), file.size(), "fuzz.gguf"));
    qinfer::engine::Session session(model, {.n_ctx = 64, .n_threads = 1});
    const auto prompt = model->tokenizer->encode("Once upon a time", true, true);
    if (prompt.empty()) return 0;
    qinfer::engine::GenerateOptions o;
    o.max_tokens = 3;
    o.sampler.temperature = 0;
    session.generate(prompt, o);
  } catch (const qinfer::Error&) {
  }
  return 0;
}
