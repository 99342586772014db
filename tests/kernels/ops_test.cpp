// Element-wise ops against their textbook definitions in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ops.hpp"

namespace qinfer {
namespace {

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * x * (1.0 + 0.044715 * x * x)));
}

// The norms sum in eight partial sums (ops.cpp); ggml sums in one chain of double adds. Both
// are double sums of float terms, so the results agree to a float ulp or two (the scale may
// round the other way at a tie); widths around the eight lanes test the tails.
TEST(Ops, NormsAgreeWithTheSequentialDoubleSum) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const kernels::KernelTable& k = kernels::table(kernels::Isa::kScalar);
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 2048, 5635}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::vector<float> x(n), w(n), b(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = dist(rng) * 3.0f + 0.5f;
      w[i] = dist(rng);
      b[i] = dist(rng);
    }
    // RMS norm, ggml's way.
    double sum = 0.0;
    for (float v : x) sum += static_cast<double>(v * v);
    const float scale = 1.0f / std::sqrt(static_cast<float>(sum / n) + 1e-5f);
    std::vector<float> y = x;
    ops::rmsnorm(k, y.data(), w.data(), n, 1e-5f);
    for (int64_t i = 0; i < n; ++i) {
      const float want = (x[i] * scale) * w[i];
      ASSERT_NEAR(y[i], want, 2.5e-7f * std::fabs(want)) << "i = " << i;
    }
    // Layer norm, ggml's way.
    double s1 = 0.0;
    for (float v : x) s1 += v;
    const auto mean = static_cast<float>(s1 / n);
    double var = 0.0;
    for (float v : x) var += static_cast<double>((v - mean) * (v - mean));
    const float lscale = 1.0f / std::sqrt(static_cast<float>(var / n) + 1e-5f);
    y = x;
    ops::layernorm(k, y.data(), w.data(), b.data(), n, 1e-5f);
    for (int64_t i = 0; i < n; ++i) {
      const float want = ((x[i] - mean) * lscale) * w[i] + b[i];
      ASSERT_NEAR(y[i], want, 4e-7f * (std::fabs(want) + std::fabs(b[i]))) << "i = " << i;
    }
  }
}

// ggml's form: the input rounded to f16, the result an f16 value; -10 and 10 clamp.
// Every ISA of this build and CPU, in this one process.
TEST(Ops, GeluIsTheTanhFormRoundedThroughF16) {
  std::vector<float> x;
  for (float v = -12.0f; v <= 12.0f; v += 0.00731f) x.push_back(v);
  for (kernels::Isa isa : kernels::available_isas()) {
    SCOPED_TRACE(std::string(kernels::isa_name(isa)));
    std::vector<float> y = x;
    ops::gelu(kernels::table(isa), y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] <= -10.0f) {
        EXPECT_EQ(y[i], 0.0f) << x[i];
        continue;
      }
      if (x[i] >= 10.0f) {
        EXPECT_EQ(y[i], x[i]);
        continue;
      }
      EXPECT_EQ(y[i], fp16_to_fp32(fp32_to_fp16(y[i]))) << "not an f16 value at x = " << x[i];
      const double want = gelu_tanh(fp16_to_fp32(fp32_to_fp16(x[i])));
      // One f16 rounding of the result (2^-11 relative), plus a float tanh's error near 0.
      EXPECT_NEAR(y[i], want, std::abs(want) * 0x1p-10 + 1e-6) << "x = " << x[i];
    }
  }
}

// A q8_0 K's query is quantized as ggml's CPU quantizes activations (kernels/attention.hpp):
// the scalar table's Q8_0 activation quantizer is that one. Block 1 is built of ties (amax
// 127, so each value x.5 is a tie), which the weights' quantizer would round the other way.
TEST(Ops, AttentionQueryIsQuantizedAsActivations) {
  const kernels::KernelTable& ref = kernels::table(kernels::Isa::kScalar);
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 2.0f);
  const int64_t n = 128;
  std::vector<float> q(n);
  for (float& v : q) v = g(rng);
  for (int64_t i = 32; i < 64; ++i) q[i] = static_cast<float>(i - 48) + 0.5f;
  q[32] = 127.0f;
  std::vector<int8_t> values(n);
  std::vector<float> scales(n / 32);
  std::vector<int32_t> sums(n / 32);
  kernels::quantize_query_q8(q.data(), n, values.data(), scales.data(), sums.data());
  std::vector<uint8_t> want(row_size_bytes(TensorType::Q8_0, n));
  kernels::quantize_activation(ref, TensorType::Q8_0, q.data(), want.data(), n);
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* block = want.data() + 34 * b;
    uint16_t d;
    std::memcpy(&d, block, 2);
    EXPECT_EQ(scales[b], fp16_to_fp32(d)) << "block " << b;
    int32_t sum = 0;
    for (int64_t i = 0; i < 32; ++i) {
      EXPECT_EQ(values[32 * b + i], static_cast<int8_t>(block[2 + i])) << "value " << 32 * b + i;
      sum += values[32 * b + i];
    }
    EXPECT_EQ(sums[b], sum) << "block " << b;
  }
  EXPECT_EQ(values[32 + 18], 2);  // 2.5, half to even
}

}  // namespace
}  // namespace qinfer
