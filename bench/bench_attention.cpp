// Attention benchmarks: one layer or a token's 22 at TinyLlama-1.1B's shape, several caches,
// layouts and schedules; and a token at depth 4096 with its matmuls (token_layers).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "kernels/attention.hpp"
#include "kernels/float_conv.hpp"

namespace qinfer::bench {
namespace {

// Attention at TinyLlama-1.1B's shape (32 query heads on 4 KV heads of 64, f16 cache, K in
// tiles) by default, one thread, every KV head: `tokens` queries at the end of a context of
// `n_pos` positions (1: generation at that depth; 16: one work unit of a prompt). GFLOP/s
// counts Q.K and P.V. With `layers` > 1 each iteration runs that many layers' caches, as a
// token does (22 at depth 4096: 88 MB, read from memory); `head_major` lays each KV head's
// positions together (else position-major rows: each head's part of a row, row after row).
// With more threads, the schedule of attention_all (whether a KV head's key chunks are split).
struct AttentionCase {
  int64_t tokens, n_pos, layers = 1;
  bool head_major = true;
  int64_t n_head = 32, n_kv = 4, hd = 64;
  int threads = 1;
  kernels::AttentionSchedule schedule = kernels::AttentionSchedule::kAuto;
  TensorType cache = TensorType::F16;  // K and V: f16, q8_0 or q4_0 (K in tiles)
};
// The caches of c.layers layers (random rows; K in tiles) and the arguments that read them
// (k_base and v_base: layer 0's), for c.tokens queries at the end of c.n_pos positions.
struct AttentionSetup {
  std::vector<std::vector<uint8_t>> kc, vc;
  std::vector<float> q, out;
  kernels::AttentionArgs a;
  void use_layer(int64_t l) {
    a.k_base = kc[l].data();
    a.v_base = vc[l].data();
  }
};
void attention_setup(const AttentionCase& c, AttentionSetup& st) {
  const int64_t tokens = c.tokens, n_pos = c.n_pos, layers = c.layers;
  const int64_t n_head = c.n_head, n_kv = c.n_kv, hd = c.hd;
  const size_t head_bytes = row_size_bytes(c.cache, hd), row_bytes = head_bytes * n_kv;
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  auto& kc = st.kc;
  auto& vc = st.vc;
  kc.resize(layers);
  vc.resize(layers);
  // Where the layout puts KV head h's row of position p (for K, before tiling).
  auto row_at = [&](int64_t p, int64_t h) {
    return c.head_major ? (h * n_pos + p) * head_bytes : p * row_bytes + h * head_bytes;
  };
  for (int64_t l = 0; l < layers; ++l) {
    kc[l].resize(row_bytes * n_pos);
    vc[l].resize(row_bytes * n_pos);
    if (c.cache == TensorType::F16) {
      for (size_t i = 0; i < kc[l].size() / 2; ++i) {  // random halves: any layout is as random
        const uint16_t a = fp32_to_fp16(g(rng)), b = fp32_to_fp16(g(rng));
        std::memcpy(kc[l].data() + 2 * i, &a, 2);
        std::memcpy(vc[l].data() + 2 * i, &b, 2);
      }
      continue;
    }
    // Quantized rows of random values; each head's K rows then into tiles.
    std::vector<float> x(hd);
    std::vector<uint8_t> k_row(head_bytes);
    const auto quantize = kernels::reference_quantizer(c.cache);
    for (int64_t p = 0; p < n_pos; ++p) {
      for (int64_t h = 0; h < n_kv; ++h) {
        for (float& v : x) v = g(rng);
        quantize(x.data(), k_row.data(), hd);
        const size_t head0 =
            c.head_major ? h * n_pos * head_bytes : h * kernels::kKeyTile * head_bytes;
        kernels::store_key_tiled(c.cache, k_row.data(), 0, hd, p, kc[l].data() + head0,
                                 c.head_major ? head_bytes : row_bytes);
        for (float& v : x) v = g(rng);
        quantize(x.data(), vc[l].data() + row_at(p, h), hd);
      }
    }
  }
  st.q.resize(tokens * n_head * hd);
  st.out.resize(tokens * n_head * hd);
  for (float& v : st.q) v = g(rng);
  kernels::AttentionArgs& a = st.a;
  a.q = st.q.data();
  a.q_token_stride = n_head * hd;
  a.out = st.out.data();
  a.out_token_stride = n_head * hd;
  a.n_head = n_head;
  a.n_head_kv = n_kv;
  a.head_dim_k = a.head_dim_v = hd;
  a.pos0 = n_pos - tokens;
  a.scale = 0.125f;
  a.k_type = a.v_type = c.cache;
  a.k_tiled = true;
  // Head-major: a head's rows are head_bytes apart. Position-major: rows of every head,
  // and the tiles of a head's part (16 positions of it) 16 head parts apart.
  a.k_pos_stride = a.v_pos_stride = c.head_major ? head_bytes : row_bytes;
  a.k_head_stride = c.head_major ? n_pos * head_bytes : kernels::kKeyTile * head_bytes;
  a.v_head_stride = c.head_major ? n_pos * head_bytes : head_bytes;
  st.use_layer(0);
}

void BM_Attention(benchmark::State& state, Isa isa, AttentionCase c) {
  const kernels::KernelTable& k = kernels::table(isa);
  set_threads(c.threads);
  AttentionSetup st;
  attention_setup(c, st);
  kernels::AttentionBuffers buffers;
  for (auto _ : state) {
    for (int64_t l = 0; l < c.layers; ++l) {
      st.use_layer(l);
      kernels::attention_all(k, st.a, c.tokens, buffers, c.schedule);
    }
    benchmark::DoNotOptimize(st.out.data());
  }
  // keys seen: each query its position + 1
  const double keys =
      static_cast<double>(c.tokens) * (c.n_pos - c.tokens) + c.tokens * (c.tokens + 1) / 2.0;
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * c.hd * c.n_head * keys * c.layers * state.iterations() / 1e9,
                         benchmark::Counter::kIsRate);
  set_threads(1);
}

// A token at depth 4096 of TinyLlama-1.1B's shape on two threads: per layer the QKV matmul,
// attention over that layer's cache, then the output projection, gate/up and down; 22 layers.
// Counters: the attention's and the matmuls' milliseconds a token, so a change to either
// shows with the other's traffic around it (docs/kernels.md, session 67).
void BM_TokenLayers(benchmark::State& state, TensorType type, Isa isa, TensorType cache) {
  const kernels::KernelTable& k = kernels::table(isa);
  set_threads(2);
  const MatrixStack ms = matrix_stack(type, isa, layer_stack_shapes());
  AttentionSetup st;
  attention_setup(AttentionCase{.tokens = 1, .n_pos = 4096, .layers = kLayers, .cache = cache}, st);
  kernels::AttentionBuffers buffers;
  std::vector<float> x(kFfn, 0.5f), y(ms.max_rows);
  kernels::MatmulScratch scratch;
  using Clock = std::chrono::steady_clock;
  Clock::duration attention{}, total{};
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    for (int64_t l = 0; l < kLayers; ++l) {
      const kernels::MatrixView* v = ms.views.data() + 4 * l;
      kernels::matmul(k, v[0], x.data(), 1, y.data(), scratch);
      st.use_layer(l);
      const Clock::time_point t0 = Clock::now();
      kernels::attention_all(k, st.a, 1, buffers);
      attention += Clock::now() - t0;
      for (int i = 1; i < 4; ++i) kernels::matmul(k, v[i], x.data(), 1, y.data(), scratch);
    }
    total += Clock::now() - start;
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(st.out.data());
  }
  const double ms_per = 1e3 / static_cast<double>(state.iterations());
  state.counters["attention_ms"] = std::chrono::duration<double>(attention).count() * ms_per;
  state.counters["matmuls_ms"] = std::chrono::duration<double>(total - attention).count() * ms_per;
  set_threads(1);
}

}  // namespace

void register_attention() {
  const Isa best = kernels::available_isas().back();
  for (TensorType cache : {TensorType::F16, TensorType::Q8_0, TensorType::Q4_0}) {
    benchmark::RegisterBenchmark(("token_layers/q4_0/" + std::string(kernels::isa_name(best)) +
                                  "/ctx4096/" + std::string(type_name(cache)))
                                     .c_str(),
                                 BM_TokenLayers, TensorType::Q4_0, best, cache)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (Isa isa : kernels::available_isas()) {
    if (isa == Isa::kScalar) continue;
    const std::string is = std::string(kernels::isa_name(isa));
    for (auto [tokens, n_pos] :
         {std::pair<int64_t, int64_t>{1, 128}, {1, 4096}, {16, 512}, {16, 4096}, {512, 512}}) {
      benchmark::RegisterBenchmark(
          ("attention/" + is + "/q" + std::to_string(tokens) + "/ctx" + std::to_string(n_pos))
              .c_str(),
          BM_Attention, isa, AttentionCase{.tokens = tokens, .n_pos = n_pos})
          ->Unit(benchmark::kMicrosecond);
    }
    // A q8_0 cache (K and V), as -ctk q8_0 -ctv q8_0: generation at depth, one layer and 22.
    for (int64_t layers : {1, 22}) {
      benchmark::RegisterBenchmark(
          ("attention_q8_0/" + is + "/q1/ctx4096/layers" + std::to_string(layers)).c_str(),
          BM_Attention, isa,
          AttentionCase{.tokens = 1, .n_pos = 4096, .layers = layers, .cache = TensorType::Q8_0})
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(
        ("attention_q8_0/" + is + "/q16/ctx512").c_str(), BM_Attention, isa,
        AttentionCase{.tokens = 16, .n_pos = 512, .cache = TensorType::Q8_0})
        ->Unit(benchmark::kMicrosecond);
    for (bool head_major : {true, false}) {
      benchmark::RegisterBenchmark(
          ("attention_layers/" + is + "/q1/ctx4096/layers22/" +
           (head_major ? "head_major" : "position_major"))
              .c_str(),
          BM_Attention, isa,
          AttentionCase{.tokens = 1, .n_pos = 4096, .layers = 22, .head_major = head_major})
          ->Unit(benchmark::kMicrosecond);
    }
    // A token's attention at depth 4096 as the engine runs it: 22 layers, two threads (and
    // one layer, its cache in L3, to compare); with the f16, q8_0 and q4_0 caches.
    for (TensorType cache : {TensorType::F16, TensorType::Q8_0, TensorType::Q4_0}) {
      for (int64_t layers : {1, 22}) {
        benchmark::RegisterBenchmark(
            ("attention_layers/" + is + "/q1/ctx4096/layers" + std::to_string(layers) +
             "/head_major/" + std::string(type_name(cache)) + "/threads:2")
                .c_str(),
            BM_Attention, isa,
            AttentionCase{
                .tokens = 1, .n_pos = 4096, .layers = layers, .threads = 2, .cache = cache})
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
    // Generation on one KV head (8 query heads of 256 on it), two threads: the KV head's key
    // chunks split over the threads, or the head on one thread; one layer (its cache in L3)
    // and 22.
    for (int64_t layers : {1, 22}) {
      for (auto schedule :
           {kernels::AttentionSchedule::kAuto, kernels::AttentionSchedule::kHeads}) {
        benchmark::RegisterBenchmark(
            ("attention_threads/" + is + "/q1/ctx4096/layers" + std::to_string(layers) + "/kv1/2/" +
             (schedule == kernels::AttentionSchedule::kAuto ? "split" : "heads"))
                .c_str(),
            BM_Attention, isa,
            AttentionCase{.tokens = 1,
                          .n_pos = 4096,
                          .layers = layers,
                          .n_head = 8,
                          .n_kv = 1,
                          .hd = 256,
                          .threads = 2,
                          .schedule = schedule})
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace qinfer::bench
