#include "tokenizer/regex.hpp"

#include <algorithm>
#include <string>

#include "qinfer/error.hpp"
#include "tokenizer/unicode.hpp"

namespace qinfer {

namespace {

constexpr uint32_t kMaxCp = 0x10ffff;
constexpr size_t kNpos = static_cast<size_t>(-1);
constexpr int kUnbounded = -1;

// The bytes llama.cpp's collapsed text uses for the categories of code points above 127.
constexpr uint32_t kCollapsedNumber = 0xd1, kCollapsedLetter = 0xd2, kCollapsedPunct = 0xd3,
                   kCollapsedMark = 0xd4, kCollapsedSymbol = 0xd5, kCollapsedOther = 0xd0,
                   kCollapsedSpace = 0x0b;

// A set of code points as sorted, disjoint, inclusive ranges.
struct CharSet {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;

  void add(uint32_t a, uint32_t b) { ranges.emplace_back(std::min(a, b), std::max(a, b)); }
  void add(const CharSet& o) { ranges.insert(ranges.end(), o.ranges.begin(), o.ranges.end()); }
  void normalize() {
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    ranges.swap(merged);
  }
  CharSet complement() const {  // of a normalized set
    CharSet c;
    uint32_t next = 0;
    for (const auto& r : ranges) {
      if (r.first > next) c.add(next, r.first - 1);
      next = r.second + 1;
    }
    if (next <= kMaxCp) c.add(next, kMaxCp);
    return c;
  }
  bool contains(uint32_t c) const {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(c, kMaxCp + 1));
    return it != ranges.begin() && std::prev(it)->second >= c;
  }
};

CharSet make_set(std::initializer_list<std::pair<uint32_t, uint32_t>> r) {
  CharSet s;
  for (const auto& p : r) s.add(p.first, p.second);
  s.normalize();
  return s;
}

// ECMAScript \s over the texts this engine sees (non-ASCII spaces are already \v).
const CharSet& space_set() {
  static const CharSet s = make_set({{0x09, 0x0d}, {0x20, 0x20}});
  return s;
}

// \p{X} in the collapsed world: the category's byte plus its ASCII members.
CharSet category_set(const std::string& name, const std::string& pattern) {
  if (name == "N") return make_set({{kCollapsedNumber, kCollapsedNumber}, {'0', '9'}});
  if (name == "L" || name == "Lu" || name == "Ll" || name == "Lt" || name == "Lm" || name == "Lo") {
    return make_set({{kCollapsedLetter, kCollapsedLetter}, {'A', 'Z'}, {'a', 'z'}});
  }
  if (name == "P") {
    return make_set({{kCollapsedPunct, kCollapsedPunct},
                     {0x21, 0x23},
                     {0x25, 0x2a},
                     {0x2c, 0x2f},
                     {0x3a, 0x3b},
                     {0x3f, 0x40},
                     {0x5b, 0x5d},
                     {0x5f, 0x5f},
                     {0x7b, 0x7b},
                     {0x7d, 0x7d}});
  }
  if (name == "M") return make_set({{kCollapsedMark, kCollapsedMark}});
  if (name == "S") {
    return make_set({{kCollapsedSymbol, kCollapsedSymbol},
                     {0x24, 0x24},
                     {0x2b, 0x2b},
                     {0x3c, 0x3e},
                     {0x5e, 0x5e},
                     {0x60, 0x60},
                     {0x7c, 0x7c}});
  }
  throw Error(ErrorCode::kUnsupported, "pre-tokenizer pattern '" + pattern + "': category \\p{" +
                                           name + "} is not supported");
}

// The AST of a pattern.
struct Node {
  enum Kind { kSet, kConcat, kAlt, kRepeat, kLook, kEnd, kEmpty };
  explicit Node(Kind k = kEmpty) : kind(k) {}
  Kind kind;
  int set = -1;                // kSet: index into the program's sets
  std::vector<Node> children;  // kConcat, kAlt; kRepeat and kLook have one
  int min = 0, max = 0;        // kRepeat (max kUnbounded: no limit)
  bool negate = false;         // kLook: (?! rather than (?=
};

class Parser {
 public:
  Parser(std::string_view pattern, std::vector<CharSet>& sets)
      : text_(pattern), p_(unicode::decode_utf8(pattern)), sets_(sets) {}

  Node parse() {
    Node n = alternation();
    if (i_ != p_.size()) fail("unexpected ')'");
    return n;
  }
  bool categories() const { return categories_; }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kUnsupported, "pre-tokenizer pattern '" + std::string(text_) +
                                             "': " + what + " at character " + std::to_string(i_));
  }
  bool at_end() const { return i_ >= p_.size(); }
  uint32_t peek() const { return at_end() ? 0 : p_[i_]; }
  bool eat(uint32_t c) {
    if (!at_end() && p_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  int add_set(CharSet s) {
    s.normalize();
    sets_.push_back(std::move(s));
    return static_cast<int>(sets_.size() - 1);
  }

  Node alternation() {
    Node alt(Node::kAlt);
    alt.children.push_back(concatenation());
    while (eat('|')) alt.children.push_back(concatenation());
    return alt.children.size() == 1 ? std::move(alt.children[0]) : alt;
  }

  Node concatenation() {
    Node cat(Node::kConcat);
    while (!at_end() && peek() != '|' && peek() != ')') cat.children.push_back(repetition());
    return cat;
  }

  int number() {
    int n = 0;
    if (at_end() || peek() < '0' || peek() > '9') fail("expected a number");
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      n = n * 10 + static_cast<int>(p_[i_++] - '0');
      if (n > 1000) fail("repeat count too large");
    }
    return n;
  }

  Node repetition() {
    Node atom_node = atom();
    for (;;) {
      int lo, hi;
      if (eat('*')) {
        lo = 0, hi = kUnbounded;
      } else if (eat('+')) {
        lo = 1, hi = kUnbounded;
      } else if (eat('?')) {
        lo = 0, hi = 1;
      } else if (peek() == '{') {
        ++i_;
        lo = number();
        hi = lo;
        if (eat(',')) hi = peek() == '}' ? kUnbounded : number();
        if (!eat('}')) fail("expected '}'");
        if (hi != kUnbounded && hi < lo) fail("bad repeat range");
      } else {
        return atom_node;
      }
      if (peek() == '?' || peek() == '+') fail("lazy and possessive quantifiers are not supported");
      Node r(Node::kRepeat);
      r.min = lo;
      r.max = hi;
      r.children.push_back(std::move(atom_node));
      atom_node = std::move(r);
    }
  }

  Node set_node(CharSet s) {
    Node n(Node::kSet);
    n.set = add_set(std::move(s));
    return n;
  }

  Node atom() {
    const uint32_t c = p_[i_++];
    switch (c) {
      case '(': {
        Node inner;
        if (eat('?')) {
          if (eat(':')) {
            inner = alternation();
          } else if (peek() == '=' || peek() == '!') {
            const bool negate = p_[i_++] == '!';
            Node look(Node::kLook);
            look.negate = negate;
            look.children.push_back(alternation());
            inner = std::move(look);
          } else {
            fail("unsupported group");
          }
        } else {
          inner = alternation();
        }
        if (!eat(')')) fail("expected ')'");
        return inner;
      }
      case '[':
        return set_node(bracket());
      case '.':
        return set_node(make_set({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}).complement());
      case '$':
        return Node(Node::kEnd);
      case '^':
        fail("'^' is not supported");
      case '\\':
        return set_node(escape(false));
      case '*':
      case '+':
      case '?':
      case '{':
        fail("nothing to repeat");
      default: {
        CharSet s;
        s.add(c, c);
        return set_node(std::move(s));
      }
    }
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int d = 0; d < digits; ++d) {
      if (at_end()) fail("short hex escape");
      const uint32_t h = p_[i_++];
      v = v * 16 + (h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : (fail("bad hex digit"), 0));
    }
    return v;
  }

  // After a backslash: a class escape or one (possibly escaped) character.
  CharSet escape(bool in_class) {
    if (at_end()) fail("trailing backslash");
    const uint32_t c = p_[i_++];
    CharSet s;
    switch (c) {
      case 's':
        return space_set();
      case 'S':
        return space_set().complement();
      case 'd':
        return make_set({{'0', '9'}});
      case 'D':
        return make_set({{'0', '9'}}).complement();
      case 'w':
        return make_set({{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}});
      case 'W':
        return make_set({{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}}).complement();
      case 'p': {
        if (!eat('{')) fail("expected '{' after \\p");
        std::string name;
        while (!at_end() && peek() != '}') name += static_cast<char>(p_[i_++]);
        if (!eat('}')) fail("expected '}'");
        categories_ = true;
        return category_set(name, std::string(text_));
      }
      case 'r':
        s.add('\r', '\r');
        return s;
      case 'n':
        s.add('\n', '\n');
        return s;
      case 't':
        s.add('\t', '\t');
        return s;
      case 'f':
        s.add('\f', '\f');
        return s;
      case 'v':
        s.add('\v', '\v');
        return s;
      case '0':
        s.add(0, 0);
        return s;
      case 'x': {
        const uint32_t v = hex(2);
        s.add(v, v);
        return s;
      }
      case 'u': {
        const uint32_t v = hex(4);
        s.add(v, v);
        return s;
      }
      case 'b':
        if (in_class) {
          s.add('\b', '\b');
          return s;
        }
        fail("\\b is not supported");
      default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
          fail("unsupported escape");
        s.add(c, c);
        return s;
    }
  }

  // [...] after the '['.
  CharSet bracket() {
    const bool negate = eat('^');
    CharSet s;
    while (!at_end() && peek() != ']') {
      CharSet item;
      uint32_t lo = 0;
      bool single = false;
      if (eat('\\')) {
        item = escape(true);
        item.normalize();
        single = item.ranges.size() == 1 && item.ranges[0].first == item.ranges[0].second;
        lo = single ? item.ranges[0].first : 0;
      } else {
        lo = p_[i_++];
        item.add(lo, lo);
        single = true;
      }
      // a-b ranges (a '-' before ']' or after a class escape is a literal)
      if (single && peek() == '-' && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        uint32_t hi;
        if (eat('\\')) {
          CharSet e = escape(true);
          e.normalize();
          if (e.ranges.size() != 1 || e.ranges[0].first != e.ranges[0].second)
            fail("bad range end");
          hi = e.ranges[0].first;
        } else {
          hi = p_[i_++];
        }
        if (hi < lo) fail("range out of order");
        item = CharSet{};
        item.add(lo, hi);
      }
      s.add(item);
    }
    if (!eat(']')) fail("expected ']'");
    s.normalize();
    return negate ? s.complement() : s;
  }

  std::string_view text_;
  std::vector<uint32_t> p_;
  size_t i_ = 0;
  std::vector<CharSet>& sets_;
  bool categories_ = false;
};

enum Op : uint8_t { kChar, kSplit, kJmp, kMatch, kEnd, kLook };
struct Inst {
  Op op;
  int x = 0,
      y = 0;  // kChar: set; kSplit: preferred x, then y; kJmp: x; kLook: program x, y = negate
};

}  // namespace

struct Regex::Program {
  std::vector<CharSet> sets;
  std::vector<std::vector<Inst>> code;  // [0] the pattern, then one per lookahead

  int compile_program(const Node& n) {
    code.emplace_back();
    const int id = static_cast<int>(code.size() - 1);
    std::vector<Inst> body;
    emit(n, body);
    body.push_back({kMatch});
    code[id] = std::move(body);
    return id;
  }

  void emit(const Node& n, std::vector<Inst>& out) {
    switch (n.kind) {
      case Node::kSet:
        out.push_back({kChar, n.set});
        break;
      case Node::kEmpty:
        break;
      case Node::kEnd:
        out.push_back({kEnd});
        break;
      case Node::kConcat:
        for (const Node& c : n.children) emit(c, out);
        break;
      case Node::kAlt: {
        std::vector<size_t> jumps;
        for (size_t i = 0; i < n.children.size(); ++i) {
          if (i + 1 < n.children.size()) {
            const size_t split = out.size();
            out.push_back({kSplit, static_cast<int>(split + 1), 0});
            emit(n.children[i], out);
            jumps.push_back(out.size());
            out.push_back({kJmp});
            out[split].y = static_cast<int>(out.size());
          } else {
            emit(n.children[i], out);
          }
        }
        for (size_t j : jumps) out[j].x = static_cast<int>(out.size());
        break;
      }
      case Node::kRepeat: {
        const Node& body = n.children[0];
        for (int i = 0; i < n.min; ++i) emit(body, out);
        if (n.max == kUnbounded) {  // L: split body, out; body; jmp L
          const size_t loop = out.size();
          out.push_back({kSplit, static_cast<int>(loop + 1), 0});
          emit(body, out);
          out.push_back({kJmp, static_cast<int>(loop)});
          out[loop].y = static_cast<int>(out.size());
        } else {  // (max - min) optional copies, each able to stop
          std::vector<size_t> splits;
          for (int i = n.min; i < n.max; ++i) {
            splits.push_back(out.size());
            out.push_back({kSplit, static_cast<int>(out.size() + 1), 0});
            emit(body, out);
          }
          for (size_t s : splits) out[s].y = static_cast<int>(out.size());
        }
        break;
      }
      case Node::kLook: {
        const int id = compile_program(n.children[0]);
        out.push_back({kLook, id, n.negate ? 1 : 0});
        break;
      }
    }
  }

  // Pike VM over program `id`: leftmost-first match in [from, end), anchored at `from` or not.
  std::pair<size_t, size_t> run(int id, const uint32_t* text, size_t from, size_t end,
                                bool anchored) const {
    const std::vector<Inst>& prog = code[id];
    struct Thread {
      int pc;
      size_t start;
    };
    std::vector<Thread> clist, nlist;
    std::vector<uint32_t> mark(prog.size(), 0);
    uint32_t gen = 1;
    // Follows jumps, splits and assertions from pc at position pos, in priority order.
    auto add = [&](auto&& self, std::vector<Thread>& list, int pc, size_t start,
                   size_t pos) -> void {
      if (mark[pc] == gen) return;
      mark[pc] = gen;
      const Inst& in = prog[pc];
      switch (in.op) {
        case kJmp:
          self(self, list, in.x, start, pos);
          break;
        case kSplit:
          self(self, list, in.x, start, pos);
          self(self, list, in.y, start, pos);
          break;
        case kEnd:
          if (pos == end) self(self, list, pc + 1, start, pos);
          break;
        case kLook: {
          const bool hit = run(in.x, text, pos, end, true).second != kNpos;
          if (hit != (in.y != 0)) self(self, list, pc + 1, start, pos);
          break;
        }
        default:
          list.push_back({pc, start});
          break;
      }
    };
    std::pair<size_t, size_t> best{end, kNpos};
    for (size_t pos = from;; ++pos) {
      if (best.second == kNpos && (!anchored || pos == from)) add(add, clist, 0, pos, pos);
      if (clist.empty() && (best.second != kNpos || anchored || pos >= end)) break;
      ++gen;
      nlist.clear();
      for (const Thread& t : clist) {
        const Inst& in = prog[t.pc];
        if (in.op == kMatch) {
          best = {t.start, pos - t.start};
          if (anchored) return best;  // an assertion only asks whether there is a match
          break;                      // threads after this one have lower priority
        }
        if (pos < end && sets[in.x].contains(text[pos]))
          add(add, nlist, t.pc + 1, t.start, pos + 1);
      }
      clist.swap(nlist);
      if (pos >= end) break;
    }
    return best;
  }
};

Regex::Regex(std::string_view pattern) : prog_(std::make_unique<Program>()) {
  Parser parser(pattern, prog_->sets);
  const Node root = parser.parse();
  categories_ = parser.categories();
  prog_->compile_program(root);
}
Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;

std::vector<uint32_t> Regex::prepare(const std::vector<uint32_t>& cpts) const {
  std::vector<uint32_t> out(cpts);
  for (uint32_t& c : out) {
    if (c < 128) continue;
    const uint8_t f = unicode::flags(c);
    if (f & unicode::kWhitespace) {
      c = kCollapsedSpace;
    } else if (!categories_) {
      continue;
    } else if (f & unicode::kNumber) {
      c = kCollapsedNumber;
    } else if (f & unicode::kLetter) {
      c = kCollapsedLetter;
    } else if (f & unicode::kPunctuation) {
      c = kCollapsedPunct;
    } else if (f & unicode::kMark) {
      c = kCollapsedMark;
    } else if (f & unicode::kSymbol) {
      c = kCollapsedSymbol;
    } else {
      c = kCollapsedOther;
    }
  }
  return out;
}

std::pair<size_t, size_t> Regex::search(const uint32_t* text, size_t from, size_t end) const {
  return prog_->run(0, text, from, end, false);
}

void regex_split(const Regex& re, const std::vector<uint32_t>& cpts,
                 const std::vector<TextSpan>& segments, std::vector<TextSpan>& out) {
  const std::vector<uint32_t> text = re.prepare(cpts);
  for (const auto& [start, len] : segments) {
    const size_t end = start + len;
    size_t piece = start, from = start;
    while (from < end) {
      const auto [m, n] = re.search(text.data(), from, end);
      if (n == kNpos) break;
      if (n == 0) {  // an empty match: no piece; look again one further on
        from = m + 1;
        continue;
      }
      if (m > piece) out.push_back({piece, m - piece});
      out.push_back({m, n});
      piece = from = m + n;
    }
    if (end > piece) out.push_back({piece, end - piece});
  }
}

}  // namespace qinfer
