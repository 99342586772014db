// Q2_K..Q6_K and the Q8_K activation: decoders and ggml's reference quantizers.
#include <algorithm>
#include <cstring>

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

// rmse_type 1 weighs each element by x^2, or by qw[i] when qw is given (an importance matrix).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type,
                     const float* qw = nullptr) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < 1e-15f) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  auto weight = [&](int i) { return qw ? qw[i] : rmse_type == 1 ? x[i] * x[i] : 1.0f; };
  for (int i = 0; i < n; ++i) {
    int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = weight(i);
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
      const float w = weight(i);
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        L[i] = static_cast<int8_t>(nmax +
                                   std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < 1e-15f) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx > 0) {
        float sl2 = suml2 - w * L[i] * L[i];
        int new_l = std::max(-nmax, std::min(nmax - 1, nearest_int(x[i] * sl2 / slx)));
        if (new_l != L[i]) {
          slx += w * x[i] * new_l;
          sl2 += w * new_l * new_l;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// ggml's weighted search for a scale and a min (levels 0..nmax): a first fit over [min, max],
// then nstep + 1 scales around it, each refined by least squares; weights null means x^2.
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  auto w_of = [&](int i) { return weights ? weights[i] : x[i] * x[i]; };
  float min = x[0], max = x[0];
  float sum_w = w_of(0);
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = w_of(i);
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max <= min) {
    std::memset(L, 0, static_cast<size_t>(n));
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_mad = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_mad += w_of(i) * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = w_of(i);
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float mad = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        mad += w_of(i) * diff;
      }
      if (mad < best_mad) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_mad = mad;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// ggml's weighted min/scale search (make_qkx2_quants): the same as make_qkx3_quants below with
// weights always given.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  return make_qkx3_quants(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep, use_mad);
}

// The positive levels 0..nmax of the (non-negative) x under one scale, fitted to the weights
// quant_weights: a scan of 8 scales around nmax / max, then up to 5 rounds of moving single
// levels while the weighted fit improves (ggml's make_qp_quants, for the super-block scales).
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (max < 1e-15f) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = nmax / max;
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
  const float scale = 1 / iscale;
  float best_mse = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - scale * L[i];
    best_mse += quant_weights[i] * diff * diff;
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * is + nmax) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
      const float diff = x[i] - scale_is * l;
      mse += quant_weights[i] * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_is;
    }
  }
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, nearest_int(iscale * x[i]));
    L[i] = static_cast<uint8_t>(l);
    const float w = quant_weights[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = quant_weights[i];
      float slx = sumlx - w * x[i] * L[i];
      float sl2 = suml2 - w * L[i] * L[i];
      if (slx > 0 && sl2 > 0) {
        const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
        if (new_l != L[i]) {
          slx += w * x[i] * new_l;
          sl2 += w * new_l * new_l;
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<uint8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// The weights of an imatrix quantizer: qw[j] * sqrt(sigma2 + x[j]^2).
void imatrix_weights(const float* x, const float* qw, float sigma2, int n, float* w) {
  for (int j = 0; j < n; ++j) w[j] = qw[j] * std::sqrt(sigma2 + x[j] * x[j]);
}

float sum_squares(const float* x, int64_t n) {
  float s = 0;
  for (int64_t j = 0; j < n; ++j) s += x[j] * x[j];
  return s;
}

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

// The 32-element types weigh by the whole row's mean square.
void quantize_q4_0_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockQ4_0*>(vy);
  const float sigma2 = sum_squares(x, n) / static_cast<float>(n);
  float weight[32];
  int8_t L[32];
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    imatrix_weights(x + 32 * ib, qw + 32 * ib, sigma2, 32, weight);
    y[ib].d = fp32_to_fp16(make_qx_quants(32, 8, x + 32 * ib, L, 1, weight));
    for (int j = 0; j < 16; ++j) y[ib].qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
  }
}

void quantize_q4_1_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockQ4_1*>(vy);
  const float sigma2 = sum_squares(x, n) / static_cast<float>(n);
  float weight[32], min;
  uint8_t L[32], Laux[32];
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    imatrix_weights(x + 32 * ib, qw + 32 * ib, sigma2, 32, weight);
    const float d =
        make_qkx3_quants(32, 15, x + 32 * ib, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
    y[ib].d = fp32_to_fp16(d);
    y[ib].m = fp32_to_fp16(-min);
    for (int j = 0; j < 16; ++j) y[ib].qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
  }
}

// The Q5 layouts: low nibbles in qs, the fifth bits in the 32-bit qh.
template <typename Block>
void pack_q5_block(const uint8_t* L, Block& y) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    y.qs[j] = static_cast<uint8_t>((L[j] & 0x0f) | ((L[j + 16] & 0x0f) << 4));
    qh |= static_cast<uint32_t>((L[j] & 0x10u) >> 4) << j;
    qh |= static_cast<uint32_t>((L[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  std::memcpy(y.qh, &qh, sizeof qh);
}

void quantize_q5_0_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockQ5_0*>(vy);
  const float sigma2 = sum_squares(x, n) / static_cast<float>(n);
  float weight[32];
  int8_t L[32];
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    imatrix_weights(x + 32 * ib, qw + 32 * ib, sigma2, 32, weight);
    y[ib].d = fp32_to_fp16(make_qx_quants(32, 16, x + 32 * ib, L, 1, weight));
    pack_q5_block(reinterpret_cast<const uint8_t*>(L), y[ib]);
  }
}

void quantize_q5_1_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockQ5_1*>(vy);
  const float sigma2 = sum_squares(x, n) / static_cast<float>(n);
  float weight[32], min;
  uint8_t L[32], Laux[32];
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    imatrix_weights(x + 32 * ib, qw + 32 * ib, sigma2, 32, weight);
    const float d =
        make_qkx3_quants(32, 31, x + 32 * ib, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
    y[ib].d = fp32_to_fp16(d);
    y[ib].m = fp32_to_fp16(-min);
    pack_q5_block(L, y[ib]);
  }
}

void quantize_row_q8_K(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(vy);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    float max = 0, amax = 0;
    for (int j = 0; j < kQKK; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (!amax) {
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
