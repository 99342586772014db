// Float operations of the forward pass, with ggml's numerics where they matter for matching
// llama.cpp's logits (sums in double, GELU through an f16 round trip). Element-wise parts run
// the dispatched vector primitives (KernelTable::vec), bit-identical on every ISA.
#pragma once

#include <cstdint>

namespace qinfer::ops {

// x = x / rms(x) * w   (n)
void rmsnorm(float* x, const float* w, int64_t n, float eps);
// x = (x - mean) / std * w + b   (n); b may be null
void layernorm(float* x, const float* w, const float* b, int64_t n, float eps);
// In-place rotary embedding of one head vector (head_dim) at position pos; the first n_rot
// dims rotate. neox = false pairs (2i, 2i+1); neox = true pairs (i, i + n_rot/2).
void rope(float* x, int64_t head_dim, int64_t n_rot, int64_t pos, float freq_base,
          float freq_scale, bool neox);
// Softmax over n values, in place.
void softmax(float* x, int64_t n);
// gate = silu(gate) * up over n values in rows of `row` (ggml's exponential, as llama.cpp)
void swiglu(float* gate, const float* up, int64_t n, int64_t row);
// x = gelu(x), tanh form, as ggml computes it (input and output rounded through f16).
void gelu(float* x, int64_t n);
void add(float* x, const float* y, int64_t n);
// Sum of 16 floats in the order of GCC's _mm512_reduce_add_ps (halves, quarters, pairs).
float sum16(const float* v);

}  // namespace qinfer::ops
