#include "kernels/repack.hpp"

#include <cstddef>
#include <cstring>

#include "kernels/blocks.hpp"
#include "qinfer/error.hpp"

namespace qinfer::kernels {
namespace {

// ---- Q4_0, Q4_1 and Q5_0: per pair of blocks (b, b+1), 8 scales, then (Q4_1) 8 mins or
// (Q5_0) each row's two qh words, then each row's 32 quant bytes. Calls f(group offset,
// block offset, bytes) for each piece of row i's block b.
template <typename F>
void pair_places(TensorType type, int64_t b, int i, F&& f) {
  const size_t block_bytes = type_traits(type).type_size;
  const size_t pair = static_cast<size_t>(b / 2) * 2 * kInterleaveRows * block_bytes;
  const auto half = static_cast<size_t>(b % 2), row = static_cast<size_t>(i);
  f(pair + (half * 4 + row) * 2, 0, 2);  // d
  size_t qs_at = 16;
  if (type == TensorType::Q4_1) {
    f(pair + 16 + (half * 4 + row) * 2, offsetof(BlockQ4_1, m), 2);
    qs_at = 32;
  } else if (type == TensorType::Q5_0) {
    f(pair + 16 + 8 * row + 4 * half, offsetof(BlockQ5_0, qh), 4);
    qs_at = 48;
  }
  f(pair + qs_at + 32 * row + 16 * half, block_bytes - 16, 16);  // qs: a block's last 16 bytes
}

// ---- Q2_K, Q4_K and IQ4_XS: per super-block (4 x the block's bytes), see repack.hpp. Calls
// f(group offset, block offset, bytes) for each piece of row i's block, 1 to 4 bytes at a time.
template <typename F>
void superblock_places(TensorType type, int i, F&& f) {
  size_t qs_at = 0, qs_from = 0, qs_bytes = 128;
  if (type == TensorType::Q4_K || type == TensorType::Q5_K) {
    static_assert(offsetof(BlockQ5_K, scales) == offsetof(BlockQ4_K, scales));
    f(2 * i, offsetof(BlockQ4_K, d), 2);
    f(8 + 2 * i, offsetof(BlockQ4_K, dmin), 2);
    for (int part = 0; part < 3; ++part)  // scales 4 part .. 4 part + 3
      f(16 + 16 * part + 4 * i, offsetof(BlockQ4_K, scales) + 4 * part, 4);
    qs_at = 64;
    qs_from = offsetof(BlockQ4_K, qs);
    if (type == TensorType::Q5_K) {  // qh as one chunk of qs, before them
      for (size_t p = 0; p < 32; p += 4)
        f(64 + 32 * ((p % 16) / 4) + 16 * (p / 16) + 4 * i, offsetof(BlockQ5_K, qh) + p, 4);
      qs_at = 192;
      qs_from = offsetof(BlockQ5_K, qs);
    }
  } else if (type == TensorType::Q3_K) {
    f(2 * i, offsetof(BlockQ3_K, d), 2);
    for (int part = 0; part < 3; ++part)  // scales 4 part .. 4 part + 3
      f(8 + 16 * part + 4 * i, offsetof(BlockQ3_K, scales) + 4 * part, 4);
    for (size_t p = 0; p < 32; p += 4)  // hmask as one chunk of quant bytes
      f(56 + 32 * ((p % 16) / 4) + 16 * (p / 16) + 4 * i, offsetof(BlockQ3_K, hmask) + p, 4);
    qs_at = 184;
    qs_from = offsetof(BlockQ3_K, qs);
    qs_bytes = 64;
  } else if (type == TensorType::Q2_K) {
    f(2 * i, offsetof(BlockQ2_K, d), 2);
    f(8 + 2 * i, offsetof(BlockQ2_K, dmin), 2);
    for (int s = 0; s < 16; ++s)  // sub-blocks s, s + 1 (s even) of the 4 rows side by side
      f(16 + 8 * (s / 2) + 2 * i + s % 2, offsetof(BlockQ2_K, scales) + s, 1);
    qs_at = 80;
    qs_from = offsetof(BlockQ2_K, qs);
    qs_bytes = 64;
  } else {
    f(2 * i, offsetof(BlockIQ4_XS, d), 2);
    f(8 + 2 * i, offsetof(BlockIQ4_XS, scales_h), 2);
    f(16 + 4 * i, offsetof(BlockIQ4_XS, scales_l), 4);
    qs_at = 32;
    qs_from = offsetof(BlockIQ4_XS, qs);
  }
  for (size_t p = 0; p < qs_bytes; p += 4) {  // chunk j, half h (lane), word m
    const size_t j = p / 32, h = (p % 32) / 16, m = (p % 16) / 4;
    f(qs_at + 128 * j + 32 * m + 16 * h + 4 * i, qs_from + p, 4);
  }
}

// Every piece of row i's block b (of the type) in a group.
template <typename F>
void block_places(TensorType type, int64_t b, int i, F&& f) {
  if (type == TensorType::Q4_0 || type == TensorType::Q4_1 || type == TensorType::Q5_0)
    return pair_places(type, b, i, f);
  const size_t base = static_cast<size_t>(b) * kInterleaveRows * type_traits(type).type_size;
  superblock_places(type, i,
                    [&](size_t at, size_t in_block, size_t n) { f(base + at, in_block, n); });
}

}  // namespace

bool can_interleave(TensorType type, int64_t n_rows, int64_t n_cols) {
  if (n_rows % kInterleaveRows != 0) return false;
  if (type == TensorType::Q4_0 || type == TensorType::Q4_1 || type == TensorType::Q5_0)
    return n_cols % 64 == 0;
  if (type == TensorType::Q2_K || type == TensorType::Q3_K || type == TensorType::Q4_K ||
      type == TensorType::Q5_K || type == TensorType::IQ4_XS)
    return n_cols % 256 == 0;
  return false;
}

void interleave(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows,
                int64_t n_cols, uint8_t* dst) {
  if (!can_interleave(type, n_rows, n_cols))
    throw Error(ErrorCode::kInternal, "interleave: not an interleavable matrix");
  const size_t block_bytes = type_traits(type).type_size;
  const int64_t nb = n_cols / type_traits(type).block_size;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < n_rows; g += kInterleaveRows) {
    uint8_t* out = dst + static_cast<size_t>(g) * row_bytes;
    for (int i = 0; i < kInterleaveRows; ++i) {
      const uint8_t* row = src + (g + i) * row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        block_places(type, b, i, [&](size_t at, size_t in_block, size_t n) {
          std::memcpy(out + at, row + b * block_bytes + in_block, n);
        });
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
      block_places(type, b0 + b, i, [&](size_t at, size_t in_block, size_t n) {
        std::memcpy(out + b * block_bytes + in_block, group + at, n);
      });
    }
  }
}

}  // namespace qinfer::kernels
