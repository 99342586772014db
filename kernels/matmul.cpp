#include "kernels/matmul.hpp"

#include <algorithm>

#include "kernels/pack.hpp"
#include "kernels/repack.hpp"
#include "kernels/threads.hpp"
#include "qinfer/error.hpp"

namespace qinfer::kernels {

namespace {

static_assert(kInterleaveRows == kMaxDotRows, "an interleaved group is one rows-dot step");
static_assert(kTileRows == kGemmBlockRows, "a GEMM unit's rows are one block of a tiled matrix");
static_assert(kTileRows % kMaxDotRows == 0);

// The GEMM's reduction chunks start at multiples of this many columns: whole super-blocks
// (256) and whole units of an interleaved pair type's row, which the panels read in place.
constexpr int64_t kChunkStep = 512;
static_assert(kChunkStep % 256 == 0 && kChunkStep % kPairUnitColumns == 0);

using Prepared = PreparedJob;

// Quantizes x once per distinct activation type among the jobs, into scratch.
void prepare(const KernelTable& k, std::initializer_list<MatmulJob> jobs, const float* x,
             int64_t n_tokens, std::vector<uint8_t>& scratch, std::vector<Prepared>& out) {
  out.clear();
  size_t bytes = 0;
  int64_t steps = 0;
  for (const MatmulJob& j : jobs) {
    const TypeTraits& traits = type_traits(j.w->type);
    const TensorType act_type = traits.vec_dot_type;
    const VecDotFn dot = k.types[static_cast<uint32_t>(j.w->type)].vec_dot;
    const QuantizeRowFn quantize = k.quantize_act[static_cast<uint32_t>(act_type)];
    const TypeKernels& tk = k.types[static_cast<uint32_t>(j.w->type)];
    const bool packed = j.w->packed != nullptr;
    if (dot == nullptr || quantize == nullptr || (packed && tk.vec_dot_packed == nullptr)) {
      throw Error(ErrorCode::kUnsupported, "no matmul kernel for " + std::string(traits.name));
    }
    const PrepareActFn layout = packed             ? prepare_packed_activation
                                : j.w->interleaved ? tk.prepare_act_interleaved
                                                   : tk.prepare_act;
    const size_t act_row = j.w->interleaved && tk.act_interleaved_bytes != nullptr
                               ? tk.act_interleaved_bytes(j.w->n_cols)
                               : row_size_bytes(act_type, j.w->n_cols);
    size_t offset = bytes;
    for (const Prepared& p : out) {  // same input already quantized to this type and layout
      if (type_traits(p.w->type).vec_dot_type == act_type && p.w->n_cols == j.w->n_cols &&
          p.layout == layout) {
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
    // A tiled matrix's rows are not contiguous: it takes the rows form for any token count.
    const VecDotRowsFn rows_dot = packed                                ? tk.vec_dot_packed
                                  : j.w->interleaved                    ? tk.vec_dot_interleaved
                                  : n_tokens == 1 || j.w->tile_cols > 0 ? tk.vec_dot_rows
                                                                        : nullptr;
    if ((j.w->interleaved || j.w->tile_cols > 0) && rows_dot == nullptr)
      throw Error(ErrorCode::kInternal, "an interleaved or tiled matrix without its kernel");
    if (packed && j.w->tile_cols > 0)
      throw Error(ErrorCode::kInternal, "a packed matrix cannot be tiled");
    const int64_t per_step = rows_dot != nullptr ? kMaxDotRows : 1;
    const int64_t n_steps = (j.w->n_rows + per_step - 1) / per_step;
    out.push_back({j.w, j.y, dot, rows_dot, layout, packed ? j.w->packed : j.w->data,
                   packed ? j.w->packed_row_bytes : j.w->row_bytes, offset, act_row, steps,
                   per_step, n_steps});
    steps += n_steps;
  }
}

// Rows [r0, r1) of one job with rows_dot against one activation row (in the job's layout),
// into y[r0, r1). An untiled matrix takes one call. A tiled one takes, block of rows by block,
// each panel in memory order against its columns' activations (the layouts are linear in the
// columns: act_row * c0 / n_cols bytes precede column c0), the panels' sums added in order, so
// a row's bits depend neither on the thread count nor on how the rows are split.
void rows_range(const Prepared& p, const uint8_t* act, int64_t r0, int64_t r1, float* y) {
  const MatrixView& w = *p.w;
  if (w.tile_cols == 0) {
    p.rows_dot(w.n_cols, p.data + r0 * p.row_bytes, p.row_bytes, static_cast<int>(r1 - r0), act,
               y + r0);
    return;
  }
  float part[kTileRows];
  for (int64_t a = r0; a < r1;) {
    const int64_t b = std::min(r1, a - a % kTileRows + kTileRows);
    const int n = static_cast<int>(b - a);
    for (int64_t c0 = 0; c0 < w.n_cols; c0 += w.tile_cols) {
      const TilePiece t = tile_piece(w, a, c0);
      const uint8_t* act_c = act + p.act_row * static_cast<size_t>(c0) / w.n_cols;
      p.rows_dot(t.n_cols, t.data, t.row_bytes, n, act_c, c0 == 0 ? y + a : part);
      if (c0 > 0) {
        for (int i = 0; i < n; ++i) y[a + i] += part[i];
      }
    }
    a = b;
  }
}

// Step s of one job for several tokens: output row s for every token, up to kMaxDotCols
// tokens per weight row; or, for an interleaved, packed or tiled matrix, rows
// s * kMaxDotRows onwards for one token after the other (from the cache). One token takes
// run_rows.
void run_step(const Prepared& p, const uint8_t* scratch, int64_t s, int64_t n_tokens) {
  const uint8_t* act = scratch + p.act_offset;
  if (p.rows_dot != nullptr) {
    const int64_t r = s * p.rows_per_step;
    const int64_t r1 = std::min(r + p.rows_per_step, p.w->n_rows);
    for (int64_t t = 0; t < n_tokens; ++t)
      rows_range(p, act + t * p.act_row, r, r1, p.y + t * p.w->n_rows);
    return;
  }
  const int64_t r = s;
  const uint8_t* wr = p.w->data + r * p.w->row_bytes;
  float out[kMaxDotCols];
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxDotCols) {
    const int nc = static_cast<int>(std::min<int64_t>(kMaxDotCols, n_tokens - t0));
    p.dot(p.w->n_cols, wr, act + t0 * p.act_row, p.act_row, nc, out);
    for (int c = 0; c < nc; ++c) p.y[(t0 + c) * p.w->n_rows + r] = out[c];
  }
}

// Steps [s0, s1) of one job for a single token with rows_dot: its rows in one call.
void run_rows(const Prepared& p, const uint8_t* scratch, int64_t s0, int64_t s1) {
  rows_range(p, scratch + p.act_offset, s0 * p.rows_per_step,
             std::min(s1 * p.rows_per_step, p.w->n_rows), p.y);
}

// Below this many multiply-adds a second thread costs more than it saves (measured on the
// 4M-parameter test models: 256x256 matrices gain from two threads).
constexpr int64_t kParallelWork = 16384;

}  // namespace

namespace {

bool gemm_applies(const KernelTable& k, std::initializer_list<MatmulJob> jobs, int64_t n_tokens) {
  if (n_tokens < kGemmMinTokens || k.gemm_panel == nullptr) return false;
  for (const MatmulJob& j : jobs) {
    if (j.w->n_cols % 32 != 0 ||
        k.quantize_act[static_cast<uint32_t>(type_traits(j.w->type).vec_dot_type)] == nullptr) {
      return false;
    }
    // F32 weights (small: routers, the tiniest models) keep the dots, which sum in
    // tinyBLAS's order as llama.cpp does for a batch; a router's near-ties decide experts.
    if (j.w->type == TensorType::F32) return false;
    if (!is_float_type(j.w->type) && gemm_type_info(j.w->type).decode == nullptr) return false;
  }
  return true;
}

// The GEMM: activations prepared once per activation type (split over threads by token),
// then every panel of 8 rows of every job decoded and multiplied with all tokens (split over
// threads by panel; each output element is computed the same way whatever the thread count).
void gemm_shared(const KernelTable& k, std::initializer_list<MatmulJob> jobs, const float* x,
                 int64_t n_tokens, MatmulScratch& scratch) {
  const int64_t n_cols = jobs.begin()->w->n_cols;
  std::vector<GemmPanelJob>& panels = scratch.gemm_panels;
  panels.clear();
  int n_buffers = 0;
  TensorType types[4];
  for (const MatmulJob& j : jobs) {
    if (j.w->n_cols != n_cols)
      throw Error(ErrorCode::kInternal, "matmul_shared: jobs differ in input size");
    const TensorType act = type_traits(j.w->type).vec_dot_type;
    int b = 0;
    while (b < n_buffers && types[b] != act) ++b;
    if (b == n_buffers) {
      if (n_buffers == 4)
        throw Error(ErrorCode::kInternal, "matmul_shared: too many activation types");
      types[n_buffers++] = act;
    }
    for (int64_t r = 0; r < j.w->n_rows; r += kGemmBlockRows) panels.push_back({j.w, j.y, r, b});
  }
  if (scratch.gemm.size() < static_cast<size_t>(n_buffers))
    scratch.gemm.resize(static_cast<size_t>(n_buffers));
  for (int b = 0; b < n_buffers; ++b)
    resize_gemm_activations(scratch.gemm[b], types[b], n_tokens, n_cols);
  GemmActivations views[4];
  for (int b = 0; b < n_buffers; ++b) views[b] = scratch.gemm[b].view(x, n_tokens, n_cols);
  const int n_threads = thread_count();
  scratch.panels.resize(static_cast<size_t>(n_threads));
  const auto n_panels = static_cast<int64_t>(panels.size());
  const int64_t n_prep = n_tokens * n_buffers;
  // A packed copy's rows are read whole (their blocks' metadata follows all of their codes).
  bool any_packed = false;
  // A tiled matrix's panels are slices of the reduction of their own (the jobs share n_cols,
  // and the loader one tile width).
  int64_t span = n_cols;
  for (const MatmulJob& j : jobs) {
    any_packed = any_packed || j.w->packed != nullptr;
    if (j.w->tile_cols == 0) continue;
    if (span != n_cols && span != j.w->tile_cols)
      throw Error(ErrorCode::kInternal, "matmul_shared: jobs tiled at different widths");
    span = j.w->tile_cols;
  }
  // The reduction dimension in chunks, so that one chunk of every token's activations stays
  // in the core's L2 while the thread's panels pass over it (each panel decodes only the
  // chunk's columns, so the decoding work is the same). A chunk is a whole number of the
  // types' blocks and of an interleaved row's units (kChunkStep covers them all).
  // Measured on TinyLlama's FFN with 512 tokens (Zen 3): 256 KiB of int8 activations per
  // chunk (512 columns) beat both smaller chunks and none; the float types care less.
  const int64_t chunk =
      k.gemm_full_k || any_packed
          ? n_cols
          : std::max<int64_t>(
                kChunkStep,
                std::min<int64_t>(n_cols, (int64_t{256} << 10) / std::max<int64_t>(1, n_tokens) /
                                              kChunkStep * kChunkStep));
  parallel(n_threads, [&](Team& team) {
    const auto [i0, i1] = team.share(n_prep);
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i % n_tokens;
      prepare_gemm_rows(k, x, n_cols, t, t + 1, scratch.gemm[i / n_tokens]);
    }
    team.barrier();
    std::vector<uint8_t>& panel_scratch = scratch.panels[static_cast<size_t>(team.id())];
    const auto [p0, p1] = team.share(n_panels);
    // Chunks within each span (a tiled matrix's panel, else the whole row).
    for (int64_t c0 = 0; c0 < n_cols; c0 += span) {
      const int64_t c1 = std::min(n_cols, c0 + span);
      for (int64_t k0 = c0; k0 < c1; k0 += chunk) {
        const int64_t k1 = std::min(c1, k0 + chunk);
        // The same panels for a thread at every chunk, so no barrier.
        for (int64_t p = p0; p < p1; ++p) {
          const MatrixView& w = *panels[p].w;
          const int64_t r0 = panels[p].r0;
          const int rows = static_cast<int>(std::min<int64_t>(kGemmBlockRows, w.n_rows - r0));
          if (w.packed != nullptr) {  // the packed copy: the file's blocks may leave memory
            if (k0 == 0) {            // whole rows, in one call
              k.gemm_panel(w.type, w.packed + r0 * w.packed_row_bytes, w.packed_row_bytes, rows,
                           views[panels[p].buffer].slice(0, n_cols), panels[p].y + r0, w.n_rows,
                           false, panel_scratch, PanelRows::kPacked);
            }
            continue;
          }
          // An interleaved group holds kInterleaveRows rows' blocks side by side; the panel
          // decodes it in place (the loader interleaves only where the table can).
          const uint8_t* rows_at = w.data + r0 * w.row_bytes;
          size_t row_bytes = w.row_bytes;
          int64_t from = k0;  // the chunk's first column in the rows at rows_at
          if (w.tile_cols > 0) {
            const TilePiece t = tile_piece(w, r0, c0);
            rows_at = t.data;
            row_bytes = t.row_bytes;
            from = k0 - c0;
          }
          const int64_t at = row_size_bytes(w.type, from) * (w.interleaved ? kInterleaveRows : 1);
          k.gemm_panel(w.type, rows_at + at, row_bytes, rows, views[panels[p].buffer].slice(k0, k1),
                       panels[p].y + r0, w.n_rows, k0 > 0, panel_scratch,
                       w.interleaved ? PanelRows::kInterleaved : PanelRows::kFile);
        }
      }
    }
  });
}

}  // namespace

TilePiece tile_piece(const MatrixView& w, int64_t r0, int64_t c0) {
  const int64_t b0 = r0 - r0 % kTileRows;
  const auto rows = static_cast<size_t>(std::min(kTileRows, w.n_rows - b0));
  const int64_t cols = std::min(w.tile_cols, w.n_cols - c0);
  const size_t panel_row = row_size_bytes(w.type, cols);
  return {w.data + static_cast<size_t>(b0) * w.row_bytes + rows * row_size_bytes(w.type, c0) +
              static_cast<size_t>(r0 - b0) * panel_row,
          panel_row, cols};
}

bool tiles_for(const KernelTable& k, TensorType type, int64_t n_rows, int64_t n_cols,
               bool interleave, int64_t tile_cols) {
  const TypeKernels& tk = k.types[static_cast<uint32_t>(type)];
  const bool rows_kernel = interleave ? tk.vec_dot_interleaved != nullptr
                                      : tk.vec_dot_rows != nullptr && type != TensorType::F32;
  return rows_kernel && can_tile(type, n_rows, n_cols, tile_cols, interleave);
}

void matmul_shared(const KernelTable& k, std::initializer_list<MatmulJob> jobs, const float* x,
                   int64_t n_tokens, MatmulScratch& scratch, MatmulPath path) {
  if (path == MatmulPath::kAuto && gemm_applies(k, jobs, n_tokens)) {
    gemm_shared(k, jobs, x, n_tokens, scratch);
    return;
  }
  std::vector<Prepared>& prepared = scratch.prepared;
  prepare(k, jobs, x, n_tokens, scratch.act, prepared);
  const Prepared* p = prepared.data();
  const int64_t n_jobs = static_cast<int64_t>(prepared.size());
  const int64_t steps = p[n_jobs - 1].first_step + p[n_jobs - 1].n_steps;
  int64_t rows = 0;
  for (const Prepared& j : prepared) rows += j.w->n_rows;
  const uint8_t* act = scratch.act.data();
  auto run = [&](int64_t s0, int64_t s1) {
    int64_t j = 0;
    for (int64_t s = s0; s < s1;) {
      while (s >= p[j].first_step + p[j].n_steps) ++j;
      const int64_t end = std::min(s1, p[j].first_step + p[j].n_steps);
      if (n_tokens == 1 && p[j].rows_dot != nullptr) {
        // One call for the piece of this matrix: the kernel keeps its set-up across groups.
        run_rows(p[j], act, s - p[j].first_step, end - p[j].first_step);
        s = end;
        continue;
      }
      for (; s < end; ++s) run_step(p[j], act, s - p[j].first_step, n_tokens);
    }
  };
  if (rows * n_tokens * p[0].w->n_cols < kParallelWork || thread_count() == 1) {
    run(0, steps);
    return;
  }
  // Each thread starts on its own contiguous share of the weight bytes (one sequential
  // stream, as a static schedule) and, when done, takes chunks from the far end of a share
  // not yet done, so a thread slowed by its neighbours does not hold the others at the join.
  // Which thread computes a row does not change how it is computed.
  const int n_threads = thread_count();
  std::vector<StepRange>& shares = scratch.shares;
  int64_t total_bytes = 0;  // the weights' bytes of every job
  if (shares.size() < static_cast<size_t>(n_threads)) shares = std::vector<StepRange>(n_threads);
  {
    // Thread t's share ends at the first step where the bytes before it reach (t+1)/n of the
    // total; within a job every step has the same bytes, so that step is a division away.
    for (const Prepared& j : prepared) total_bytes += j.n_steps * j.rows_per_step * j.row_bytes;
    int64_t lo = 0, job_bytes = 0;  // bytes before job `job`
    size_t job = 0;
    for (int t = 0; t < n_threads; ++t) {
      int64_t hi = steps;
      if (t < n_threads - 1) {
        const int64_t goal = total_bytes * (t + 1) / n_threads;
        for (;; ++job) {
          const Prepared& j = prepared[job];
          const int64_t step_bytes = j.rows_per_step * static_cast<int64_t>(j.row_bytes);
          if (job_bytes + j.n_steps * step_bytes >= goal) {
            hi = j.first_step + (goal - job_bytes + step_bytes - 1) / step_bytes;
            break;
          }
          job_bytes += j.n_steps * step_bytes;
        }
      }
      shares[t].set(lo, std::max(lo, hi));
      lo = std::max(lo, hi);
    }
  }
  constexpr int64_t kChunk = 8;  // steps taken at a time
  // Below kStealBytes of weights a share is a few microseconds of work: each thread runs its
  // own share in one go, without a compare-and-swap per chunk on a word the other core also
  // writes (wp-llama Q4_0 tg128, alternating builds: 20.6-21.6k -> 21.5-22.1k t/s).
  constexpr int64_t kStealBytes = int64_t{1} << 20;
  const bool steal = total_bytes >= kStealBytes;
  parallel(n_threads, [&](Team& team) {
    const int t = team.id();
    if (!steal) {
      int64_t s0, s1;
      if (shares[t].take_front(steps, s0, s1)) run(s0, s1);
      return;
    }
    for (int64_t s0, s1; shares[t].take_front(kChunk, s0, s1);) run(s0, s1);
    for (int v = 1; v < n_threads; ++v) {
      StepRange& other = shares[(t + v) % n_threads];
      for (int64_t s0, s1; other.take_back(kChunk, s0, s1);) run(s0, s1);
    }
  });
}

void matmul(const KernelTable& k, const MatrixView& w, const float* x, int64_t n_tokens, float* y,
            MatmulScratch& scratch, MatmulPath path) {
  matmul_shared(k, {{&w, y}}, x, n_tokens, scratch, path);
}

void get_row(const KernelTable& k, const MatrixView& w, int64_t row, float* dst) {
  if (row < 0 || row >= w.n_rows) {
    throw Error(ErrorCode::kInvalidArgument, "row " + std::to_string(row) + " out of range");
  }
  // The row's pieces: the whole row, or its part in each panel of a tiled matrix.
  const int64_t width = w.tile_cols > 0 ? w.tile_cols : w.n_cols;
  const int64_t group = w.interleaved ? row - row % kInterleaveRows : row;
  for (int64_t c0 = 0; c0 < w.n_cols; c0 += width) {
    const TilePiece t = w.tile_cols > 0
                            ? tile_piece(w, group, c0)
                            : TilePiece{w.data + group * w.row_bytes, w.row_bytes, w.n_cols};
    if (w.interleaved) {
      std::vector<uint8_t> copy(t.row_bytes);
      deinterleave(w.type, t.data, t.row_bytes, row - group, 1, 0,
                   t.n_cols / type_traits(w.type).block_size, copy.data(), t.row_bytes);
      dequantize_row(k, w.type, copy.data(), dst + c0, t.n_cols);
    } else {
      dequantize_row(k, w.type, t.data, dst + c0, t.n_cols);
    }
  }
}

}  // namespace qinfer::kernels
