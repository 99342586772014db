// SentencePiece-style BPE (tokenizer.ggml.model = "llama"), as llama.cpp runs it: spaces
// become U+2581, a dummy space prefix starts each text fragment, characters are merged by
// the highest-scoring vocabulary entry, and what no token covers falls back to <0xXX> bytes.
#include <queue>

#include "tokenizer/tokenizer.hpp"

namespace qinfer {
namespace {

constexpr std::string_view kSpaceMark = "\xe2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

size_t utf8_len(unsigned char c) {
  return c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 1;
}

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(Vocab v) : Tokenizer(std::move(v)) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      byte_tokens_[b] = vocab_.find(name);
      if (byte_tokens_[b] < 0) byte_tokens_[b] = vocab_.find(std::string(1, static_cast<char>(b)));
      if (byte_tokens_[b] < 0) byte_tokens_[b] = vocab_.unk;
    }
  }

  std::string piece(TokenId id) const override {
    if (id < 0 || id >= n_vocab()) return {};
    const std::string& text = vocab_.text[id];
    switch (vocab_.types[id]) {
      case TokenType::kNormal:
      case TokenType::kUserDefined:
      case TokenType::kUndefined: {
        std::string out;
        for (size_t i = 0; i < text.size();) {
          if (text.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
            out += ' ';
            i += kSpaceMark.size();
          } else {
            out += text[i++];
          }
        }
        return out;
      }
      case TokenType::kByte:
        if (text.size() == 6 && text.starts_with("<0x")) {
          return std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
        }
        return text;
      case TokenType::kUnknown:
        return "\xe2\x96\x85";  // llama.cpp prints U+2585 for the unknown token
      default:
        return {};  // control and unused tokens print nothing
    }
  }

 protected:
  void encode_text(std::string_view raw, bool after_special,
                   std::vector<TokenId>& out) const override {
    std::string text;
    if (vocab_.add_space_prefix && after_special) text += kSpaceMark;
    for (char c : raw) {
      if (c == ' ') {
        text += kSpaceMark;
      } else {
        text += c;
      }
    }
    if (text.empty()) return;
    Merger(*this, text).run(out);
  }

 private:
  // One run of the merge loop over a text (llama.cpp's llm_tokenizer_spm_session).
  class Merger {
   public:
    Merger(const SpmTokenizer& t, const std::string& text) : t_(t), text_(text) {
      for (size_t i = 0; i < text.size();) {
        const size_t n = std::min(utf8_len(static_cast<unsigned char>(text[i])), text.size() - i);
        symbols_.push_back({static_cast<int>(symbols_.size()) - 1, -1, i, n});
        i += n;
      }
      if (!symbols_.empty()) symbols_.back().next = -1;
      for (size_t i = 0; i + 1 < symbols_.size(); ++i) symbols_[i].next = static_cast<int>(i + 1);
    }

    void run(std::vector<TokenId>& out) {
      for (size_t i = 1; i < symbols_.size(); ++i)
        try_bigram(static_cast<int>(i - 1), static_cast<int>(i));
      while (!queue_.empty()) {
        const Bigram b = queue_.top();
        queue_.pop();
        Symbol& left = symbols_[b.left];
        Symbol& right = symbols_[b.right];
        if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;  // stale
        left.n += right.n;
        right.n = 0;
        left.next = right.next;
        if (right.next >= 0) symbols_[right.next].prev = b.left;
        try_bigram(left.prev, b.left);
        try_bigram(b.left, left.next);
      }
      for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) resegment(i, out);
    }

   private:
    struct Symbol {
      int prev, next;
      size_t start, n;
    };
    struct Bigram {
      int left, right;
      float score;
      size_t size;
      bool operator<(const Bigram& o) const {  // highest score first, then leftmost
        return score < o.score || (score == o.score && left > o.left);
      }
    };

    std::string_view text_of(const Symbol& s) const {
      return std::string_view(text_).substr(s.start, s.n);
    }

    void try_bigram(int left, int right) {
      if (left < 0 || right < 0) return;
      const std::string_view merged = std::string_view(text_).substr(
          symbols_[left].start, symbols_[left].n + symbols_[right].n);
      const TokenId id = t_.vocab_.find(merged);
      if (id < 0) return;
      queue_.push({left, right, t_.vocab_.scores[id], merged.size()});
    }

    // Every merge yields a vocabulary entry, so a final symbol is either a token or a
    // single character no token covers; the latter falls back to byte tokens. (llama.cpp
    // also keeps a reverse-merge map here, which this invariant leaves unused.)
    void resegment(int i, std::vector<TokenId>& out) const {
      const std::string_view text = text_of(symbols_[i]);
      const TokenId id = t_.vocab_.find(text);
      if (id >= 0) {
        out.push_back(id);
        return;
      }
      for (char c : text) out.push_back(t_.byte_tokens_[static_cast<unsigned char>(c)]);
    }

    const SpmTokenizer& t_;
    const std::string& text_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram> queue_;
  };

  TokenId byte_tokens_[256];
};

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab vocab) {
  return std::make_unique<SpmTokenizer>(std::move(vocab));
}

}  // namespace qinfer
