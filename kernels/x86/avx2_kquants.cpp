// Avx2 instantiation of the x86 K-quant kernels (Q2_K..Q6_K, TQ1_0, TQ2_0, IQ4_XS, the grid
// IQ types): X86K's dequantizers and KDot256's dots in ggml's order, and the packed copies'
// gemvs (built again with AVX-VNNI by avx2vnni_kquants.cpp).
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/lane_layout.hpp"
#include "kernels/pack.hpp"
#include "kernels/ref/superblock.hpp"
#include "kernels/x86/x86_fill.hpp"

namespace qinfer::kernels {
namespace {
#include "kernels/x86/isa_avx2.inl"
#include "kernels/x86/x86_kquants.inl"
#include "kernels/x86/kdot256.inl"
#include "kernels/x86/kdot256_lanes.inl"
#include "kernels/x86/avx2_packed.inl"
}  // namespace

template <>
void fill_avx2_kquants<IsaTraits::kIsa>(KernelTable& t) {
  X86K<IsaTraits>::fill(t);
  KDot256::fill_dequantize(t);
  KDot256::fill_dot(t);
  RowLanes256::fill(t);
  fill_packed256(t);  // the gemvs of the packed IQ1 and grid copies (kernels/pack.hpp)
}

}  // namespace qinfer::kernels
