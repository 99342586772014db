// Lane layouts: a Q8_K activation row rearranged, once per matmul, into the order in which a
// weight type's SIMD loader decodes its values most cheaply (docs/kernels.md).
//
// A super-block's dot runs four vpdpbusd over 64-byte chunks into one accumulator, so its
// 32-bit lane i sums the products at bytes 4i..4i+3 of every chunk. A layout may put there
// any values that share one scale (TQ1_0 and TQ2_0, the types with a layout, have one a
// block). In a prepared block, qs[p] is the plain block's qs[from[p]]; with lane_sums,
// bsums[i] becomes the sum of the 16 values of lane i (qs[64k + 4i + j], k and j below 4), for
// TQ1_0's offset, and otherwise keeps the plain block's sums (TQ2_0 subtracts those, as ggml).
#pragma once

#include <cstdint>

namespace qinfer::kernels {

struct LaneLayout {
  uint8_t from[256];
  bool lane_sums = true;
};

// Rearranges the Q8_K blocks of a row of n elements in place.
void apply_lane_layout(const LaneLayout& layout, void* act, int64_t n);

}  // namespace qinfer::kernels
