#include "kernels/repack.hpp"

#include <cstring>

#include "kernels/blocks.hpp"

namespace qinfer::kernels {
namespace {

constexpr size_t kPairBytes = 2 * sizeof(BlockQ4_0) * kInterleaveRows;  // 144

// Where block b of row i (of its group) lives in a group's bytes.
size_t scale_at(int64_t b, int i) {
  return static_cast<size_t>(b / 2) * kPairBytes + static_cast<size_t>((b % 2) * 4 + i) * 2;
}
size_t quants_at(int64_t b, int i) {
  return static_cast<size_t>(b / 2) * kPairBytes + 16 + static_cast<size_t>(i) * 32 +
         static_cast<size_t>(b % 2) * 16;
}

}  // namespace

bool can_interleave(TensorType type, int64_t n_rows, int64_t n_cols) {
  return type == TensorType::Q4_0 && n_rows % kInterleaveRows == 0 && n_cols % 64 == 0;
}

void interleave(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows,
                int64_t n_cols, uint8_t* dst) {
  (void)type;
  const int64_t nb = n_cols / 32;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < n_rows; g += kInterleaveRows) {
    uint8_t* out = dst + static_cast<size_t>(g) * row_bytes;
    for (int i = 0; i < kInterleaveRows; ++i) {
      const auto* row = reinterpret_cast<const BlockQ4_0*>(src + (g + i) * row_bytes);
      for (int64_t b = 0; b < nb; ++b) {
        std::memcpy(out + scale_at(b, i), &row[b].d, 2);
        std::memcpy(out + quants_at(b, i), row[b].qs, 16);
      }
    }
  }
}

void deinterleave(TensorType type, const uint8_t* data, size_t row_bytes, int64_t r0, int n_rows,
                  int64_t b0, int64_t n_blocks, uint8_t* dst, size_t dst_row_bytes) {
  (void)type;
  for (int i = 0; i < n_rows; ++i) {
    const int64_t r = r0 + i;
    const uint8_t* group = data + static_cast<size_t>(r - r % kInterleaveRows) * row_bytes;
    auto* out = reinterpret_cast<BlockQ4_0*>(dst + static_cast<size_t>(i) * dst_row_bytes);
    for (int64_t b = 0; b < n_blocks; ++b) {
      std::memcpy(&out[b].d, group + scale_at(b0 + b, static_cast<int>(r % kInterleaveRows)), 2);
      std::memcpy(out[b].qs, group + quants_at(b0 + b, static_cast<int>(r % kInterleaveRows)), 16);
    }
  }
}

}  // namespace qinfer::kernels
