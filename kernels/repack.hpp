// Weights re-laid at load time for the gemv (decision record: docs/kernels.md, "Interleaved
// Q4_0" and "Interleaved Q4_K"). A matrix is stored in groups of kInterleaveRows rows; a group
// takes the bytes of its four rows (4 * row_bytes), so row-group g starts at
// data + 4 * g * row_bytes as in the file's layout, and one thread's rows are one sequential
// stream. The copy costs the tensor's size in memory (the file's pages become reclaimable).
//
// Q4_0, per pair of blocks (b, b+1) of a group:
//   8 x f16 scales  [r0 b, r1 b, r2 b, r3 b, r0 b+1, r1 b+1, r2 b+1, r3 b+1]   16 bytes
//   per row r: the 16 quant bytes of block b, then those of block b+1          4 x 32 bytes
// and the pairs in units (PairLayout::Units::kUnit of them, 4 for Q4_0): the unit's pairs'
// scales (and mins and qh) one after the other, then their quant bytes. So every quant load
// of a unit starts on a 64-byte line (a 144-byte pair left 3 of 4 loads split; docs/kernels.md,
// "Pairs in aligned units"). A row's last unit may hold fewer pairs.
// Q4_1, per pair of blocks: the 8 scales as Q4_0's, the 8 mins in the same order (16 bytes),
//   then the quant bytes as Q4_0's.
// Q5_0, per pair of blocks: the 8 scales as Q4_0's (16 bytes); per pair of rows (0, 1), (2, 3)
//   the low 16 bits of qh (values 0..15) of (r b, r b+1, r+1 b, r+1 b+1), then the high 16
//   bits in the same order (2 x 16 bytes: each half one 64-bit byte mask of a 512-bit
//   kernel's load of the two rows); then the quant bytes as Q4_0's (4 x 32 bytes).
// Q5_1, per pair of blocks: the scales and mins as Q4_1's (32 bytes), qh as Q5_0's (32), then
//   the quant bytes as Q4_0's. (Not for NEON.)
// IQ4_NL, per pair of blocks: as Q4_0's. (Not for NEON.)
// MXFP4, per pair of blocks: the 8 E8M0 scales in Q4_0's order (8 bytes), then the quant bytes
//   as Q4_0's (136 bytes a pair, the blocks' own size). (Not for NEON.)
// Q8_0, per pair of blocks: the 8 scales as Q4_0's (16 bytes), then per row r the 32 quant
//   bytes of block b, then those of block b+1 (4 x 64 bytes).
// Q4_K, per super-block of a group (576 bytes):
//   d of rows 0-3, dmin of rows 0-3 (f16)                                      16 bytes
//   scales[0..3] of rows 0-3, scales[4..7] of rows 0-3, scales[8..11] of rows 0-3   48 bytes
//   qs: per chunk j of 32 bytes (values 64j..64j+63), four 32-byte vectors m: the low 16
//   bytes hold bytes 4m..4m+3 of the chunk of rows 0-3, the high 16 bytes bytes
//   16+4m..16+4m+3                                                            512 bytes
// Q5_K, per super-block of a group (704 bytes): d, dmin and scales as Q4_K's (64 bytes), qh
//   arranged as one 32-byte chunk of Q4_K's qs (128 bytes), then qs as Q4_K's (512 bytes).
// Q2_K, per super-block of a group (336 bytes), with a 128-bit lane per row as Q6_K's below:
//   d of rows 0-3, dmin of rows 0-3 (16 bytes); per chain k, each row's 4 scale bytes of
//   sub-blocks 8n + 2k + b for lane d = 2n + b (4 x 16); per t = 0..3, qs: dword d of row r
//   holds bytes 16b + 4t..+3 of the row's qs for half n (4 x 64).
// Q3_K, per super-block of a group (440 bytes), for a kernel with a 128-bit lane per row as
//   Q2_K's: d of rows 0-3 (8 bytes); the scale bytes as Q4_K's (48); per t = 0..3, hmask:
//   row r's qword at 8r holds bytes 16b + 4t..+3 of the row's hmask as dword b (4 x 32; bits
//   4n + k serve both halves n); qs as Q2_K's (4 x 64).
// Q6_K, per super-block of a group (840 bytes), for a kernel with a 128-bit lane per row
//   (row r: bytes 16r..16r+15 of each 64) whose dword d = 2n + b covers sub-blocks 8n + 2k + b,
//   k = 0..3, of half n of the values: d of rows 0-3 (8 bytes); per k, each row's 4 scales of
//   those sub-blocks (4 x 16); per t = 0..3, qh: dword d of row r holds bytes 16b + 4t..+3 of
//   the row's qh for half n (4 x 64); per t, ql chunks k = 0, 1: dword d of row r holds bytes
//   32k + 16b + 4t..+3 of the row's ql for half n (4 x 128).
// IQ4_XS, per super-block of a group (544 bytes): d of rows 0-3 (8 bytes), scales_h of rows
//   0-3 (8), scales_l of rows 0-3 (16), then qs as Q4_K's (chunk j: sub-blocks 2j, 2j + 1).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/types.hpp"

namespace qinfer::kernels {

inline constexpr int kInterleaveRows = 4;

// A group's row as items (the pair types' pairs of blocks) in units of kUnit items: the
// unit's items' "meta" bytes (scales, mins, ...; kMeta each) one after the other, then their
// quant bytes (kQuant each). kUnit is the fewest items whose meta bytes fill whole 64-byte
// lines, so every quant load of a unit can start on a line when the group does. A row's last
// unit holds what is left (fewer items, its own offsets).
template <size_t kMeta, size_t kQuant>
struct MetaFirst {
  static constexpr size_t kMetaBytes = kMeta, kQuantBytes = kQuant;
  static constexpr size_t kItemBytes = kMeta + kQuant;
  static constexpr int64_t kUnit = [] {
    int64_t k = 1;
    while (k * kMeta % 64 != 0) ++k;
    return k;
  }();
  // Item p of a row of n items: where its meta and quant bytes start, from the row's start.
  static constexpr size_t meta(int64_t p) {
    return static_cast<size_t>(p) * kItemBytes - static_cast<size_t>(p % kUnit) * kQuant;
  }
  static constexpr size_t quants(int64_t p, int64_t n) {
    const int64_t first = p - p % kUnit;
    const int64_t items = n - first < kUnit ? n - first : kUnit;  // in p's unit
    return static_cast<size_t>(first) * kItemBytes + static_cast<size_t>(items) * kMeta +
           static_cast<size_t>(p % kUnit) * kQuant;
  }
};

// Where the pieces of row `row`'s block 2p + h (h = 0, 1) of a group lie, for the pair types
// (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4): the layout above, for interleave() and
// deinterleave(), the gemvs and the GEMM's in-place reading (repack_layout.hpp). A pair's
// scales, mins and qh (its "meta" bytes, at meta(p)) and its quant bytes (at quants(p)) are
// apart: d, m and qh are offsets from the first, qs from the second.
template <TensorType T>
struct PairLayout {
  static_assert(T == TensorType::Q4_0 || T == TensorType::Q4_1 || T == TensorType::Q5_0 ||
                T == TensorType::Q5_1 || T == TensorType::Q8_0 || T == TensorType::IQ4_NL ||
                T == TensorType::MXFP4);
  static constexpr bool kMins = T == TensorType::Q4_1 || T == TensorType::Q5_1;
  static constexpr bool kHighBits = T == TensorType::Q5_0 || T == TensorType::Q5_1;
  static constexpr size_t kQsBytes = T == TensorType::Q8_0 ? 32 : 16;  // a block's last bytes
  static constexpr size_t kExtraBytes =  // 8 mins (16 bytes), 4 x 2 qh words (32 bytes)
      (kMins ? 16 : 0) + (kHighBits ? 32 : 0);
  static constexpr size_t kScaleBytes = T == TensorType::MXFP4 ? 1 : 2;      // E8M0, else f16
  static constexpr size_t kScalesBytes = 2 * kInterleaveRows * kScaleBytes;  // a pair's eight
  static constexpr size_t kMetaBytes = kScalesBytes + kExtraBytes;           // scales, mins and qh
  static constexpr size_t kQuantBytes = kInterleaveRows * 2 * kQsBytes;
  // The pairs' units: 4 pairs for Q4_0, Q5_0, Q8_0 and IQ4_NL, 2 for Q4_1, 1 for Q5_1 (aligned
  // as it was), 8 for MXFP4. Units::meta(p) and Units::quants(p, n_pairs) place pair p.
  using Units = MetaFirst<kMetaBytes, kQuantBytes>;
  static_assert(kQuantBytes % 64 == 0);

  static constexpr size_t d(int h, int row) {
    return kScaleBytes * static_cast<size_t>(4 * h + row);
  }
  static constexpr size_t m(int h, int row) { return kScalesBytes + d(h, row); }  // Q4_1, Q5_1
  // Q5_0, Q5_1: the 16 bits of qh for values 16 half .. 16 half + 15 of block h of the row.
  static constexpr size_t kQhAt = kScalesBytes + (kMins ? 16 : 0);
  static constexpr size_t qh(int h, int row, int half) {
    return kQhAt + 16 * static_cast<size_t>(row / 2) + 8 * static_cast<size_t>(half) +
           4 * static_cast<size_t>(row % 2) + 2 * static_cast<size_t>(h);
  }
  static constexpr size_t qs(int h, int row) {
    return 2 * kQsBytes * static_cast<size_t>(row) + kQsBytes * static_cast<size_t>(h);
  }
};

// The most columns in any pair type's unit (MXFP4's 8 pairs): a column where a unit starts in
// every pair type's rows when it is a multiple of this.
inline constexpr int64_t kPairUnitColumns = 64 * PairLayout<TensorType::MXFP4>::Units::kUnit;
static_assert(kPairUnitColumns % (64 * PairLayout<TensorType::Q4_0>::Units::kUnit) == 0 &&
              kPairUnitColumns % (64 * PairLayout<TensorType::Q4_1>::Units::kUnit) == 0 &&
              kPairUnitColumns % (64 * PairLayout<TensorType::Q5_0>::Units::kUnit) == 0 &&
              kPairUnitColumns % (64 * PairLayout<TensorType::Q8_0>::Units::kUnit) == 0);

// Whether a matrix of this type and shape can be interleaved.
bool can_interleave(TensorType type, int64_t n_rows, int64_t n_cols);

// The whole matrix (n_rows rows at src, src_stride bytes apart) into dst, whose rows are
// row_size_bytes(type, n_cols) (the same size when the source rows are packed).
void interleave(TensorType type, const uint8_t* src, size_t src_stride, int64_t n_rows,
                int64_t n_cols, uint8_t* dst);

// Column tiles (decision record: docs/kernels.md, "Column tiles for long rows"). A gemv
// re-reads its activation row once per group of rows; a row longer than about 2048 values
// makes that row (4-25 KiB in the kernels' layouts) crowd the L1 cache the weight stream
// passes through, and the long-row matrices (a down projection) streamed 12-21% slower than
// short-row ones of the same bytes on Zen 5. So a copied matrix whose rows are longer than
// the tile width is stored in blocks of kTileRows rows, and each block as its panels of
// tile_cols columns (the last one narrower) one after the other; a panel's rows are in the
// matrix's layout (interleaved as above, or the file's). The gemv runs a block panel by panel
// (one panel's activations hot at a time, the weights still one stream) and adds the panels'
// sums in order; the GEMM takes the panels as slices of the reduction. Same bytes as the
// matrix: a panel of c columns has rows of row_size_bytes(type, c).
inline constexpr int64_t kTileRows = 64;    // = kGemmBlockRows (gemm.hpp): a GEMM unit's rows
inline constexpr int64_t kTileCols = 2048;  // the loader's default tile width
// Whether a matrix of this shape can be tiled tile_cols wide (tile_cols a multiple of 512, so
// every panel starts a GEMM chunk, a K type's super-block and a pair type's unit), with its
// panels interleaved or not.
bool can_tile(TensorType type, int64_t n_rows, int64_t n_cols, int64_t tile_cols, bool interleave);
// The whole matrix (rows of row_bytes at src, the file's layout) into dst (same size), tiled.
void tile(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
          int64_t tile_cols, bool interleave, uint8_t* dst);

// Rows [r0, r0 + n_rows) (r0 a multiple of kInterleaveRows), blocks of the type [b0, b0 +
// n_blocks) of an interleaved matrix back in the file's layout:
// row i at dst + i * dst_row_bytes.
void deinterleave(TensorType type, const uint8_t* data, size_t row_bytes, int64_t r0, int n_rows,
                  int64_t b0, int64_t n_blocks, uint8_t* dst, size_t dst_row_bytes);

}  // namespace qinfer::kernels
