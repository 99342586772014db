// Q2_K..Q6_K and the Q8_K activation: decoders and ggml's reference quantizers.
#include <algorithm>
#include <cstring>

#include "kernels/ref/fit.hpp"
#include "kernels/ref/superblock.hpp"

namespace qinfer::ref {

namespace {

// The 6-bit scale and min of sub-block j (of 8) packed in 12 bytes (Q4_K, Q5_K).
void scale_min_k4(int j, const uint8_t* q, uint8_t& d, uint8_t& m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The 6-bit signed scale j (of 16) of Q3_K.
int q3_k_scale(const uint8_t* s, int j) {
  const int low = j < 8 ? s[j] & 0x0f : s[j - 8] >> 4;
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

}  // namespace

// Element k of the 2- and 3-bit layouts: 2 bits at position 2*((k%128)/32) of qs[(k/128)*32 +
// k%32].
inline int low2(const uint8_t* qs, int k) {
  return (qs[(k / 128) * 32 + k % 32] >> (2 * ((k % 128) / 32))) & 3;
}

void decode_q2_K(const BlockQ2_K& b, Decoded& out) {
  const float d = h2f(b.d), dmin = h2f(b.dmin);
  for (int s = 0; s < 16; ++s) {
    out.scale[s] = d * static_cast<float>(b.scales[s] & 0x0f);
    out.min[s] = dmin * static_cast<float>(b.scales[s] >> 4);
  }
  for (int k = 0; k < kQKK; ++k) out.q[k] = static_cast<int8_t>(low2(b.qs, k));
}

void decode_q3_K(const BlockQ3_K& b, Decoded& out) {
  const float d = h2f(b.d);
  for (int s = 0; s < 16; ++s) {
    out.scale[s] = d * static_cast<float>(q3_k_scale(b.scales, s));
    out.min[s] = 0.0f;
  }
  for (int k = 0; k < kQKK; ++k) {
    const int bit = (k / 128) * 4 + (k % 128) / 32;
    const bool high = (b.hmask[k % 32] >> bit) & 1;
    out.q[k] = static_cast<int8_t>(low2(b.qs, k) - (high ? 0 : 4));
  }
}

// Q4_K and Q5_K share the nibble layout: 64-element chunks, low nibbles first.
template <typename Block>
void decode_k4_common(const Block& b, Decoded& out) {
  const float d = h2f(b.d), dmin = h2f(b.dmin);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scale_min_k4(j, b.scales, sc, m);
    out.scale[2 * j] = out.scale[2 * j + 1] = d * static_cast<float>(sc);
    out.min[2 * j] = out.min[2 * j + 1] = dmin * static_cast<float>(m);
  }
  for (int k = 0; k < kQKK; ++k) {
    const uint8_t byte = b.qs[(k / 64) * 32 + k % 32];
    out.q[k] = static_cast<int8_t>((k % 64) < 32 ? byte & 0x0f : byte >> 4);
  }
}

void decode_q4_K(const BlockQ4_K& b, Decoded& out) { decode_k4_common(b, out); }

void decode_q5_K(const BlockQ5_K& b, Decoded& out) {
  decode_k4_common(b, out);
  for (int k = 0; k < kQKK; ++k) {
    const int bit = 2 * (k / 64) + ((k % 64) < 32 ? 0 : 1);
    out.q[k] = static_cast<int8_t>(out.q[k] + (((b.qh[k % 32] >> bit) & 1) << 4));
  }
}

void decode_q6_K(const BlockQ6_K& b, Decoded& out) {
  const float d = h2f(b.d);
  for (int s = 0; s < 16; ++s) {
    out.scale[s] = d * static_cast<float>(b.scales[s]);
    out.min[s] = 0.0f;
  }
  for (int k = 0; k < kQKK; ++k) {
    const int half = k / 128, r = k % 128, l = r % 32, quarter = r / 32;
    const uint8_t* ql = b.ql + half * 64;
    const uint8_t* qh = b.qh + half * 32;
    const uint8_t low = quarter % 2 == 0 ? ql[l] : ql[l + 32];
    const int nib = quarter < 2 ? low & 0x0f : low >> 4;
    const int hi = (qh[l] >> (2 * quarter)) & 3;
    out.q[k] = static_cast<int8_t>((nib | (hi << 4)) - 32);
  }
}

// ---------------------------------------------------------------- quantizers (ggml _ref)

namespace {

// Packs 2-bit values L[0..256) into the Q2_K/Q3_K qs layout.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQKK; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                           (L[j + l + 96] << 6));
    }
  }
}

// The 6-bit scales and mins of the 8 sub-blocks into the 12 scale bytes (Q4_K, Q5_K).
template <typename Block>
void pack_k4_scales(Block& y, const uint8_t* ls, const uint8_t* lm) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      y.scales[j] = ls[j];
      y.scales[j + 4] = lm[j];
    } else {
      y.scales[j + 4] = static_cast<uint8_t>((ls[j] & 0x0f) | ((lm[j] & 0x0f) << 4));
      y.scales[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      y.scales[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
}

// The levels 0..nmax of x under the block's final (f16) scales and mins (Q4_K, Q5_K).
template <typename Block>
void requantize_k4(const float* x, const Block& y, uint8_t* L, int nmax) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scale_min_k4(j, y.scales, sc, m);
    const float d = h2f(y.d) * sc;
    if (!d) continue;
    const float dm = h2f(y.dmin) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

// Fits a scale and min per 32 elements (Q4_K: nmax 15, Q5_K: nmax 31) and packs the 6-bit
// scales; returns the requantized levels in L.
template <typename Block>
void quantize_k4_scales(const float* x, Block& y, uint8_t* L, int nmax, float rmin, float rdelta,
                        int nstep) {
  float mins[8], scales[8], weights[32];
  uint8_t Laux[32], ls[8], lm[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                                 rdelta, nstep, false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < 8; ++j) {
    ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
  }
  pack_k4_scales(y, ls, lm);
  y.d = fp32_to_fp16(max_scale / 63.f);
  y.dmin = fp32_to_fp16(max_min / 63.f);
  requantize_k4(x, y, L, nmax);
}

// The imatrix form (ggml's quantize_row_q4_K_impl / q5_K_impl): weighted fits per 32, then
// the 6-bit scales and mins fitted by make_qp_quants to the sub-blocks' total weights.
template <typename Block>
void quantize_k4_scales_imatrix(const float* x, const float* qw, Block& y, uint8_t* L, int nmax) {
  float mins[8], scales[8], weights[32], sw[8];
  uint8_t Laux[32], ls[8], lm[8];
  const float sigma2 = 2 * sum_squares(x, kQKK) / kQKK;
  for (int j = 0; j < 8; ++j) {
    imatrix_weights(x + 32 * j, qw + 32 * j, sigma2, 32, weights);
    float sumw = 0;
    for (int l = 0; l < 32; ++l) sumw += weights[l];
    sw[j] = sumw;
    scales[j] = make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f,
                                 0.05f, 36, false);
  }
  const float d_block = make_qp_quants(8, 63, scales, ls, sw);
  const float m_block = make_qp_quants(8, 63, mins, lm, sw);
  pack_k4_scales(y, ls, lm);
  y.d = fp32_to_fp16(d_block);
  y.dmin = fp32_to_fp16(m_block);
  requantize_k4(x, y, L, nmax);
}

void pack_q4_K_levels(const uint8_t* L, BlockQ4_K& y) {
  uint8_t* q = y.qs;
  for (int j = 0; j < kQKK; j += 64, q += 32) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
  }
}

void pack_q5_K_levels(const uint8_t* L, BlockQ5_K& y) {
  uint8_t* qh = y.qh;
  uint8_t* ql = y.qs;
  std::memset(qh, 0, 32);
  uint8_t m1 = 1, m2 = 2;
  for (int j = 0; j < kQKK; j += 64, ql += 32) {
    for (int l = 0; l < 32; ++l) {
      int l1 = L[j + l], l2 = L[j + l + 32];
      if (l1 > 15) {
        l1 -= 16;
        qh[l] |= m1;
      }
      if (l2 > 15) {
        l2 -= 16;
        qh[l] |= m2;
      }
      ql[l] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
  }
}

// Q2_K: the levels 0..3 under the block's final scales and mins, packed.
void finish_q2_K(const float* x, BlockQ2_K& y, uint8_t* L) {
  for (int j = 0; j < 16; ++j) {
    const float d = h2f(y.d) * (y.scales[j] & 0x0f);
    if (!d) continue;
    const float dm = h2f(y.dmin) * (y.scales[j] >> 4);
    for (int ii = 0; ii < 16; ++ii) {
      const int l = nearest_int((x[16 * j + ii] + dm) / d);
      L[16 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(3, l)));
    }
  }
  pack_2bit(L, y.qs);
}

// Q3_K: the 6-bit scale l (0..63, offset 32) of sub-block j into the 12 scale bytes, which
// start zeroed.
void set_q3_scale(BlockQ3_K& y, int j, int l) {
  if (j < 8) {
    y.scales[j] = static_cast<uint8_t>(l & 0x0f);
  } else {
    y.scales[j - 8] |= static_cast<uint8_t>((l & 0x0f) << 4);
  }
  y.scales[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
}

// Q3_K: the levels under the block's final scales, split into the high-bit mask and 2 bits.
void finish_q3_K(const float* x, BlockQ3_K& y, int8_t* L) {
  for (int j = 0; j < 16; ++j) {
    const float d = h2f(y.d) * static_cast<float>(q3_k_scale(y.scales, j));
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = nearest_int(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<int8_t>(std::max(-4, std::min(3, l)) + 4);
    }
  }
  std::memset(y.hmask, 0, 32);
  int m = 0;
  uint8_t hm = 1;
  for (int j = 0; j < kQKK; ++j) {
    if (L[j] > 3) {
      y.hmask[m] |= hm;
      L[j] = static_cast<int8_t>(L[j] - 4);
    }
    if (++m == 32) {
      m = 0;
      hm = static_cast<uint8_t>(hm << 1);
    }
  }
  pack_2bit(reinterpret_cast<const uint8_t*>(L), y.qs);
}

// Q6_K: from the 16 sub-block scales (max_scale the one of largest magnitude), the 8-bit
// scales under one f16 scale, the levels, and their packing.
void finish_q6_K(const float* x, BlockQ6_K& y, int8_t* L, const float* scales, float max_scale,
                 float max_abs_scale) {
  if (max_abs_scale < 1e-15f) {
    std::memset(&y, 0, sizeof(BlockQ6_K));
    return;
  }
  const float iscale = -128.f / max_scale;
  y.d = fp32_to_fp16(1 / iscale);
  for (int ib = 0; ib < 16; ++ib) {
    y.scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  }
  for (int j = 0; j < 16; ++j) {
    const float d = h2f(y.d) * y.scales[j];
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = nearest_int(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
    }
  }
  uint8_t* ql = y.ql;
  uint8_t* qh = y.qh;
  for (int j = 0; j < kQKK; j += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l] & 0xf, q2 = L[j + l + 32] & 0xf;
      const int q3 = L[j + l + 64] & 0xf, q4 = L[j + l + 96] & 0xf;
      ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                   ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
    }
  }
}

// Q6_K's 16 sub-block scales (weighted by qw when given) and the one of largest magnitude.
void q6_K_scales(const float* x, const float* qw, int8_t* L, float* scales, float& max_scale,
                 float& max_abs_scale) {
  max_scale = max_abs_scale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    const float scale =
        make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, qw ? qw + 16 * ib : nullptr);
    scales[ib] = scale;
    if (std::fabs(scale) > max_abs_scale) {
      max_abs_scale = std::fabs(scale);
      max_scale = scale;
    }
  }
}

}  // namespace

void quantize_row_q2_K(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ2_K*>(vy);
  uint8_t L[kQKK], Laux[16];
  float weights[16], mins[16], scales[16];
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f,
                                   0.1f, 15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    if (max_scale > 0) {
      const float iscale = 15.f / max_scale;
      for (int j = 0; j < 16; ++j)
        y[i].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      y[i].d = fp32_to_fp16(max_scale / 15.f);
    } else {
      for (int j = 0; j < 16; ++j) y[i].scales[j] = 0;
      y[i].d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = 15.f / max_min;
      for (int j = 0; j < 16; ++j) {
        y[i].scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
      }
      y[i].dmin = fp32_to_fp16(max_min / 15.f);
    } else {
      y[i].dmin = fp32_to_fp16(0.f);
    }
    finish_q2_K(x, y[i], L);
  }
}

void quantize_row_q3_K(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ3_K*>(vy);
  int8_t L[kQKK];
  float scales[16];
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    std::memset(y[i].scales, 0, 12);
    if (max_scale) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const auto l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        set_q3_scale(y[i], j, std::max<int>(-32, std::min<int>(31, l)) + 32);
      }
      y[i].d = fp32_to_fp16(1 / iscale);
    } else {
      y[i].d = fp32_to_fp16(0.f);
    }
    finish_q3_K(x, y[i], L);
  }
}

void quantize_row_q4_K(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ4_K*>(vy);
  uint8_t L[kQKK];
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    quantize_k4_scales(x, y[i], L, 15, -1.f, 0.1f, 20);
    pack_q4_K_levels(L, y[i]);
  }
}

void quantize_row_q5_K(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ5_K*>(vy);
  uint8_t L[kQKK];
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    quantize_k4_scales(x, y[i], L, 31, -0.5f, 0.1f, 15);
    pack_q5_K_levels(L, y[i]);
  }
}

void quantize_row_q6_K(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ6_K*>(vy);
  int8_t L[kQKK];
  float scales[16], max_scale, max_abs_scale;
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    q6_K_scales(x, nullptr, L, scales, max_scale, max_abs_scale);
    finish_q6_K(x, y[i], L, scales, max_scale, max_abs_scale);
  }
}

// ---------------------------------------------------------------- with an importance matrix
// ggml's quantize_row_*_impl: `qw` holds one weight per column of the row (n of them).

void quantize_q2_K_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockQ2_K*>(vy);
  uint8_t L[kQKK], Laux[16], Ls[16], Lm[16];
  float mins[16], scales[16], sw[16], weight[16];
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK, qw += kQKK) {
    const float sigma2 = sum_squares(x, kQKK) / kQKK;
    for (int j = 0; j < 16; ++j) {
      imatrix_weights(x + 16 * j, qw + 16 * j, sigma2, 16, weight);
      sw[j] = 0;
      for (int l = 0; l < 16; ++l) sw[j] += weight[l];
      scales[j] = make_qkx3_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f,
                                   0.05f, 36, false);
    }
    y[i].d = fp32_to_fp16(make_qp_quants(16, 15, scales, Ls, sw));
    y[i].dmin = fp32_to_fp16(make_qp_quants(16, 15, mins, Lm, sw));
    for (int j = 0; j < 16; ++j) y[i].scales[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
    finish_q2_K(x, y[i], L);
  }
}

void quantize_q3_K_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockQ3_K*>(vy);
  int8_t L[kQKK], Ls[16];
  float scales[16], weight[16], sw[16];
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK, qw += kQKK) {
    const float sigma2 = 2 * sum_squares(x, kQKK) / kQKK;
    for (int j = 0; j < 16; ++j) {
      imatrix_weights(x + 16 * j, qw + 16 * j, sigma2, 16, weight);
      float sumw = 0;
      for (int l = 0; l < 16; ++l) sumw += weight[l];
      sw[j] = sumw;
      scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight);
    }
    std::memset(y[i].scales, 0, 12);
    const float d_block = make_qx_quants(16, 32, scales, Ls, 1, sw);
    for (int j = 0; j < 16; ++j) set_q3_scale(y[i], j, Ls[j]);
    y[i].d = fp32_to_fp16(d_block);
    finish_q3_K(x, y[i], L);
  }
}

void quantize_q4_K_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockQ4_K*>(vy);
  uint8_t L[kQKK];
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK, qw += kQKK) {
    quantize_k4_scales_imatrix(x, qw, y[i], L, 15);
    pack_q4_K_levels(L, y[i]);
  }
}

void quantize_q5_K_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockQ5_K*>(vy);
  uint8_t L[kQKK];
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK, qw += kQKK) {
    quantize_k4_scales_imatrix(x, qw, y[i], L, 31);
    pack_q5_K_levels(L, y[i]);
  }
}

void quantize_q6_K_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockQ6_K*>(vy);
  int8_t L[kQKK];
  float scales[16], max_scale, max_abs_scale;
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK, qw += kQKK) {
    q6_K_scales(x, qw, L, scales, max_scale, max_abs_scale);  // the weights as given
    finish_q6_K(x, y[i], L, scales, max_scale, max_abs_scale);
  }
}

void quantize_row_q8_K(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(vy);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    const float max = largest_magnitude(x, kQKK);
    if (max == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < kQKK; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    }
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[j * 16 + ii];
      y[i].bsums[j] = static_cast<int16_t>(sum);
    }
    y[i].d = 1 / iscale;
  }
}

void fill_kquants(kernels::KernelTable& t) {
  using T = TensorType;
  t.types[uint32_t(T::Q2_K)] = superblock_kernels<BlockQ2_K, decode_q2_K>();
  t.types[uint32_t(T::Q3_K)] = superblock_kernels<BlockQ3_K, decode_q3_K>();
  t.types[uint32_t(T::Q4_K)] = superblock_kernels<BlockQ4_K, decode_q4_K>();
  t.types[uint32_t(T::Q5_K)] = superblock_kernels<BlockQ5_K, decode_q5_K>();
  t.types[uint32_t(T::Q6_K)] = superblock_kernels<BlockQ6_K, decode_q6_K>();
  t.quantize_act[uint32_t(T::Q8_K)] = quantize_row_q8_K;
}

}  // namespace qinfer::ref
