// Avx512 instantiation of the x86 float and legacy-type kernels.
#include <immintrin.h>

#include <cstring>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "kernels/blocks.hpp"
#include "kernels/expf.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ref/superblock.hpp"
#include "kernels/x86/x86_fill.hpp"

namespace qinfer::kernels {
namespace {
#include "kernels/x86/isa_avx512.inl"
#include "kernels/x86/x86_kernels.inl"
#include "kernels/x86/avx512_legacy.inl"
#include "kernels/x86/x86_kquants.inl"
#include "kernels/x86/gemm_decode.inl"
#include "kernels/x86/gemm.inl"
#include "kernels/x86/gemm512.inl"
#include "kernels/x86/attention.inl"
#include "kernels/x86/quantize_act.inl"

void attention_avx512(const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                      AttentionScratch& s) {
  AttentionX86::run(table(Isa::kAvx512), a, g, t0, t1, s);
}

void gemm_panel_avx512(TensorType type, const uint8_t* w, size_t row_bytes, int n_rows,
                       const GemmActivations& a, float* y, int64_t y_stride, bool accumulate,
                       std::vector<uint8_t>& scratch) {
  Gemm512::block(table(Isa::kAvx512), type, w, row_bytes, n_rows, a, y, y_stride, accumulate,
                 scratch);
}
}  // namespace

void fill_avx512_table(KernelTable& t) {
  t.isa = Isa::kAvx512;
  X86<IsaTraits>::fill(t);
  Legacy512::fill(t);  // two blocks per register for the 32-element block types
  fill_avx512_kquants(t);
  t.gemm_panel = gemm_panel_avx512;
  GemmDecodeX86::fill(t);
  t.gemm_full_k = true;
  t.peak_int8_macs = peak_int8_macs_512;
  t.attention = attention_avx512;
  t.peak_f32_macs = peak_f32_macs_512;
  // The VBMI kernels when the CPU has them and QINFER_ISA does not ask for avx512-novbmi (the
  // test suite runs both).
  if (use_avx512_vbmi()) fill_avx512vbmi_kquants(t);
}

}  // namespace qinfer::kernels
