// Where each byte of a block lies in an interleaved group (the layouts of repack.hpp), for
// interleave() and deinterleave() and for the GEMM decoders that read a group in place.
// Internal to the kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/blocks.hpp"
#include "kernels/repack.hpp"

namespace qinfer::kernels::repack_layout {

// Bytes of one block of each interleavable type, at compile time.
template <TensorType T>
constexpr size_t kBlockBytes = T == TensorType::Q8_0     ? sizeof(BlockQ8_0)
                               : T == TensorType::Q4_0   ? sizeof(BlockQ4_0)
                               : T == TensorType::Q4_1   ? sizeof(BlockQ4_1)
                               : T == TensorType::Q5_0   ? sizeof(BlockQ5_0)
                               : T == TensorType::Q5_1   ? sizeof(BlockQ5_1)
                               : T == TensorType::IQ4_NL ? sizeof(BlockIQ4_NL)
                               : T == TensorType::MXFP4  ? sizeof(BlockMXFP4)
                               : T == TensorType::Q2_K   ? sizeof(BlockQ2_K)
                               : T == TensorType::Q3_K   ? sizeof(BlockQ3_K)
                               : T == TensorType::Q4_K   ? sizeof(BlockQ4_K)
                               : T == TensorType::Q5_K   ? sizeof(BlockQ5_K)
                               : T == TensorType::Q6_K   ? sizeof(BlockQ6_K)
                                                         : sizeof(BlockIQ4_XS);

// The 32-element types interleaved by pairs of blocks.
template <TensorType T>
constexpr bool kPairType =
    T == TensorType::Q4_0 || T == TensorType::Q4_1 || T == TensorType::Q5_0 ||
    T == TensorType::Q5_1 || T == TensorType::Q8_0 || T == TensorType::IQ4_NL ||
    T == TensorType::MXFP4;

// ---- Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL and MXFP4 (PairLayout): calls f(group offset, block
// offset, bytes) for each piece of row i's block b, of a row of nb blocks.
template <TensorType T, typename F>
[[gnu::always_inline]] inline void pair_places(int64_t b, int i, int64_t nb, F&& f) {
  using L = PairLayout<T>;
  const size_t meta = L::Units::meta(b / 2), quants = L::Units::quants(b / 2, nb / 2);
  const int h = static_cast<int>(b % 2);
  static_assert(offsetof(BlockMXFP4, e) == 0);
  f(meta + L::d(h, i), 0, L::kScaleBytes);
  static_assert(offsetof(BlockQ4_1, m) == offsetof(BlockQ5_1, m));
  if constexpr (L::kMins) f(meta + L::m(h, i), offsetof(BlockQ4_1, m), 2);
  if constexpr (L::kHighBits) {
    constexpr size_t kQh =
        T == TensorType::Q5_0 ? offsetof(BlockQ5_0, qh) : offsetof(BlockQ5_1, qh);
    for (int half = 0; half < 2; ++half) f(meta + L::qh(h, i, half), kQh + 2 * half, 2);
  }
  f(quants + L::qs(h, i), kBlockBytes<T> - L::kQsBytes, L::kQsBytes);
}

// ---- Q6_K: a 128-bit lane per row (repack.hpp). Dword d = 2n + b of row i's lane in
// vector t holds bytes 16b + 4t.. of half n's 32 qh bytes, or of ql's chunk k (32 bytes).
template <typename F>
[[gnu::always_inline]] inline void q6_k_places(int i, F&& f) {
  f(2 * i, offsetof(BlockQ6_K, d), 2);
  for (int k = 0; k < 4; ++k) {  // the scales of chain k: sub-block 8n + 2k + b for lane d
    for (int d = 0; d < 4; ++d)
      f(8 + 16 * k + 4 * i + d, offsetof(BlockQ6_K, scales) + 8 * (d / 2) + 2 * k + d % 2, 1);
  }
  for (int t = 0; t < 4; ++t) {
    for (int d = 0; d < 4; ++d) {
      const size_t lane = 16 * i + 4 * d, half = d / 2, b = d % 2;
      f(72 + 64 * t + lane, offsetof(BlockQ6_K, qh) + 32 * half + 16 * b + 4 * t, 4);
      for (int k = 0; k < 2; ++k) {
        f(328 + 128 * t + 64 * k + lane,
          offsetof(BlockQ6_K, ql) + 64 * half + 32 * k + 16 * b + 4 * t, 4);
      }
    }
  }
}

// ---- Q2_K and Q3_K's quant bytes: a 128-bit lane per row, as Q6_K: lane d = 2n + b of row i
// holds, at step t (64 bytes at `at` + 64t), bytes 16b + 4t.. of half n's 32 qs bytes (four
// values 32 apart: chains 0-3).
template <typename F>
[[gnu::always_inline]] inline void row_lane_qs(size_t at, size_t from, int i, F&& f) {
  for (int t = 0; t < 4; ++t) {
    for (int d = 0; d < 4; ++d)
      f(at + 64 * t + 16 * i + 4 * d, from + 32 * (d / 2) + 16 * (d % 2) + 4 * t, 4);
  }
}

// ---- Q2_K: d, dmin, the scale bytes by chain, then qs in row lanes.
template <typename F>
[[gnu::always_inline]] inline void q2_k_places(int i, F&& f) {
  f(2 * i, offsetof(BlockQ2_K, d), 2);
  f(8 + 2 * i, offsetof(BlockQ2_K, dmin), 2);
  for (int k = 0; k < 4; ++k) {  // chain k's scale bytes: sub-block 8n + 2k + b for lane d
    for (int d = 0; d < 4; ++d)
      f(16 + 16 * k + 4 * i + d, offsetof(BlockQ2_K, scales) + 8 * (d / 2) + 2 * k + d % 2, 1);
  }
  row_lane_qs(80, offsetof(BlockQ2_K, qs), i, f);
}

// ---- Q3_K's hmask for row lanes: at step t (32 bytes at 56 + 32t), row i's qword holds, as
// dword b, bytes 16b + 4t.. of the hmask, whose bits 4n + k serve both halves n (lanes
// 2n + b) of chain k.
template <typename F>
[[gnu::always_inline]] inline void q3_k_hmask_places(int i, F&& f) {
  for (int t = 0; t < 4; ++t) {
    for (int b = 0; b < 2; ++b)
      f(56 + 32 * t + 8 * i + 4 * b, offsetof(BlockQ3_K, hmask) + 16 * b + 4 * t, 4);
  }
}

// ---- The super-block types (Q2_K, Q3_K, Q4_K, Q5_K, IQ4_XS): per super-block (4 x the block's
// bytes), see repack.hpp. Calls f(group offset, block offset, bytes) for each piece of row i's
// block, 1 to 4 bytes at a time.
template <TensorType T, typename F>
[[gnu::always_inline]] inline void superblock_places(int i, F&& f) {
  // Quant bytes (and Q5_K's qh): per chunk j of 32 bytes of a row, four 32-byte
  // vectors m whose low half holds bytes 4m..4m+3 of the chunk of rows 0-3, the high half
  // bytes 16+4m..16+4m+3.
  auto chunks = [&](size_t at, size_t from, size_t bytes) {
#pragma GCC unroll 32
    for (size_t p = 0; p < bytes; p += 4) {
      const size_t j = p / 32, h = (p % 32) / 16, m = (p % 16) / 4;
      f(at + 128 * j + 32 * m + 16 * h + 4 * i, from + p, 4);
    }
  };
  auto packed_scales = [&](size_t at, size_t from) {  // 12 bytes, in 3 parts of 4
    for (int part = 0; part < 3; ++part) f(at + 16 * part + 4 * i, from + 4 * part, 4);
  };
  if constexpr (T == TensorType::Q4_K || T == TensorType::Q5_K) {
    static_assert(offsetof(BlockQ5_K, scales) == offsetof(BlockQ4_K, scales));
    f(2 * i, offsetof(BlockQ4_K, d), 2);
    f(8 + 2 * i, offsetof(BlockQ4_K, dmin), 2);
    packed_scales(16, offsetof(BlockQ4_K, scales));
    if constexpr (T == TensorType::Q4_K) {
      chunks(64, offsetof(BlockQ4_K, qs), 128);
    } else {
      chunks(64, offsetof(BlockQ5_K, qh), 32);
      chunks(192, offsetof(BlockQ5_K, qs), 128);
    }
  } else if constexpr (T == TensorType::Q3_K) {
    f(2 * i, offsetof(BlockQ3_K, d), 2);
    packed_scales(8, offsetof(BlockQ3_K, scales));
    q3_k_hmask_places(i, f);
    row_lane_qs(184, offsetof(BlockQ3_K, qs), i, f);
  } else if constexpr (T == TensorType::Q6_K) {
    q6_k_places(i, f);
  } else if constexpr (T == TensorType::Q2_K) {
    q2_k_places(i, f);
  } else {  // IQ4_XS
    f(2 * i, offsetof(BlockIQ4_XS, d), 2);
    f(8 + 2 * i, offsetof(BlockIQ4_XS, scales_h), 2);
    f(16 + 4 * i, offsetof(BlockIQ4_XS, scales_l), 4);
    chunks(32, offsetof(BlockIQ4_XS, qs), 128);
  }
}

// Every piece of row i's block b (of the type, in a row of nb blocks) in a group. The place
// functions are forced inline, so each piece is a move of a constant size at a constant offset.
template <TensorType T, typename F>
[[gnu::always_inline]] inline void block_places(int64_t b, int i, int64_t nb, F&& f) {
  if constexpr (kPairType<T>) {
    pair_places<T>(b, i, nb, f);
  } else {
    const size_t base = static_cast<size_t>(b) * kInterleaveRows * kBlockBytes<T>;
    superblock_places<T>(i,
                         [&](size_t at, size_t in_block, size_t n) { f(base + at, in_block, n); });
  }
}

// The blocks of a row in a group's smallest whole unit of decoding: a pair of blocks or a
// super-block.
template <TensorType T>
constexpr int kUnitBlocks = kPairType<T> ? 2 : 1;

// Rows 0..kInterleaveRows-1 of decoding unit u of a group (at `group`, whose rows have
// n_units of them) back in the file's layout, row i's kUnitBlocks blocks at blocks + i *
// kUnitBlocks * kBlockBytes, each piece copied with a constant size. For the pair types,
// `group` must start one of the layout's units (PairLayout::Units).
template <TensorType T>
void gather_group(const uint8_t* group, int64_t u, int64_t n_units, uint8_t* blocks) {
  for (int i = 0; i < kInterleaveRows; ++i) {
    for (int b = 0; b < kUnitBlocks<T>; ++b) {
      // By value: a capture by reference is reloaded after every byte store, which may alias
      // it.
      block_places<T>(kUnitBlocks<T> * u + b, i, kUnitBlocks<T> * n_units,
                      [dst = blocks + (i * kUnitBlocks<T> + b) * kBlockBytes<T>, group](
                          size_t at, size_t in_block, size_t n) {
                        std::memcpy(dst + in_block, group + at, n);
                      });
    }
  }
}

}  // namespace qinfer::kernels::repack_layout
