// AVX2 (+FMA, F16C) instantiation of the x86 kernels.
#include <immintrin.h>

#include <cstring>
#include <xsimd/xsimd.hpp>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/kernels.hpp"

namespace qinfer::kernels {
namespace {

struct Avx2 {
  using arch = xsimd::fma3<xsimd::avx2>;
  static __m256i dot_u8s8(__m256i ux, __m256i sy) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ux, sy), _mm256_set1_epi16(1));
  }
  static xsimd::batch<float, arch> load_f16(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};

#include "kernels/x86/x86_kernels.inl"

}  // namespace

void fill_avx2_table(KernelTable& t) {
  t.isa = Isa::kAvx2;
  X86<Avx2>::fill(t);
}

}  // namespace qinfer::kernels
