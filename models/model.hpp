// Model description from GGUF metadata, tensor binding and the forward pass of the llama
// and gpt2 architectures. An architecture is data (ArchSpec): which tensors it binds and
// which blocks it uses (RMSNorm or LayerNorm, fused QKV, RoPE or learned positions, SwiGLU or
// GELU), not a code path of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/matmul.hpp"
#include "loader/gguf.hpp"

namespace qinfer {

enum class Arch { kLlama, kGpt2 };

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string arch_name;
  int64_t n_ctx_train = 0;  // <arch>.context_length
  int64_t n_embd = 0;       // <arch>.embedding_length
  int64_t n_layer = 0;      // <arch>.block_count
  int64_t n_ff = 0;         // <arch>.feed_forward_length
  int64_t n_head = 0;       // <arch>.attention.head_count
  int64_t n_head_kv = 0;    // <arch>.attention.head_count_kv (default n_head)
  int64_t n_rot = 0;        // <arch>.rope.dimension_count (default head_dim)
  int64_t n_vocab = 0;      // rows of token_embd
  float norm_eps = 1e-5f;   // layer_norm_rms_epsilon or layer_norm_epsilon
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor for linear scaling

  int64_t head_dim() const { return n_embd / n_head; }
  int64_t n_embd_kv() const { return head_dim() * n_head_kv; }
  static ModelConfig from_gguf(const GgufFile& file);
};

// The weights of one block; a null view is an absent optional tensor.
struct LayerWeights {
  kernels::MatrixView attn_q, attn_k, attn_v, attn_qkv, attn_out;  // (n_out, n_in)
  kernels::MatrixView ffn_gate, ffn_up, ffn_down;
  const float* attn_norm = nullptr;       // (n_embd)
  const float* attn_norm_b = nullptr;     // (n_embd)
  const float* ffn_norm = nullptr;        // (n_embd)
  const float* ffn_norm_b = nullptr;      // (n_embd)
  const float* attn_qkv_b = nullptr;      // (3 * n_embd)
  const float* attn_out_b = nullptr;      // (n_embd)
  const float* ffn_up_b = nullptr;        // (n_ff)
  const float* ffn_down_b = nullptr;      // (n_embd)
};

struct ModelWeights {
  kernels::MatrixView token_embd;     // (n_vocab, n_embd)
  kernels::MatrixView position_embd;  // (n_ctx_train, n_embd), gpt2 only
  kernels::MatrixView output;         // (n_vocab, n_embd); token_embd when tied
  const float* output_norm = nullptr;    // (n_embd)
  const float* output_norm_b = nullptr;  // (n_embd)
  std::vector<LayerWeights> layers;      // (n_layer)
};

// Binds every tensor the architecture lists, checking presence, type and shape against the
// config; throws qinfer::Error naming the tensor.
ModelWeights bind_weights(const GgufFile& file, const ModelConfig& config);

// Per layer K and V of every past position, in F32 or F16 (as llama.cpp's default).
class KvCache {
 public:
  KvCache(const ModelConfig& config, int64_t n_ctx, bool f16);
  int64_t n_ctx() const { return n_ctx_; }
  bool is_f16() const { return f16_; }
  // Row of position pos in layer l: n_embd_kv values (float or uint16 f16 bits).
  void* k_row(int64_t layer, int64_t pos);
  void* v_row(int64_t layer, int64_t pos);

 private:
  int64_t n_ctx_, row_elems_, n_layer_;
  bool f16_;
  std::vector<uint8_t> k_, v_;  // (n_layer, n_ctx, n_embd_kv)
};

// Scratch buffers of one forward pass, kept between calls.
struct ForwardScratch;

// Runs `n` tokens at positions pos0..pos0+n-1 through the model, writing their K/V into the
// cache. logits receives n_vocab values for the last token, or for every token when
// all_logits is set (n * n_vocab).
class Forward {
 public:
  Forward(const ModelConfig& config, const ModelWeights& weights);
  ~Forward();
  void run(const kernels::KernelTable& k, const int32_t* tokens, int64_t n, int64_t pos0,
           KvCache& cache, bool all_logits, std::vector<float>& logits);

 private:
  void attention(const kernels::VectorOps& vec, KvCache& cache, int64_t layer, int64_t n, int64_t pos0);
  const ModelConfig& c_;
  const ModelWeights& w_;
  std::unique_ptr<ForwardScratch> s_;
};

}  // namespace qinfer
