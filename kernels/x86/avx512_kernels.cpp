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
                       std::vector<uint8_t>& scratch, bool interleaved) {
  Gemm512::block(table(kIsa), type, w, row_bytes, n_rows, a, y, y_stride, accumulate, scratch,
                 interleaved);
}

// Up to four BF16 columns by vdpbf16ps (the avx512 table where the CPU has AVX512_BF16).
void dot_bf16_pairs(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
  for (int c = 0; c < nc; ++c) {
    out[c] = Avx512::dot_bf16_pairs(
        static_cast<const uint16_t*>(w),
        reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(a) + c * s), n);
  }
}

// BF16 rows for one token (vec_dot_rows): up to kMaxDotRows rows against one activation
// row, each summed exactly as dot_bf16_pairs sums it (the same four chains, in the same
// order), each activation vector loaded once for all the rows, and the rows streamed side by
// side (as rows_f16). A template per row count, not by_cols' lambda: a lambda does not take
// its function's target attribute.
template <int R>
[[gnu::target("avx512bf16")]] void rows_bf16_group(int64_t n, const void* w, size_t row_bytes,
                                                   const uint16_t* y, float* out) {
  const uint16_t* x[R];
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r) {
    x[r] = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(w) +
                                             static_cast<size_t>(r) * row_bytes);
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < n; i += 128) {
    prefetch_rows_ahead<R>(x, row_bytes, 2 * i, 256);
    for (int j = 0; j < 4; ++j) {
      const auto a = reinterpret_cast<__m512bh>(_mm512_loadu_si512(y + i + 32 * j));
      for (int r = 0; r < R; ++r) {
        acc[r][j] = _mm512_dpbf16_ps(
            acc[r][j], reinterpret_cast<__m512bh>(_mm512_loadu_si512(x[r] + i + 32 * j)), a);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    out[r] = _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][2]), _mm512_add_ps(acc[r][1], acc[r][3])));
  }
}

void rows_bf16_pairs(int64_t n, const void* w, size_t row_bytes, int n_rows, const void* act,
                     float* out) {
  if (n % 128 != 0) {
    rows_by_dot<dot_bf16_pairs>(n, w, row_bytes, n_rows, act, out);
    return;
  }
  const auto* y = static_cast<const uint16_t*>(act);
  by_cols(n_rows, [&]<int R>() { rows_bf16_group<R>(n, w, row_bytes, y, out); });
}
}  // namespace

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
    t.types[static_cast<uint32_t>(TensorType::BF16)].vec_dot_rows = rows_in_groups<rows_bf16_pairs>;
    t.gemm_bf16_pairs = true;
  }
}

}  // namespace qinfer::kernels
