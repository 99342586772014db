// GEMM for a batch of tokens (prompt processing): each weight row is decoded once per
// matmul into a panel of small integers (or floats) and multiplied with every token
// (decision record: docs/kernels.md, "GEMM").
//
// Canonical form. Every quantized type decodes to groups of 16 or 32 elements with
//   weight = scale * q - min,   q an int8,
// and the activations are quantized once per matmul by the type's own activation quantizer
// (ggml's vec_dot_type: Q8_0, Q8_1 or Q8_K, so the integers are those of the gemv path and of
// llama.cpp), then laid out as int8 with a float scale per 32 (d * q ~ x) and d * sum(q) per
// 16. A group's dot is an exact integer sum of q * q_x, scaled by scale * d, minus
// min * d * sum(q_x). Float weights take the activations rounded as their dot's type
// (f16 or bf16), as ggml does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/repack.hpp"
#include "kernels/types.hpp"

namespace qinfer::kernels {

// Rows of one panel: the int32 lanes of a 256-bit register, one row per lane.
inline constexpr int kPanelRows = 8;
// Rows per GEMM work unit (kGemmBlockRows / kPanelRows panels decoded together).
inline constexpr int kGemmBlockRows = 64;
// Tokens per tile of the packed float activations (a 16-row x 6-token register tile).
inline constexpr int kFloatTile = 6;

// Decodes one weight row of n elements (n a multiple of the type's block size) to the
// canonical form: q (n), and per group of `group` elements its scale and min.
using DecodeGroupsFn = void (*)(const void* row, int64_t n, int8_t* q, float* scale, float* min);
// The same for the kInterleaveRows rows of an interleaved group (kernels/repack.hpp) whose
// bytes for the first element start at `group`, read in place and in order: row i's values
// at q + i * n, its scales and mins at scale and min + i * n / (the type's group size).
using DecodeInterleavedFn = void (*)(const uint8_t* group, int64_t n, int8_t* q, float* scale,
                                     float* min);

// Where a panel's weight rows come from: the file's layout, an interleaved group read in place
// (the table's gemm_decode_interleaved), or a packed copy's whole rows (kernels/pack.hpp,
// packed_gemm_decoder; such a panel always spans the whole reduction dimension, since a
// packed row keeps its blocks' metadata after all of their codes).
enum class PanelRows { kFile, kInterleaved, kPacked };

// How a panel reads its weight rows at w: row r at w + r * row_bytes by `decoder` (the file's
// layout, or a packed copy's), or, with `interleaved` set, a group of rows at a time in place.
struct GemmRows {
  DecodeGroupsFn decoder = nullptr;
  DecodeInterleavedFn interleaved = nullptr;
  size_t row_bytes = 0;
  // Rows [0, n_rows) of n elements (n_groups groups): row r's values at q + r * n, its
  // scales and mins at scale and min + r * n_groups.
  void decode(const uint8_t* w, int n_rows, int64_t n, int64_t n_groups, int8_t* q, float* scale,
              float* min) const {
    const int step = interleaved != nullptr ? kInterleaveRows : 1;
    for (int r = 0; r < n_rows; r += step) {
      const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
      const int64_t at = r * n_groups;
      if (interleaved != nullptr) {
        interleaved(row, n, q + r * n, scale + at, min + at);
      } else {
        decoder(row, n, q + r * n, scale + at, min + at);
      }
    }
  }
};

struct GemmTypeInfo {
  DecodeGroupsFn decode = nullptr;  // nullptr: a float type (F32, F16, BF16) or none
  int group = 32;                   // elements per scale
  bool has_min = false;             // some min is nonzero
  // |q| may exceed 64: the AVX2 kernel multiplies by |q| with the signs moved to the
  // activations, where the narrow types use unsigned activations (q + 128).
  bool wide = false;
  int max_abs_q = 127;  // bound of |q|, for how many products may sum in 16 bits
};

// The canonical decoder of a type (decode == nullptr for types without one).
const GemmTypeInfo& gemm_type_info(TensorType type);
bool is_float_type(TensorType type);

// The activations of one GEMM, or a slice of them: columns [k0, k0 + n_cols) of rows
// `stride` elements long (the pointers start at column k0 of token 0; token t's row at
// t * stride, its scales at t * stride / 32 and sums at t * stride / 16).
struct GemmActivations {
  int64_t n_tokens = 0, n_cols = 0, stride = 0;
  // Float types: rounded as their dot's type and packed in tiles of kFloatTile tokens, so a
  // micro-kernel reads one stream: token t, column k at
  // x[(t / kFloatTile) * stride * kFloatTile + k * kFloatTile + t % kFloatTile].
  const float* x = nullptr;
  const int8_t* q = nullptr;     // quantized values
  const uint8_t* qu = nullptr;   // q + 128
  const float* d = nullptr;      // scale per 32
  const float* sum16 = nullptr;  // d * sum(q) per 16
  // BF16 weights: the same tiles also as bf16 pairs (two columns in one 32-bit word, as
  // vdpbf16ps multiplies them): token t, columns 2p and 2p + 1 at
  // xb[(t / kFloatTile) * (stride / 2) * kFloatTile + p * kFloatTile + t % kFloatTile].
  const uint32_t* xb = nullptr;
  // Columns [k0, k1) of this slice (k0, k1 multiples of 32).
  GemmActivations slice(int64_t k0, int64_t k1) const {
    GemmActivations s = *this;
    s.n_cols = k1 - k0;
    s.x = x != nullptr ? x + k0 * kFloatTile : nullptr;
    s.xb = xb != nullptr ? xb + k0 / 2 * kFloatTile : nullptr;
    s.q = q != nullptr ? q + k0 : nullptr;
    s.qu = qu != nullptr ? qu + k0 : nullptr;
    s.d = d != nullptr ? d + k0 / 32 : nullptr;
    s.sum16 = sum16 != nullptr ? sum16 + k0 / 16 : nullptr;
    return s;
  }
};

struct KernelTable;

// Owns the activations of one activation type (scratch kept between calls).
struct GemmActivationBuffer {
  TensorType type = TensorType::Q8_0;  // Q8_0, Q8_1, Q8_K; or F32, F16, BF16 for float weights
  std::vector<uint8_t> blocks;         // (n_tokens) rows in the type's own format
  std::vector<int8_t> q;
  std::vector<uint8_t> qu;
  std::vector<float> d, sum16, x;
  std::vector<uint32_t> xb;  // BF16 only
  GemmActivations view(const float* x, int64_t n_tokens, int64_t n_cols) const;
};

// Sizes buf for n_tokens rows of activation type `type`.
void resize_gemm_activations(GemmActivationBuffer& buf, TensorType type, int64_t n_tokens,
                             int64_t n_cols);
// Rows [t0, t1) of x (n_cols a multiple of 256 for Q8_K, of 32 otherwise) through the table's
// quantizer of buf.type, then into the GEMM's layout.
void prepare_gemm_rows(const KernelTable& k, const float* x, int64_t n_cols, int64_t t0, int64_t t1,
                       GemmActivationBuffer& buf);

// y[t * y_stride + r] (= or +=, by `accumulate`) for rows r < n_rows (at most kGemmBlockRows) of
// the weight rows at w (starting at the slice's first column; row_bytes apart) and every
// token of a, over the a.n_cols columns of the slice. `scratch` holds the decoded panel. With
// PanelRows::kInterleaved, w is the first group of an interleaved matrix (row r of the panel is
// row r % kInterleaveRows of the group at w + (r - r % kInterleaveRows) * row_bytes), read by
// the table's gemm_decode_interleaved, which the type must have. With kPacked (a.n_cols the
// whole row), w is the first of the packed copy's rows. One per ISA in KernelTable.
using GemmPanelFn = void (*)(TensorType type, const uint8_t* w, size_t row_bytes, int n_rows,
                             const GemmActivations& a, float* y, int64_t y_stride, bool accumulate,
                             std::vector<uint8_t>& scratch, PanelRows rows);

// The scalar panel: the reference the SIMD panels are tested against (the file's rows, or a
// packed copy's).
void gemm_panel_scalar(TensorType type, const uint8_t* w, size_t row_bytes, int n_rows,
                       const GemmActivations& a, float* y, int64_t y_stride, bool accumulate,
                       std::vector<uint8_t>& scratch, PanelRows rows);

}  // namespace qinfer::kernels
