// A small regular-expression engine for BPE pre-tokenizer patterns: the ECMAScript subset
// llama.cpp's patterns use (classes, \p{..} categories, groups, alternation, greedy
// quantifiers, lookahead, $), with std::regex's leftmost-first answer. It runs as a Pike VM:
// time linear in the text, no recursion on the input, so a hostile prompt cannot blow the
// stack the way a backtracking std::regex can.
//
// Categories follow llama.cpp, which matches such patterns on a "collapsed" text: every code
// point above 127 is replaced by one byte naming its category (collapse()), and \p{L} means
// that byte or an ASCII letter. A pattern without categories matches the real code points
// (non-ASCII white space still reads as \v, as in llama.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace qinfer {

class Regex {
 public:
  // Throws qinfer::Error naming the pattern on syntax it does not support.
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(Regex&&) noexcept;

  // Whether the pattern uses \p{..} categories (and so must see collapsed text).
  bool uses_categories() const { return categories_; }
  // The text as this pattern must see it: collapsed categories, or \v for non-ASCII spaces.
  std::vector<uint32_t> prepare(const std::vector<uint32_t>& cpts) const;

  // The leftmost match in text[from, end) (the segment is all the pattern sees: `$` and
  // lookaheads stop at `end`): {start, length}, or {end, npos} when there is none.
  std::pair<size_t, size_t> search(const uint32_t* text, size_t from, size_t end) const;

  struct Program;

 private:
  std::unique_ptr<Program> prog_;
  bool categories_ = false;
};

// A run of code points: [start, start + len).
struct TextSpan {
  size_t start, len;
};

// Cuts each segment of cpts into pieces by the pattern, as llama.cpp's regex split does:
// every match is a piece, and so is the text between matches.
void regex_split(const Regex& re, const std::vector<uint32_t>& cpts,
                 const std::vector<TextSpan>& segments, std::vector<TextSpan>& out);

}  // namespace qinfer
