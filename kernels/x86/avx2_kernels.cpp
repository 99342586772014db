// Avx2 instantiation of the x86 float and legacy-type kernels.
#include <immintrin.h>

#include <cstring>
#include <xsimd/xsimd.hpp>

#include "kernels/blocks.hpp"
#include "kernels/expf.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/x86/x86_fill.hpp"

namespace qinfer::kernels {
namespace {
#include "kernels/x86/isa_avx2.inl"
#include "kernels/x86/x86_kernels.inl"
}  // namespace

void fill_avx2_table(KernelTable& t) {
  t.isa = Isa::kAvx2;
  X86<IsaTraits>::fill(t);
  fill_avx2_kquants(t);
}

}  // namespace qinfer::kernels
