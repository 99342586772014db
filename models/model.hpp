// Model description from GGUF metadata, tensor binding, and the one forward pass every
// architecture runs. What differs between families is data (models/arch.hpp).
#pragma once

#include <atomic>

#include <cstdint>
#include <memory>
#include <string>
#include <functional>
#include <span>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/matmul.hpp"
#include "loader/gguf.hpp"
#include "models/arch.hpp"
#include "models/kv_cache.hpp"

namespace qinfer {

enum class RopeScaling { kNone, kLinear, kYarn };

struct ModelConfig {
  const ArchSpec* arch = nullptr;
  std::string arch_name;
  int64_t n_ctx_train = 0;    // <arch>.context_length
  int64_t n_embd = 0;         // <arch>.embedding_length
  int64_t n_layer = 0;        // <arch>.block_count
  int64_t n_ff = 0;           // <arch>.feed_forward_length (per expert with experts)
  int64_t n_head = 0;         // <arch>.attention.head_count
  int64_t n_head_kv = 0;      // <arch>.attention.head_count_kv (default n_head)
  int64_t head_dim_k = 0;     // <arch>.attention.key_length (default n_embd / n_head)
  int64_t head_dim_v = 0;     // <arch>.attention.value_length (default head_dim_k)
  int64_t n_rot = 0;          // <arch>.rope.dimension_count (default head_dim_k)
  int64_t n_vocab = 0;        // rows of token_embd
  int64_t n_expert = 0;       // <arch>.expert_count (0: dense FFN)
  int64_t n_expert_used = 0;  // <arch>.expert_used_count
  float norm_eps = 1e-5f;     // attention.layer_norm_rms_epsilon or layer_norm_epsilon
  float rope_freq_base = 10000.0f;
  RopeScaling rope_scaling = RopeScaling::kNone;
  float rope_freq_scale = 1.0f;   // 1 / rope.scaling.factor
  int64_t n_ctx_orig = 0;         // rope.scaling.original_context_length (YaRN)
  float rope_attn_factor = 1.0f;  // rope.scaling.attn_factor
  float yarn_ext_factor = 0.0f;   // 1 with YaRN scaling
  float yarn_beta_fast = 32.0f, yarn_beta_slow = 1.0f;
  float attn_softcap = 0;      // attn_logit_softcapping (0: none)
  float final_softcap = 0;     // final_logit_softcapping (0: none)
  int64_t sliding_window = 0;  // attention.sliding_window (0: none)
  float query_scale = 1.0f;    // multiplies q . k
  float embd_scale = 1.0f;     // multiplies the token embedding

  int64_t n_embd_q() const { return n_head * head_dim_k; }     // rows of attn_q
  int64_t n_embd_k() const { return n_head_kv * head_dim_k; }  // rows of attn_k
  int64_t n_embd_v() const { return n_head_kv * head_dim_v; }  // rows of attn_v
  int64_t n_embd_attn() const { return n_head * head_dim_v; }  // columns of attn_output
  bool uses_rope() const { return arch->positions != PositionKind::kLearned; }
  bool layer_uses_swa(int64_t layer) const;

  // Reads <arch>.* keys and checks every value against the others (one table of rules);
  // throws qinfer::Error naming the key and both values.
  static ModelConfig from_gguf(const GgufFile& file);
};

// The weights of one block; a view with data == nullptr is an absent optional tensor.
// Vectors (norms, biases) are F32 views of one row.
struct LayerWeights {
  kernels::MatrixView attn_norm, attn_norm_b;        // (n_embd)
  kernels::MatrixView attn_q, attn_k, attn_v;        // (n_embd_q | n_embd_k | n_embd_v, n_embd)
  kernels::MatrixView attn_q_b, attn_k_b, attn_v_b;  // (n_embd_q | n_embd_k | n_embd_v)
  kernels::MatrixView attn_qkv, attn_qkv_b;      // fused (n_embd_q + n_embd_k + n_embd_v, n_embd)
  kernels::MatrixView attn_q_norm, attn_k_norm;  // (head_dim_k)
  kernels::MatrixView attn_out, attn_out_b;      // (n_embd, n_embd_attn)
  kernels::MatrixView attn_post_norm;            // (n_embd)
  kernels::MatrixView ffn_norm, ffn_norm_b;      // (n_embd)
  kernels::MatrixView ffn_gate, ffn_up,
      ffn_down;                              // (n_ff, n_embd) (phi3's up: 2 n_ff), (n_embd, n_ff)
  kernels::MatrixView ffn_up_b, ffn_down_b;  // (n_ff), (n_embd)
  kernels::MatrixView ffn_post_norm;         // (n_embd)
  kernels::MatrixView ffn_router;            // (n_expert, n_embd)
  kernels::MatrixView ffn_gate_exps, ffn_up_exps;  // (n_expert * n_ff, n_embd)
  kernels::MatrixView ffn_down_exps;               // (n_expert * n_embd, n_ff)
};

struct ModelWeights {
  kernels::MatrixView token_embd;                  // (n_vocab, n_embd)
  kernels::MatrixView position_embd;               // (n_ctx_train, n_embd), learned positions only
  kernels::MatrixView output;                      // (n_vocab, n_embd); token_embd when tied
  kernels::MatrixView output_norm, output_norm_b;  // (n_embd)
  kernels::MatrixView rope_freqs;                  // (n_rot / 2) llama 3's frequency factors
  kernels::MatrixView rope_long, rope_short;       // (n_rot / 2) phi3's LongRoPE factors
  std::vector<LayerWeights> layers;                // (n_layer)
};

// The F32 values of a vector tensor (nullptr when absent).
inline const float* f32(const kernels::MatrixView& v) {
  return reinterpret_cast<const float*>(v.data);
}

// Binds every tensor the architecture lists, checking presence, type and shape against the
// config; throws qinfer::Error naming the tensor.
ModelWeights bind_weights(const GgufFile& file, const ModelConfig& config);

struct ForwardScratch;

// Runs `n` tokens at positions pos0..pos0+n-1 through the model, appending their K/V to the
// cache. logits receives n_vocab values for the last token, or for every token when
// all_logits is set (n * n_vocab).
// What a forward pass returns: the logits of the last token, of every token, or the final
// hidden state (after the output norm) of every token, for embeddings.
enum class ForwardOutput { kLastLogits, kAllLogits, kHidden };

// One sequence of a batch: `n` consecutive tokens of the batch at positions pos0..pos0+n-1 of
// `cache`. Several sequences (each with its own cache) share one pass: every matmul reads its
// weights once for all of them; only attention is per sequence.
struct ForwardSegment {
  KvCache* cache = nullptr;
  int64_t pos0 = 0;
  int64_t n = 0;
};

class Forward {
 public:
  Forward(const ModelConfig& config, const ModelWeights& weights);
  ~Forward();
  // `abort`, when given, is read between layers: once true the pass stops with
  // Error(kCancelled) (the cache rows it wrote past pos0 are then meaningless).
  void run(const kernels::KernelTable& k, const int32_t* tokens, int64_t n, int64_t pos0,
           KvCache& cache, ForwardOutput output, std::vector<float>& out,
           const std::atomic<bool>* abort = nullptr);
  // The segments' tokens, one after the other in `tokens`, in one pass. kLastLogits gives the
  // logits of each segment's last token (segments x n_vocab); the other outputs every token's.
  void run_batch(const kernels::KernelTable& k, const int32_t* tokens,
                 std::span<const ForwardSegment> segments, ForwardOutput output,
                 std::vector<float>& out, const std::atomic<bool>* abort = nullptr);
  // Sees the input of every weight matmul before it runs (the importance-matrix tool): the
  // weight and its n input rows of w.n_cols floats. Mixture-of-experts expert matmuls are not
  // observed.
  using MatmulObserver =
      std::function<void(const kernels::MatrixView& w, const float* x, int64_t n)>;
  void set_observer(MatmulObserver observer) { observer_ = std::move(observer); }

 private:
  void attention(const kernels::KernelTable& k, KvCache& cache, int64_t layer, int64_t t_first,
                 int64_t n, int64_t pos0);
  void feed_forward(const kernels::KernelTable& k, const LayerWeights& lw, int64_t n);
  void moe(const kernels::KernelTable& k, const LayerWeights& lw, int64_t n);
  const ModelConfig& c_;
  const ModelWeights& w_;
  std::unique_ptr<ForwardScratch> s_;
  float rope_corr_[2] = {0, 0};  // YaRN's correction range
  MatmulObserver observer_;
  void see(const kernels::MatrixView& w, const float* x, int64_t n) const {
    if (observer_) observer_(w, x, n);
  }
};

}  // namespace qinfer
