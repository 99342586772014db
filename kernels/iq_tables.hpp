// Codebooks of the IQ types (generated into iq_tables.cpp by scripts/gen_iq_tables.py).
// Grid entries pack 8 (or 4) byte-sized values, lowest byte first.
#pragma once

#include <cstdint>

namespace qinfer {

extern const uint64_t kIq2xxsGrid[256];
extern const uint64_t kIq2xsGrid[512];
extern const uint64_t kIq2sGrid[1024];
extern const uint32_t kIq3xxsGrid[256];
extern const uint32_t kIq3sGrid[512];
extern const uint64_t kIq1sGrid[2048];   // int8 values -1, 0, +1
extern const uint8_t kKsignsIq2xs[128];  // 7 stored sign bits -> 8 with even parity
extern const uint8_t kKmaskIq2xs[8];
extern const int8_t kKvaluesIq4nl[16];

inline constexpr float kIq1sDelta = 0.125f;
// MXFP4 (E2M1) code -> value times two; the E8M0 scale carries the 1/2.
inline constexpr int8_t kKvaluesMxfp4[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                             0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace qinfer
