#include "kernels/ops.hpp"

#include <cmath>

#include "kernels/float_conv.hpp"

namespace qinfer::ops {

void rmsnorm(float* x, const float* w, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) x[i] = (x[i] * scale) * w[i];
}

void layernorm(float* x, const float* w, const float* b, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  double var = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] -= mean;
    var += static_cast<double>(x[i]) * x[i];
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(var / static_cast<double>(n)) + eps);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = (x[i] * scale) * w[i];
    if (b != nullptr) x[i] += b[i];
  }
}

void rope(float* x, int64_t head_dim, int64_t n_rot, int64_t pos, float freq_base,
          float freq_scale, bool neox) {
  (void)head_dim;
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(pos) * freq_scale;
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    const float c = std::cos(theta), s = std::sin(theta);
    const int64_t a = neox ? i : 2 * i;
    const int64_t b = neox ? i + n_rot / 2 : 2 * i + 1;
    const float x0 = x[a], x1 = x[b];
    x[a] = x0 * c - x1 * s;
    x[b] = x0 * s + x1 * c;
    theta *= theta_scale;
  }
}

void softmax(float* x, int64_t n) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = std::fmax(max, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void swiglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

namespace {
float gelu_f32(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoef = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
}
}  // namespace

void gelu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] <= -10.0f) {
      x[i] = 0.0f;
    } else if (x[i] < 10.0f) {
      const float rounded = fp16_to_fp32(fp32_to_fp16(x[i]));
      x[i] = fp16_to_fp32(fp32_to_fp16(gelu_f32(rounded)));
    }
  }
}

void add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace qinfer::ops
