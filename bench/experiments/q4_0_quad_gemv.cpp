// Experiment (not built, not used by the engine; docs/kernels.md, "Split loads, and a 4-block
// Q4_0 layout", session 73): a Q4_0 gemv over a "quad" layout, 4 rows x 4 blocks per unit,
// each dword lane of a vector one (row, block), so one conversion and one FMA serve 16
// (row, block) sums with no permutes; the activations prepared per lane. Checked against a
// scalar dot (relative error printed), then timed: GB/s of the file's Q4_0 bytes, best of
// many runs, from L2 on one thread and from memory (144 MiB) on two.
// The argument shifts the unit's four 64-byte vectors off the cache line (0: aligned; 16 or
// 32: every vector load splits across two lines, as 3 of 4 of the pairs kernel's do).
//   g++ -O2 -std=c++20 -march=native -fopenmp -o /tmp/quad bench/experiments/q4_0_quad_gemv.cpp
//   /tmp/quad 0; /tmp/quad 16
#include <immintrin.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include <sys/mman.h>
#include <utility>

static float h2f(uint16_t h) { return _cvtsh_ss(h); }
static uint16_t f2h(float f) { return _cvtss_sh(f, 0); }

struct BlockQ4 {
  uint16_t d;
  uint8_t qs[16];
};
struct BlockQ8 {
  uint16_t d;
  int8_t qs[32];
};

// Quad unit: 4 vectors V_k (from byte g_mis): lane j = bytes 4k..4k+3 of (row r, block b),
// j = 4b + r; then 16 f16 scales (lane j's at 288 + 2j). Padded to 320 bytes so that the
// vectors can be shifted; an engine layout would take 288 (alternating the scales' side
// keeps every other unit's vectors aligned).
constexpr int kUnit = 320;
static int g_mis = 0;
inline int v_at(int64_t) { return g_mis; }
inline int s_at(int64_t) { return 288; }

void pack(const BlockQ4* rows, int64_t n_rows, int64_t nb, uint8_t* out) {
  for (int64_t g = 0; g < n_rows / 4; ++g) {
    for (int64_t q = 0; q < nb / 4; ++q) {
      uint8_t* u = out + (g * (nb / 4) + q) * kUnit;
      for (int b = 0; b < 4; ++b) {
        for (int r = 0; r < 4; ++r) {
          const BlockQ4& blk = rows[(g * 4 + r) * nb + q * 4 + b];
          const int j = 4 * b + r;
          std::memcpy(u + s_at(q) + 2 * j, &blk.d, 2);
          for (int k = 0; k < 4; ++k) std::memcpy(u + v_at(q) + 64 * k + 4 * j, blk.qs + 4 * k, 4);
        }
      }
    }
  }
}

// Activations per quad: YL_k, YH_k (k = 0..3, 64 B each), D (16 floats), S (16 int32).
constexpr int kActQuad = 8 * 64 + 64 + 64;
void prep_act(const BlockQ8* y, int64_t nb, uint8_t* out) {
  for (int64_t q = 0; q < nb / 4; ++q) {
    uint8_t* a = out + q * kActQuad;
    for (int j = 0; j < 16; ++j) {
      const BlockQ8& blk = y[q * 4 + j / 4];
      for (int k = 0; k < 4; ++k) {
        std::memcpy(a + 128 * k + 4 * j, blk.qs + 4 * k, 4);
        std::memcpy(a + 128 * k + 64 + 4 * j, blk.qs + 16 + 4 * k, 4);
      }
      float d = h2f(blk.d);
      std::memcpy(a + 512 + 4 * j, &d, 4);
      int32_t s = 0;
      for (int i = 0; i < 32; ++i) s += blk.qs[i];
      s *= -8;
      std::memcpy(a + 576 + 4 * j, &s, 4);
    }
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,gfni,f16c"))) void gemv_quad(
    const uint8_t* w, int64_t n_rows, int64_t nb, const uint8_t* act, float* out) {
  const __m512i mask = _mm512_set1_epi8(0x0f);
  // gf2p8affine: (x >> 4) & 15 per byte.
  const __m512i shr4 = _mm512_set1_epi64(0x1020408000000000LL);
  const int64_t nq = nb / 4;
  const int mis = g_mis;
  for (int64_t g = 0; g < n_rows / 4; ++g) {
    const uint8_t* u = w + g * nq * kUnit;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t q = 0; q < nq; q += 2) {
      auto quad = [&](const uint8_t* uu, const uint8_t* a, int vo, int so) {
        _mm_prefetch(reinterpret_cast<const char*>(uu + 8192), _MM_HINT_NTA);
        _mm_prefetch(reinterpret_cast<const char*>(uu + 8192 + 64), _MM_HINT_NTA);
        _mm_prefetch(reinterpret_cast<const char*>(uu + 8192 + 128), _MM_HINT_NTA);
        _mm_prefetch(reinterpret_cast<const char*>(uu + 8192 + 192), _MM_HINT_NTA);
        _mm_prefetch(reinterpret_cast<const char*>(uu + 8192 + 256), _MM_HINT_NTA);
        __m512i s[4] = {_mm512_loadu_si512(a + 576), _mm512_setzero_si512(), _mm512_setzero_si512(),
                        _mm512_setzero_si512()};
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const __m512i v = _mm512_loadu_si512(uu + vo + 64 * k);
          const __m512i lo = _mm512_and_si512(v, mask);
          const __m512i hi = _mm512_gf2p8affine_epi64_epi8(v, shr4, 0);
          s[(2 * k) % 4] = _mm512_dpbusd_epi32(s[(2 * k) % 4], lo, _mm512_loadu_si512(a + 128 * k));
          s[(2 * k + 1) % 4] =
              _mm512_dpbusd_epi32(s[(2 * k + 1) % 4], hi, _mm512_loadu_si512(a + 128 * k + 64));
        }
        const __m512i s0 = _mm512_add_epi32(s[0], s[2]), s1 = _mm512_add_epi32(s[1], s[3]);
        const __m512 sd = _mm512_mul_ps(
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(uu + so))),
            _mm512_loadu_ps(reinterpret_cast<const float*>(a + 512)));
        return std::pair{_mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)), sd};
      };
      {
        auto [f, sd] = quad(u + q * kUnit, act + q * kActQuad, mis, 288);
        acc0 = _mm512_fmadd_ps(f, sd, acc0);
      }
      if (q + 1 < nq) {
        auto [f, sd] = quad(u + (q + 1) * kUnit, act + (q + 1) * kActQuad, mis, 288);
        acc1 = _mm512_fmadd_ps(f, sd, acc1);
      }
    }
    const __m512 a = _mm512_add_ps(acc0, acc1);
    // lane j = 4b + r: sum the four 128-bit lanes.
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    const __m128 r = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    _mm_storeu_ps(out + 4 * g, r);
  }
}

int main(int argc, char** argv) {
  g_mis = argc > 1 ? std::atoi(argv[1]) : 0;
  const int64_t n = 4096, nb = n / 32;
  const int64_t rows_l2 = 224, rows_big = 65536;  // 0.5 MB; 144 MiB
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> g(0, 1);
  auto make = [&](int64_t rows) {
    std::vector<BlockQ4> w(rows * nb);
    for (auto& b : w) {
      b.d = f2h(0.01f * (1 + g(rng) * 0.1f));
      for (auto& q : b.qs) q = byte(rng);
    }
    return w;
  };
  std::vector<BlockQ8> y(nb);
  for (auto& b : y) {
    b.d = f2h(0.02f);
    for (auto& q : b.qs) q = static_cast<int8_t>(byte(rng) - 128);
  }
  uint8_t* actp = static_cast<uint8_t*>(std::aligned_alloc(64, nb / 4 * kActQuad));
  struct {
    uint8_t* p;
    uint8_t* data() { return p; }
  } act{actp};
  prep_act(y.data(), nb, act.data());
  for (int64_t rows : {rows_l2, rows_big}) {
    auto w = make(rows);
    struct {
      uint8_t* p;
      uint8_t* data() { return p; }
    } packed{static_cast<uint8_t*>(std::aligned_alloc(
        2 << 20, (rows / 4 * nb / 4 * kUnit + (2 << 20) - 1) / (2 << 20) * (2 << 20)))};
    madvise(packed.p, rows / 4 * nb / 4 * kUnit, MADV_HUGEPAGE);
    pack(w.data(), rows, nb, packed.data());
    std::vector<float> out(rows), ref(rows);
    gemv_quad(packed.data(), rows, nb, act.data(), out.data());
    double worst = 0;
    for (int64_t r = 0; r < std::min<int64_t>(rows, 512); ++r) {
      double s = 0;
      for (int64_t b = 0; b < nb; ++b) {
        const BlockQ4& x = w[r * nb + b];
        int32_t t = 0;
        for (int i = 0; i < 16; ++i) {
          t += ((x.qs[i] & 15) - 8) * y[b].qs[i] + ((x.qs[i] >> 4) - 8) * y[b].qs[16 + i];
        }
        s += double(h2f(x.d)) * h2f(y[b].d) * t;
      }
      ref[r] = s;
      worst = std::max(worst, std::fabs(s - out[r]) / (std::fabs(s) + 1e-3));
    }
    std::printf("rows %ld: worst relative error %.3g\n", rows, worst);
    const int threads = rows == rows_l2 ? 1 : 2;
    const double bytes = double(rows) * nb * 18;  // file bytes
    double best = 1e30;
    for (int rep = 0; rep < (rows == rows_l2 ? 2000 : 20); ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
      {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        const int64_t g0 = rows / 4 * t / T, g1 = rows / 4 * (t + 1) / T;
        gemv_quad(packed.data() + g0 * nb / 4 * kUnit, (g1 - g0) * 4, nb, act.data(),
                  out.data() + 4 * g0);
      }
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("rows %ld threads %d: %.1f GB/s (best)\n", rows, threads, bytes / best / 1e9);
  }
}
