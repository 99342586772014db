// The grids of the IQ2 and IQ3 types as codes of level numbers, for SIMD loaders that
// look rows up as 16-bit codes (vpermt2w, vpermt2b) and expand them in registers instead of
// loading 8 grid bytes per row. Built at start-up from iq_tables.cpp by baseline-ISA code.
#pragma once

#include <cstdint>

namespace qinfer {

// Value j of row i is levels[(code[i] >> (bits * j)) & (2^bits - 1)], levels ascending. The IQ2
// grids have 3 levels (8, 25, 43) and 8 values a row: 2 bits; the IQ3 grids have 8 levels
// and 4 values a row: 3 bits.
template <int N>
struct GridCodes {
  int bits = 0;
  alignas(64) uint16_t code[N] = {};
  // The codes of the row's first and second half of values (bits * values / 2 bits each):
  // its low and high byte for the IQ2 grids, 6 bits each for the IQ3 grids.
  alignas(64) uint8_t code_lo[N] = {};
  alignas(64) uint8_t code_hi[N] = {};
  alignas(64) uint8_t levels[64] = {};  // levels[i] = level number i mod 2^bits
};

extern const GridCodes<256> kIq2xxsCodes;
extern const GridCodes<512> kIq2xsCodes;
extern const GridCodes<1024> kIq2sCodes;
extern const GridCodes<256> kIq3xxsCodes;
extern const GridCodes<512> kIq3sCodes;

}  // namespace qinfer
