// Bounds-checked little-endian cursor over a byte range. Every read names what it reads, so a
// truncated file fails with "<file>: at byte N: truncated while reading <what>".
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "qinfer/error.hpp"

namespace qinfer {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, uint64_t size, std::string file)
      : data_(data), size_(size), file_(std::move(file)) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }
  uint64_t remaining() const { return size_ - pos_; }
  const uint8_t* peek(uint64_t n) const { return n <= remaining() ? data_ + pos_ : nullptr; }

  [[noreturn]] void fail(uint64_t at, const std::string& problem,
                         ErrorCode code = ErrorCode::kInvalidFile) const {
    throw Error(code, file_ + ": at byte " + std::to_string(at) + ": " + problem);
  }

  const uint8_t* take(uint64_t n, const std::string& what) {
    if (n > remaining()) fail(pos_, "truncated while reading " + what);
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  void skip(uint64_t n) { take(n, "data"); }

  uint32_t u32(const std::string& what) { return load<uint32_t>(what); }
  uint64_t u64(const std::string& what) { return load<uint64_t>(what); }

  // A GGUF string: u64 length, then that many bytes (checked against what remains).
  std::string_view string(const std::string& what) {
    const uint64_t at = pos_;
    const uint64_t len = u64(what + " length");
    if (len > remaining()) {
      fail(at, what + " length " + std::to_string(len) + " exceeds the " +
                   std::to_string(remaining()) + " bytes left");
    }
    return {reinterpret_cast<const char*>(take(len, what)), static_cast<size_t>(len)};
  }

 private:
  template <typename T>
  T load(const std::string& what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }

  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::string file_;
};

}  // namespace qinfer
