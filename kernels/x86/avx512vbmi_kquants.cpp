// The AVX-512 kernels that need VBMI, BITALG and GFNI: the grid IQ loaders, TQ1_0, IQ3_XXS and
// IQ3_S in their lane layouts (avx512_grid.inl's __AVX512VBMI__ branches, avx512vbmi_gridlanes.inl,
// lane_layout.hpp), the four-block dots of
// avx512vbmi_legacy.inl and the interleaved IQ4_XS and Q3_K gemvs (avx512vbmi_iq4xs.inl,
// avx512vbmi_q3k.inl), the packed IQ1 gemv (avx512vbmi_packed.inl) and the nibble-packed one
// (avx512_packed.inl's VBMI branches). fill_avx512_table uses them when the CPU reports all three
// extensions.
#include <cstddef>

#include "kernels/x86/avx512_kquants.inl"

#include "kernels/pack.hpp"

namespace qinfer::kernels {
namespace {
// GCC 12's spurious -Wuninitialized on AVX-512 intrinsics, as in avx512_kquants.inl.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/x86/avx512_legacy.inl"  // the interleaved pair kernels, with GFNI
#include "kernels/x86/avx512vbmi_legacy.inl"
#include "kernels/x86/avx512vbmi_gridlanes.inl"
#include "kernels/x86/avx512_kinterleaved.inl"  // row-lane helpers, LanesAct (q3k, iq4xs)
#include "kernels/x86/avx512vbmi_iq4xs.inl"
#include "kernels/x86/avx512vbmi_q3k.inl"
#include "kernels/x86/avx512_packed.inl"  // the nibble-packed gemv, with GFNI and VBMI
#include "kernels/x86/avx512vbmi_packed.inl"
#pragma GCC diagnostic pop
}  // namespace

void fill_avx512vbmi_kquants(KernelTable& t) {
  KDot512::fill_grid(t);
  GridLanes::fill(t);  // IQ3_XXS and IQ3_S in their lane layout, after fill_grid's element order
  Legacy512Vbmi::fill(t);
  t.types[static_cast<uint32_t>(TensorType::IQ4_XS)].vec_dot_interleaved =
      rows_in_groups<Iq4xsInterleaved::rows>;
  t.types[static_cast<uint32_t>(TensorType::IQ4_XS)].prepare_act_interleaved =
      Iq4xsInterleaved::prepare_act;
  t.types[static_cast<uint32_t>(TensorType::IQ4_XS)].act_interleaved_bytes =
      KInterleaved512::lanes_act_bytes;
  t.types[static_cast<uint32_t>(TensorType::Q3_K)].vec_dot_interleaved =
      rows_in_groups<Q3kVbmi::rows>;
  // Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q5_K and Q6_K interleaved as the other AVX-512 units',
  // built here with this unit's GFNI (high_nibbles and qh_bits_to_45, isa_avx512.inl).
  Legacy512::fill_pair_interleaved(t);
  KInterleaved512::fill_nibble_rows(t);
  PackedIq1Vbmi::fill(t);
  fill_packed_nibbles(t);
}

}  // namespace qinfer::kernels
