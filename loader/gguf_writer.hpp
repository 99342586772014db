// GGUF writer: metadata of every value type, tensors of any type, any alignment. Files are
// written to a temporary name and renamed, so a failure never leaves half a file behind.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "loader/gguf.hpp"

namespace qinfer {

// Writes `size` bytes to `path` through a temporary file renamed into place: a failure never
// leaves a partial file at `path`.
void write_file_atomically(const std::string& path, const void* data, size_t size);
// The same, with the bytes written by `write` (which may throw: the file is then removed).
void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write);

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}
  // Everything in `file`: metadata (raw bytes, same order) and tensors (same order).
  static GgufWriter copy_of(const GgufFile& file);

  // Sets general.alignment (adding the key) and pads the data to it.
  void set_alignment(uint32_t alignment);
  uint32_t alignment() const { return alignment_; }

  // A value already serialized as GGUF lays it out after the type field.
  void add_raw(std::string_view key, ValueType type, const uint8_t* bytes, size_t size);
  void add_u8(std::string_view key, uint8_t v) { add_scalar(key, ValueType::U8, v); }
  void add_i8(std::string_view key, int8_t v) { add_scalar(key, ValueType::I8, v); }
  void add_u16(std::string_view key, uint16_t v) { add_scalar(key, ValueType::U16, v); }
  void add_i16(std::string_view key, int16_t v) { add_scalar(key, ValueType::I16, v); }
  void add_u32(std::string_view key, uint32_t v) { add_scalar(key, ValueType::U32, v); }
  void add_i32(std::string_view key, int32_t v) { add_scalar(key, ValueType::I32, v); }
  void add_u64(std::string_view key, uint64_t v) { add_scalar(key, ValueType::U64, v); }
  void add_i64(std::string_view key, int64_t v) { add_scalar(key, ValueType::I64, v); }
  void add_f32(std::string_view key, float v) { add_scalar(key, ValueType::F32, v); }
  void add_f64(std::string_view key, double v) { add_scalar(key, ValueType::F64, v); }
  void add_bool(std::string_view key, bool v) { add_scalar(key, ValueType::BOOL, uint8_t{v}); }
  void add_string(std::string_view key, std::string_view v);
  void add_string_array(std::string_view key, const std::vector<std::string>& v);
  // A numeric array: `count` elements of `elem` at `data` (little-endian).
  void add_array(std::string_view key, ValueType elem, const void* data, uint64_t count);

  // Tensor data is referenced, not copied: it must live until write()/to_bytes().
  void add_tensor(std::string_view name, TensorType type, std::vector<int64_t> shape,
                  const void* data, size_t size_bytes);
  // The same, with the data owned by the writer.
  void add_tensor_owned(std::string_view name, TensorType type, std::vector<int64_t> shape,
                        std::vector<uint8_t> data);
  // The same, with the data made by `fill` (into `size_bytes` zeroed bytes) when written:
  // write() holds one generated tensor at a time, so files larger than memory can be made.
  void add_tensor_generated(std::string_view name, TensorType type, std::vector<int64_t> shape,
                            size_t size_bytes, std::function<void(uint8_t*)> fill);

  std::vector<uint8_t> to_bytes() const;
  // Streams the file to `path` (through a temporary file renamed into place).
  void write(const std::string& path) const;

 private:
  struct Kv {
    std::string key;
    ValueType type;
    std::vector<uint8_t> bytes;
  };
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> shape;
    const uint8_t* data;
    size_t size_bytes;
    std::vector<uint8_t> owned;
    std::function<void(uint8_t*)> fill;
  };
  template <typename T>
  void add_scalar(std::string_view key, ValueType type, T v) {
    std::vector<uint8_t> b(sizeof v);
    std::memcpy(b.data(), &v, sizeof v);
    put(key, type, std::move(b));
  }
  void put(std::string_view key, ValueType type, std::vector<uint8_t> bytes);
  std::vector<uint8_t> header() const;  // up to the (aligned) start of the tensor data
  void emit(const std::function<void(const uint8_t*, size_t)>& sink) const;

  uint32_t version_;
  uint32_t alignment_ = 32;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace qinfer
