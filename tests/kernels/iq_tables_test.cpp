// The generated codebooks (kernels/iq_tables.cpp) equal the text files they came from.
#include <gtest/gtest.h>

#include <sstream>

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

template <typename T, size_t N> void expect_table(const std::string& stem, const T (&table)[N]) {
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

}  // namespace
}  // namespace qinfer
