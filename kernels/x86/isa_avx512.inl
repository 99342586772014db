// ISA traits for the x86 kernel templates, AVX-512 F/BW/VL/VNNI: vpdpbusd for the integer
// dot (no intermediate saturation), 512-bit float batches. Included inside an anonymous
// namespace by the avx512_*.cpp translation units.
struct Avx512 {
  using arch = xsimd::avx512bw;
  static __m256i dot_u8s8(__m256i ux, __m256i sy) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), ux, sy);
  }
  static constexpr bool kVnni = true;
  // How far ahead the gemv kernels prefetch the weights (x86_common.inl): on Zen 5, 8 KiB read
  // the interleaved Q4_0 matrix at 77-81 GB/s against 57-65 with 2 KiB (alternating runs).
  static constexpr int64_t kPrefetchAhead = 8192;
  // Their locality (__builtin_prefetch's): 0, prefetchnta, so a token's stream through the
  // weights does not evict the activations and the KV cache (docs/kernels.md, session 64).
  static constexpr int kPrefetchLocality = 0;
  // acc + dot_u8s8(ux, sy), in one vpdpbusd
  static __m256i dot_acc(__m256i acc, __m256i ux, __m256i sy) {
    return _mm256_dpbusd_epi32(acc, ux, sy);
  }
  // acc + madd(a, b) (pairs of 16-bit products), in one vpdpwssd
  static __m256i madd_acc(__m256i acc, __m256i a, __m256i b) {
    return _mm256_dpwssd_epi32(acc, a, b);
  }
  static xsimd::batch<float, arch> load_f16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  // Each lane rounded to the nearest f16 and back.
  static xsimd::batch<float, arch> round_f16(xsimd::batch<float, arch> x) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
  static xsimd::batch<float, arch> load_bf16(const uint8_t* p) {
    const __m512i w =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static xsimd::batch<float, arch> fma(xsimd::batch<float, arch> a, xsimd::batch<float, arch> b,
                                       xsimd::batch<float, arch> c) {
    return _mm512_fmadd_ps(a, b, c);
  }
  // j * 2^n for integer-valued n (|n| <= 192) in one vscalefps: one rounding, as ldexp.
  static xsimd::batch<float, arch> scale_pow2(xsimd::batch<float, arch> j,
                                              xsimd::batch<float, arch> n) {
    return _mm512_scalef_ps(j, n);
  }
  // Horizontal sum in the order of GCC's _mm512_reduce_add_ps (as ggml's tinyBLAS hsum).
  static float reduce(xsimd::batch<float, arch> v) { return _mm512_reduce_add_ps(v); }
  // BF16 dot for the gemv: the exact shift to f32 and FMAs (dot_bf16), or (the avx512 table
  // where the CPU has AVX512_BF16) vdpbf16ps (dot_bf16_pairs), two products a lane, one instruction
  // per 32 values; four accumulators either way (one chain was latency-bound: 8 bytes a cycle). Not
  // ggml's order (the fidelity rule allows it; tolerance tests against the scalar reference).
  [[gnu::target("avx512bf16")]] static float dot_bf16_pairs(const uint16_t* x, const uint16_t* y,
                                                            int64_t n) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 128 <= n; i += 128) {
      for (int j = 0; j < 4; ++j) {  // as far ahead as the other gemv kernels (prefetch_ahead)
        __builtin_prefetch(reinterpret_cast<const char*>(x + i + 32 * j) + kPrefetchAhead, 0,
                           kPrefetchLocality);
        acc[j] =
            _mm512_dpbf16_ps(acc[j], reinterpret_cast<__m512bh>(_mm512_loadu_si512(x + i + 32 * j)),
                             reinterpret_cast<__m512bh>(_mm512_loadu_si512(y + i + 32 * j)));
      }
    }
    for (; i + 32 <= n; i += 32) {
      acc[0] = _mm512_dpbf16_ps(acc[0], reinterpret_cast<__m512bh>(_mm512_loadu_si512(x + i)),
                                reinterpret_cast<__m512bh>(_mm512_loadu_si512(y + i)));
    }
    float sum = _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[1], acc[3])));
    for (; i < n; ++i) sum += bf16_to_fp32(x[i]) * bf16_to_fp32(y[i]);
    return sum;
  }
  static float dot_bf16(const uint16_t* x, const uint16_t* y, int64_t n) {
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
      for (int j = 0; j < 2; ++j) {
        __builtin_prefetch(reinterpret_cast<const char*>(x + i + 32 * j) + kPrefetchAhead, 0,
                           kPrefetchLocality);
        const __m512i a = _mm512_loadu_si512(x + i + 32 * j),
                      b = _mm512_loadu_si512(y + i + 32 * j);
        acc[2 * j] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(a, high)),
                                     _mm512_castsi512_ps(_mm512_and_si512(b, high)), acc[2 * j]);
        acc[2 * j + 1] =
            _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(a, 16)),
                            _mm512_castsi512_ps(_mm512_slli_epi32(b, 16)), acc[2 * j + 1]);
      }
    }
    float sum = _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[1], acc[3])));
    for (; i < n; ++i) sum += bf16_to_fp32(x[i]) * bf16_to_fp32(y[i]);
    return sum;
  }
};
using IsaTraits = Avx512;

// The sum of a vector's four 128-bit lanes as 32-bit integers (exact): in the interleaved
// 512-bit gemvs lane L holds row L % 4, so this gives the four rows' sums.
inline __m128i row_ints(__m512i v) {
  const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// 64 bytes of weights by two 32-byte loads: single 64-byte loads that straddle cache lines
// ran at half speed on matrices streamed from memory (Zen 5, measured, in the 4-bit block
// dots; not when cached, and the grid types' loads did not change measurably).
inline __m512i load_halves(const void* p) {
  const auto* h = static_cast<const __m256i*>(p);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(h)),
                            _mm256_loadu_si256(h + 1), 1);
}

// The high nibble of each byte, in bits 0-3. In a unit built with GFNI (the VBMI table's,
// avx512vbmi_kquants.cpp) one vgf2p8affineqb (output bit i = input bit i + 4) instead of a
// 16-bit shift and a mask: on Intel's cores all three run on the two 512-bit ports that the
// gemvs' other ops need (docs/kernels.md, session 56).
inline __m512i high_nibbles(__m512i v) {
#if defined(__GFNI__)
  return _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64(0x1020408000000000), 0);
#else
  return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f));
#endif
}

// The nibbles of two 16-byte runs in element order: [q0 low | q0 high | q1 low | q1 high]
// (the layout of two Q4_0-style blocks, or of two IQ4_XS sub-blocks).
inline __m512i nibbles2(const uint8_t* q0, const uint8_t* q1) {
  const __m256i q = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q0))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(q1)), 1);
  const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
  return _mm512_and_si512(_mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0)),
                          _mm512_set1_epi8(0x0f));
}

// A 16-entry signed table plus 128 (unsigned bytes for vpdpbusd), in every 128-bit lane.
struct ShiftedTable {
  __m512i v;
  explicit ShiftedTable(const int8_t* t) {
    alignas(16) uint8_t b[16];
    for (int k = 0; k < 16; ++k) b[k] = static_cast<uint8_t>(t[k] + 128);
    v = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(b)));
  }
  __m512i lookup(__m512i nibbles) const { return _mm512_shuffle_epi8(v, nibbles); }
};

#include "kernels/x86/x86_common.inl"
