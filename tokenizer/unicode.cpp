#include "tokenizer/unicode.hpp"

#include <algorithm>

namespace qinfer::unicode {

uint8_t flags(uint32_t cp) {
  const CodepointRange* end = kRanges + kRangeCount;
  const CodepointRange* it = std::upper_bound(
      kRanges, end, cp, [](uint32_t c, const CodepointRange& r) { return c < r.first; });
  if (it == kRanges) return 0;
  --it;
  return cp <= it->last ? it->flags : 0;
}

// Decodes like llama.cpp: the lead byte gives the length, continuation bytes must be
// 10xxxxxx, anything else yields U+FFFD and advances one byte (no overlong checks).
std::vector<uint32_t> decode_utf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  auto cont = [&](size_t k) {
    return i + k < s.size() && (static_cast<uint8_t>(s[i + k]) & 0xc0) == 0x80;
  };
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k]) & 0x3f); };
    if (!(c & 0x80)) {
      out.push_back(c);
      i += 1;
    } else if ((c & 0xe0) == 0xc0 && cont(1)) {
      out.push_back(((c & 0x1fu) << 6) | b(1));
      i += 2;
    } else if ((c & 0xf0) == 0xe0 && cont(1) && cont(2)) {
      out.push_back(((c & 0x0fu) << 12) | (b(1) << 6) | b(2));
      i += 3;
    } else if ((c & 0xf8) == 0xf0 && cont(1) && cont(2) && cont(3)) {
      out.push_back(((c & 0x07u) << 18) | (b(1) << 12) | (b(2) << 6) | b(3));
      i += 4;
    } else {
      out.push_back(0xfffd);
      i += 1;
    }
  }
  return out;
}

std::string encode_utf8(uint32_t cp) {
  std::string r;
  if (cp < 0x80) {
    r += static_cast<char>(cp);
  } else if (cp < 0x800) {
    r += static_cast<char>(0xc0 | (cp >> 6));
    r += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    r += static_cast<char>(0xe0 | (cp >> 12));
    r += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    r += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    r += static_cast<char>(0xf0 | (cp >> 18));
    r += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    r += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    r += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return r;
}

}  // namespace qinfer::unicode
