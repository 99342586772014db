#include "kernels/grid_codes.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/iq_tables.hpp"

namespace qinfer {
namespace {

template <int N, typename Row>
GridCodes<N> make_codes(const Row* grid) {
  constexpr int kPerRow = sizeof(Row);
  std::vector<uint8_t> levels;
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < kPerRow; ++j) levels.push_back(static_cast<uint8_t>(grid[i] >> (8 * j)));
  }
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  GridCodes<N> c;
  c.bits = levels.size() <= 4 ? 2 : 3;
  if (levels.size() > 8 || c.bits * kPerRow > 16)
    throw std::logic_error("grid does not fit 16-bit level codes");
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < kPerRow; ++j) {
      const auto v = static_cast<uint8_t>(grid[i] >> (8 * j));
      const auto l = std::lower_bound(levels.begin(), levels.end(), v) - levels.begin();
      c.code[i] = static_cast<uint16_t>(c.code[i] | l << (c.bits * j));
    }
    const int half = c.bits * kPerRow / 2;
    c.code_lo[i] = static_cast<uint8_t>(c.code[i] & ((1 << half) - 1));
    c.code_hi[i] = static_cast<uint8_t>(c.code[i] >> half);
  }
  for (int i = 0; i < 64; ++i) {
    const size_t l = static_cast<size_t>(i % (1 << c.bits));
    c.levels[i] = l < levels.size() ? levels[l] : 0;
  }
  return c;
}

}  // namespace

const GridCodes<256> kIq2xxsCodes = make_codes<256>(kIq2xxsGrid);
const GridCodes<512> kIq2xsCodes = make_codes<512>(kIq2xsGrid);
const GridCodes<1024> kIq2sCodes = make_codes<1024>(kIq2sGrid);
const GridCodes<256> kIq3xxsCodes = make_codes<256>(kIq3xxsGrid);
const GridCodes<512> kIq3sCodes = make_codes<512>(kIq3sGrid);

}  // namespace qinfer
