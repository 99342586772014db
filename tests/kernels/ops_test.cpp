// Element-wise ops against their textbook definitions in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/float_conv.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ops.hpp"

namespace qinfer {
namespace {

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * x * (1.0 + 0.044715 * x * x)));
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

}  // namespace
}  // namespace qinfer
