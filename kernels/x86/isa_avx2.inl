// ISA traits for the x86 kernel templates, AVX2 (+FMA, F16C), and the same built with AVX-VNNI
// (-mavxvnni: the avx2vnni_*.cpp units). Included inside an anonymous namespace by the
// avx2*_*.cpp translation units.
struct Avx2 {
  using arch = xsimd::fma3<xsimd::avx2>;
#if defined(__AVXVNNI__)
  static constexpr Isa kIsa = Isa::kAvx2Vnni;
  static constexpr bool kVnni = true;
  // 32 u8 x 32 s8 -> 8 lanes of int32 sums of 4 products, in one vpdpbusd (no intermediate
  // saturation; where AVX2's pairs cannot saturate either, the sums are the same).
  static __m256i dot_u8s8(__m256i ux, __m256i sy) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), ux, sy);
  }
  static __m256i dot_acc(__m256i acc, __m256i ux, __m256i sy) {
    return _mm256_dpbusd_avx_epi32(acc, ux, sy);
  }
  // acc + madd(a, b) (pairs of 16-bit products), in one vpdpwssd
  static __m256i madd_acc(__m256i acc, __m256i a, __m256i b) {
    return _mm256_dpwssd_avx_epi32(acc, a, b);
  }
#else
  static constexpr Isa kIsa = Isa::kAvx2;
  static constexpr bool kVnni = false;
  // 32 u8 x 32 s8 -> 8 lanes of int32 sums of 4 products (pairs saturate at int16: callers
  // keep |u * s| * 2 below 32768).
  static __m256i dot_u8s8(__m256i ux, __m256i sy) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ux, sy), _mm256_set1_epi16(1));
  }
  // acc + dot_u8s8(ux, sy)
  static __m256i dot_acc(__m256i acc, __m256i ux, __m256i sy) {
    return _mm256_add_epi32(acc, dot_u8s8(ux, sy));
  }
  // acc + madd(a, b) (pairs of 16-bit products)
  static __m256i madd_acc(__m256i acc, __m256i a, __m256i b) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
  }
#endif
  // How far ahead the gemv kernels prefetch the weights (x86_common.inl): 2 KiB was best on
  // Zen 3 (512 B - 4 KiB tried).
  static constexpr int64_t kPrefetchAhead = 2048;
  // Their locality (__builtin_prefetch's: 3 = prefetcht0); non-temporal (0) measured level
  // here (docs/kernels.md, session 64).
  static constexpr int kPrefetchLocality = 3;
  static xsimd::batch<float, arch> load_f16(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // Each lane rounded to the nearest f16 and back.
  static xsimd::batch<float, arch> round_f16(xsimd::batch<float, arch> x) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
  static xsimd::batch<float, arch> load_bf16(const uint8_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
};
using IsaTraits = Avx2;

#include "kernels/x86/x86_common.inl"
