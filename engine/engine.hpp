// Engine: an immutable Model shared by Sessions; a Session owns the KV cache, the position
// and the sampler state. The public C/C++ API (include/qinfer/) wraps these.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/huge_pages.hpp"
#include "models/model.hpp"
#include "qinfer/qinfer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace qinfer::engine {

struct Model {
  GgufFile file;
  ModelConfig config;
  ModelWeights weights;
  std::unique_ptr<Tokenizer> tokenizer;
  double load_ms = 0;
  // Weights re-laid at load time for the active kernels: interleaved (kernels/repack.hpp),
  // the views in `weights` point here instead of into the file; or packed (kernels/pack.hpp),
  // a view's `packed` copy, which the gemv and the GEMM read (the view's `data` still names
  // the file's blocks, for get_row). A copied matrix's file pages leave the process
  // (GgufFile::drop_pages). Each copy is 64-byte aligned, so no
  // vector load of a block straddles two cache lines; all of them share one buffer on 2 MiB
  // boundaries that asks for transparent huge pages (docs/kernels.md, "Huge pages for the
  // re-laid weights"). QINFER_NO_REPACK=1 keeps the file's layout alone.
  struct Repacked {
    std::string tensor;  // its name in the file
    uint8_t* data;       // in repack_buffer
  };
  kernels::HugeBuffer repack_buffer;
  std::vector<Repacked> repacked;

  static std::shared_ptr<const Model> load(const std::string& path,
                                           const OpenOptions& options = {});
  // A model over an already opened file (tests build hostile files in memory).
  static std::shared_ptr<Model> from_file(GgufFile file);
};

struct SamplerParams {
  float temperature = 0.8f;  // 0: greedy
  int32_t top_k = 40;        // <= 0: off
  float top_p = 0.95f;       // 1: off
  float min_p = 0.05f;       // 0: off
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;  // the penalties' window (< 0: the whole history)
  // OpenAI's penalties, as llama.cpp applies them after the repeat penalty: a token seen c > 0
  // times in the window loses c * frequency_penalty + presence_penalty.
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  uint64_t seed = 0;
  // Added to a token's logit before anything else (-inf bans it), as llama.cpp's --logit-bias.
  std::vector<std::pair<TokenId, float>> logit_bias;
};

// Repetition penalty, top-k, top-p, min-p, temperature, then a draw from a seeded RNG (the
// same seed and settings give the same tokens). Temperature 0 is argmax.
class Sampler {
 public:
  explicit Sampler(const SamplerParams& p) : p_(p), rng_(p.seed) {}
  TokenId sample(std::span<const float> logits, std::span<const TokenId> history);

 private:
  SamplerParams p_;
  std::mt19937_64 rng_;
  // Scratch kept between tokens: the adjusted logits, the candidates, their probabilities.
  std::vector<float> logits_;
  std::vector<TokenId> cand_;
  std::vector<double> prob_;
};

struct SessionOptions {
  int64_t n_ctx = 0;                     // 0: the model's training context
  TensorType cache_k = TensorType::F16;  // KV cache types (llama.cpp's default: f16)
  TensorType cache_v = TensorType::F16;
  int n_threads = 0;  // 0: physical cores; at most max_threads()
};

struct GenerateOptions {
  int32_t max_tokens = 128;  // < 0: until the context is full
  SamplerParams sampler;
  std::vector<std::string> stop_strings;
  bool ignore_eos = false;  // never sample an end-of-generation token
};

struct GenerateResult {
  std::vector<TokenId> tokens;
  std::string text;
  int64_t prompt_tokens = 0;
  double prompt_ms = 0, gen_ms = 0;
  // "eos", "length", "stop_string", "callback", "context", "cancelled"
  std::string stop_reason;
  // The last token sampled (the end-of-generation one included), which is not yet in the KV
  // cache: a conversation evaluates it before its next turn. -1 when none was sampled.
  TokenId last_sampled = -1;
};

// Called with each piece of complete UTF-8 text; return false to stop.
using TokenCallback = std::function<bool(TokenId id, const std::string& text)>;

class Session {
 public:
  Session(std::shared_ptr<const Model> model, const SessionOptions& options = {});

  // Evaluates tokens after the current position; returns the logits of the last one.
  const std::vector<float>& eval(std::span<const TokenId> tokens);
  // Evaluates tokens and returns logits for every one of them (n * n_vocab).
  std::vector<float> eval_all(std::span<const TokenId> tokens);
  // Evaluates tokens and returns the final hidden state (after the output norm) of each
  // (n * n_embd); the logits are not computed.
  std::vector<float> eval_hidden(std::span<const TokenId> tokens);
  // The embedding of tokens: their final hidden states pooled (mean or last) and L2-normalised
  // when asked. Uses the cache as scratch: the session is empty (position 0) afterwards.
  std::vector<float> embed(std::span<const TokenId> tokens, Pooling pooling, bool normalize);
  const std::vector<float>& logits() const { return logits_; }
  // Evaluates each session's tokens (appended after its position) in one forward pass: every
  // weight is read once for all of them, as a server batches its clients. The sessions must be
  // distinct and on the same model; the pass runs with the first one's threads. Afterwards each
  // session's logits() are those of its last token. On an error no session advances.
  static void eval_batch(std::span<Session* const> sessions,
                         std::span<const std::vector<TokenId>> tokens);
  void reset();
  // Forgets the positions from n on (n <= n_past()); the logits are gone until the next eval.
  void truncate(int64_t n);
  // Any thread: stops the eval or generate in progress (or else the next one) between layers
  // or tokens. eval throws Error(kCancelled); generate returns with stop_reason "cancelled".
  // The positions the stopped call had not finished are not kept.
  void cancel() { cancel_.store(true); }
  void set_threads(int n_threads);
  // See Forward::set_observer (qinfer-imatrix).
  void set_matmul_observer(Forward::MatmulObserver observer) {
    forward_.set_observer(std::move(observer));
  }
  // The session (positions, tokens, logits, the KV cache rows in use) to a file, written to a
  // temporary name and renamed; load_state checks that the file was saved from a session of
  // the same model shape and cache types.
  void save_state(const std::string& path) const;
  void load_state(const std::string& path);
  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return cache_.n_ctx(); }
  int n_threads() const { return n_threads_; }
  const KvCache& cache() const { return cache_; }
  const Model& model() const { return *model_; }

  // Evaluates `prompt` (appended to what the session holds) and samples up to max_tokens.
  GenerateResult generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                          const TokenCallback& on_token = {});

 private:
  std::shared_ptr<const Model> model_;
  KvCache cache_;
  Forward forward_;
  const kernels::KernelTable& kernels_;
  int n_threads_;
  int64_t n_past_ = 0;
  std::vector<TokenId> history_;
  std::vector<float> logits_;
  std::atomic<bool> cancel_{false};
  // Runs the forward pass for tokens at n_past_; on success advances n_past_ and history_.
  void forward(std::span<const TokenId> tokens, ForwardOutput output, std::vector<float>& out);
};

int physical_cores();
// The most threads a session may ask for: 4x the logical cores (more only thrash).
int max_threads();
// Physical memory of the machine, in bytes.
uint64_t physical_memory_bytes();
// The bytes of weight matrices one generated token reads, in the layouts the loader chose:
// each layer's projections (a packed matrix's copy, not the file's blocks; a TQ1_0 matrix's
// TQ2_0 rows; an MoE layer's experts times n_expert_used / n_expert) and the output matrix.
// Norms, biases and the token embedding's one row are left out. qinfer-bench reports it, so
// a share of the read ceiling can count the bytes a token actually reads.
uint64_t token_weight_bytes(const Model& m);
// The memory those matrices live in, one range each (an MoE layer's experts whole): what
// qinfer-bench --ceiling streams for the read ceiling of the token's own pages.
std::vector<std::span<const uint8_t>> token_weight_ranges(const Model& m);

}  // namespace qinfer::engine
