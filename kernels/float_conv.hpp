// Bit-exact scalar conversions between float32 and the 16-bit float formats.
// f16: IEEE binary16, round to nearest even (what F16C's vcvtps2ph with imm 0 does).
// bf16: ggml's rounding (nearest even on the upper 16 bits, NaN kept quiet).
#pragma once

#include <bit>
#include <cstdint>

namespace qinfer {

constexpr float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    int e = -1;  // normalise the subnormal
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    mant &= 0x3ffu;
    return std::bit_cast<float>(sign | ((127u - 15u - static_cast<uint32_t>(e)) << 23) |
                                (mant << 13));
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

constexpr uint16_t fp32_to_fp16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {  // inf or NaN (NaN keeps its top payload bits, made quiet)
    return x == 0x7f800000u ? (sign | 0x7c00u)
                            : static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
  }
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // rounds to infinity
  if (x < 0x38800000u) {                        // half subnormal or zero
    if (x <= 0x33000000u) return sign;          // <= 2^-25: ties to even give 0
    const uint32_t e = x >> 23;
    const uint32_t m = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t q = (x >> 13) - (112u << 10);
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

constexpr float bf16_to_fp32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

constexpr uint16_t fp32_to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64u);
  return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

// E8M0 exponent of MXFP4 with its implicit factor 1/2 folded in: 2^(e-128) as float32.
constexpr float e8m0_to_fp32_half(uint8_t e) {
  // 2^(e-128): a normal float for e >= 2, a subnormal for e = 0 and 1.
  if (e < 2) return std::bit_cast<float>(uint32_t{0x00200000u} << e);
  return std::bit_cast<float>(static_cast<uint32_t>(e - 1) << 23);
}

}  // namespace qinfer
