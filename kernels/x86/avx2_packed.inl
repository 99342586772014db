// The gemvs of the packed IQ1 and nibble-packed grid copies (kernels/pack.hpp) on 256-bit
// registers: AVX2, and with AVX-VNNI (avx2vnni_kquants.cpp builds this file again). The same
// layout and sums as the AVX-512 kernels (avx512_packed.inl), each 64-byte chunk taken as two
// halves: half k of a block holds the lanes 8k..8k+7, so a row's block is two integer
// accumulators of 8 lanes, each from four dots of 32 codes against 32 activations, times its
// lanes' sub-scales (vpmulld), then added into one before the conversion and the FMA.
// - The unsigned u = v + bias against the signed activations: vpdpbusd with AVX-VNNI; on AVX2
//   vpmaddubsw pairs (at most 2 * 124 * 128 < 2^15: they cannot saturate), then vpmaddwd; where
//   four chunks' pairs fit in 16 bits together (IQ1: u <= 18; IQ3_S: u <= 30) they are added
//   before one vpmaddwd.
// - IQ1's shift t = +1 adds 2 to u: per half and pair of chunks, the 8 lanes' bits of `plus`
//   picked by one AND and one compare against their masks.
// - The loop over a group's rows is unrolled whole: GCC left it rolled on AVX2 (the rows'
//   accumulators in memory), and the gemv from memory ran at a third of the AVX-VNNI build's
//   speed (IQ3_S gemv_big_interleaved 10.5 against 32-36 GB/s; unrolled 32.0).
// Sums are exact integers per block until the FMA, as the AVX-512 kernels'; the lanes' float
// order differs (8 lanes, not 16), within the tests' tolerance of the scalar reference.
//
// Included by avx2_kquants.cpp inside its anonymous namespace.

struct Packed256 {
  // The dot of four chunks' u (unsigned, at most kMaxU) with their activations, added to acc.
  template <int kMaxU>
  QINFER_INLINE static __m256i dot4(__m256i acc, const __m256i* u, const uint8_t* a, int64_t k) {
    auto act = [&](int g) {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 64 * g + 32 * k));
    };
    if constexpr (IsaTraits::kVnni || 8 * kMaxU * 128 >= 32768) {
      for (int g = 0; g < 4; ++g) acc = IsaTraits::dot_acc(acc, u[g], act(g));
      return acc;
    } else {
      __m256i pairs = _mm256_maddubs_epi16(u[0], act(0));
      for (int g = 1; g < 4; ++g)
        pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(u[g], act(g)));
      return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
  }
  // -bias times the activations' sums over lanes 8k..8k+7 (bsums, sign-extended: the high
  // word's 0 adds nothing).
  QINFER_INLINE static __m256i minus_bias_sums(const BlockQ8_K& y, int bias, int64_t k) {
    const __m256i sums =
        _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y.bsums + 8 * k)));
    return _mm256_madd_epi16(sums, _mm256_set1_epi32(-bias & 0xffff));
  }
  // rows_n<NR>(n, w, row_bytes, act, out) for every group of rows, NR a constant.
  template <typename Kernel>
  static void rows(int64_t n, const void* w, size_t row_bytes, int n_rows, const void* act,
                   float* out) {
    by_cols(n_rows, [&]<int NR>() {
      Kernel::template rows_n<NR>(n, static_cast<const uint8_t*>(w), row_bytes, act, out);
    });
  }
};

struct PackedIq1x256 {
  template <int NR>
  static void rows_n(int64_t n, const uint8_t* w, size_t row_bytes, const void* act, float* out) {
    const int64_t nb = n / kQKK;
    const auto* y = static_cast<const BlockQ8_K*>(act);
    const __m256i level = _mm256_set1_epi8(0x18), two = _mm256_set1_epi8(2);
    const __m256i low = _mm256_set1_epi8(15);
    // The bit of `plus` for lane 8k + l and chunks 2p, 2p + 1: 16k + 2l + p (kernels/pack.hpp)
    __m256i bit[2][2];
    for (int k = 0; k < 2; ++k) {
      for (int p = 0; p < 2; ++p) {
        alignas(32) uint32_t b[8];
        for (int l = 0; l < 8; ++l) b[l] = 1u << (16 * k + 2 * l + p);
        bit[k][p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
      }
    }
    __m256 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      const __m256i start[2] = {Packed256::minus_bias_sums(y[i], 9, 0),
                                Packed256::minus_bias_sums(y[i], 9, 1)};
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        const uint8_t* row = w + r * row_bytes;
        const uint8_t* codes_at = row + 64 * i;
        const auto* meta = reinterpret_cast<const PackedIq1Meta*>(row + 64 * nb) + i;
        prefetch_ahead(codes_at, 64);
        if (i % 4 == 0) prefetch_ahead(meta, 64);
        uint32_t plus_bits;
        std::memcpy(&plus_bits, &meta->plus, 4);
        const __m256i plus = _mm256_set1_epi32(static_cast<int>(plus_bits));
        const __m128i nibbles = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta->scales));
        // m of lanes 0..7 (low nibbles), 8..15 (high)
        const __m256i m[2] = {
            _mm256_cvtepu8_epi32(_mm_and_si128(nibbles, _mm256_castsi256_si128(low))),
            _mm256_cvtepu8_epi32(
                _mm_and_si128(_mm_srli_epi16(nibbles, 4), _mm256_castsi256_si128(low)))};
        __m256i total = _mm256_setzero_si256();
        for (int k = 0; k < 2; ++k) {
          const __m256i codes =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes_at + 32 * k));
          __m256i twos[2];
          for (int p = 0; p < 2; ++p) {
            const __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(plus, bit[k][p]), bit[k][p]);
            twos[p] = _mm256_and_si256(set, two);
          }
          // 8c of chunk g (bits 2g..2g+1 of each byte moved to bits 3..4), plus 2 where t = +1
          const __m256i u[4] = {
              _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(codes, 3), level), twos[0]),
              _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(codes, 1), level), twos[0]),
              _mm256_add_epi8(_mm256_and_si256(_mm256_srli_epi16(codes, 1), level), twos[1]),
              _mm256_add_epi8(_mm256_and_si256(_mm256_srli_epi16(codes, 3), level), twos[1])};
          const __m256i sum = Packed256::dot4<18>(start[k], u, yq, k);
          total = _mm256_add_epi32(total, _mm256_mullo_epi32(sum, m[k]));
        }
        acc[r] =
            _mm256_fmadd_ps(_mm256_set1_ps(meta->unit * y[i].d), _mm256_cvtepi32_ps(total), acc[r]);
      }
    }
    for (int r = 0; r < NR; ++r) out[r] = X86K<IsaTraits>::hsum_ps(acc[r]);
  }
};

template <TensorType T>
struct PackedNibble256 {
  static constexpr NibbleCodes kCodes = *nibble_codes(T);
  static constexpr bool kLinear = T == TensorType::IQ3_S;
  // Codes under 8 (the IQ2 types): vpshufb takes a nibble straight from its byte (pack.hpp).
  static constexpr bool kSmallCodes = !kLinear && nibble_code_count(kCodes) <= 8;
  static constexpr int64_t kMeta = static_cast<int64_t>(nibble_meta_bytes(kCodes));
  static constexpr int kMaxU = 2 * kCodes.bias;

  template <int NR>
  static void rows_n(int64_t n, const uint8_t* w, size_t row_bytes, const void* act, float* out) {
    const int64_t nb = n / kQKK;
    const auto* y = static_cast<const BlockQ8_K*>(act);
    const __m256i nibble = _mm256_set1_epi8(kLinear ? 0x1e : 0x0f);
    alignas(16) int8_t u_of[16];  // u by code (not IQ3_S)
    for (int c = 0; c < 16; ++c) u_of[c] = static_cast<int8_t>(kCodes.v[c] + kCodes.bias);
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(u_of)));
    // lane 8k + l's s: nibble 4k + l / 2 of the even lanes' word (l even) or the odd lanes'
    const __m256i shifts[2] = {_mm256_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12),
                               _mm256_setr_epi32(16, 16, 20, 20, 24, 24, 28, 28)};
    const __m256i twice_s = _mm256_set1_epi32(0x1e), one = _mm256_set1_epi32(1);
    __m256 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      const __m256i start[2] = {Packed256::minus_bias_sums(y[i], kCodes.bias, 0),
                                Packed256::minus_bias_sums(y[i], kCodes.bias, 1)};
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        const uint8_t* row = w + r * row_bytes;
        const uint8_t* codes_at = row + 128 * i;
        const uint8_t* meta = row + 128 * nb + kMeta * i;
        prefetch_ahead(codes_at, 128);
        if (i % 4 == 0) prefetch_ahead(meta, 64);
        __m256i words;
        if constexpr (kCodes.per16) {
          uint64_t both;
          std::memcpy(&both, meta + 4, 8);
          words = _mm256_set1_epi64x(static_cast<long long>(both));
        } else {
          uint32_t one_word;
          std::memcpy(&one_word, meta + 4, 4);
          words = _mm256_set1_epi32(static_cast<int>(one_word));
        }
        __m256i total = _mm256_setzero_si256();
        for (int k = 0; k < 2; ++k) {
          __m256i u[4];
          for (int h = 0; h < 2; ++h) {
            const __m256i codes =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes_at + 64 * h + 32 * k));
            if constexpr (kLinear) {
              u[2 * h] = _mm256_and_si256(_mm256_add_epi8(codes, codes), nibble);
              u[2 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(codes, 3), nibble);
            } else if constexpr (kSmallCodes) {  // bit 7 of every byte clear: no AND
              u[2 * h] = _mm256_shuffle_epi8(table, codes);
              u[2 * h + 1] = _mm256_shuffle_epi8(table, _mm256_srli_epi16(codes, 4));
            } else {
              u[2 * h] = _mm256_shuffle_epi8(table, _mm256_and_si256(codes, nibble));
              u[2 * h + 1] =
                  _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(codes, 4), nibble));
            }
          }
          const __m256i sum = Packed256::dot4<kMaxU>(start[k], u, yq, k);
          // m = 2s + 1: (2s & 0x1e) | 1
          const __m256i s = _mm256_srlv_epi32(words, shifts[k]);
          const __m256i m = _mm256_or_si256(_mm256_and_si256(_mm256_add_epi32(s, s), twice_s), one);
          total = _mm256_add_epi32(total, _mm256_mullo_epi32(sum, m));
        }
        float unit;
        std::memcpy(&unit, meta, 4);
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(unit * y[i].d), _mm256_cvtepi32_ps(total), acc[r]);
      }
    }
    for (int r = 0; r < NR; ++r) out[r] = X86K<IsaTraits>::hsum_ps(acc[r]);
  }
};

inline void fill_packed256(KernelTable& t) {
  using T = TensorType;
  for (T type : {T::IQ1_S, T::IQ1_M})
    t.types[static_cast<uint32_t>(type)].vec_dot_packed =
        rows_in_groups<Packed256::rows<PackedIq1x256>>;
  t.types[static_cast<uint32_t>(T::IQ3_S)].vec_dot_packed =
      rows_in_groups<Packed256::rows<PackedNibble256<T::IQ3_S>>>;
  t.types[static_cast<uint32_t>(T::IQ3_XXS)].vec_dot_packed =
      rows_in_groups<Packed256::rows<PackedNibble256<T::IQ3_XXS>>>;
  t.types[static_cast<uint32_t>(T::IQ2_XXS)].vec_dot_packed =
      rows_in_groups<Packed256::rows<PackedNibble256<T::IQ2_XXS>>>;
  t.types[static_cast<uint32_t>(T::IQ2_XS)].vec_dot_packed =
      rows_in_groups<Packed256::rows<PackedNibble256<T::IQ2_XS>>>;
  t.types[static_cast<uint32_t>(T::IQ2_S)].vec_dot_packed =
      rows_in_groups<Packed256::rows<PackedNibble256<T::IQ2_S>>>;
}
