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
  // The cache: KV head g's row of position p at base + g * head_stride + p * pos_stride (the
  // model's cache keeps each head's positions together: pos_stride is one head's row). With
  // k_tiled (an f16 K only) head g's keys are tiles instead: element d of position p at
  // k_base + g * k_head_stride + key_tile_offset(p, d, k_pos_stride).
  TensorType k_type = TensorType::F16, v_type = TensorType::F16;
  bool k_tiled = false;
  const uint8_t* k_base = nullptr;
  const uint8_t* v_base = nullptr;
  size_t k_pos_stride = 0, v_pos_stride = 0, k_head_stride = 0, v_head_stride = 0;
};

// An f16 K cache in tiles of kKeyTile positions: a tile holds the rows of kKeyTile
// consecutive positions transposed, element e of each row as kKeyTile f16 values, one per
// position. So a tile takes the same bytes as its rows, and the keys of one dimension are a
// vector: generation computes kKeyTile scores with FMAs on broadcast query values, with no
// transpose or horizontal sum.
inline constexpr int64_t kKeyTile = 16;

// Byte offset of element e of position p's row in tiles of rows of row_bytes.
inline size_t key_tile_offset(int64_t p, int64_t e, size_t row_bytes) {
  return static_cast<size_t>(p / kKeyTile) * kKeyTile * row_bytes +
         static_cast<size_t>(e * kKeyTile + p % kKeyTile) * 2;
}

// Stores n f16 values (elements [e0, e0 + n) of position p's row, 2 bytes each, at row) into
// tiles at base, and reads them back.
void store_key_tiled(const void* row, int64_t e0, int64_t n, int64_t p, uint8_t* base,
                     size_t row_bytes);
void load_key_tiled(const uint8_t* base, size_t row_bytes, int64_t p, int64_t e0, int64_t n,
                    void* row);

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
