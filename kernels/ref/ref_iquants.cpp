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

void decode_iq2_xxs(const BlockIQ2_XXS& b, Decoded& out) {
  const float d = h2f(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux[2];
    std::memcpy(aux, b.qs + 4 * ib, 8);
    set_scale32(out, ib, d * (0.5f + static_cast<float>(aux[1] >> 28)) * 0.25f);
    for (int l = 0; l < 4; ++l) {
      const uint64_t grid = kIq2xxsGrid[grid_byte(aux[0], l)];
      const uint8_t signs = kKsignsIq2xs[(aux[1] >> (7 * l)) & 127];
      for (int j = 0; j < 8; ++j) out.q[32 * ib + 8 * l + j] = signed_grid(grid_byte(grid, j), signs, j);
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
      for (int j = 0; j < 8; ++j) out.q[32 * ib + 8 * l + j] = signed_grid(grid_byte(grid, j), signs, j);
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

void decode_iq1_m(const BlockIQ1_M& b, Decoded& out) {
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  const uint16_t d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) |
                                                ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
  const float d = h2f(d_bits);
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
    const int ls = ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((b.scales_h >> (2 * ib)) & 3) << 4);
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
  for (int n = 0; n < 5; ++n) for (int m = 0; m < 32; ++m) out.q[k++] = trit(b.qs[m], n);
  for (int n = 0; n < 5; ++n) for (int m = 0; m < 16; ++m) out.q[k++] = trit(b.qs[32 + m], n);
  for (int n = 0; n < 4; ++n) for (int j = 0; j < 4; ++j) out.q[k++] = trit(b.qh[j], n);
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
      for (int m = 0; m < 32; ++m) out.q[k++] = static_cast<int8_t>(((b.qs[j + m] >> (2 * l)) & 3) - 1);
    }
  }
}

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

}  // namespace

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
