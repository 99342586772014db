// 256-bit super-block dots in ggml's AVX2 order (its vec_dot_*_q8_K), the AVX2 table's dots
// for the K types, IQ4_XS, TQ1_0, TQ2_0 and the grid types; and the grid types' dequantizers, which
// use the same loaders (AVX2 and AVX-512 tables).
//
// - word_dot (K types, IQ4_XS, IQ2/IQ3 grid types): per 32 values vpmaddubsw (pairs), then
//   vpmaddwd by the scale of each pair's sub-block, so a column's block sum is one 8-lane
//   integer vector whose lane j holds the elements 4j..4j+3 of every 32, as ggml's; one FMA
//   per block adds it, the mins as ggml's kernel for the type does (K::MinSum), and ggml's
//   hsum_float_8 ends. Integer sums are exact in any order, so these dots equal llama.cpp's
//   bit for bit (ctest GgmlOrder.*) — except Q3_K and Q6_K: their offset (4, 32) is taken
//   out once per block from the activations' sums per 16 (ggml subtracts it per pair, two
//   instructions per 32 values), which moves integer terms between lanes, so those two
//   agree with ggml to float rounding only.
// - iq1_dot (IQ1_S, IQ1_M): the same with the delta terms summed apart, as ggml does.
// - ternary_dot (TQ1_0, TQ2_0): 16-bit sums less the activations' block sums, as ggml does;
//   TQ1_0's trits decoded in registers.
// Grid rows come from scalar table loads, signs from a table of sign bytes (ksigns) or from
// the stored bits.
//
// Included by avx2_kquants.cpp and avx512_kquants.inl after x86_kquants.inl.

// Sign byte patterns of the 128 stored 7-bit fields: the eighth sign makes the count of
// negative values even (ggml's ksigns table).
struct SignPatterns {
  uint64_t v[128] = {};
  constexpr SignPatterns() {
    for (unsigned f = 0; f < 128; ++f) {
      const unsigned s = f | (std::popcount(f) & 1u) << 7;
      for (int i = 0; i < 8; ++i)
        v[f] |= static_cast<uint64_t>((s >> i) & 1u ? 0xff : 0x01) << (8 * i);
    }
  }
};
constexpr SignPatterns kSignPatterns{};

struct KDot256 {
  using K = X86K<IsaTraits>;

  // A super-block ready for word_dot: 8 x 32 unsigned values (|value| for the signed types,
  // value + offset for Q3_K and Q6_K); for the signed types the activations take the sign of
  // `sign` (vpsignb: never zero where the value is not); scale words per 32 values (low half
  // the scale of the first 16, high half of the next 16); the K types' mins as 16 words.
  struct Super {
    __m256i q[8];
    __m256i sign[8];
    __m256i sw[8];
    __m256i min;
    __m256i offset_words;  // Q3_K, Q6_K: offset times the scale of each sub-block of 16
    float d, dmin = 0.0f;
  };

  // 16 scale bytes (sub-block s of 16 at byte s) -> the scale words of the 8 groups of 32: the
  // 16 words with each 128-bit half broadcast, then one in-lane byte shuffle per group (a
  // cross-lane permute per group cost a shuffle-port slot more).
  static void scale_words(__m128i bytes, __m256i* sw) {
    const __m256i s16 = _mm256_cvtepi8_epi16(bytes);
    const __m256i half[2] = {_mm256_permute2x128_si256(s16, s16, 0x00),
                             _mm256_permute2x128_si256(s16, s16, 0x11)};
    for (int g = 0; g < 8; ++g) {  // words 2g, 2g + 1: word 2g % 8 and 2g % 8 + 1 of a half
      const char a = static_cast<char>(4 * (g % 4)), b = static_cast<char>(a + 1),
                 c = static_cast<char>(a + 2), d = static_cast<char>(a + 3);
      sw[g] = _mm256_shuffle_epi8(
          half[g / 4], _mm256_setr_epi8(a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, c, d, c, d,
                                        c, d, c, d, c, d, c, d, c, d, c, d));
    }
  }
  static __m256i scale_word(uint32_t s) { return _mm256_set1_epi16(static_cast<short>(2 * s + 1)); }
  // The odd scales 2s + 1 of 16 nibbles (8 bytes, low nibble first).
  static __m128i odd_nibbles(uint64_t v) {
    const __m128i n =
        _mm_unpacklo_epi8(_mm_cvtsi64_si128(static_cast<long long>(v & K::kLow4)),
                          _mm_cvtsi64_si128(static_cast<long long>((v >> 4) & K::kLow4)));
    return _mm_add_epi8(_mm_add_epi8(n, n), _mm_set1_epi8(1));
  }

  template <typename Block>  // the K types
  static void load(const Block& b, Super& s) {
    typename K::Unpacked u;
    K::unpack(b, u);
    for (int g = 0; g < 8; ++g) s.q[g] = u.q[g];
    __m128i scale, min;
    K::scale_bytes(b, scale, min);
    scale_words(scale, s.sw);
    s.min = _mm256_cvtepi8_epi16(min);
    if constexpr (K::kHasOffset<Block>) {
      s.offset_words = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(scale),
                                          _mm256_set1_epi16(static_cast<short>(u.offset)));
    }
    s.d = u.d;
    s.dmin = u.dmin;
  }
  static void load(const BlockIQ4_XS& b, Super& s) {  // |value| against the signed activations
    for (int g = 0; g < 8; ++g) {
      s.sign[g] = K::iq4_values(b.qs + 16 * g);  // never zero
      s.q[g] = _mm256_sign_epi8(s.sign[g], s.sign[g]);
    }
    scale_words(K::iq4_xs_scale_bytes(b), s.sw);
    s.d = _cvtsh_ss(b.d);
  }

  // ---- Grid types. Rows by scalar loads; 8-byte sign patterns (0x01 or 0xff per value).
  static __m256i rows(const uint64_t* grid, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
    return _mm256_set_epi64x(static_cast<long long>(grid[r3]), static_cast<long long>(grid[r2]),
                             static_cast<long long>(grid[r1]), static_cast<long long>(grid[r0]));
  }
  static __m256i signs7(uint32_t fields) {  // four 7-bit fields at bits 0, 7, 14, 21
    return _mm256_set_epi64x(static_cast<long long>(kSignPatterns.v[(fields >> 21) & 127]),
                             static_cast<long long>(kSignPatterns.v[(fields >> 14) & 127]),
                             static_cast<long long>(kSignPatterns.v[(fields >> 7) & 127]),
                             static_cast<long long>(kSignPatterns.v[fields & 127]));
  }
  static __m256i signs32(const uint8_t* p) {  // 32 stored sign bits, bit i for value i
    return _mm256_or_si256(bits_to_bytes(p), _mm256_set1_epi8(1));
  }

  static void load(const BlockIQ2_XXS& b, Super& s) {
    for (int g = 0; g < 8; ++g) {  // 4 row bytes, then four 7-bit sign fields and the scale
      uint32_t aux[2];
      std::memcpy(aux, b.qs + 4 * g, 8);
      s.q[g] = rows(kIq2xxsGrid, aux[0] & 0xff, (aux[0] >> 8) & 0xff, (aux[0] >> 16) & 0xff,
                    aux[0] >> 24);
      s.sign[g] = signs7(aux[1]);
      s.sw[g] = scale_word(aux[1] >> 28);
    }
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  static void load(const BlockIQ2_XS& b, Super& s) {
    for (int g = 0; g < 8; ++g) {  // per row: 9-bit grid row, 7 sign bits
      const uint16_t* q = b.qs + 4 * g;
      s.q[g] = rows(kIq2xsGrid, q[0] & 511u, q[1] & 511u, q[2] & 511u, q[3] & 511u);
      s.sign[g] = signs7((q[0] >> 9) | (q[1] >> 9) << 7 | (q[2] >> 9) << 14 |
                         static_cast<uint32_t>(q[3] >> 9) << 21);
    }
    scale_words(odd_nibbles(K::load64(b.scales)), s.sw);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  static void load(const BlockIQ2_S& b, Super& s) {
    for (int g = 0; g < 8; ++g) {  // row l: qs[4g + l] plus bits 2l, 2l + 1 of qh[g] as bits 8-9
      const uint8_t* q = b.qs + 4 * g;
      const uint32_t h = b.qh[g];
      s.q[g] = rows(kIq2sGrid, q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300),
                    q[2] | ((h << 4) & 0x300), q[3] | ((h << 2) & 0x300));
      s.sign[g] = signs32(b.qs + kQKK / 8 + 4 * g);
    }
    scale_words(odd_nibbles(K::load64(b.scales)), s.sw);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }
  // Eight 32-bit grid rows from eight 16-bit indices by scalar loads (a gather is slower on
  // Zen 3; an opaque store of the indices, forcing memory loads, is slower too).
  static __m256i gather_rows(const uint32_t* grid, __m128i idx16) {
    alignas(16) uint16_t i[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(i), idx16);
    auto row = [&](int k) { return static_cast<int>(grid[i[k]]); };
    return _mm256_setr_epi32(row(0), row(1), row(2), row(3), row(4), row(5), row(6), row(7));
  }
  static void load(const BlockIQ3_XXS& b, Super& s) {
    for (int g = 0; g < 8; ++g) {  // 8 row bytes; a word of four sign fields and the scale
      uint32_t aux;
      std::memcpy(&aux, b.qs + kQKK / 4 + 4 * g, 4);
      s.q[g] = gather_rows(
          kIq3xxsGrid,
          _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * g))));
      s.sign[g] = signs7(aux);
      s.sw[g] = scale_word(aux >> 28);
    }
    s.d = _cvtsh_ss(b.d) * 0.25f;
  }
  static void load(const BlockIQ3_S& b, Super& s) {
    // Row k of group g: qs[8g + k] plus bit k of qh[g] as bit 8; sixteen rows (two groups) at
    // a time, the high bits picked from qh[g] | qh[g + 1] << 8 by a per-word bit mask.
    const __m256i bit = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                          8192, 16384, -32768);
    for (int g = 0; g < 8; g += 2) {
      uint16_t h;
      std::memcpy(&h, b.qh + g, 2);
      const __m256i high = _mm256_and_si256(
          _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16(static_cast<short>(h)), bit), bit),
          _mm256_set1_epi16(256));
      const __m256i idx = _mm256_or_si256(
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 8 * g))),
          high);
      s.q[g] = gather_rows(kIq3sGrid, _mm256_castsi256_si128(idx));
      s.q[g + 1] = gather_rows(kIq3sGrid, _mm256_extracti128_si256(idx, 1));
    }
    for (int g = 0; g < 8; ++g) {
      s.sign[g] = signs32(b.signs + 4 * g);
      s.sw[g] = scale_word((b.scales[g / 2] >> (4 * (g % 2))) & 15u);
    }
    s.d = _cvtsh_ss(b.d);
  }

  // The dot of the K types, IQ4_XS and the IQ2/IQ3 grid types, in ggml's AVX2 order (above).
  // The values are below 128, so a pair's 16-bit sum cannot saturate.
  template <typename Block>
  static void word_dot(int64_t n, const void* w, const void* act, size_t stride, int nc,
                       float* out) {
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const Block*>(w);
      Super b;
      __m256 acc[NC];
      typename K::MinSum mins[NC];
      for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
      for (int64_t i = 0; i < n / kQKK; ++i) {
        prefetch_ahead(x + i, sizeof(Block));
        load(x[i], b);
        for (int c = 0; c < NC; ++c) {
          const auto* y =
              reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * stride) + i;
          const auto* yq = reinterpret_cast<const uint8_t*>(y->qs);
          __m256i sum = _mm256_setzero_si256();
          for (int g = 0; g < 8; ++g) {
            __m256i a = K::load32(yq + 32 * g);
            if constexpr (K::kSigned<Block>) a = _mm256_sign_epi8(a, b.sign[g]);
            const __m256i pairs = _mm256_maddubs_epi16(b.q[g], a);
            sum = IsaTraits::madd_acc(sum, pairs, b.sw[g]);
          }
          if constexpr (K::kHasMin<Block> || K::kHasOffset<Block>) {
            const __m256i bsums = K::load32(reinterpret_cast<const uint8_t*>(y->bsums));
            if constexpr (K::kHasMin<Block>)
              mins[c].template add<Block>(-y->d * b.dmin, _mm256_madd_epi16(b.min, bsums), acc[c]);
            if constexpr (K::kHasOffset<Block>)
              sum = _mm256_sub_epi32(sum, _mm256_madd_epi16(b.offset_words, bsums));
          }
          acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(y->d * b.d), _mm256_cvtepi32_ps(sum), acc[c]);
        }
      }
      for (int c = 0; c < NC; ++c) out[c] = K::hsum_ps(acc[c]) + mins[c].total();
    });
  }

  // The interleaved kernels' four row sums: dword r of both 128-bit halves belongs to row r.
  static __m128i row_sums(__m256i v) {
    return _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  }

  // The scales and mins of an interleaved Q4_K or Q5_K group's four rows, unpacked from their
  // 6-bit fields (at g + 16): byte 4r + k of sc[0] / mn[0] is row r's sub-block k, of sc[1] /
  // mn[1] its sub-block 4 + k.
  static void q45_k_scales(const uint8_t* g, __m128i sc[2], __m128i mn[2]) {
    const __m128i six = _mm_set1_epi8(0x3f), four = _mm_set1_epi8(0x0f), two = _mm_set1_epi8(3);
    auto load16 = [&](int at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + at)); };
    const __m128i a = load16(16), b = load16(32), c = load16(48);
    sc[0] = _mm_and_si128(a, six);
    mn[0] = _mm_and_si128(b, six);
    sc[1] = _mm_or_si128(_mm_and_si128(c, four),
                         _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(a, 6), two), 4));
    mn[1] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(c, 4), four),
                         _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(b, 6), two), 4));
  }

  // The signed scales of an interleaved Q3_K group's four rows, unpacked from their 6-bit
  // fields (at g + 8): byte 4r + k of sc[q] is row r's sub-block 4q + k, less 32.
  static void q3_k_scales(const uint8_t* g, __m128i sc[4]) {
    const __m128i nibble = _mm_set1_epi8(0x0f), two_bits = _mm_set1_epi8(3),
                  bias = _mm_set1_epi8(32);
    auto load16 = [&](int at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + at)); };
    const __m128i a = load16(8), b = load16(24), c = load16(40);
    auto high = [&](int shift) {  // bits 4-5 of a scale from c's byte
      return _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(c, shift), two_bits), 4);
    };
    sc[0] = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(a, nibble), high(0)), bias);
    sc[1] = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(b, nibble), high(2)), bias);
    sc[2] = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(_mm_srli_epi16(a, 4), nibble), high(4)), bias);
    sc[3] = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(_mm_srli_epi16(b, 4), nibble), high(6)), bias);
  }

  // The same scales in the order of the kernels with a 128-bit lane per row (repack.hpp): byte
  // 4r + d of c[k] is row r's sub-block 8n + 2k + b for lane d = 2n + b, less 32.
  static void q3_k_chain_scales(const uint8_t* g, __m128i c[4]) {
    __m128i sc[4];
    q3_k_scales(g, sc);
    for (int p = 0; p < 2; ++p) {  // chains 2p, 2p + 1: sc[p] (half 0) and sc[2 + p] (half 1)
      // dword i: word i of each (row i / 2, sub-blocks 2 (i % 2) + 0, 1 of the register)
      const __m128 lo = _mm_castsi128_ps(_mm_unpacklo_epi16(sc[p], sc[2 + p]));
      const __m128 hi = _mm_castsi128_ps(_mm_unpackhi_epi16(sc[p], sc[2 + p]));
      c[2 * p] = _mm_castps_si128(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
      c[2 * p + 1] = _mm_castps_si128(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
    }
  }

  // Q4_K gemv over an interleaved group of four rows (kernels/repack.hpp). The vector lanes
  // are the rows: a 32-byte load holds 4 quant bytes of each row in each 128-bit half, and
  // vpshufd broadcasts the 4 activations they multiply, so one vpmaddubsw serves 4 rows and
  // one vpmaddwd applies the 4 rows' scales of a sub-block (words 2r, 2r+1 of a half: row r).
  // Four products sum in 16 bits first (at most 4 * 2 * 15 * 128). The 6-bit scales and mins
  // of the 4 rows are unpacked together in one 16-byte register each. The mins use the
  // activations' sums per 32. Integer sums are exact; the float order differs from vec_dot's.
  //
  // Q5_K (kQ5): the same, plus each value's 5th bit. The rows' qh bytes are laid out as one
  // chunk of quant bytes, so the load at the quant bytes' place holds the bits of the same
  // values; chunk j's low nibbles take bit 2j, its high nibbles bit 2j + 1, shifted to bit 4.
  // Four products still sum in 16 bits (at most 4 * 2 * 31 * 128).
  template <bool kQ5>
  static void rows_q45_k_interleaved(int64_t n, const void* w, size_t, int, const void* act,
                                     float* out) {
    constexpr size_t kGroupBytes = 4 * (kQ5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
    constexpr int kQs = kQ5 ? 192 : 64;
    const __m256i sixteen = _mm256_set1_epi8(0x10);
    auto bit_to_4 = [](__m256i h, int bit) {  // 16-bit shifts: bit 4 of each byte stays clean
      return bit <= 4 ? _mm256_slli_epi16(h, 4 - bit) : _mm256_srli_epi16(h, bit - 4);
    };
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    // Word w of a half: byte 4 (w / 2) + k of a 16-byte register, zero-extended.
    auto pick = [](int k) {
      const char b0 = static_cast<char>(k), b1 = static_cast<char>(4 + k),
                 b2 = static_cast<char>(8 + k), b3 = static_cast<char>(12 + k), z = -128;
      return _mm256_setr_epi8(b0, z, b0, z, b1, z, b1, z, b2, z, b2, z, b3, z, b3, z,  //
                              b0, z, b0, z, b1, z, b1, z, b2, z, b2, z, b3, z, b3, z);
    };
    const __m256i picks[4] = {pick(0), pick(1), pick(2), pick(3)};
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i, g += kGroupBytes) {
      prefetch_ahead(g, kGroupBytes);
      auto load16 = [&](int at) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + at));
      };
      __m128i sc4[2], mn4[2];
      q45_k_scales(g, sc4, mn4);
      const __m128i mn_lo = mn4[0], mn_hi = mn4[1];
      const __m256i sc[2] = {_mm256_broadcastsi128_si256(sc4[0]),
                             _mm256_broadcastsi128_si256(sc4[1])};
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      __m256i isum = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {  // chunk j: sub-blocks 2j (low nibbles), 2j + 1 (high)
        const __m256i y0 = K::load32(yq + 64 * j), y1 = K::load32(yq + 64 * j + 32);
        __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
        auto step = [&](int m, __m256i y0m, __m256i y1m) {
          const __m256i v = K::load32(g + kQs + 128 * j + 32 * m);
          __m256i q_lo = _mm256_and_si256(v, nibble);
          __m256i q_hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
          if constexpr (kQ5) {
            const __m256i h = K::load32(g + 64 + 32 * m);
            q_lo = _mm256_or_si256(q_lo, _mm256_and_si256(bit_to_4(h, 2 * j), sixteen));
            q_hi = _mm256_or_si256(q_hi, _mm256_and_si256(bit_to_4(h, 2 * j + 1), sixteen));
          }
          lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(q_lo, y0m));
          hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(q_hi, y1m));
        };
        step(0, _mm256_shuffle_epi32(y0, 0x00), _mm256_shuffle_epi32(y1, 0x00));
        step(1, _mm256_shuffle_epi32(y0, 0x55), _mm256_shuffle_epi32(y1, 0x55));
        step(2, _mm256_shuffle_epi32(y0, 0xaa), _mm256_shuffle_epi32(y1, 0xaa));
        step(3, _mm256_shuffle_epi32(y0, 0xff), _mm256_shuffle_epi32(y1, 0xff));
        const int s0 = 2 * j, s1 = 2 * j + 1;  // sub-block s: byte 4r + s % 4 of sc[s / 4]
        isum = IsaTraits::madd_acc(isum, lo, _mm256_shuffle_epi8(sc[s0 / 4], picks[s0 % 4]));
        isum = IsaTraits::madd_acc(isum, hi, _mm256_shuffle_epi8(sc[s1 / 4], picks[s1 % 4]));
      }
      // Mins: sum over sub-blocks s of min(r, s) * (sum of the 32 activations of s).
      const __m256i bs32 =
          _mm256_madd_epi16(K::load32(reinterpret_cast<const uint8_t*>(y[i].bsums)),
                            _mm256_set1_epi16(1));  // halves: s 0-3, 4-7
      const __m256i bs16 = _mm256_packs_epi32(bs32, bs32);
      const __m256i mins = _mm256_add_epi32(
          _mm256_madd_epi16(_mm256_cvtepu8_epi16(mn_lo),
                            _mm256_permute2x128_si256(bs16, bs16, 0x00)),
          _mm256_madd_epi16(_mm256_cvtepu8_epi16(mn_hi),
                            _mm256_permute2x128_si256(bs16, bs16, 0x11)));  // dwords 2r, 2r+1
      const __m256i mh = _mm256_hadd_epi32(mins, mins);  // halves: rows 0, 1 | rows 2, 3
      const __m128i min_rows = _mm256_castsi256_si128(_mm256_permute4x64_epi64(mh, 0x08));
      const __m128i rows = row_sums(isum);
      const __m128i halves = load16(0);  // d of rows 0-3, dmin of rows 0-3
      const __m128 dy = _mm_set1_ps(y[i].d);
      const __m128 d = _mm_mul_ps(_mm_cvtph_ps(halves), dy);
      const __m128 dmin = _mm_mul_ps(_mm_cvtph_ps(_mm_srli_si128(halves, 8)), dy);
      acc = _mm_fmadd_ps(_mm_cvtepi32_ps(rows), d, acc);
      acc = _mm_fnmadd_ps(_mm_cvtepi32_ps(min_rows), dmin, acc);
    }
    _mm_storeu_ps(out, acc);
  }

  // The 6-bit scales of an interleaved IQ4_XS group's four rows (at g + 8 and g + 16): byte ib
  // of sc[r] is row r's sub-block ib, not yet less 32.
  static void iq4_xs_group_scales(const uint8_t* g, uint64_t sc[4]) {
    for (int r = 0; r < 4; ++r) {
      uint16_t h;
      uint32_t l;
      std::memcpy(&h, g + 8 + 2 * r, 2);
      std::memcpy(&l, g + 16 + 4 * r, 4);
      sc[r] = K::iq4_xs_scales(h, l);
    }
  }

  // The same scales less 32, transposed: byte 4 (ib % 4) + r of by_sub[ib / 4].
  static void iq4_xs_by_sub(const uint64_t sc[4], __m128i by_sub[2]) {
    const __m128i r01 =
        _mm_set_epi64x(static_cast<long long>(sc[1]), static_cast<long long>(sc[0]));
    const __m128i r23 =
        _mm_set_epi64x(static_cast<long long>(sc[3]), static_cast<long long>(sc[2]));
    const __m128i p01 = _mm_unpacklo_epi8(r01, _mm_srli_si128(r01, 8));
    const __m128i p23 = _mm_unpacklo_epi8(r23, _mm_srli_si128(r23, 8));
    by_sub[0] = _mm_sub_epi8(_mm_unpacklo_epi16(p01, p23), _mm_set1_epi8(32));
    by_sub[1] = _mm_sub_epi8(_mm_unpackhi_epi16(p01, p23), _mm_set1_epi8(32));
  }

  // IQ4_XS gemv over an interleaved group of four rows (kernels/repack.hpp), in
  // rows_q45_k_interleaved's form: lanes are rows, vpshufd broadcasts the activations. A
  // load's low nibbles are sub-block 2j (low half) and 2j + 1 (high half), values 4m..4m+3;
  // its high nibbles the values 16 above; the activations of both sub-blocks are rearranged
  // to match. The values are signed (|value| against the activations with its sign), and a
  // product pair can reach 2 * 127 * 127, so each vpmaddubsw takes its own vpmaddwd by the
  // scales (of sub-block 2j in the low half, 2j + 1 in the high). With AVX-VNNI the
  // rows_iq4_xs_interleaved_vnni form below replaces this one.
  static void rows_iq4_xs_interleaved(int64_t n, const void* w, size_t, int, const void* act,
                                      float* out) {
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i table = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kKvaluesIq4nl)));
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockIQ4_XS)) {
      prefetch_ahead(g, 4 * sizeof(BlockIQ4_XS));
      uint64_t sc[4];
      iq4_xs_group_scales(g, sc);
      __m128i by_sub[2];
      iq4_xs_by_sub(sc, by_sub);
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      __m256i isum = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        const __m256i ya = K::load32(yq + 64 * j), yb = K::load32(yq + 64 * j + 32);
        const __m256i xlo = _mm256_permute2x128_si256(ya, yb, 0x20);
        const __m256i xhi = _mm256_permute2x128_si256(ya, yb, 0x31);
        const __m128i b8 = by_sub[j / 2];  // sub-blocks 2j, 2j + 1: its low or high 8 bytes
        const __m128i w8 = _mm_cvtepi8_epi16(j % 2 ? _mm_unpackhi_epi64(b8, b8) : b8);
        const __m256i sw =
            _mm256_setr_m128i(_mm_unpacklo_epi16(w8, w8), _mm_unpackhi_epi16(w8, w8));
        auto step = [&](int m, __m256i ylo, __m256i yhi) {
          const __m256i v = K::load32(g + 32 + 128 * j + 32 * m);
          const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, nibble));
          const __m256i hi =
              _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
          const __m256i plo =
              _mm256_maddubs_epi16(_mm256_sign_epi8(lo, lo), _mm256_sign_epi8(ylo, lo));
          const __m256i phi =
              _mm256_maddubs_epi16(_mm256_sign_epi8(hi, hi), _mm256_sign_epi8(yhi, hi));
          isum = IsaTraits::madd_acc(IsaTraits::madd_acc(isum, plo, sw), phi, sw);
        };
        step(0, _mm256_shuffle_epi32(xlo, 0x00), _mm256_shuffle_epi32(xhi, 0x00));
        step(1, _mm256_shuffle_epi32(xlo, 0x55), _mm256_shuffle_epi32(xhi, 0x55));
        step(2, _mm256_shuffle_epi32(xlo, 0xaa), _mm256_shuffle_epi32(xhi, 0xaa));
        step(3, _mm256_shuffle_epi32(xlo, 0xff), _mm256_shuffle_epi32(xhi, 0xff));
      }
      const __m128i rows = row_sums(isum);
      const __m128 d = _mm_mul_ps(
          _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g))), _mm_set1_ps(y[i].d));
      acc = _mm_fmadd_ps(_mm_cvtepi32_ps(rows), d, acc);
    }
    _mm_storeu_ps(out, acc);
  }

#if defined(__AVXVNNI__) || defined(__AVX512VNNI__)  // vpdpbusd: not in the plain AVX2 unit
  // The same group with AVX-VNNI, in 10 instead of 16 ops a 32-byte load: the values plus 128
  // (unsigned, 1..241) against the activations by vpdpbusd, four products a dword. A dword
  // holds one row and one sub-block, so a sub-block's sum takes its scale by one vpmulld per 8
  // dwords, and 128 times each row's sum of scale x the activations' sub-block sum (from the
  // Q8_K block's sums per 16) comes off once per super-block. The activations are at most 127
  // in magnitude (quantize_row_q8_K), so every sum is the form above's integer and the bits
  // are the same.
  static void rows_iq4_xs_interleaved_vnni(int64_t n, const void* w, size_t, int, const void* act,
                                           float* out) {
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i table = shifted_values(kKvaluesIq4nl, 128);
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockIQ4_XS)) {
      prefetch_ahead(g, 4 * sizeof(BlockIQ4_XS));
      uint64_t sc[4];
      iq4_xs_group_scales(g, sc);
      __m128i by_sub[2];
      iq4_xs_by_sub(sc, by_sub);
      // Row r's sum over sub-blocks ib of (scale - 32) x (sum of ib's 32 activations).
      const __m256i sums32 =
          _mm256_madd_epi16(K::load32(reinterpret_cast<const uint8_t*>(y[i].bsums)),
                            _mm256_set1_epi16(1));  // dword ib
      const __m256i sums16 = _mm256_broadcastsi128_si256(
          _mm_packs_epi32(_mm256_castsi256_si128(sums32), _mm256_extracti128_si256(sums32, 1)));
      auto row_scales = [&](uint64_t a, uint64_t b) {  // words: row a's 8 scales, then b's
        return _mm256_cvtepi8_epi16(
            _mm_sub_epi8(_mm_set_epi64x(static_cast<long long>(b), static_cast<long long>(a)),
                         _mm_set1_epi8(32)));
      };
      const __m256i m01 = _mm256_madd_epi16(row_scales(sc[0], sc[1]), sums16);
      const __m256i m23 = _mm256_madd_epi16(row_scales(sc[2], sc[3]), sums16);
      __m256i h = _mm256_hadd_epi32(m01, m23);  // lanes: rows 0, 0, 2, 2 | 1, 1, 3, 3
      h = _mm256_hadd_epi32(h, h);              // rows 0, 2, 0, 2 | 1, 3, 1, 3
      const __m128i offsets =
          _mm_unpacklo_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      __m256i isum = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        const __m256i ya = K::load32(yq + 64 * j), yb = K::load32(yq + 64 * j + 32);
        const __m256i xlo = _mm256_permute2x128_si256(ya, yb, 0x20);
        const __m256i xhi = _mm256_permute2x128_si256(ya, yb, 0x31);
        const __m128i b8 = by_sub[j / 2];  // sub-blocks 2j (dwords 0-3), 2j + 1 (4-7)
        const __m256i s32 = _mm256_cvtepi8_epi32(j % 2 ? _mm_unpackhi_epi64(b8, b8) : b8);
        __m256i part[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
        auto step = [&](int m, __m256i ylo, __m256i yhi) {
          const __m256i v = K::load32(g + 32 + 128 * j + 32 * m);
          const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, nibble));
          const __m256i hi =
              _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
          part[m % 2] = IsaTraits::dot_acc(IsaTraits::dot_acc(part[m % 2], lo, ylo), hi, yhi);
        };
        step(0, _mm256_shuffle_epi32(xlo, 0x00), _mm256_shuffle_epi32(xhi, 0x00));
        step(1, _mm256_shuffle_epi32(xlo, 0x55), _mm256_shuffle_epi32(xhi, 0x55));
        step(2, _mm256_shuffle_epi32(xlo, 0xaa), _mm256_shuffle_epi32(xhi, 0xaa));
        step(3, _mm256_shuffle_epi32(xlo, 0xff), _mm256_shuffle_epi32(xhi, 0xff));
        isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(_mm256_add_epi32(part[0], part[1]), s32));
      }
      const __m128i rows = _mm_sub_epi32(row_sums(isum), _mm_slli_epi32(offsets, 7));
      const __m128 d = _mm_mul_ps(
          _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g))), _mm_set1_ps(y[i].d));
      acc = _mm_fmadd_ps(_mm_cvtepi32_ps(rows), d, acc);
    }
    _mm_storeu_ps(out, acc);
  }
#endif

  // ---- IQ1_S, IQ1_M: grid values -1/0/+1 as |g| against the activations with g's sign, and
  // the delta terms apart (a delta of -1/8 or +1/8 per row), as ggml sums them.
  struct Iq1 {
    __m256i q[8];      // |g|
    __m256i sign[8];   // g
    __m256i delta[8];  // per row, 0x01 or 0xff: the sign of its delta
    __m256i sw[8];
    __m256i delta_words;  // IQ1_S: per 16 values, the scale negated where the delta is -1
    float d;
  };
  static constexpr uint64_t kPlus = 0x0101010101010101ull, kMinus = ~0ull;
  static void grid_rows(const uint8_t* qs, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3,
                        Iq1& s, int g) {
    s.sign[g] = rows(kIq1sGrid, qs[0] | r0, qs[1] | r1, qs[2] | r2, qs[3] | r3);
    s.q[g] = _mm256_sign_epi8(s.sign[g], s.sign[g]);
  }
  static void load_iq1(const BlockIQ1_S& b, Iq1& s) {
    for (int g = 0; g < 8;
         ++g) {  // row l: qs[4g + l] plus bits 3l..3l+2 of qh[g]; scale 12-14; delta 15
      const uint32_t h = b.qh[g];
      grid_rows(b.qs + 4 * g, (h << 8) & 0x700, (h << 5) & 0x700, (h << 2) & 0x700,
                (h >> 1) & 0x700, s, g);
      s.sw[g] = scale_word((h >> 12) & 7);
      s.delta[g] = _mm256_set1_epi64x(static_cast<long long>(h & 0x8000 ? kMinus : kPlus));
    }
    const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh));
    const __m128i scale =
        _mm_add_epi16(_mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(qh, 12), _mm_set1_epi16(7)), 1),
                      _mm_set1_epi16(1));
    const __m128i minus = _mm_srai_epi16(qh, 15);
    const __m128i signed_scale = _mm_sub_epi16(_mm_xor_si128(scale, minus), minus);
    s.delta_words = _mm256_setr_m128i(_mm_unpacklo_epi16(signed_scale, signed_scale),
                                      _mm_unpackhi_epi16(signed_scale, signed_scale));
    s.d = _cvtsh_ss(b.d);
  }
  static void load_iq1(const BlockIQ1_M& b, Iq1& s) {
    uint16_t sc[4];  // 3-bit scales per 16 in the low 12 bits; d in the top nibbles
    std::memcpy(sc, b.scales, 8);
    for (int g = 0; g < 8;
         ++g) {  // rows 0, 1 from qh[2g] (low, high nibble), rows 2, 3 from qh[2g + 1]
      const uint32_t h0 = b.qh[2 * g], h1 = b.qh[2 * g + 1];
      grid_rows(b.qs + 4 * g, (h0 << 8) & 0x700, (h0 << 4) & 0x700, (h1 << 8) & 0x700,
                (h1 << 4) & 0x700, s, g);
      auto delta = [](uint32_t bit) { return static_cast<long long>(bit ? kMinus : kPlus); };
      s.delta[g] =
          _mm256_set_epi64x(delta(h1 & 0x80), delta(h1 & 0x08), delta(h0 & 0x80), delta(h0 & 0x08));
      const uint32_t scales = sc[g / 2] >> (6 * (g % 2));
      s.sw[g] = _mm256_setr_m128i(_mm_set1_epi16(static_cast<short>(2 * (scales & 7) + 1)),
                                  _mm_set1_epi16(static_cast<short>(2 * ((scales >> 3) & 7) + 1)));
    }
    s.d = _cvtsh_ss(static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) |
                                          ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)));
  }
  // IQ1_S's delta is one integer per block from the 16-bit block sums, IQ1_M's in 8 lanes of
  // its own; both scaled by 1/8 at the end.
  template <typename Block>
  static void iq1_dot(int64_t n, const void* w, const void* act, size_t stride, int nc,
                      float* out) {
    constexpr bool kM = std::is_same_v<Block, BlockIQ1_M>;
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const Block*>(w);
      Iq1 b;
      __m256 acc[NC], acc_delta[NC];
      float delta[NC];
      for (int c = 0; c < NC; ++c) acc[c] = acc_delta[c] = _mm256_setzero_ps(), delta[c] = 0.0f;
      const __m256i ones = _mm256_set1_epi8(1);
      for (int64_t i = 0; i < n / kQKK; ++i) {
        load_iq1(x[i], b);
        for (int c = 0; c < NC; ++c) {
          const auto* y =
              reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * stride) + i;
          const auto* yq = reinterpret_cast<const uint8_t*>(y->qs);
          __m256i sum = _mm256_setzero_si256(), sum_delta = _mm256_setzero_si256();
          for (int g = 0; g < 8; ++g) {
            const __m256i a = K::load32(yq + 32 * g);
            sum = IsaTraits::madd_acc(
                sum, _mm256_maddubs_epi16(b.q[g], _mm256_sign_epi8(a, b.sign[g])), b.sw[g]);
            if constexpr (kM) {
              const __m256i pairs = _mm256_maddubs_epi16(ones, _mm256_sign_epi8(a, b.delta[g]));
              sum_delta = IsaTraits::madd_acc(sum_delta, pairs, b.sw[g]);
            }
          }
          const float d = y->d * b.d;
          acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sum), acc[c]);
          if constexpr (kM) {
            acc_delta[c] =
                _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sum_delta), acc_delta[c]);
          } else {
            const __m256i bsums = K::load32(reinterpret_cast<const uint8_t*>(y->bsums));
            delta[c] = std::fma(
                d, static_cast<float>(K::hsum_i32(_mm256_madd_epi16(b.delta_words, bsums))),
                delta[c]);
          }
        }
      }
      for (int c = 0; c < NC; ++c) {
        out[c] = std::fma(kIq1sDelta, kM ? K::hsum_ps(acc_delta[c]) : delta[c], K::hsum_ps(acc[c]));
      }
    });
  }

  // ---- TQ1_0 and TQ2_0 in ggml's order: codes 0..2 (value + 1) in element order, chunk k
  // against activations 32k..32k+31; the 16-bit pair sums of all eight chunks, less the
  // activations' 16 block sums, pair into ggml's 8 lanes; one FMA per block.
  static void codes(const BlockTQ2_0& b,
                    __m256i* q) {  // field l of byte m of half h: element 128h + 32l + m
    for (int h = 0; h < 2; ++h) {
      const __m256i c = K::load32(b.qs + 32 * h);
      for (int l = 0; l < 4; ++l) q[4 * h + l] = K::bits(c, 2 * l, 3);
    }
  }
  // TQ1_0: trit n of byte x is (uint8(x * 3^n) * 3) >> 8, i.e. 0, 1 or 2 as uint8(x * 3^n) is
  // below 86, below 171 or above. Trit n of qs[0..31] is element 32n + m, of qs[32..47]
  // element 160 + 16n + m, of qh[0..3] element 240 + 4n + m.
  static __m256i trit(__m256i y) {
    const __m256i one = _mm256_set1_epi8(1);
    return _mm256_add_epi8(
        _mm256_min_epu8(_mm256_subs_epu8(y, _mm256_set1_epi8(85)), one),
        _mm256_min_epu8(_mm256_subs_epu8(y, _mm256_set1_epi8(static_cast<char>(170))), one));
  }
  static __m256i times3(__m256i x) { return _mm256_add_epi8(_mm256_add_epi8(x, x), x); }
  static void codes(const BlockTQ1_0& b, __m256i* q) {
    __m256i y = K::load32(b.qs);
    for (int n = 0; n < 5; ++n, y = times3(y)) q[n] = trit(y);
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 32));
    __m256i z = _mm256_setr_m128i(x, _mm_add_epi8(_mm_add_epi8(x, x), x));  // x * 3^n, 3^(n+1)
    for (int k = 5; k < 7; ++k, z = times3(times3(z))) q[k] = trit(z);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    const __m256i pow3 = _mm256_setr_epi16(1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27);
    const __m256i h16 = _mm256_and_si256(
        _mm256_mullo_epi16(_mm256_cvtepu8_epi16(_mm_set1_epi32(static_cast<int>(qh))), pow3),
        _mm256_set1_epi16(0xff));  // word 4n + m: qh[m] * 3^n
    const __m128i h =
        _mm_packus_epi16(_mm256_castsi256_si128(h16), _mm256_extracti128_si256(h16, 1));
    q[7] = trit(_mm256_setr_m128i(_mm256_castsi256_si128(z), h));  // trit 4 of qs[32..47], qh
  }
  template <typename Block>
  static void ternary_dot(int64_t n, const void* w, const void* act, size_t stride, int nc,
                          float* out) {
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const Block*>(w);
      __m256 acc[NC];
      for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
      for (int64_t i = 0; i < n / kQKK; ++i) {
        prefetch_ahead(x + i, sizeof(Block));
        __m256i q[8];
        codes(x[i], q);
        const float d = _cvtsh_ss(x[i].d);
        for (int c = 0; c < NC; ++c) {
          const auto* y =
              reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * stride) + i;
          const auto* yq = reinterpret_cast<const uint8_t*>(y->qs);
          __m256i sum = _mm256_setzero_si256();  // at most 8 * 2 * 2 * 128 per word
          for (int k = 0; k < 8; ++k)
            sum = _mm256_add_epi16(sum, _mm256_maddubs_epi16(q[k], K::load32(yq + 32 * k)));
          sum = _mm256_sub_epi16(sum, K::load32(reinterpret_cast<const uint8_t*>(y->bsums)));
          const __m256i lanes = _mm256_madd_epi16(sum, _mm256_set1_epi16(1));
          acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes), _mm256_set1_ps(y->d * d), acc[c]);
        }
      }
      for (int c = 0; c < NC; ++c) out[c] = K::hsum_ps(acc[c]);
    });
  }

  // ---- Dequantizers of the grid types, from the same loaders: the signed values times the
  // float scale per 16 (d * (2s + 1), with d carrying the power of two), as the reference.
  static void store32(__m256i v, __m256i sw, float d, float* y) {
    alignas(32) int8_t q[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(q), v);
    K::store16(q, d * static_cast<float>(_mm256_extract_epi16(sw, 0)), 0.0f, y);
    K::store16(q + 16, d * static_cast<float>(_mm256_extract_epi16(sw, 8)), 0.0f, y + 16);
  }
  template <typename Block>
  static void dequantize_grid(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const Block*>(vx);
    Super s;
    for (int64_t i = 0; i < n / kQKK; ++i) {
      load(x[i], s);
      for (int g = 0; g < 8; ++g, y += 32)
        store32(_mm256_sign_epi8(s.q[g], s.sign[g]), s.sw[g], s.d, y);
    }
  }
  // IQ1: 8g + delta sign against d * (2s + 1) / 8, the reference's d * (2s + 1) * (g +- 1/8).
  template <typename Block>
  static void dequantize_iq1(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const Block*>(vx);
    Iq1 s;
    for (int64_t i = 0; i < n / kQKK; ++i) {
      load_iq1(x[i], s);
      for (int g = 0; g < 8; ++g, y += 32) {
        __m256i v = s.sign[g];
        for (int k = 0; k < 3; ++k) v = _mm256_add_epi8(v, v);
        store32(_mm256_add_epi8(v, s.delta[g]), s.sw[g], s.d * kIq1sDelta, y);
      }
    }
  }

  static void fill_dequantize(KernelTable& t) {
    using T = TensorType;
    t.types[uint32_t(T::IQ2_XXS)].dequantize_row = dequantize_grid<BlockIQ2_XXS>;
    t.types[uint32_t(T::IQ2_XS)].dequantize_row = dequantize_grid<BlockIQ2_XS>;
    t.types[uint32_t(T::IQ2_S)].dequantize_row = dequantize_grid<BlockIQ2_S>;
    t.types[uint32_t(T::IQ3_XXS)].dequantize_row = dequantize_grid<BlockIQ3_XXS>;
    t.types[uint32_t(T::IQ3_S)].dequantize_row = dequantize_grid<BlockIQ3_S>;
    t.types[uint32_t(T::IQ1_S)].dequantize_row = dequantize_iq1<BlockIQ1_S>;
    t.types[uint32_t(T::IQ1_M)].dequantize_row = dequantize_iq1<BlockIQ1_M>;
  }
  // The interleaved gemvs (Q2_K's and Q3_K's, with a 128-bit lane per row, are
  // kdot256_lanes.inl's); the AVX-512 table takes them too, compiled with its own traits (its
  // prefetch distance).
  static void fill_interleaved(KernelTable& t) {
    using T = TensorType;
    t.types[uint32_t(T::Q4_K)].vec_dot_interleaved = rows_in_groups<rows_q45_k_interleaved<false>>;
    t.types[uint32_t(T::Q5_K)].vec_dot_interleaved = rows_in_groups<rows_q45_k_interleaved<true>>;
#if defined(__AVXVNNI__) || defined(__AVX512VNNI__)
    static_assert(IsaTraits::kVnni);
    t.types[uint32_t(T::IQ4_XS)].vec_dot_interleaved = rows_in_groups<rows_iq4_xs_interleaved_vnni>;
#else
    static_assert(!IsaTraits::kVnni);
    t.types[uint32_t(T::IQ4_XS)].vec_dot_interleaved = rows_in_groups<rows_iq4_xs_interleaved>;
#endif
  }
  static void fill_dot(KernelTable& t) {
    using T = TensorType;
    set_dot<word_dot<BlockQ2_K>>(t, T::Q2_K);
    set_dot<word_dot<BlockQ3_K>>(t, T::Q3_K);
    set_dot<word_dot<BlockQ4_K>>(t, T::Q4_K);
    set_dot<word_dot<BlockQ5_K>>(t, T::Q5_K);
    set_dot<word_dot<BlockQ6_K>>(t, T::Q6_K);
    set_dot<word_dot<BlockIQ4_XS>>(t, T::IQ4_XS);
    fill_interleaved(t);
    set_dot<word_dot<BlockIQ2_XXS>>(t, T::IQ2_XXS);
    set_dot<word_dot<BlockIQ2_XS>>(t, T::IQ2_XS);
    set_dot<word_dot<BlockIQ2_S>>(t, T::IQ2_S);
    set_dot<word_dot<BlockIQ3_XXS>>(t, T::IQ3_XXS);
    set_dot<word_dot<BlockIQ3_S>>(t, T::IQ3_S);
    set_dot<iq1_dot<BlockIQ1_S>>(t, T::IQ1_S);
    set_dot<iq1_dot<BlockIQ1_M>>(t, T::IQ1_M);
    set_dot<ternary_dot<BlockTQ1_0>>(t, T::TQ1_0);
    set_dot<ternary_dot<BlockTQ2_0>>(t, T::TQ2_0);
  }
};
