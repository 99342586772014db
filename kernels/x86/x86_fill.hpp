// Per-(ISA, family) table fillers of the x86 kernels; fill_avx2_table / fill_avx512_table
// (kernels.hpp) call them in order.
#pragma once

#include "kernels/kernels.hpp"

namespace qinfer::kernels {

void fill_avx2_kquants(KernelTable& t);
void fill_avx512_kquants(KernelTable& t);
void fill_avx512vbmi_kquants(KernelTable& t);  // grid IQ, TQ1_0, 4-bit block types; VBMI and BITALG
// VBMI and BITALG by CPUID, unless QINFER_ISA=avx512-novbmi (dispatch.cpp).
bool use_avx512_vbmi();
// AVX512_BF16 (vdpbf16ps for BF16 weights in the GEMM) by CPUID, unless QINFER_ISA=avx512-novbmi,
// which keeps AVX-512's base (F/BW/VL/VNNI) paths for the tests.
bool use_avx512_bf16();

}  // namespace qinfer::kernels
