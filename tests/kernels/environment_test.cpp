// What the suites assume about the machine and the workplace, checked so that a broken
// assumption fails loudly instead of quietly turning tests into skips:
// - QINFER_EXPECT_ISAS (set by .ci/run from /proc/cpuinfo, independently of qinfer's own
//   CPUID reading) lists ISAs this run must be able to use;
// - ../shared holds the larger sweeps' data; without it they shrink to the vendored files,
//   which this test says, and fails on when QINFER_REQUIRE_SHARED=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "kernels/kernels.hpp"
#include "tests/test_util.hpp"

namespace qinfer {
namespace {

TEST(Environment, ExpectedIsasAreAvailable) {
  std::string have;
  for (kernels::Isa isa : kernels::available_isas())
    have += std::string(kernels::isa_name(isa)) + " ";
  std::printf("ISAs available: %s\n", have.c_str());
  const char* env = std::getenv("QINFER_EXPECT_ISAS");
  if (env == nullptr || *env == '\0')
    GTEST_SKIP() << "QINFER_EXPECT_ISAS not set; available: " << have;
  std::istringstream want(env);
  for (std::string isa; std::getline(want, isa, ',');) {
    bool found = false;
    for (kernels::Isa i : kernels::available_isas()) found |= kernels::isa_name(i) == isa;
    EXPECT_TRUE(found) << "the CPU has " << isa
                       << " (says /proc/cpuinfo) but qinfer detects only: " << have;
  }
}

// Each ISA and variant (avx512-novbmi, neon-plain) is a table of its own, named by its Isa,
// and QINFER_ISA picks the one it names.
TEST(Environment, EveryVariantIsItsOwnTable) {
  const char* env = std::getenv("QINFER_ISA");
  for (kernels::Isa isa : kernels::available_isas()) {
    const kernels::KernelTable& t = kernels::table(isa);
    EXPECT_EQ(t.isa, isa) << kernels::isa_name(isa);
    for (kernels::Isa other : kernels::available_isas()) {
      if (other != isa) {
        EXPECT_NE(&t, &kernels::table(other)) << kernels::isa_name(isa);
      }
    }
    if (env != nullptr && kernels::isa_name(isa) == env) {
      EXPECT_EQ(&kernels::active(), &t);
    }
  }
}

TEST(Environment, SharedDataIsPresent) {
  const std::string shared = test::shared_path("models");
  const bool required = std::getenv("QINFER_REQUIRE_SHARED") != nullptr &&
                        std::string(std::getenv("QINFER_REQUIRE_SHARED")) == "1";
  if (shared.empty()) {
    const std::string msg =
        "../shared is missing: the model, vocabulary and PPL sweeps ran on the vendored files only";
    std::fprintf(stderr, "\n*** %s ***\n\n", msg.c_str());
    if (required) FAIL() << msg << " (QINFER_REQUIRE_SHARED=1)";
    GTEST_SKIP() << msg;
  }
  std::printf("../shared found: the sweeps cover every shared model and vocabulary\n");
}

}  // namespace
}  // namespace qinfer
