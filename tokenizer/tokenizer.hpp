// Tokenizers built from a GGUF file's tokenizer.ggml.* keys: SentencePiece-style BPE
// (model "llama") and byte-level BPE (model "gpt2"), encoding exactly as llama.cpp does.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qinfer {

class GgufFile;
using TokenId = int32_t;

// GGUF token types (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Lets the vocabulary map be searched with a string_view, without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Vocab {
  std::vector<std::string> text;  // (n_vocab)
  std::vector<float> scores;      // (n_vocab); zeros when the file has none
  std::vector<TokenType> types;   // (n_vocab)
  std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> ids;
  TokenId bos = -1, eos = -1, unk = -1, pad = -1, eot = -1;
  bool add_bos = false, add_eos = false, add_space_prefix = true;
  std::vector<TokenId> specials;  // control/user-defined/unknown tokens, longest text first
  // Special tokens that eat the white space after them when parsed from text (llama.cpp's
  // RSTRIP attribute: every special token of a phi-3 vocabulary but <unk>, <s>, <|endoftext|>).
  std::vector<bool> rstrip;  // (n_vocab)

  int32_t size() const { return static_cast<int32_t>(text.size()); }
  TokenId find(std::string_view piece) const {
    const auto it = ids.find(piece);
    return it == ids.end() ? -1 : it->second;
  }
};

class Tokenizer {
 public:
  // Reads the vocabulary; throws qinfer::Error naming a missing key, a length mismatch or an
  // unsupported model/pre-tokenizer.
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);
  virtual ~Tokenizer() = default;

  // Text -> ids. add_special: BOS/EOS as the file's flags say. parse_special: control tokens
  // written in the text ("<s>") become those tokens instead of plain text.
  std::vector<TokenId> encode(std::string_view text, bool add_special = true,
                              bool parse_special = false) const;
  // Ids -> bytes. Control tokens print nothing; the dummy-prefix space of the first token
  // is removed when the vocabulary adds one (as llama.cpp's detokenizer does).
  std::string decode(std::span<const TokenId> ids) const;
  // The bytes one token stands for (no prefix handling); empty for control tokens.
  virtual std::string piece(TokenId id) const = 0;

  const Vocab& vocab() const { return vocab_; }
  int32_t n_vocab() const { return vocab_.size(); }
  // End of generation: EOS, EOT, or any control token named like one.
  bool is_end_of_generation(TokenId id) const;

 protected:
  explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
  // Tokenizes one fragment of plain text (no special tokens inside). `after_special` is true
  // at the start of the text and after a special token (SentencePiece adds its space there).
  virtual void encode_text(std::string_view text, bool after_special,
                           std::vector<TokenId>& out) const = 0;

  Vocab vocab_;
};

// Accumulates token bytes and releases only complete UTF-8 characters, so a stream never
// shows half a character.
class Utf8Stream {
 public:
  std::string push(std::string_view bytes);
  std::string flush();  // whatever is left, complete or not

 private:
  std::string pending_;
};

// Both tokenizers share this: the vocabulary arrays of a GGUF file.
Vocab read_vocab(const GgufFile& file);
std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab vocab);
std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab vocab, const GgufFile& file);
// The pieces the byte-level BPE pre-tokenizer `pre` ("default", "gpt-2", "llama-bpe") cuts
// a text into, before byte mapping and merges.
std::vector<std::string> pre_tokenize(const std::string& pre, std::string_view text);

}  // namespace qinfer
