// Packed gemv copies (decision record: docs/kernels.md, "Packed IQ1_S and IQ1_M"). A type
// whose file blocks decode slowly may have a second, wider copy of each matrix made at load
// time for the one-token gemv and the prompts' GEMM (packed_gemm_decoder); get_row keeps
// reading the file's blocks.
//
// IQ1_S and IQ1_M: each value is d/8 * m * (8 (c - 1) + t), with c = grid level + 1 (0..2),
// m = 2s + 1 the odd sub-scale of its 16 values (IQ1_S: of its 32) and t = +1 or -1 its
// shift (per 8 values; IQ1_S: per 32). A packed row holds its blocks' codes, 64 bytes each,
// then their metadata (PackedIq1Meta, 16 bytes each), padded to a multiple of 64 bytes:
// 80 bytes per 256 values, against the file's 50 (IQ1_S) or 56 (IQ1_M).
// The codes are in a lane order (kernels/lane_layout.hpp): position p = 64g + 4i + j holds
// value 16i + 4g + j, its c in bits 2g..2g+1 of code byte 4i + j. So a 32-bit lane i of a
// vpdpbusd over the four 64-byte chunks sums the 16 values of one sub-scale.
//
// The grid types IQ3_S, IQ3_XXS, IQ2_XXS, IQ2_XS and IQ2_S (docs/kernels.md, "Nibble-packed
// grid types"): each value is unit * m * v with m = 2s + 1 the odd sub-scale of its 32 values
// (IQ2_XS, IQ2_S: of its 16), unit a fixed fraction of d, and v one of at most 16 values, its
// grid level and sign, coded as a nibble (NibbleCodes). A packed row holds its blocks' codes,
// 128 bytes each, then their metadata (f32 unit, then the sub-scales: nibble k of a 32-bit word
// is lane 2k's s, and the types with a sub-scale per 16 add a second word for the odd lanes),
// padded to a multiple of 64 bytes. Per 256 values 136 bytes (140 per 16), against the file's
// 110 (IQ3_S, 1.24x), 98 (IQ3_XXS, 1.39x), 82 (IQ2_S, 1.71x), 74 (IQ2_XS, 1.89x) and 66
// (IQ2_XXS, 2.06x). Position p of the lane order above has its nibble in bits 4 (g % 2)..+3 of
// code byte 64 (g / 2) + 4i + j, so the four vpdpbusd chunks are the low and the high nibbles of
// the two 64-byte halves.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/gemm.hpp"
#include "kernels/types.hpp"

namespace qinfer::kernels {

struct PackedIq1Meta {
  uint8_t scales[8];  // m of lane k in the low nibble of byte k, of lane k + 8 in the high one
  uint32_t plus;      // bit b: values 8b..8b+7 have t = +1
  float unit;         // d / 8
};
static_assert(sizeof(PackedIq1Meta) == 16);

// A nibble-packed type's values by code (unused codes 0), the bias that makes every v + bias
// non-negative (vpdpbusd's unsigned operand), whether a sub-scale covers 16 values (else 32),
// and the unit as a fraction of d.
struct NibbleCodes {
  int8_t v[16];
  int bias;
  bool per16;
  float unit;
};
inline constexpr NibbleCodes kIq3sCodes = {
    {-15, -13, -11, -9, -7, -5, -3, -1, 1, 3, 5, 7, 9, 11, 13, 15}, 15, false, 1.0f};
inline constexpr NibbleCodes kIq3xxsCodes = {
    {-62, -52, -44, -36, -28, -20, -12, -4, 4, 12, 20, 28, 36, 44, 52, 62}, 62, false, 0.25f};
inline constexpr NibbleCodes kIq2Codes = {{-43, -25, -8, 8, 25, 43}, 43, false, 0.125f};
inline constexpr NibbleCodes kIq2PerSixteenCodes = {{-43, -25, -8, 8, 25, 43}, 43, true, 0.125f};
constexpr const NibbleCodes* nibble_codes(TensorType type) {
  switch (type) {
    case TensorType::IQ3_S:
      return &kIq3sCodes;  // v = 2n - 15
    case TensorType::IQ3_XXS:
      return &kIq3xxsCodes;
    case TensorType::IQ2_XXS:
      return &kIq2Codes;
    case TensorType::IQ2_XS:
    case TensorType::IQ2_S:
      return &kIq2PerSixteenCodes;
    default:
      return nullptr;
  }
}
constexpr size_t nibble_meta_bytes(const NibbleCodes& c) { return c.per16 ? 12 : 8; }
// How many codes a type uses: 0 .. n - 1 (no value is 0, so the first 0 entry ends them).
// The IQ2 types use 6, so bit 3 of every nibble is clear: a vpshufb of a code byte, whose bit 7
// is the other nibble's bit 3, then needs no AND (the gemvs' kSmallCodes).
constexpr int nibble_code_count(const NibbleCodes& c) {
  int n = 0;
  while (n < 16 && c.v[n] != 0) ++n;
  return n;
}

// Whether matrices of this type and width have a packed layout.
bool can_pack(TensorType type, int64_t n_cols);
size_t packed_row_bytes(TensorType type, int64_t n_cols);

// Every row of the matrix (n_rows rows of row_bytes at src) into dst, n_rows *
// packed_row_bytes(type, n_cols) bytes.
void pack(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
          uint8_t* dst);
// The same bytes by way of each block's reference decoding and a code per value: pack works
// from the file's grid indices, signs and shifts instead, and is checked against it.
void pack_reference(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows,
                    int64_t n_cols, uint8_t* dst);

// Rearranges Q8_K activation rows of n values in place into the packed codes' order (their
// block sums, per 16 values, stay as they are).
void prepare_packed_activation(void* act, int64_t n);

// The GEMM's canonical decoder (kernels/gemm.hpp) of a whole packed row of the type (nullptr:
// none), so that prompts read the packed copy too and the file's blocks can leave memory: the
// same integers and scales, to the bit, as the type's decoder of the file's blocks.
DecodeGroupsFn packed_gemm_decoder(TensorType type);

// The reference dot of a packed row of n values against a prepared activation row:
// per block the exact integer sum of m * (v . a) over its lanes (IQ1: v = u - 9 with
// u = 8c + 1 + t), times the unit and the activations' d.
float packed_dot_ref(TensorType type, int64_t n, const uint8_t* w, const void* act);

// TQ1_0 rows re-coded as TQ2_0 rows (n_rows rows of row_bytes at src into dst, rows of
// row_size_bytes(TQ2_0, n_cols)): the same f16 d and values -1/0/+1, two bits each instead
// of five to the byte, so every TQ2_0 kernel reads them and dequantization gives the same
// floats. 66 bytes per 256 values against 54.
void tq1_0_to_tq2_0(const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
                    uint8_t* dst);

}  // namespace qinfer::kernels
