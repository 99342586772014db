// Avx512 instantiation of the x86 K-quant kernels (Q2_K..Q6_K).
#include <immintrin.h>

#include <cstring>

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
}  // namespace

void fill_avx512_kquants(KernelTable& t) { X86K<IsaTraits>::fill(t); }

}  // namespace qinfer::kernels
