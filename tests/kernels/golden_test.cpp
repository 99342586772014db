// The scalar reference kernels against ggml's golden vectors (tests/data/golden/kernels):
// dequantization bit for bit, activation quantizers byte for byte, dot products to 1e-5 of
// the sum of |products|, and the weight quantizers byte for byte (or at least ggml's rmse).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/kernels.hpp"
#include "tests/test_util.hpp"

namespace qinfer {
namespace {

struct GoldenRow {
  std::string type_name;
  uint32_t type_id;
  int rows, n_per_row;
  bool imatrix;  // ggml quantized with imatrix.f32
  std::string q_file, deq_file, vec_dot_type, dot_file;
  double rmse;
};

void PrintTo(const GoldenRow& r, std::ostream* os) { *os << r.type_name; }

std::vector<GoldenRow> manifest() {
  std::istringstream in(test::read_text(test::data_path("golden/kernels/manifest.tsv")));
  std::vector<GoldenRow> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    GoldenRow r;
    int bs, ts, imatrix;
    std::string rmse;
    f >> r.type_name >> r.type_id >> bs >> ts >> r.rows >> r.n_per_row >> imatrix >> r.q_file >>
        r.deq_file >> r.vec_dot_type >> r.dot_file >> rmse;
    r.rmse = std::strtod(rmse.c_str(), nullptr);  // "nan" where ggml has no quantizer
    r.imatrix = imatrix != 0;
    out.push_back(r);
  }
  return out;
}

std::string golden(const std::string& name) { return test::data_path("golden/kernels/" + name); }

std::string row_name(const testing::TestParamInfo<GoldenRow>& info) { return info.param.type_name; }

class Golden : public testing::TestWithParam<GoldenRow> {};

TEST_P(Golden, ReferenceDequantizeIsBitExact) {
  const GoldenRow& g = GetParam();
  const auto type = static_cast<TensorType>(g.type_id);
  const auto q = test::read_bytes(golden(g.q_file));
  const auto expect = test::read_floats(golden(g.deq_file));
  const size_t row_bytes = row_size_bytes(type, g.n_per_row);
  ASSERT_EQ(q.size(), row_bytes * g.rows);
  std::vector<float> got(expect.size());
  const auto& k = kernels::table(kernels::Isa::kScalar);
  for (int r = 0; r < g.rows; ++r) {
    kernels::dequantize_row(k, type, q.data() + r * row_bytes, got.data() + r * g.n_per_row,
                            g.n_per_row);
  }
  int mismatches = 0;
  for (size_t i = 0; i < expect.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &expect[i], 4);
    if (a != b && mismatches++ < 5) {
      ADD_FAILURE() << g.type_name << " element " << i << ": got " << got[i] << " expected "
                    << expect[i];
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// The reference dot of every type against two truths: ggml's own dot (the golden .dot.f32,
// where ggml has one) and, for every type (MXFP4 included, which has no ggml dot), the sum in
// double precision of the bit-exact dequantized weights times the dequantized activation.
TEST_P(Golden, ReferenceDotWithinTolerance) {
  const GoldenRow& g = GetParam();
  const auto type = static_cast<TensorType>(g.type_id);
  // The activation type from our type table (the manifest has none for MXFP4).
  const TensorType act_type = type_traits(type).vec_dot_type;
  if (g.vec_dot_type != "-") {
    ASSERT_EQ(act_type, *type_from_name(g.vec_dot_type));
  }
  const auto q = test::read_bytes(golden(g.q_file));
  const auto act =
      test::read_bytes(golden("activation." + std::string(type_name(act_type)) + ".q"));
  const std::vector<float> expect =
      g.dot_file == "-" ? std::vector<float>{} : test::read_floats(golden(g.dot_file));
  const auto deq = test::read_floats(golden(g.deq_file));
  const auto act_f = test::read_floats(golden("activation.f32"));
  const auto& k = kernels::table(kernels::Isa::kScalar);
  const size_t row_bytes = row_size_bytes(type, g.n_per_row);
  // |products| uses the dequantized activation the kernel sees.
  std::vector<float> act_deq(g.n_per_row);
  if (act_type == TensorType::Q8_K) {
    for (int b = 0; b < g.n_per_row / 256; ++b) {
      float d;
      std::memcpy(&d, act.data() + b * 292, 4);
      for (int j = 0; j < 256; ++j)
        act_deq[b * 256 + j] = d * static_cast<int8_t>(act[b * 292 + 4 + j]);
    }
  } else if (act_type == TensorType::Q8_1) {  // {f16 d, f16 s, int8 qs[32]}
    for (int b = 0; b < g.n_per_row / 32; ++b) {
      uint16_t d;
      std::memcpy(&d, act.data() + b * 36, 2);
      for (int j = 0; j < 32; ++j)
        act_deq[b * 32 + j] = fp16_to_fp32(d) * static_cast<int8_t>(act[b * 36 + 4 + j]);
    }
  } else {
    kernels::dequantize_row(k, act_type, act.data(), act_deq.data(), g.n_per_row);
  }
  for (int r = 0; r < g.rows; ++r) {
    double abs_sum = 0, exact = 0;
    for (int i = 0; i < g.n_per_row; ++i) {
      const double p = double(deq[r * g.n_per_row + i]) * act_deq[i];
      abs_sum += std::fabs(p);
      exact += p;
    }
    if (act_type == TensorType::Q8_1) {
      // Q8_1 carries s = d * sum(q) rounded to f16, and the format's dot takes the weights'
      // min term from it: m * s, not m * d * sum(q). Add the difference, block by block.
      const size_t block_bytes = type_traits(type).type_size;
      for (int b = 0; b < g.n_per_row / 32; ++b) {
        uint16_t m_bits, d_bits, s_bits;
        std::memcpy(&m_bits, q.data() + r * row_bytes + b * block_bytes + 2, 2);  // {d, m, ...}
        std::memcpy(&d_bits, act.data() + b * 36, 2);
        std::memcpy(&s_bits, act.data() + b * 36 + 2, 2);
        double sum_q = 0;
        for (int j = 0; j < 32; ++j) sum_q += static_cast<int8_t>(act[b * 36 + 4 + j]);
        exact += double(fp16_to_fp32(m_bits)) *
                 (fp16_to_fp32(s_bits) - double(fp16_to_fp32(d_bits)) * sum_q);
      }
    }
    const float got = kernels::vec_dot(k, type, g.n_per_row, q.data() + r * row_bytes, act.data());
    if (!std::isfinite(abs_sum)) {  // MXFP4's edge exponents overflow float32 to infinity
      EXPECT_FALSE(std::isfinite(got))
          << g.type_name << " row " << r << ": infinite weights, finite dot";
      continue;
    }
    EXPECT_NEAR(got, exact, 1e-5 * abs_sum)
        << g.type_name << " row " << r << " against the double-precision sum";
    if (!expect.empty()) {
      EXPECT_NEAR(got, expect[r], 1e-5 * abs_sum) << g.type_name << " row " << r << " against ggml";
    }
  }
}

TEST_P(Golden, ReferenceQuantizer) {
  const GoldenRow& g = GetParam();
  const auto type = static_cast<TensorType>(g.type_id);
  // ggml quantized the types that need an importance matrix with imatrix.f32 (one weight per
  // column, the same for every row), the others with none.
  const auto quantize = kernels::reference_quantizer(type);
  const auto quantize_imatrix = kernels::imatrix_quantizer(type);
  if (g.imatrix ? quantize_imatrix == nullptr : quantize == nullptr) {
    GTEST_SKIP() << "no " << (g.imatrix ? "importance-matrix " : "reference ") << "quantizer for "
                 << g.type_name << " yet";
  }
  if (std::isnan(g.rmse))
    GTEST_SKIP() << g.type_name << ": the golden file is not ggml quantizer output";
  const auto input = test::read_floats(golden("input.f32"));
  const auto imatrix = test::read_floats(golden("imatrix.f32"));
  ASSERT_EQ(imatrix.size(), static_cast<size_t>(g.n_per_row));
  const auto expect = test::read_bytes(golden(g.q_file));
  const size_t row_bytes = row_size_bytes(type, g.n_per_row);
  std::vector<uint8_t> got(expect.size());
  for (int r = 0; r < g.rows; ++r) {
    if (g.imatrix) {
      quantize_imatrix(input.data() + r * g.n_per_row, got.data() + r * row_bytes, g.n_per_row,
                       imatrix.data());
    } else {
      quantize(input.data() + r * g.n_per_row, got.data() + r * row_bytes, g.n_per_row);
    }
  }
  if (got == expect) return;  // bit-identical to ggml
  // Otherwise our error must be no worse than ggml's.
  std::vector<float> deq(input.size());
  const auto& k = kernels::table(kernels::Isa::kScalar);
  for (int r = 0; r < g.rows; ++r) {
    kernels::dequantize_row(k, type, got.data() + r * row_bytes, deq.data() + r * g.n_per_row,
                            g.n_per_row);
  }
  double se = 0;
  for (size_t i = 0; i < input.size(); ++i) se += (deq[i] - input[i]) * double(deq[i] - input[i]);
  const double rmse = std::sqrt(se / input.size());
  EXPECT_LE(rmse, g.rmse * 1.0001) << g.type_name << " is not bit-identical and worse than ggml";
  ADD_FAILURE() << g.type_name << " quantizer is not bit-identical to ggml (rmse " << rmse << " vs "
                << g.rmse << ")";
}

INSTANTIATE_TEST_SUITE_P(Types, Golden, testing::ValuesIn(manifest()), row_name);

// MXFP4 has no ggml quantizer output to compare with: check the published rule instead —
// the block exponent is floor(log2(amax)) - 2 (+127 bias) and every element takes the
// nearest of the 16 codes at that scale.
TEST(Mxfp4Quantizer, PicksTheExponentAndTheNearestCode) {
  const auto input = test::read_floats(golden("input.f32"));
  std::vector<BlockMXFP4> q(input.size() / 32);
  kernels::reference_quantizer(TensorType::MXFP4)(input.data(), q.data(),
                                                  static_cast<int64_t>(input.size()));
  const int8_t kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (size_t b = 0; b < q.size(); ++b) {
    const float* x = input.data() + 32 * b;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    ASSERT_EQ(q[b].e, static_cast<uint8_t>(std::floor(std::log2(amax)) - 2 + 127)) << "block " << b;
    const float d = std::ldexp(1.0f, q[b].e - 128);
    for (int j = 0; j < 32; ++j) {
      const int code = j < 16 ? q[b].qs[j] & 0xf : q[b].qs[j - 16] >> 4;
      for (int k = 0; k < 16; ++k) {
        EXPECT_LE(std::fabs(kv[code] * d - x[j]), std::fabs(kv[k] * d - x[j]))
            << "block " << b << " element " << j;
      }
    }
  }
}

// The grid quantizers beyond the golden rows: a super-block of zeros stays all zero bytes
// (d = 0) between quantized ones, in its own place; the types ggml cannot quantize without an
// importance matrix refuse to.
class GridQuantizer : public testing::TestWithParam<std::string> {};

TEST_P(GridQuantizer, ZeroSuperBlockStaysZeroInPlace) {
  const auto type = *type_from_name(GetParam());
  const auto quantize = kernels::imatrix_quantizer(type);
  ASSERT_NE(quantize, nullptr);
  auto input = test::read_floats(golden("input.f32"));
  const auto imatrix = test::read_floats(golden("imatrix.f32"));
  const int64_t n = static_cast<int64_t>(imatrix.size());  // 4 super-blocks: golden row 0
  std::vector<uint8_t> whole(row_size_bytes(type, n)), holed(whole.size());
  quantize(input.data(), whole.data(), n, imatrix.data());
  std::fill(input.begin() + 256, input.begin() + 512, 0.0f);  // super-block 1 zeroed
  quantize(input.data(), holed.data(), n, imatrix.data());
  const size_t sb = whole.size() / 4;
  for (size_t i = 0; i < whole.size(); ++i) {
    if (i >= sb && i < 2 * sb) {
      EXPECT_EQ(holed[i], 0) << "byte " << i << " of the zeroed super-block";
    } else {
      EXPECT_EQ(holed[i], whole[i]) << "byte " << i << " of an untouched super-block";
    }
  }
}

TEST_P(GridQuantizer, NullImatrixOnlyWhereGgmlAllowsIt) {
  const auto type = *type_from_name(GetParam());
  const bool needs =
      type == TensorType::IQ1_S || type == TensorType::IQ2_XXS || type == TensorType::IQ2_XS;
  const auto input = test::read_floats(golden("input.f32"));
  std::vector<uint8_t> q(row_size_bytes(type, 256));
  if (needs) {
    EXPECT_THROW(kernels::imatrix_quantizer(type)(input.data(), q.data(), 256, nullptr),
                 std::invalid_argument);
    EXPECT_EQ(kernels::reference_quantizer(type), nullptr);
  } else {
    EXPECT_NO_THROW(kernels::imatrix_quantizer(type)(input.data(), q.data(), 256, nullptr));
    ASSERT_NE(kernels::reference_quantizer(type), nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GridQuantizer,
                         testing::Values("iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs",
                                         "iq3_s"),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

class Activation : public testing::TestWithParam<std::string> {};

TEST_P(Activation, QuantizerIsByteExact) {
  const std::string name = GetParam();
  const auto type = *type_from_name(name);
  const auto input = test::read_floats(golden("activation.f32"));
  const auto expect = test::read_bytes(golden("activation." + name + ".q"));
  std::vector<uint8_t> got(row_size_bytes(type, static_cast<int64_t>(input.size())));
  ASSERT_EQ(got.size(), expect.size());
  kernels::quantize_activation(kernels::table(kernels::Isa::kScalar), type, input.data(),
                               got.data(), static_cast<int64_t>(input.size()));
  EXPECT_EQ(got, expect);
}

INSTANTIATE_TEST_SUITE_P(Types, Activation, testing::Values("q8_0", "q8_1", "q8_K", "f16", "bf16"));

}  // namespace
}  // namespace qinfer
