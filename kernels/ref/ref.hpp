// Scalar reference kernels: the ground truth every SIMD path is tested against. Dequantizers
// reproduce ggml's floats bit for bit; quantizers follow ggml's "_ref" algorithms.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/kernels.hpp"

namespace qinfer::ref {

// The element of largest magnitude, the first of equal ones: the sign ggml's symmetric
// quantizers give their scale.
inline float largest_magnitude(const float* x, int64_t n) {
  float max = 0, amax = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float ax = x[i] < 0 ? -x[i] : x[i];
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

// ggml's nearest_int: round half to even through the float mantissa (|x| < 2^22).
inline int nearest_int(float fval) {
  const float val = fval + 12582912.f;
  int i;
  std::memcpy(&i, &val, sizeof(int));
  return (i & 0x007fffff) - 0x00400000;
}

inline float h2f(uint16_t h) { return fp16_to_fp32(h); }

// out[c] = sum over blocks of block_dot(w block, activation block of column c). Both rows
// have one activation block per weight block (true of every quantized type).
template <typename WB, typename AB, typename BlockDot>
inline void dot_blocks(int64_t n, int64_t block_size, const void* w, const void* act, size_t stride,
                       int n_cols, float* out, BlockDot block_dot) {
  const auto* wb = static_cast<const WB*>(w);
  const int64_t nb = n / block_size;
  for (int c = 0; c < n_cols; ++c) {
    const auto* ab = reinterpret_cast<const AB*>(static_cast<const uint8_t*>(act) + c * stride);
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; ++i) sum += block_dot(wb[i], ab[i]);
    out[c] = sum;
  }
}

// Kernels of each family, defined in ref_*.cpp and gathered by fill_scalar_table().
void fill_float(kernels::KernelTable& t);
void fill_legacy(kernels::KernelTable& t);
void fill_kquants(kernels::KernelTable& t);
void fill_iquants(kernels::KernelTable& t);
void fill_ternary(kernels::KernelTable& t);

// Quantizers (reference algorithms).
void quantize_row_f16(const float* x, void* y, int64_t n);
void quantize_row_bf16(const float* x, void* y, int64_t n);
void quantize_row_f32(const float* x, void* y, int64_t n);
void quantize_row_q4_0(const float* x, void* y, int64_t n);
void quantize_row_q4_1(const float* x, void* y, int64_t n);
void quantize_row_q5_0(const float* x, void* y, int64_t n);
void quantize_row_q5_1(const float* x, void* y, int64_t n);
void quantize_row_q8_0(const float* x, void* y, int64_t n);      // weights (ggml _ref)
void quantize_row_q8_0_act(const float* x, void* y, int64_t n);  // activations (ggml CPU)
void quantize_row_q8_1(const float* x, void* y, int64_t n);
void quantize_row_q8_1_act(const float* x, void* y, int64_t n);
void quantize_row_q2_K(const float* x, void* y, int64_t n);
void quantize_row_q3_K(const float* x, void* y, int64_t n);
void quantize_row_q4_K(const float* x, void* y, int64_t n);
void quantize_row_q5_K(const float* x, void* y, int64_t n);
void quantize_row_q6_K(const float* x, void* y, int64_t n);
void quantize_row_q8_K(const float* x, void* y, int64_t n);
void quantize_row_iq4_nl(const float* x, void* y, int64_t n);
void quantize_row_iq4_xs(const float* x, void* y, int64_t n);
void quantize_row_tq1_0(const float* x, void* y, int64_t n);
void quantize_row_tq2_0(const float* x, void* y, int64_t n);
void quantize_row_mxfp4(const float* x, void* y, int64_t n);
// The grid types with an importance matrix (n weights; nullptr: x^2, which IQ1_S, IQ2_XXS
// and IQ2_XS refuse, as ggml does), as ggml's quantize_iq*; the quantize_row_ forms take none
// (ggml's _ref).
void quantize_iq1_s(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_iq1_m(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_iq2_xxs(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_iq2_xs(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_iq2_s(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_iq3_xxs(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_iq3_s(const float* x, void* y, int64_t n, const float* imatrix);
// The other types' imatrix forms (ggml's quantize_row_*_impl), for one row of n weights.
void quantize_q4_0_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_q4_1_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_q5_0_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_q5_1_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_q2_K_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_q3_K_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_q4_K_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_q5_K_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_q6_K_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_iq4_nl_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_iq4_xs_imatrix(const float* x, void* y, int64_t n, const float* imatrix);
void quantize_row_iq1_m(const float* x, void* y, int64_t n);
void quantize_row_iq2_s(const float* x, void* y, int64_t n);
void quantize_row_iq3_xxs(const float* x, void* y, int64_t n);
void quantize_row_iq3_s(const float* x, void* y, int64_t n);

}  // namespace qinfer::ref
