// The AVX-512 kernels that need VBMI: the super-block dot of the grid IQ types again
// (avx512_grid.inl's __AVX512VBMI__ branches) and the 4-bit block pairs of
// avx512vbmi_legacy.inl. fill_avx512_table uses them when the CPU reports AVX512_VBMI.
#include <cstddef>

#include "kernels/x86/avx512_kquants.inl"

namespace qinfer::kernels {
namespace {
#include "kernels/x86/avx512vbmi_legacy.inl"
}  // namespace

void fill_avx512vbmi_kquants(KernelTable& t) {
  KDot512::fill_grid(t);
  Legacy512Vbmi::fill(t);
}

}  // namespace qinfer::kernels
