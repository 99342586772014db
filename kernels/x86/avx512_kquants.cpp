// Avx512 instantiation of the x86 K-quant kernels (Q2_K..Q6_K, TQ2_0, IQ4_XS, grid IQ types),
// with the super-block dot for all of them.
#include "kernels/x86/avx512_kquants.inl"

namespace qinfer::kernels {
namespace {
#include "kernels/x86/avx512_kinterleaved.inl"
}  // namespace
}  // namespace qinfer::kernels

namespace qinfer::kernels {

void fill_avx512_kquants(KernelTable& t) {
  X86K<IsaTraits>::fill(t);
  KDot256::fill_dequantize(t);  // the grid types
  KDot256::fill_interleaved(t);
  KInterleaved512::fill(t);  // Q2_K and Q3_K on 512-bit registers
  KDot512::fill(t);
  // IQ4_XS keeps the file's layout here: the 512-bit super-block dot reads it faster than
  // the interleaved 256-bit kernel (gemv_l2 on one Zen 5 core: 27.9 against 20.5 GiB/s). With
  // VBMI the interleaved 512-bit kernel takes over (avx512vbmi_iq4xs.inl).
  t.types[uint32_t(TensorType::IQ4_XS)].vec_dot_interleaved = nullptr;
}

}  // namespace qinfer::kernels
