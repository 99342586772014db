// Per-(ISA, family) table fillers of the x86 kernels; fill_avx2_table / fill_avx512_table
// (kernels.hpp) call them in order.
#pragma once

#include "kernels/kernels.hpp"

namespace qinfer::kernels {

// The AVX2 units are built twice: as they are (Isa::kAvx2) and with -mavxvnni (avx2vnni_*.cpp,
// Isa::kAvx2Vnni); each build defines its own specializations.
template <Isa>
void fill_avx2_isa(KernelTable& t);
template <Isa>
void fill_avx2_kquants(KernelTable& t);
template <>
void fill_avx2_isa<Isa::kAvx2>(KernelTable& t);
template <>
void fill_avx2_isa<Isa::kAvx2Vnni>(KernelTable& t);
template <>
void fill_avx2_kquants<Isa::kAvx2>(KernelTable& t);
template <>
void fill_avx2_kquants<Isa::kAvx2Vnni>(KernelTable& t);
void fill_avx512_kquants(KernelTable& t);
void fill_avx512vbmi_kquants(KernelTable& t);  // grid IQ, TQ1_0, 4-bit block types, Q3_K
// What CPUID reports beyond the AVX-512 base (F/BW/VL/VNNI) that the avx512 table uses.
bool cpu_has_avx512_vbmi();  // VBMI, BITALG and GFNI
bool cpu_has_avx512_bf16();
bool cpu_is_intel();  // the avx512 F16 gemv's form (X86::fill, x86_kernels.inl)
// The AVX-512 F16 rows kernel that widens the activations once per call, which the avx512
// table installs on Intel's cores only; exposed so that its bits are tested on every CPU.
VecDotRowsFn avx512_rows_f16_widened();

}  // namespace qinfer::kernels
