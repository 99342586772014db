// Avx512 instantiation of the x86 float and legacy-type kernels.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "kernels/blocks.hpp"
#include "kernels/expf.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/pack.hpp"
#include "kernels/repack_layout.hpp"
#include "qinfer/error.hpp"
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
#include "kernels/x86/attention_chunks.inl"
#include "kernels/x86/attention_pv_q8.inl"
#include "kernels/x86/attention.inl"
#include "kernels/x86/quantize_act.inl"

// The table's own kernels (its variant) for the vector steps inside.
template <Isa kIsa>
void attention_avx512(const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                      AttentionScratch& s) {
  AttentionX86::run(table(kIsa), a, g, t0, t1, s);
}

template <Isa kIsa>
void gemm_panel_avx512(TensorType type, const uint8_t* w, size_t row_bytes, int n_rows,
                       const GemmActivations& a, float* y, int64_t y_stride, bool accumulate,
                       std::vector<uint8_t>& scratch, PanelRows layout) {
  Gemm512::block(table(kIsa), type, w, row_bytes, n_rows, a, y, y_stride, accumulate, scratch,
                 layout);
}

// Up to four BF16 columns by vdpbf16ps (the avx512 table where the CPU has AVX512_BF16).
void dot_bf16_pairs(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  for (int c = 0; c < nc; ++c) {
    out[c] = Avx512::dot_bf16_pairs(
        static_cast<const uint16_t*>(w),
        reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(a) + c * s), n);
  }
}

}  // namespace

VecDotRowsFn avx512_rows_f16_widened() { return X86<IsaTraits>::rows_f16; }

void fill_avx512_table(KernelTable& t, bool extensions) {
  t.isa = extensions ? Isa::kAvx512 : Isa::kAvx512NoVbmi;
  X86<IsaTraits>::fill(t);
  Legacy512::fill(t);  // two blocks per register for the 32-element block types
  fill_avx512_kquants(t);
  t.gemm_panel =
      extensions ? gemm_panel_avx512<Isa::kAvx512> : gemm_panel_avx512<Isa::kAvx512NoVbmi>;
  GemmDecodeX86::fill(t);
  t.gemm_full_k = true;
  t.peak_int8_macs = peak_int8_macs_512;
  t.attention = extensions ? attention_avx512<Isa::kAvx512> : attention_avx512<Isa::kAvx512NoVbmi>;
  t.attention_combine = AttentionX86::combine;
  t.peak_f32_macs = peak_f32_macs_512;
  if (extensions && cpu_has_avx512_vbmi()) fill_avx512vbmi_kquants(t);
  if (extensions && cpu_has_avx512_bf16()) {
    t.types[static_cast<uint32_t>(TensorType::BF16)].vec_dot = dot_bf16_pairs;
    // Row after row, one stream: four rows side by side (each activation vector loaded once
    // for the four) read 12-15% slower from memory on Zen 5 (docs/kernels.md, session 60).
    t.types[static_cast<uint32_t>(TensorType::BF16)].vec_dot_rows = rows_by_dot<dot_bf16_pairs>;
    t.gemm_bf16_pairs = true;
  }
}

}  // namespace qinfer::kernels
