// The hot entry points the model layer calls. Rows are split across OpenMP threads; every
// output element is computed the same way whatever the thread count, so results are
// bit-identical for 1 and N threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "kernels/kernels.hpp"

namespace qinfer::kernels {

// A weight matrix in its on-disk type: rows x n_cols, row r at data + r * row_bytes (when
// not tiled).
struct MatrixView {
  TensorType type = TensorType::F32;
  const uint8_t* data = nullptr;  // nullptr: an absent (optional) tensor
  int64_t n_rows = 0;             // output features (ne[1])
  int64_t n_cols = 0;             // input features (ne[0])
  size_t row_bytes = 0;
  // Rows in groups of kInterleaveRows, re-laid for the gemv (kernels/repack.hpp); the
  // table's vec_dot_interleaved must exist for the type.
  bool interleaved = false;
  // A packed copy for the one-token gemv (kernels/pack.hpp), or nullptr; the GEMM and
  // get_row read `data`. The table's vec_dot_packed must exist for the type.
  const uint8_t* packed = nullptr;
  size_t packed_row_bytes = 0;
  // 0, or the width of the panels of a matrix stored in column tiles (kernels/repack.hpp,
  // tile()): blocks of kTileRows rows, each block's panels one after the other, a panel's rows
  // in the layout above (interleaved or not). Not with `packed`.
  int64_t tile_cols = 0;
};

// Rows from r0 on (within r0's block of kTileRows rows; r0 a multiple of kInterleaveRows for
// an interleaved matrix) of the panel of a tiled matrix that starts at column c0 (a multiple
// of tile_cols): where they start, the panel's row bytes and its columns.
struct TilePiece {
  const uint8_t* data;
  size_t row_bytes;
  int64_t n_cols;
};
TilePiece tile_piece(const MatrixView& w, int64_t r0, int64_t c0);

// Whether a copy of a matrix (interleaved or not) may be tiled tile_cols wide for this table:
// the matmul needs a rows kernel for the layout (F32's small matrices keep their dots), and
// the shape can_tile's rules.
bool tiles_for(const KernelTable& k, TensorType type, int64_t n_rows, int64_t n_cols,
               bool interleave, int64_t tile_cols);

// A range of matmul steps [lo, hi) that its owner takes from the front and other threads
// from the back, both by compare-and-swap on one word (its own cache line).
class alignas(64) StepRange {
 public:
  void set(int64_t lo, int64_t hi) { word_.store(pack(lo, hi), std::memory_order_relaxed); }
  // From the front, at least n steps and at most a quarter of what is left (guided: few
  // compare-and-swaps while much is left, small pieces near the end, for the thieves).
  bool take_front(int64_t n, int64_t& s0, int64_t& s1) { return take(n, true, s0, s1); }
  bool take_back(int64_t n, int64_t& s0, int64_t& s1) { return take(n, false, s0, s1); }

 private:
  static uint64_t pack(int64_t lo, int64_t hi) {
    return static_cast<uint64_t>(lo) << 32 | static_cast<uint32_t>(hi);
  }
  bool take(int64_t n, bool front, int64_t& s0, int64_t& s1) {
    uint64_t w = word_.load(std::memory_order_relaxed);
    for (;;) {
      const auto lo = static_cast<int64_t>(w >> 32), hi = static_cast<int64_t>(w & 0xffffffffu);
      if (lo >= hi) return false;
      const int64_t k = std::min(front ? std::max(n, (hi - lo) / 4) : n, hi - lo);
      s0 = front ? lo : hi - k;
      s1 = s0 + k;
      const uint64_t next = front ? pack(lo + k, hi) : pack(lo, hi - k);
      if (word_.compare_exchange_weak(w, next, std::memory_order_relaxed)) return true;
    }
  }
  std::atomic<uint64_t> word_{0};
};

// One matrix of a gemv call, its activations quantized (matmul.cpp fills it).
struct PreparedJob {
  const MatrixView* w;
  float* y;
  VecDotFn dot;
  VecDotRowsFn rows_dot;  // for one token, or an interleaved or packed matrix
  PrepareActFn layout;    // the activations' layout (nullptr: plain)
  const uint8_t* data;    // the rows the dots read: w->data, or w->packed
  size_t row_bytes;
  size_t act_offset, act_row;  // this job's quantized input in the scratch buffer
  int64_t first_step;          // in the combined range of steps (a row, or rows_dot's rows)
  int64_t rows_per_step, n_steps;
};

// One panel of a GEMM call: kGemmBlockRows rows of one matrix from r0.
struct GemmPanelJob {
  const MatrixView* w;
  float* y;
  int64_t r0;
  int buffer;  // index of the matrix's activations in MatmulScratch::gemm
};

// Buffers of matmul, kept by the caller between calls (no allocation in the token loop).
struct MatmulScratch {
  std::vector<PreparedJob> prepared;         // gemv: the call's matrices
  std::vector<GemmPanelJob> gemm_panels;     // gemm: the call's panels
  std::vector<StepRange> shares;             // gemv: each thread's steps
  std::vector<uint8_t> act;                  // gemv: activations in the dots' types
  std::vector<GemmActivationBuffer> gemm;    // gemm: activations, one per activation type
  std::vector<std::vector<uint8_t>> panels;  // gemm: one decoded panel per thread
};

// From this many tokens a matmul runs as a GEMM over decoded panels (kernels/gemm.hpp);
// below, as dots of up to kMaxDotCols tokens per weight row (gemv for one token).
inline constexpr int64_t kGemmMinTokens = 8;

// Y (n_tokens, W.n_rows) = X (n_tokens, W.n_cols) . W^T. Below kGemmMinTokens each
// activation row is quantized once to the weight type's vec_dot_type and the dot kernel takes
// up to kMaxDotCols tokens per weight row; with one token this is a gemv. From
// kGemmMinTokens, a GEMM.
// kAuto: GEMM from kGemmMinTokens; kDots: the dot kernels whatever the token count (their
// order of summation is ggml's vec_dot's, which llama.cpp's expert matmuls use).
enum class MatmulPath { kAuto, kDots };

void matmul(const KernelTable& k, const MatrixView& w, const float* x, int64_t n_tokens, float* y,
            MatmulScratch& scratch, MatmulPath path = MatmulPath::kAuto);

// One matrix and its output, for matmul_shared.
struct MatmulJob {
  const MatrixView* w;
  float* y;
};

// Several matmuls of the same input (llama's Q/K/V, FFN gate/up): the input is quantized
// once per activation type and all rows run in one parallel loop, so a token pays one
// fork/join instead of one per matrix. Results are those of matmul() for each job.
void matmul_shared(const KernelTable& k, std::initializer_list<MatmulJob> jobs, const float* x,
                   int64_t n_tokens, MatmulScratch& scratch, MatmulPath path = MatmulPath::kAuto);

// dst (n) = row `row` of `w`, dequantized (embedding lookup of any type).
void get_row(const KernelTable& k, const MatrixView& w, int64_t row, float* dst);

}  // namespace qinfer::kernels
