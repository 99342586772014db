// Experiment (not built, not used by the engine; docs/kernels.md, "Attention's instructions
// trimmed; split loads found in the 4-bit gemv", session 73): Q4_0 gemvs over three layouts,
// each checked against a scalar dot (the worst relative error is printed), then timed in GB/s
// of the file's Q4_0 bytes, best of many runs, from L2 on one thread and from memory
// (144 MiB) on two.
// - quad [shift]: 4 rows x 4 blocks a unit, each dword lane of a vector one (row, block), so
//   one conversion and one FMA serve 16 sums with no permutes; the activations prepared per
//   lane. shift moves the unit's four 64-byte vectors off the cache line (0: aligned; 16 or
//   32: every vector load splits across two lines).
// - pairs: the engine's pairs layout and loop (rows_pair_interleaved<Q4_0>), where 3 of 4
//   quant loads split across lines.
// - pairs_aligned: the same loop, four pairs' scales in one line, then their quants.
//   g++ -O2 -std=c++20 -march=native -fopenmp -o /tmp/qx bench/experiments/q4_0_quad_gemv.cpp
//   /tmp/qx quad 0; /tmp/qx quad 16; /tmp/qx pairs; /tmp/qx pairs_aligned
#include <immintrin.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
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

// The engine's pairs layout (PairLayout<Q4_0>): per 4-row group and pair of blocks, 144 bytes:
// 8 f16 scales (block * 4 + row), then each row's 32 bytes (block 2p's 16, then 2p + 1's). With
// kSuper, four pairs make a 576-byte unit: their scales (4 x 16 bytes, one line), then their
// quants (4 x 128 bytes), so every 64-byte load is aligned. The kernel's loop is the engine's
// rows_pair_interleaved<Q4_0> (avx512_legacy.inl) with GFNI's high nibbles.
constexpr int kPair = 144;
template <bool kSuper>
void pack_pairs(const BlockQ4* rows, int64_t n_rows, int64_t nb, uint8_t* out) {
  const int64_t np = nb / 2;
  for (int64_t g = 0; g < n_rows / 4; ++g) {
    uint8_t* gp = out + g * np * kPair;
    for (int64_t p = 0; p < np; ++p) {
      uint8_t* sc = kSuper ? gp + (p / 4) * 4 * kPair + (p % 4) * 16 : gp + p * kPair;
      uint8_t* qs = kSuper ? gp + (p / 4) * 4 * kPair + 64 + (p % 4) * 128 : sc + 16;
      for (int b = 0; b < 2; ++b) {
        for (int r = 0; r < 4; ++r) {
          const BlockQ4& blk = rows[(g * 4 + r) * nb + 2 * p + b];
          std::memcpy(sc + 2 * (b * 4 + r), &blk.d, 2);
          std::memcpy(qs + 32 * r + 16 * b, blk.qs, 16);
        }
      }
    }
  }
}
// Per pair, 128 bytes: lo (values 0-15 of both blocks), hi (16-31), d (d0 x 4, d1 x 4), and
// -8 x the lanes' sums (lanes 0-3 block 0, 4-7 block 1).
constexpr int kActPair = 128;
void prep_act_pairs(const BlockQ8* y, int64_t nb, uint8_t* out) {
  for (int64_t p = 0; p < nb / 2; ++p) {
    uint8_t* a = out + p * kActPair;
    for (int b = 0; b < 2; ++b) {
      std::memcpy(a + 16 * b, y[2 * p + b].qs, 16);
      std::memcpy(a + 32 + 16 * b, y[2 * p + b].qs + 16, 16);
      const float d = h2f(y[2 * p + b].d);
      for (int l = 0; l < 4; ++l) {
        std::memcpy(a + 64 + 4 * (4 * b + l), &d, 4);
        int32_t s = 0;
        for (int i = 0; i < 4; ++i)
          s += y[2 * p + b].qs[4 * l + i] + y[2 * p + b].qs[16 + 4 * l + i];
        s *= -8;
        std::memcpy(a + 96 + 4 * (4 * b + l), &s, 4);
      }
    }
  }
}
template <bool kSuper>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,gfni,f16c"))) void gemv_pairs(
    const uint8_t* w, int64_t n_rows, int64_t nb, const uint8_t* act, float* out) {
  const __m512i mask = _mm512_set1_epi8(0x0f);
  const __m512i shr4 = _mm512_set1_epi64(0x1020408000000000LL);
  const __m512i pick01 = _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5);
  const __m512i pick23 = _mm512_add_epi32(pick01, _mm512_set1_epi32(2));
  const int64_t np = nb / 2;
  for (int64_t g = 0; g < n_rows / 4; ++g) {
    const uint8_t* gp = w + g * np * kPair;
    __m512 acc01 = _mm512_setzero_ps(), acc23 = _mm512_setzero_ps();
    for (int64_t p = 0; p < np; ++p) {
      const uint8_t* sc = kSuper ? gp + (p / 4) * 4 * kPair + (p % 4) * 16 : gp + p * kPair;
      const uint8_t* qs = kSuper ? gp + (p / 4) * 4 * kPair + 64 + (p % 4) * 128 : sc + 16;
      const uint8_t* ahead = gp + p * kPair + 8192;
      for (int l = 0; l < 3; ++l)
        _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_NTA);
      const uint8_t* ya = act + p * kActPair;
      const __m512i ylo =
          _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ya)));
      const __m512i yhi =
          _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ya + 32)));
      const __m512i start =
          _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ya + 96)));
      auto rows = [&](int r) {
        const __m512i q = _mm512_loadu_si512(qs + 32 * r);
        const __m512i lo = _mm512_and_si512(q, mask);
        const __m512i hi = _mm512_gf2p8affine_epi64_epi8(q, shr4, 0);
        return _mm512_cvtepi32_ps(
            _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(start, lo, ylo), hi, yhi));
      };
      const __m256 scales = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
      const __m512 sd = _mm512_castps256_ps512(
          _mm256_mul_ps(scales, _mm256_loadu_ps(reinterpret_cast<const float*>(ya + 64))));
      acc01 = _mm512_fmadd_ps(rows(0), _mm512_permutexvar_ps(pick01, sd), acc01);
      acc23 = _mm512_fmadd_ps(rows(2), _mm512_permutexvar_ps(pick23, sd), acc23);
    }
    const __m512 a = _mm512_add_ps(_mm512_shuffle_f32x4(acc01, acc23, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(acc01, acc23, _MM_SHUFFLE(3, 1, 3, 1)));
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, a);
    for (int r = 0; r < 4; ++r) {
      out[4 * g + r] = (lanes[4 * r] + lanes[4 * r + 1]) + (lanes[4 * r + 2] + lanes[4 * r + 3]);
    }
  }
}

int main(int argc, char** argv) {
  // quad [shift] | pairs | pairs_aligned
  const std::string mode = argc > 1 ? argv[1] : "quad";
  g_mis = argc > 2 ? std::atoi(argv[2]) : 0;
  const int64_t n = 4096, nb = n / 32;
  const int64_t rows_l2 = 224, rows_big = 65536;  // 0.5 MB; 144 MiB
  struct Layout {
    size_t group_bytes, act_bytes;  // for nb blocks
    void (*pack)(const BlockQ4*, int64_t, int64_t, uint8_t*);
    void (*prep)(const BlockQ8*, int64_t, uint8_t*);
    void (*gemv)(const uint8_t*, int64_t, int64_t, const uint8_t*, float*);
  };
  Layout L;
  if (mode == "quad") {
    L = {static_cast<size_t>(nb / 4 * kUnit), static_cast<size_t>(nb / 4 * kActQuad), pack,
         prep_act, gemv_quad};
  } else if (mode == "pairs" || mode == "pairs_aligned") {
    const bool super = mode == "pairs_aligned";
    L = {static_cast<size_t>(nb / 2 * kPair), static_cast<size_t>(nb / 2 * kActPair),
         super ? pack_pairs<true> : pack_pairs<false>, prep_act_pairs,
         super ? gemv_pairs<true> : gemv_pairs<false>};
  } else {
    std::fprintf(stderr, "usage: %s quad [shift] | pairs | pairs_aligned\n", argv[0]);
    return 1;
  }
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
  auto* act = static_cast<uint8_t*>(std::aligned_alloc(64, L.act_bytes));
  L.prep(y.data(), nb, act);
  for (int64_t rows : {rows_l2, rows_big}) {
    auto w = make(rows);
    const size_t bytes_all = rows / 4 * L.group_bytes, huge = size_t{2} << 20;
    auto* packed =
        static_cast<uint8_t*>(std::aligned_alloc(huge, (bytes_all + huge - 1) / huge * huge));
    madvise(packed, bytes_all, MADV_HUGEPAGE);
    L.pack(w.data(), rows, nb, packed);
    std::vector<float> out(rows);
    L.gemv(packed, rows, nb, act, out.data());
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
      worst = std::max(worst, std::fabs(s - out[r]) / (std::fabs(s) + 1e-3));
    }
    const int threads = rows == rows_l2 ? 1 : 2;
    const double bytes = double(rows) * nb * 18;  // file bytes
    double best = 1e30;
    for (int rep = 0; rep < (rows == rows_l2 ? 2000 : 20); ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
      {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        const int64_t g0 = rows / 4 * t / T, g1 = rows / 4 * (t + 1) / T;
        L.gemv(packed + g0 * L.group_bytes, (g1 - g0) * 4, nb, act, out.data() + 4 * g0);
      }
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("%s rows %ld threads %d: %.1f GB/s (best), worst relative error %.2g\n",
                mode.c_str(), rows, threads, bytes / best / 1e9, worst);
    std::free(packed);
  }
  std::free(act);
}
