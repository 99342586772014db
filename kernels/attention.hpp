// Causal attention over a KV cache, tiled as flash attention: for one KV head and a block of
// queries (every query head that shares the KV head, several tokens), blocks of keys are
// converted to f32 once and used by all those queries, with an online softmax. Serves prompt
// processing (many tokens) and generation (one token); attention_all splits the work units
// (KV head x query block, or KV head x key chunk) over threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/types.hpp"

namespace qinfer::kernels {

// Keys in chunks of kAttentionChunk positions, from position 0 (flash decoding; decision
// record in docs/kernels.md, "Key chunks"): the x86 kernels take each query's softmax and P.V
// per chunk, then add the chunks' outputs in order, each weighted by its share of the whole
// softmax's sum. Up to this many keys the result is the plain softmax's. The chunks of one
// KV head may run on several threads (partial results, then attention_combine); a token's
// bits do not depend on how they were split.
inline constexpr int64_t kAttentionChunk = 512;

// A query's softmax over one chunk: its largest score and the sum of exp(score - max)
// (max = -inf: the query sees no key of the chunk).
struct ChunkStats {
  float max = -std::numeric_limits<float>::infinity();
  double sum = 0.0;
};

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
  // k_tiled (an f16 or q8_0 K) head g's keys are tiles instead (key_tile_offset), from
  // k_base + g * k_head_stride, in tiles of rows of k_pos_stride.
  TensorType k_type = TensorType::F16, v_type = TensorType::F16;
  bool k_tiled = false;
  const uint8_t* k_base = nullptr;
  const uint8_t* v_base = nullptr;
  size_t k_pos_stride = 0, v_pos_stride = 0, k_head_stride = 0, v_head_stride = 0;
  // The key chunks [chunk0, chunk1) the call covers (every one by default). With part_o set
  // (the x86 kernels only), the call writes each query's result per chunk instead of out:
  // the chunk's output normalized by its own sum, and its ChunkStats (max -inf where the query
  // sees none of it); attention_combine then adds them up. Query head h of token t, chunk c:
  // part_o + ((t * n_head + h) * n_chunks + c) * head_dim_v, part_stats the same without hv.
  int64_t chunk0 = 0, chunk1 = std::numeric_limits<int64_t>::max();
  float* part_o = nullptr;
  ChunkStats* part_stats = nullptr;
  int64_t n_chunks = 0;
};

// A K cache in tiles of kKeyTile positions (f16, q8_0 or q4_0): a tile holds the rows of
// kKeyTile consecutive positions transposed, so the keys of one dimension are a vector, and
// takes the same bytes as its rows. Generation computes kKeyTile scores with FMAs on broadcast
// query values, with no transpose or horizontal sum.
// - f16: element e of the rows as kKeyTile f16 values, one per position.
// - q8_0: per block of 32 elements, the kKeyTile positions' scales (f16), then the block's
//   elements in 8 groups of 4: a group is kKeyTile runs of 4 bytes, one per position (so one
//   vpdpbusd lane holds 4 elements of one key), each value stored plus 128 as an unsigned
//   byte (vpdpbusd's unsigned operand; the query is the signed one). kQ8TileBlock bytes a
//   block.
// - q4_0: per block, the scales as q8_0's, then 4 groups of kKeyTile runs of 4 bytes: group g
//   holds the row's bytes [4g, 4g + 4) of the block's 16 (elements 4g.. in the low nibbles,
//   16 + 4g.. in the high ones), unchanged: a nibble is its value plus 8, unsigned already.
//   kQ4TileBlock bytes a block.
inline constexpr int64_t kKeyTile = 16;
inline constexpr size_t kQ8TileBlock = 34 * kKeyTile;
inline constexpr size_t kQ4TileBlock = 18 * kKeyTile;
inline constexpr size_t kQ8TileGroup = 4 * kKeyTile;  // bytes of a group of 4 bytes a position

// With a q8_0 or q4_0 K every path takes the query as ggml does: quantized to q8_0 (blocks of
// 32, values and f16 scales) by ggml's activation quantizer (values x 127/amax rounded half to
// even, as its SIMD from_float; not the weights' quantizer, which rounds half away). A score is
// then, in this order of float operations, with each block's sum of value products exact in
// int32 (or in float: below 2^24) and acc from 0:
//   acc = fma(float(sum_b), k_scale_b * q_scale_b, acc) for each block b; score = acc * scale.
// (A q4_0 key's values are its nibbles less 8.) So every path gives a score the same bits.
// quantize_query_q8 quantizes n (a multiple of 32) values of q: their values, each block's
// scale, and each block's sum of values.
void quantize_query_q8(const float* q, int64_t n, int8_t* values, float* scales, int32_t* sums);

inline bool tiled_key_type(TensorType t) {
  return t == TensorType::F16 || t == TensorType::Q8_0 || t == TensorType::Q4_0;
}
// The cache types summed in integers (q8_0, q4_0): a K's scores against the query quantized
// to q8_0, a V's P.V on int16 weights (the x86 tables with integer dots).
inline bool int_cache_type(TensorType t) { return t == TensorType::Q8_0 || t == TensorType::Q4_0; }
// Bytes of a tiled K's block of 32 elements of kKeyTile positions (q8_0, q4_0).
inline size_t key_tile_block_bytes(TensorType t) {
  return t == TensorType::Q4_0 ? kQ4TileBlock : kQ8TileBlock;
}

// Byte offset of the tile holding position p, in tiles of rows of row_bytes; a q8_0 (q4_0)
// row's block b starts at + b * kQ8TileBlock (kQ4TileBlock) of it.
inline size_t key_tile_start(int64_t p, size_t row_bytes) {
  return static_cast<size_t>(p / kKeyTile) * kKeyTile * row_bytes;
}
// Byte offset of element e of position p's f16 row.
inline size_t key_tile_offset(int64_t p, int64_t e, size_t row_bytes) {
  return key_tile_start(p, row_bytes) + static_cast<size_t>(e * kKeyTile + p % kKeyTile) * 2;
}

// Stores elements [e0, e0 + n) of position p's row, in the type's row format at row (for q8_0
// and q4_0 e0 and n are whole blocks), into tiles at base, and reads them back.
void store_key_tiled(TensorType type, const void* row, int64_t e0, int64_t n, int64_t p,
                     uint8_t* base, size_t row_bytes);
void load_key_tiled(TensorType type, const uint8_t* base, size_t row_bytes, int64_t p, int64_t e0,
                    int64_t n, void* row);

// Per-thread buffers of the attention kernels.
struct AttentionScratch {
  std::vector<float> keys, values, queries, scores;
  std::vector<float> key_rows;            // the scalar kernel: a tiled K's rows as floats
  std::vector<uint8_t> row;               // K rows gathered from tiles
  std::vector<int8_t> q8;                 // a q8_0 or q4_0 K's queries: quantized values,
  std::vector<float> q_scales, k_scales;  // their blocks' scales, and a block of keys' scales
  std::vector<int32_t> q_sums;            // and each block's sum of values
  std::vector<int32_t> q_words, q_bias;   // the same laid out for AVX-512's integer scores
  std::vector<float> q_dq;
  std::vector<uint16_t> v_scale_bits;  // an integer P.V (q8_0, q4_0): its rows' block scales
  std::vector<float> v_scales;         // (f16 and float), and a chunk's weights in int16
  std::vector<int16_t> p16;
  std::vector<float> chunk_out;         // (queries, head_dim_v): a chunk's sums between blocks
  std::vector<ChunkStats> chunk_stats;  // (queries, chunks)
  std::vector<float> chunk_weights;     // (queries, chunks)
};

// Keys per block, and tokens per work unit for a prompt.
inline constexpr int64_t kAttentionKeyBlock = 64;
inline constexpr int64_t kAttentionTokenBlock = 16;

// Computes out for tokens [t0, t1) and the query heads of KV head g.
using AttentionFn = void (*)(const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                             AttentionScratch& s);

// Adds the partial results (AttentionArgs::part_o) of query heads [h0, h1) of tokens [t0, t1)
// into out, as the kernel does with its own chunks.
using AttentionCombineFn = void (*)(const AttentionArgs& a, int64_t h0, int64_t h1, int64_t t0,
                                    int64_t t1, AttentionScratch& s);

struct KernelTable;

// The buffers of attention_all: each thread's scratch, and the partial results of a split.
struct AttentionBuffers {
  std::vector<AttentionScratch> scratch;
  std::vector<float> part_o;
  std::vector<ChunkStats> part_stats;
};
enum class AttentionSchedule {
  kAuto,   // work units of KV heads x blocks of tokens, or of key chunks when those are few
  kHeads,  // never split a KV head's keys (a benchmark's baseline)
};
// Attention of tokens [0, n) of a (every KV head) on thread_count() threads. The work units
// are KV head x block of kAttentionTokenBlock tokens. When they are fewer than twice the
// threads (generation on few KV heads, e.g. 1 on 2 threads) and the keys span several chunks,
// each KV head's key chunks are units too (the kernel's partial results, then
// attention_combine): flash decoding. The output's bits are the same either way.
void attention_all(const KernelTable& kt, const AttentionArgs& a, int64_t n, AttentionBuffers& b,
                   AttentionSchedule schedule = AttentionSchedule::kAuto);

// The scalar reference: exact two-pass softmax per query, over all keys at once (it takes no
// chunk range).
void attention_scalar(const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                      AttentionScratch& s);

}  // namespace qinfer::kernels
