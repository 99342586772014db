// NEON kernels with the dotprod extension (vdotq_s32), for CPUs that report ASIMDDP.
#include <arm_neon.h>

#include <cstring>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/pack.hpp"
#include "kernels/ref/superblock.hpp"

namespace qinfer::kernels {
namespace {
struct DotProd {
  static int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
  // Lane l: acc + the products of bytes 4l..4l+3.
  static int32x4_t lane_dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return vdotq_s32(acc, a, b);
  }
};
#include "kernels/arm/neon_kernels.inl"
#include "kernels/arm/neon_packed.inl"
}  // namespace

void fill_neon_dotprod(KernelTable& t) {
  Neon<DotProd>::fill(t);
  NeonPacked<DotProd>::fill(t);
}

}  // namespace qinfer::kernels
