// Packed gemv copies and re-coded types (kernels/pack.hpp), for the table QINFER_ISA selects:
// the packed layout's scalar dot agrees with the scalar dot of the file's blocks; the ISA's
// packed gemv agrees with that packed reference, through matmul for 1 and 3 tokens (the same
// bits for 1 and 2 threads); a GEMM reads the packed copy (its decoder gives the file decoder's
// integers and scales to the bit) and get_row the file's blocks. TQ1_0 re-coded as TQ2_0
// dequantizes to the same floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/matmul.hpp"
#include "kernels/pack.hpp"
#include "tests/kernels/isa_test_util.hpp"

namespace qinfer {
namespace {

struct PackedMatrix {
  std::vector<uint8_t> file, packed;
  size_t row_bytes = 0, packed_row_bytes = 0;
};

PackedMatrix make_packed(TensorType type, int64_t rows, int64_t cols, Pattern pat,
                         std::mt19937& rng) {
  PackedMatrix m;
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = make_row(type, cols, pat, rng);
    m.file.insert(m.file.end(), row.begin(), row.end());
  }
  m.row_bytes = row_size_bytes(type, cols);
  m.packed_row_bytes = kernels::packed_row_bytes(type, cols);
  m.packed.resize(m.packed_row_bytes * rows);
  kernels::pack(type, m.file.data(), m.row_bytes, rows, cols, m.packed.data());
  return m;
}

// Sum of |w * a| over a row: the scale of a dot's rounding error.
double abs_products(const kernels::KernelTable& k, TensorType type, const uint8_t* w,
                    const float* x, int64_t n) {
  std::vector<float> row(n);
  k.types[static_cast<uint32_t>(type)].dequantize_row(w, row.data(), n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::fabs(double(row[i]) * x[i]);
  return sum;
}

const TensorType kPackedTypes[] = {TensorType::IQ1_S,   TensorType::IQ1_M,   TensorType::IQ3_S,
                                   TensorType::IQ3_XXS, TensorType::IQ2_XXS, TensorType::IQ2_XS,
                                   TensorType::IQ2_S};

TEST(Packed, ReferenceAgreesWithTheFileLayout) {
  const kernels::KernelTable& ref = kernels::table(Isa::kScalar);
  std::mt19937 rng(29);
  for (TensorType type : kPackedTypes) {
    for (Pattern pat : {Pattern::kRandom, Pattern::kMaxScale, Pattern::kAllOnes, Pattern::kAllZero,
                        Pattern::kZeroScale}) {
      const int64_t cols = 1024, rows = 6;
      ASSERT_TRUE(kernels::can_pack(type, cols));
      const PackedMatrix m = make_packed(type, rows, cols, pat, rng);
      std::normal_distribution<float> g(0.0f, 1.0f);
      std::vector<float> x(cols);
      for (float& v : x) v = g(rng);
      std::vector<uint8_t> plain(row_size_bytes(TensorType::Q8_K, cols));
      kernels::quantize_activation(ref, TensorType::Q8_K, x.data(), plain.data(), cols);
      std::vector<uint8_t> lanes = plain;
      kernels::prepare_packed_activation(lanes.data(), cols);
      EXPECT_NE(lanes, plain);
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* w = m.file.data() + r * m.row_bytes;
        float want = 0;
        ref.types[static_cast<uint32_t>(type)].vec_dot(cols, w, plain.data(), 0, 1, &want);
        const float got = kernels::packed_dot_ref(
            type, cols, m.packed.data() + r * m.packed_row_bytes, lanes.data());
        EXPECT_NEAR(got, want, 1e-5 * abs_products(ref, type, w, x.data(), cols) + 1e-30)
            << type_name(type) << " pattern " << static_cast<int>(pat) << " row " << r;
      }
    }
  }
}

TEST(Packed, GemvAgreesWithTheReference) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP();
  int checked = 0;
  std::mt19937 rng(31);
  for (TensorType type : kPackedTypes) {
    if (k->types[static_cast<uint32_t>(type)].vec_dot_packed == nullptr) continue;
    for (int64_t cols : {256, 512, 2048}) {
      const int64_t rows = 23;  // a last group of 3 rows
      const PackedMatrix m = make_packed(type, rows, cols, Pattern::kRandom, rng);
      const kernels::MatrixView file{type, m.file.data(), rows, cols, m.row_bytes};
      kernels::MatrixView packed = file;
      packed.packed = m.packed.data();
      packed.packed_row_bytes = m.packed_row_bytes;
      for (int64_t n_tok : {1, 3, 9}) {
        const LayoutRun run = run_both_layouts(*k, file, packed, n_tok, rng);
        if (n_tok >= kernels::kGemmMinTokens) {  // the GEMM reads the packed copy alone
          const std::vector<uint8_t> zeros(m.file.size(), 0);
          kernels::MatrixView blind = packed;
          blind.data = zeros.data();
          std::vector<float> y(n_tok * rows);
          kernels::MatmulScratch scratch;
          kernels::matmul(*k, blind, run.x.data(), n_tok, y.data(), scratch);
          EXPECT_EQ(y, run.y_file) << type_name(type) << " cols " << cols << ", GEMM";
          continue;
        }
        for (int64_t t = 0; t < n_tok; ++t) {
          const float* x = run.x.data() + t * cols;
          std::vector<uint8_t> act(row_size_bytes(TensorType::Q8_K, cols));
          kernels::quantize_activation(*k, TensorType::Q8_K, x, act.data(), cols);
          kernels::prepare_packed_activation(act.data(), cols);
          for (int64_t r = 0; r < rows; ++r) {
            const float want = kernels::packed_dot_ref(
                type, cols, m.packed.data() + r * m.packed_row_bytes, act.data());
            const double scale = abs_products(*k, type, m.file.data() + r * m.row_bytes, x, cols);
            const float got = run.y_copy[t * rows + r];
            EXPECT_NEAR(got, want, 1e-6 * scale)
                << type_name(type) << " cols " << cols << " row " << r << " token " << t;
            EXPECT_NEAR(got, run.y_file[t * rows + r], 1e-5 * scale);
          }
        }
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no packed gemv in this ISA";
}

// The GEMM's decoder of packed rows gives the file decoder's integers, scales and mins bit for
// bit, on every pattern (the sub-scales' extremes, zero and denormal d).
TEST(Packed, GemmDecoderMatchesTheFileDecoder) {
  std::mt19937 rng(43);
  for (TensorType type : kPackedTypes) {
    const auto decode_packed = kernels::packed_gemm_decoder(type);
    ASSERT_NE(decode_packed, nullptr) << type_name(type);
    const kernels::GemmTypeInfo& info = kernels::gemm_type_info(type);
    for (Pattern pat : {Pattern::kRandom, Pattern::kMaxScale, Pattern::kAllOnes, Pattern::kAllZero,
                        Pattern::kZeroScale, Pattern::kDenormalScale}) {
      const int64_t cols = 1024, rows = 6, groups = cols / info.group;
      const PackedMatrix m = make_packed(type, rows, cols, pat, rng);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<int8_t> q_file(cols), q_packed(cols, 99);
        std::vector<float> s_file(groups), m_file(groups), s_packed(groups, -1),
            m_packed(groups, -1);
        info.decode(m.file.data() + r * m.row_bytes, cols, q_file.data(), s_file.data(),
                    m_file.data());
        decode_packed(m.packed.data() + r * m.packed_row_bytes, cols, q_packed.data(),
                      s_packed.data(), m_packed.data());
        const std::string what =
            std::string(type_name(type)) + " pattern " + std::to_string(static_cast<int>(pat));
        EXPECT_EQ(q_packed, q_file) << what;
        EXPECT_EQ(std::memcmp(s_packed.data(), s_file.data(), groups * sizeof(float)), 0) << what;
        EXPECT_EQ(std::memcmp(m_packed.data(), m_file.data(), groups * sizeof(float)), 0) << what;
      }
    }
  }
}

// The packer, which codes each group of 8 values from the file's grid index and signs (IQ1:
// its shift), writes the same bytes as the reference packer, which decodes every value and
// codes it: random bytes (every grid entry and sign pattern turns up) and the all-ones and
// all-zero blocks, whose indices are the grids' last and first entries.
TEST(Packed, FastPackMatchesTheReferencePacker) {
  std::mt19937 rng(41);
  for (TensorType type : kPackedTypes) {
    for (Pattern pat :
         {Pattern::kRandom, Pattern::kAllOnes, Pattern::kAllZero, Pattern::kDenormalScale}) {
      const int64_t cols = 4096, rows = 16;
      std::vector<uint8_t> file;
      for (int64_t r = 0; r < rows; ++r) {
        const auto row = make_row(type, cols, pat, rng);
        file.insert(file.end(), row.begin(), row.end());
      }
      const size_t out = kernels::packed_row_bytes(type, cols);
      std::vector<uint8_t> fast(out * rows, 0xa5), slow(out * rows, 0x5a);
      kernels::pack(type, file.data(), row_size_bytes(type, cols), rows, cols, fast.data());
      kernels::pack_reference(type, file.data(), row_size_bytes(type, cols), rows, cols,
                              slow.data());
      EXPECT_EQ(fast, slow) << type_name(type) << " pattern " << static_cast<int>(pat);
    }
  }
}

// TQ1_0 re-coded as TQ2_0 dequantizes to the same floats, block for block, on adversarial
// rows too (all trit bytes 0xff: digits past 2 decode as ggml does).
TEST(Packed, Tq1AsTq2GivesTheSameValues) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP();
  std::mt19937 rng(37);
  for (Pattern pat : {Pattern::kRandom, Pattern::kAllOnes, Pattern::kAllZero, Pattern::kMaxScale}) {
    const int64_t rows = 5, cols = 768;
    std::vector<uint8_t> tq1;
    for (int64_t r = 0; r < rows; ++r) {
      const auto row = make_row(TensorType::TQ1_0, cols, pat, rng);
      tq1.insert(tq1.end(), row.begin(), row.end());
    }
    const size_t row1 = row_size_bytes(TensorType::TQ1_0, cols);
    const size_t row2 = row_size_bytes(TensorType::TQ2_0, cols);
    std::vector<uint8_t> tq2(row2 * rows);
    kernels::tq1_0_to_tq2_0(tq1.data(), row1, rows, cols, tq2.data());
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> a(cols), b(cols);
      kernels::dequantize_row(*k, TensorType::TQ1_0, tq1.data() + r * row1, a.data(), cols);
      kernels::dequantize_row(*k, TensorType::TQ2_0, tq2.data() + r * row2, b.data(), cols);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), 4 * cols))
          << "pattern " << static_cast<int>(pat) << " row " << r;
    }
  }
}

}  // namespace
}  // namespace qinfer
