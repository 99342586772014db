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
#include "tokenizer/unicode.hpp"

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

bool valid_utf8(const std::string& s) {
  std::string again;
  for (uint32_t cp : qinfer::unicode::decode_utf8(s)) again += qinfer::unicode::encode_utf8(cp);
  return again == s;
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
