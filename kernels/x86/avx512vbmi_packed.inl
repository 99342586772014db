// The packed IQ1_S/IQ1_M gemv with GFNI, VBMI and AVX512_BW's 16-bit masks, replacing
// PackedIq1 (avx512_packed.inl) in the VBMI table. Same copy, same integer sums per lane, fewer
// instructions a row:
// - u = 8c: one vgf2p8affineqb per chunk moves bits 2g..2g+1 of each code byte to bits 3..4
//   (PackedIq1: a shift and an AND);
// - t: not added to the codes byte by byte (PackedIq1 turns the 32 plus bits into two 64-bit
//   byte masks with pext, pdep and a multiply, then four masked adds) but once per lane pair:
//   each lane's two sums of 8 activations (made once per block for all rows, as 16-bit pairs)
//   times t = +1 or -1, picked by the plus bits as a 32-bit word mask, in one vpdpwssd;
// - the sub-scales: one vpmultishiftqb moves lane k's nibble to the lane's low byte, one AND
//   (PackedIq1: five instructions unpacking the nibbles).
// So lane i sums (8c - 8) . a + t . a over its 16 values, as PackedIq1's (8c + 1 + t - 9) . a.
//
// Included by avx512vbmi_kquants.cpp inside its anonymous namespace, after avx512_packed.inl
// (minus_bias_lane_sums).
struct PackedIq1Vbmi {
  // Output bits 3 and 4 of each byte from input bits 2g and 2g + 1 (byte 7 - i of the matrix
  // picks output bit i), the others 0: 8c of chunk g.
  static __m512i eight_c(__m512i codes, int g) {
    const uint64_t matrix = (uint64_t{1} << (2 * g)) << 32 | (uint64_t{1} << (2 * g + 1)) << 24;
    return _mm512_gf2p8affine_epi64_epi8(codes, _mm512_set1_epi64(static_cast<int64_t>(matrix)), 0);
  }

  // Dword k of the result: bits 8k.. (k < 8) or 8(k - 8) + 4.. (k >= 8) of the qword, so after
  // an AND with 15, lane k's sub-scale nibble.
  static __m512i scale_shifts() {
    alignas(64) uint32_t s[16];
    for (uint32_t k = 0; k < 16; ++k) s[k] = (k < 8 ? 8 * k : 8 * (k - 8) + 4) * 0x01010101u;
    return _mm512_load_si512(s);
  }

  template <int NR>
  static void rows_n(int64_t n, const uint8_t* w, size_t row_bytes, const void* act, float* out) {
    const int64_t nb = n / kQKK;
    const auto* y = static_cast<const BlockQ8_K*>(act);
    const __m512i ones8 = _mm512_set1_epi8(1), nibble = _mm512_set1_epi32(15);
    const __m512i plus1 = _mm512_set1_epi16(1), minus1 = _mm512_set1_epi16(-1);
    const __m512i shifts = scale_shifts();
    __m512 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      __m512i a[4];
      for (int g = 0; g < 4; ++g) a[g] = _mm512_loadu_si512(yq + 64 * g);
      // Lane i's sums of values 16i..16i+7 (chunks 0, 1) and 16i+8..16i+15 (chunks 2, 3).
      const __m512i zero = _mm512_setzero_si512();
      const __m512i lo = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, ones8, a[0]), ones8, a[1]);
      const __m512i hi = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, ones8, a[2]), ones8, a[3]);
      // As 16-bit pairs (|sum| <= 1024): word 2i the first, word 2i + 1 the second.
      const __m512i pairs = _mm512_mask_blend_epi16(0xaaaaaaaau, lo, _mm512_slli_epi32(hi, 16));
      const __m512i start = minus_bias_lane_sums(y[i], 8);  // -8 times lane i's sum: (8c - 8) . a
      for (int r = 0; r < NR; ++r) {
        const uint8_t* row = w + r * row_bytes;
        const uint8_t* codes_at = row + 64 * i;
        const auto* meta = reinterpret_cast<const PackedIq1Meta*>(row + 64 * nb) + i;
        prefetch_ahead(codes_at, 64);
        if (i % 4 == 0) prefetch_ahead(meta, 64);
        const __m512i codes = _mm512_loadu_si512(codes_at);
        __m512i sum = start;
        for (int g = 0; g < 4; ++g) sum = _mm512_dpbusd_epi32(sum, eight_c(codes, g), a[g]);
        uint32_t plus;  // bit b: the 8 values of word b of `pairs` have t = +1
        std::memcpy(&plus, &meta->plus, 4);
        sum = _mm512_dpwssd_epi32(sum, pairs,
                                  _mm512_mask_blend_epi16(_cvtu32_mask32(plus), minus1, plus1));
        uint64_t scales;
        std::memcpy(&scales, meta->scales, 8);
        const __m512i m = _mm512_and_si512(
            _mm512_multishift_epi64_epi8(shifts, _mm512_set1_epi64(static_cast<int64_t>(scales))),
            nibble);
        sum = _mm512_mullo_epi32(sum, m);
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
