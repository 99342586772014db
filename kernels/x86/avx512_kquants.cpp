// Avx512 instantiation of the x86 K-quant kernels (Q2_K..Q6_K, TQ2_0, IQ4_XS, grid IQ types),
// with the super-block dot for all of them.
#include "kernels/x86/avx512_kquants.inl"

#include "kernels/pack.hpp"

namespace qinfer::kernels {
namespace {
#include "kernels/x86/avx512_kinterleaved.inl"
#include "kernels/x86/avx512_packed.inl"
}  // namespace
}  // namespace qinfer::kernels

namespace qinfer::kernels {

void fill_avx512_kquants(KernelTable& t) {
  X86K<IsaTraits>::fill(t);
  KDot256::fill_dequantize(t);  // the grid types
  // The interleaved Q2_K..Q5_K gemvs on 512-bit registers (1.5-1.6x the 256-bit kernels
  // that AVX2 runs, gemv_l2_interleaved on one Zen 5 core). IQ4_XS keeps the AVX2 table's
  // interleaved 256-bit gemv, which this table starts with: its 512-bit super-block dot reads
  // the file's layout faster from cache (27.9 against 20.5 GiB/s), but the 1.1B IQ4_XS file
  // generated 74 against 79-81 t/s with it (avx512-novbmi, session 61). With VBMI an
  // interleaved 512-bit kernel takes over (avx512vbmi_iq4xs.inl).
  KInterleaved512::fill(t);
  KDot512::fill(t);
  PackedIq1::fill(t);      // the gemv of packed IQ1_S/IQ1_M copies (kernels/pack.hpp)
  fill_packed_nibbles(t);  // and of the IQ2 and IQ3 grid types' nibble-packed copies
}

}  // namespace qinfer::kernels
