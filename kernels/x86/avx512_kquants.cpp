// Avx512 instantiation of the x86 K-quant kernels (Q2_K..Q6_K, TQ2_0, IQ4_XS, grid IQ types).
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ref/superblock.hpp"
#include "kernels/x86/x86_fill.hpp"

namespace qinfer::kernels {
namespace {
#include "kernels/x86/isa_avx512.inl"
#include "kernels/x86/x86_kquants.inl"
#include "kernels/x86/avx512_kdot.inl"
}  // namespace

void fill_avx512_kquants(KernelTable& t) {
  X86K<IsaTraits>::fill(t);
  KDot512::fill(t);
}

}  // namespace qinfer::kernels
