#include "kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/expf.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ref/ref.hpp"
#include "kernels/threads.hpp"

namespace qinfer::kernels {

namespace {
float round_f16(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }

// Key p of KV head g as floats.
void key_row(const KernelTable& k, const AttentionArgs& a, int64_t p, int64_t g, float* out,
             std::vector<uint8_t>& row) {
  const uint8_t* head = a.k_base + g * a.k_head_stride;
  const uint8_t* src = head + p * a.k_pos_stride;
  if (a.k_tiled) {
    row.resize(a.k_pos_stride);
    load_key_tiled(a.k_type, head, a.k_pos_stride, p, 0, a.head_dim_k, row.data());
    src = row.data();
  }
  k.types[static_cast<uint32_t>(a.k_type)].dequantize_row(src, out, a.head_dim_k);
}

// Calls f(tile bytes, row bytes, count, biased) for each piece of a row's elements
// [e0, e0 + n) at position p: single f16 values, or a q8_0 (q4_0) block's scale and its 32
// values in runs of 4 (16 bytes of nibbles in runs of 4; biased: stored plus 128,
// kernels/attention.hpp).
template <typename F>
void each_tiled_piece(TensorType type, int64_t e0, int64_t n, int64_t p, size_t row_bytes,
                      const F& f) {
  if (type == TensorType::F16) {
    for (int64_t e = 0; e < n; ++e) f(key_tile_offset(p, e0 + e, row_bytes), 2 * e, 2, false);
    return;
  }
  const bool q8 = type == TensorType::Q8_0;  // else q4_0
  const size_t tile_block = key_tile_block_bytes(type), row_block = row_size_bytes(type, 32);
  for (int64_t b = 0; b < n / 32; ++b) {
    const size_t block = key_tile_start(p, row_bytes) + (e0 / 32 + b) * tile_block;
    const auto col = static_cast<size_t>(p % kKeyTile);
    f(block + 2 * col, row_block * b, 2, false);
    for (size_t i = 0; i < row_block - 2; i += 4)
      f(block + 2 * kKeyTile + i / 4 * kQ8TileGroup + 4 * col, row_block * b + 2 + i, 4, q8);
  }
}

// Copies n bytes, adding 128 to each (mod 256) when biased: the same both ways.
void copy_biased(uint8_t* dst, const uint8_t* src, size_t n, bool biased) {
  for (size_t i = 0; i < n; ++i) dst[i] = biased ? src[i] ^ 0x80u : src[i];
}
}  // namespace

void quantize_query_q8(const float* q, int64_t n, int8_t* values, float* scales, int32_t* sums) {
  uint8_t block[34];
  for (int64_t b = 0; b < n / 32; ++b) {
    ref::quantize_row_q8_0_act(q + 32 * b, block, 32);
    uint16_t d;
    std::memcpy(&d, block, 2);
    scales[b] = fp16_to_fp32(d);
    std::memcpy(values + 32 * b, block + 2, 32);
    sums[b] = 0;
    for (int64_t i = 0; i < 32; ++i) sums[b] += values[32 * b + i];
  }
}

void store_key_tiled(TensorType type, const void* row, int64_t e0, int64_t n, int64_t p,
                     uint8_t* base, size_t row_bytes) {
  const auto* src = static_cast<const uint8_t*>(row);
  each_tiled_piece(type, e0, n, p, row_bytes,
                   [&](size_t tile, size_t at, size_t bytes, bool biased) {
                     copy_biased(base + tile, src + at, bytes, biased);
                   });
}

void load_key_tiled(TensorType type, const uint8_t* base, size_t row_bytes, int64_t p, int64_t e0,
                    int64_t n, void* row) {
  auto* dst = static_cast<uint8_t*>(row);
  each_tiled_piece(type, e0, n, p, row_bytes,
                   [&](size_t tile, size_t at, size_t bytes, bool biased) {
                     copy_biased(dst + at, base + tile, bytes, biased);
                   });
}

void attention_all(const KernelTable& kt, const AttentionArgs& a, int64_t n, AttentionBuffers& b,
                   AttentionSchedule schedule) {
  const int64_t n_blocks = (n + kAttentionTokenBlock - 1) / kAttentionTokenBlock;
  const int64_t n_units = a.n_head_kv * n_blocks;
  const int64_t n_chunks = (a.pos0 + n + kAttentionChunk - 1) / kAttentionChunk;
  const int threads = thread_count();
  if (schedule == AttentionSchedule::kAuto && kt.attention_combine != nullptr && threads > 1 &&
      n_blocks == 1 && n_chunks > 1 && n_units < 2 * threads) {
    AttentionArgs split = a;
    split.n_chunks = n_chunks;
    b.part_o.resize(static_cast<size_t>(n * a.n_head * n_chunks * a.head_dim_v));
    b.part_stats.resize(static_cast<size_t>(n * a.n_head * n_chunks));
    split.part_o = b.part_o.data();
    split.part_stats = b.part_stats.data();
    b.scratch.resize(static_cast<size_t>(threads));
    const int64_t n_split = a.n_head_kv * n_chunks;
    parallel(threads, [&](Team& team) {
      AttentionScratch& s = b.scratch[static_cast<size_t>(team.id())];
      AttentionArgs unit = split;
      for (int64_t u = team.id(); u < n_split; u += team.size()) {
        unit.chunk0 = u / a.n_head_kv;
        unit.chunk1 = unit.chunk0 + 1;
        kt.attention(unit, u % a.n_head_kv, 0, n, s);
      }
      team.barrier();
      const auto [h0, h1] = team.share(a.n_head);
      kt.attention_combine(split, h0, h1, 0, n, s);
    });
    return;
  }
  const int n_threads = n_units > 1 ? threads : 1;
  b.scratch.resize(static_cast<size_t>(n_threads));
  // Round robin: later token blocks see more keys, so contiguous ranges would be uneven.
  parallel(n_threads, [&](Team& team) {
    for (int64_t u = team.id(); u < n_units; u += team.size()) {
      const int64_t g = u % a.n_head_kv, t0 = u / a.n_head_kv * kAttentionTokenBlock;
      kt.attention(a, g, t0, std::min(n, t0 + kAttentionTokenBlock),
                   b.scratch[static_cast<size_t>(team.id())]);
    }
  });
}

void attention_scalar(const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                      AttentionScratch& s) {
  const KernelTable& k = table(Isa::kScalar);
  const int64_t hk = a.head_dim_k, hv = a.head_dim_v, group = a.n_head / a.n_head_kv;
  s.keys.resize(static_cast<size_t>(hk));
  s.values.resize(static_cast<size_t>(hv));
  s.queries.resize(static_cast<size_t>(hk + hv));
  // A tiled K is gathered once for every query of the unit (the kernel of the ISAs without
  // their own, NEON's among them): into float rows, or a q8_0 (q4_0) K into its rows' bytes.
  const int64_t first_key = a.window > 0 ? std::max<int64_t>(0, a.pos0 + t0 - a.window + 1) : 0;
  const bool int_k = int_cache_type(a.k_type), q4_k = a.k_type == TensorType::Q4_0;
  const size_t int_row = int_k ? row_size_bytes(a.k_type, hk) : 0;
  const size_t int_block = int_k ? row_size_bytes(a.k_type, 32) : 0;
  if (a.k_tiled && int_k) {
    s.row.resize((a.pos0 + t1 - first_key) * int_row);
    for (int64_t p = first_key; p < a.pos0 + t1; ++p) {
      load_key_tiled(a.k_type, a.k_base + g * a.k_head_stride, a.k_pos_stride, p, 0, hk,
                     s.row.data() + (p - first_key) * int_row);
    }
  } else if (a.k_tiled) {
    s.key_rows.resize(static_cast<size_t>((a.pos0 + t1 - first_key) * hk));
    for (int64_t p = first_key; p < a.pos0 + t1; ++p)
      key_row(k, a, p, g, s.key_rows.data() + (p - first_key) * hk, s.row);
  }
  // Key p's q8_0 (q4_0) row.
  auto int_key = [&](int64_t p) -> const uint8_t* {
    return a.k_tiled ? s.row.data() + (p - first_key) * int_row
                     : a.k_base + p * a.k_pos_stride + g * a.k_head_stride;
  };
  // Value i of a q8_0 (q4_0) row's block.
  auto key_value = [&](const uint8_t* block, int64_t i) -> int32_t {
    if (!q4_k) return static_cast<int8_t>(block[2 + i]);
    return (i < 16 ? block[2 + i] & 0xf : block[2 + i - 16] >> 4) - 8;
  };
  s.q8.resize(static_cast<size_t>(hk));
  s.q_scales.resize(static_cast<size_t>(hk / 32));
  s.q_sums.resize(static_cast<size_t>(hk / 32));
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t pos = a.pos0 + t;
    const int64_t first = a.window > 0 ? std::max<int64_t>(0, pos - a.window + 1) : 0;
    s.scores.resize(static_cast<size_t>(pos + 1 - first));
    for (int64_t h = g * group; h < (g + 1) * group; ++h) {
      float* q = s.queries.data();
      float* acc = q + hk;
      const float* q_src = a.q + t * a.q_token_stride + h * hk;
      // With an f16 cache ggml rounds q to f16 for the K product, and the probabilities to
      // f16 for the V product; the same here.
      // With a q8_0 or q4_0 K, quantizes q to q8_0 (kernels/attention.hpp).
      for (int64_t d = 0; d < hk; ++d)
        q[d] = a.k_type == TensorType::F16 ? round_f16(q_src[d]) : q_src[d];
      if (int_k) quantize_query_q8(q_src, hk, s.q8.data(), s.q_scales.data(), s.q_sums.data());
      float max = -INFINITY;
      for (int64_t p = first; p <= pos; ++p) {
        float dot = 0.0f;
        if (int_k) {
          const uint8_t* row = int_key(p);
          for (int64_t b = 0; b < hk / 32; ++b) {
            const uint8_t* block = row + int_block * b;
            int32_t sum = 0;
            for (int64_t i = 0; i < 32; ++i) sum += s.q8[32 * b + i] * key_value(block, i);
            uint16_t d;
            std::memcpy(&d, block, 2);
            dot = std::fma(static_cast<float>(sum), fp16_to_fp32(d) * s.q_scales[b], dot);
          }
        } else {
          const float* key = s.keys.data();
          if (a.k_tiled) {
            key = s.key_rows.data() + (p - first_key) * hk;
          } else {
            key_row(k, a, p, g, s.keys.data(), s.row);
          }
          for (int64_t d = 0; d < hk; ++d) dot += q[d] * key[d];
        }
        float score = dot * a.scale;
        if (a.softcap > 0.0f) score = std::tanh(score * (1.0f / a.softcap)) * a.softcap;
        s.scores[p - first] = score;
        max = std::max(max, score);
      }
      double sum = 0.0;
      for (float& v : s.scores) sum += v = ggml_expf(v - max);
      std::fill(acc, acc + hv, 0.0f);
      for (int64_t p = first; p <= pos; ++p) {
        k.types[static_cast<uint32_t>(a.v_type)].dequantize_row(
            a.v_base + p * a.v_pos_stride + g * a.v_head_stride, s.values.data(), hv);
        float w = static_cast<float>(s.scores[p - first] / sum);
        if (a.v_type == TensorType::F16) w = round_f16(w);
        for (int64_t d = 0; d < hv; ++d) acc[d] += w * s.values[d];
      }
      std::copy(acc, acc + hv, a.out + t * a.out_token_stride + h * hv);
    }
  }
}

}  // namespace qinfer::kernels
