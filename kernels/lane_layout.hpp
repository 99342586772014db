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

// The layout of the interleaved kernels with a 128-bit lane per row (Q2_K and Q6_K,
// kernels/repack.hpp), in place: per Q8_K block, the 16 bytes that chain k reads at step t
// (k, t = 0..3) at qs[64t + 16k..], dword d = 2n + b of them the values 128n + 32k + 16b +
// 4t..+3; bsums[4k + d] the sum of sub-block 8n + 2k + b. The SIMD tables may install faster
// versions of the same map.
void prepare_row_lanes(void* act, int64_t n);

}  // namespace qinfer::kernels
