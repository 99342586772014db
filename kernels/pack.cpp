#include "kernels/pack.hpp"

#include <cstring>

#include "kernels/blocks.hpp"
#include "kernels/lane_layout.hpp"
#include "kernels/ref/superblock.hpp"
#include "kernels/threads.hpp"
#include "qinfer/error.hpp"

namespace qinfer::kernels {
namespace {

constexpr int64_t kBlock = 256;
constexpr size_t kCodeBytes = 64;

// Position p of the packed order holds value lane_value(p) of the block.
constexpr int lane_value(int p) { return 16 * (p % 64 / 4) + 4 * (p / 64) + p % 4; }

constexpr LaneLayout kLayout = [] {
  LaneLayout l{};
  for (int p = 0; p < 256; ++p) l.from[p] = static_cast<uint8_t>(lane_value(p));
  l.lane_sums = false;  // lane i holds values 16i..16i+15: the plain sums are the lane sums
  return l;
}();

// The odd sub-scale m of each 16 values, and d/8.
void sub_scales(const BlockIQ1_S& b, int m[16], float& unit) {
  for (int i = 0; i < 16; ++i) m[i] = 2 * ((b.qh[i / 2] >> 12) & 7) + 1;
  unit = ref::h2f(b.d) * 0.125f;
}
void sub_scales(const BlockIQ1_M& b, int m[16], float& unit) {
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  for (int i = 0; i < 16; ++i) m[i] = 2 * ((sc[i / 4] >> (6 * (i / 2 % 2) + 3 * (i % 2))) & 7) + 1;
  unit = ref::iq1_m_d(b) * 0.125f;
}

// One block: the reference decoder gives each value as 8 (c - 1) + t.
template <typename Block, void (*Decode)(const Block&, ref::Decoded&)>
void pack_block(const Block& b, uint8_t* codes, PackedIq1Meta& meta) {
  ref::Decoded dec;
  Decode(b, dec);
  std::memset(codes, 0, kCodeBytes);
  for (int p = 0; p < 256; ++p) {
    const int q = dec.q[lane_value(p)];
    codes[p % 64] = static_cast<uint8_t>(codes[p % 64] | ((q + 9) / 8) << (2 * (p / 64)));
  }
  meta.plus = 0;
  for (int g = 0; g < 32; ++g) {  // t is shared by 8 values: read it from the first
    const int q = dec.q[8 * g];
    if (q - 8 * ((q + 9) / 8 - 1) == 1) meta.plus |= 1u << g;
  }
  int m[16];
  sub_scales(b, m, meta.unit);
  for (int k = 0; k < 8; ++k) meta.scales[k] = static_cast<uint8_t>(m[k] | m[k + 8] << 4);
}

template <typename Block, void (*Decode)(const Block&, ref::Decoded&)>
void pack_rows(const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols, uint8_t* dst,
               size_t dst_row_bytes) {
  const int64_t nb = n_cols / kBlock;
  parallel([&](Team& team) {
    const auto [r0, r1] = team.share(n_rows);
    for (int64_t r = r0; r < r1; ++r) {
      const auto* blocks = reinterpret_cast<const Block*>(src + r * row_bytes);
      uint8_t* out = dst + r * dst_row_bytes;
      std::memset(out, 0, dst_row_bytes);
      auto* meta = reinterpret_cast<PackedIq1Meta*>(out + nb * kCodeBytes);
      for (int64_t i = 0; i < nb; ++i)
        pack_block<Block, Decode>(blocks[i], out + i * kCodeBytes, meta[i]);
    }
  });
}

}  // namespace

bool can_pack(TensorType type, int64_t n_cols) {
  return (type == TensorType::IQ1_S || type == TensorType::IQ1_M) && n_cols > 0 &&
         n_cols % kBlock == 0;
}

size_t packed_row_bytes(TensorType type, int64_t n_cols) {
  if (!can_pack(type, n_cols)) throw Error(ErrorCode::kInternal, "packed_row_bytes: no layout");
  const auto bytes = static_cast<size_t>(n_cols / kBlock) * (kCodeBytes + sizeof(PackedIq1Meta));
  return (bytes + 63) / 64 * 64;
}

void pack(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
          uint8_t* dst) {
  const size_t out_row = packed_row_bytes(type, n_cols);
  if (type == TensorType::IQ1_S) {
    pack_rows<BlockIQ1_S, ref::decode_iq1_s>(src, row_bytes, n_rows, n_cols, dst, out_row);
  } else {
    pack_rows<BlockIQ1_M, ref::decode_iq1_m>(src, row_bytes, n_rows, n_cols, dst, out_row);
  }
}

void prepare_packed_activation(void* act, int64_t n) { apply_lane_layout(kLayout, act, n); }

float packed_dot_ref(int64_t n, const uint8_t* w, const void* act) {
  const int64_t nb = n / kBlock;
  const auto* y = static_cast<const BlockQ8_K*>(act);
  const auto* meta = reinterpret_cast<const PackedIq1Meta*>(w + nb * kCodeBytes);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* codes = w + i * kCodeBytes;
    int64_t block = 0;
    for (int lane = 0; lane < 16; ++lane) {
      int s = -9 * y[i].bsums[lane];
      for (int g = 0; g < 4; ++g) {
        for (int j = 0; j < 4; ++j) {
          const int p = 64 * g + 4 * lane + j;
          const int c = (codes[p % 64] >> (2 * g)) & 3;
          const int t = (meta[i].plus >> (lane_value(p) / 8)) & 1 ? 1 : -1;
          s += (8 * c + 1 + t) * y[i].qs[p];
        }
      }
      const int m = (meta[i].scales[lane % 8] >> (4 * (lane / 8))) & 15;
      block += static_cast<int64_t>(m) * s;
    }
    sum += meta[i].unit * y[i].d * static_cast<float>(block);
  }
  return sum;
}

void tq1_0_to_tq2_0(const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
                    uint8_t* dst) {
  const int64_t nb = n_cols / kBlock;
  parallel([&](Team& team) {
    const auto [r0, r1] = team.share(n_rows);
    ref::Decoded dec;
    for (int64_t r = r0; r < r1; ++r) {
      const auto* in = reinterpret_cast<const BlockTQ1_0*>(src + r * row_bytes);
      auto* out = reinterpret_cast<BlockTQ2_0*>(dst + r * nb * sizeof(BlockTQ2_0));
      for (int64_t i = 0; i < nb; ++i) {
        ref::decode_tq1_0(in[i], dec);
        std::memset(out[i].qs, 0, sizeof out[i].qs);
        for (int k = 0; k < 256; ++k) {  // value k: bits 2l of byte 32j + m, k = 128j + 32l + m
          uint8_t& byte = out[i].qs[32 * (k / 128) + k % 32];
          byte = static_cast<uint8_t>(byte | (dec.q[k] + 1) << (2 * (k % 128 / 32)));
        }
        out[i].d = in[i].d;
      }
    }
  });
}

}  // namespace qinfer::kernels
