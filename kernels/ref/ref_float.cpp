// F32, F16 and BF16: conversion and dot products (accumulated in double, like ggml's scalar
// path, so the reference is more exact than any SIMD order).
#include "kernels/expf.hpp"
#include "kernels/ref/ref.hpp"

namespace qinfer::ref {
namespace {

template <typename Load>
void dot_elements(int64_t n, const void* w, const void* act, size_t stride, int n_cols, float* out,
                  size_t elem_bytes, Load load) {
  const auto* wp = static_cast<const uint8_t*>(w);
  for (int c = 0; c < n_cols; ++c) {
    const auto* ap = static_cast<const uint8_t*>(act) + c * stride;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      sum += static_cast<double>(load(wp + i * elem_bytes)) * load(ap + i * elem_bytes);
    }
    out[c] = static_cast<float>(sum);
  }
}

float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}
float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}
float load_bf16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return bf16_to_fp32(h);
}

void dequantize_f32(const void* x, float* y, int64_t n) { std::memcpy(y, x, n * sizeof(float)); }
void dequantize_f16(const void* x, float* y, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(h[i]);
}
void dequantize_bf16(const void* x, float* y, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(h[i]);
}

void dot_f32(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  dot_elements(n, w, a, s, nc, out, 4, load_f32);
}
void dot_f16(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  dot_elements(n, w, a, s, nc, out, 2, load_f16);
}
void dot_bf16(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  dot_elements(n, w, a, s, nc, out, 2, load_bf16);
}

float vec_dot_f32(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}
float vec_dot_f16(const float* a, const uint16_t* b, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i] * fp16_to_fp32(b[i]));
  return static_cast<float>(sum);
}
void vec_axpy_f32(float* y, float a, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
void vec_axpy_f16(float* y, float a, const uint16_t* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

void vec_add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}
void vec_scale_mul(float* x, float s, const float* w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = (x[i] * s) * w[i];
}
void vec_exp_shift(float* x, float shift, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = kernels::ggml_expf(x[i] - shift);
}
void vec_silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    gate[i] = gate[i] / (1.0f + kernels::ggml_expf(0.0f - gate[i])) * up[i];
}

void vec_rope(float* x, int64_t n_heads, int64_t head_dim, const float* cs, int64_t n_rot,
              bool neox) {
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < n_rot / 2; ++i) {
      const float c = cs[2 * i], s = cs[2 * i + 1];
      const int64_t a = neox ? i : 2 * i;
      const int64_t b = neox ? i + n_rot / 2 : 2 * i + 1;
      const float x0 = v[a], x1 = v[b];
      // ggml's scalar rope as GCC compiles it with FMA available: the first product fused.
      v[a] = std::fma(x0, c, -(x1 * s));
      v[b] = std::fma(x0, s, x1 * c);
    }
  }
}

}  // namespace

void quantize_row_f32(const float* x, void* y, int64_t n) { std::memcpy(y, x, n * sizeof(float)); }
void quantize_row_f16(const float* x, void* y, int64_t n) {
  auto* h = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(x[i]);
}
void quantize_row_bf16(const float* x, void* y, int64_t n) {
  auto* h = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(x[i]);
}

void fill_float(kernels::KernelTable& t) {
  using T = TensorType;
  t.types[uint32_t(T::F32)] = {dequantize_f32, dot_f32};
  t.types[uint32_t(T::F16)] = {dequantize_f16, dot_f16};
  t.types[uint32_t(T::BF16)] = {dequantize_bf16, dot_bf16};
  t.quantize_act[uint32_t(T::F32)] = quantize_row_f32;
  t.quantize_act[uint32_t(T::F16)] = quantize_row_f16;
  t.quantize_act[uint32_t(T::BF16)] = quantize_row_bf16;
  t.vec = {vec_dot_f32,   vec_dot_f16,   vec_axpy_f32, vec_axpy_f16, vec_add,
           vec_scale_mul, vec_exp_shift, vec_silu_mul, vec_rope};
}

}  // namespace qinfer::ref
