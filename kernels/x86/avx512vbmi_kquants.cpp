// The AVX-512 super-block dot of the grid IQ types again, compiled with VBMI (avx512_grid.inl's
// __AVX512VBMI__ branches); fill_avx512_table uses it when the CPU reports AVX512_VBMI.
#include "kernels/x86/avx512_kquants.inl"

namespace qinfer::kernels {

void fill_avx512vbmi_kquants(KernelTable& t) { KDot512::fill_grid(t); }

}  // namespace qinfer::kernels
