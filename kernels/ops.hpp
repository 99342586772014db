// Float operations of the forward pass, with ggml's numerics where they matter for matching
// llama.cpp's logits (sums in double, GELU through an f16 round trip). Element-wise parts run
// the vector primitives of the kernel table they are given (KernelTable::vec), bit-identical
// on every ISA, as matmul takes its table.
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"

namespace qinfer::ops {

// x = x / rms(x) * w   (n)
void rmsnorm(const kernels::KernelTable& k, float* x, const float* w, int64_t n, float eps);
// x = (x - mean) / std * w + b   (n); b may be null
void layernorm(const kernels::KernelTable& k, float* x, const float* w, const float* b, int64_t n,
               float eps);
// Rotary embedding, as ggml computes it: pair i of the first n_rot dims turns by
// theta_i = pos * base^(-2i/n_rot) / freq_factors[i], with linear or YaRN scaling.
struct RopeParams {
  int64_t n_rot = 0;
  bool neox = false;  // false: pairs (2i, 2i+1); true: pairs (i, i + n_rot/2)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;              // linear / YaRN interpolation factor (1: none)
  float ext_factor = 0.0f;              // YaRN extrapolation mix (0: plain interpolation)
  float attn_factor = 1.0f;             // multiplies cos and sin
  float corr_dims[2] = {0, 0};          // YaRN ramp (rope_corr_dims)
  const float* freq_factors = nullptr;  // (n_rot / 2) or null
};
// YaRN's correction range for n_ctx_orig, as ggml_rope_yarn_corr_dims.
void rope_corr_dims(int64_t n_rot, int64_t n_ctx_orig, float freq_base, float beta_fast,
                    float beta_slow, float dims[2]);
// cos and sin of every pair at position pos: cs (n_rot) = {cos_0, sin_0, cos_1, ...}.
void rope_angles(const RopeParams& p, int64_t pos, float* cs);
// Rotates the first n_rot dims of n_heads head vectors (head_dim apart) by the angles cs.
void rope_apply(const kernels::KernelTable& k, float* x, int64_t n_heads, int64_t head_dim,
                const float* cs, int64_t n_rot, bool neox);
// Softmax over n values, in place.
void softmax(const kernels::KernelTable& k, float* x, int64_t n);
// gate = silu(gate) * up over n values in rows of `row` (ggml's exponential, as llama.cpp)
void swiglu(const kernels::KernelTable& k, float* gate, const float* up, int64_t n, int64_t row);
// x = gelu(x), tanh form, as ggml computes it (input and output rounded through f16).
void gelu(const kernels::KernelTable& k, float* x, int64_t n);
void add(const kernels::KernelTable& k, float* x, const float* y, int64_t n);
// Sum of 16 floats in the order of GCC's _mm512_reduce_add_ps (halves, quarters, pairs).
float sum16(const float* v);

}  // namespace qinfer::ops
