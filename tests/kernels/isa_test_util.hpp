// What the ISA suites share: the table under test and random or adversarial rows of every
// type (isa_test.cpp, isa_ops_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/kernels.hpp"
#include "kernels/matmul.hpp"
#include "qinfer/error.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace qinfer {

using kernels::Isa;

// The table QINFER_ISA selects (dispatch parses it); nullptr when it names an ISA this CPU
// lacks, so that run skips.
inline const kernels::KernelTable* isa_under_test() {
  try {
    return &kernels::active();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) return nullptr;
    throw;
  }
}

// Byte offsets of the f16 scale fields of each block type, patched to finite values.
inline std::vector<size_t> f16_fields(TensorType t) {
  using T = TensorType;
  switch (t) {
    case T::Q4_1:
    case T::Q5_1:
    case T::Q4_K:
    case T::Q5_K:
      return {0, 2};
    case T::Q2_K:
      return {80, 82};
    case T::Q3_K:
      return {108};
    case T::Q6_K:
      return {208};
    case T::TQ1_0:
      return {52};
    case T::TQ2_0:
      return {64};
    case T::IQ1_M:
    case T::MXFP4:
      return {};
    default:
      return {0};
  }
}

enum class Pattern { kRandom, kZeroScale, kDenormalScale, kMaxScale, kAllOnes, kAllZero };

inline std::vector<uint8_t> make_row(TensorType type, int64_t n, Pattern pat, std::mt19937& rng) {
  const TypeTraits& tt = type_traits(type);
  std::vector<uint8_t> row(row_size_bytes(type, n));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : row)
    b = static_cast<uint8_t>(pat == Pattern::kAllOnes   ? 0xff
                             : pat == Pattern::kAllZero ? 0
                                                        : byte(rng));
  std::uniform_real_distribution<float> mag(1e-4f, 1e-1f);
  auto scale_bits = [&]() -> uint16_t {
    switch (pat) {
      case Pattern::kZeroScale:
        return 0;
      case Pattern::kDenormalScale:
        return 0x0001;
      case Pattern::kMaxScale:
        return 0x7bff;
      default:
        return fp32_to_fp16(byte(rng) & 1 ? mag(rng) : -mag(rng));
    }
  };
  if (!tt.quantized) {  // f16/bf16/f32 elements: finite values
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i) {
      const float v = pat == Pattern::kRandom     ? g(rng)
                      : pat == Pattern::kMaxScale ? 60000.0f
                                                  : 0.0f;
      if (type == TensorType::F32) std::memcpy(row.data() + 4 * i, &v, 4);
      if (type == TensorType::F16) {
        const uint16_t h = fp32_to_fp16(v);
        std::memcpy(row.data() + 2 * i, &h, 2);
      }
      if (type == TensorType::BF16) {
        const uint16_t h = fp32_to_bf16(v);
        std::memcpy(row.data() + 2 * i, &h, 2);
      }
    }
    return row;
  }
  for (size_t b = 0; b < row.size(); b += tt.type_size) {
    for (size_t off : f16_fields(type)) {
      const uint16_t h = scale_bits();
      std::memcpy(row.data() + b + off, &h, 2);
    }
    if (type == TensorType::IQ1_M) row[b + 55] &= 0x0f;  // the hidden f16 scale's top bits: finite
    if (type == TensorType::MXFP4) row[b] = static_cast<uint8_t>(100 + byte(rng) % 50);
  }
  return row;
}

inline std::vector<uint8_t> make_activation(TensorType act_type, int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = g(rng);
  std::vector<uint8_t> out(row_size_bytes(act_type, n));
  kernels::quantize_activation(kernels::table(Isa::kScalar), act_type, x.data(), out.data(), n);
  return out;
}

inline std::vector<TensorType> all_weight_types() {
  std::vector<TensorType> out;
  for (uint32_t id = 0; id < kTypeIdCount; ++id) {
    if (kernels::table(Isa::kScalar).types[id].vec_dot != nullptr)
      out.push_back(static_cast<TensorType>(id));
  }
  return out;
}

// y = x (n_tok rows) . w^T through matmul, with one thread (y1) and with two (y2).
inline void matmul_one_and_two_threads(const kernels::KernelTable& k, const kernels::MatrixView& w,
                                       const std::vector<float>& x, int64_t n_tok,
                                       std::vector<float>& y1, std::vector<float>& y2) {
  kernels::MatmulScratch scratch;
  y1.assign(n_tok * w.n_rows, 0.0f);
  y2.assign(n_tok * w.n_rows, 0.0f);
#if defined(_OPENMP)
  omp_set_num_threads(1);
#endif
  kernels::matmul(k, w, x.data(), n_tok, y1.data(), scratch);
#if defined(_OPENMP)
  omp_set_num_threads(2);
#endif
  kernels::matmul(k, w, x.data(), n_tok, y2.data(), scratch);
}

// A matrix in the file's layout and as a gemv copy (interleaved, packed or tiled) for n_tok
// random tokens: get_row reads both alike, the copy gives the same bits for 1 and 2 threads,
// and from kGemmMinTokens tokens (the GEMM reads the file's blocks) the file layout's bits,
// unless gemm_same_bits is false (a tiled copy's GEMM adds its panels' sums).
struct LayoutRun {
  std::vector<float> x, y_file, y_copy;
};
inline LayoutRun run_both_layouts(const kernels::KernelTable& k, const kernels::MatrixView& file,
                                  const kernels::MatrixView& copy, int64_t n_tok, std::mt19937& rng,
                                  bool gemm_same_bits = true) {
  const int64_t cols = file.n_cols;
  std::vector<float> a(cols), b(cols);
  kernels::get_row(k, file, 13, a.data());
  kernels::get_row(k, copy, 13, b.data());
  EXPECT_EQ(a, b) << "get_row";
  LayoutRun run;
  std::normal_distribution<float> g(0.0f, 1.0f);
  run.x.resize(n_tok * cols);
  for (float& v : run.x) v = g(rng);
  run.y_file.resize(n_tok * file.n_rows);
  kernels::MatmulScratch scratch;
  kernels::matmul(k, file, run.x.data(), n_tok, run.y_file.data(), scratch);
  std::vector<float> y2;
  matmul_one_and_two_threads(k, copy, run.x, n_tok, run.y_copy, y2);
  EXPECT_EQ(run.y_copy, y2) << "threads, " << n_tok << " tokens";
  if (n_tok >= kernels::kGemmMinTokens && gemm_same_bits) {
    EXPECT_EQ(run.y_copy, run.y_file) << "GEMM";
  }
  return run;
}

// Every output of run (a copy's matmul) within float summation error of the file layout's:
// 1e-5 of the sum of |products| of the row and the token (w: the file's rows).
inline void expect_copy_near_file(const kernels::KernelTable& k, const kernels::MatrixView& file,
                                  const LayoutRun& run, const std::string& what) {
  const int64_t rows = file.n_rows, cols = file.n_cols;
  const auto n_tok = static_cast<int64_t>(run.x.size()) / cols;
  std::vector<float> wrow(cols);
  for (int64_t r = 0; r < rows; ++r) {
    k.types[static_cast<uint32_t>(file.type)].dequantize_row(file.data + r * file.row_bytes,
                                                             wrow.data(), cols);
    for (int64_t t = 0; t < n_tok; ++t) {
      double abs_sum = 0;
      for (int64_t i = 0; i < cols; ++i)
        abs_sum += std::fabs(double(wrow[i]) * run.x[t * cols + i]);
      EXPECT_NEAR(run.y_copy[t * rows + r], run.y_file[t * rows + r], 1e-5 * abs_sum)
          << what << " row " << r << " token " << t;
    }
  }
}

}  // namespace qinfer
