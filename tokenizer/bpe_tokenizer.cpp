// Byte-level BPE (tokenizer.ggml.model = "gpt2"), as llama.cpp runs it: the text is split by
// the pre-tokenizer that tokenizer.ggml.pre names, each piece's bytes are mapped to GPT-2's
// printable code points, and pairs are merged by rank from tokenizer.ggml.merges.
#include <functional>
#include <map>
#include <queue>

#include "loader/gguf.hpp"
#include "qinfer/error.hpp"
#include "tokenizer/regex.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace qinfer {
namespace {

using Cpts = std::vector<uint32_t>;
using Segment = TextSpan;
// One pass of a pre-tokenizer: cuts every segment into smaller ones.
using Splitter =
    std::function<void(const Cpts&, const std::vector<Segment>&, std::vector<Segment>&)>;

// The hand-written matchers of llama.cpp for the GPT-2 and Llama-3 patterns. `pos` walks
// the segment; `emit(end)` closes the piece that started where the previous one ended.
class Matcher {
 public:
  Matcher(const Cpts& c, Segment s, std::vector<Segment>& out)
      : c_(c), ini_(s.start), end_(s.start + s.len), prev_(s.start), out_(out) {}

  static constexpr uint32_t kNone = 0xffffffff;
  uint32_t cpt(size_t p) const { return p >= ini_ && p < end_ ? c_[p] : kNone; }
  bool in(size_t p) const { return p >= ini_ && p < end_; }
  bool letter(size_t p) const { return in(p) && unicode::is_letter(c_[p]); }
  bool number(size_t p) const { return in(p) && unicode::is_number(c_[p]); }
  bool space(size_t p) const { return in(p) && unicode::is_whitespace(c_[p]); }
  bool other(size_t p) const { return in(p) && !space(p) && !letter(p) && !number(p); }
  size_t emit(size_t end) {
    const size_t len = end - prev_;
    if (len > 0) out_.push_back({prev_, len});
    prev_ = end;
    return len;
  }
  // 's 't 'm 'd 're 've 'll, optionally case-insensitive; returns the length or 0.
  size_t contraction(size_t p, bool any_case) const {
    if (cpt(p) != '\'' || !in(p + 1)) return 0;
    auto low = [&](size_t q) {
      const uint32_t x = cpt(q);
      return any_case && x >= 'A' && x <= 'Z' ? x + 32 : x;
    };
    const uint32_t a = low(p + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (!in(p + 2)) return 0;
    const uint32_t b = low(p + 2);
    return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') ? 3 : 0;
  }
  // \s+(?!\S) then \s+ : a whitespace run, leaving its last char to the next piece when
  // more text follows.
  bool whitespace(size_t& pos) {
    size_t n = 0;
    while (space(pos + n)) ++n;
    if (n > 1 && in(pos + n)) {
      pos += n - 1;
      emit(pos);
      return true;
    }
    if (n > 0) {
      pos += n;
      emit(pos);
      return true;
    }
    return false;
  }
  size_t begin() const { return ini_; }
  size_t end() const { return end_; }

 private:
  const Cpts& c_;
  size_t ini_, end_, prev_;
  std::vector<Segment>& out_;
};

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
void split_gpt2(const Cpts& c, Segment s, std::vector<Segment>& out) {
  Matcher m(c, s, out);
  for (size_t pos = m.begin(); pos < m.end();) {
    if (const size_t n = m.contraction(pos, false)) {
      pos += m.emit(pos + n);
      continue;
    }
    const bool sp = m.cpt(pos) == ' ';
    const size_t q = sp ? pos + 1 : pos;  // the class test looks past one optional space
    if (m.letter(q) || m.number(q) || m.other(q)) {
      auto same = m.letter(q) ? &Matcher::letter : m.number(q) ? &Matcher::number : &Matcher::other;
      pos = q;
      while ((m.*same)(pos)) ++pos;
      m.emit(pos);
      continue;
    }
    if (m.whitespace(pos)) continue;
    m.emit(++pos);
  }
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+
void split_llama3(const Cpts& c, Segment s, std::vector<Segment>& out) {
  Matcher m(c, s, out);
  auto newline = [&](size_t p) { return m.cpt(p) == '\r' || m.cpt(p) == '\n'; };
  for (size_t pos = m.begin(); pos < m.end();) {
    if (const size_t n = m.contraction(pos, true)) {
      pos += m.emit(pos + n);
      continue;
    }
    if (!(newline(pos) || m.number(pos)) && (m.letter(pos) || m.letter(pos + 1))) {
      ++pos;
      while (m.letter(pos)) ++pos;
      m.emit(pos);
      continue;
    }
    if (m.number(pos)) {
      size_t ini = pos;
      while (m.number(pos)) {
        if (++pos - ini >= 3) {
          m.emit(pos);
          ini = pos;
        }
      }
      m.emit(pos);
      continue;
    }
    const size_t q = m.cpt(pos) == ' ' ? pos + 1 : pos;
    if (m.other(q)) {
      pos = q;
      while (m.other(pos)) ++pos;
      while (newline(pos)) ++pos;
      m.emit(pos);
      continue;
    }
    size_t n = 0, last_newline_end = 0;
    while (m.space(pos + n)) {
      if (newline(pos + n)) last_newline_end = pos + n + 1;
      ++n;
    }
    if (last_newline_end > 0) {
      pos = last_newline_end;
      m.emit(pos);
      continue;
    }
    if (m.whitespace(pos)) continue;
    m.emit(++pos);
  }
}

// The GPT-2 and Llama-3 patterns run as the hand-written matchers above (llama.cpp does the
// same: its regex library would be slow and deep on them); every other pattern runs on the
// regex engine (tokenizer/regex.hpp).
constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char* kLlama3Pattern =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kPunctRun = "[\\p{P}\\$\\+<=>\\^~\\|]+";
constexpr const char* kFinnishPattern = " ?[^(\\s|.,!?…。，、।۔،)]+";
constexpr const char* kCjk = "[一-龥ࠀ-一가-퟿]+";

// The pre-tokenizers of llama.cpp c392e50 by tokenizer.ggml.pre, each a list of patterns
// applied in turn (docs/tokenizer.md).
struct PreTokenizerSpec {
  std::vector<const char*> names;
  std::vector<const char*> patterns;
  bool ignore_merges = false;  // a word that is a token is taken whole
};

// The patterns are kept as llama.cpp writes them (long literals), so:
// clang-format off
const std::vector<PreTokenizerSpec>& pre_tokenizer_specs() {
  static const std::vector<PreTokenizerSpec> specs = {
      {{"default"}, {kPunctRun, kGpt2Pattern, "\\p{N}+", "[0-9][0-9][0-9]"}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3"}, {kLlama3Pattern}, true},
      {{"dbrx", "smaug-bpe", "chatglm-bpe"}, {kLlama3Pattern}},
      {{"deepseek-llm"},
       {"[\\r\\n]",
        "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
        "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", kCjk, "\\p{N}+"}},
      {{"deepseek-coder"}, {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}},
      {{"deepseek-v3"},
       {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
        "?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
      {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2Pattern, "[0-9][0-9][0-9]"}},
      {{"gpt-2", "gpt2", "mpt", "olmo", "jais", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en",
        "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe"},
       {kGpt2Pattern}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}, {"\\p{N}", kGpt2Pattern}},
      {{"qwen2", "stablelm2", "deepseek-r1-qwen", "megrez"},
       {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {kFinnishPattern}},
      {{"viking"}, {kFinnishPattern, "\\p{N}"}},
      {{"tekken"},
       {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-"
        "z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       true},
      {{"chameleon"},
       {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
        "[\\p{P}!-/:-@\\[-`{-~]", kGpt2Pattern}},
      {{"gpt-4o"},
       {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'"
        "[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|"
        "'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
  };
  return specs;
}
// clang-format on

const PreTokenizerSpec* find_pre_tokenizer(const std::string& pre) {
  for (const PreTokenizerSpec& spec : pre_tokenizer_specs()) {
    for (const char* name : spec.names) {
      if (pre == name) return &spec;
    }
  }
  return nullptr;
}

Splitter per_segment(void (*split)(const Cpts&, Segment, std::vector<Segment>&)) {
  return [split](const Cpts& c, const std::vector<Segment>& in, std::vector<Segment>& out) {
    for (Segment s : in) split(c, s, out);
  };
}

std::vector<Splitter> pre_tokenizer(const std::string& pre, const std::string& path) {
  const PreTokenizerSpec* spec = find_pre_tokenizer(pre);
  if (spec == nullptr) {
    std::string known;
    for (const PreTokenizerSpec& s : pre_tokenizer_specs()) {
      for (const char* name : s.names) known += (known.empty() ? "" : ", ") + std::string(name);
    }
    throw Error(ErrorCode::kUnsupported, path + ": tokenizer.ggml.pre '" + pre +
                                             "' is not supported (supported: " + known + ")");
  }
  std::vector<Splitter> out;
  for (const char* pattern : spec->patterns) {
    if (std::string_view(pattern) == kGpt2Pattern) {
      out.push_back(per_segment(split_gpt2));
    } else if (std::string_view(pattern) == kLlama3Pattern) {
      out.push_back(per_segment(split_llama3));
    } else {
      auto re = std::make_shared<Regex>(pattern);
      out.push_back([re](const Cpts& c, const std::vector<Segment>& in, std::vector<Segment>& o) {
        regex_split(*re, c, in, o);
      });
    }
  }
  return out;
}

class BpeTokenizer final : public Tokenizer {
 public:
  BpeTokenizer(Vocab v, const GgufFile& f) : Tokenizer(std::move(v)) {
    const std::string pre = f.get_string_or("tokenizer.ggml.pre", "default");
    splitters_ = pre_tokenizer(pre, f.path());
    ignore_merges_ = find_pre_tokenizer(pre)->ignore_merges;
    const auto merges = f.get_array("tokenizer.ggml.merges", ValueType::STRING).strings();
    for (size_t r = 0; r < merges.size(); ++r) {
      const size_t sp = merges[r].find(' ', 1);
      if (sp == std::string_view::npos) {
        throw Error(ErrorCode::kInvalidFile, f.path() + ": merge " + std::to_string(r) + " '" +
                                                 std::string(merges[r]) + "' has no space");
      }
      ranks_.emplace(std::string(merges[r]), static_cast<int>(r));
    }
    // GPT-2's byte <-> printable code point map.
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : 256u + extra++;
      byte_to_text_[b] = unicode::encode_utf8(cp);
      cpt_to_byte_[cp] = static_cast<uint8_t>(b);
    }
  }

  std::string piece(TokenId id) const override {
    if (id < 0 || id >= n_vocab()) return {};
    const std::string& text = vocab_.text[id];
    switch (vocab_.types[id]) {
      case TokenType::kNormal: {
        std::string out;
        for (uint32_t cp : unicode::decode_utf8(text)) {
          const auto it = cpt_to_byte_.find(cp);
          out += it != cpt_to_byte_.end() ? std::string(1, static_cast<char>(it->second))
                                          : unicode::encode_utf8(cp);
        }
        return out;
      }
      case TokenType::kUserDefined:
        return text;
      default:
        return {};
    }
  }

 protected:
  void encode_text(std::string_view text, bool, std::vector<TokenId>& out) const override {
    const Cpts cpts = unicode::decode_utf8(text);
    std::vector<Segment> segs{{0, cpts.size()}}, next;
    for (const Splitter& split : splitters_) {
      next.clear();
      split(cpts, segs, next);
      segs.swap(next);
    }
    for (Segment s : segs) {
      std::string word;
      for (size_t i = s.start; i < s.start + s.len; ++i) {
        for (char byte : unicode::encode_utf8(cpts[i]))
          word += byte_to_text_[static_cast<uint8_t>(byte)];
      }
      encode_word(word, out);
    }
  }

 private:
  int rank(std::string_view left, std::string_view right) const {
    thread_local std::string key;
    key.clear();
    key.append(left).append(" ").append(right);
    const auto it = ranks_.find(std::string_view(key));
    return it == ranks_.end() ? -1 : it->second;
  }

  void encode_word(const std::string& word, std::vector<TokenId>& out) const {
    if (ignore_merges_) {
      const TokenId id = vocab_.find(word);
      if (id >= 0) {
        out.push_back(id);
        return;
      }
    }
    struct Symbol {
      int prev, next;
      size_t start, n;
    };
    struct Bigram {
      int left, right, rank;
      std::string text;
      bool operator<(const Bigram& o) const {  // lowest rank first, then leftmost
        return rank > o.rank || (rank == o.rank && left > o.left);
      }
    };
    std::vector<Symbol> sym;
    for (size_t i = 0; i < word.size();) {
      const auto c = static_cast<uint8_t>(word[i]);
      const size_t len = std::min(word.size() - i, size_t(c < 0x80   ? 1
                                                          : c < 0xe0 ? 2
                                                          : c < 0xf0 ? 3
                                                                     : 4));
      const int idx = static_cast<int>(sym.size());
      sym.push_back({idx - 1, i + len == word.size() ? -1 : idx + 1, i, len});
      i += len;
    }
    auto text = [&](const Symbol& s) { return std::string_view(word).substr(s.start, s.n); };
    std::priority_queue<Bigram> queue;
    auto add = [&](int l, int r) {
      if (l < 0 || r < 0) return;
      const int rk = rank(text(sym[l]), text(sym[r]));
      if (rk < 0) return;
      queue.push({l, r, rk, std::string(text(sym[l])) + std::string(text(sym[r]))});
    };
    for (size_t i = 1; i < sym.size(); ++i) add(static_cast<int>(i - 1), static_cast<int>(i));
    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Symbol& l = sym[b.left];
      Symbol& r = sym[b.right];
      if (l.n == 0 || r.n == 0 || std::string(text(l)) + std::string(text(r)) != b.text) continue;
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = b.left;
      add(l.prev, b.left);
      add(b.left, l.next);
    }
    for (int i = sym.empty() ? -1 : 0; i != -1; i = sym[i].next) {
      const std::string_view t = text(sym[i]);
      const TokenId id = vocab_.find(t);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      for (char byte : t) {  // no token: one per byte where the vocabulary has it
        const TokenId b = vocab_.find(std::string(1, byte));
        if (b >= 0) out.push_back(b);
      }
    }
  }

  std::vector<Splitter> splitters_;
  bool ignore_merges_ = false;
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> ranks_;
  std::string byte_to_text_[256];
  std::unordered_map<uint32_t, uint8_t> cpt_to_byte_;
};

}  // namespace

std::vector<std::string> pre_tokenize(const std::string& pre, std::string_view text) {
  const Cpts cpts = unicode::decode_utf8(text);
  std::vector<Segment> segs{{0, cpts.size()}}, next;
  for (const Splitter& split : pre_tokenizer(pre, "pre_tokenize")) {
    next.clear();
    split(cpts, segs, next);
    segs.swap(next);
  }
  std::vector<std::string> out;
  for (Segment s : segs) {
    std::string piece;
    for (size_t i = s.start; i < s.start + s.len; ++i) piece += unicode::encode_utf8(cpts[i]);
    out.push_back(piece);
  }
  return out;
}

std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab vocab, const GgufFile& file) {
  return std::make_unique<BpeTokenizer>(std::move(vocab), file);
}

}  // namespace qinfer
