// Kernel benchmarks: for every type and every ISA this CPU has, dequantize and gemv
// throughput in GB/s of weights read (and GFLOP/s), on 4096x4096 and on a matrix larger than
// the last-level cache, 1 and 2 threads; plus a streaming read of the same bytes, the
// ceiling a decode kernel can reach. Compare ratios within one run: the machine is shared.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "bench/bench_common.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/kernels.hpp"
#include "kernels/huge_pages.hpp"
#include "kernels/matmul.hpp"
#include "kernels/ops.hpp"
#include "kernels/pack.hpp"
#include "kernels/read_stream.hpp"
#include "kernels/repack.hpp"
#include "kernels/threads.hpp"

namespace qinfer {
namespace {

using namespace bench;
using kernels::Isa;

// One token through matmul; `repacked`: the matrix re-laid as the engine does at load time,
// interleaved (kernels/repack.hpp) or, for the types with a packed gemv, packed
// (kernels/pack.hpp), on huge pages. The bytes counted are the file layout's.
bool has_repacked_gemv(Isa isa, TensorType type) {
  const kernels::TypeKernels& tk = kernels::table(isa).types[static_cast<uint32_t>(type)];
  return tk.vec_dot_interleaved != nullptr || tk.vec_dot_packed != nullptr;
}
void BM_Gemv(benchmark::State& state, TensorType type, Isa isa, int64_t rows, int64_t cols,
             bool repacked) {
  const kernels::KernelTable& k = kernels::table(isa);
  set_threads(static_cast<int>(state.range(0)));
  const Matrix& m = matrix(type, rows, cols);
  kernels::MatrixView view{type, m.bytes.data(), rows, cols, row_size_bytes(type, cols)};
  // A re-laid copy lives on huge pages, as the loader's copies do.
  kernels::HugeBuffer copy;
  if (repacked && k.types[static_cast<uint32_t>(type)].vec_dot_packed != nullptr) {
    view.packed_row_bytes = kernels::packed_row_bytes(type, cols);
    copy = kernels::huge_buffer(view.packed_row_bytes * rows);
    kernels::pack(type, m.bytes.data(), view.row_bytes, rows, cols, copy.get());
    view.packed = copy.get();
  } else if (repacked) {
    copy = kernels::huge_buffer(m.bytes.size());
    kernels::interleave(type, m.bytes.data(), view.row_bytes, rows, cols, copy.get());
    view.data = copy.get();
    view.interleaved = true;
  }
  std::vector<float> x(cols, 0.5f), y(rows);
  kernels::MatmulScratch scratch;
  for (auto _ : state) {
    kernels::matmul(k, view, x.data(), 1, y.data(), scratch);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(m.bytes.size()));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * rows * cols * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// One token through a stack of kLayers such layers (545 MB of Q4_0, a whole model, far past
// the last-level cache), as generation runs its matmuls, with nothing between them. Arg
// `calls`: 0 runs the layers' 88 matmuls; 1 the same bytes as one matmul of 2048 columns;
// 128 that matrix in 128 equal matmuls. So 0 against 1 is what a token's matmul boundaries
// cost, and 1 against 128 the same for equal calls (docs/kernels.md, session 51);
// read_bandwidth in the same run is the ceiling.
void BM_GemvLayers(benchmark::State& state, TensorType type, Isa isa) {
  const kernels::KernelTable& k = kernels::table(isa);
  set_threads(static_cast<int>(state.range(0)));
  const int64_t calls = state.range(1);
  std::vector<Shape> shapes;
  int64_t model_bytes = 0;
  for (int64_t l = 0; l < kLayers; ++l) {
    for (Shape s : kLayer) {
      model_bytes += static_cast<int64_t>(row_size_bytes(type, s.cols)) * s.rows;
      if (calls == 0) shapes.push_back(s);
    }
  }
  const auto row = static_cast<int64_t>(row_size_bytes(type, kDim));
  for (int64_t i = 0; i < calls; ++i) shapes.push_back({model_bytes / row / calls / 4 * 4, kDim});
  const MatrixStack st = matrix_stack(type, isa, shapes);
  std::vector<float> x(kFfn, 0.5f), y(st.max_rows);
  kernels::MatmulScratch scratch;
  for (auto _ : state) {
    for (const kernels::MatrixView& v : st.views) {
      kernels::matmul(k, v, x.data(), 1, y.data(), scratch);
      benchmark::DoNotOptimize(y.data());
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(st.total));
}

// A token's steps between matmuls on the thread that runs them alone: quantizing one
// activation row of n (the matmul's first step; the Q8 types' quantizers) and the RMS norm.
void BM_QuantizeAct(benchmark::State& state, TensorType act_type, Isa isa, int64_t n) {
  const kernels::KernelTable& k = kernels::table(isa);
  std::vector<float> x(n);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : x) v = dist(rng);
  std::vector<uint8_t> act(row_size_bytes(act_type, n));
  for (auto _ : state) {
    kernels::quantize_activation(k, act_type, x.data(), act.data(), n);
    benchmark::DoNotOptimize(act.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_RmsNorm(benchmark::State& state, Isa isa, int64_t n) {
  const kernels::KernelTable& k = kernels::table(isa);
  std::vector<float> x(n, 0.5f), w(n, 1.0f);
  for (auto _ : state) {
    ops::rmsnorm(k, x.data(), w.data(), n, 1e-5f);
    benchmark::DoNotOptimize(x.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// The bare dot kernel: every row of the matrix against one pre-quantized activation row,
// one thread, no activation quantization in the loop. With a matrix of at most 512 KiB
// (vec_dot_l2) the weights stay in the core's L2, so it measures the kernel's compute alone;
// the 4096x4096 matrix is read from L3, about 27 GB/s for one core here.
void BM_VecDot(benchmark::State& state, TensorType type, Isa isa, int64_t rows) {
  const kernels::KernelTable& k = kernels::table(isa);
  const int64_t cols = 4096;
  const Matrix& m = matrix(type, rows, cols);
  const TensorType act_type = type_traits(type).vec_dot_type;
  std::vector<float> x(cols, 0.5f);
  std::vector<uint8_t> act(row_size_bytes(act_type, cols));
  kernels::quantize_activation(k, act_type, x.data(), act.data(), cols);
  kernels::prepare_activation(k, type, act.data(), cols);
  const size_t row_bytes = row_size_bytes(type, cols);
  const auto dot = k.types[static_cast<uint32_t>(type)].vec_dot;
  for (auto _ : state) {
    float acc = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      float out;
      dot(cols, m.bytes.data() + r * row_bytes, act.data(), 0, 1, &out);
      acc += out;
    }
    benchmark::DoNotOptimize(acc);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(m.bytes.size()));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * rows * cols * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void BM_Dequantize(benchmark::State& state, TensorType type, Isa isa) {
  const kernels::KernelTable& k = kernels::table(isa);
  const int64_t rows = 256, cols = 4096;
  const Matrix& m = matrix(type, 4096, cols);
  std::vector<float> out(cols);
  const size_t row_bytes = row_size_bytes(type, cols);
  for (auto _ : state) {
    for (int64_t r = 0; r < rows; ++r) {
      kernels::dequantize_row(k, type, m.bytes.data() + r * row_bytes, out.data(), cols);
      benchmark::DoNotOptimize(out.data());
    }
  }
  state.SetBytesProcessed(state.iterations() * rows * static_cast<int64_t>(row_bytes));
}

// The GEMM of a prompt: rows x cols weights (a 1.1B model's shapes) times `tokens` random
// activations, 1 or 2 threads; GOP/s counts 2 operations per multiply-add. The machine's peak
// (peak_int8 / peak_f32, same run, per core) gives the fraction reached.
void BM_Gemm(benchmark::State& state, TensorType type, Isa isa, int64_t rows, int64_t cols,
             int64_t tokens) {
  const kernels::KernelTable& k = kernels::table(isa);
  set_threads(static_cast<int>(state.range(0)));
  const Matrix& m = matrix(type, rows, cols);
  const kernels::MatrixView view{type, m.bytes.data(), rows, cols, row_size_bytes(type, cols)};
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(tokens * cols), y(tokens * rows);
  for (float& v : x) v = g(rng);
  kernels::MatmulScratch scratch;
  for (auto _ : state) {
    kernels::matmul(k, view, x.data(), tokens, y.data(), scratch);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GOP/s"] = benchmark::Counter(
      2.0 * rows * cols * tokens * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void BM_Peak(benchmark::State& state, Isa isa, bool int8) {
  const kernels::KernelTable& k = kernels::table(isa);
  int64_t macs = 0;
  for (auto _ : state) macs += int8 ? k.peak_int8_macs(1 << 20) : k.peak_f32_macs(1 << 20);
  state.counters["GOP/s"] = benchmark::Counter(2.0 * macs / 1e9, benchmark::Counter::kIsRate);
}

#if defined(__x86_64__)
// The core's rate of independent vector instructions (billions a second, 24 chains): vpaddd,
// vpdpbusd and vfmadd231ps on 256- and 512-bit registers. On a VM the other hyperthread of the
// host's core may take half of it; attention at depth is bound by these rates (docs/kernels.md,
// session 72), so a sitting's figures read beside them.
template <typename R, int Op>
__attribute__((target("avx512f,avx512vl,avx512vnni"), noinline)) int64_t vector_chains(int64_t n) {
  constexpr int kChains = 24;
  R acc[kChains], b;
  for (int i = 0; i < kChains; ++i) acc[i] = R{} + i;
  b = R{} + n;
  for (int64_t j = 0; j < n; ++j) {
#pragma GCC unroll 24
    for (int i = 0; i < kChains; ++i) {
      if constexpr (Op == 0) {
        asm volatile("vpaddd %1, %0, %0" : "+v"(acc[i]) : "v"(b));
      } else if constexpr (Op == 1) {
        asm volatile("vpdpbusd %1, %1, %0" : "+v"(acc[i]) : "v"(b));
      } else {
        asm volatile("vfmadd231ps %1, %1, %0" : "+v"(acc[i]) : "v"(b));
      }
    }
  }
  R x = acc[0];
  for (int i = 1; i < kChains; ++i) x ^= acc[i];
  return x[0];
}
template <typename R, int Op>
void BM_VectorRate(benchmark::State& state) {
  constexpr int64_t kSteps = 1 << 16;
  for (auto _ : state) benchmark::DoNotOptimize(vector_chains<R, Op>(kSteps));
  state.counters["Ginstr"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kSteps * 24 / 1e9, benchmark::Counter::kIsRate);
}
using Ymm = int64_t __attribute__((vector_size(32)));
using Zmm = int64_t __attribute__((vector_size(64)));
#endif

// The read ceiling's buffer: `bytes` on huge pages where the kernel grants them, as the
// model's re-laid weights are (on 4 KiB pages the stream read 4-10% lower; docs/kernels.md,
// session 50), written once so every page is backed.
kernels::HugeBuffer stream_buffer(int64_t bytes) {
  kernels::HugeBuffer storage = kernels::huge_buffer(static_cast<size_t>(bytes));
  std::memset(storage.get(), 1, static_cast<size_t>(bytes));
  return storage;
}

// The read-bandwidth ceiling: a streaming sum with four independent accumulators of the
// widest vectors per thread (kernels::stream_sum; one chain would be bound by the add
// latency, not by memory), over a buffer far larger than the last-level cache; each
// iteration times passes without software prefetch, with it 2 and 8 KiB ahead (as the gemv
// kernels; on Zen 5 the hardware prefetchers alone left a third of the bandwidth unused) and
// with non-temporal prefetch 8 KiB ahead (as the AVX-512 gemv kernels since session 64), and
// keeps the fastest, so neither a missing prefetch nor a neighbour's burst on the shared
// machine lowers the ceiling.
//
// One pass of n_threads over the buffer, each streaming its share, with one prefetch
// distance (negative: NTA) or, without one, each of kernels::kStreamAheads; seconds.
double stream_pass(int n_threads, const uint8_t* buf, int64_t bytes,
                   std::span<const int64_t> aheads = kernels::kStreamAheads) {
  const std::span<const uint8_t> range[1] = {{buf, static_cast<size_t>(bytes)}};
  const kernels::ReadRate r = kernels::read_rate(range, n_threads, 1, aheads);
  benchmark::DoNotOptimize(r.sum);
  return static_cast<double>(r.bytes) / r.bytes_per_second;
}

// The read ceiling: each thread streams its share of a buffer (the best of every pass).
void BM_ReadBandwidth(benchmark::State& state, int64_t bytes) {
  const int n_threads = static_cast<int>(state.range(0));
  const kernels::HugeBuffer storage = stream_buffer(bytes);
  constexpr std::span<const int64_t> kAhead = kernels::kStreamAheads;
  constexpr int kKinds = static_cast<int>(kAhead.size());
  double best_ahead[kKinds];
  std::fill(best_ahead, best_ahead + kKinds, 1e30);
  for (auto _ : state) {
    double best = 1e30;
    for (int pass = 0; pass < 2 * kKinds; ++pass) {
      const double secs =
          stream_pass(n_threads, storage.get(), bytes, kAhead.subspan(pass % kKinds, 1));
      best = std::min(best, secs);
      best_ahead[pass % kKinds] = std::min(best_ahead[pass % kKinds], secs);
    }
    state.SetIterationTime(best);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  // Each prefetch distance's best rate, GB/s (10^9), beside the ceiling (the best of them).
  for (int i = 0; i < kKinds; ++i) {
    const std::string name = kAhead[i] < 0 ? "GB/s_nta" + std::to_string(-kAhead[i])
                                           : "GB/s_ahead" + std::to_string(kAhead[i]);
    state.counters[name] = static_cast<double>(bytes) / best_ahead[i] / 1e9;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The layer stack's share of the read ceiling, robust to a machine whose bandwidth moves by
// a third within seconds: each iteration streams the stack's own buffer (one pass of each
// prefetch kind, the fastest: the ceiling for those very pages) and, right after, runs its 88
// matmuls (the faster of two passes), and takes their ratio; `share` is the median of those
// ratios. GB/s counts the stack's bytes (10^9).
void BM_RooflineShare(benchmark::State& state, TensorType type, Isa isa) {
  const kernels::KernelTable& k = kernels::table(isa);
  set_threads(static_cast<int>(state.range(0)));
  const MatrixStack st = matrix_stack(type, isa, layer_stack_shapes());
  const auto bytes = static_cast<int64_t>(st.total);
  std::vector<float> x(kFfn, 0.5f), y(st.max_rows);
  kernels::MatmulScratch scratch;
  std::vector<double> shares, ceilings, rates;
  for (auto _ : state) {
    const double ceiling = stream_pass(static_cast<int>(state.range(0)), st.buffer.get(), bytes);
    double stack = 1e30;
    for (int pass = 0; pass < 2; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      for (const kernels::MatrixView& v : st.views) {
        kernels::matmul(k, v, x.data(), 1, y.data(), scratch);
        benchmark::DoNotOptimize(y.data());
      }
      stack = std::min(
          stack, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    state.SetIterationTime(stack);
    ceilings.push_back(static_cast<double>(bytes) / ceiling / 1e9);
    rates.push_back(static_cast<double>(bytes) / stack / 1e9);
    shares.push_back(rates.back() / ceilings.back());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["share"] = median(shares);
  state.counters["ceiling_GB/s"] = median(ceilings);
  state.counters["stack_GB/s"] = median(rates);
}

// The cost of handing two threads an empty step: the thread team's job, its barrier, and
// OpenMP's fork and join and barrier for comparison (docs/kernels.md, "Thread team").
// `steps` per iteration; the time per step is the figure to read.
constexpr int kSyncSteps = 1000;
void BM_TeamJob(benchmark::State& state) {
  for (auto _ : state) {
    for (int i = 0; i < kSyncSteps; ++i) kernels::parallel(2, [](kernels::Team&) {});
  }
  state.SetItemsProcessed(state.iterations() * kSyncSteps);
}
void BM_TeamBarrier(benchmark::State& state) {
  for (auto _ : state) {
    kernels::parallel(2, [](kernels::Team& team) {
      for (int i = 0; i < kSyncSteps; ++i) team.barrier();
    });
  }
  state.SetItemsProcessed(state.iterations() * kSyncSteps);
}
#if defined(_OPENMP)
void BM_OmpForkJoin(benchmark::State& state) {
  int sink = 0;
  for (auto _ : state) {
    for (int i = 0; i < kSyncSteps; ++i) {
#pragma omp parallel num_threads(2)
      benchmark::DoNotOptimize(sink);
    }
  }
  state.SetItemsProcessed(state.iterations() * kSyncSteps);
}
void BM_OmpBarrier(benchmark::State& state) {
  for (auto _ : state) {
#pragma omp parallel num_threads(2)
    for (int i = 0; i < kSyncSteps; ++i) {
#pragma omp barrier
    }
  }
  state.SetItemsProcessed(state.iterations() * kSyncSteps);
}
#endif

void register_all() {
  const int64_t n = 4096, big_bytes = int64_t{144} << 20;  // the big matrix: >= 144 MiB of weights
  // The ceiling over 2 GiB (far past any last-level cache), and over 144 MiB, the size of the
  // gemv_big matrices.
  for (int64_t bytes : {int64_t{2048} << 20, big_bytes}) {
    benchmark::RegisterBenchmark(("read_bandwidth/" + std::to_string(bytes >> 20) + "MiB").c_str(),
                                 BM_ReadBandwidth, bytes)
        ->Arg(1)
        ->Arg(2)
        ->UseManualTime()
        ->Iterations(3);
  }
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl")) {
    benchmark::RegisterBenchmark("vector_rate/vpaddd/ymm", BM_VectorRate<Ymm, 0>);
    benchmark::RegisterBenchmark("vector_rate/vpaddd/zmm", BM_VectorRate<Zmm, 0>);
    benchmark::RegisterBenchmark("vector_rate/vpdpbusd/ymm", BM_VectorRate<Ymm, 1>);
    benchmark::RegisterBenchmark("vector_rate/vpdpbusd/zmm", BM_VectorRate<Zmm, 1>);
    benchmark::RegisterBenchmark("vector_rate/vfmadd231ps/ymm", BM_VectorRate<Ymm, 2>);
    benchmark::RegisterBenchmark("vector_rate/vfmadd231ps/zmm", BM_VectorRate<Zmm, 2>);
  }
#endif
  for (Isa isa : kernels::available_isas()) {
    const std::string is(kernels::isa_name(isa));
    for (int64_t width : {2048, 5632}) {
      std::string w = "/";  // (append: GCC 12's -Wrestrict misfires on "/" + to_string)
      w += std::to_string(width);
      for (TensorType act : {TensorType::Q8_0, TensorType::Q8_1, TensorType::Q8_K}) {
        benchmark::RegisterBenchmark(
            ("quantize_act/" + std::string(type_name(act)) + "/" + is + w).c_str(), BM_QuantizeAct,
            act, isa, width);
      }
      benchmark::RegisterBenchmark(("rmsnorm/" + is + w).c_str(), BM_RmsNorm, isa, width);
    }
  }
  for (uint32_t id = 0; id < kTypeIdCount; ++id) {
    const auto type = static_cast<TensorType>(id);
    if (kernels::table(Isa::kScalar).types[id].vec_dot == nullptr) continue;
    for (Isa isa : kernels::available_isas()) {
      const std::string tag =
          std::string(type_name(type)) + "/" + std::string(kernels::isa_name(isa));
      benchmark::RegisterBenchmark(("dequantize/" + tag).c_str(), BM_Dequantize, type, isa);
      benchmark::RegisterBenchmark(("vec_dot/" + tag).c_str(), BM_VecDot, type, isa, n);
      const int64_t l2_rows = std::clamp<int64_t>(
          (int64_t{512} << 10) / static_cast<int64_t>(row_size_bytes(type, n)), 8, n);
      benchmark::RegisterBenchmark(("vec_dot_l2/" + tag).c_str(), BM_VecDot, type, isa, l2_rows);
      if (has_repacked_gemv(isa, type)) {  // the L2-sized matrix both ways, one thread
        for (bool inter : {false, true}) {
          benchmark::RegisterBenchmark(
              ((inter ? "gemv_l2_interleaved/" : "gemv_l2/") + tag).c_str(), BM_Gemv, type, isa,
              l2_rows / 4 * 4, n, inter)
              ->Arg(1)
              ->UseRealTime();
        }
      }
      benchmark::RegisterBenchmark(("gemv_4096/" + tag).c_str(), BM_Gemv, type, isa, n, n, false)
          ->Arg(1)
          ->Arg(2)
          ->UseRealTime();
      const int64_t row_bytes = static_cast<int64_t>(row_size_bytes(type, n));
      const int64_t big_rows = std::max<int64_t>(4 * n, (big_bytes + row_bytes - 1) / row_bytes);
      for (bool inter : {false, true}) {  // from memory, in the file's layout and interleaved
        if (inter && !has_repacked_gemv(isa, type)) continue;
        benchmark::RegisterBenchmark(
            ((inter ? "gemv_big_interleaved/" : "gemv_big/") + tag).c_str(), BM_Gemv, type, isa,
            big_rows / 4 * 4, n, inter)
            ->Arg(2)
            ->UseRealTime();
      }
    }
  }
  // GEMM at TinyLlama-1.1B's FFN and attention shapes, batch 64 and 512, for the types its
  // quantized files use; one core's peak int8 and f32 rates beside them.
  for (Isa isa : kernels::available_isas()) {
    if (kernels::table(isa).peak_int8_macs == nullptr) continue;
    const std::string is = std::string(kernels::isa_name(isa));
    benchmark::RegisterBenchmark(("peak_int8/" + is).c_str(), BM_Peak, isa, true)->UseRealTime();
    benchmark::RegisterBenchmark(("peak_f32/" + is).c_str(), BM_Peak, isa, false)->UseRealTime();
    for (TensorType type : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K,
                            TensorType::IQ4_XS, TensorType::Q5_0, TensorType::Q2_K, TensorType::F16,
                            TensorType::BF16}) {
      const std::string tag = std::string(type_name(type)) + "/" + is;
      for (int64_t tokens : {64, 512}) {
        // (append, not "/" + to_string: GCC 12's -Wrestrict misfires on the latter)
        std::string t = "/";
        t += std::to_string(tokens);
        benchmark::RegisterBenchmark(("gemm_ffn_up/" + tag + t).c_str(), BM_Gemm, type, isa, 5632,
                                     2048, tokens)
            ->Arg(1)
            ->Arg(2)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("gemm_attn_q/" + tag + t).c_str(), BM_Gemm, type, isa, 2048,
                                     2048, tokens)
            ->Arg(2)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  // The layer stack, on the widest ISA: the re-laid types, and TQ2_0, F16 and BF16 as copies.
  const Isa best = kernels::available_isas().back();
  for (TensorType type :
       {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::IQ4_XS,
        TensorType::Q2_K, TensorType::TQ2_0, TensorType::F16, TensorType::BF16}) {
    benchmark::RegisterBenchmark(
        ("gemv_layers/" + std::string(type_name(type)) + "/" + std::string(kernels::isa_name(best)))
            .c_str(),
        BM_GemvLayers, type, best)
        ->ArgsProduct({{1, 2}, {0, 1, 128}})
        ->ArgNames({"threads", "calls"})
        ->UseRealTime();
  }
  // The same stacks' share of the ceiling, each measured beside it (two threads).
  for (TensorType type : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K,
                          TensorType::IQ4_XS, TensorType::F16, TensorType::BF16}) {
    benchmark::RegisterBenchmark(("roofline_share/" + std::string(type_name(type)) + "/" +
                                  std::string(kernels::isa_name(best)))
                                     .c_str(),
                                 BM_RooflineShare, type, best)
        ->Arg(2)
        ->ArgName("threads")
        ->UseManualTime()
        ->Iterations(15);
  }
  register_attention();  // bench_attention.cpp
  benchmark::RegisterBenchmark("sync/team_job", BM_TeamJob)->UseRealTime();
  benchmark::RegisterBenchmark("sync/team_barrier", BM_TeamBarrier)->UseRealTime();
#if defined(_OPENMP)
  benchmark::RegisterBenchmark("sync/omp_fork_join", BM_OmpForkJoin)->UseRealTime();
  benchmark::RegisterBenchmark("sync/omp_barrier", BM_OmpBarrier)->UseRealTime();
#endif
  // The ceiling again after the kernels, to see how much the shared machine drifted.
  benchmark::RegisterBenchmark("read_bandwidth_again/2048MiB", BM_ReadBandwidth,
                               int64_t{2048} << 20)
      ->Arg(2)
      ->UseManualTime()
      ->Iterations(3);
}

}  // namespace
}  // namespace qinfer

int main(int argc, char** argv) {
  qinfer::register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
