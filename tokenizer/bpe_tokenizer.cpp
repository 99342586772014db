// Byte-level BPE (tokenizer.ggml.model = "gpt2"): not implemented yet — a vocabulary of this
// kind is refused with a clear error rather than tokenized wrongly.
#include "loader/gguf.hpp"
#include "qinfer/error.hpp"
#include "tokenizer/tokenizer.hpp"

namespace qinfer {

std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab, const GgufFile& file) {
  throw Error(ErrorCode::kUnsupported,
              file.path() + ": byte-level BPE (tokenizer.ggml.model 'gpt2') is not supported yet");
}

}  // namespace qinfer
