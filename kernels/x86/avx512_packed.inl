// The gemv of IQ1_S and IQ1_M from their packed copy (kernels/pack.hpp): per block and row,
// four vpdpbusd of u = 8c + 1 + t (0..18) against the activations in the codes' lane order,
// into one accumulator that starts from -9 times the lanes' activation sums, so lane i holds
// (8 (c - 1) + t) . a over the 16 values of sub-scale i; one vpmulld by the sub-scales, one
// conversion and one FMA by d/8 times the activations' d. Sums are exact integers per block
// until that FMA; lanes stay apart until the end, so the float order is not ggml's (the
// fidelity rule allows it; the test compares with the scalar reference within a tolerance).
// The VBMI table runs PackedIq1Vbmi instead (avx512vbmi_packed.inl): the same sums in fewer
// instructions.
//
// Included by avx512_kquants.cpp inside its anonymous namespace.

// A packed dot's accumulator start: dword i = -bias times the activations' sum over lane i
// (bsums[i], sign-extended, so the high word's 0 adds nothing).
QINFER_INLINE __m512i minus_bias_lane_sums(const BlockQ8_K& y, int bias) {
  const __m512i sums =
      _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)));
  return _mm512_dpwssd_epi32(_mm512_setzero_si512(), sums, _mm512_set1_epi32(-bias & 0xffff));
}

struct PackedIq1 {
  // 32 shift bits (bit b: values 8b..8b+7) -> the byte masks of chunks 0-1 (half 0) and
  // 2-3 (half 1): byte 4i + j of chunk g holds value 16i + 4g + j, whose bit is 2i + g/2.
  static __mmask64 plus_mask(uint32_t plus, int half) {
    const uint32_t lanes = _pext_u32(plus, 0x55555555u << half);
    return _cvtu64_mask64(_pdep_u64(lanes, 0x1111111111111111ull) * 15);
  }
  // The 16 sub-scales, lane k's in the low nibble of byte k (k < 8), lane k + 8's in the high.
  static __m512i sub_scales(const uint8_t* nibbles) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(nibbles));
    const __m128i low = _mm_set1_epi8(15);
    const __m128i lanes =
        _mm_unpacklo_epi64(_mm_and_si128(b, low), _mm_and_si128(_mm_srli_epi16(b, 4), low));
    return _mm512_cvtepu8_epi32(lanes);
  }

  template <int NR>
  static void rows_n(int64_t n, const uint8_t* w, size_t row_bytes, const void* act, float* out) {
    const int64_t nb = n / kQKK;
    const auto* y = static_cast<const BlockQ8_K*>(act);
    const __m512i level = _mm512_set1_epi8(0x18), two = _mm512_set1_epi8(2);
    __m512 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      __m512i a[4];
      for (int g = 0; g < 4; ++g) a[g] = _mm512_loadu_si512(yq + 64 * g);
      const __m512i start = minus_bias_lane_sums(y[i], 9);
      for (int r = 0; r < NR; ++r) {
        const uint8_t* row = w + r * row_bytes;
        const uint8_t* codes_at = row + 64 * i;
        const auto* meta = reinterpret_cast<const PackedIq1Meta*>(row + 64 * nb) + i;
        prefetch_ahead(codes_at, 64);
        if (i % 4 == 0) prefetch_ahead(meta, 64);
        const __m512i codes = _mm512_loadu_si512(codes_at);
        uint32_t plus;
        std::memcpy(&plus, &meta->plus, 4);
        const __mmask64 m01 = plus_mask(plus, 0), m23 = plus_mask(plus, 1);
        // 8c of chunk g (bits 2g..2g+1 of each byte moved to bits 3..4), plus 2 where t = +1
        auto u = [&](__m512i shifted, __mmask64 plus_bytes) {
          const __m512i eight_c = _mm512_and_si512(shifted, level);
          return _mm512_mask_add_epi8(eight_c, plus_bytes, eight_c, two);
        };
        const __m512i us[4] = {
            u(_mm512_slli_epi16(codes, 3), m01), u(_mm512_slli_epi16(codes, 1), m01),
            u(_mm512_srli_epi16(codes, 1), m23), u(_mm512_srli_epi16(codes, 3), m23)};
        __m512i sum = start;
        for (int g = 0; g < 4; ++g) sum = _mm512_dpbusd_epi32(sum, us[g], a[g]);
        sum = _mm512_mullo_epi32(sum, sub_scales(meta->scales));
        acc[r] =
            _mm512_fmadd_ps(_mm512_set1_ps(meta->unit * y[i].d), _mm512_cvtepi32_ps(sum), acc[r]);
      }
    }
    for (int r = 0; r < NR; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
  }

  static void rows(int64_t n, const void* w, size_t row_bytes, int n_rows, const void* act,
                   float* out) {
    by_cols(n_rows,
            [&]<int NR>() { rows_n<NR>(n, static_cast<const uint8_t*>(w), row_bytes, act, out); });
  }

  static void fill(KernelTable& t) {
    for (TensorType type : {TensorType::IQ1_S, TensorType::IQ1_M})
      t.types[static_cast<uint32_t>(type)].vec_dot_packed = rows_in_groups<rows>;
  }
};

// The gemv of the nibble-packed grid types (IQ3_S, IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_S; kernels/
// pack.hpp): per block and row, the four 64-byte chunks are the low and high nibbles of the two
// code halves, each turned into the unsigned u = v + bias (IQ3_S, v = 2n - 15: u = 2n by a
// shift and an AND; the others by a vpshufb of the code), four vpdpbusd into an accumulator
// that starts at -bias times the lanes' activation sums, so lane i holds v . a over its 16
// values; one vpmulld by m = 2s + 1 (the sub-scale nibbles broadcast and moved into place by
// one variable shift), one conversion and one FMA by the unit times the activations' d. As
// IQ1's above, lanes stay apart until the row's end. Built again in the VBMI unit
// (avx512vbmi_kquants.cpp), where vgf2p8affineqb and vpmultishiftqb take some of these steps in
// one instruction (the __AVX512VBMI__ branches; docs/kernels.md, session 68).
template <TensorType T>
struct PackedNibble {
  static constexpr NibbleCodes kCodes = *nibble_codes(T);
  static constexpr bool kLinear = T == TensorType::IQ3_S;
  // Codes under 8 (the IQ2 types): vpshufb takes a nibble straight from its byte (pack.hpp).
  static constexpr bool kSmallCodes = !kLinear && nibble_code_count(kCodes) <= 8;
  static constexpr int64_t kMeta = static_cast<int64_t>(nibble_meta_bytes(kCodes));

  template <int NR>
  static void rows_n(int64_t n, const uint8_t* w, size_t row_bytes, const void* act, float* out) {
    const int64_t nb = n / kQKK;
    const auto* y = static_cast<const BlockQ8_K*>(act);
    [[maybe_unused]] const __m512i nibble = _mm512_set1_epi8(kLinear ? 0x1e : 0x0f);
    alignas(16) int8_t u[16];  // u by code (not IQ3_S)
    for (int c = 0; c < 16; ++c) u[c] = static_cast<int8_t>(kCodes.v[c] + kCodes.bias);
    [[maybe_unused]] const __m512i table =
        _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(u)));
    // lane i's s: nibble i / 2 of the even lanes' word (i even) or the odd lanes' (i odd); a
    // type with a sub-scale per 32 values has one word, for both
    [[maybe_unused]] const __m512i shifts =
        _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28);
    const __m512i twice_s = _mm512_set1_epi32(0x1e), one = _mm512_set1_epi32(1);
#if defined(__AVX512VBMI__) && defined(__GFNI__)
    // vpmultishiftqb: byte 4i of dword i from bit 32 (i % 2) + 4 (i / 2) - 1 of the words'
    // qword on, so bits 1..4 hold lane i's s (the ternary logic below then keeps 2s, adds 1 and
    // clears the rest of the dword)
    alignas(64) uint8_t at[64];
    for (int b = 0; b < 64; ++b)
      at[b] = static_cast<uint8_t>((32 * (b / 4 % 2) + 4 * (b / 8) - 1) & 63);
    const __m512i s_at = _mm512_load_si512(at);
    // vgf2p8affineqb (byte 7 - k of the matrix picks output bit k): bits 1..4 of each byte
    // from bits 0..3 (the low nibble) or 4..7 (the high one), the others 0, IQ3_S's u = 2n;
    // and the high nibble moved down, for the other types' vpshufb
    constexpr uint64_t kLowTo1 = 0x0001020408000000ull, kHighTo1 = 0x0010204080000000ull;
    constexpr uint64_t kHighTo0 = 0x1020408000000000ull;
#endif
    __m512 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      __m512i a[4];
      for (int g = 0; g < 4; ++g) a[g] = _mm512_loadu_si512(yq + 64 * g);
      const __m512i start = minus_bias_lane_sums(y[i], kCodes.bias);
      for (int r = 0; r < NR; ++r) {
        const uint8_t* row = w + r * row_bytes;
        const uint8_t* codes_at = row + 128 * i;
        const uint8_t* meta = row + 128 * nb + kMeta * i;
        prefetch_ahead(codes_at, 128);
        if (i % 4 == 0) prefetch_ahead(meta, 64);
        __m512i us[4];
        for (int h = 0; h < 2; ++h) {
          const __m512i codes = _mm512_loadu_si512(codes_at + 64 * h);
          if constexpr (kLinear) {
#if defined(__AVX512VBMI__) && defined(__GFNI__)
            us[2 * h] = _mm512_gf2p8affine_epi64_epi8(codes, _mm512_set1_epi64(kLowTo1), 0);
            us[2 * h + 1] = _mm512_gf2p8affine_epi64_epi8(codes, _mm512_set1_epi64(kHighTo1), 0);
#else
            us[2 * h] = _mm512_and_si512(_mm512_add_epi8(codes, codes), nibble);
            us[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(codes, 3), nibble);
#endif
          } else if constexpr (kSmallCodes) {  // bit 7 of every byte clear: no AND
            us[2 * h] = _mm512_shuffle_epi8(table, codes);
            us[2 * h + 1] = _mm512_shuffle_epi8(table, _mm512_srli_epi16(codes, 4));
          } else {
            us[2 * h] = _mm512_shuffle_epi8(table, _mm512_and_si512(codes, nibble));
#if defined(__AVX512VBMI__) && defined(__GFNI__)
            us[2 * h + 1] = _mm512_shuffle_epi8(
                table, _mm512_gf2p8affine_epi64_epi8(codes, _mm512_set1_epi64(kHighTo0), 0));
#else
            us[2 * h + 1] =
                _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(codes, 4), nibble));
#endif
          }
        }
        __m512i sum = start;
        for (int g = 0; g < 4; ++g) sum = _mm512_dpbusd_epi32(sum, us[g], a[g]);
        __m512i words;
        if constexpr (kCodes.per16) {
          uint64_t both;
          std::memcpy(&both, meta + 4, 8);
          words = _mm512_set1_epi64(static_cast<long long>(both));
        } else {
          uint32_t one_word;
          std::memcpy(&one_word, meta + 4, 4);
          words = _mm512_set1_epi32(static_cast<int>(one_word));
        }
#if defined(__AVX512VBMI__) && defined(__GFNI__)
        const __m512i twice = _mm512_multishift_epi64_epi8(s_at, words);
#else
        const __m512i twice = _mm512_slli_epi32(_mm512_srlv_epi32(words, shifts), 1);
#endif
        // (2s & 0x1e) | 1: m = 2s + 1
        const __m512i m = _mm512_ternarylogic_epi32(twice, twice_s, one, 0xea);
        sum = _mm512_mullo_epi32(sum, m);
        float unit;
        std::memcpy(&unit, meta, 4);
        acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(unit * y[i].d), _mm512_cvtepi32_ps(sum), acc[r]);
      }
    }
    for (int r = 0; r < NR; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
  }

  static void rows(int64_t n, const void* w, size_t row_bytes, int n_rows, const void* act,
                   float* out) {
    by_cols(n_rows,
            [&]<int NR>() { rows_n<NR>(n, static_cast<const uint8_t*>(w), row_bytes, act, out); });
  }
};

inline void fill_packed_nibbles(KernelTable& t) {
  using T = TensorType;
  t.types[static_cast<uint32_t>(T::IQ3_S)].vec_dot_packed =
      rows_in_groups<PackedNibble<T::IQ3_S>::rows>;
  t.types[static_cast<uint32_t>(T::IQ3_XXS)].vec_dot_packed =
      rows_in_groups<PackedNibble<T::IQ3_XXS>::rows>;
  t.types[static_cast<uint32_t>(T::IQ2_XXS)].vec_dot_packed =
      rows_in_groups<PackedNibble<T::IQ2_XXS>::rows>;
  t.types[static_cast<uint32_t>(T::IQ2_XS)].vec_dot_packed =
      rows_in_groups<PackedNibble<T::IQ2_XS>::rows>;
  t.types[static_cast<uint32_t>(T::IQ2_S)].vec_dot_packed =
      rows_in_groups<PackedNibble<T::IQ2_S>::rows>;
}
