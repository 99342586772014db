// The exponential ggml's AVX-512 build uses for SiLU and softmax: a degree-5 polynomial on the
// argument reduced by n = round(x * log2 e), then an exact scaling by 2^n (0 or inf when
// |n| > 192). Reproduced operation for operation, so values llama.cpp later rounds to
// f16/bf16 round the same way here. The SIMD versions (kernels/x86/x86_kernels.inl) follow
// this scalar one and must stay bit-identical to it (checked by the ISA test).
#pragma once

#include <cmath>

namespace qinfer::kernels {

inline constexpr float kExpRound = 0x1.8p23f;  // adding it rounds to an integer
inline constexpr float kLog2e = 0x1.715476p+0f;
inline constexpr float kLn2Hi = 0x1.62e4p-1f, kLn2Lo = 0x1.7f7d1cp-20f;
inline constexpr float kExpC5 = 0x1.0e4020p-7f, kExpC4 = 0x1.573e2ep-5f, kExpC3 = 0x1.555e66p-3f,
                       kExpC2 = 0x1.fffdb6p-2f, kExpC1 = 0x1.ffffecp-1f;

inline float ggml_expf(float x) {
  const float z = std::fma(x, kLog2e, kExpRound);
  const float n = z - kExpRound;
  const float b = std::fma(-n, kLn2Lo, std::fma(-n, kLn2Hi, x));
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(kExpC5, b, kExpC4), u, std::fma(kExpC3, b, kExpC2)), u,
                           std::fma(kExpC1, b, 1.0f));
  if (std::fabs(n) > 192) return n <= 0 ? 0.0f : INFINITY;
  return std::ldexp(j, static_cast<int>(n));
}

}  // namespace qinfer::kernels
