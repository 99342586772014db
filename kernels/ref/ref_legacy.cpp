// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and the Q8_0/Q8_1 activations: 32-element blocks.
#include <algorithm>
#include <cfloat>

#include "kernels/ref/fit.hpp"
#include "kernels/ref/ref.hpp"

namespace qinfer::ref {
namespace {

constexpr int kQK = 32;

// The 5th bits of a Q5 block: element j (< 16) takes bit j, element j + 16 bit j + 16.
inline int q5_high(uint32_t qh, int j) { return static_cast<int>((qh >> j) & 1u) << 4; }

void dequantize_q4_0(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ4_0*>(vx);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0x0f) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ4_1*>(vx);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = h2f(x[i].d), m = h2f(x[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(x[i].qs[j] & 0x0f) * d + m;
      y[j + kQK / 2] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ5_0*>(vx);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = h2f(x[i].d);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(((x[i].qs[j] & 0x0f) | q5_high(qh, j)) - 16) * d;
      y[j + kQK / 2] = static_cast<float>(((x[i].qs[j] >> 4) | q5_high(qh, j + 16)) - 16) * d;
    }
  }
}

void dequantize_q5_1(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ5_1*>(vx);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = h2f(x[i].d), m = h2f(x[i].m);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0x0f) | q5_high(qh, j)) * d + m;
      y[j + kQK / 2] = static_cast<float>((x[i].qs[j] >> 4) | q5_high(qh, j + 16)) * d + m;
    }
  }
}

void dequantize_q8_0(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

// ---- dot products: integer sums per block, one float multiply per block

int dot_q4_ints(const uint8_t* qs, const int8_t* a, int offset) {
  int sum = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    sum += ((qs[j] & 0x0f) - offset) * a[j] + ((qs[j] >> 4) - offset) * a[j + kQK / 2];
  }
  return sum;
}

int dot_q5_ints(const uint8_t* qs, const uint8_t* qh_bytes, const int8_t* a, int offset) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  int sum = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    sum += (((qs[j] & 0x0f) | q5_high(qh, j)) - offset) * a[j] +
           (((qs[j] >> 4) | q5_high(qh, j + 16)) - offset) * a[j + kQK / 2];
  }
  return sum;
}

void dot_q4_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  dot_blocks<BlockQ4_0, BlockQ8_0>(n, kQK, w, a, s, nc, out, [](const auto& x, const auto& y) {
    return static_cast<float>(dot_q4_ints(x.qs, y.qs, 8)) * (h2f(x.d) * h2f(y.d));
  });
}

void dot_q4_1(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  dot_blocks<BlockQ4_1, BlockQ8_1>(n, kQK, w, a, s, nc, out, [](const auto& x, const auto& y) {
    return static_cast<float>(dot_q4_ints(x.qs, y.qs, 0)) * (h2f(x.d) * h2f(y.d)) +
           h2f(x.m) * h2f(y.s);
  });
}

void dot_q5_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  dot_blocks<BlockQ5_0, BlockQ8_0>(n, kQK, w, a, s, nc, out, [](const auto& x, const auto& y) {
    return static_cast<float>(dot_q5_ints(x.qs, x.qh, y.qs, 16)) * (h2f(x.d) * h2f(y.d));
  });
}

void dot_q5_1(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  dot_blocks<BlockQ5_1, BlockQ8_1>(n, kQK, w, a, s, nc, out, [](const auto& x, const auto& y) {
    return static_cast<float>(dot_q5_ints(x.qs, x.qh, y.qs, 0)) * (h2f(x.d) * h2f(y.d)) +
           h2f(x.m) * h2f(y.s);
  });
}

void dot_q8_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  dot_blocks<BlockQ8_0, BlockQ8_0>(n, kQK, w, a, s, nc, out, [](const auto& x, const auto& y) {
    int sum = 0;
    for (int j = 0; j < kQK; ++j) sum += x.qs[j] * y.qs[j];
    return static_cast<float>(sum) * (h2f(x.d) * h2f(y.d));
  });
}

float block_absmax(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

// The signed value of largest magnitude (the first one on ties), as ggml's Q4_0/Q5_0 use.
float block_signed_max(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void block_min_max(const float* x, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < kQK; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
}

void pack_q5(const uint8_t* q, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
    qh |= static_cast<uint32_t>((q[j] & 0x10u) >> 4) << j;
    qh |= static_cast<uint32_t>((q[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

}  // namespace

void quantize_row_q4_0(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ4_0*>(vy);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = block_signed_max(x) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const auto q0 =
          static_cast<uint8_t>(std::min(15, int(static_cast<int8_t>(x[j] * id + 8.5f))));
      const auto q1 =
          static_cast<uint8_t>(std::min(15, int(static_cast<int8_t>(x[j + 16] * id + 8.5f))));
      y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_row_q4_1(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ4_1*>(vy);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float min, max;
    block_min_max(x, min, max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const auto q0 = std::min(15, int(static_cast<int8_t>((x[j] - min) * id + 0.5f)));
      const auto q1 = std::min(15, int(static_cast<int8_t>((x[j + 16] - min) * id + 0.5f)));
      y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_row_q5_0(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ5_0*>(vy);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = block_signed_max(x) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) {
      q[j] = static_cast<uint8_t>(std::min(31, int(static_cast<int8_t>(x[j] * id + 16.5f))));
    }
    pack_q5(q, y[i].qs, y[i].qh);
  }
}

void quantize_row_q5_1(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ5_1*>(vy);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float min, max;
    block_min_max(x, min, max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
    pack_q5(q, y[i].qs, y[i].qh);
  }
}

void quantize_row_q8_0(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(vy);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = block_absmax(x) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

// ggml's CPU activation quantizer (the SIMD one every x86/ARM build runs): scale 127/amax and
// round half to even, which differs from the weight quantizer in the last bit at times. Exactly,
// through nearest_int (|value| <= 127): std::nearbyint is a libm call per value on x86-64.
void quantize_row_q8_0_act(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(vy);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float amax = block_absmax(x);
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    y[i].d = fp32_to_fp16(amax / 127.f);
    for (int j = 0; j < kQK; ++j) y[i].qs[j] = static_cast<int8_t>(nearest_int(x[j] * id));
  }
}

void quantize_row_q8_1(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(vy);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = block_absmax(x) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
      sum += y[i].qs[j];
    }
    y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

void quantize_row_q8_1_act(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(vy);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float amax = block_absmax(x);
    const float d = amax / 127.f;
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    y[i].d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
      sum += y[i].qs[j];
    }
    y[i].s = fp32_to_fp16(d * static_cast<float>(sum));
  }
}

// ---------------------------------------------------------------- with an importance matrix
// ggml's quantize_row_*_impl; the 32-element types weigh by the whole row's mean square.

namespace {

// The levels of a 32-element block into qs (4 bits) or qs and qh (5 bits).
template <typename Block>
void pack_levels(const uint8_t* L, Block& y) {
  if constexpr (requires { y.qh; }) {
    pack_q5(L, y.qs, y.qh);
  } else {
    for (int j = 0; j < 16; ++j) y.qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
  }
}

// Q4_0 (nmax 8) and Q5_0 (nmax 16): a symmetric scale fitted to the weights.
template <typename Block, int kNmax>
void quantize_symmetric_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<Block*>(vy);
  const float sigma2 = sum_squares(x, n) / static_cast<float>(n);
  float weight[kQK];
  int8_t L[kQK];
  for (int64_t ib = 0; ib < n / kQK; ++ib) {
    imatrix_weights(x + kQK * ib, qw + kQK * ib, sigma2, kQK, weight);
    y[ib].d = fp32_to_fp16(make_qx_quants(kQK, kNmax, x + kQK * ib, L, 1, weight));
    pack_levels(reinterpret_cast<const uint8_t*>(L), y[ib]);
  }
}

// Q4_1 (nmax 15) and Q5_1 (nmax 31): a scale and a min fitted to the weights.
template <typename Block, int kNmax>
void quantize_with_min_imatrix(const float* x, void* vy, int64_t n, const float* qw) {
  auto* y = static_cast<Block*>(vy);
  const float sigma2 = sum_squares(x, n) / static_cast<float>(n);
  float weight[kQK], min;
  uint8_t L[kQK], Laux[kQK];
  for (int64_t ib = 0; ib < n / kQK; ++ib) {
    imatrix_weights(x + kQK * ib, qw + kQK * ib, sigma2, kQK, weight);
    const float d =
        make_qkx3_quants(kQK, kNmax, x + kQK * ib, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
    y[ib].d = fp32_to_fp16(d);
    y[ib].m = fp32_to_fp16(-min);
    pack_levels(L, y[ib]);
  }
}

}  // namespace

void quantize_q4_0_imatrix(const float* x, void* y, int64_t n, const float* qw) {
  quantize_symmetric_imatrix<BlockQ4_0, 8>(x, y, n, qw);
}
void quantize_q5_0_imatrix(const float* x, void* y, int64_t n, const float* qw) {
  quantize_symmetric_imatrix<BlockQ5_0, 16>(x, y, n, qw);
}
void quantize_q4_1_imatrix(const float* x, void* y, int64_t n, const float* qw) {
  quantize_with_min_imatrix<BlockQ4_1, 15>(x, y, n, qw);
}
void quantize_q5_1_imatrix(const float* x, void* y, int64_t n, const float* qw) {
  quantize_with_min_imatrix<BlockQ5_1, 31>(x, y, n, qw);
}

void fill_legacy(kernels::KernelTable& t) {
  using T = TensorType;
  t.types[uint32_t(T::Q4_0)] = {dequantize_q4_0, dot_q4_0};
  t.types[uint32_t(T::Q4_1)] = {dequantize_q4_1, dot_q4_1};
  t.types[uint32_t(T::Q5_0)] = {dequantize_q5_0, dot_q5_0};
  t.types[uint32_t(T::Q5_1)] = {dequantize_q5_1, dot_q5_1};
  t.types[uint32_t(T::Q8_0)] = {dequantize_q8_0, dot_q8_0};
  t.quantize_act[uint32_t(T::Q8_0)] = quantize_row_q8_0_act;
  t.quantize_act[uint32_t(T::Q8_1)] = quantize_row_q8_1_act;
}

}  // namespace qinfer::ref
