// AVX-512 super-block loaders for the grid IQ types and TQ1_0, in the form KDot512's dots
// consume: 4 x 64 unsigned values in element order and an integer scale per 16 (load), or
// TQ1_0's trits in a lane layout (load_lanes, VBMI); one float d.
//
// - Grid rows: scalar loads (vpgather measured slower), or 16-bit level codes looked up in
//   registers and expanded (IQ2_XS, IQ2_S; with VBMI, the lane loaders of
//   avx512vbmi_gridlanes.inl for IQ2_XXS, IQ2_XS, IQ3_XXS and IQ3_S).
// - Signs are not applied to the weights (vpdpbusd needs them unsigned) but to the activations:
//   one 64-bit mask per 64 values, negating with a masked subtraction.
// - IQ1 (load_iq1): |g| with the signs as masks, and the delta terms apart, in the form of
//   ggml's sums; TQ1_0 trits are 0..2 with offset 1, removed by the dot with the block sums.
// - Scales are kept as the odd integers 2s+1 with the power of two folded into d, which gives
//   the reference's float scale exactly (d*(s+0.5)/4 == (d/8)*(2s+1)).
//
// Included by avx512_kquants.cpp and, with VBMI enabled, by avx512vbmi_kquants.cpp, after
// isa_avx512.inl.

// Rows of the IQ2 grids as 16-bit codes (grid_codes.hpp), looked up 32 rows at a time by
// vpermt2w over the code table and expanded to bytes in registers (IQ2_XS, IQ2_S).
struct Iq2Codes {
  // 32 row numbers (16-bit lanes; only their low log2(N) bits are read) -> their codes.
  template <int N>
  QINFER_INLINE static __m512i lookup(const GridCodes<N>& c, __m512i idx) {
    __m512i r[N / 64];
    for (int p = 0; p < N / 64; ++p) {
      r[p] = _mm512_permutex2var_epi16(_mm512_load_si512(c.code + 64 * p), idx,
                                       _mm512_load_si512(c.code + 64 * p + 32));
    }
    for (int n = N / 64, bit = 64; n > 1; n /= 2, bit *= 2) {
      const __mmask32 high =
          _mm512_test_epi16_mask(idx, _mm512_set1_epi16(static_cast<short>(bit)));
      for (int p = 0; p < n / 2; ++p) r[p] = _mm512_mask_blend_epi16(high, r[2 * p], r[2 * p + 1]);
    }
    return r[0];
  }
  // 32 codes -> 4 x 64 values 8, 25, 43. Output k, lane i: rows 8k+2i and 8k+2i+1, whose codes
  // are bytes 4i..4i+3 of lane k of the codes; value j of a row is bits 2j, 2j+1 of its code.
  static void expand(__m512i codes, __m512i* q) {
    const __m512i pick = _mm512_set_epi64(
        0x0f0f0f0f0e0e0e0e, 0x0d0d0d0d0c0c0c0c, 0x0b0b0b0b0a0a0a0a, 0x0909090908080808,
        0x0707070706060606, 0x0505050504040404, 0x0303030302020202, 0x0101010100000000);
    const __m512i low_bit = _mm512_set1_epi32(0x40100401),
                  high_bit = _mm512_set1_epi32(static_cast<int>(0x80200802u));
    for (int k = 0; k < 4; ++k) {
      const __m512i lane = _mm512_permutexvar_epi32(
          _mm512_add_epi32(_mm512_set4_epi32(3, 2, 1, 0), _mm512_set1_epi32(4 * k)), codes);
      const __m512i b = _mm512_shuffle_epi8(lane, pick);
      __m512i v = _mm512_set1_epi8(8);
      v = _mm512_mask_add_epi8(v, _mm512_test_epi8_mask(b, low_bit), v, _mm512_set1_epi8(17));
      q[k] = _mm512_mask_add_epi8(v, _mm512_test_epi8_mask(b, high_bit), v, _mm512_set1_epi8(35));
    }
  }
};

// Permute controls and byte tables built at compile time, shared by the VBMI loaders, the
// 4-bit block dots (avx512vbmi_legacy.inl) and the interleaved 512-bit gemvs.
struct Bytes64 {
  alignas(64) uint8_t b[64];
  __m512i load() const { return _mm512_load_si512(b); }
};
// Byte p of the result comes from byte f(p) of the 128 bytes (lo, hi): a vpermt2b index.
template <typename F>
constexpr Bytes64 perm_bytes(F f) {
  Bytes64 r{};
  for (int p = 0; p < 64; ++p) r.b[p] = static_cast<uint8_t>(f(p));
  return r;
}
// Word q from word f(q) of (lo, hi): a vpermt2w index.
template <typename F>
constexpr Bytes64 perm_words(F f) {
  Bytes64 r{};
  for (int q = 0; q < 32; ++q) r.b[2 * q] = static_cast<uint8_t>(f(q));
  return r;
}
constexpr Bytes64 values64(const int8_t* table) {
  return perm_bytes([table](int p) { return table[p % 16] + 128; });
}
// IQ4_NL's values (also IQ4_XS's), +128 for vpdpbusd.
inline const Bytes64& iq4nl_values64() {
  static const Bytes64 v = values64(kKvaluesIq4nl);
  return v;
}

#if defined(__AVX512VBMI__)
// VBMI (avx512vbmi_kquants.cpp): byte permutes over 128-byte tables (vpermt2b) and per-byte
// bit-field extraction (vpmultishiftqb) replace the scalar row loads, the code expansion and
// the sign-parity arithmetic.
struct Vbmi {
  static __m512i at(const uint8_t* p) { return _mm512_loadu_si512(p); }
  // 64 lookups in an N-entry byte table: bits 0-6 of each index byte pick an entry of each
  // 128-entry slice, and high[l] (bit 7 + l of the row numbers, one bit a byte lane) picks
  // among the slices.
  template <int N>
  QINFER_INLINE static __m512i lookup(const uint8_t* t, __m512i idx, const __mmask64* high) {
    __m512i r[N / 128];
    for (int p = 0; p < N / 128; ++p)
      r[p] = _mm512_permutex2var_epi8(at(t + 128 * p), idx, at(t + 128 * p + 64));
    for (int n = N / 128, l = 0; n > 1; n /= 2, ++l) {
      for (int p = 0; p < n / 2; ++p)
        r[p] = _mm512_mask_blend_epi8(high[l], r[2 * p], r[2 * p + 1]);
    }
    return r[0];
  }
  // 64 lookups in a 256-entry byte table; bit 7 of the index picks the half.
  QINFER_INLINE static __m512i lookup256(const uint8_t* t, __m512i idx) {
    const __mmask64 high = _mm512_movepi8_mask(idx);
    return lookup<256>(t, idx, &high);
  }
  // 7 stored sign bits (the low 7 of each byte) -> 8 with even parity (kKsignsIq2xs).
  static __m512i sign_bytes(__m512i fields) {
    return _mm512_permutex2var_epi8(at(kKsignsIq2xs), fields, at(kKsignsIq2xs + 64));
  }
  // Byte b of qword j: (qword j of x) >> (byte b of shifts), low 8 bits.
  static __m512i fields(uint64_t shifts, __m512i x) {
    return _mm512_multishift_epi64_epi8(_mm512_set1_epi64(static_cast<long long>(shifts)), x);
  }
  // Codes -> values: the field at each byte's shift, then the levels. The permute reads 6
  // bits per byte; the levels table repeats every 2^bits.
  template <int N>
  static __m512i values(__m512i codes, uint64_t shifts, const GridCodes<N>& c) {
    return _mm512_permutexvar_epi8(fields(shifts, codes), at(c.levels));
  }
  // A multishift control: byte b of each qword is f(b).
  template <typename F>
  static constexpr uint64_t per_byte(F f) {
    uint64_t r = 0;
    for (int b = 0; b < 8; ++b) r |= static_cast<uint64_t>(f(b)) << (8 * b);
    return r;
  }
  // Per-byte controls of the four outputs of a super-block (a byte permute's sources, or
  // vpshufbitqmb's bit numbers): byte i of control k is from(k, i). Built at compile time.
  struct Controls {
    alignas(64) uint8_t b[4][64] = {};
    template <typename From>
    constexpr explicit Controls(From from) {
      for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 64; ++i) b[k][i] = static_cast<uint8_t>(from(k, i));
      }
    }
    __m512i operator[](int k) const { return _mm512_load_si512(b[k]); }
  };
};
// TQ1_0: trit n of a byte x is (uint8(x * 3^n) * 3) >> 8. Byte x of `packed` holds trits 0-3
// of x at bits 2n, 2n + 1; byte x of `fifth` holds trit 4.
struct TritTables {
  alignas(64) uint8_t packed[256] = {};
  alignas(64) uint8_t fifth[256] = {};
  constexpr TritTables() {
    for (int x = 0; x < 256; ++x) {
      for (int n = 0, pow3 = 1; n < 5; ++n, pow3 *= 3) {
        const int trit = (((x * pow3) & 255) * 3) >> 8;
        if (n < 4)
          packed[x] = static_cast<uint8_t>(packed[x] | trit << (2 * n));
        else
          fifth[x] = static_cast<uint8_t>(trit);
      }
    }
  }
};
constexpr TritTables kTrits;
#endif

struct Grid512 {
  // The types whose loader can also take two blocks at once (load_pair).
  template <typename Block>
#if defined(__AVX512VBMI__)
  static constexpr bool kPairs = std::is_same_v<Block, BlockIQ2_S>;
#else
  static constexpr bool kPairs = false;
#endif
  struct Super {
    __m512i q[4];
    // Per sub-block t of 16 elements: the scale at word scale_word<Block>(t), the min (K types
    // only) at dword t. Not set for TQ1_0 (one scale a block).
    __m512i scale, min;
    __mmask64 neg[4];  // activations negated where set (types with sign bits)
    float d, dmin = 0.0f;
    int32_t offset = 0;  // Q3_K, Q6_K (kHasOffset)
  };

  // Where Super::scale keeps the scale of sub-block t (per 16 elements): the low word of
  // dword t. IQ2_XXS and IQ3_XXS keep one scale per 32 in the top 4 bits of a qword (IQ2_XXS's
  // qs) or a dword (IQ3_XXS's sign/scale words); there, the 16-bit word holding those bits,
  // made odd in place by odd_top_nibbles.
  template <typename Block>
  static constexpr int scale_word(int t) {
    if constexpr (std::is_same_v<Block, BlockIQ2_XXS>) return 4 * (t / 2) + 3;  // qword t/2 of qs
    if constexpr (std::is_same_v<Block, BlockIQ3_XXS>)
      return 2 * (t / 2) + 1;  // dword t/2 of the sign/scale words
    return 2 * t;
  }
  // Scale nibbles in the top 4 bits of each 16-bit word -> 2s + 1 in place (the bit below
  // them, shifted in, is overwritten by the 1).
  static __m512i odd_top_nibbles(__m512i x) {
    return _mm512_or_si512(_mm512_srli_epi16(x, 11), _mm512_set1_epi16(1));
  }
  static __m512i odd(__m512i s) {
    return _mm512_add_epi32(_mm512_add_epi32(s, s), _mm512_set1_epi32(1));
  }
  // 8 values, one per 32 elements -> 16, one per 16.
  static __m512i per16(__m256i s) {
    return _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7),
        _mm512_castsi256_si512(s));
  }
  // 16 nibbles of 8 bytes, low nibble first -> 16 int32.
  static __m512i nibbles16(uint64_t v) {
    const __m128i b = _mm_cvtsi64_si128(static_cast<long long>(v));
    const __m128i low = _mm_set1_epi8(0x0f);
    return _mm512_cvtepu8_epi32(
        _mm_unpacklo_epi8(_mm_and_si128(b, low), _mm_and_si128(_mm_srli_epi16(b, 4), low)));
  }
  // A block's 64 bytes, loaded once: GCC would otherwise fold the load into each instruction
  // that reads it, and at these blocks' strides most 64-byte loads span two cache lines (TQ2_0
  // 24.0 -> 25.9 GB/s one thread; the grid loaders, which fold it two or three times, did not
  // move).
  static __m512i load_once(const void* p) {
    __m512i v = _mm512_loadu_si512(p);
    __asm__("" : "+v"(v));
    return v;
  }
  static uint64_t load64(const uint8_t* p) { return X86K<IsaTraits>::load64(p); }
  static __mmask64 mask_at(const uint8_t* p) { return _cvtu64_mask64(load64(p)); }
  static void masks(__m256i signs, __mmask64* neg) {
    neg[0] = _cvtu64_mask64(static_cast<uint64_t>(_mm256_extract_epi64(signs, 0)));
    neg[1] = _cvtu64_mask64(static_cast<uint64_t>(_mm256_extract_epi64(signs, 1)));
    neg[2] = _cvtu64_mask64(static_cast<uint64_t>(_mm256_extract_epi64(signs, 2)));
    neg[3] = _cvtu64_mask64(static_cast<uint64_t>(_mm256_extract_epi64(signs, 3)));
  }
  // 32 bytes of 7 stored sign bits -> 8 bits, the eighth making the parity even (the
  // ksigns table). Bit 0 of each byte ends up as the parity; the shifts cross into the
  // neighbour byte only above bit 3, which the later steps do not read.
  static __m256i with_parity(__m256i s7) {
    __m256i p = _mm256_xor_si256(s7, _mm256_srli_epi16(s7, 4));
    p = _mm256_xor_si256(p, _mm256_srli_epi16(p, 2));
    p = _mm256_xor_si256(p, _mm256_srli_epi16(p, 1));
    return _mm256_or_si256(s7, _mm256_slli_epi16(_mm256_and_si256(p, _mm256_set1_epi8(1)), 7));
  }
  // IQ2_XXS / IQ3_XXS: 8 words, each with four 7-bit sign fields and a 4-bit scale on top.
  static __m256i signs_of_words(__m256i words) {
    const __m512i shifts =
        _mm512_setr_epi32(0, 7, 14, 21, 0, 7, 14, 21, 0, 7, 14, 21, 0, 7, 14, 21);
    const __m512i w = _mm512_castsi256_si512(words), m7 = _mm512_set1_epi32(127);
    const __m512i lo = _mm512_and_si512(
        _mm512_srlv_epi32(_mm512_permutexvar_epi32(
                              _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), w),
                          shifts),
        m7);
    const __m512i hi = _mm512_and_si512(
        _mm512_srlv_epi32(_mm512_permutexvar_epi32(
                              _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7), w),
                          shifts),
        m7);
    return with_parity(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(lo)),
                                               _mm512_cvtepi32_epi8(hi), 1));
  }
  // Lane j of 32 words: j >> shift (which byte of a packed high-bit array row j reads).
  static __m512i row_word(int shift) {
    return _mm512_srli_epi16(
        _mm512_setr_epi64(0x0003000200010000, 0x0007000600050004, 0x000b000a00090008,
                          0x000f000e000d000c, 0x0013001200110010, 0x0017001600150014,
                          0x001b001a00190018, 0x001f001e001d001c),
        shift);
  }
  // 32 row numbers: qs[j] plus, as bits 8 up, the bits `mask` of lane j of `high` (row j's
  // field of the block's high-bit array, already shifted down).
  static __m512i row_numbers(const uint8_t* qs, __m512i high, short mask) {
    const __m512i low =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)));
    return _mm512_or_si512(low,
                           _mm512_slli_epi16(_mm512_and_si512(high, _mm512_set1_epi16(mask)), 8));
  }
  // Grid rows by scalar loads: vpgather is slower here (3.4 vs 5.9 GB/s for IQ2_XXS on Zen 5).
  // For IQ1 (32 rows of 8 bytes a block) masked vpbroadcastq loads and vpgatherdq were no
  // faster than scalar loads either.
  template <typename Index>
  static __m512i rows8(const uint64_t* grid, const Index* idx) {
    auto pair = [&](int a) {
      return _mm_insert_epi64(_mm_cvtsi64_si128(static_cast<long long>(grid[idx[a]])),
                              static_cast<long long>(grid[idx[a + 1]]), 1);
    };
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_setr_m128i(pair(0), pair(2))),
                              _mm256_setr_m128i(pair(4), pair(6)), 1);
  }
  template <typename Index>
  static __m512i rows16(const uint32_t* grid, const Index* idx) {
    auto quad = [&](int a) {
      __m128i v = _mm_cvtsi32_si128(static_cast<int>(grid[idx[a]]));
      v = _mm_insert_epi32(v, static_cast<int>(grid[idx[a + 1]]), 1);
      v = _mm_insert_epi32(v, static_cast<int>(grid[idx[a + 2]]), 2);
      return _mm_insert_epi32(v, static_cast<int>(grid[idx[a + 3]]), 3);
    };
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_setr_m128i(quad(0), quad(4))),
                              _mm256_setr_m128i(quad(8), quad(12)), 1);
  }
  // 32 row indices computed in a vector -> 4 x 8 rows. The indices go to general registers
  // four at a time (vmovq/vpextrq, then shifts): as 32 loads from a stored copy they doubled
  // the loads, and this machine does two a cycle (IQ1_S 3.2 -> 3.9 GB/s single-thread).
  static void rows_of(__m512i idx16, const uint64_t* grid, __m512i* q) {
    const __m256i lo = _mm512_castsi512_si256(idx16), hi = _mm512_extracti64x4_epi64(idx16, 1);
    const __m128i parts[4] = {
        _mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1), _mm256_castsi256_si128(hi),
        _mm256_extracti128_si256(hi, 1)};  // immediates even where the loop is not unrolled
    for (int k = 0; k < 4; ++k) {
      const __m128i part = parts[k];
      const uint64_t w[2] = {static_cast<uint64_t>(_mm_cvtsi128_si64(part)),
                             static_cast<uint64_t>(_mm_extract_epi64(part, 1))};
      uint32_t idx[8];
      for (int j = 0; j < 8; ++j)
        idx[j] = static_cast<uint32_t>(w[j / 4] >> (16 * (j % 4))) & 0xffff;
      q[k] = rows8(grid, idx);
    }
  }

  // IQ2_S row r (16-bit lane r): qs[r] plus bits 2(r%4).. of qh[r/4] as bits 8-9.
  static __m512i iq2s_rows(const BlockIQ2_S& b) {
    const __m512i qh = _mm512_permutexvar_epi16(
        row_word(2), _mm512_cvtepu8_epi16(_mm256_castsi128_si256(
                         _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qh)))));
    const __m512i shift = _mm512_set4_epi64(0x0006000400020000, 0x0006000400020000,
                                            0x0006000400020000, 0x0006000400020000);
    return row_numbers(b.qs, _mm512_srlv_epi16(qh, shift), 3);
  }
#if defined(__AVX512VBMI__)
  // With VBMI, IQ2_S's rows are looked up as level codes (grid_codes.hpp) in registers
  // arranged so that one vpmultishiftqb per output moves each value's level number to its byte
  // and vpermb looks the level up, in element order for word_dot. (IQ2_XXS, IQ2_XS, IQ3_XXS and
  // IQ3_S take lane layouts with VBMI: avx512vbmi_gridlanes.inl.)
  //
  // IQ2 rows (8 values, 2-bit level numbers in a 16-bit code): qword j of `codes` holds the
  // codes of rows j, 8 + j, 16 + j and 24 + j, so output k, qword j is row 8k + j.
  static constexpr int iq2_row_at_word(int w) { return 8 * (w % 4) + w / 4; }
  template <int N>
  QINFER_INLINE static void iq2_values(__m512i codes, const GridCodes<N>& c, Super& s) {
    for (int k = 0; k < 4; ++k)
      s.q[k] = Vbmi::values(codes, Vbmi::per_byte([k](int b) { return 16 * k + 2 * b; }), c);
  }
  // 16 nibbles of 8 bytes, low nibble first -> 16 int32 (byte 0 and 4 of qword q take
  // nibbles 2q and 2q + 1).
  static __m512i nibble_dwords(uint64_t v) {
    static constexpr Bytes64 kAt =
        perm_bytes([](int p) { return p; });  // byte b of qword q: bits 8q + b
    const __m512i f = _mm512_maskz_multishift_epi64_epi8(
        0x1111111111111111ull, kAt.load(), _mm512_set1_epi64(static_cast<long long>(v)));
    return _mm512_and_si512(f, _mm512_set1_epi32(15));
  }

  // 32 words in row order -> in the order of iq2_values' codes.
  static __m512i iq2_word_order(__m512i rows) {
    static constexpr Bytes64 kOrder = perm_words([](int w) { return iq2_row_at_word(w); });
    return _mm512_permutexvar_epi16(kOrder.load(), rows);
  }
  // IQ2_S: a 4-bit scale per 16 elements.
  template <typename Block>
  QINFER_INLINE static void nibble_scales(const Block& b, Super& s) {
    s.scale = odd(nibble_dwords(load64(b.scales)));
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  QINFER_INLINE static void load(const BlockIQ2_S& b, Super& s) {
    iq2_values(Iq2Codes::lookup(kIq2sCodes, iq2_word_order(iq2s_rows(b))), kIq2sCodes, s);
    iq2s_rest(b, s);
  }
  QINFER_INLINE static void iq2s_rest(const BlockIQ2_S& b, Super& s) {
    for (int k = 0; k < 4; ++k) s.neg[k] = mask_at(b.qs + 32 + 8 * k);
    nibble_scales(b, s);
  }
  // Two blocks at once (word_dot, kPairs; an odd last block takes the one-block loader:
  // pairing it with itself instead, inlined or out of line, made GCC compile the pair loop
  // 3-9% slower in vec_dot_l2, whose rows have no odd block): their 64 row numbers fill the
  // 64 byte lanes of
  // each vpermt2b over the code bytes, where one block's 32 rows filled 32 word lanes of
  // vpermt2w (IQ2_S 6.8 -> 11.3 GB/s, vec_dot_l2 one core). Byte lane 32 * block + row holds
  // that row (rows2: the row numbers' low 8 bits); high[l] is bit 8 + l of the row numbers.
  // The two code bytes of a row are then paired into each block's words, in iq2_values' order.
  template <int N>
  QINFER_INLINE static void iq2_pair_values(const GridCodes<N>& c, __m512i rows2,
                                            const __mmask64* high, Super& a, Super& b) {
    const __mmask64 bits[3] = {_mm512_movepi8_mask(rows2), high[0], high[1]};
    const __m512i lo = Vbmi::lookup<N>(c.code_lo, rows2, bits),
                  hi = Vbmi::lookup<N>(c.code_hi, rows2, bits);
    static constexpr Vbmi::Controls kPairUp([](int k, int i) {  // k = 0, 1: the block
      const int lane = 32 * k + iq2_row_at_word(i / 2);
      return i % 2 == 0 ? lane : 64 + lane;
    });
    iq2_values(_mm512_permutex2var_epi8(lo, kPairUp[0], hi), c, a);
    iq2_values(_mm512_permutex2var_epi8(lo, kPairUp[1], hi), c, b);
  }
  QINFER_INLINE static void load_pair(const BlockIQ2_S& a, const BlockIQ2_S& b, Super& sa,
                                      Super& sb) {
    const __m512i rows2 = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)), 1);
    // qh: bits 2r, 2r + 1 of the 8 bytes are row r's bits 8 and 9; qwords 0-3 a's, 4-7 b's
    const __m512i qh = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_set1_epi64x(static_cast<long long>(load64(a.qh)))),
        _mm256_set1_epi64x(static_cast<long long>(load64(b.qh))), 1);
    static constexpr Vbmi::Controls kBit(
        [](int l, int i) { return 2 * (i % 32) + l; });  // l = 0, 1
    const __mmask64 high[2] = {_mm512_bitshuffle_epi64_mask(qh, kBit[0]),
                               _mm512_bitshuffle_epi64_mask(qh, kBit[1])};
    iq2_pair_values(kIq2sCodes, rows2, high, sa, sb);
    iq2s_rest(a, sa);
    iq2s_rest(b, sb);
  }
#else
  QINFER_INLINE static void load(const BlockIQ2_XXS& b, Super& s) {
    const __m512i raw =
        _mm512_loadu_si512(b.qs);  // per 32 elements: 4 grid bytes, a sign/scale word
    const __m256i words = _mm512_cvtepi64_epi32(_mm512_srli_epi64(raw, 32));
    // Scalar row loads measured faster than the code lookup here (6.2 vs 4.8 GB/s), unlike
    // for IQ2_XS and IQ2_S (5.6 vs 6.0, 4.9 vs 5.5), whose row numbers need computing.
    const auto* q8 = reinterpret_cast<const uint8_t*>(b.qs);
    for (int k = 0; k < 4; ++k, q8 += 16) {  // rows: bytes 0-3 and 8-11 of each 16
      const uint8_t idx[8] = {q8[0], q8[1], q8[2], q8[3], q8[8], q8[9], q8[10], q8[11]};
      s.q[k] = rows8(kIq2xxsGrid, idx);
    }
    masks(signs_of_words(words), s.neg);
    s.scale = odd_top_nibbles(raw);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  QINFER_INLINE static void load(const BlockIQ2_XS& b, Super& s) {
    const __m512i raw = _mm512_loadu_si512(b.qs);  // 9-bit row, 7 sign bits
    Iq2Codes::expand(Iq2Codes::lookup(kIq2xsCodes, _mm512_and_si512(raw, _mm512_set1_epi16(511))),
                     s.q);
    masks(with_parity(_mm512_cvtepi16_epi8(_mm512_srli_epi16(raw, 9))), s.neg);
    s.scale = odd(nibbles16(load64(b.scales)));
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  QINFER_INLINE static void load(const BlockIQ2_S& b, Super& s) {
    Iq2Codes::expand(Iq2Codes::lookup(kIq2sCodes, iq2s_rows(b)), s.q);
    for (int k = 0; k < 4; ++k) s.neg[k] = mask_at(b.qs + 32 + 8 * k);
    s.scale = odd(nibbles16(load64(b.scales)));
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  QINFER_INLINE static void load(const BlockIQ3_XXS& b, Super& s) {
    const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 64));
    for (int k = 0; k < 4; ++k) s.q[k] = rows16(kIq3xxsGrid, b.qs + 16 * k);
    masks(signs_of_words(words), s.neg);
    s.scale = odd_top_nibbles(_mm512_castsi256_si512(words));
    s.d = _cvtsh_ss(b.d) * 0.25f;
  }
  QINFER_INLINE static void load(const BlockIQ3_S& b, Super& s) {
    // row j: qs[j] plus bit j%8 of qh[j/8] as bit 8
    alignas(64) uint16_t idx[64];
    for (int k = 0; k < 2; ++k) {
      const __m512i low =
          _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * k)));
      uint32_t h;
      std::memcpy(&h, b.qh + 4 * k, 4);
      _mm512_store_si512(
          idx + 32 * k, _mm512_mask_add_epi16(low, _cvtu32_mask32(h), low, _mm512_set1_epi16(256)));
    }
    for (int k = 0; k < 4; ++k) s.q[k] = rows16(kIq3sGrid, idx + 16 * k);
    for (int k = 0; k < 4; ++k) s.neg[k] = mask_at(b.signs + 8 * k);
    uint32_t sc;
    std::memcpy(&sc, b.scales, 4);
    s.scale = odd(per16(_mm512_castsi512_si256(nibbles16(sc))));
    s.d = _cvtsh_ss(b.d);
  }
#endif

  // IQ1_S, IQ1_M for KDot512::iq1_dot, which sums as ggml does: the grid values -1/0/+1 as
  // |g| with the activations negated where g < 0, and the delta terms apart.
  struct Iq1 {
    __m512i q[4];         // |g|, in element order (row 8k + j is qword j of q[k])
    __mmask64 neg[4];     // g < 0
    __mmask64 minus[4];   // IQ1_M: the row's delta is -1
    __m512i scale;        // odd integer scale per 16 elements
    __m256i delta_words;  // IQ1_S: per 16 elements, the scale negated where the delta is -1
    float d;
  };
  static void abs_grid(Iq1& s) {
    for (int p = 0; p < 4; ++p) {
      s.neg[p] = _mm512_movepi8_mask(s.q[p]);
      s.q[p] = _mm512_abs_epi8(s.q[p]);
    }
  }
  // IQ1_S row j (16-bit lane j): qs[j] plus 3 bits (3(j%4)) of qh[j/4] as bits 8-10. The rest
  // of qh[g], for group g (rows 4g..4g+3): bits 12-14 its scale, bit 15 set for delta -1.
  // qh: word j is qh[j/4].
  static __m512i iq1s_rows(const BlockIQ1_S& b, __m512i qh) {
    const __m512i shift = _mm512_set4_epi64(0x0009000600030000, 0x0009000600030000,
                                            0x0009000600030000, 0x0009000600030000);
    return row_numbers(b.qs, _mm512_srlv_epi16(qh, shift), 7);
  }
  QINFER_INLINE static void load_iq1(const BlockIQ1_S& b, Iq1& s) {
    const __m128i qh8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh));
    rows_of(iq1s_rows(b, _mm512_permutexvar_epi16(row_word(2), _mm512_castsi128_si512(qh8))),
            kIq1sGrid, s.q);
    abs_grid(s);
    const __m512i qh = per16(_mm256_cvtepu16_epi32(qh8));
    s.scale = odd(_mm512_and_si512(_mm512_srli_epi32(qh, 12), _mm512_set1_epi32(7)));
    const __mmask16 minus = _mm512_test_epi32_mask(qh, _mm512_set1_epi32(0x8000));
    s.delta_words = _mm512_cvtepi32_epi16(
        _mm512_mask_sub_epi32(s.scale, minus, _mm512_setzero_si512(), s.scale));
    s.d = _cvtsh_ss(b.d);
  }
  QINFER_INLINE static void load_iq1(const BlockIQ1_M& b, Iq1& s) {
    // row j: qs[j] plus 3 bits of qh[j/2] (low nibble for even j, high for odd) as bits 8-10;
    // the nibble's bit 3 is delta -1. Scales: 3 bits per 16 in the low 12 bits of four words,
    // whose top nibbles hold d.
    const __m128i qh16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh));
    const __m512i qh =
        _mm512_permutexvar_epi16(row_word(1), _mm512_cvtepu8_epi16(_mm256_castsi128_si256(qh16)));
    const __m512i nibble = _mm512_srlv_epi16(qh, _mm512_set1_epi32(0x00040000));
    rows_of(row_numbers(b.qs, nibble, 7), kIq1sGrid, s.q);
    abs_grid(s);
    const uint32_t minus =
        _cvtmask32_u32(_mm512_test_epi16_mask(nibble, _mm512_set1_epi16(8)));  // bit j: row j
    for (int p = 0; p < 4; ++p) {
      s.minus[p] = _mm512_movepi8_mask(_mm512_movm_epi64(_cvtu32_mask8((minus >> (8 * p)) & 0xff)));
    }
    uint16_t sc[4];
    std::memcpy(sc, b.scales, 8);
    const __m512i words = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
        _mm512_castsi128_si512(
            _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales)))));
    s.scale = odd(_mm512_and_si512(
        _mm512_srlv_epi32(words, _mm512_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9)),
        _mm512_set1_epi32(7)));
    s.d = _cvtsh_ss(static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) |
                                          ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)));
  }

  // TQ1_0: 5 trits per byte, trit n = (uint8(x * 3^n) * 3) >> 8, i.e. 0, 1 or 2 as the byte
  // y = uint8(x * 3^n) is below 86, below 171 or above (without VBMI: y for the next n is
  // 3y mod 256, two byte additions). Element order: qs[0..31] for n = 0..4, then qs[32..47]
  // for n = 0..4, then qh[0..3] for n = 0..3.
  static __m512i trit(__m512i y) {
    const __m512i one = _mm512_set1_epi8(1);
    const __m512i a = _mm512_min_epu8(_mm512_subs_epu8(y, _mm512_set1_epi8(85)), one);
    return _mm512_add_epi8(
        a, _mm512_min_epu8(_mm512_subs_epu8(y, _mm512_set1_epi8(static_cast<char>(170))), one));
  }
  QINFER_INLINE static void load(const BlockTQ1_0& b, Super& s) {
    // All five trits of qs[0..47], qh[0..3], then 128-bit lanes moved into element order.
    const __m512i x = _mm512_maskz_loadu_epi8(0x000fffffffffffffull, b.qs);  // qs, qh: 52 bytes
    __m512i t[5];
    __m512i y = x;
    for (int n = 0; n < 5; ++n, y = _mm512_add_epi8(_mm512_add_epi8(y, y), y)) t[n] = trit(y);
    s.q[0] = _mm512_shuffle_i64x2(t[0], t[1], 0x44);  // lanes 0, 1 of t0 | 0, 1 of t1
    s.q[1] = _mm512_shuffle_i64x2(t[2], t[3], 0x44);
    s.q[2] = _mm512_shuffle_i64x2(t[4], _mm512_shuffle_i64x2(t[0], t[1], 0xaa),
                                  0x94);  // t4 0, 1 | t0 2 | t1 2
    // qh: trit n of qh[m] is element 240 + 4n + m, i.e. dword n of the last lane
    const __m512i qh =
        _mm512_unpacklo_epi64(_mm512_unpacklo_epi32(t[0], t[1]), _mm512_unpacklo_epi32(t[2], t[3]));
    s.q[3] = _mm512_shuffle_i64x2(_mm512_shuffle_i64x2(t[2], t[3], 0xaa),
                                  _mm512_shuffle_i64x2(t[4], qh, 0xfa),
                                  0x88);  // t2 2 | t3 2 | t4 2 | qh 3
    s.d = _cvtsh_ss(b.d);
  }
#if defined(__AVX512VBMI__)
  // TQ1_0's lane layout (one scale, so any order serves): lane b < 52 of output k is trit k of
  // byte b of (qs, qh); lanes 52 + i (i < 12) are trit 4 of qs[4i + k]. All of it comes from
  // one register w whose byte b holds output k's value at bits 2k, 2k + 1: bytes below 52
  // from the packed trit table, byte 52 + i the trits 4 of qs[4i..4i+3], packed by one
  // vpdpbusd into dword i (times 1, 4, 16, 64) and moved up by one vpermb.
  static constexpr int tq1_element(int x, int n) {
    return x < 32 ? 32 * n + x : x < 48 ? 128 + 16 * n + x : 192 + 4 * n + x;
  }
  static constexpr int tq1_lane_from(int p) {
    const int k = p / 64, b = p % 64;
    return b < 52 ? tq1_element(b, k) : tq1_element(4 * (b - 52) + k, 4);
  }
  QINFER_INLINE static void load_lanes(const BlockTQ1_0& b, Super& s) {
    const __m512i x = _mm512_maskz_loadu_epi8(0x000fffffffffffffull, b.qs);  // qs, qh: 52 bytes
    const __m512i fifths = _mm512_dpbusd_epi32(
        _mm512_setzero_si512(), Vbmi::lookup256(kTrits.fifth, x), _mm512_set1_epi32(0x40100401));
    static constexpr Bytes64 kTail = perm_bytes([](int p) { return p < 52 ? 0 : 4 * (p - 52); });
    const __m512i w = _mm512_mask_permutexvar_epi8(Vbmi::lookup256(kTrits.packed, x),
                                                   0xfff0000000000000ull, kTail.load(), fifths);
    const __m512i three = _mm512_set1_epi8(3);
    s.q[0] = _mm512_and_si512(w, three);
    for (int k = 1; k < 4; ++k) s.q[k] = _mm512_and_si512(_mm512_srli_epi16(w, 2 * k), three);
    s.d = _cvtsh_ss(b.d);
  }
#endif
};
