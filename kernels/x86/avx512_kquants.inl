// The AVX-512 K-quant and grid kernels (KDot512 and what it builds on), in an anonymous
// namespace: included by avx512_kquants.cpp and, compiled with VBMI, by avx512vbmi_kquants.cpp.
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/grid_codes.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/lane_layout.hpp"
#include "kernels/ref/superblock.hpp"
#include "kernels/x86/x86_fill.hpp"

namespace qinfer::kernels {
namespace {
#include "kernels/x86/isa_avx512.inl"
#include "kernels/x86/x86_kquants.inl"
#include "kernels/x86/kdot256.inl"
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the merge source of unmasked
// conversions and gathers, which -Wuninitialized reports (GCC PR 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/x86/avx512_grid.inl"
#include "kernels/x86/avx512_kdot.inl"
#pragma GCC diagnostic pop
}  // namespace
}  // namespace qinfer::kernels
