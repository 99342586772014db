// Packed gemv copies (decision record: docs/kernels.md, "Packed IQ1_S and IQ1_M"). A type
// whose file blocks decode slowly may have a second, wider copy of each matrix made at load
// time for the one-token gemv; the GEMM and get_row keep reading the file's blocks.
//
// IQ1_S and IQ1_M: each value is d/8 * m * (8 (c - 1) + t), with c = grid level + 1 (0..2),
// m = 2s + 1 the odd sub-scale of its 16 values (IQ1_S: of its 32) and t = +1 or -1 its
// shift (per 8 values; IQ1_S: per 32). A packed row holds its blocks' codes, 64 bytes each,
// then their metadata (PackedIq1Meta, 16 bytes each), padded to a multiple of 64 bytes:
// 80 bytes per 256 values, against the file's 50 (IQ1_S) or 56 (IQ1_M).
// The codes are in a lane order (kernels/lane_layout.hpp): position p = 64g + 4i + j holds
// value 16i + 4g + j, its c in bits 2g..2g+1 of code byte 4i + j. So a 32-bit lane i of a
// vpdpbusd over the four 64-byte chunks sums the 16 values of one sub-scale.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/types.hpp"

namespace qinfer::kernels {

struct PackedIq1Meta {
  uint8_t scales[8];  // m of lane k in the low nibble of byte k, of lane k + 8 in the high one
  uint32_t plus;      // bit b: values 8b..8b+7 have t = +1
  float unit;         // d / 8
};
static_assert(sizeof(PackedIq1Meta) == 16);

// Whether matrices of this type and width have a packed layout.
bool can_pack(TensorType type, int64_t n_cols);
size_t packed_row_bytes(TensorType type, int64_t n_cols);

// Every row of the matrix (n_rows rows of row_bytes at src) into dst, n_rows *
// packed_row_bytes(type, n_cols) bytes.
void pack(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
          uint8_t* dst);

// Rearranges Q8_K activation rows of n values in place into the packed codes' order (their
// block sums, per 16 values, stay as they are).
void prepare_packed_activation(void* act, int64_t n);

// The reference dot of a packed row of n values against a prepared activation row:
// per block the exact integer sum of m * (u . a - 9 sum(a)) over its lanes, with
// u = 8c + 1 + t, times d/8 and the activations' d.
float packed_dot_ref(int64_t n, const uint8_t* w, const void* act);

// TQ1_0 rows re-coded as TQ2_0 rows (n_rows rows of row_bytes at src into dst, rows of
// row_size_bytes(TQ2_0, n_cols)): the same f16 d and values -1/0/+1, two bits each instead
// of five to the byte, so every TQ2_0 kernel reads them and dequantization gives the same
// floats. 66 bytes per 256 values against 54.
void tq1_0_to_tq2_0(const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
                    uint8_t* dst);

}  // namespace qinfer::kernels
