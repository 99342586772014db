// The kernel table chosen by QINFER_ISA (ctest runs this binary once per ISA and variant) against
// the scalar reference, on random and adversarial blocks of every type: dequantization must be
// bit-identical, dot products equal within 1e-5 of the sum of |products|, for 1..4 columns
// and for rows of one block and of many.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/kernels.hpp"
#include "kernels/lane_layout.hpp"
#include "kernels/matmul.hpp"
#include "kernels/repack.hpp"
#if defined(QINFER_HAVE_X86)
#include "kernels/x86/x86_fill.hpp"
#endif
#include "qinfer/error.hpp"
#include "tests/kernels/isa_test_util.hpp"
#include "tests/test_util.hpp"

namespace qinfer {
namespace {

class IsaVsReference : public testing::TestWithParam<TensorType> {};

TEST_P(IsaVsReference, DequantizeAndDotAgree) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP() << "QINFER_ISA names an ISA this CPU lacks";
  if (k->isa == Isa::kScalar)
    GTEST_SKIP() << "the scalar table is the reference: nothing to compare";
  const kernels::KernelTable& ref = kernels::table(Isa::kScalar);
  const TensorType type = GetParam();
  const TypeTraits& tt = type_traits(type);
  const auto id = static_cast<uint32_t>(type);
  std::mt19937 rng(1234 + id);
  const int64_t bs = std::max<int64_t>(tt.block_size, 32);
  // 1, 3 and 6 blocks end two- and four-block loops early; 8 and 16 do not.
  for (int64_t n : {bs, bs * 3, bs * 6, bs * 8, bs * 16 + (tt.block_size == 1 ? 7 : 0)}) {
    for (Pattern pat : {Pattern::kRandom, Pattern::kZeroScale, Pattern::kDenormalScale,
                        Pattern::kMaxScale, Pattern::kAllOnes, Pattern::kAllZero}) {
      const auto w = make_row(type, n, pat, rng);
      std::vector<float> a(n), b(n);
      ref.types[id].dequantize_row(w.data(), a.data(), n);
      k->types[id].dequantize_row(w.data(), b.data(), n);
      ASSERT_EQ(std::memcmp(a.data(), b.data(), n * sizeof(float)), 0)
          << tt.name << " dequantize differs, n=" << n << " pattern " << int(pat);
      const TensorType act_type = tt.vec_dot_type;
      const size_t act_bytes = row_size_bytes(act_type, n);
      std::vector<uint8_t> acts;
      for (int c = 0; c < kernels::kMaxDotCols; ++c) {
        const auto one = make_activation(act_type, n, rng);
        acts.insert(acts.end(), one.begin(), one.end());
      }
      // the same rows in the layout this ISA's dot reads (lane_layout.hpp), if it has one
      std::vector<uint8_t> prepared = acts;
      for (int c = 0; c < kernels::kMaxDotCols; ++c)
        kernels::prepare_activation(*k, type, prepared.data() + c * act_bytes, n);
      std::vector<float> act_f(n);
      for (int nc = 1; nc <= kernels::kMaxDotCols; ++nc) {
        float want[kernels::kMaxDotCols], got[kernels::kMaxDotCols];
        ref.types[id].vec_dot(n, w.data(), acts.data(), act_bytes, nc, want);
        k->types[id].vec_dot(n, w.data(), prepared.data(), act_bytes, nc, got);
        for (int c = 0; c < nc; ++c) {
          // Scale of the tolerance: sum |w_i * a_i| with the activation dequantized.
          if (act_type == TensorType::Q8_K) {
            for (int64_t blk = 0; blk < n / 256; ++blk) {
              const auto* q = reinterpret_cast<const BlockQ8_K*>(acts.data() + c * act_bytes) + blk;
              for (int j = 0; j < 256; ++j) act_f[blk * 256 + j] = q->d * q->qs[j];
            }
          } else if (act_type == TensorType::Q8_1) {
            for (int64_t blk = 0; blk < n / 32; ++blk) {
              const auto* q = reinterpret_cast<const BlockQ8_1*>(acts.data() + c * act_bytes) + blk;
              for (int j = 0; j < 32; ++j) act_f[blk * 32 + j] = fp16_to_fp32(q->d) * q->qs[j];
            }
          } else {
            ref.types[static_cast<uint32_t>(act_type)].dequantize_row(acts.data() + c * act_bytes,
                                                                      act_f.data(), n);
          }
          double abs_sum = 0;
          for (int64_t i = 0; i < n; ++i) abs_sum += std::fabs(double(a[i]) * act_f[i]);
          EXPECT_NEAR(got[c], want[c], 1e-5 * abs_sum + 1e-30)
              << tt.name << " n=" << n << " cols=" << nc << " col " << c << " pattern " << int(pat);
        }
      }
    }
  }
}

// The ISA's canonical GEMM decoders (KernelTable::gemm_decode) against the scalar ones of
// gemm_type_info, which are the reference's: the same int8 values, scales and mins, bit for
// bit, on random rows and on the edge patterns.
TEST_P(IsaVsReference, GemmDecoderIsBitExact) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP() << "QINFER_ISA names an ISA this CPU lacks";
  const TensorType type = GetParam();
  const kernels::DecodeGroupsFn fast = k->gemm_decode[static_cast<uint32_t>(type)];
  if (fast == nullptr) GTEST_SKIP() << "no " << type_name(type) << " decoder of this ISA";
  const kernels::GemmTypeInfo& info = kernels::gemm_type_info(type);
  ASSERT_NE(info.decode, nullptr);
  std::mt19937 rng(77 + static_cast<uint32_t>(type));
  const int64_t n = 1024, groups = n / info.group;
  for (Pattern pat : {Pattern::kRandom, Pattern::kAllOnes, Pattern::kMaxScale}) {
    const auto row = make_row(type, n, pat, rng);
    std::vector<int8_t> q1(n), q2(n);
    std::vector<float> s1(groups), s2(groups), m1(groups), m2(groups);
    info.decode(row.data(), n, q1.data(), s1.data(), m1.data());
    fast(row.data(), n, q2.data(), s2.data(), m2.data());
    EXPECT_EQ(q1, q2) << type_name(type) << " pattern " << int(pat);
    for (int64_t g = 0; g < groups; ++g) {
      EXPECT_EQ(std::bit_cast<uint32_t>(s1[g]), std::bit_cast<uint32_t>(s2[g]))
          << type_name(type) << " scale of group " << g;
      EXPECT_EQ(std::bit_cast<uint32_t>(m1[g]), std::bit_cast<uint32_t>(m2[g]))
          << type_name(type) << " min of group " << g;
    }
  }
}

// The GEMM panel of the ISA under test (kernels/gemm.hpp) against two truths, for every
// weight type, a partial panel (11 rows) and a token count that ends on a short tile (13):
// the double-precision sum of the dequantized weights times the GEMM's quantized activations
// (d * q), and the scalar panel. Tolerance: 1e-5 of the sum of |products|.
TEST_P(IsaVsReference, GemmPanelAgrees) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP() << "QINFER_ISA names an ISA this CPU lacks";
  const TensorType type = GetParam();
  if (!kernels::is_float_type(type) && kernels::gemm_type_info(type).decode == nullptr) {
    GTEST_SKIP() << "no GEMM for " << type_name(type);
  }
  const kernels::KernelTable& ref = kernels::table(Isa::kScalar);
  const auto id = static_cast<uint32_t>(type);
  std::mt19937 rng(555 + id);
  const int64_t cols = 512, rows = 75, n_tok = 13;
  for (Pattern pat : {Pattern::kRandom, Pattern::kAllOnes, Pattern::kMaxScale}) {
    std::vector<uint8_t> w;
    for (int64_t r = 0; r < rows; ++r) {
      const auto row = make_row(type, cols, pat, rng);
      w.insert(w.end(), row.begin(), row.end());
    }
    const size_t row_bytes = row_size_bytes(type, cols);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> x(n_tok * cols);
    for (float& v : x) v = g(rng);
    kernels::GemmActivationBuffer buf;
    kernels::resize_gemm_activations(buf, type_traits(type).vec_dot_type, n_tok, cols);
    kernels::prepare_gemm_rows(*k, x.data(), cols, 0, n_tok, buf);
    const kernels::GemmActivations a = buf.view(x.data(), n_tok, cols);
    std::vector<float> got(n_tok * rows, -1.0f), want(n_tok * rows, -1.0f);
    std::vector<uint8_t> scratch;
    for (int64_t r0 = 0; r0 < rows; r0 += kernels::kGemmBlockRows) {
      const int n = static_cast<int>(std::min<int64_t>(kernels::kGemmBlockRows, rows - r0));
      // In two chunks of columns, the second accumulated, as matmul runs them.
      for (int64_t k0 : {int64_t{0}, cols / 2}) {
        const size_t off = r0 * row_bytes + row_size_bytes(type, k0);
        const kernels::GemmActivations part = a.slice(k0, k0 + cols / 2);
        k->gemm_panel(type, w.data() + off, row_bytes, n, part, got.data() + r0, rows, k0 > 0,
                      scratch, kernels::PanelRows::kFile);
        kernels::gemm_panel_scalar(type, w.data() + off, row_bytes, n, part, want.data() + r0, rows,
                                   k0 > 0, scratch, kernels::PanelRows::kFile);
      }
    }
    std::vector<float> wrow(cols);
    for (int64_t r = 0; r < rows; ++r) {
      ref.types[id].dequantize_row(w.data() + r * row_bytes, wrow.data(), cols);
      for (int64_t t = 0; t < n_tok; ++t) {
        double exact = 0, abs_sum = 0;
        for (int64_t i = 0; i < cols; ++i) {
          const double xi = kernels::is_float_type(type)
                                ? a.x[(t / kernels::kFloatTile) * cols * kernels::kFloatTile +
                                      i * kernels::kFloatTile + t % kernels::kFloatTile]
                                : double(a.d[t * (cols / 32) + i / 32]) * a.q[t * cols + i];
          exact += double(wrow[i]) * xi;
          abs_sum += std::fabs(double(wrow[i]) * xi);
        }
        if (type_traits(type).vec_dot_type == TensorType::Q8_1) {
          // Q8_1 carries s = d * sum(q) in f16 (the GEMM keeps it in sum16 of the block's
          // first 16), and the format takes the weights' min term from it: m * s.
          const size_t block_bytes = type_traits(type).type_size;
          for (int64_t b = 0; b < cols / 32; ++b) {
            uint16_t m_bits;
            std::memcpy(&m_bits, w.data() + r * row_bytes + b * block_bytes + 2, 2);  // {d, m, ...}
            double sum_q = 0;
            for (int j = 0; j < 32; ++j) sum_q += a.q[t * cols + 32 * b + j];
            const double s = a.sum16[t * (cols / 16) + 2 * b];
            exact += double(fp16_to_fp32(m_bits)) * (s - double(a.d[t * (cols / 32) + b]) * sum_q);
          }
        }
        const double tol = 1e-5 * abs_sum + 1e-30;
        const float v = got[t * rows + r];
        if (!std::isfinite(exact)) continue;  // MXFP4's largest scales overflow float32
        EXPECT_NEAR(v, exact, tol)
            << type_name(type) << " row " << r << " token " << t << " pattern " << int(pat);
        EXPECT_NEAR(v, want[t * rows + r], tol)
            << type_name(type) << " vs scalar panel, row " << r << " token " << t;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, IsaVsReference, testing::ValuesIn(all_weight_types()),
                         [](const testing::TestParamInfo<TensorType>& i) {
                           return std::string(type_name(i.param));
                         });

// A gemv dot of several rows gives, row by row, the bits of the same ISA's vec_dot, on random
// blocks of every type that has one (1 to kMaxDotRows rows; the last row repeats in a step
// of fewer rows, and must not be written past).
void expect_rows_equal_dot(TensorType type, kernels::VecDotRowsFn rows, kernels::VecDotFn dot,
                           const kernels::KernelTable& k) {
  std::mt19937 rng(99 + static_cast<uint32_t>(type));
  const int64_t bs = std::max<int64_t>(type_traits(type).block_size, 32);
  for (int64_t n : {bs, bs * 3, bs * 16}) {
    const size_t row_bytes = row_size_bytes(type, n);
    // Up to two groups and one row more: the table's entry takes any number of rows.
    constexpr int kRows = 2 * kernels::kMaxDotRows + 1;
    std::vector<uint8_t> w;
    for (int r = 0; r < kRows; ++r) {
      const auto row = make_row(type, n, Pattern::kRandom, rng);
      w.insert(w.end(), row.begin(), row.end());
    }
    auto act = make_activation(type_traits(type).vec_dot_type, n, rng);
    kernels::prepare_activation(k, type, act.data(), n);
    for (int nr = 1; nr <= kRows; ++nr) {
      float got[kRows + 1];
      got[nr] = -1.0f;
      rows(n, w.data(), row_bytes, nr, act.data(), got);
      EXPECT_EQ(got[nr], -1.0f) << "wrote past " << nr << " rows";
      for (int r = 0; r < nr; ++r) {
        float want;
        dot(n, w.data() + r * row_bytes, act.data(), act.size(), 1, &want);
        EXPECT_EQ(std::bit_cast<uint32_t>(got[r]), std::bit_cast<uint32_t>(want))
            << type_name(type) << " n=" << n << " row " << r << " of " << nr;
      }
    }
  }
}

TEST(RowsDot, EqualsVecDotBitForBit) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP() << "QINFER_ISA names an ISA this CPU lacks";
  int checked = 0;
  for (TensorType type : all_weight_types()) {
    const kernels::TypeKernels& tk = k->types[static_cast<uint32_t>(type)];
    if (tk.vec_dot_rows == nullptr) continue;
    ++checked;
    expect_rows_equal_dot(type, tk.vec_dot_rows, tk.vec_dot, *k);
  }
  if (checked == 0) GTEST_SKIP() << "no type of this ISA has a rows dot";
}

#if defined(QINFER_HAVE_X86)
// The avx512 table's F16 rows kernel for Intel's cores (the activations widened once per
// call), which other CPUs do not install: the bits of the table's dot_f16, on any CPU.
TEST(RowsDot, WidenedF16RowsEqualVecDotBitForBit) {
  const auto isas = kernels::available_isas();
  if (std::find(isas.begin(), isas.end(), kernels::Isa::kAvx512) == isas.end())
    GTEST_SKIP() << "no AVX-512";
  const kernels::KernelTable& k = kernels::table(kernels::Isa::kAvx512);
  expect_rows_equal_dot(TensorType::F16, kernels::avx512_rows_f16_widened(),
                        k.types[static_cast<uint32_t>(TensorType::F16)].vec_dot, k);
}
#endif

// llama.cpp's logits depend on its kernels' summation order wherever a sum is later rounded
// (an activation quantized to Q8), so the dots that follow ggml's order (docs/kernels.md)
// must give ggml's own dots (the golden .dot.f32) bit for bit, for 1 to 4 columns, and so
// must the gemv dot of several rows where the type has one.
std::set<std::string> ggml_order_types() {
  const char* env = std::getenv("QINFER_ISA");
  const std::string isa = env == nullptr ? "" : env;
  const std::set<std::string> k = {"q2_K",   "q3_K",    "q4_K",  "q5_K",    "q6_K",
                                   "iq4_xs", "iq1_s",   "iq1_m", "iq2_xxs", "iq2_xs",
                                   "iq2_s",  "iq3_xxs", "iq3_s", "tq2_0"};
  std::set<std::string> t = k;
  if (isa == "avx2" || isa == "avx2-vnni") {  // vpdpbusd's sums are maddubs's (no saturation)
    // (q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl and mxfp4 leave ggml's order for one column:
    // two accumulator chains; q3_K and q6_K take their offset out per block; the tolerance
    // tests cover them.)
    t.erase("q3_K");
    t.erase("q6_K");
    t.insert({"tq1_0"});
    return t;
  }
  t.insert({"q4_1", "q5_0", "q5_1", "q8_0"});
  t.erase("tq2_0");       // AVX-512 sums TQ2_0 in 16 lanes a row
  if (isa == "avx512") {  // with VBMI (where the CPU has it) these grid types sum in lanes
    for (const char* lanes : {"iq2_xxs", "iq2_xs", "iq3_xxs", "iq3_s"}) t.erase(lanes);
    return t;
  }
  if (isa == "avx512-novbmi") {
    t.insert({"q4_0", "iq4_nl"});  // the VBMI Q4_0 and IQ4_NL dots take four blocks a step
    return t;
  }
  return {};
}

TEST(GgmlOrder, DotsEqualGgmlBitForBit) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP() << "QINFER_ISA names an ISA this CPU lacks";
  const auto types = ggml_order_types();
  if (types.empty()) GTEST_SKIP() << "no dot of this ISA follows ggml's order";
  auto golden = [](const std::string& f) { return test::data_path("golden/kernels/" + f); };
  std::istringstream manifest(test::read_text(golden("manifest.tsv")));
  std::string line;
  int checked = 0;
  while (std::getline(manifest, line)) {
    std::istringstream f(line);
    std::string name, q_file, deq_file, act_name, dot_file;
    uint32_t id;
    int bs, ts, rows, n, imatrix;
    if (!(f >> name >> id >> bs >> ts >> rows >> n >> imatrix >> q_file >> deq_file >> act_name >>
          dot_file))
      continue;
    if (!types.contains(name)) continue;
    const auto type = static_cast<TensorType>(id);
    const auto q = test::read_bytes(golden(q_file));
    const auto one = test::read_bytes(golden("activation." + act_name + ".q"));
    const auto expect = test::read_floats(golden(dot_file));
    std::vector<uint8_t> act;
    for (int c = 0; c < kernels::kMaxDotCols; ++c) act.insert(act.end(), one.begin(), one.end());
    for (int c = 0; c < kernels::kMaxDotCols; ++c)
      kernels::prepare_activation(*k, type, act.data() + c * one.size(), n);
    const size_t row_bytes = row_size_bytes(type, n);
    for (int r = 0; r < rows; ++r) {
      for (int nc = 1; nc <= kernels::kMaxDotCols; ++nc) {
        float got[kernels::kMaxDotCols];
        k->types[id].vec_dot(n, q.data() + r * row_bytes, act.data(), one.size(), nc, got);
        for (int c = 0; c < nc; ++c) {
          EXPECT_EQ(std::bit_cast<uint32_t>(got[c]), std::bit_cast<uint32_t>(expect[r]))
              << name << " row " << r << " cols " << nc << ": " << got[c] << " vs ggml "
              << expect[r];
        }
      }
      for (int nr = 1;
           nr <= kernels::kMaxDotRows && k->types[id].vec_dot_rows != nullptr && r + nr <= rows;
           ++nr) {
        float got[kernels::kMaxDotRows];
        k->types[id].vec_dot_rows(n, q.data() + r * row_bytes, row_bytes, nr, act.data(), got);
        for (int i = 0; i < nr; ++i) {
          EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(expect[r + i]))
              << name << " rows " << r << "+" << i << " of " << nr << ": " << got[i] << " vs ggml "
              << expect[r + i];
        }
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(types.size()));
}

// gemv/gemm against a double-precision dequantize-then-multiply, and identical bits for 1
// and 2 threads.
TEST(Matmul, MatchesDoublePrecisionAndThreadCount) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP();
  std::mt19937 rng(7);
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::Q4_0, TensorType::Q8_0,
                          TensorType::Q4_K, TensorType::Q6_K}) {
    const int64_t rows = 64, cols = 512;
    std::vector<uint8_t> w;
    for (int64_t r = 0; r < rows; ++r) {
      const auto row = make_row(type, cols, Pattern::kRandom, rng);
      w.insert(w.end(), row.begin(), row.end());
    }
    const kernels::MatrixView m{type, w.data(), rows, cols, row_size_bytes(type, cols)};
    for (int64_t n_tok : {1, 3, 9}) {
      std::normal_distribution<float> g(0.0f, 1.0f);
      std::vector<float> x(n_tok * cols), y1, y2;
      for (float& v : x) v = g(rng);
      matmul_one_and_two_threads(*k, m, x, n_tok, y1, y2);
      EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0) << type_name(type);
      std::vector<float> wrow(cols);
      for (int64_t r = 0; r < rows; ++r) {
        k->types[static_cast<uint32_t>(type)].dequantize_row(w.data() + r * m.row_bytes,
                                                             wrow.data(), cols);
        for (int64_t t = 0; t < n_tok; ++t) {
          double exact = 0, abs_sum = 0;
          for (int64_t i = 0; i < cols; ++i) {
            exact += double(wrow[i]) * x[t * cols + i];
            abs_sum += std::fabs(double(wrow[i]) * x[t * cols + i]);
          }
          // Activations are quantized (8-bit for the integer types): tolerance of that size.
          const double tol = (type == TensorType::F32   ? 1e-5
                              : type == TensorType::F16 ? 2e-3
                                                        : 2e-2) *
                             abs_sum;
          EXPECT_NEAR(y1[t * rows + r], exact, tol)
              << type_name(type) << " row " << r << " token " << t;
        }
      }
    }
  }
}

// An ISA's own activation layout for an interleaved kernel with a 128-bit lane per row is
// the portable map of lane_layout.hpp, byte for byte (quantized activations of random floats).
TEST(Interleaved, RowLanesLayoutIsThePortableOne) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP();
  int checked = 0;
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int64_t n = 1024;
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  std::vector<uint8_t> plain(row_size_bytes(TensorType::Q8_K, n));
  kernels::quantize_activation(*k, TensorType::Q8_K, x.data(), plain.data(), n);
  for (TensorType type : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q6_K}) {
    const auto f = k->types[static_cast<uint32_t>(type)].prepare_act_interleaved;
    if (f == nullptr) continue;
    std::vector<uint8_t> want = plain, got = plain;
    kernels::prepare_row_lanes(want.data(), n);
    f(got.data(), n);
    EXPECT_EQ(got, want) << type_name(type);
    EXPECT_NE(got, plain);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no row-lane kernel in this ISA";
}

// A matrix interleaved for the gemv (kernels/repack.hpp): de-interleaving gives the file's
// bytes back; get_row and the GEMM (9 tokens) give the file layout's bits; the gemv (1 and 3
// tokens) agrees with the file layout's within float summation error, and gives the same bits
// for 1 and 2 threads.
TEST(Interleaved, AgreesWithTheFileLayout) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP();
  int checked = 0;
  std::mt19937 rng(17);
  for (TensorType type : all_weight_types()) {
    if (k->types[static_cast<uint32_t>(type)].vec_dot_interleaved == nullptr) continue;
    // 448 and 1344 columns (7 and 21 pairs): rows that end in a short unit of pairs
    // (repack.hpp).
    for (int64_t cols : {256, 448, 512, 1344, 2048}) {
      const int64_t rows = 24;
      if (cols % 256 != 0 && type_traits(type).block_size != 32) continue;
      ASSERT_TRUE(kernels::can_interleave(type, rows, cols));
      std::vector<uint8_t> w;
      for (int64_t r = 0; r < rows; ++r) {
        const auto row = make_row(type, cols, Pattern::kRandom, rng);
        w.insert(w.end(), row.begin(), row.end());
      }
      const size_t row_bytes = row_size_bytes(type, cols);
      std::vector<uint8_t> packed(w.size()), back(w.size());
      kernels::interleave(type, w.data(), row_bytes, rows, cols, packed.data());
      kernels::deinterleave(type, packed.data(), row_bytes, 0, static_cast<int>(rows), 0,
                            cols / type_traits(type).block_size, back.data(), row_bytes);
      EXPECT_EQ(back, w) << type_name(type) << " round trip";
      EXPECT_NE(packed, w);
      const kernels::MatrixView file{type, w.data(), rows, cols, row_bytes};
      kernels::MatrixView inter = file;
      inter.data = packed.data();
      inter.interleaved = true;
      for (int64_t n_tok : {1, 3, 9}) {
        const LayoutRun run = run_both_layouts(*k, file, inter, n_tok, rng);
        std::ostringstream what;
        what << type_name(type) << " cols " << cols;
        expect_copy_near_file(*k, file, run, what.str());
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no interleaved kernel in this ISA";
}

// A matrix in column tiles (kernels/repack.hpp, tile()) as the loader makes it: panels
// interleaved where the table has the type's interleaved gemv and in-place GEMM decoder, else
// in the file's layout, where kernels::tiles_for (the loader's rule) finds a rows gemv. Every row
// reads back (get_row) with the file's bits; the gemv (1 and 3 tokens) and the GEMM (9) agree with
// the file layout's within float summation error and give the same bits for 1 and 2 threads. 136
// rows end in a short block of rows; 1536 columns are three 512-column panels, 1344 two and a
// 320-column one (a short unit of pairs).
TEST(Tiled, AgreesWithTheFileLayout) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP();
  constexpr int64_t kTile = 512, kRows = 136;
  int checked = 0;
  std::mt19937 rng(29);
  for (TensorType type : all_weight_types()) {
    const kernels::TypeKernels& tk = k->types[static_cast<uint32_t>(type)];
    if (type == TensorType::F32 || tk.vec_dot_packed != nullptr) continue;
    for (int64_t cols : {1536, 1344}) {
      if (cols % 256 != 0 && type_traits(type).block_size != 32) continue;
      const bool interleave = tk.vec_dot_interleaved != nullptr &&
                              k->gemm_decode_interleaved[static_cast<uint32_t>(type)] != nullptr &&
                              kernels::can_interleave(type, kRows, cols);
      ASSERT_TRUE(kernels::can_tile(type, kRows, cols, kTile, interleave)) << type_name(type);
      if (!kernels::tiles_for(*k, type, kRows, cols, interleave, kTile)) continue;  // no rows gemv
      std::vector<uint8_t> w;
      for (int64_t r = 0; r < kRows; ++r) {
        const auto row = make_row(type, cols, Pattern::kRandom, rng);
        w.insert(w.end(), row.begin(), row.end());
      }
      const size_t row_bytes = row_size_bytes(type, cols);
      std::vector<uint8_t> tiled(w.size());
      kernels::tile(type, w.data(), row_bytes, kRows, cols, kTile, interleave, tiled.data());
      EXPECT_NE(tiled, w) << type_name(type);
      const kernels::MatrixView file{type, w.data(), kRows, cols, row_bytes};
      kernels::MatrixView copy = file;
      copy.data = tiled.data();
      copy.interleaved = interleave;
      copy.tile_cols = kTile;
      std::vector<float> want(cols), got(cols);
      for (int64_t r = 0; r < kRows; ++r) {
        kernels::get_row(*k, file, r, want.data());
        kernels::get_row(*k, copy, r, got.data());
        ASSERT_EQ(std::memcmp(want.data(), got.data(), cols * sizeof(float)), 0)
            << type_name(type) << " cols " << cols << " row " << r;
      }
      for (int64_t n_tok : {1, 3, 9}) {
        const LayoutRun run = run_both_layouts(*k, file, copy, n_tok, rng, false);
        std::ostringstream what;
        what << type_name(type) << " tiled, cols " << cols << (interleave ? " interleaved" : "");
        expect_copy_near_file(*k, file, run, what.str());
      }
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no rows or interleaved kernel in this ISA";
}

}  // namespace
}  // namespace qinfer
