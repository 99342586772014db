// Avx512 instantiation of the x86 K-quant kernels (Q2_K..Q6_K, TQ2_0, IQ4_XS, grid IQ types),
// with the super-block dot for all of them.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/grid_codes.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ref/superblock.hpp"
#include "kernels/x86/x86_fill.hpp"

namespace qinfer::kernels {
namespace {
#include "kernels/x86/isa_avx512.inl"
#include "kernels/x86/x86_kquants.inl"
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the merge source of unmasked
// conversions and gathers, which -Wuninitialized reports (GCC PR 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/x86/avx512_grid.inl"
#include "kernels/x86/avx512_kdot.inl"
#pragma GCC diagnostic pop
}  // namespace

void fill_avx512_kquants(KernelTable& t) {
  X86K<IsaTraits>::fill(t);
  KDot512::fill(t);
}

}  // namespace qinfer::kernels
