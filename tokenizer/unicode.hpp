// Unicode code points: UTF-8 decoding and general-category flags, from a table generated
// from the Unicode Character Database (scripts/gen_unicode_tables.py, docs/tokenizer.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer::unicode {

enum Flag : uint8_t {
  kLetter = 1,
  kNumber = 2,
  kPunctuation = 4,
  kSymbol = 8,
  kMark = 16,
  kSeparator = 32,
  kOther = 64,
  kWhitespace = 128,
};

struct CodepointRange {
  uint32_t first, last;
  uint8_t flags;
};
extern const CodepointRange kRanges[];
extern const size_t kRangeCount;

// Category flags of a code point (0 for unassigned ones).
uint8_t flags(uint32_t cp);
inline bool is_letter(uint32_t cp) { return flags(cp) & kLetter; }
inline bool is_number(uint32_t cp) { return flags(cp) & kNumber; }
inline bool is_whitespace(uint32_t cp) { return flags(cp) & kWhitespace; }

// Code points of a UTF-8 string; an invalid byte becomes U+FFFD (as llama.cpp does).
std::vector<uint32_t> decode_utf8(std::string_view s);
std::string encode_utf8(uint32_t cp);

}  // namespace qinfer::unicode
