#include "kernels/ops.hpp"

#include <algorithm>
#include <cmath>
#include <math.h>
#include <vector>

#include "kernels/float_conv.hpp"
#include "kernels/kernels.hpp"

namespace qinfer::ops {

namespace {

// sum over i of f(i) in double, in eight interleaved partial sums added pairwise at the end.
// ggml sums its norms in one chain of double adds: at four cycles an add, about 2 µs of each
// 2048-wide norm on the thread that runs a token's steps alone, against under half a
// microsecond here. A double sum of float terms rounds to the same float in all but rare
// last-bit ties, well inside the fidelity rule (docs/kernels.md, "Between the matmuls").
template <typename Term>
double sum8(int64_t n, const Term& f) {
  double s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) s[j] += f(i + j);
  }
  for (int j = 0; i < n; ++i, ++j) s[j] += f(i);
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

}  // namespace

// As ggml: each square is a float product, the sum runs in double.
void rmsnorm(const kernels::KernelTable& k, float* x, const float* w, int64_t n, float eps) {
  const double sum = sum8(n, [&](int64_t i) { return static_cast<double>(x[i] * x[i]); });
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  k.vec.scale_mul(x, scale, w, n);
}

void layernorm(const kernels::KernelTable& k, float* x, const float* w, const float* b, int64_t n,
               float eps) {
  const double sum = sum8(n, [&](int64_t i) { return static_cast<double>(x[i]); });
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  for (int64_t i = 0; i < n; ++i) x[i] -= mean;
  const double var = sum8(n, [&](int64_t i) { return static_cast<double>(x[i] * x[i]); });
  const float scale = 1.0f / std::sqrt(static_cast<float>(var / static_cast<double>(n)) + eps);
  k.vec.scale_mul(x, scale, w, n);
  if (b != nullptr) k.vec.add(x, b, n);
}

void rope_corr_dims(int64_t n_rot, int64_t n_ctx_orig, float freq_base, float beta_fast,
                    float beta_slow, float dims[2]) {
  // The dimension whose wavelength spans n_ctx_orig / n_turns positions.
  auto corr_dim = [&](float n_turns) {
    return static_cast<float>(n_rot) *
           logf(static_cast<float>(n_ctx_orig) / (n_turns * 2.0f * static_cast<float>(M_PI))) /
           (2.0f * logf(freq_base));
  };
  const float start = std::floor(corr_dim(beta_fast)), end = std::ceil(corr_dim(beta_slow));
  dims[0] = std::max(0.0f, start);
  dims[1] = std::min(static_cast<float>(n_rot - 1), end);
}

void rope_angles(const RopeParams& p, int64_t pos, float* cs) {
  // powf, as ggml (std::pow on floats would compute in double and round again).
  const float theta_scale = powf(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
  float theta = static_cast<float>(pos);
  for (int64_t i = 0; i < p.n_rot / 2; ++i) {
    const float extrap = p.freq_factors != nullptr ? theta / p.freq_factors[i] : theta;
    float angle = p.freq_scale * extrap, mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
      const float y = (static_cast<float>(i) - p.corr_dims[0]) /
                      std::max(0.001f, p.corr_dims[1] - p.corr_dims[0]);
      const float ramp = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
      angle = angle * (1.0f - ramp) + extrap * ramp;
      mscale *= 1.0f + 0.1f * logf(1.0f / p.freq_scale);
    }
    cs[2 * i] = cosf(angle) * mscale;
    cs[2 * i + 1] = sinf(angle) * mscale;
    theta *= theta_scale;
  }
}

void rope_apply(const kernels::KernelTable& k, float* x, int64_t n_heads, int64_t head_dim,
                const float* cs, int64_t n_rot, bool neox) {
  k.vec.rope(x, n_heads, head_dim, cs, n_rot, neox);
}

float sum16(const float* v) {
  float t3[8], t6[4];
  for (int i = 0; i < 8; ++i) t3[i] = v[8 + i] + v[i];
  for (int i = 0; i < 4; ++i) t6[i] = t3[4 + i] + t3[i];
  return (t6[0] + t6[2]) + (t6[1] + t6[3]);
}

// As ggml_vec_soft_max_f32: exponentials 16 at a time, each group summed in float, the
// groups in double. llama.cpp pads the KV length to a multiple of 32 with masked (zero)
// entries, so the last group is completed with zeros here.
void softmax(const kernels::KernelTable& k, float* x, int64_t n) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = std::fmax(max, x[i]);
  k.vec.exp_shift(x, max, n);
  double sum = 0.0;
  for (int64_t i0 = 0; i0 < n; i0 += 16) {
    float group[16] = {};
    for (int64_t k = 0; k < 16 && i0 + k < n; ++k) group[k] = x[i0 + k];
    sum += sum16(group);
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

// As ggml's SiLU then a multiply: rows of `row` values, groups of 16 through ggml's
// exponential, a row's tail through expf.
void swiglu(const kernels::KernelTable& k, float* gate, const float* up, int64_t n, int64_t row) {
  const int64_t body = row - row % 16;
  for (int64_t r0 = 0; r0 < n; r0 += row) {
    k.vec.silu_mul(gate + r0, up + r0, body);
    for (int64_t i = r0 + body; i < r0 + row; ++i)
      gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }
}

namespace {
// ggml's table entry, as GCC compiles it: 1 + a*x*x contracted into one FMA (without it one
// f16 input, -1.99902, gets another table value).
float gelu_f32(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoef = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * std::fma(kCoef * x, x, 1.0f)));
}

// One f16 result per f16 input, as ggml's table: computed once, 128 KiB.
const std::vector<uint16_t>& gelu_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (uint32_t h = 0; h < t.size(); ++h)
      t[h] = fp32_to_fp16(gelu_f32(fp16_to_fp32(static_cast<uint16_t>(h))));
    return t;
  }();
  return table;
}
}  // namespace

// The conversions to and from f16 run in the ISA's vectors; the table look-up between them.
void gelu(const kernels::KernelTable& k, float* x, int64_t n) {
  const uint16_t* table = gelu_table().data();
  const kernels::QuantizeRowFn to_f16 = k.quantize_act[static_cast<uint32_t>(TensorType::F16)];
  const kernels::DequantizeRowFn from_f16 =
      k.types[static_cast<uint32_t>(TensorType::F16)].dequantize_row;
  constexpr int64_t kChunk = 256;
  uint16_t h[kChunk];
  float y[kChunk];
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    float* xs = x + i0;
    to_f16(xs, h, m);
    for (int64_t j = 0; j < m; ++j) h[j] = table[h[j]];
    from_f16(h, y, m);
    for (int64_t j = 0; j < m; ++j) {
      if (xs[j] <= -10.0f) {
        xs[j] = 0.0f;
      } else if (xs[j] < 10.0f) {
        xs[j] = y[j];
      }
    }
  }
}

void add(const kernels::KernelTable& k, float* x, const float* y, int64_t n) { k.vec.add(x, y, n); }

}  // namespace qinfer::ops
