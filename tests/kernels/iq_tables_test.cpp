// The generated codebooks (kernels/iq_tables.cpp) equal the text files they came from.
#include <gtest/gtest.h>

#include <sstream>

#include "kernels/grid_codes.hpp"
#include "kernels/iq_tables.hpp"
#include "tests/test_util.hpp"

namespace qinfer {
namespace {

std::vector<int64_t> read_table(const std::string& stem) {
  std::istringstream in(test::read_text(test::data_path("golden/tables/" + stem + ".txt")));
  std::vector<int64_t> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    out.push_back(static_cast<int64_t>(std::stoull(line, nullptr, 0)));
  }
  return out;
}

template <typename T, size_t N>
void expect_table(const std::string& stem, const T (&table)[N]) {
  const auto want = read_table(stem);
  ASSERT_EQ(want.size(), N) << stem;
  for (size_t i = 0; i < N; ++i) {
    EXPECT_EQ(static_cast<int64_t>(table[i]), want[i]) << stem << "[" << i << "]";
  }
}

TEST(IqTables, GeneratedSourceMatchesData) {
  expect_table("iq2xxs_grid", kIq2xxsGrid);
  expect_table("iq2xs_grid", kIq2xsGrid);
  expect_table("iq2s_grid", kIq2sGrid);
  expect_table("iq3xxs_grid", kIq3xxsGrid);
  expect_table("iq3s_grid", kIq3sGrid);
  expect_table("iq1s_grid", kIq1sGrid);
  expect_table("ksigns_iq2xs", kKsignsIq2xs);
  expect_table("kmask_iq2xs", kKmaskIq2xs);
  expect_table("kvalues_iq4nl", kKvaluesIq4nl);
}

// The level codes the SIMD loaders expand decode back to every grid row.
template <int N, typename Row>
void expect_codes_decode(const char* name, const GridCodes<N>& c, const Row* grid, int bits) {
  ASSERT_EQ(c.bits, bits) << name;
  for (int i = 0; i < N; ++i) {
    const int half = bits * static_cast<int>(sizeof(Row)) / 2;
    EXPECT_EQ(c.code[i], c.code_lo[i] | c.code_hi[i] << half) << name << " row " << i;
    EXPECT_LT(c.code_lo[i], 1 << half) << name << " row " << i;
    for (size_t j = 0; j < sizeof(Row); ++j) {
      const unsigned level = (c.code[i] >> (bits * j)) & ((1u << bits) - 1);
      for (int rep = 0; rep < 64; rep += 1 << bits) {
        EXPECT_EQ(c.levels[rep + level], static_cast<uint8_t>(grid[i] >> (8 * j)))
            << name << " row " << i << " value " << j;
      }
    }
  }
}

TEST(IqTables, GridCodesDecodeToTheGrids) {
  expect_codes_decode("iq2xxs", kIq2xxsCodes, kIq2xxsGrid, 2);
  expect_codes_decode("iq2xs", kIq2xsCodes, kIq2xsGrid, 2);
  expect_codes_decode("iq2s", kIq2sCodes, kIq2sGrid, 2);
  expect_codes_decode("iq3xxs", kIq3xxsCodes, kIq3xxsGrid, 3);
  expect_codes_decode("iq3s", kIq3sCodes, kIq3sGrid, 3);
}

}  // namespace
}  // namespace qinfer
