// AVX-512 (F/BW/VL/VNNI) instantiation of the x86 kernels: 512-bit float batches and
// vpdpbusd for the integer dot products.
#include <immintrin.h>

#include <cstring>
#include <xsimd/xsimd.hpp>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/kernels.hpp"

namespace qinfer::kernels {
namespace {

struct Avx512 {
  using arch = xsimd::avx512bw;
  static __m256i dot_u8s8(__m256i ux, __m256i sy) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), ux, sy);
  }
  static xsimd::batch<float, arch> load_f16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};

#include "kernels/x86/x86_kernels.inl"

}  // namespace

void fill_avx512_table(KernelTable& t) {
  t.isa = Isa::kAvx512;
  X86<Avx512>::fill(t);
}

}  // namespace qinfer::kernels
