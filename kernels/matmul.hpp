// The hot entry points the model layer calls. Rows are split across OpenMP threads; every
// output element is computed the same way whatever the thread count, so results are
// bit-identical for 1 and N threads.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "kernels/kernels.hpp"

namespace qinfer::kernels {

// A weight matrix in its on-disk type: rows x n_cols, row r at data + r * row_bytes.
struct MatrixView {
  TensorType type = TensorType::F32;
  const uint8_t* data = nullptr;  // nullptr: an absent (optional) tensor
  int64_t n_rows = 0;  // output features (ne[1])
  int64_t n_cols = 0;  // input features (ne[0])
  size_t row_bytes = 0;
};

// Y (n_tokens, W.n_rows) = X (n_tokens, W.n_cols) . W^T. Each activation row is quantized
// once to the weight type's vec_dot_type; the dot kernel then takes up to kMaxDotCols
// tokens per weight row, so each decoded weight block serves several tokens (gemm); with one
// token this is a gemv. `scratch` holds the quantized activations between calls.
void matmul(const KernelTable& k, const MatrixView& w, const float* x, int64_t n_tokens, float* y,
            std::vector<uint8_t>& scratch);

// One matrix and its output, for matmul_shared.
struct MatmulJob {
  const MatrixView* w;
  float* y;
};

// Several matmuls of the same input (llama's Q/K/V, FFN gate/up): the input is quantized
// once per activation type and all rows run in one parallel loop, so a token pays one
// fork/join instead of one per matrix. Results are those of matmul() for each job.
void matmul_shared(const KernelTable& k, std::initializer_list<MatmulJob> jobs, const float* x,
                   int64_t n_tokens, std::vector<uint8_t>& scratch);

// dst (n) = row `row` of `w`, dequantized (embedding lookup of any type).
void get_row(const KernelTable& k, const MatrixView& w, int64_t row, float* dst);

}  // namespace qinfer::kernels
