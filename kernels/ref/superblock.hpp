// The scalar view of a 256-element super-block: every K, IQ and TQ type decodes to small
// integers q[k] and a float scale and min per 16 elements, with value = scale*q - min.
// Each decoder computes scale and min exactly as ggml's dequantizer does, so one generic
// dequantizer reproduces ggml's floats bit for bit, and one generic dot serves every type.
#pragma once

#include "kernels/ref/ref.hpp"

namespace qinfer::ref {

struct Decoded {
  int8_t q[kQKK];
  float scale[kQKK / 16];
  float min[kQKK / 16];  // 0 for types without a minimum
};

template <typename Block, void (*Decode)(const Block&, Decoded&)>
void dequantize_superblocks(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const Block*>(vx);
  Decoded dec;
  for (int64_t i = 0; i < n / kQKK; ++i, y += kQKK) {
    Decode(x[i], dec);
    for (int k = 0; k < kQKK; ++k) {
      y[k] = dec.scale[k / 16] * static_cast<float>(dec.q[k]) - dec.min[k / 16];
    }
  }
}

// Dot against Q8_K: per 16 elements an exact integer sum, then scale it and subtract the min
// times the activation's block sum.
template <typename Block, void (*Decode)(const Block&, Decoded&)>
void dot_superblocks(int64_t n, const void* w, const void* act, size_t stride, int n_cols,
                     float* out) {
  const auto* x = static_cast<const Block*>(w);
  const int64_t nb = n / kQKK;
  float sum[kernels::kMaxDotCols] = {};
  Decoded dec;
  for (int64_t i = 0; i < nb; ++i) {
    Decode(x[i], dec);  // decoded once, used for every column
    for (int c = 0; c < n_cols; ++c) {
      const auto* y =
          reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * stride) + i;
      float block = 0.0f;
      for (int s = 0; s < kQKK / 16; ++s) {
        int isum = 0;
        for (int k = 16 * s; k < 16 * s + 16; ++k) isum += dec.q[k] * y->qs[k];
        block +=
            dec.scale[s] * static_cast<float>(isum) - dec.min[s] * static_cast<float>(y->bsums[s]);
      }
      sum[c] += block * y->d;
    }
  }
  for (int c = 0; c < n_cols; ++c) out[c] = sum[c];
}

template <typename Block, void (*Decode)(const Block&, Decoded&)>
constexpr kernels::TypeKernels superblock_kernels() {
  return {dequantize_superblocks<Block, Decode>, dot_superblocks<Block, Decode>};
}

// Decoders of the K types (ref_kquants.cpp) and of the IQ/TQ types (ref_iquants.cpp).
void decode_q2_K(const BlockQ2_K& b, Decoded& d);
void decode_q3_K(const BlockQ3_K& b, Decoded& d);
void decode_q4_K(const BlockQ4_K& b, Decoded& d);
void decode_q5_K(const BlockQ5_K& b, Decoded& d);
void decode_q6_K(const BlockQ6_K& b, Decoded& d);
void decode_iq2_xxs(const BlockIQ2_XXS& b, Decoded& d);
void decode_iq2_xs(const BlockIQ2_XS& b, Decoded& d);
void decode_iq2_s(const BlockIQ2_S& b, Decoded& d);
void decode_iq3_xxs(const BlockIQ3_XXS& b, Decoded& d);
void decode_iq3_s(const BlockIQ3_S& b, Decoded& d);
void decode_iq1_s(const BlockIQ1_S& b, Decoded& d);
void decode_iq4_xs(const BlockIQ4_XS& b, Decoded& d);
void decode_iq1_m(const BlockIQ1_M& b, Decoded& d);
// IQ1_M's f16 d, spread over the top nibbles of its scale words.
float iq1_m_d(const BlockIQ1_M& b);
void decode_tq1_0(const BlockTQ1_0& b, Decoded& d);
void decode_tq2_0(const BlockTQ2_0& b, Decoded& d);

}  // namespace qinfer::ref
