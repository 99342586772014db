// Causal attention over a KV cache, tiled as flash attention: for one KV head and a block of
// queries (every query head that shares the KV head, several tokens), blocks of keys are
// converted to f32 once and used by all those queries, with an online softmax. Serves prompt
// processing (many tokens) and generation (one token); the caller splits the work units
// (KV head x query block) over threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/types.hpp"

namespace qinfer::kernels {

struct AttentionArgs {
  const float* q = nullptr;    // (n_tokens, n_head, head_dim_k), already scaled where the arch says
  int64_t q_token_stride = 0;  // floats between tokens
  float* out = nullptr;        // (n_tokens, n_head, head_dim_v)
  int64_t out_token_stride = 0;
  int64_t n_head = 0, n_head_kv = 0, head_dim_k = 0, head_dim_v = 0;
  int64_t pos0 = 0;      // position of token 0; token t sees keys [first, pos0 + t]
  int64_t window = 0;    // sliding window (0: none): first = pos0 + t - window + 1
  float scale = 1.0f;    // multiplies q . k
  float softcap = 0.0f;  // score = cap * tanh(score / cap) when > 0
  // The cache: row of position p at base + p * row_bytes; KV head g at + g * head_bytes.
  TensorType k_type = TensorType::F16, v_type = TensorType::F16;
  const uint8_t* k_base = nullptr;
  const uint8_t* v_base = nullptr;
  size_t k_row_bytes = 0, v_row_bytes = 0, k_head_bytes = 0, v_head_bytes = 0;
};

// Per-thread buffers of the attention kernels.
struct AttentionScratch {
  std::vector<float> keys, values, queries, scores, state;
};

// Keys per block, and tokens per work unit for a prompt.
inline constexpr int64_t kAttentionKeyBlock = 64;
inline constexpr int64_t kAttentionTokenBlock = 16;

// Computes out for tokens [t0, t1) and the query heads of KV head g.
using AttentionFn = void (*)(const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                             AttentionScratch& s);

// The scalar reference: exact two-pass softmax per query.
void attention_scalar(const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                      AttentionScratch& s);

}  // namespace qinfer::kernels
