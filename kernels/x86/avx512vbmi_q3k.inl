// The interleaved Q3_K gemv with VBMI and GFNI (layout: kernels/repack.hpp, a 128-bit lane per
// row). Included by avx512vbmi_kquants.cpp inside its anonymous namespace, after
// avx512_kinterleaved.inl (KInterleaved512's row-lane helpers, and its portable rows_q3_k,
// which this replaces in the VBMI table).
//
// Measured on Zen 5 (bench_kernels gemv_l2_interleaved/q3_K), the portable kernel is bound by
// its byte logic (each AND removed from its loop was worth more than a shift), so this one
// spends fewer of them:
// - A chain's high bit: one vgf2p8affineqb per chain and step moves bit 4n + k of each hmask
//   byte to bit 2 and clears the rest (its matrix is per qword, and a row lane's two qwords
//   are its halves n = 0, 1), where the portable kernel shifts by dword, shifts and masks.
// - The scales: two vpermb gather, for every (row, lane, chain), the byte of its low nibble
//   and the byte of its 2 high bits; two vpmultishiftqb put them at bits 2-5 and 6-7; one
//   vpternlogd merges them and one XOR of bit 7 makes the byte 4 (scale - 32) as an int8.
//   Pairs of chains then share one vpdpwssd (chain c in the low word, c + 2 in the high).
struct Q3kVbmi {
  // Scale bytes: byte o = 16r + 4d + k is row r's sub-block j = 8n + 2k + b (d = 2n + b).
  static constexpr int sub_block(int o) {
    const int d = (o / 4) % 4, k = o % 4;
    return 8 * (d / 2) + 2 * k + d % 2;
  }
  // The group's scale bytes, from g + 8: row r's byte m at 16 (m / 4) + 4r + m % 4.
  static constexpr int scale_byte(int r, int m) { return 16 * (m / 4) + 4 * r + m % 4; }

  static void rows(int64_t n, const void* w, size_t, int, const void* act, float* out) {
    using K = KInterleaved512;
    static constexpr Bytes64 kLowSrc =
        perm_bytes([](int o) { return scale_byte(o / 16, sub_block(o) % 8); });
    static constexpr Bytes64 kHighSrc =
        perm_bytes([](int o) { return scale_byte(o / 16, 8 + sub_block(o) % 4); });
    // The nibble (bits 4 (j / 8)..) to bits 2-5; the 2 high bits (2 (j / 4)..) to bits 6-7.
    static constexpr Bytes64 kLowShift =
        perm_bytes([](int o) { return (8 * (o % 8) + 4 * (sub_block(o) / 8) - 2) & 63; });
    static constexpr Bytes64 kHighShift =
        perm_bytes([](int o) { return (8 * (o % 8) + 2 * (sub_block(o) / 4) - 6) & 63; });
    const __m512i low_src = kLowSrc.load(), high_src = kHighSrc.load();
    const __m512i low_shift = kLowShift.load(), high_shift = kHighShift.load();
    const __m512i bits2to5 = _mm512_set1_epi8(0x3c), bit7 = _mm512_set1_epi8(-128);
    const __m512i low_words = _mm512_set1_epi32(0xffff), three = _mm512_set1_epi8(3);
    // vgf2p8affineqb: output bit i is the parity of (matrix byte 7 - i) & input; here bit 2
    // is input bit k (qwords of half 0) or 4 + k (half 1).
    __m512i to_bit2[4];
    for (int k = 0; k < 4; ++k) {
      const auto row = [](int from) {
        return static_cast<long long>((1ull << from) << 8 * (7 - 2));
      };
      to_bit2[k] = _mm512_broadcast_i64x2(_mm_set_epi64x(row(4 + k), row(k)));
    }
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockQ3_K)) {
      prefetch_ahead(g, 4 * sizeof(BlockQ3_K));
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      const __m512i start =
          _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(K::row_lanes_sums(y[i]), 2));
      __m512i chain[4];
      for (int k = 0; k < 4; ++k) chain[k] = K::chain_sums(start, k);
      for (int t = 0; t < 4; ++t) {
        const __m512i q = _mm512_loadu_si512(g + 184 + 64 * t);
        const __m512i hm = K::q3_k_hmask(g, t);
        for (int k = 0; k < 4; ++k) {
          const __m512i bits = k == 0 ? q : _mm512_srli_epi16(q, 2 * k);
          const __m512i high = _mm512_gf2p8affine_epi64_epi8(hm, to_bit2[k], 0);
          const __m512i v = _mm512_ternarylogic_epi32(bits, high, three, 0xe4);  // 3 ? bits : high
          chain[k] = _mm512_dpbusd_epi32(chain[k], v, K::row_lanes_act(yq, t, k));
        }
      }
      // Byte 16r + 4d + k: 4 (scale - 32) of chain k's sub-block in lane (r, d).
      const __m512i raw = _mm512_loadu_si512(g + 8);
      const __m512i lo =
          _mm512_multishift_epi64_epi8(low_shift, _mm512_permutexvar_epi8(low_src, raw));
      const __m512i hi =
          _mm512_multishift_epi64_epi8(high_shift, _mm512_permutexvar_epi8(high_src, raw));
      const __m512i sc = _mm512_xor_si512(_mm512_ternarylogic_epi32(lo, hi, bits2to5, 0xe4), bit7);
      // Words: chains 0 and 2 (scales of bytes 0 and 2), chains 1 and 3 (bytes 1 and 3).
      const __m512i sc02 = _mm512_srai_epi16(_mm512_slli_epi16(sc, 8), 10);
      const __m512i sc13 = _mm512_srai_epi16(sc, 10);
      auto pair = [&](int k) {  // chain k in the low word, k + 2 in the high (both within 16 bits)
        return _mm512_ternarylogic_epi32(chain[k], _mm512_slli_epi32(chain[k + 2], 16), low_words,
                                         0xe4);
      };
      const __m512i isum = _mm512_dpwssd_epi32(
          _mm512_dpwssd_epi32(_mm512_setzero_si512(), pair(0), sc02), pair(1), sc13);
      const __m128 d = _mm_mul_ps(
          _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g))), _mm_set1_ps(y[i].d));
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), K::per_row(d), acc);
    }
    K::store_rows(acc, out);
  }
};
