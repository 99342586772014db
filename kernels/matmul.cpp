#include "kernels/matmul.hpp"

#include <algorithm>

#include "qinfer/error.hpp"

namespace qinfer::kernels {

void matmul(const KernelTable& k, const MatrixView& w, const float* x, int64_t n_tokens, float* y,
            std::vector<uint8_t>& scratch) {
  const TypeTraits& traits = type_traits(w.type);
  const TensorType act_type = traits.vec_dot_type;
  const VecDotFn dot = k.types[static_cast<uint32_t>(w.type)].vec_dot;
  const QuantizeRowFn quantize = k.quantize_act[static_cast<uint32_t>(act_type)];
  if (dot == nullptr || quantize == nullptr) {
    throw Error(ErrorCode::kUnsupported, "no matmul kernel for " + std::string(traits.name));
  }
  const size_t act_row = row_size_bytes(act_type, w.n_cols);
  scratch.resize(act_row * static_cast<size_t>(n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t) quantize(x + t * w.n_cols, scratch.data() + t * act_row, w.n_cols);
  const uint8_t* act = scratch.data();
  const int64_t n_rows = w.n_rows;
#pragma omp parallel for schedule(static) if (n_rows * n_tokens * w.n_cols > 65536)
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* wr = w.data + r * w.row_bytes;
    float out[kMaxDotCols];
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxDotCols) {
      const int nc = static_cast<int>(std::min<int64_t>(kMaxDotCols, n_tokens - t0));
      dot(w.n_cols, wr, act + t0 * act_row, act_row, nc, out);
      for (int c = 0; c < nc; ++c) y[(t0 + c) * n_rows + r] = out[c];
    }
  }
}

void get_row(const KernelTable& k, const MatrixView& w, int64_t row, float* dst) {
  if (row < 0 || row >= w.n_rows) {
    throw Error(ErrorCode::kInvalidArgument, "row " + std::to_string(row) + " out of range");
  }
  dequantize_row(k, w.type, w.data + row * w.row_bytes, dst, w.n_cols);
}

}  // namespace qinfer::kernels
