// The hot entry points the model layer calls. Rows are split across OpenMP threads; every
// output element is computed the same way whatever the thread count, so results are
// bit-identical for 1 and N threads.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.hpp"

namespace qinfer::kernels {

// A weight matrix in its on-disk type: rows x n_cols, row r at data + r * row_bytes.
struct MatrixView {
  TensorType type;
  const uint8_t* data;
  int64_t n_rows;  // output features (ne[1])
  int64_t n_cols;  // input features (ne[0])
  size_t row_bytes;
};

// Y (n_tokens, W.n_rows) = X (n_tokens, W.n_cols) . W^T. Each activation row is quantized
// once to the weight type's vec_dot_type; the dot kernel then takes up to kMaxDotCols
// tokens per weight row, so each decoded weight block serves several tokens (gemm); with one
// token this is a gemv. `scratch` holds the quantized activations between calls.
void matmul(const KernelTable& k, const MatrixView& w, const float* x, int64_t n_tokens, float* y,
            std::vector<uint8_t>& scratch);

// dst (n) = row `row` of `w`, dequantized (embedding lookup of any type).
void get_row(const KernelTable& k, const MatrixView& w, int64_t row, float* dst);

}  // namespace qinfer::kernels
