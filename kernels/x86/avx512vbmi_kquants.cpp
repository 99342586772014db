// The AVX-512 super-block dot of the grid IQ types again, compiled with VBMI (avx512_grid.inl's
// __AVX512VBMI__ branches); fill_avx512_table uses it when the CPU reports AVX512_VBMI.
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

void fill_avx512vbmi_kquants(KernelTable& t) { KDot512::fill_grid(t); }

}  // namespace qinfer::kernels
