// The gemvs of the packed IQ1 and nibble-packed grid copies (kernels/pack.hpp) on NEON, over
// the integer-dot traits of neon_kernels.inl (vdotq_s32, or widening multiplies). The layout
// and the prepared activations are the x86 kernels' (avx512_packed.inl); a 128-bit register
// holds a quarter of each 64-byte chunk, so quarter k of a block is the lanes 4k..4k+3.
// Dot::lane_dot keeps each 32-bit lane the sum of its own 4 bytes (vdotq_s32's lanes; the
// plain traits' dot pairs bytes otherwise). NEON's dots are signed on both sides, so the codes
// become the values themselves (a table lookup, or IQ1's 8c + 1 + t less 9) and no activation sums
// come off. Per row and quarter, four dots of 16 values, times the lanes' odd sub-scales m, summed
// into one vector of exact block sums; one conversion and one FMA a block. The float order is not
// ggml's (the fidelity rule allows it; pack_test compares with the scalar reference within a
// tolerance). Not measured for speed: the project's machines are x86 (the tests run it under qemu).
//
// Included inside an anonymous namespace by neon_dotprod.cpp and neon_plain.cpp, after
// neon_kernels.inl.

template <class Dot>
struct NeonPacked {
  // out[r] for NR rows (row_bytes apart) against one prepared activation row; Quarter(row, i,
  // k, a) gives block i's integer sums of quarter k times their sub-scales, and Unit(row, i)
  // its unit.
  template <int NR, typename Quarter, typename Unit>
  static void rows_n(int64_t n, const uint8_t* w, size_t row_bytes, const void* act, float* out,
                     const Quarter& quarter, const Unit& unit) {
    const auto* y = static_cast<const BlockQ8_K*>(act);
    float32x4_t acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n / kQKK; ++i) {
      const auto* yq = y[i].qs;
      for (int r = 0; r < NR; ++r) {
        const uint8_t* row = w + r * row_bytes;
        int32x4_t total = vdupq_n_s32(0);
        for (int k = 0; k < 4; ++k) {
          int8x16_t a[4];
          for (int g = 0; g < 4; ++g) a[g] = vld1q_s8(yq + 64 * g + 16 * k);
          total = vaddq_s32(total, quarter(row, i, k, a));
        }
        acc[r] = vfmaq_n_f32(acc[r], vcvtq_f32_s32(total), unit(row, i) * y[i].d);
      }
    }
    for (int r = 0; r < NR; ++r) out[r] = vaddvq_f32(acc[r]);
  }
  template <typename Quarter, typename Unit>
  static void rows(int64_t n, const uint8_t* w, size_t row_bytes, int n_rows, const void* act,
                   float* out, const Quarter& quarter, const Unit& unit) {
    int r = 0;
    for (; r + 2 <= n_rows; r += 2)
      rows_n<2>(n, w + r * row_bytes, row_bytes, act, out + r, quarter, unit);
    if (r < n_rows) rows_n<1>(n, w + r * row_bytes, row_bytes, act, out + r, quarter, unit);
  }

  // IQ1: 64 code bytes per block (c of chunk g at bits 2g, 2g + 1), then PackedIq1Meta.
  static void iq1_rows(int64_t n, const void* w, size_t row_bytes, int n_rows, const void* act,
                       float* out) {
    const int64_t nb = n / kQKK;
    auto meta_of = [nb](const uint8_t* row, int64_t i) {
      return reinterpret_cast<const PackedIq1Meta*>(row + 64 * nb) + i;
    };
    auto quarter = [&](const uint8_t* row, int64_t i, int k, const int8x16_t* a) {
      const PackedIq1Meta* meta = meta_of(row, i);
      const uint8x16_t codes = vld1q_u8(row + 64 * i + 16 * k);
      uint32_t plus;
      std::memcpy(&plus, &meta->plus, 4);
      // t of lane 4k + l for chunks 2p, 2p + 1: bit 8k + 2l + p
      const uint32x4_t bits0 = vshlq_u32(vdupq_n_u32(1u << (8 * k)), vld1q_s32(kPlusShifts));
      const uint32x4_t p = vdupq_n_u32(plus);
      const uint8x16_t two = vdupq_n_u8(2);
      const uint8x16_t twos[2] = {
          vandq_u8(vreinterpretq_u8_u32(vtstq_u32(p, bits0)), two),
          vandq_u8(vreinterpretq_u8_u32(vtstq_u32(p, vshlq_n_u32(bits0, 1))), two)};
      const uint8x16_t level = vdupq_n_u8(0x18), nine = vdupq_n_u8(9);
      // 8c + 1 + t less 9: (8c, plus 2 where t = +1) - 9
      auto value = [&](uint8x16_t eight_c, int pair) {
        return vreinterpretq_s8_u8(vsubq_u8(vaddq_u8(vandq_u8(eight_c, level), twos[pair]), nine));
      };
      int32x4_t sum = vdupq_n_s32(0);
      sum = Dot::lane_dot(sum, value(vshlq_n_u8(codes, 3), 0), a[0]);
      sum = Dot::lane_dot(sum, value(vshlq_n_u8(codes, 1), 0), a[1]);
      sum = Dot::lane_dot(sum, value(vshrq_n_u8(codes, 1), 1), a[2]);
      sum = Dot::lane_dot(sum, value(vshrq_n_u8(codes, 3), 1), a[3]);
      // m of lane k' in the low nibble of byte k' (k' < 8), of lane k' + 8 in the high one
      const uint8x8_t nibbles = vld1_u8(meta->scales);
      const uint16x8_t m8 =
          vmovl_u8(k < 2 ? vand_u8(nibbles, vdup_n_u8(15)) : vshr_n_u8(nibbles, 4));
      const uint32x4_t m = vmovl_u16(k % 2 == 0 ? vget_low_u16(m8) : vget_high_u16(m8));
      return vmulq_s32(sum, vreinterpretq_s32_u32(m));
    };
    auto unit = [&](const uint8_t* row, int64_t i) { return meta_of(row, i)->unit; };
    rows(n, static_cast<const uint8_t*>(w), row_bytes, n_rows, act, out, quarter, unit);
  }
  static constexpr int32_t kPlusShifts[4] = {0, 2, 4, 6};

  // The nibble-packed grid types: 128 code bytes per block (chunks 2h and 2h + 1 in the low and
  // high nibbles of bytes 64h..64h+63), then the unit (f32) and the sub-scale word(s).
  template <TensorType T>
  static void nibble_rows(int64_t n, const void* w, size_t row_bytes, int n_rows, const void* act,
                          float* out) {
    static constexpr NibbleCodes kCodes = *nibble_codes(T);
    constexpr auto kMeta = static_cast<int64_t>(nibble_meta_bytes(kCodes));
    const int64_t nb = n / kQKK;
    const int8x16_t table = vld1q_s8(kCodes.v);
    auto quarter = [&](const uint8_t* row, int64_t i, int k, const int8x16_t* a) {
      const uint8_t* codes_at = row + 128 * i + 16 * k;
      const uint8_t* meta = row + 128 * nb + kMeta * i;
      int32x4_t sum = vdupq_n_s32(0);
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t codes = vld1q_u8(codes_at + 64 * h);
        sum = Dot::lane_dot(sum, vqtbl1q_s8(table, vandq_u8(codes, vdupq_n_u8(15))), a[2 * h]);
        sum = Dot::lane_dot(sum, vqtbl1q_s8(table, vshrq_n_u8(codes, 4)), a[2 * h + 1]);
      }
      // lane 4k + l's s: nibble 2k + l / 2 of the even lanes' word (l even) or the odd lanes'
      // (the types with a sub-scale per 32 values have one word, for both)
      uint32_t words[2];
      std::memcpy(&words[0], meta + 4, 4);
      std::memcpy(&words[1], meta + (kCodes.per16 ? 8 : 4), 4);
      const uint32x4_t both = vcombine_u32(vld1_u32(words), vld1_u32(words));
      const int32x4_t shifts = vnegq_s32(vaddq_s32(vdupq_n_s32(8 * k), vld1q_s32(kNibbleShifts)));
      const uint32x4_t s = vandq_u32(vshlq_u32(both, shifts), vdupq_n_u32(15));
      const uint32x4_t m = vorrq_u32(vshlq_n_u32(s, 1), vdupq_n_u32(1));
      return vmulq_s32(sum, vreinterpretq_s32_u32(m));
    };
    auto unit = [&](const uint8_t* row, int64_t i) {
      float u;
      std::memcpy(&u, row + 128 * nb + kMeta * i, 4);
      return u;
    };
    rows(n, static_cast<const uint8_t*>(w), row_bytes, n_rows, act, out, quarter, unit);
  }
  static constexpr int32_t kNibbleShifts[4] = {0, 0, 4, 4};

  static void fill(KernelTable& t) {
    using T = TensorType;
    for (T type : {T::IQ1_S, T::IQ1_M})
      t.types[static_cast<uint32_t>(type)].vec_dot_packed = iq1_rows;
    t.types[static_cast<uint32_t>(T::IQ3_S)].vec_dot_packed = nibble_rows<T::IQ3_S>;
    t.types[static_cast<uint32_t>(T::IQ3_XXS)].vec_dot_packed = nibble_rows<T::IQ3_XXS>;
    t.types[static_cast<uint32_t>(T::IQ2_XXS)].vec_dot_packed = nibble_rows<T::IQ2_XXS>;
    t.types[static_cast<uint32_t>(T::IQ2_XS)].vec_dot_packed = nibble_rows<T::IQ2_XS>;
    t.types[static_cast<uint32_t>(T::IQ2_S)].vec_dot_packed = nibble_rows<T::IQ2_S>;
  }
};
