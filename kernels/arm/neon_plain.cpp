// NEON kernels without dotprod: widening multiplies and pairwise adds, plus the dispatch
// between the two NEON variants.
#include <arm_neon.h>
#include <sys/auxv.h>

#include <cstring>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/pack.hpp"
#include "kernels/ref/superblock.hpp"

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

namespace qinfer::kernels {
namespace {
struct PlainDot {
  static int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t hi = vmull_s8(vget_high_s8(a), vget_high_s8(b));
    return vpadalq_s16(vpadalq_s16(acc, lo), hi);
  }
  // Lane l: acc + the products of bytes 4l..4l+3 (dot's lanes mix bytes 2l, 2l+1, 2l+8, 2l+9).
  static int32x4_t lane_dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    const int32x4_t hi = vpaddlq_s16(vmull_s8(vget_high_s8(a), vget_high_s8(b)));
    return vaddq_s32(acc, vpaddq_s32(lo, hi));
  }
};
#include "kernels/arm/neon_kernels.inl"
#include "kernels/arm/neon_packed.inl"
}  // namespace

void fill_neon_dotprod(KernelTable& t);

bool neon_has_dotprod() { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

// The neon table with dotprod where the CPU has it, the neon-plain one without (the test
// suite runs both under qemu).
void fill_neon_table(KernelTable& t, bool dotprod) {
  t.isa = dotprod ? Isa::kNeon : Isa::kNeonPlain;
  if (dotprod) {
    fill_neon_dotprod(t);
  } else {
    Neon<PlainDot>::fill(t);
    NeonPacked<PlainDot>::fill(t);
  }
}

}  // namespace qinfer::kernels
