// Helpers shared by the kernel benchmarks (bench_kernels.cpp, bench_attention.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/huge_pages.hpp"
#include "kernels/kernels.hpp"
#include "kernels/matmul.hpp"

namespace qinfer::bench {

using kernels::Isa;

// A random matrix of `type`: quantized from Gaussian floats where a quantizer exists,
// otherwise random bytes with sane f16 scales.
std::vector<uint8_t> make_matrix(TensorType type, int64_t rows, int64_t cols);

struct Matrix {
  TensorType type;
  int64_t rows, cols;
  std::vector<uint8_t> bytes;
};

// make_matrix's matrix of this type and shape, made once.
const Matrix& matrix(TensorType type, int64_t rows, int64_t cols);

// The threads the kernels run on (OpenMP's count, which the thread team follows).
void set_threads(int n);

// One token's weights of a TinyLlama-1.1B-shaped layer: the fused QKV (2560 x 2048), the
// attention output (2048 x 2048), the fused gate/up (11264 x 2048) and the down projection
// (2048 x 5632).
struct Shape {
  int64_t rows, cols;
};
constexpr int64_t kLayers = 22, kDim = 2048, kFfn = 5632;
constexpr Shape kLayer[] = {{2560, kDim}, {kDim, kDim}, {2 * kFfn, kDim}, {kDim, kFfn}};
// kLayers such layers' shapes, layer after layer (a whole model's matmuls for one token).
std::vector<Shape> layer_stack_shapes();

// Matrices of random rows, all in one buffer on huge pages and re-laid as the engine does
// where the ISA has the type's interleaved gemv, else copied, and long rows in column tiles
// (kernels::tiles_for, as the loader's default; engine.cpp; it orders them by
// size, which measured the same as this order). A buffer of its own for each matrix made a
// layer sequence up to 2x slower on one thread (docs/kernels.md, session 51).
struct MatrixStack {
  kernels::HugeBuffer buffer;
  std::vector<kernels::MatrixView> views;
  size_t total = 0;
  int64_t max_rows = 0;
};
MatrixStack matrix_stack(TensorType type, Isa isa, const std::vector<Shape>& shapes);

// The attention benchmarks and the token at depth (bench_attention.cpp), registered on the
// widest ISA for token_layers and on every vector ISA for the rest.
void register_attention();

}  // namespace qinfer::bench
