#include "kernels/repack.hpp"

#include <cstddef>
#include <cstring>

#include "kernels/blocks.hpp"
#include "kernels/threads.hpp"
#include "qinfer/error.hpp"

namespace qinfer::kernels {
namespace {

// Bytes of one block of each interleavable type, at compile time.
template <TensorType T>
constexpr size_t kBlockBytes = T == TensorType::Q8_0   ? sizeof(BlockQ8_0)
                               : T == TensorType::Q4_0 ? sizeof(BlockQ4_0)
                               : T == TensorType::Q4_1 ? sizeof(BlockQ4_1)
                               : T == TensorType::Q5_0 ? sizeof(BlockQ5_0)
                               : T == TensorType::Q2_K ? sizeof(BlockQ2_K)
                               : T == TensorType::Q3_K ? sizeof(BlockQ3_K)
                               : T == TensorType::Q4_K ? sizeof(BlockQ4_K)
                               : T == TensorType::Q5_K ? sizeof(BlockQ5_K)
                                                       : sizeof(BlockIQ4_XS);

// The 32-element types interleaved by pairs of blocks.
template <TensorType T>
constexpr bool kPairType = T == TensorType::Q4_0 || T == TensorType::Q4_1 ||
                           T == TensorType::Q5_0 || T == TensorType::Q8_0;

// ---- Q4_0, Q4_1, Q5_0 and Q8_0 (PairLayout): calls f(group offset, block offset, bytes) for
// each piece of row i's block b.
template <TensorType T, typename F>
void pair_places(int64_t b, int i, F&& f) {
  using L = PairLayout<T>;
  const size_t pair = static_cast<size_t>(b / 2) * L::kPairBytes;
  const int h = static_cast<int>(b % 2);
  f(pair + L::d(h, i), 0, 2);
  if constexpr (T == TensorType::Q4_1) {
    f(pair + L::m(h, i), offsetof(BlockQ4_1, m), 2);
  } else if constexpr (T == TensorType::Q5_0) {
    f(pair + L::qh(h, i), offsetof(BlockQ5_0, qh), 4);
  }
  f(pair + L::qs(h, i), kBlockBytes<T> - L::kQsBytes, L::kQsBytes);
}

// ---- The super-block types (Q2_K, Q3_K, Q4_K, Q5_K, IQ4_XS): per super-block (4 x the block's
// bytes), see repack.hpp. Calls f(group offset, block offset, bytes) for each piece of row i's
// block, 1 to 4 bytes at a time.
template <TensorType T, typename F>
void superblock_places(int i, F&& f) {
  // Quant bytes (and Q5_K's qh, Q3_K's hmask): per chunk j of 32 bytes of a row, four 32-byte
  // vectors m whose low half holds bytes 4m..4m+3 of the chunk of rows 0-3, the high half
  // bytes 16+4m..16+4m+3.
  auto chunks = [&](size_t at, size_t from, size_t bytes) {
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
    chunks(56, offsetof(BlockQ3_K, hmask), 32);
    chunks(184, offsetof(BlockQ3_K, qs), 64);
  } else if constexpr (T == TensorType::Q2_K) {
    f(2 * i, offsetof(BlockQ2_K, d), 2);
    f(8 + 2 * i, offsetof(BlockQ2_K, dmin), 2);
    for (int s = 0; s < 16; ++s)  // sub-blocks s, s + 1 (s even) of the 4 rows side by side
      f(16 + 8 * (s / 2) + 2 * i + s % 2, offsetof(BlockQ2_K, scales) + s, 1);
    chunks(80, offsetof(BlockQ2_K, qs), 64);
  } else {  // IQ4_XS
    f(2 * i, offsetof(BlockIQ4_XS, d), 2);
    f(8 + 2 * i, offsetof(BlockIQ4_XS, scales_h), 2);
    f(16 + 4 * i, offsetof(BlockIQ4_XS, scales_l), 4);
    chunks(32, offsetof(BlockIQ4_XS, qs), 128);
  }
}

// Every piece of row i's block b (of the type) in a group.
template <TensorType T, typename F>
void block_places(int64_t b, int i, F&& f) {
  if constexpr (kPairType<T>) {
    pair_places<T>(b, i, f);
  } else {
    const size_t base = static_cast<size_t>(b) * kInterleaveRows * kBlockBytes<T>;
    superblock_places<T>(i,
                         [&](size_t at, size_t in_block, size_t n) { f(base + at, in_block, n); });
  }
}

// Runs f.template operator()<T>() with the matrix type as a constant, so the copies of
// block_places have constant sizes the compiler inlines.
template <typename F>
void with_type(TensorType type, F&& f) {
  switch (type) {
    case TensorType::Q8_0:
      return f.template operator()<TensorType::Q8_0>();
    case TensorType::Q4_0:
      return f.template operator()<TensorType::Q4_0>();
    case TensorType::Q4_1:
      return f.template operator()<TensorType::Q4_1>();
    case TensorType::Q5_0:
      return f.template operator()<TensorType::Q5_0>();
    case TensorType::Q2_K:
      return f.template operator()<TensorType::Q2_K>();
    case TensorType::Q3_K:
      return f.template operator()<TensorType::Q3_K>();
    case TensorType::Q4_K:
      return f.template operator()<TensorType::Q4_K>();
    case TensorType::Q5_K:
      return f.template operator()<TensorType::Q5_K>();
    case TensorType::IQ4_XS:
      return f.template operator()<TensorType::IQ4_XS>();
    default:
      throw Error(ErrorCode::kInternal, "repack: not an interleavable type");
  }
}

}  // namespace

bool can_interleave(TensorType type, int64_t n_rows, int64_t n_cols) {
  if (n_rows % kInterleaveRows != 0) return false;
  if (type == TensorType::Q4_0 || type == TensorType::Q4_1 || type == TensorType::Q5_0 ||
      type == TensorType::Q8_0)
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
  const int64_t nb = n_cols / type_traits(type).block_size;
  with_type(type, [&]<TensorType T>() {
    parallel([&](Team& team) {
      const auto [g0, g1] = team.share(n_rows / kInterleaveRows);
      for (int64_t g = g0 * kInterleaveRows; g < g1 * kInterleaveRows; g += kInterleaveRows) {
        uint8_t* out = dst + static_cast<size_t>(g) * row_bytes;
        for (int i = 0; i < kInterleaveRows; ++i) {
          const uint8_t* row = src + (g + i) * row_bytes;
          for (int64_t b = 0; b < nb; ++b) {
            block_places<T>(b, i, [&](size_t at, size_t in_block, size_t n) {
              std::memcpy(out + at, row + b * kBlockBytes<T> + in_block, n);
            });
          }
        }
      }
    });
  });
}

void deinterleave(TensorType type, const uint8_t* data, size_t row_bytes, int64_t r0, int n_rows,
                  int64_t b0, int64_t n_blocks, uint8_t* dst, size_t dst_row_bytes) {
  with_type(type, [&]<TensorType T>() {
    for (int k = 0; k < n_rows; ++k) {
      const int64_t r = r0 + k;
      const int i = static_cast<int>(r % kInterleaveRows);
      const uint8_t* group = data + static_cast<size_t>(r - i) * row_bytes;
      uint8_t* out = dst + static_cast<size_t>(k) * dst_row_bytes;
      for (int64_t b = 0; b < n_blocks; ++b) {
        block_places<T>(b0 + b, i, [&](size_t at, size_t in_block, size_t n) {
          std::memcpy(out + b * kBlockBytes<T> + in_block, group + at, n);
        });
      }
    }
  });
}

}  // namespace qinfer::kernels
