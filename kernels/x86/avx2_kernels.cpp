// Avx2 instantiation of the x86 float and legacy-type kernels (built again with AVX-VNNI by
// avx2vnni_kernels.cpp).
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
#include "kernels/x86/isa_avx2.inl"
#include "kernels/x86/x86_kernels.inl"
#include "kernels/x86/x86_kquants.inl"
#include "kernels/x86/gemm_decode.inl"
#include "kernels/x86/gemm.inl"
#include "kernels/x86/attention_chunks.inl"
#include "kernels/x86/attention_pv_q8.inl"
#include "kernels/x86/attention.inl"
#include "kernels/x86/quantize_act.inl"

void attention_avx2(const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                    AttentionScratch& s) {
  AttentionX86::run(table(IsaTraits::kIsa), a, g, t0, t1, s);
}

void gemm_panel_avx2(TensorType type, const uint8_t* w, size_t row_bytes, int n_rows,
                     const GemmActivations& a, float* y, int64_t y_stride, bool accumulate,
                     std::vector<uint8_t>& scratch, PanelRows layout) {
  GemmX86::block(table(IsaTraits::kIsa), type, w, row_bytes, n_rows, a, y, y_stride, accumulate,
                 scratch, layout);
}
}  // namespace

template <>
void fill_avx2_isa<IsaTraits::kIsa>(KernelTable& t) {
  t.isa = IsaTraits::kIsa;
  X86<IsaTraits>::fill(t);
  // (The AVX-512 tables take them too: kernels/dispatch.cpp.)
  using T = TensorType;
  t.types[uint32_t(T::Q4_0)].vec_dot_interleaved =
      rows_in_groups<X86<IsaTraits>::rows_pair_interleaved<T::Q4_0>>;
  t.types[uint32_t(T::Q4_1)].vec_dot_interleaved =
      rows_in_groups<X86<IsaTraits>::rows_pair_interleaved<T::Q4_1>>;
  t.types[uint32_t(T::Q5_0)].vec_dot_interleaved =
      rows_in_groups<X86<IsaTraits>::rows_pair_interleaved<T::Q5_0>>;
  t.types[uint32_t(T::Q5_1)].vec_dot_interleaved =
      rows_in_groups<X86<IsaTraits>::rows_pair_interleaved<T::Q5_1>>;
  t.types[uint32_t(T::MXFP4)].vec_dot_interleaved =
      rows_in_groups<X86<IsaTraits>::rows_pair_interleaved<T::MXFP4>>;
  t.types[uint32_t(T::IQ4_NL)].vec_dot_interleaved =
      rows_in_groups<X86<IsaTraits>::rows_pair_interleaved<T::IQ4_NL>>;
  t.types[uint32_t(T::Q8_0)].vec_dot_interleaved =
      rows_in_groups<X86<IsaTraits>::rows_q8_0_interleaved>;
  t.types[uint32_t(T::Q8_0)].prepare_act_interleaved = X86<IsaTraits>::prepare_q8_pair_act;
  t.types[uint32_t(T::Q8_0)].act_interleaved_bytes = X86<IsaTraits>::q8_pair_act_bytes;
  fill_avx2_kquants<IsaTraits::kIsa>(t);
  t.gemm_panel = gemm_panel_avx2;
  GemmDecodeX86::fill(t);
  t.quantize_act[static_cast<uint32_t>(TensorType::Q8_0)] = QuantizeActX86::q8_0;
  t.quantize_act[static_cast<uint32_t>(TensorType::Q8_1)] = QuantizeActX86::q8_1;
  t.quantize_act[static_cast<uint32_t>(TensorType::Q8_K)] = QuantizeActX86::q8_K;
  t.quantize_act[static_cast<uint32_t>(TensorType::F16)] = QuantizeActX86::f16;
  t.quantize_act[static_cast<uint32_t>(TensorType::BF16)] = QuantizeActX86::bf16;
  t.peak_int8_macs = peak_int8_macs;
  t.attention = attention_avx2;
  t.attention_combine = AttentionX86::combine;
  t.peak_f32_macs = peak_f32_macs;
}

}  // namespace qinfer::kernels
