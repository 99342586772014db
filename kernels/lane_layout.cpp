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

void prepare_row_lanes(void* act, int64_t n) {
  auto* blocks = static_cast<BlockQ8_K*>(act);
  for (int64_t i = 0; i < n / 256; ++i) {
    const BlockQ8_K plain = blocks[i];
    BlockQ8_K& y = blocks[i];
    for (int t = 0; t < 4; ++t) {
      for (int k = 0; k < 4; ++k) {
        for (int d = 0; d < 4; ++d) {
          std::memcpy(y.qs + 64 * t + 16 * k + 4 * d,
                      plain.qs + 128 * (d / 2) + 32 * k + 16 * (d % 2) + 4 * t, 4);
          y.bsums[4 * k + d] = plain.bsums[8 * (d / 2) + 2 * k + d % 2];
        }
      }
    }
  }
}

}  // namespace qinfer::kernels
