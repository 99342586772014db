#include "loader/gguf.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <limits>

#include "loader/byte_reader.hpp"
#include "qinfer/error.hpp"

namespace qinfer {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read little-endian
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;
// Smallest possible encodings, used to refuse absurd counts before any allocation.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // key length, type, one byte of value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7f >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n;
  }
  return true;
}

template <typename T>
T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;  // the host is little-endian (checked at compile time below)
}
static_assert(std::endian::native == std::endian::little, "qinfer assumes a little-endian host");

}  // namespace

std::string_view value_type_name(ValueType t) {
  static constexpr std::string_view names[kValueTypeCount] = {
      "u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
      "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < kValueTypeCount ? names[i] : "invalid";
}

size_t value_type_size(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL:
      return 1;
    case ValueType::U16:
    case ValueType::I16:
      return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
      return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
      return 8;
    default:
      return 0;
  }
}

// ---------------------------------------------------------------- values

namespace {

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::U16:
    case ValueType::I16:
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::U64:
    case ValueType::I64:
      return true;
    default:
      return false;
  }
}

// Decodes one fixed-size scalar at p as a double/int64 pair.
int64_t scalar_as_int(ValueType t, const uint8_t* p) {
  switch (t) {
    case ValueType::U8:
      return load_le<uint8_t>(p);
    case ValueType::I8:
      return load_le<int8_t>(p);
    case ValueType::U16:
      return load_le<uint16_t>(p);
    case ValueType::I16:
      return load_le<int16_t>(p);
    case ValueType::U32:
      return load_le<uint32_t>(p);
    case ValueType::I32:
      return load_le<int32_t>(p);
    case ValueType::U64:
      return static_cast<int64_t>(load_le<uint64_t>(p));
    case ValueType::I64:
      return load_le<int64_t>(p);
    case ValueType::BOOL:
      return load_le<uint8_t>(p) != 0;
    default:
      throw Error(ErrorCode::kTypeMismatch, "value is not an integer");
  }
}

double scalar_as_double(ValueType t, const uint8_t* p) {
  if (t == ValueType::F32) return load_le<float>(p);
  if (t == ValueType::F64) return load_le<double>(p);
  if (t == ValueType::U64) return static_cast<double>(load_le<uint64_t>(p));
  return static_cast<double>(scalar_as_int(t, p));
}

}  // namespace

template <typename T>
T ArrayView::at(uint64_t i) const {
  if (i >= count_) throw Error(ErrorCode::kInvalidArgument, "array index out of range");
  const size_t es = value_type_size(elem_);
  if (es == 0) throw Error(ErrorCode::kTypeMismatch, "array of strings read as numbers");
  const uint8_t* p = data_ + i * es;
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(scalar_as_double(elem_, p));
  } else {
    return static_cast<T>(scalar_as_int(elem_, p));
  }
}
template float ArrayView::at<float>(uint64_t) const;
template double ArrayView::at<double>(uint64_t) const;
template int32_t ArrayView::at<int32_t>(uint64_t) const;
template uint32_t ArrayView::at<uint32_t>(uint64_t) const;
template int64_t ArrayView::at<int64_t>(uint64_t) const;
template uint8_t ArrayView::at<uint8_t>(uint64_t) const;
template int8_t ArrayView::at<int8_t>(uint64_t) const;
template bool ArrayView::at<bool>(uint64_t) const;

std::vector<std::string_view> ArrayView::strings() const {
  if (elem_ != ValueType::STRING) {
    throw Error(ErrorCode::kTypeMismatch,
                "array of " + std::string(value_type_name(elem_)) + " read as strings");
  }
  std::vector<std::string_view> out;
  out.reserve(count_);
  const uint8_t* p = data_;
  for (uint64_t i = 0; i < count_; ++i) {  // lengths were bounds-checked when the file was opened
    const auto len = load_le<uint64_t>(p);
    out.emplace_back(reinterpret_cast<const char*>(p + 8), len);
    p += 8 + len;
  }
  return out;
}

bool Value::is_integer() const { return is_integer_type(type); }

int64_t Value::as_int() const {
  if (!is_integer_type(type) && type != ValueType::BOOL) {
    throw Error(ErrorCode::kTypeMismatch,
                "expected an integer, found " + std::string(value_type_name(type)));
  }
  return scalar_as_int(type, raw);
}

uint64_t Value::as_uint() const {
  if (type == ValueType::U64) return load_le<uint64_t>(raw);
  const int64_t v = as_int();
  if (v < 0) throw Error(ErrorCode::kTypeMismatch, "expected a non-negative integer");
  return static_cast<uint64_t>(v);
}

double Value::as_double() const {
  if (value_type_size(type) == 0) {
    throw Error(ErrorCode::kTypeMismatch,
                "expected a number, found " + std::string(value_type_name(type)));
  }
  return scalar_as_double(type, raw);
}

bool Value::as_bool() const {
  if (type != ValueType::BOOL) {
    throw Error(ErrorCode::kTypeMismatch,
                "expected bool, found " + std::string(value_type_name(type)));
  }
  return raw[0] != 0;
}

std::string_view Value::as_string() const {
  if (type != ValueType::STRING) {
    throw Error(ErrorCode::kTypeMismatch,
                "expected string, found " + std::string(value_type_name(type)));
  }
  return {reinterpret_cast<const char*>(raw + 8), static_cast<size_t>(load_le<uint64_t>(raw))};
}

// ---------------------------------------------------------------- parsing

struct GgufFile::Shard {
  std::string path;
  MappedFile bytes;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  std::vector<MetaEntry> metadata;
  std::vector<TensorInfo> tensors;
};

namespace {

class Parser {
 public:
  explicit Parser(GgufFile::Shard& s) : s_(s), r_(s.bytes.data(), s.bytes.size(), s.path) {}

  void parse() {
    parse_header();
    parse_metadata();
    parse_tensor_infos();
    layout_data();
  }

 private:
  void parse_header() {
    if (r_.remaining() < 4 || load_le<uint32_t>(r_.peek(4)) != kMagic) {
      r_.fail(0, "not a GGUF file (bad magic)", ErrorCode::kInvalidFile);
    }
    r_.skip(4);
    const uint64_t at = r_.pos();
    const uint32_t version = r_.u32("version");
    if (version == 1) {
      r_.fail(at, "GGUF v1 is not supported; re-convert the model with a current converter",
              ErrorCode::kUnsupported);
    }
    if (version == 0x02000000u || version == 0x03000000u) {
      r_.fail(at, "big-endian GGUF file (byte-swapped version); only little-endian is supported",
              ErrorCode::kUnsupported);
    }
    if (version != 2 && version != 3) {
      r_.fail(at, "unsupported GGUF version " + std::to_string(version), ErrorCode::kUnsupported);
    }
    s_.version = version;
    const uint64_t tensors_at = r_.pos();
    n_tensors_ = r_.u64("tensor count");
    const uint64_t kv_at = r_.pos();
    n_kv_ = r_.u64("metadata key count");
    if (n_kv_ > r_.remaining() / kMinKvBytes) {
      r_.fail(kv_at, "metadata key count " + std::to_string(n_kv_) + " is absurd for a file of " +
                         std::to_string(r_.size()) + " bytes");
    }
    if (n_tensors_ > r_.remaining() / kMinTensorInfoBytes) {
      r_.fail(tensors_at, "tensor count " + std::to_string(n_tensors_) +
                              " is absurd for a file of " + std::to_string(r_.size()) + " bytes");
    }
  }

  void parse_metadata() {
    s_.metadata.reserve(n_kv_);
    std::unordered_map<std::string_view, uint64_t> seen;
    for (uint64_t i = 0; i < n_kv_; ++i) {
      MetaEntry e;
      e.offset = r_.pos();
      const std::string_view key = r_.string("metadata key");
      if (key.empty()) r_.fail(e.offset, "empty metadata key");
      if (!valid_utf8(key)) r_.fail(e.offset, "metadata key is not valid UTF-8");
      if (!seen.emplace(key, e.offset).second) {
        r_.fail(e.offset, "duplicate metadata key '" + std::string(key) + "'");
      }
      e.key = std::string(key);
      e.value = parse_value(e.key);
      s_.metadata.push_back(std::move(e));
    }
    for (const MetaEntry& e : s_.metadata) {
      if (e.key != "general.alignment") continue;
      if (e.value.type != ValueType::U32) {
        r_.fail(e.offset, "general.alignment must be u32, found " +
                              std::string(value_type_name(e.value.type)));
      }
      const uint32_t a = load_le<uint32_t>(e.value.raw);
      if (a == 0 || !std::has_single_bit(a)) {
        r_.fail(e.offset,
                "general.alignment " + std::to_string(a) + " is not a non-zero power of two");
      }
      s_.alignment = a;
    }
  }

  Value parse_value(const std::string& key) {
    Value v;
    const uint64_t type_at = r_.pos();
    const uint32_t t = r_.u32("value type of '" + key + "'");
    if (t >= kValueTypeCount) {
      r_.fail(type_at, "key '" + key + "' has unknown value type " + std::to_string(t));
    }
    v.type = static_cast<ValueType>(t);
    const uint64_t start = r_.pos();
    v.raw = r_.peek(0);
    if (v.type == ValueType::STRING) {
      const std::string_view s = r_.string("value of '" + key + "'");
      (void)s;
    } else if (v.type == ValueType::ARRAY) {
      const uint32_t et = r_.u32("array element type of '" + key + "'");
      if (et >= kValueTypeCount) {
        r_.fail(start, "key '" + key + "' has an array of unknown type " + std::to_string(et));
      }
      const auto elem = static_cast<ValueType>(et);
      if (elem == ValueType::ARRAY) {
        r_.fail(start, "key '" + key + "' holds nested arrays, which are not supported",
                ErrorCode::kUnsupported);
      }
      const uint64_t count_at = r_.pos();
      const uint64_t count = r_.u64("array length of '" + key + "'");
      const uint8_t* data = r_.peek(0);
      const uint64_t data_at = r_.pos();
      if (elem == ValueType::STRING) {
        if (count > r_.remaining() / 8) {
          r_.fail(count_at, "array length " + std::to_string(count) + " of '" + key +
                                "' exceeds the bytes left in the file");
        }
        for (uint64_t i = 0; i < count; ++i) r_.string("string array '" + key + "'");
      } else {
        const uint64_t es = value_type_size(elem);
        if (count > r_.remaining() / es) {
          r_.fail(count_at, "array length " + std::to_string(count) + " of '" + key +
                                "' exceeds the bytes left in the file");
        }
        r_.skip(count * es);
      }
      v.array = ArrayView(elem, count, data, r_.pos() - data_at);
    } else {
      r_.take(value_type_size(v.type), "value of '" + key + "'");
      if (v.type == ValueType::BOOL && v.raw[0] > 1) {
        r_.fail(start, "bool value of '" + key + "' is " + std::to_string(v.raw[0]));
      }
    }
    v.raw_bytes = r_.pos() - start;
    return v;
  }

  void parse_tensor_infos() {
    s_.tensors.reserve(n_tensors_);
    std::unordered_map<std::string_view, uint64_t> seen;
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      const uint64_t at = r_.pos();
      TensorInfo t;
      const std::string_view name = r_.string("tensor name");
      if (!seen.emplace(name, at).second) {
        r_.fail(at, "duplicate tensor name '" + std::string(name) + "'");
      }
      t.name = std::string(name);
      const uint64_t dims_at = r_.pos();
      t.n_dims = r_.u32("dimension count of '" + t.name + "'");
      if (t.n_dims == 0 || t.n_dims > kMaxDims) {
        r_.fail(dims_at, "tensor '" + t.name + "' has " + std::to_string(t.n_dims) +
                             " dimensions (1 to 4 allowed)");
      }
      for (uint32_t d = 0; d < t.n_dims; ++d) {
        const uint64_t ne_at = r_.pos();
        const uint64_t ne = r_.u64("shape of '" + t.name + "'");
        if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          r_.fail(ne_at, "tensor '" + t.name + "' has a negative dimension");
        }
        t.ne[d] = static_cast<int64_t>(ne);
      }
      const uint64_t type_at = r_.pos();
      const uint32_t type_id = r_.u32("type of '" + t.name + "'");
      const auto traits = find_type(type_id);
      if (!traits) {
        r_.fail(type_at,
                "tensor '" + t.name + "' has unknown or removed type id " + std::to_string(type_id),
                ErrorCode::kUnsupported);
      }
      t.type = static_cast<TensorType>(type_id);
      check_shape(t, *traits, dims_at);
      const uint64_t off_at = r_.pos();
      t.offset = r_.u64("offset of '" + t.name + "'");
      if (t.offset % s_.alignment != 0) {
        r_.fail(off_at, "tensor '" + t.name + "' offset " + std::to_string(t.offset) +
                            " is not a multiple of the alignment " + std::to_string(s_.alignment));
      }
      info_offsets_.push_back(off_at);
      s_.tensors.push_back(std::move(t));
    }
  }

  void check_shape(TensorInfo& t, const TypeTraits& traits, uint64_t at) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < kMaxDims; ++d) {
      const auto ne = static_cast<uint64_t>(t.ne[d]);
      if (ne != 0 && n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ne) {
        r_.fail(at, "tensor '" + t.name + "' element count overflows");
      }
      n *= ne;
    }
    if (t.ne[0] % traits.block_size != 0) {
      r_.fail(at, "tensor '" + t.name + "' row length " + std::to_string(t.ne[0]) +
                      " is not a multiple of the " + std::string(traits.name) + " block size " +
                      std::to_string(traits.block_size));
    }
    const uint64_t blocks = n / static_cast<uint64_t>(traits.block_size);
    if (blocks > std::numeric_limits<uint64_t>::max() / traits.type_size) {
      r_.fail(at, "tensor '" + t.name + "' byte size overflows");
    }
    t.size_bytes = blocks * traits.type_size;
  }

  void layout_data() {
    const uint64_t end_of_infos = r_.pos();
    const uint64_t a = s_.alignment;
    s_.data_offset = (end_of_infos + a - 1) / a * a;
    const uint64_t file_size = r_.size();
    const uint64_t data_size = s_.data_offset <= file_size ? file_size - s_.data_offset : 0;
    std::vector<size_t> order(s_.tensors.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return s_.tensors[x].offset < s_.tensors[y].offset; });
    uint64_t prev_end = 0;
    const TensorInfo* prev = nullptr;
    for (size_t i : order) {
      TensorInfo& t = s_.tensors[i];
      if (t.offset > data_size || t.size_bytes > data_size - t.offset) {
        r_.fail(info_offsets_[i], "tensor '" + t.name + "' data [" +
                                      std::to_string(s_.data_offset + t.offset) + ", +" +
                                      std::to_string(t.size_bytes) + ") lies outside the file of " +
                                      std::to_string(file_size) + " bytes");
      }
      if (prev != nullptr && t.offset < prev_end) {
        r_.fail(info_offsets_[i], "tensor '" + t.name + "' overlaps tensor '" + prev->name + "'");
      }
      if (t.size_bytes > 0) {
        prev_end = t.offset + t.size_bytes;
        prev = &t;
      }
      t.data = s_.bytes.data() + s_.data_offset + t.offset;
    }
  }

  GgufFile::Shard& s_;
  ByteReader r_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  std::vector<uint64_t> info_offsets_;
};

}  // namespace

// ---------------------------------------------------------------- GgufFile

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

// PREFIX-NNNNN-of-MMMMM.gguf, five digits each.
std::optional<SplitName> parse_split_name(const std::string& path) {
  constexpr std::string_view kTail = "-00000-of-00000.gguf";
  if (path.size() < kTail.size()) return std::nullopt;
  const size_t at = path.size() - kTail.size();
  const std::string_view tail = std::string_view(path).substr(at);
  int index = 0, count = 0;
  for (size_t i = 0; i < kTail.size(); ++i) {
    const char want = kTail[i], got = tail[i];
    if (want == '0') {
      if (got < '0' || got > '9') return std::nullopt;
      int& field = i < 6 ? index : count;
      field = field * 10 + (got - '0');
    } else if (got != want) {
      return std::nullopt;
    }
  }
  return SplitName{path.substr(0, at), index, count};
}

std::string make_split_name(const std::string& prefix, int index, int count) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "-%05d-of-%05d.gguf", index, count);
  return prefix + buf;
}

void GgufFile::add_shard(std::unique_ptr<Shard> shard, bool first) {
  Parser(*shard).parse();
  if (first) {
    version_ = shard->version;
    alignment_ = shard->alignment;
    metadata_ = shard->metadata;
    for (size_t i = 0; i < metadata_.size(); ++i) meta_index_.emplace(metadata_[i].key, i);
  }
  const uint32_t shard_no = static_cast<uint32_t>(shards_.size());
  for (TensorInfo& t : shard->tensors) {
    t.shard = shard_no;
    tensors_.push_back(t);
  }
  shards_.push_back(std::move(shard));
  tensor_index_.clear();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!tensor_index_.emplace(tensors_[i].name, i).second) {
      throw Error(ErrorCode::kInvalidFile, shards_.back()->path + ": tensor '" + tensors_[i].name +
                                               "' appears in more than one shard");
    }
  }
}

GgufFile GgufFile::open(const std::string& path, const OpenOptions& options) {
  auto load = [&](const std::string& p) {
    auto s = std::make_unique<Shard>();
    s->path = p;
    s->bytes = options.use_mmap ? MappedFile::map(p) : MappedFile::read(p);
    return s;
  };
  GgufFile f;
  const auto split = options.open_splits ? parse_split_name(path) : std::nullopt;
  if (!split || split->count <= 1) {
    f.path_ = path;
    f.add_shard(load(path), true);
    return f;
  }
  f.path_ = make_split_name(split->prefix, 1, split->count);
  for (int i = 1; i <= split->count; ++i) {
    const std::string p = make_split_name(split->prefix, i, split->count);
    if (!std::filesystem::exists(p)) {
      throw Error(ErrorCode::kIo, path + ": split model shard " + std::to_string(i) + " of " +
                                      std::to_string(split->count) + " is missing (" + p + ")");
    }
    f.add_shard(load(p), i == 1);
  }
  if (const Value* n = f.find("split.tensors.count")) {
    if (n->is_integer() && static_cast<uint64_t>(n->as_int()) != f.tensors_.size()) {
      throw Error(ErrorCode::kInvalidFile,
                  f.path_ + ": split.tensors.count is " + std::to_string(n->as_int()) +
                      " but the shards hold " + std::to_string(f.tensors_.size()) + " tensors");
    }
  }
  return f;
}

GgufFile GgufFile::from_bytes(const uint8_t* data, size_t size, const std::string& name) {
  auto s = std::make_unique<Shard>();
  s->path = name;
  s->bytes = MappedFile::copy_of(data, size);
  GgufFile f;
  f.path_ = name;
  f.add_shard(std::move(s), true);
  return f;
}

uint64_t GgufFile::data_offset(size_t shard) const { return shards_.at(shard)->data_offset; }

void GgufFile::drop_pages(const TensorInfo& t) const {
  shards_.at(t.shard)->bytes.drop_pages(t.data, t.size_bytes);
}

const Value* GgufFile::find(std::string_view key) const {
  const auto it = meta_index_.find(key);
  return it == meta_index_.end() ? nullptr : &metadata_[it->second].value;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::string GgufFile::describe(std::string_view what) const {
  return path_ + ": " + std::string(what);
}

const Value& GgufFile::get(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) {
    throw Error(ErrorCode::kMissingKey,
                describe("missing metadata key '" + std::string(key) + "'"));
  }
  return *v;
}

namespace {
[[noreturn]] void mismatch(const std::string& file, std::string_view key, std::string_view want,
                           ValueType got) {
  throw Error(ErrorCode::kTypeMismatch, file + ": metadata key '" + std::string(key) +
                                            "': expected " + std::string(want) + ", found " +
                                            std::string(value_type_name(got)));
}
}  // namespace

uint32_t GgufFile::get_u32(std::string_view key) const {
  const Value& v = get(key);
  if (!v.is_integer()) mismatch(path_, key, "an integer", v.type);
  const int64_t x = v.as_int();
  if (x < 0 || x > std::numeric_limits<uint32_t>::max()) {
    throw Error(ErrorCode::kTypeMismatch,
                describe("metadata key '" + std::string(key) + "' value out of range"));
  }
  return static_cast<uint32_t>(x);
}

uint64_t GgufFile::get_u64(std::string_view key) const {
  const Value& v = get(key);
  if (!v.is_integer()) mismatch(path_, key, "an integer", v.type);
  return v.as_uint();
}

int64_t GgufFile::get_int(std::string_view key) const {
  const Value& v = get(key);
  if (!v.is_integer()) mismatch(path_, key, "an integer", v.type);
  return v.as_int();
}

float GgufFile::get_f32(std::string_view key) const {
  const Value& v = get(key);
  if (!v.is_float()) mismatch(path_, key, "f32", v.type);
  return static_cast<float>(v.as_double());
}

bool GgufFile::get_bool(std::string_view key) const {
  const Value& v = get(key);
  if (v.type != ValueType::BOOL) mismatch(path_, key, "bool", v.type);
  return v.as_bool();
}

std::string_view GgufFile::get_string(std::string_view key) const {
  const Value& v = get(key);
  if (v.type != ValueType::STRING) mismatch(path_, key, "string", v.type);
  return v.as_string();
}

ArrayView GgufFile::get_array(std::string_view key, std::optional<ValueType> elem) const {
  const Value& v = get(key);
  if (v.type != ValueType::ARRAY) mismatch(path_, key, "array", v.type);
  if (elem && v.array.elem_type() != *elem) {
    throw Error(ErrorCode::kTypeMismatch,
                describe("metadata key '" + std::string(key) + "': expected array of " +
                         std::string(value_type_name(*elem)) + ", found array of " +
                         std::string(value_type_name(v.array.elem_type()))));
  }
  return v.array;
}

uint32_t GgufFile::get_u32_or(std::string_view key, uint32_t fallback) const {
  return has(key) ? get_u32(key) : fallback;
}
float GgufFile::get_f32_or(std::string_view key, float fallback) const {
  return has(key) ? get_f32(key) : fallback;
}
bool GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : fallback;
}
std::string GgufFile::get_string_or(std::string_view key, std::string_view fallback) const {
  return std::string(has(key) ? get_string(key) : fallback);
}

}  // namespace qinfer
