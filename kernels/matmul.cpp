#include "kernels/matmul.hpp"

#include <algorithm>

#include "qinfer/error.hpp"

namespace qinfer::kernels {

namespace {

struct Prepared {
  const MatrixView* w;
  float* y;
  VecDotFn dot;
  size_t act_offset, act_row;  // this job's quantized input in the scratch buffer
  int64_t first_row;           // in the combined row range
};

// Quantizes x once per distinct activation type among the jobs, into scratch.
void prepare(const KernelTable& k, std::initializer_list<MatmulJob> jobs, const float* x, int64_t n_tokens,
             std::vector<uint8_t>& scratch, std::vector<Prepared>& out) {
  out.clear();
  size_t bytes = 0;
  int64_t rows = 0;
  for (const MatmulJob& j : jobs) {
    const TypeTraits& traits = type_traits(j.w->type);
    const TensorType act_type = traits.vec_dot_type;
    const VecDotFn dot = k.types[static_cast<uint32_t>(j.w->type)].vec_dot;
    const QuantizeRowFn quantize = k.quantize_act[static_cast<uint32_t>(act_type)];
    const PrepareActFn layout = k.types[static_cast<uint32_t>(j.w->type)].prepare_act;
    if (dot == nullptr || quantize == nullptr) {
      throw Error(ErrorCode::kUnsupported, "no matmul kernel for " + std::string(traits.name));
    }
    const size_t act_row = row_size_bytes(act_type, j.w->n_cols);
    size_t offset = bytes;
    for (const Prepared& p : out) {  // same input already quantized to this type and layout
      if (type_traits(p.w->type).vec_dot_type == act_type && p.w->n_cols == j.w->n_cols &&
          k.types[static_cast<uint32_t>(p.w->type)].prepare_act == layout) {
        offset = p.act_offset;
      }
    }
    if (offset == bytes) {
      bytes += act_row * static_cast<size_t>(n_tokens);
      scratch.resize(bytes);
      for (int64_t t = 0; t < n_tokens; ++t) {
        uint8_t* row = scratch.data() + offset + t * act_row;
        quantize(x + t * j.w->n_cols, row, j.w->n_cols);
        if (layout != nullptr) layout(row, j.w->n_cols);
      }
    }
    out.push_back({j.w, j.y, dot, offset, act_row, rows});
    rows += j.w->n_rows;
  }
}

// Output row r of one job for every token, up to kMaxDotCols tokens per weight row.
void run_row(const Prepared& p, const uint8_t* scratch, int64_t r, int64_t n_tokens) {
  const uint8_t* wr = p.w->data + r * p.w->row_bytes;
  const uint8_t* act = scratch + p.act_offset;
  float out[kMaxDotCols];
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxDotCols) {
    const int nc = static_cast<int>(std::min<int64_t>(kMaxDotCols, n_tokens - t0));
    p.dot(p.w->n_cols, wr, act + t0 * p.act_row, p.act_row, nc, out);
    for (int c = 0; c < nc; ++c) p.y[(t0 + c) * p.w->n_rows + r] = out[c];
  }
}

// Below this many multiply-adds a second thread costs more than it saves (measured on the
// 4M-parameter test models: 256x256 matrices gain from two threads).
constexpr int64_t kParallelWork = 16384;

}  // namespace

void matmul_shared(const KernelTable& k, std::initializer_list<MatmulJob> jobs, const float* x,
                   int64_t n_tokens, std::vector<uint8_t>& scratch) {
  thread_local std::vector<Prepared> prepared;
  prepare(k, jobs, x, n_tokens, scratch, prepared);
  const Prepared* p = prepared.data();
  const int64_t n_jobs = static_cast<int64_t>(prepared.size());
  const int64_t total = p[n_jobs - 1].first_row + p[n_jobs - 1].w->n_rows;
  const uint8_t* act = scratch.data();
#pragma omp parallel for schedule(static) if (total * n_tokens * p[0].w->n_cols >= kParallelWork)
  for (int64_t r = 0; r < total; ++r) {
    int64_t j = n_jobs - 1;
    while (r < p[j].first_row) --j;
    run_row(p[j], act, r - p[j].first_row, n_tokens);
  }
}

void matmul(const KernelTable& k, const MatrixView& w, const float* x, int64_t n_tokens, float* y,
            std::vector<uint8_t>& scratch) {
  matmul_shared(k, {{&w, y}}, x, n_tokens, scratch);
}

void get_row(const KernelTable& k, const MatrixView& w, int64_t row, float* dst) {
  if (row < 0 || row >= w.n_rows) {
    throw Error(ErrorCode::kInvalidArgument, "row " + std::to_string(row) + " out of range");
  }
  dequantize_row(k, w.type, w.data + row * w.row_bytes, dst, w.n_cols);
}

}  // namespace qinfer::kernels
