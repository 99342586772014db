#include "bench/bench_common.hpp"

#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <tuple>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "kernels/float_conv.hpp"
#include "kernels/repack.hpp"

namespace qinfer::bench {

std::vector<uint8_t> make_matrix(TensorType type, int64_t rows, int64_t cols) {
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 1.0f);
  const size_t row_bytes = row_size_bytes(type, cols);
  std::vector<uint8_t> m(row_bytes * rows);
  const auto quantize = kernels::reference_quantizer(type);
  std::vector<float> x(cols);
  for (int64_t r = 0; r < rows; ++r) {
    if (quantize != nullptr && r < 64) {
      for (float& v : x) v = g(rng);
      quantize(x.data(), m.data() + r * row_bytes, cols);
    } else if (quantize != nullptr) {
      std::memcpy(m.data() + r * row_bytes, m.data() + (r % 64) * row_bytes, row_bytes);
    } else {
      for (size_t i = 0; i < row_bytes; ++i) m[r * row_bytes + i] = static_cast<uint8_t>(rng());
      const size_t bs = type_traits(type).type_size;
      for (size_t b = 0; b + bs <= row_bytes; b += bs) {  // finite scale in the first two bytes
        const uint16_t h = fp32_to_fp16(0.01f);
        std::memcpy(m.data() + r * row_bytes + b, &h, 2);
      }
    }
  }
  return m;
}

const Matrix& matrix(TensorType type, int64_t rows, int64_t cols) {
  static std::map<std::tuple<uint32_t, int64_t, int64_t>, Matrix> cache;
  auto key = std::make_tuple(static_cast<uint32_t>(type), rows, cols);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, Matrix{type, rows, cols, make_matrix(type, rows, cols)}).first;
  return it->second;
}

void set_threads(int n) {
#if defined(_OPENMP)
  omp_set_num_threads(n);
#else
  (void)n;
#endif
}

std::vector<Shape> layer_stack_shapes() {
  std::vector<Shape> shapes;
  for (int64_t l = 0; l < kLayers; ++l)
    shapes.insert(shapes.end(), std::begin(kLayer), std::end(kLayer));
  return shapes;
}

MatrixStack matrix_stack(TensorType type, Isa isa, const std::vector<Shape>& shapes) {
  const bool interleaved =
      kernels::table(isa).types[static_cast<uint32_t>(type)].vec_dot_interleaved != nullptr;
  MatrixStack st;
  for (Shape s : shapes) st.total += row_size_bytes(type, s.cols) * s.rows;
  st.buffer = kernels::huge_buffer(st.total);
  size_t offset = 0;
  for (Shape s : shapes) {
    // make_matrix's 64 random rows repeated.
    const Matrix& m = matrix(type, 64, s.cols);
    const size_t row_bytes = row_size_bytes(type, s.cols);
    std::vector<uint8_t> src(row_bytes * s.rows);
    for (int64_t r = 0; r < s.rows; r += m.rows)
      std::memcpy(src.data() + r * row_bytes, m.bytes.data(),
                  std::min(m.rows, s.rows - r) * row_bytes);
    uint8_t* dst = st.buffer.get() + offset;
    const int64_t tile_cols = kernels::tiles_for(kernels::table(isa), type, s.rows, s.cols,
                                                 interleaved, kernels::kTileCols)
                                  ? kernels::kTileCols
                                  : 0;
    if (tile_cols > 0) {
      kernels::tile(type, src.data(), row_bytes, s.rows, s.cols, tile_cols, interleaved, dst);
    } else if (interleaved) {
      kernels::interleave(type, src.data(), row_bytes, s.rows, s.cols, dst);
    } else {
      std::memcpy(dst, src.data(), src.size());
    }
    kernels::MatrixView v{type, dst, s.rows, s.cols, row_bytes, interleaved};
    v.tile_cols = tile_cols;
    st.views.push_back(v);
    offset += src.size();
    st.max_rows = std::max(st.max_rows, s.rows);
  }
  return st;
}

}  // namespace qinfer::bench
