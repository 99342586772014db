// The IQ family, TQ1_0, TQ2_0 and MXFP4: decoders into the super-block view (or 32-element
// blocks for IQ4_NL and MXFP4), plus the quantizers that need no search.
#include <algorithm>

#include "kernels/iq_tables.hpp"
#include "kernels/ref/superblock.hpp"

namespace qinfer::ref {
namespace {

inline uint8_t grid_byte(uint64_t entry, int j) { return static_cast<uint8_t>(entry >> (8 * j)); }
inline int8_t signed_grid(uint8_t value, uint8_t signs, int j) {
  return static_cast<int8_t>((signs & kKmaskIq2xs[j]) ? -value : value);
}

void set_scale32(Decoded& out, int ib32, float scale) {
  out.scale[2 * ib32] = out.scale[2 * ib32 + 1] = scale;
  out.min[2 * ib32] = out.min[2 * ib32 + 1] = 0.0f;
}

}  // namespace

void decode_iq2_xxs(const BlockIQ2_XXS& b, Decoded& out) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux[2];
    std::memcpy(aux, b.qs + 4 * ib, 8);
    set_scale32(out, ib, d * (0.5f + static_cast<float>(aux[1] >> 28)) * 0.25f);
    for (int l = 0; l < 4; ++l) {
      const uint64_t grid = kIq2xxsGrid[grid_byte(aux[0], l)];
      const uint8_t signs = kKsignsIq2xs[(aux[1] >> (7 * l)) & 127];
      for (int j = 0; j < 8; ++j)
        out.q[32 * ib + 8 * l + j] = signed_grid(grid_byte(grid, j), signs, j);
    }
  }
}

void decode_iq2_xs(const BlockIQ2_XS& b, Decoded& out) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    for (int h = 0; h < 2; ++h) {
      const int s = (b.scales[ib] >> (4 * h)) & 0x0f;
      out.scale[2 * ib + h] = d * (0.5f + static_cast<float>(s)) * 0.25f;
      out.min[2 * ib + h] = 0.0f;
    }
    for (int l = 0; l < 4; ++l) {
      const uint16_t v = b.qs[4 * ib + l];
      const uint64_t grid = kIq2xsGrid[v & 511];
      const uint8_t signs = kKsignsIq2xs[v >> 9];
      for (int j = 0; j < 8; ++j)
        out.q[32 * ib + 8 * l + j] = signed_grid(grid_byte(grid, j), signs, j);
    }
  }
}

void decode_iq2_s(const BlockIQ2_S& b, Decoded& out) {
  const float d = h2f(b.d);
  const uint8_t* signs = b.qs + kQKK / 8;
  for (int ib = 0; ib < 8; ++ib) {
    for (int h = 0; h < 2; ++h) {
      const int s = (b.scales[ib] >> (4 * h)) & 0x0f;
      out.scale[2 * ib + h] = d * (0.5f + static_cast<float>(s)) * 0.25f;
      out.min[2 * ib + h] = 0.0f;
    }
    for (int l = 0; l < 4; ++l) {
      const int index = b.qs[4 * ib + l] | ((b.qh[ib] << (8 - 2 * l)) & 0x300);
      const uint64_t grid = kIq2sGrid[index];
      for (int j = 0; j < 8; ++j) {
        out.q[32 * ib + 8 * l + j] = signed_grid(grid_byte(grid, j), signs[4 * ib + l], j);
      }
    }
  }
}

void decode_iq3_xxs(const BlockIQ3_XXS& b, Decoded& out) {
  const float d = h2f(b.d);
  const uint8_t* scales_and_signs = b.qs + kQKK / 4;
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux;
    std::memcpy(&aux, scales_and_signs + 4 * ib, 4);
    set_scale32(out, ib, d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f);
    const uint8_t* qs = b.qs + 8 * ib;
    for (int l = 0; l < 4; ++l) {
      const uint8_t signs = kKsignsIq2xs[(aux >> (7 * l)) & 127];
      const uint32_t g1 = kIq3xxsGrid[qs[2 * l]], g2 = kIq3xxsGrid[qs[2 * l + 1]];
      for (int j = 0; j < 4; ++j) {
        out.q[32 * ib + 8 * l + j] = signed_grid(grid_byte(g1, j), signs, j);
        out.q[32 * ib + 8 * l + j + 4] = signed_grid(grid_byte(g2, j), signs, j + 4);
      }
    }
  }
}

void decode_iq3_s(const BlockIQ3_S& b, Decoded& out) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const int s = (b.scales[ib / 2] >> (4 * (ib % 2))) & 0x0f;
    set_scale32(out, ib, d * static_cast<float>(1 + 2 * s));
    const uint8_t* qs = b.qs + 8 * ib;
    const uint8_t qh = b.qh[ib];
    const uint8_t* signs = b.signs + 4 * ib;
    for (int l = 0; l < 4; ++l) {
      const uint32_t g1 = kIq3sGrid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)];
      const uint32_t g2 = kIq3sGrid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)];
      for (int j = 0; j < 4; ++j) {
        out.q[32 * ib + 8 * l + j] = signed_grid(grid_byte(g1, j), signs[l], j);
        out.q[32 * ib + 8 * l + j + 4] = signed_grid(grid_byte(g2, j), signs[l], j + 4);
      }
    }
  }
}

// IQ1: value = dl * (grid + delta) with delta = +-1/8, held exactly as (dl/8) * (8*grid +- 1).
void put_iq1_group(Decoded& out, int k0, uint64_t grid, bool negative_delta) {
  for (int j = 0; j < 8; ++j) {
    const auto g = static_cast<int8_t>(grid_byte(grid, j));
    out.q[k0 + j] = static_cast<int8_t>(8 * g + (negative_delta ? -1 : 1));
  }
}

void decode_iq1_s(const BlockIQ1_S& b, Decoded& out) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const uint16_t qh = b.qh[ib];
    set_scale32(out, ib, d * static_cast<float>(2 * ((qh >> 12) & 7) + 1) * 0.125f);
    for (int l = 0; l < 4; ++l) {
      const int index = b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8);
      put_iq1_group(out, 32 * ib + 8 * l, kIq1sGrid[index], qh & 0x8000);
    }
  }
}

float iq1_m_d(const BlockIQ1_M& b) {
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  return h2f(static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) |
                                   ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)));
}

void decode_iq1_m(const BlockIQ1_M& b, Decoded& out) {
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  const float d = iq1_m_d(b);
  for (int ib = 0; ib < 8; ++ib) {
    for (int h = 0; h < 2; ++h) {
      const int s = (sc[ib / 2] >> (6 * (ib % 2) + 3 * h)) & 0x7;
      out.scale[2 * ib + h] = d * static_cast<float>(2 * s + 1) * 0.125f;
      out.min[2 * ib + h] = 0.0f;
    }
    const uint8_t* qs = b.qs + 4 * ib;
    const uint8_t* qh = b.qh + 2 * ib;
    for (int l = 0; l < 4; ++l) {
      const uint8_t h = qh[l / 2];
      const int shift = (l % 2) ? 4 : 8;
      const int index = qs[l] | ((h << shift) & 0x700);
      put_iq1_group(out, 32 * ib + 8 * l, kIq1sGrid[index], h & ((l % 2) ? 0x80 : 0x08));
    }
  }
}

void decode_iq4_xs(const BlockIQ4_XS& b, Decoded& out) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const int ls =
        ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((b.scales_h >> (2 * ib)) & 3) << 4);
    set_scale32(out, ib, d * static_cast<float>(ls - 32));
    const uint8_t* qs = b.qs + 16 * ib;
    for (int j = 0; j < 16; ++j) {
      out.q[32 * ib + j] = kKvaluesIq4nl[qs[j] & 0xf];
      out.q[32 * ib + j + 16] = kKvaluesIq4nl[qs[j] >> 4];
    }
  }
}

// One base-3 digit: the top trit of (byte * 3^n) mod 256, scaled back by 3/256.
inline int8_t trit(uint8_t byte, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto q = static_cast<uint8_t>(byte * kPow3[n]);
  return static_cast<int8_t>(((static_cast<uint16_t>(q) * 3) >> 8) - 1);
}

void decode_tq1_0(const BlockTQ1_0& b, Decoded& out) {
  const float d = h2f(b.d);
  for (int s = 0; s < 16; ++s) {
    out.scale[s] = d;
    out.min[s] = 0.0f;
  }
  int k = 0;
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m) out.q[k++] = trit(b.qs[m], n);
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m) out.q[k++] = trit(b.qs[32 + m], n);
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) out.q[k++] = trit(b.qh[j], n);
}

void decode_tq2_0(const BlockTQ2_0& b, Decoded& out) {
  const float d = h2f(b.d);
  for (int s = 0; s < 16; ++s) {
    out.scale[s] = d;
    out.min[s] = 0.0f;
  }
  int k = 0;
  for (int j = 0; j < 64; j += 32) {
    for (int l = 0; l < 4; ++l) {
      for (int m = 0; m < 32; ++m)
        out.q[k++] = static_cast<int8_t>(((b.qs[j + m] >> (2 * l)) & 3) - 1);
    }
  }
}

namespace {

// ---- 32-element non-linear types: IQ4_NL and MXFP4 against Q8_0

void dequantize_iq4_nl(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const BlockIQ4_NL*>(vx);
  for (int64_t i = 0; i < n / 32; ++i, y += 32) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kKvaluesIq4nl[x[i].qs[j] & 0xf]);
      y[j + 16] = d * static_cast<float>(kKvaluesIq4nl[x[i].qs[j] >> 4]);
    }
  }
}

void dequantize_mxfp4(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const BlockMXFP4*>(vx);
  for (int64_t i = 0; i < n / 32; ++i, y += 32) {
    const float d = e8m0_to_fp32_half(x[i].e);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(kKvaluesMxfp4[x[i].qs[j] & 0xf]) * d;
      y[j + 16] = static_cast<float>(kKvaluesMxfp4[x[i].qs[j] >> 4]) * d;
    }
  }
}

int dot_nl_ints(const uint8_t* qs, const int8_t* table, const int8_t* a) {
  int sum = 0;
  for (int j = 0; j < 16; ++j) sum += table[qs[j] & 0xf] * a[j] + table[qs[j] >> 4] * a[j + 16];
  return sum;
}

void dot_iq4_nl(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  dot_blocks<BlockIQ4_NL, BlockQ8_0>(n, 32, w, a, s, nc, out, [](const auto& x, const auto& y) {
    return static_cast<float>(dot_nl_ints(x.qs, kKvaluesIq4nl, y.qs)) * (h2f(x.d) * h2f(y.d));
  });
}

void dot_mxfp4(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  dot_blocks<BlockMXFP4, BlockQ8_0>(n, 32, w, a, s, nc, out, [](const auto& x, const auto& y) {
    return static_cast<float>(dot_nl_ints(x.qs, kKvaluesMxfp4, y.qs)) *
           (e8m0_to_fp32_half(x.e) * h2f(y.d));
  });
}

// The nearest of 16 sorted values (the upper one on a tie).
int best_index_int8(const int8_t* val, float x) {
  if (x <= val[0]) return 0;
  if (x >= val[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < val[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - val[hi - 1] < val[hi] - x ? hi - 1 : hi;
}

// ggml's IQ4 search without an importance matrix: per 32 elements the scale that maximises
// the weighted fit over 15 candidates, then (IQ4_XS) 6-bit sub-scales under one f16 scale.
// n_sub = 1 for IQ4_NL, 8 for IQ4_XS.
// With an importance matrix qw (n weights), each element weighs qw[j] * sqrt(sigma2 + x^2).
void quantize_iq4_block(const float* x, int n_sub, uint16_t* dh, uint8_t* q4, uint16_t* scales_h,
                        uint8_t* scales_l, const float* qw = nullptr) {
  constexpr int kNtry = 7;
  const int8_t* values = kKvaluesIq4nl;
  const int n = 32 * n_sub;
  float scales[8], weight[32];
  uint8_t L[kQKK];
  std::memset(q4, 0, n / 2);
  *dh = fp32_to_fp16(0.f);
  float sigma2 = 0;
  for (int j = 0; j < n; ++j) sigma2 += x[j] * x[j];
  sigma2 *= 2.f / static_cast<float>(n);
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < n_sub; ++ib) {
    const float* xb = x + 32 * ib;
    uint8_t* Lb = L + 32 * ib;
    for (int j = 0; j < 32; ++j)
      weight[j] = qw ? qw[32 * ib + j] * std::sqrt(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(xb[j]) > amax) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    if (amax < 1e-15f) {
      scales[ib] = 0;
      std::memset(Lb, 0, 32);
      continue;
    }
    float d = -max / values[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const int l = best_index_int8(values, id * xb[j]);
      Lb[j] = static_cast<uint8_t>(l);
      const float q = values[l];
      sumqx += weight[j] * q * xb[j];
      sumq2 += weight[j] * q * q;
    }
    d = sumqx / sumq2;
    float best = d * sumqx;
    for (int itry = -kNtry; itry <= kNtry; ++itry) {
      id = (itry + values[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < 32; ++j) {
        const float q = values[best_index_int8(values, id * xb[j])];
        sumqx += weight[j] * q * xb[j];
        sumq2 += weight[j] * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    if (std::fabs(d) > amax_scale) {
      amax_scale = std::fabs(d);
      max_scale = d;
    }
  }
  if (n_sub > 1) {
    *scales_h = 0;
    const float d = -max_scale / 32;
    *dh = fp32_to_fp16(d);
    const float id = d ? 1 / d : 0.f;
    for (int ib = 0; ib < n_sub; ++ib) {
      int l = std::max(-32, std::min(31, nearest_int(id * scales[ib])));
      const float dl = d * l;
      const float idl = dl ? 1 / dl : 0.f;
      for (int j = 0; j < 32; ++j)
        L[32 * ib + j] = static_cast<uint8_t>(best_index_int8(values, idl * x[32 * ib + j]));
      l += 32;
      const auto l_l = static_cast<uint8_t>(l & 0xf), l_h = static_cast<uint8_t>(l >> 4);
      if (ib % 2 == 0) {
        scales_l[ib / 2] = l_l;
      } else {
        scales_l[ib / 2] |= static_cast<uint8_t>(l_l << 4);
      }
      *scales_h |= static_cast<uint16_t>(l_h << (2 * (ib % 8)));
    }
  } else {
    *dh = fp32_to_fp16(scales[0]);
    const float id = scales[0] ? 1 / scales[0] : 0;
    for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(best_index_int8(values, id * x[j]));
  }
  for (int i = 0; i < n / 32; ++i) {
    for (int j = 0; j < 16; ++j)
      q4[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
  }
}

// Ternary codes of x / amax: -1, 0, 1 stored as 0, 1, 2.
inline int trit_of(float v, float id) { return static_cast<int>(std::lround(v * id)) + 1; }

// n base-3 digits as a byte fraction: q / 3^5 * 256, rounded up (ggml's TQ1_0 packing).
uint8_t pack_trits(const float* x, int stride, int count, float id, bool pad) {
  int q = 0;
  for (int k = 0; k < count; ++k) q = q * 3 + trit_of(x[k * stride], id);
  if (pad) q *= 3;  // four trits: shift the first into the most significant place
  return static_cast<uint8_t>((static_cast<uint16_t>(q) * 256 + 242) / 243);
}

float block_absmax(const float* x, int n) {
  float amax = 0;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

}  // namespace

void quantize_row_iq4_nl(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockIQ4_NL*>(vy);
  uint16_t unused_h;
  uint8_t unused_l[4];
  for (int64_t i = 0; i < n / 32; ++i)
    quantize_iq4_block(x + 32 * i, 1, &y[i].d, y[i].qs, &unused_h, unused_l);
}

void quantize_row_iq4_xs(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockIQ4_XS*>(vy);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    quantize_iq4_block(x + kQKK * i, 8, &y[i].d, y[i].qs, &y[i].scales_h, y[i].scales_l);
  }
}

void quantize_iq4_nl_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockIQ4_NL*>(vy);
  uint16_t unused_h;
  uint8_t unused_l[4];
  for (int64_t i = 0; i < n / 32; ++i)
    quantize_iq4_block(x + 32 * i, 1, &y[i].d, y[i].qs, &unused_h, unused_l, qw + 32 * i);
}

void quantize_iq4_xs_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<BlockIQ4_XS*>(vy);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    quantize_iq4_block(x + kQKK * i, 8, &y[i].d, y[i].qs, &y[i].scales_h, y[i].scales_l,
                       qw + kQKK * i);
  }
}

void quantize_row_tq1_0(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockTQ1_0*>(vy);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    const float d = block_absmax(x, kQKK);
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int m = 0; m < 32; ++m) y[i].qs[m] = pack_trits(x + m, 32, 5, id, false);  // 160 values
    for (int m = 0; m < 16; ++m) y[i].qs[32 + m] = pack_trits(x + 160 + m, 16, 5, id, false);  // 80
    for (int j = 0; j < 4; ++j) y[i].qh[j] = pack_trits(x + 240 + j, 4, 4, id, true);          // 16
  }
}

void quantize_row_tq2_0(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockTQ2_0*>(vy);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    const float d = block_absmax(x, kQKK);
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < 64; j += 32) {
      for (int m = 0; m < 32; ++m) {
        int q = 0;
        for (int k = 0; k < 4; ++k)
          q += (trit_of(x[(j / 32) * 128 + m + 32 * k], id) & 3) << (2 * k);
        y[i].qs[j + m] = static_cast<uint8_t>(q);
      }
    }
  }
}

void quantize_row_mxfp4(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockMXFP4*>(vy);
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    const float amax = block_absmax(x, 32);
    const auto e = static_cast<uint8_t>(amax > 0.0f ? std::floor(std::log2(amax)) - 2 + 127 : 0);
    const float d = e8m0_to_fp32_half(e);
    y[i].e = e;
    auto best = [&](float v) {  // the nearest code (the first on a tie)
      int index = 0;
      float err = std::fabs(kKvaluesMxfp4[0] * d - v);
      for (int k = 1; k < 16; ++k) {
        const float e2 = std::fabs(kKvaluesMxfp4[k] * d - v);
        if (e2 < err) {
          index = k;
          err = e2;
        }
      }
      return index;
    };
    for (int j = 0; j < 16; ++j)
      y[i].qs[j] = static_cast<uint8_t>(best(x[j]) | (best(x[j + 16]) << 4));
  }
}

void fill_iquants(kernels::KernelTable& t) {
  using T = TensorType;
  t.types[uint32_t(T::IQ2_XXS)] = superblock_kernels<BlockIQ2_XXS, decode_iq2_xxs>();
  t.types[uint32_t(T::IQ2_XS)] = superblock_kernels<BlockIQ2_XS, decode_iq2_xs>();
  t.types[uint32_t(T::IQ2_S)] = superblock_kernels<BlockIQ2_S, decode_iq2_s>();
  t.types[uint32_t(T::IQ3_XXS)] = superblock_kernels<BlockIQ3_XXS, decode_iq3_xxs>();
  t.types[uint32_t(T::IQ3_S)] = superblock_kernels<BlockIQ3_S, decode_iq3_s>();
  t.types[uint32_t(T::IQ1_S)] = superblock_kernels<BlockIQ1_S, decode_iq1_s>();
  t.types[uint32_t(T::IQ1_M)] = superblock_kernels<BlockIQ1_M, decode_iq1_m>();
  t.types[uint32_t(T::IQ4_XS)] = superblock_kernels<BlockIQ4_XS, decode_iq4_xs>();
  t.types[uint32_t(T::IQ4_NL)] = {dequantize_iq4_nl, dot_iq4_nl};
  t.types[uint32_t(T::MXFP4)] = {dequantize_mxfp4, dot_mxfp4};
}

void fill_ternary(kernels::KernelTable& t) {
  using T = TensorType;
  t.types[uint32_t(T::TQ1_0)] = superblock_kernels<BlockTQ1_0, decode_tq1_0>();
  t.types[uint32_t(T::TQ2_0)] = superblock_kernels<BlockTQ2_0, decode_tq2_0>();
}

}  // namespace qinfer::ref
