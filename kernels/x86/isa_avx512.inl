// ISA traits for the x86 kernel templates, AVX-512 F/BW/VL/VNNI: vpdpbusd for the integer
// dot (no intermediate saturation), 512-bit float batches. Included inside an anonymous
// namespace by the avx512_*.cpp translation units.
struct Avx512 {
  using arch = xsimd::avx512bw;
  static __m256i dot_u8s8(__m256i ux, __m256i sy) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), ux, sy);
  }
  static xsimd::batch<float, arch> load_f16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static xsimd::batch<float, arch> load_bf16(const uint8_t* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
};
using IsaTraits = Avx512;
