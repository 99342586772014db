// GGUF reader: maps a file (or the shards of a split model) read-only, validates every field
// before use, and exposes typed metadata and zero-copy tensor views.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/types.hpp"
#include "loader/mapped_file.hpp"

namespace qinfer {

enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;
std::string_view value_type_name(ValueType t);
// Bytes of one element of a fixed-size type (0 for STRING and ARRAY).
size_t value_type_size(ValueType t);

// A view of an array value inside the mapped file. Elements are decoded on access, so the
// tokenizer's 32k-entry vocabulary costs nothing until it is read.
class ArrayView {
 public:
  ArrayView() = default;
  ArrayView(ValueType elem, uint64_t count, const uint8_t* data, uint64_t bytes)
      : elem_(elem), count_(count), data_(data), bytes_(bytes) {}
  ValueType elem_type() const { return elem_; }
  uint64_t size() const { return count_; }
  const uint8_t* data() const { return data_; }  // raw little-endian elements
  uint64_t bytes() const { return bytes_; }
  // Element i of a numeric array converted to the requested type (throws on a type mismatch).
  template <typename T>
  T at(uint64_t i) const;
  // All strings of a string array, in order (views into the mapping).
  std::vector<std::string_view> strings() const;
  template <typename T>
  std::vector<T> to_vector() const {
    std::vector<T> out(count_);
    for (uint64_t i = 0; i < count_; ++i) out[i] = at<T>(i);
    return out;
  }

 private:
  ValueType elem_ = ValueType::U8;
  uint64_t count_ = 0;
  const uint8_t* data_ = nullptr;
  uint64_t bytes_ = 0;
};

// One metadata value: its type, the raw serialized bytes (for the writer's round trip) and
// decoded accessors.
struct Value {
  ValueType type = ValueType::U8;
  const uint8_t* raw = nullptr;  // serialized value, after the type field
  uint64_t raw_bytes = 0;
  ArrayView array;  // valid when type == ARRAY

  bool is_integer() const;
  bool is_float() const { return type == ValueType::F32 || type == ValueType::F64; }
  int64_t as_int() const;    // any integer type or bool
  uint64_t as_uint() const;  // any non-negative integer
  double as_double() const;  // any numeric type
  bool as_bool() const;
  std::string_view as_string() const;
};

struct MetaEntry {
  std::string key;
  Value value;
  uint64_t offset;  // byte offset of the key in its file
};

struct TensorInfo {
  std::string name;
  TensorType type = TensorType::F32;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the row length (GGUF order)
  uint64_t offset = 0;           // relative to the data section of its shard
  uint64_t size_bytes = 0;
  const uint8_t* data = nullptr;  // into the mapping (or the aligned buffer)
  uint32_t shard = 0;

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  size_t row_bytes() const { return size_bytes / static_cast<size_t>(n_rows()); }
};

struct OpenOptions {
  bool use_mmap = true;     // false: read into an aligned heap buffer
  bool open_splits = true;  // open every shard of an X-00001-of-0000N.gguf model
};

class GgufFile {
 public:
  static GgufFile open(const std::string& path, const OpenOptions& options = {});
  // Parse an in-memory image (tests and the fuzzer); the bytes are copied.
  static GgufFile from_bytes(const uint8_t* data, size_t size, const std::string& name);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t n_shards() const { return shards_.size(); }
  uint64_t data_offset(size_t shard = 0) const;

  const std::vector<MetaEntry>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // Typed getters: throw kMissingKey when absent, kTypeMismatch naming the key, the expected
  // and the actual type.
  const Value& get(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  int64_t get_int(std::string_view key) const;  // any integer type
  float get_f32(std::string_view key) const;    // f32 (or f64)
  bool get_bool(std::string_view key) const;
  std::string_view get_string(std::string_view key) const;
  ArrayView get_array(std::string_view key, std::optional<ValueType> elem = std::nullopt) const;
  // The same, with a default when the key is absent (a present key of the wrong type throws).
  uint32_t get_u32_or(std::string_view key, uint32_t fallback) const;
  float get_f32_or(std::string_view key, float fallback) const;
  bool get_bool_or(std::string_view key, bool fallback) const;
  std::string get_string_or(std::string_view key, std::string_view fallback) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Bytes of a tensor the model no longer reads from the file (it copied them): their whole
  // pages leave the process's resident memory where the file is mapped (MappedFile::
  // drop_pages). Reading them again stays correct.
  void drop_pages(const TensorInfo& t) const;

  struct Shard;  // one mapped file of the model (defined in gguf.cpp)

 private:
  GgufFile() = default;
  void add_shard(std::unique_ptr<Shard> shard, bool first);
  std::string describe(std::string_view what) const;

  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<MetaEntry> metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> meta_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

// "model-00001-of-00003.gguf" -> {"model", 1, 3}; nullopt when the name has no such suffix.
struct SplitName {
  std::string prefix;
  int index;
  int count;
};
std::optional<SplitName> parse_split_name(const std::string& path);
std::string make_split_name(const std::string& prefix, int index, int count);

}  // namespace qinfer
