#include "kernels/repack.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/blocks.hpp"
#include "kernels/repack_layout.hpp"
#include "kernels/threads.hpp"
#include "qinfer/error.hpp"

namespace qinfer::kernels {
namespace {

using namespace repack_layout;

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
    case TensorType::Q5_1:
      return f.template operator()<TensorType::Q5_1>();
    case TensorType::IQ4_NL:
      return f.template operator()<TensorType::IQ4_NL>();
    case TensorType::MXFP4:
      return f.template operator()<TensorType::MXFP4>();
    case TensorType::Q2_K:
      return f.template operator()<TensorType::Q2_K>();
    case TensorType::Q3_K:
      return f.template operator()<TensorType::Q3_K>();
    case TensorType::Q4_K:
      return f.template operator()<TensorType::Q4_K>();
    case TensorType::Q5_K:
      return f.template operator()<TensorType::Q5_K>();
    case TensorType::Q6_K:
      return f.template operator()<TensorType::Q6_K>();
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
      type == TensorType::Q5_1 || type == TensorType::Q8_0 || type == TensorType::IQ4_NL ||
      type == TensorType::MXFP4)
    return n_cols % 64 == 0;
  if (type == TensorType::Q2_K || type == TensorType::Q3_K || type == TensorType::Q4_K ||
      type == TensorType::Q5_K || type == TensorType::Q6_K || type == TensorType::IQ4_XS)
    return n_cols % 256 == 0;
  return false;
}

void interleave(TensorType type, const uint8_t* src, size_t src_stride, int64_t n_rows,
                int64_t n_cols, uint8_t* dst) {
  if (!can_interleave(type, n_rows, n_cols))
    throw Error(ErrorCode::kInternal, "interleave: not an interleavable matrix");
  const int64_t nb = n_cols / type_traits(type).block_size;
  const size_t row_bytes = row_size_bytes(type, n_cols);
  with_type(type, [&]<TensorType T>() {
    parallel([&](Team& team) {
      const auto [g0, g1] = team.share(n_rows / kInterleaveRows);
      for (int64_t g = g0 * kInterleaveRows; g < g1 * kInterleaveRows; g += kInterleaveRows) {
        uint8_t* out = dst + static_cast<size_t>(g) * row_bytes;
        for (int i = 0; i < kInterleaveRows; ++i) {
          const uint8_t* row = src + (g + i) * src_stride;
          for (int64_t b = 0; b < nb; ++b) {
            block_places<T>(
                b, i, nb,
                [out, from = row + b * kBlockBytes<T>](size_t at, size_t in_block, size_t n) {
                  std::memcpy(out + at, from + in_block, n);
                });
          }
        }
      }
    });
  });
}

bool can_tile(TensorType type, int64_t n_rows, int64_t n_cols, int64_t tile_cols, bool interleave) {
  if (tile_cols <= 0 || tile_cols % 512 != 0 || n_cols <= tile_cols || n_rows <= 0) return false;
  if (n_cols % type_traits(type).block_size != 0) return false;
  // Every panel is then a whole number of blocks, and (with can_interleave's column rule) of
  // pairs or super-blocks; every block of rows but the last has kTileRows, a multiple of the
  // groups' rows, and the last one n_rows % kTileRows, also one when n_rows is.
  return !interleave || can_interleave(type, n_rows, n_cols);
}

void tile(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
          int64_t tile_cols, bool interleave_panels, uint8_t* dst) {
  if (!can_tile(type, n_rows, n_cols, tile_cols, interleave_panels))
    throw Error(ErrorCode::kInternal, "tile: not a tileable matrix");
  const int64_t n_blocks = (n_rows + kTileRows - 1) / kTileRows;
  parallel([&](Team& team) {  // by blocks of rows (the page faults split too)
    const auto [b0, b1] = team.share(n_blocks);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * kTileRows, rows = std::min(kTileRows, n_rows - r0);
      uint8_t* out = dst + static_cast<size_t>(r0) * row_bytes;
      for (int64_t c0 = 0; c0 < n_cols; c0 += tile_cols) {
        const int64_t cols = std::min(tile_cols, n_cols - c0);
        const size_t panel_row = row_size_bytes(type, cols);
        const uint8_t* from = src + static_cast<size_t>(r0) * row_bytes + row_size_bytes(type, c0);
        if (interleave_panels) {
          interleave(type, from, row_bytes, rows, cols, out);  // nested: on this thread
        } else {
          for (int64_t r = 0; r < rows; ++r)
            std::memcpy(out + r * panel_row, from + r * row_bytes, panel_row);
        }
        out += static_cast<size_t>(rows) * panel_row;
      }
    }
  });
}

void deinterleave(TensorType type, const uint8_t* data, size_t row_bytes, int64_t r0, int n_rows,
                  int64_t b0, int64_t n_blocks, uint8_t* dst, size_t dst_row_bytes) {
  const int64_t nb = static_cast<int64_t>(row_bytes / type_traits(type).type_size);
  with_type(type, [&]<TensorType T>() {
    for (int k = 0; k < n_rows; ++k) {
      const int64_t r = r0 + k;
      const int i = static_cast<int>(r % kInterleaveRows);
      const uint8_t* group = data + static_cast<size_t>(r - i) * row_bytes;
      uint8_t* out = dst + static_cast<size_t>(k) * dst_row_bytes;
      for (int64_t b = 0; b < n_blocks; ++b) {
        // Captures by value: by reference they are reloaded after every byte store.
        block_places<T>(
            b0 + b, i, nb,
            [to = out + b * kBlockBytes<T>, group](size_t at, size_t in_block, size_t n) {
              std::memcpy(to + in_block, group + at, n);
            });
      }
    }
  });
}

}  // namespace qinfer::kernels
