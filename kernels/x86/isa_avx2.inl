// ISA traits for the x86 kernel templates, AVX2 (+FMA, F16C). Included inside an anonymous
// namespace by the avx2_*.cpp translation units.
struct Avx2 {
  using arch = xsimd::fma3<xsimd::avx2>;
  // 32 u8 x 32 s8 -> 8 lanes of int32 sums of 4 products (pairs saturate at int16: callers
  // keep |u * s| * 2 below 32768).
  static __m256i dot_u8s8(__m256i ux, __m256i sy) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ux, sy), _mm256_set1_epi16(1));
  }
  static constexpr bool kVnni = false;
  // How far ahead the gemv kernels prefetch the weights (x86_common.inl): 2 KiB was best on
  // Zen 3 (512 B - 4 KiB tried).
  static constexpr int64_t kPrefetchAhead = 2048;
  // acc + dot_u8s8(ux, sy)
  static __m256i dot_acc(__m256i acc, __m256i ux, __m256i sy) {
    return _mm256_add_epi32(acc, dot_u8s8(ux, sy));
  }
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
