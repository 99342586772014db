#include "kernels/lane_layout.hpp"

#include <cstring>

#include "kernels/blocks.hpp"

namespace qinfer::kernels {

void apply_lane_layout(const LaneLayout& layout, void* act, int64_t n) {
  auto* blocks = static_cast<BlockQ8_K*>(act);
  for (int64_t b = 0; b < n / 256; ++b) {
    BlockQ8_K& y = blocks[b];
    int8_t plain[256];
    std::memcpy(plain, y.qs, sizeof plain);
    for (int p = 0; p < 256; ++p) y.qs[p] = plain[layout.from[p]];
    if (!layout.lane_sums) continue;
    for (int i = 0; i < 16; ++i) {
      int sum = 0;
      for (int k = 0; k < 4; ++k) {
        for (int j = 0; j < 4; ++j) sum += y.qs[64 * k + 4 * i + j];
      }
      y.bsums[i] = static_cast<int16_t>(sum);
    }
  }
}

}  // namespace qinfer::kernels
