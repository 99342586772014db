#include "kernels/repack.hpp"

#include <cstddef>
#include <cstring>

#include "kernels/blocks.hpp"
#include "qinfer/error.hpp"

namespace qinfer::kernels {
namespace {

// ---- Q4_0: per pair of blocks, 8 scales then each row's 32 quant bytes.
constexpr size_t kPairBytes = 2 * sizeof(BlockQ4_0) * kInterleaveRows;  // 144

// Where block b of row i (of its group) lives in a group's bytes.
size_t scale_at(int64_t b, int i) {
  return static_cast<size_t>(b / 2) * kPairBytes + static_cast<size_t>((b % 2) * 4 + i) * 2;
}
size_t quants_at(int64_t b, int i) {
  return static_cast<size_t>(b / 2) * kPairBytes + 16 + static_cast<size_t>(i) * 32 +
         static_cast<size_t>(b % 2) * 16;
}

// ---- Q4_K and IQ4_XS: per super-block (4 x the block's bytes), see repack.hpp. Calls f(group
// offset, block offset, bytes) for each piece of row i's block, 2 or 4 bytes at a time.
template <typename F>
void superblock_places(TensorType type, int i, F&& f) {
  size_t qs_at = 0, qs_from = 0;
  if (type == TensorType::Q4_K) {
    f(2 * i, offsetof(BlockQ4_K, d), 2);
    f(8 + 2 * i, offsetof(BlockQ4_K, dmin), 2);
    for (int part = 0; part < 3; ++part)  // scales 4 part .. 4 part + 3
      f(16 + 16 * part + 4 * i, offsetof(BlockQ4_K, scales) + 4 * part, 4);
    qs_at = 64;
    qs_from = offsetof(BlockQ4_K, qs);
  } else {
    f(2 * i, offsetof(BlockIQ4_XS, d), 2);
    f(8 + 2 * i, offsetof(BlockIQ4_XS, scales_h), 2);
    f(16 + 4 * i, offsetof(BlockIQ4_XS, scales_l), 4);
    qs_at = 32;
    qs_from = offsetof(BlockIQ4_XS, qs);
  }
  for (int p = 0; p < 128; p += 4) {  // chunk j, half h (lane), word m
    const int j = p / 32, h = (p % 32) / 16, m = (p % 16) / 4;
    f(qs_at + 128 * j + 32 * m + 16 * h + 4 * i, qs_from + p, 4);
  }
}

}  // namespace

bool can_interleave(TensorType type, int64_t n_rows, int64_t n_cols) {
  if (n_rows % kInterleaveRows != 0) return false;
  if (type == TensorType::Q4_0) return n_cols % 64 == 0;
  if (type == TensorType::Q4_K || type == TensorType::IQ4_XS) return n_cols % 256 == 0;
  return false;
}

void interleave(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows,
                int64_t n_cols, uint8_t* dst) {
  if (!can_interleave(type, n_rows, n_cols))
    throw Error(ErrorCode::kInternal, "interleave: not an interleavable matrix");
  const bool super = type != TensorType::Q4_0;
  const size_t block_bytes = type_traits(type).type_size;
  const int64_t nb = n_cols / type_traits(type).block_size;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < n_rows; g += kInterleaveRows) {
    uint8_t* out = dst + static_cast<size_t>(g) * row_bytes;
    for (int i = 0; i < kInterleaveRows; ++i) {
      const uint8_t* row = src + (g + i) * row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        if (super) {
          uint8_t* to = out + b * kInterleaveRows * block_bytes;
          const uint8_t* from = row + b * block_bytes;
          superblock_places(type, i, [&](size_t at, size_t in_block, size_t n) {
            std::memcpy(to + at, from + in_block, n);
          });
          continue;
        }
        const auto* q = reinterpret_cast<const BlockQ4_0*>(row) + b;
        std::memcpy(out + scale_at(b, i), &q->d, 2);
        std::memcpy(out + quants_at(b, i), q->qs, 16);
      }
    }
  }
}

void deinterleave(TensorType type, const uint8_t* data, size_t row_bytes, int64_t r0, int n_rows,
                  int64_t b0, int64_t n_blocks, uint8_t* dst, size_t dst_row_bytes) {
  const size_t block_bytes = type_traits(type).type_size;
  for (int k = 0; k < n_rows; ++k) {
    const int64_t r = r0 + k;
    const int i = static_cast<int>(r % kInterleaveRows);
    const uint8_t* group = data + static_cast<size_t>(r - i) * row_bytes;
    uint8_t* out = dst + static_cast<size_t>(k) * dst_row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b) {
      if (type != TensorType::Q4_0) {
        const uint8_t* from = group + (b0 + b) * kInterleaveRows * block_bytes;
        uint8_t* to = out + b * block_bytes;
        superblock_places(type, i, [&](size_t at, size_t in_block, size_t n) {
          std::memcpy(to + in_block, from + at, n);
        });
        continue;
      }
      auto* q = reinterpret_cast<BlockQ4_0*>(out) + b;
      std::memcpy(&q->d, group + scale_at(b0 + b, i), 2);
      std::memcpy(q->qs, group + quants_at(b0 + b, i), 16);
    }
  }
}

}  // namespace qinfer::kernels
