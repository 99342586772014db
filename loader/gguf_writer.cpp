#include "loader/gguf_writer.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "qinfer/error.hpp"

namespace qinfer {
namespace {

// resize + memcpy rather than insert(): GCC 12 reports a false -Wstringop-overflow in
// vector::insert of a byte range here.
void append(std::vector<uint8_t>& out, const void* p, size_t n) {
  if (n == 0) return;
  const size_t at = out.size();
  out.resize(at + n);
  std::memcpy(out.data() + at, p, n);
}
template <typename T>
void append_le(std::vector<uint8_t>& out, T v) {
  append(out, &v, sizeof v);
}
void append_string(std::vector<uint8_t>& out, std::string_view s) {
  append_le<uint64_t>(out, s.size());
  append(out, s.data(), s.size());
}
uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

GgufWriter GgufWriter::copy_of(const GgufFile& file) {
  GgufWriter w(file.version());
  w.alignment_ = static_cast<uint32_t>(file.alignment());
  for (const MetaEntry& e : file.metadata()) {
    w.add_raw(e.key, e.value.type, e.value.raw, e.value.raw_bytes);
  }
  for (const TensorInfo& t : file.tensors()) {
    w.add_tensor(t.name, t.type, {t.ne, t.ne + t.n_dims}, t.data, t.size_bytes);
  }
  return w;
}

void GgufWriter::set_alignment(uint32_t alignment) {
  if (alignment == 0 || !std::has_single_bit(alignment)) {
    throw Error(ErrorCode::kInvalidArgument, "alignment must be a non-zero power of two");
  }
  alignment_ = alignment;
  add_u32("general.alignment", alignment);
}

void GgufWriter::put(std::string_view key, ValueType type, std::vector<uint8_t> bytes) {
  for (Kv& kv : kvs_) {
    if (kv.key == key) {  // a key set twice keeps its place and takes the new value
      kv.type = type;
      kv.bytes = std::move(bytes);
      return;
    }
  }
  kvs_.push_back(Kv{std::string(key), type, std::move(bytes)});
}

void GgufWriter::add_raw(std::string_view key, ValueType type, const uint8_t* bytes, size_t size) {
  put(key, type, std::vector<uint8_t>(bytes, bytes + size));
}

void GgufWriter::add_string(std::string_view key, std::string_view v) {
  std::vector<uint8_t> b;
  append_string(b, v);
  put(key, ValueType::STRING, std::move(b));
}

void GgufWriter::add_string_array(std::string_view key, const std::vector<std::string>& v) {
  std::vector<uint8_t> b;
  append_le<uint32_t>(b, static_cast<uint32_t>(ValueType::STRING));
  append_le<uint64_t>(b, v.size());
  for (const std::string& s : v) append_string(b, s);
  put(key, ValueType::ARRAY, std::move(b));
}

void GgufWriter::add_array(std::string_view key, ValueType elem, const void* data, uint64_t count) {
  const size_t es = value_type_size(elem);
  if (es == 0) throw Error(ErrorCode::kInvalidArgument, "add_array takes numeric elements");
  std::vector<uint8_t> b;
  append_le<uint32_t>(b, static_cast<uint32_t>(elem));
  append_le<uint64_t>(b, count);
  append(b, data, es * count);
  put(key, ValueType::ARRAY, std::move(b));
}

void GgufWriter::add_tensor(std::string_view name, TensorType type, std::vector<int64_t> shape,
                            const void* data, size_t size_bytes) {
  if (shape.empty() || shape.size() > 4) {
    throw Error(ErrorCode::kInvalidArgument, "tensor '" + std::string(name) + "' needs 1-4 dims");
  }
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const TypeTraits& t = type_traits(type);
  if (shape[0] % t.block_size != 0 ||
      static_cast<size_t>(n / t.block_size) * t.type_size != size_bytes) {
    throw Error(ErrorCode::kInvalidArgument,
                "tensor '" + std::string(name) + "': shape and byte size do not match its type");
  }
  tensors_.push_back(Tensor{std::string(name),
                            type,
                            std::move(shape),
                            static_cast<const uint8_t*>(data),
                            size_bytes,
                            {},
                            {}});
}

void GgufWriter::add_tensor_owned(std::string_view name, TensorType type,
                                  std::vector<int64_t> shape, std::vector<uint8_t> data) {
  const size_t n = data.size();
  add_tensor(name, type, std::move(shape), nullptr, n);
  tensors_.back().owned = std::move(data);
  tensors_.back().data = tensors_.back().owned.data();
}

void GgufWriter::add_tensor_generated(std::string_view name, TensorType type,
                                      std::vector<int64_t> shape, size_t size_bytes,
                                      std::function<void(uint8_t*)> fill) {
  add_tensor(name, type, std::move(shape), nullptr, size_bytes);
  tensors_.back().fill = std::move(fill);
}

std::vector<uint8_t> GgufWriter::header() const {
  std::vector<uint8_t> out;
  append_le<uint32_t>(out, 0x46554747u);
  append_le<uint32_t>(out, version_);
  append_le<uint64_t>(out, tensors_.size());
  append_le<uint64_t>(out, kvs_.size());
  for (const Kv& kv : kvs_) {
    append_string(out, kv.key);
    append_le<uint32_t>(out, static_cast<uint32_t>(kv.type));
    append(out, kv.bytes.data(), kv.bytes.size());
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    append_string(out, t.name);
    append_le<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) append_le<uint64_t>(out, static_cast<uint64_t>(d));
    append_le<uint32_t>(out, static_cast<uint32_t>(t.type));
    append_le<uint64_t>(out, offset);
    offset = align_up(offset + t.size_bytes, alignment_);
  }
  if (!tensors_.empty()) out.resize(align_up(out.size(), alignment_), 0);
  return out;
}

// The header, then each tensor's data padded to the alignment, handed to `sink` piece by
// piece: a generated tensor exists only while it is written.
void GgufWriter::emit(const std::function<void(const uint8_t*, size_t)>& sink) const {
  const std::vector<uint8_t> head = header();
  sink(head.data(), head.size());
  static const uint8_t kZeros[256] = {};
  std::vector<uint8_t> generated;
  for (const Tensor& t : tensors_) {
    const uint8_t* data = t.data;
    if (t.fill) {
      generated.assign(t.size_bytes, 0);
      t.fill(generated.data());
      data = generated.data();
    }
    sink(data, t.size_bytes);
    size_t pad = align_up(t.size_bytes, alignment_) - t.size_bytes;
    for (; pad > 0; pad -= std::min(pad, sizeof kZeros)) sink(kZeros, std::min(pad, sizeof kZeros));
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  emit([&](const uint8_t* p, size_t n) { append(out, p, n); });
  return out;
}

void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(ErrorCode::kIo, tmp + ": cannot create");
    try {
      write(f);
    } catch (...) {
      f.close();
      std::remove(tmp.c_str());
      throw;
    }
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      throw Error(ErrorCode::kIo, tmp + ": write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kIo, path + ": cannot rename into place: " + ec.message());
  }
}

void write_file_atomically(const std::string& path, const void* data, size_t size) {
  write_file_atomically(path, [&](std::ostream& f) {
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  });
}

void GgufWriter::write(const std::string& path) const {
  write_file_atomically(path, [&](std::ostream& f) {
    emit([&](const uint8_t* p, size_t n) {
      if (!f.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n)))
        throw Error(ErrorCode::kIo, path + ": write failed");
    });
  });
}

}  // namespace qinfer
