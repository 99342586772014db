// Avx512 instantiation of the x86 float and legacy-type kernels.
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
#include "kernels/x86/isa_avx512.inl"
#include "kernels/x86/x86_kernels.inl"
#include "kernels/x86/avx512_legacy.inl"
}  // namespace

void fill_avx512_table(KernelTable& t) {
  t.isa = Isa::kAvx512;
  X86<IsaTraits>::fill(t);
  Legacy512::fill(t);  // two blocks per register for the 32-element block types
  fill_avx512_kquants(t);
  // The VBMI kernels when the CPU has them and QINFER_ISA does not ask for avx512-novbmi (the
  // test suite runs both).
  if (use_avx512_vbmi()) fill_avx512vbmi_kquants(t);
}

}  // namespace qinfer::kernels
