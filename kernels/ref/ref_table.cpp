#include "kernels/ref/ref.hpp"

namespace qinfer::kernels {

void fill_scalar_table(KernelTable& t) {
  t.isa = Isa::kScalar;
  ref::fill_float(t);
  ref::fill_legacy(t);
  ref::fill_kquants(t);
  ref::fill_iquants(t);
  ref::fill_ternary(t);
  t.gemm_panel = gemm_panel_scalar;
  t.attention = attention_scalar;
}

QuantizeRowFn reference_quantizer(TensorType type) {
  using T = TensorType;
  switch (type) {
    case T::F32:
      return ref::quantize_row_f32;
    case T::F16:
      return ref::quantize_row_f16;
    case T::BF16:
      return ref::quantize_row_bf16;
    case T::Q4_0:
      return ref::quantize_row_q4_0;
    case T::Q4_1:
      return ref::quantize_row_q4_1;
    case T::Q5_0:
      return ref::quantize_row_q5_0;
    case T::Q5_1:
      return ref::quantize_row_q5_1;
    case T::Q8_0:
      return ref::quantize_row_q8_0;
    case T::Q8_1:
      return ref::quantize_row_q8_1;
    case T::Q2_K:
      return ref::quantize_row_q2_K;
    case T::Q3_K:
      return ref::quantize_row_q3_K;
    case T::Q4_K:
      return ref::quantize_row_q4_K;
    case T::Q5_K:
      return ref::quantize_row_q5_K;
    case T::Q6_K:
      return ref::quantize_row_q6_K;
    case T::Q8_K:
      return ref::quantize_row_q8_K;
    case T::IQ1_M:
      return ref::quantize_row_iq1_m;
    case T::IQ2_S:
      return ref::quantize_row_iq2_s;
    case T::IQ3_XXS:
      return ref::quantize_row_iq3_xxs;
    case T::IQ3_S:
      return ref::quantize_row_iq3_s;
    case T::IQ4_NL:
      return ref::quantize_row_iq4_nl;
    case T::IQ4_XS:
      return ref::quantize_row_iq4_xs;
    case T::TQ1_0:
      return ref::quantize_row_tq1_0;
    case T::TQ2_0:
      return ref::quantize_row_tq2_0;
    case T::MXFP4:
      return ref::quantize_row_mxfp4;
    default:
      return nullptr;
  }
}

namespace {

// ggml's quantize_<type>: the weighted form with an importance matrix, the reference without.
template <QuantizeRowFn Ref, QuantizeImatrixFn Weighted>
void weighted_or_reference(const float* x, void* y, int64_t n, const float* imatrix) {
  if (imatrix != nullptr) {
    Weighted(x, y, n, imatrix);
  } else {
    Ref(x, y, n);
  }
}

}  // namespace

QuantizeImatrixFn imatrix_quantizer(TensorType type) {
  using T = TensorType;
  switch (type) {
    case T::Q4_0:
      return weighted_or_reference<ref::quantize_row_q4_0, ref::quantize_q4_0_imatrix>;
    case T::Q4_1:
      return weighted_or_reference<ref::quantize_row_q4_1, ref::quantize_q4_1_imatrix>;
    case T::Q5_0:
      return weighted_or_reference<ref::quantize_row_q5_0, ref::quantize_q5_0_imatrix>;
    case T::Q5_1:
      return weighted_or_reference<ref::quantize_row_q5_1, ref::quantize_q5_1_imatrix>;
    case T::Q2_K:
      return weighted_or_reference<ref::quantize_row_q2_K, ref::quantize_q2_K_imatrix>;
    case T::Q3_K:
      return weighted_or_reference<ref::quantize_row_q3_K, ref::quantize_q3_K_imatrix>;
    case T::Q4_K:
      return weighted_or_reference<ref::quantize_row_q4_K, ref::quantize_q4_K_imatrix>;
    case T::Q5_K:
      return weighted_or_reference<ref::quantize_row_q5_K, ref::quantize_q5_K_imatrix>;
    case T::Q6_K:
      return weighted_or_reference<ref::quantize_row_q6_K, ref::quantize_q6_K_imatrix>;
    case T::IQ4_NL:
      return weighted_or_reference<ref::quantize_row_iq4_nl, ref::quantize_iq4_nl_imatrix>;
    case T::IQ4_XS:
      return weighted_or_reference<ref::quantize_row_iq4_xs, ref::quantize_iq4_xs_imatrix>;
    case T::IQ1_S:
      return ref::quantize_iq1_s;
    case T::IQ1_M:
      return ref::quantize_iq1_m;
    case T::IQ2_XXS:
      return ref::quantize_iq2_xxs;
    case T::IQ2_XS:
      return ref::quantize_iq2_xs;
    case T::IQ2_S:
      return ref::quantize_iq2_s;
    case T::IQ3_XXS:
      return ref::quantize_iq3_xxs;
    case T::IQ3_S:
      return ref::quantize_iq3_s;
    default:
      return nullptr;
  }
}

}  // namespace qinfer::kernels
