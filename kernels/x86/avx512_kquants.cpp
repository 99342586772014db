// Avx512 instantiation of the x86 K-quant kernels (Q2_K..Q6_K, TQ2_0, IQ4_XS, grid IQ types),
// with the super-block dot for all of them.
#include "kernels/x86/avx512_kquants.inl"

namespace qinfer::kernels {

void fill_avx512_kquants(KernelTable& t) {
  X86K<IsaTraits>::fill(t);
  KDot256::fill_dequantize(t);  // the grid types
  KDot512::fill(t);
}

}  // namespace qinfer::kernels
