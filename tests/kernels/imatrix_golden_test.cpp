// The importance-matrix quantizers against llama-quantize's own bytes
// (tests/data/golden/imatrix): rows of a real model's weight, its imatrix weights, and the rows
// as `llama-quantize --pure --imatrix` encoded them, byte for byte for every type that takes one.
#include <gtest/gtest.h>

#include <sstream>

#include "kernels/kernels.hpp"
#include "tests/test_util.hpp"

namespace qinfer {
namespace {

struct ImatrixRow {
  std::string type_name;
  int rows = 0, n_per_row = 0;
};

void PrintTo(const ImatrixRow& r, std::ostream* os) { *os << r.type_name; }

std::string golden(const std::string& name) { return test::data_path("golden/imatrix/" + name); }

std::vector<ImatrixRow> manifest() {
  std::istringstream in(test::read_text(golden("manifest.tsv")));
  std::vector<ImatrixRow> out;
  std::string line, source;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    ImatrixRow r;
    if (f >> r.type_name >> r.rows >> r.n_per_row >> source) out.push_back(r);
  }
  return out;
}

class ImatrixGolden : public testing::TestWithParam<ImatrixRow> {};

TEST_P(ImatrixGolden, QuantizerIsByteExact) {
  const ImatrixRow& g = GetParam();
  const auto type = type_from_name(g.type_name);
  ASSERT_TRUE(type.has_value());
  const kernels::QuantizeImatrixFn quantize = kernels::imatrix_quantizer(*type);
  ASSERT_NE(quantize, nullptr) << g.type_name;
  const auto x = test::read_floats(golden("x.f32"));
  const auto imatrix = test::read_floats(golden("imatrix.f32"));
  const auto expect = test::read_bytes(golden(g.type_name + ".q"));
  const size_t row_bytes = row_size_bytes(*type, g.n_per_row);
  ASSERT_EQ(x.size(), static_cast<size_t>(g.rows * g.n_per_row));
  ASSERT_EQ(imatrix.size(), static_cast<size_t>(g.n_per_row));
  ASSERT_EQ(expect.size(), row_bytes * g.rows);
  std::vector<uint8_t> got(expect.size());
  for (int r = 0; r < g.rows; ++r) {
    quantize(x.data() + r * g.n_per_row, got.data() + r * row_bytes, g.n_per_row, imatrix.data());
  }
  size_t first_diff = 0;
  while (first_diff < got.size() && got[first_diff] == expect[first_diff]) ++first_diff;
  EXPECT_EQ(first_diff, got.size())
      << g.type_name << ": first differing byte " << first_diff << " of " << got.size();
}

INSTANTIATE_TEST_SUITE_P(Types, ImatrixGolden, testing::ValuesIn(manifest()),
                         [](const testing::TestParamInfo<ImatrixRow>& info) {
                           return info.param.type_name;
                         });

}  // namespace
}  // namespace qinfer
