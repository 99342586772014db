#include "kernels/pack.hpp"

#include <cstring>
#include <vector>

#include "kernels/blocks.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/ref/superblock.hpp"
#include "kernels/threads.hpp"
#include "qinfer/error.hpp"

namespace qinfer::kernels {
namespace {

constexpr int64_t kBlock = 256;
constexpr size_t kCodeBytes = 64;

// Position p of the packed order holds value lane_value(p) of the block.
constexpr int lane_value(int p) { return 16 * (p % 64 / 4) + 4 * (p / 64) + p % 4; }

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

// A block's sub-scales and unit into meta, then meta to its place.
template <typename Block>
void put_iq1_meta(const Block& b, PackedIq1Meta& meta, uint8_t* meta_at) {
  int m[16];
  sub_scales(b, m, meta.unit);
  for (int k = 0; k < 8; ++k) meta.scales[k] = static_cast<uint8_t>(m[k] | m[k + 8] << 4);
  std::memcpy(meta_at, &meta, sizeof meta);
}

// One block by the reference decoder (pack_reference), which gives each value as 8 (c - 1) + t.
template <typename Block, void (*Decode)(const Block&, ref::Decoded&)>
void pack_block(const Block& b, uint8_t* codes, uint8_t* meta_at) {
  PackedIq1Meta meta{};
  ref::Decoded dec;
  Decode(b, dec);
  // Byte 4i + j holds positions 64g + 4i + j (bits 2g, 2g + 1), values 16i + 4g + j.
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 4; ++j) {
      int byte = 0;
      for (int g = 0; g < 4; ++g) byte |= (dec.q[16 * i + 4 * g + j] + 9) / 8 << (2 * g);
      codes[4 * i + j] = static_cast<uint8_t>(byte);
    }
  }
  meta.plus = 0;
  for (int g = 0; g < 32; ++g) {  // t is shared by 8 values: read it from the first
    const int q = dec.q[8 * g];
    if (q - 8 * ((q + 9) / 8 - 1) == 1) meta.plus |= 1u << g;
  }
  put_iq1_meta(b, meta, meta_at);
}

// The fast IQ1 packer (as the grid types' below): a group of 8 values is one grid entry and
// one shift t, and its codes c = grid + 1 are 16 bits of the 4-byte word m / 2 (value j's in
// bits 0-1 of byte j, value j + 4's in bits 2-3; the odd group 4 bits up). The table holds
// each entry's 16 bits in that order.
struct Iq1Codes {
  uint32_t word[2048];
};
const Iq1Codes& iq1_codes() {
  static const Iq1Codes t = [] {
    Iq1Codes c{};
    for (int e = 0; e < 2048; ++e) {
      for (int j = 0; j < 8; ++j) {
        const int v = static_cast<int8_t>(kIq1sGrid[e] >> (8 * j));
        c.word[e] |= static_cast<uint32_t>(v + 1) << (8 * (j % 4) + 2 * (j / 4));
      }
    }
    return c;
  }();
  return t;
}
// f(m, grid entry, t = -1) for each group, as the decoders read them.
template <typename F>
void each_group(const BlockIQ1_S& b, const F& f) {
  for (int ib = 0; ib < 8; ++ib) {
    const int qh = b.qh[ib];
    for (int l = 0; l < 4; ++l)
      f(4 * ib + l, b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8), (qh & 0x8000) != 0);
  }
}
template <typename F>
void each_group(const BlockIQ1_M& b, const F& f) {
  for (int ib = 0; ib < 8; ++ib) {
    for (int l = 0; l < 4; ++l) {
      const int h = b.qh[2 * ib + l / 2];
      f(4 * ib + l, b.qs[4 * ib + l] | ((h << (l % 2 ? 4 : 8)) & 0x700),
        (h & (l % 2 ? 0x80 : 0x08)) != 0);
    }
  }
}
template <typename Block>
void pack_iq1_block(const Block& b, uint8_t* codes, uint8_t* meta_at) {
  const Iq1Codes& t = iq1_codes();
  PackedIq1Meta meta{};
  uint32_t words[16] = {};
  each_group(b, [&](int m, int entry, bool minus) {
    words[m / 2] |= t.word[entry] << (4 * (m % 2));
    if (!minus) meta.plus |= 1u << m;
  });
  std::memcpy(codes, words, sizeof words);
  put_iq1_meta(b, meta, meta_at);
}

// The nibble-packed types (pack.hpp): each 16 values' sub-scale s (0..15), from the file's
// fields.
void sub_scales(const BlockIQ3_S& b, int s[16]) {
  for (int k = 0; k < 16; ++k) s[k] = (b.scales[k / 4] >> (4 * (k / 2 % 2))) & 15;
}
void sub_scales(const BlockIQ3_XXS& b, int s[16]) {
  for (int k = 0; k < 16; ++k) {  // the top nibble of each 32 values' word of signs
    uint32_t aux;
    std::memcpy(&aux, b.qs + 64 + 4 * (k / 2), 4);
    s[k] = static_cast<int>(aux >> 28);
  }
}
void sub_scales(const BlockIQ2_XXS& b, int s[16]) {
  for (int k = 0; k < 16; ++k) s[k] = b.qs[4 * (k / 2) + 3] >> 12;
}
template <typename Block>  // IQ2_XS, IQ2_S: a nibble per 16 values
void sub_scales(const Block& b, int s[16]) {
  for (int k = 0; k < 16; ++k) s[k] = (b.scales[k / 2] >> (4 * (k % 2))) & 15;
}

// A type's code of each value v at v + 128 (-1: none; 0 never has one): the loader packs every
// value of a model, and a search of the 16 codes per value made loading 35x slower than the
// file's mapping (IQ3_S 1.1B: 6.4 s).
struct CodeOf {
  int8_t code[256];
};
constexpr CodeOf code_of(const NibbleCodes& c) {
  CodeOf t{};
  for (int8_t& x : t.code) x = -1;
  for (int k = 0; k < 16; ++k) {
    if (c.v[k] != 0 && t.code[c.v[k] + 128] < 0) t.code[c.v[k] + 128] = static_cast<int8_t>(k);
  }
  return t;
}

// A block's metadata: the unit, then the sub-scales' nibbles.
template <typename Block, TensorType T>
void put_nibble_meta(const Block& b, uint8_t* meta) {
  int s[16];
  sub_scales(b, s);
  uint32_t words[2] = {0, 0};  // even lanes', odd lanes'
  for (int k = 0; k < 16; ++k) words[k % 2] |= static_cast<uint32_t>(s[k]) << (4 * (k / 2));
  const float unit = ref::h2f(b.d) * nibble_codes(T)->unit;
  std::memcpy(meta, &unit, 4);
  std::memcpy(meta + 4, words, nibble_codes(T)->per16 ? 8 : 4);
}

// One block's nibble codes and metadata, by the reference decoder (pack_reference).
template <typename Block, void (*Decode)(const Block&, ref::Decoded&), TensorType T>
void pack_nibble_block(const Block& b, uint8_t* codes, uint8_t* meta) {
  constexpr NibbleCodes kCodes = *nibble_codes(T);
  static constexpr CodeOf kCodeOf = code_of(kCodes);
  ref::Decoded dec;
  Decode(b, dec);
  // Byte 64h + 4i + j holds positions 64g + 4i + j for g = 2h (low nibble) and 2h + 1, which
  // are values 16i + 4g + j (lane_value).
  int bad = 0;
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 4; ++j) {
        const int low = kCodeOf.code[dec.q[16 * i + 8 * h + j] + 128];
        const int high = kCodeOf.code[dec.q[16 * i + 8 * h + 4 + j] + 128];
        bad |= low | high;
        codes[64 * h + 4 * i + j] = static_cast<uint8_t>(low | high << 4);
      }
    }
  }
  if (bad < 0) throw Error(ErrorCode::kInternal, "pack: a value without a code");
  put_nibble_meta<Block, T>(b, meta);
}

// Every row: its blocks' codes (kCodes bytes each), then their metadata (kMeta bytes each),
// then zeros to the end.
template <typename Block, size_t kCodes, size_t kMeta, auto kPackBlock>
void pack_rows(const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols, uint8_t* dst,
               size_t dst_row_bytes) {
  const int64_t nb = n_cols / kBlock;
  parallel([&](Team& team) {
    const auto [r0, r1] = team.share(n_rows);
    for (int64_t r = r0; r < r1; ++r) {
      const auto* blocks = reinterpret_cast<const Block*>(src + r * row_bytes);
      uint8_t* out = dst + r * dst_row_bytes;
      std::memset(out, 0, dst_row_bytes);
      uint8_t* meta = out + nb * kCodes;
      for (int64_t i = 0; i < nb; ++i) kPackBlock(blocks[i], out + i * kCodes, meta + i * kMeta);
    }
  });
}

template <typename Block, void (*Decode)(const Block&, ref::Decoded&), TensorType T>
void pack_nibble_rows(const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
                      uint8_t* dst, size_t dst_row_bytes) {
  pack_rows<Block, 2 * kCodeBytes, nibble_meta_bytes(*nibble_codes(T)),
            pack_nibble_block<Block, Decode, T>>(src, row_bytes, n_rows, n_cols, dst,
                                                 dst_row_bytes);
}

// The fast packer of the grid types: codes straight from the file's grid indices and signs,
// with no decoded values between (loading a 1.1B IQ2_XXS file spent 65% of its time in the
// decoder and the per-value code lookups above, which stay as the reference).
//
// A group is 8 values 8m..8m+7 of a block, with one sign byte (bit j: value j negative). Its
// codes are one 32-bit word at code byte 64 (m % 2) + 4 (m / 2): byte j holds value j's code
// in the low nibble and value j + 4's in the high one. Per grid entry the table holds that
// word for the entry's values as they are (pos) and negated (neg); an 8-value entry (the IQ2
// types) fills a word, a 4-value one (IQ3) its low nibbles, so two make the group's word.
struct GridCodes {
  std::vector<uint32_t> pos, neg;
};
template <typename Entry>
GridCodes grid_codes(const Entry* grid, int entries, const NibbleCodes& codes) {
  constexpr int kValues = sizeof(Entry);  // one byte per value
  const CodeOf code_of_value = code_of(codes);
  auto code = [&](int v) {
    const int c = code_of_value.code[v + 128];
    if (c < 0) throw Error(ErrorCode::kInternal, "pack: a grid value without a code");
    return static_cast<uint32_t>(c);
  };
  GridCodes t{std::vector<uint32_t>(entries), std::vector<uint32_t>(entries)};
  for (int e = 0; e < entries; ++e) {
    for (int j = 0; j < kValues; ++j) {
      const int v = static_cast<uint8_t>(static_cast<uint64_t>(grid[e]) >> (8 * j));
      const int shift = 8 * (j % 4) + 4 * (j / 4);
      t.pos[e] |= code(v) << shift;
      t.neg[e] |= code(-v) << shift;
    }
  }
  return t;
}
// The nibbles a sign byte negates: value j's (low nibble of byte j % 4 for j < 4, else high).
struct SignMasks {
  uint32_t mask[256];
};
constexpr SignMasks sign_masks() {
  SignMasks m{};
  for (int s = 0; s < 256; ++s) {
    for (int j = 0; j < 8; ++j) {
      if (s >> j & 1) m.mask[s] |= 0xfu << (8 * (j % 4) + 4 * (j / 4));
    }
  }
  return m;
}
constexpr SignMasks kSignMasks = sign_masks();

// Each type's groups as its decoder reads them (kernels/ref/ref_iquants.cpp):
// f(m, entry, signs) for the 8-value grids, f(m, entry of values 0-3, of 4-7, signs) for IQ3.
template <typename F>
void each_group(const BlockIQ2_XXS& b, const F& f) {
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux[2];
    std::memcpy(aux, b.qs + 4 * ib, 8);
    for (int l = 0; l < 4; ++l)
      f(4 * ib + l, aux[0] >> (8 * l) & 255, kKsignsIq2xs[(aux[1] >> (7 * l)) & 127]);
  }
}
template <typename F>
void each_group(const BlockIQ2_XS& b, const F& f) {
  for (int m = 0; m < 32; ++m) f(m, b.qs[m] & 511, kKsignsIq2xs[b.qs[m] >> 9]);
}
template <typename F>
void each_group(const BlockIQ2_S& b, const F& f) {
  const uint8_t* signs = b.qs + 32;
  for (int ib = 0; ib < 8; ++ib) {
    for (int l = 0; l < 4; ++l)
      f(4 * ib + l, b.qs[4 * ib + l] | ((b.qh[ib] << (8 - 2 * l)) & 0x300), signs[4 * ib + l]);
  }
}
template <typename F>
void each_group(const BlockIQ3_XXS& b, const F& f) {
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux;
    std::memcpy(&aux, b.qs + 64 + 4 * ib, 4);
    const uint8_t* qs = b.qs + 8 * ib;
    for (int l = 0; l < 4; ++l)
      f(4 * ib + l, qs[2 * l], qs[2 * l + 1], kKsignsIq2xs[(aux >> (7 * l)) & 127]);
  }
}
template <typename F>
void each_group(const BlockIQ3_S& b, const F& f) {
  for (int ib = 0; ib < 8; ++ib) {
    const uint8_t* qs = b.qs + 8 * ib;
    const int qh = b.qh[ib];
    for (int l = 0; l < 4; ++l) {
      f(4 * ib + l, qs[2 * l] | ((qh << (8 - 2 * l)) & 256),
        qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256), b.signs[4 * ib + l]);
    }
  }
}

template <TensorType T>
const GridCodes& grid_codes_of() {
  static const GridCodes t = [] {
    const NibbleCodes& c = *nibble_codes(T);
    if constexpr (T == TensorType::IQ2_XXS) return grid_codes(kIq2xxsGrid, 256, c);
    if constexpr (T == TensorType::IQ2_XS) return grid_codes(kIq2xsGrid, 512, c);
    if constexpr (T == TensorType::IQ2_S) return grid_codes(kIq2sGrid, 1024, c);
    if constexpr (T == TensorType::IQ3_XXS) return grid_codes(kIq3xxsGrid, 256, c);
    return grid_codes(kIq3sGrid, 512, c);
  }();
  return t;
}

template <typename Block, TensorType T>
void pack_grid_block(const Block& b, uint8_t* codes, uint8_t* meta) {
  const GridCodes& t = grid_codes_of<T>();
  auto put = [&](int m, uint32_t pos, uint32_t neg, int signs) {
    const uint32_t mask = kSignMasks.mask[signs];
    const uint32_t word = (pos & ~mask) | (neg & mask);
    std::memcpy(codes + 64 * (m % 2) + 4 * (m / 2), &word, 4);
  };
  if constexpr (T == TensorType::IQ3_XXS || T == TensorType::IQ3_S) {
    each_group(b, [&](int m, int lo, int hi, int signs) {
      put(m, t.pos[lo] | t.pos[hi] << 4, t.neg[lo] | t.neg[hi] << 4, signs);
    });
  } else {
    each_group(b, [&](int m, int e, int signs) { put(m, t.pos[e], t.neg[e], signs); });
  }
  put_nibble_meta<Block, T>(b, meta);
}

template <typename Block, TensorType T>
void pack_grid_rows(const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
                    uint8_t* dst, size_t dst_row_bytes) {
  pack_rows<Block, 2 * kCodeBytes, nibble_meta_bytes(*nibble_codes(T)), pack_grid_block<Block, T>>(
      src, row_bytes, n_rows, n_cols, dst, dst_row_bytes);
}

bool is_iq1(TensorType type) { return type == TensorType::IQ1_S || type == TensorType::IQ1_M; }

// Block i of a packed row of nb blocks, by value: its canonical q (kernels/gemm.hpp: the file
// decoders' integers, IQ1 as 8 (c - 1) + t, the grid types as the code's value), the odd
// sub-scale m of each 16 values and the unit, so that value v is unit * m[v / 16] * q[v].
struct PackedBlock {
  int8_t q[kBlock];
  int m[16];
  float unit;
};
void decode_packed_block(TensorType type, int64_t nb, const uint8_t* w, int64_t i,
                         PackedBlock& out) {
  if (is_iq1(type)) {
    PackedIq1Meta meta;
    std::memcpy(&meta, w + nb * kCodeBytes + i * sizeof meta, sizeof meta);
    const uint8_t* codes = w + i * kCodeBytes;
    // Values 16l + 4g + j (j = 0..3) are bits 2g of code bytes 4l + j, four at a time in a
    // word: 8c - (8 - t) bytewise, with the high bits set so that no byte borrows.
    constexpr uint32_t kHigh = 0x80808080u;
    for (int l = 0; l < 16; ++l) {
      uint32_t word;
      std::memcpy(&word, codes + 4 * l, 4);
      for (int g = 0; g < 4; ++g) {
        const uint32_t eight_c = ((word >> (2 * g)) & 0x03030303u) << 3;
        const uint32_t less = ((meta.plus >> (2 * l + g / 2)) & 1 ? 7u : 9u) * 0x01010101u;
        const uint32_t q = ((eight_c | kHigh) - less) ^ kHigh;
        std::memcpy(out.q + 16 * l + 4 * g, &q, 4);
      }
    }
    for (int k = 0; k < 16; ++k) out.m[k] = (meta.scales[k % 8] >> (4 * (k / 8))) & 15;
    out.unit = meta.unit;
    return;
  }
  const NibbleCodes& c = *nibble_codes(type);
  const uint8_t* meta = w + nb * 2 * kCodeBytes + i * nibble_meta_bytes(c);
  const uint8_t* codes = w + i * 2 * kCodeBytes;
  // Byte 64h + 4l + j: value 16l + 8h + j in its low nibble, 16l + 8h + 4 + j in its high one.
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 16; ++l) {
      for (int j = 0; j < 4; ++j) {
        const uint8_t byte = codes[64 * h + 4 * l + j];
        out.q[16 * l + 8 * h + j] = c.v[byte & 15];
        out.q[16 * l + 8 * h + 4 + j] = c.v[byte >> 4];
      }
    }
  }
  uint32_t words[2];
  std::memcpy(&out.unit, meta, 4);
  std::memcpy(&words[0], meta + 4, 4);
  std::memcpy(&words[1], meta + (c.per16 ? 8 : 4), 4);  // odd lanes share it per 32
  for (int k = 0; k < 16; ++k)
    out.m[k] = 2 * static_cast<int>((words[k % 2] >> (4 * (k / 2))) & 15) + 1;
}

// The GEMM's canonical decoder of a whole packed row (packed_gemm_decoder): unit * m is the
// file decoder's scale to the bit (d times the sub-scale and a power of two, exact either
// way), the integers are the same.
template <TensorType T>
void decode_packed_row(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
  const int64_t nb = n / kBlock;
  PackedBlock b;
  for (int64_t i = 0; i < nb; ++i) {
    decode_packed_block(T, nb, static_cast<const uint8_t*>(row), i, b);
    std::memcpy(q + i * kBlock, b.q, kBlock);
    for (int k = 0; k < 16; ++k) {
      scale[16 * i + k] = b.unit * static_cast<float>(b.m[k]);
      min[16 * i + k] = 0.0f;
    }
  }
}

}  // namespace

float packed_dot_ref(TensorType type, int64_t n, const uint8_t* w, const void* act) {
  const auto* y = static_cast<const BlockQ8_K*>(act);
  const int64_t nb = n / kBlock;
  float sum = 0.0f;
  PackedBlock b;
  for (int64_t i = 0; i < nb; ++i) {
    decode_packed_block(type, nb, w, i, b);
    int64_t block = 0;
    for (int lane = 0; lane < 16; ++lane) {  // lane: values 16 lane .. +15, prepared order
      int s = 0;
      for (int g = 0; g < 4; ++g) {
        for (int j = 0; j < 4; ++j) {
          const int p = 64 * g + 4 * lane + j;
          s += b.q[lane_value(p)] * y[i].qs[p];
        }
      }
      block += static_cast<int64_t>(b.m[lane]) * s;
    }
    sum += b.unit * y[i].d * static_cast<float>(block);
  }
  return sum;
}

DecodeGroupsFn packed_gemm_decoder(TensorType type) {
  using T = TensorType;
  switch (type) {
    case T::IQ1_S:
      return decode_packed_row<T::IQ1_S>;
    case T::IQ1_M:
      return decode_packed_row<T::IQ1_M>;
    case T::IQ3_S:
      return decode_packed_row<T::IQ3_S>;
    case T::IQ3_XXS:
      return decode_packed_row<T::IQ3_XXS>;
    case T::IQ2_XXS:
      return decode_packed_row<T::IQ2_XXS>;
    case T::IQ2_XS:
      return decode_packed_row<T::IQ2_XS>;
    case T::IQ2_S:
      return decode_packed_row<T::IQ2_S>;
    default:
      return nullptr;
  }
}

bool can_pack(TensorType type, int64_t n_cols) {
  return (is_iq1(type) || nibble_codes(type) != nullptr) && n_cols > 0 && n_cols % kBlock == 0;
}

size_t packed_row_bytes(TensorType type, int64_t n_cols) {
  if (!can_pack(type, n_cols)) throw Error(ErrorCode::kInternal, "packed_row_bytes: no layout");
  const size_t per_block = is_iq1(type) ? kCodeBytes + sizeof(PackedIq1Meta)
                                        : 2 * kCodeBytes + nibble_meta_bytes(*nibble_codes(type));
  const auto bytes = static_cast<size_t>(n_cols / kBlock) * per_block;
  return (bytes + 63) / 64 * 64;
}

void pack(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
          uint8_t* dst) {
  const size_t out = packed_row_bytes(type, n_cols);
  using T = TensorType;
  switch (type) {
    case T::IQ1_S:
      pack_rows<BlockIQ1_S, kCodeBytes, sizeof(PackedIq1Meta), pack_iq1_block<BlockIQ1_S>>(
          src, row_bytes, n_rows, n_cols, dst, out);
      break;
    case T::IQ1_M:
      pack_rows<BlockIQ1_M, kCodeBytes, sizeof(PackedIq1Meta), pack_iq1_block<BlockIQ1_M>>(
          src, row_bytes, n_rows, n_cols, dst, out);
      break;
    case T::IQ3_S:
      pack_grid_rows<BlockIQ3_S, T::IQ3_S>(src, row_bytes, n_rows, n_cols, dst, out);
      break;
    case T::IQ3_XXS:
      pack_grid_rows<BlockIQ3_XXS, T::IQ3_XXS>(src, row_bytes, n_rows, n_cols, dst, out);
      break;
    case T::IQ2_XXS:
      pack_grid_rows<BlockIQ2_XXS, T::IQ2_XXS>(src, row_bytes, n_rows, n_cols, dst, out);
      break;
    case T::IQ2_XS:
      pack_grid_rows<BlockIQ2_XS, T::IQ2_XS>(src, row_bytes, n_rows, n_cols, dst, out);
      break;
    default:
      pack_grid_rows<BlockIQ2_S, T::IQ2_S>(src, row_bytes, n_rows, n_cols, dst, out);
      break;
  }
}

void pack_reference(TensorType type, const uint8_t* src, size_t row_bytes, int64_t n_rows,
                    int64_t n_cols, uint8_t* dst) {
  const size_t out = packed_row_bytes(type, n_cols);
  using T = TensorType;
  switch (type) {
    case T::IQ1_S:
      pack_rows<BlockIQ1_S, kCodeBytes, sizeof(PackedIq1Meta),
                pack_block<BlockIQ1_S, ref::decode_iq1_s>>(src, row_bytes, n_rows, n_cols, dst,
                                                           out);
      break;
    case T::IQ1_M:
      pack_rows<BlockIQ1_M, kCodeBytes, sizeof(PackedIq1Meta),
                pack_block<BlockIQ1_M, ref::decode_iq1_m>>(src, row_bytes, n_rows, n_cols, dst,
                                                           out);
      break;
    case T::IQ3_S:
      pack_nibble_rows<BlockIQ3_S, ref::decode_iq3_s, T::IQ3_S>(src, row_bytes, n_rows, n_cols, dst,
                                                                out);
      break;
    case T::IQ3_XXS:
      pack_nibble_rows<BlockIQ3_XXS, ref::decode_iq3_xxs, T::IQ3_XXS>(src, row_bytes, n_rows,
                                                                      n_cols, dst, out);
      break;
    case T::IQ2_XXS:
      pack_nibble_rows<BlockIQ2_XXS, ref::decode_iq2_xxs, T::IQ2_XXS>(src, row_bytes, n_rows,
                                                                      n_cols, dst, out);
      break;
    case T::IQ2_XS:
      pack_nibble_rows<BlockIQ2_XS, ref::decode_iq2_xs, T::IQ2_XS>(src, row_bytes, n_rows, n_cols,
                                                                   dst, out);
      break;
    default:
      pack_nibble_rows<BlockIQ2_S, ref::decode_iq2_s, T::IQ2_S>(src, row_bytes, n_rows, n_cols, dst,
                                                                out);
      break;
  }
}

// Whole 4-byte words move: word 16g + i of a prepared block is word 4i + g of the plain one
// (values 16i + 4g..+3), and the sums per 16 values stay, as they are the lanes' sums.
void prepare_packed_activation(void* act, int64_t n) {
  auto* blocks = static_cast<BlockQ8_K*>(act);
  for (int64_t b = 0; b < n / kBlock; ++b) {
    uint32_t plain[64], lanes[64];
    std::memcpy(plain, blocks[b].qs, sizeof plain);
    for (int g = 0; g < 4; ++g) {
      for (int i = 0; i < 16; ++i) lanes[16 * g + i] = plain[4 * i + g];
    }
    std::memcpy(blocks[b].qs, lanes, sizeof lanes);
  }
}

namespace {
// Each byte's five base-3 digits, which are the TQ2_0 codes (value + 1), as the reference
// decoder reads them: digit n of byte q is value 32n of a block whose first byte is q.
struct Trits {
  uint8_t digit[256][5];
};
const Trits& tq1_trits() {
  static const Trits t = [] {
    Trits r{};
    BlockTQ1_0 b{};
    ref::Decoded dec;
    for (int q = 0; q < 256; ++q) {
      b.qs[0] = static_cast<uint8_t>(q);
      ref::decode_tq1_0(b, dec);
      for (int n = 0; n < 5; ++n) r.digit[q][n] = static_cast<uint8_t>(dec.q[32 * n] + 1);
    }
    return r;
  }();
  return t;
}
}  // namespace

// TQ2_0 byte p < 32 holds values p + 32l (bits 2l), byte 32 + p values 128 + p + 32l. TQ1_0's
// value 32n + m is digit n of qs[m] (n < 5), 160 + 16n + m digit n of qs[32 + m], and
// 240 + 4n + j digit n of qh[j]: so byte p's four values are digits 0-3 of qs[p], and byte
// 32 + p's are digit 4 of qs[p], digits p / 16 and 2 + p / 16 of qs[32 + p % 16], then digit 4
// of qs[32 + p] (p < 16) or digit (p - 16) / 4 of qh[(p - 16) % 4].
void tq1_0_to_tq2_0(const uint8_t* src, size_t row_bytes, int64_t n_rows, int64_t n_cols,
                    uint8_t* dst) {
  const int64_t nb = n_cols / kBlock;
  const Trits& t = tq1_trits();
  parallel([&](Team& team) {
    const auto [r0, r1] = team.share(n_rows);
    for (int64_t r = r0; r < r1; ++r) {
      const auto* in = reinterpret_cast<const BlockTQ1_0*>(src + r * row_bytes);
      auto* out = reinterpret_cast<BlockTQ2_0*>(dst + r * nb * sizeof(BlockTQ2_0));
      for (int64_t i = 0; i < nb; ++i) {
        const BlockTQ1_0& b = in[i];
        for (int p = 0; p < 32; ++p) {
          const uint8_t* a = t.digit[b.qs[p]];
          out[i].qs[p] = static_cast<uint8_t>(a[0] | a[1] << 2 | a[2] << 4 | a[3] << 6);
        }
        for (int p = 0; p < 32; ++p) {
          const uint8_t* a = t.digit[b.qs[p]];
          const uint8_t* c = t.digit[b.qs[32 + p % 16]];
          const int last = p < 16 ? c[4] : t.digit[b.qh[(p - 16) % 4]][(p - 16) / 4];
          out[i].qs[32 + p] =
              static_cast<uint8_t>(a[4] | c[p / 16] << 2 | c[2 + p / 16] << 4 | last << 6);
        }
        out[i].d = b.d;
      }
    }
  });
}

}  // namespace qinfer::kernels
