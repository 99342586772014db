// On-disk block layouts of every quantized type, byte for byte as ggml writes them.
// Each struct is standard layout with no padding; sizes are pinned by static_assert.
#pragma once

#include <cstdint>

#include "kernels/types.hpp"

namespace qinfer {

// One line per block layout, aligned for reading.
// clang-format off
inline constexpr int kQK4 = 32;   // elements per block of the legacy types
inline constexpr int kQK8 = 32;
inline constexpr int kQKK = 256;  // super-block of the K, IQ and TQ types

struct BlockQ4_0 { uint16_t d; uint8_t qs[16]; };                       // q = nibble - 8
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[16]; };                    // x = d*q + m
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };        // 5th bits in qh
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };
struct BlockQ8_1 { uint16_t d, s; int8_t qs[32]; };                     // s = d * sum(qs)

struct BlockQ2_K { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; };
struct BlockQ3_K { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; };
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; };
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };
struct BlockQ8_K { float d; int8_t qs[256]; int16_t bsums[16]; };       // bsums: per 16

struct BlockIQ2_XXS { uint16_t d; uint16_t qs[32]; };
struct BlockIQ2_XS { uint16_t d; uint16_t qs[32]; uint8_t scales[8]; };
struct BlockIQ2_S { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t scales[8]; };
struct BlockIQ3_XXS { uint16_t d; uint8_t qs[96]; };
struct BlockIQ3_S {
  uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4];
};
struct BlockIQ1_S { uint16_t d; uint8_t qs[32]; uint16_t qh[8]; };
struct BlockIQ1_M { uint8_t qs[32]; uint8_t qh[16]; uint8_t scales[8]; };  // d hides in scales
struct BlockIQ4_NL { uint16_t d; uint8_t qs[16]; };
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; };
struct BlockTQ1_0 { uint8_t qs[48]; uint8_t qh[4]; uint16_t d; };        // base-3 packed
struct BlockTQ2_0 { uint8_t qs[64]; uint16_t d; };                       // 2 bits, q - 1
struct BlockMXFP4 { uint8_t e; uint8_t qs[16]; };                       // E8M0 + E2M1 codes
// clang-format on

// Block struct of each type, and a check that it matches the type table.
template <TensorType T>
struct BlockOf;
#define QINFER_BLOCK(T, B)                                                               \
  template <>                                                                            \
  struct BlockOf<TensorType::T> {                                                        \
    using type = B;                                                                      \
  };                                                                                     \
  static_assert(sizeof(B) == kTypeTable[static_cast<uint32_t>(TensorType::T)].type_size, \
                #B " size differs from the type table");
QINFER_BLOCK(Q4_0, BlockQ4_0)
QINFER_BLOCK(Q4_1, BlockQ4_1)
QINFER_BLOCK(Q5_0, BlockQ5_0)
QINFER_BLOCK(Q5_1, BlockQ5_1)
QINFER_BLOCK(Q8_0, BlockQ8_0)
QINFER_BLOCK(Q8_1, BlockQ8_1)
QINFER_BLOCK(Q2_K, BlockQ2_K)
QINFER_BLOCK(Q3_K, BlockQ3_K)
QINFER_BLOCK(Q4_K, BlockQ4_K)
QINFER_BLOCK(Q5_K, BlockQ5_K)
QINFER_BLOCK(Q6_K, BlockQ6_K)
QINFER_BLOCK(Q8_K, BlockQ8_K)
QINFER_BLOCK(IQ2_XXS, BlockIQ2_XXS)
QINFER_BLOCK(IQ2_XS, BlockIQ2_XS)
QINFER_BLOCK(IQ2_S, BlockIQ2_S)
QINFER_BLOCK(IQ3_XXS, BlockIQ3_XXS)
QINFER_BLOCK(IQ3_S, BlockIQ3_S)
QINFER_BLOCK(IQ1_S, BlockIQ1_S)
QINFER_BLOCK(IQ1_M, BlockIQ1_M)
QINFER_BLOCK(IQ4_NL, BlockIQ4_NL)
QINFER_BLOCK(IQ4_XS, BlockIQ4_XS)
QINFER_BLOCK(TQ1_0, BlockTQ1_0)
QINFER_BLOCK(TQ2_0, BlockTQ2_0)
QINFER_BLOCK(MXFP4, BlockMXFP4)
#undef QINFER_BLOCK

}  // namespace qinfer
