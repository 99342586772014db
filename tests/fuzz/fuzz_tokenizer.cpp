// libFuzzer target for the tokenizers: random bytes through a SentencePiece vocabulary
// (llama-spm), a byte-level BPE with a hand-matched pre-tokenizer (gpt-2) and one whose
// patterns run on the regex engine (deepseek-coder). The first input byte picks the
// vocabulary and whether special tokens are parsed. Ids must be in the vocabulary, and
// byte-level BPE must give back valid UTF-8 text exactly.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "loader/gguf.hpp"
#include "qinfer/error.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

struct Vocab {
  qinfer::GgufFile file;
  std::unique_ptr<qinfer::Tokenizer> tok;
  bool byte_level;
};

std::vector<Vocab>& vocabs() {
  static std::vector<Vocab> v = [] {
    std::vector<Vocab> out;
    for (const char* name :
         {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-deepseek-coder.gguf"}) {
      auto f = qinfer::GgufFile::open(std::string(QINFER_FUZZ_VOCAB_DIR) + "/" + name);
      auto t = qinfer::Tokenizer::from_gguf(f);
      const bool bpe = f.get_string("tokenizer.ggml.model") == "gpt2";
      out.push_back({std::move(f), std::move(t), bpe});
    }
    return out;
  }();
  return v;
}

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF. (Bytes
// F5..FF are not UTF-8: a BPE vocabulary may hold an added token whose text is the byte's
// mapped character, e.g. "ö" for 0xF6, which decodes as that text, in llama.cpp as here.)
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3f);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto& all = vocabs();
  const Vocab& v = all[data[0] % all.size()];
  const bool parse_special = (data[0] >> 4) & 1;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto ids = v.tok->encode(text, (data[0] >> 5) & 1, parse_special);
  for (qinfer::TokenId id : ids) {
    if (id < 0 || id >= v.tok->n_vocab()) std::abort();
  }
  const std::string back = v.tok->decode(ids);
  if (v.byte_level && !parse_special && valid_utf8(text) && !((data[0] >> 5) & 1) && back != text)
    std::abort();
  return 0;
}
