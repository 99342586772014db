// The interleaved IQ4_XS gemv on 512-bit registers (layout: kernels/repack.hpp), with VBMI.
// Included by avx512vbmi_kquants.cpp inside its anonymous namespace.
//
// Per chunk of 64 values (two sub-blocks) of the four rows, two 64-byte loads; a dword lane L
// of either holds 4 quant bytes of row L % 4, sub-block 2j + (L / 4) % 2. The codes look up
// value + 128 (unsigned, 1..241) by vpermb and meet the activations, permuted to the same
// lanes, in vpdpbusd: four products a lane, no 16-bit step and no signs applied. Each lane's
// sum times its sub-block's scale (ls - 32, sign-extended from the top byte of a vpermb)
// accumulates in 32 bits over the super-block; the +128 comes out once per super-block as
// 128 * sum over sub-blocks of scale * (the activations' sum), by one vpmaddwd. A row's
// super-block sum is an exact integer, then one FMA by its d, as in the GEMM (so a prompt
// gives the logits of token-by-token decoding). Not ggml's order (the fidelity rule allows
// it; the ISA tests hold it to the file layout's dot).
struct Iq4xsInterleaved {
  // The activations' dwords for lane L: bytes 32h + 4m.. of the chunk (h = (L/4) % 2, m the
  // lane's 32-byte vector), the low nibbles; +4 dwords for the high ones; +2 for load b.
  // Prepared once per matmul (KInterleaved512::LanesAct) in the order the loop takes them,
  // with the sums per 32 values once per 128-bit lane (the correction's vpmaddwd).
  static void prepare_act(void* act, int64_t n) {
    const __m512i lo_a = _mm512_setr_epi32(0, 0, 0, 0, 8, 8, 8, 8, 1, 1, 1, 1, 9, 9, 9, 9);
    const __m512i hi_a = _mm512_add_epi32(lo_a, _mm512_set1_epi32(4));
    const __m512i two = _mm512_set1_epi32(2);
    const __m512i idx[4] = {lo_a, hi_a, _mm512_add_epi32(lo_a, two), _mm512_add_epi32(hi_a, two)};
    KInterleaved512::prepare_lanes_act(
        act, n, idx, [](__m128i sums32) { return _mm512_broadcast_i32x4(sums32); });
  }

  static void rows(int64_t n, const void* w, size_t, int, const void* act, float* out) {
    const __m512i kValues = iq4nl_values64().load();
    // The values of the codes in bits 0-3 of each byte, whatever bits 4-7 hold: vpermb indexes
    // by bits 0-5, and the table repeats every 16 bytes. So the nibbles need no mask (two
    // vpandd per 64 codes fewer than vpshufb, which zeroes a byte whose bit 7 is set).
    auto values = [&](__m512i codes) { return _mm512_permutexvar_epi8(codes, kValues); };
    // Qword r of the scale source: row r's scales_l (group bytes 16 + 4r..) then its scales_h
    // (group bytes 8 + 2r..), then zeros.
    static constexpr Bytes64 kGather = perm_bytes([](int i) {
      const int r = (i / 8) % 4, b = i % 8;
      return b < 4 ? 16 + 4 * r + b : b < 6 ? 8 + 2 * r + (b - 4) : 63;
    });
    // Byte sb of qword r: bits 4 sb.. (low scale bits) and 32 + 2 sb.. (high bits).
    static constexpr Bytes64 kLowShift = perm_bytes([](int i) { return 4 * (i % 8); });
    static constexpr Bytes64 kHighShift = perm_bytes([](int i) { return 32 + 2 * (i % 8); });
    // Chunk j's scales: byte 3 of lane L is the scale of (row L % 4, sub-block 2j + (L/4) % 2),
    // at byte 8 r + sb of the scale vector.
    static constexpr Bytes64 kPick[4] = {
        perm_bytes([](int i) { return 8 * ((i / 4) % 4) + 0 + (i / 16) % 2; }),
        perm_bytes([](int i) { return 8 * ((i / 4) % 4) + 2 + (i / 16) % 2; }),
        perm_bytes([](int i) { return 8 * ((i / 4) % 4) + 4 + (i / 16) % 2; }),
        perm_bytes([](int i) { return 8 * ((i / 4) % 4) + 6 + (i / 16) % 2; })};
    // Lanes 4r..4r+3 of the correction (row r's pairs) to lanes r, r + 4, r + 8, r + 12.
    const __m512i transpose =
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    const __m512i gather = kGather.load(), low_shift = kLowShift.load(),
                  high_shift = kHighShift.load();
    const __m512i pick[4] = {kPick[0].load(), kPick[1].load(), kPick[2].load(), kPick[3].load()};
    constexpr __mmask64 kTopBytes = 0x8888888888888888ull;
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const KInterleaved512::LanesAct*>(act);
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockIQ4_XS)) {
      prefetch_ahead(g, 4 * sizeof(BlockIQ4_XS));
      // The 32 scales ls - 32 as bytes, row r's at 8 r.
      const __m512i head =
          _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g)));
      const __m512i src = _mm512_permutexvar_epi8(gather, head);
      const __m512i lo = _mm512_and_si512(_mm512_multishift_epi64_epi8(low_shift, src), nibble);
      const __m512i hi =
          _mm512_and_si512(_mm512_slli_epi16(_mm512_multishift_epi64_epi8(high_shift, src), 4),
                           _mm512_set1_epi8(0x30));
      const __m512i scales = _mm512_sub_epi8(_mm512_or_si512(lo, hi), _mm512_set1_epi8(32));
      // 128 * sum over sub-blocks of scale * (activations' sum), per row, in lanes r + 4k.
      const __m512i corr = _mm512_madd_epi16(_mm512_cvtepi8_epi16(_mm512_castsi512_si256(scales)),
                                             _mm512_loadu_si512(y[i].sums));
      __m512i sum = _mm512_sub_epi32(
          _mm512_setzero_si512(), _mm512_slli_epi32(_mm512_permutexvar_epi32(transpose, corr), 7));
      const uint8_t* q = g + 32;
      for (int j = 0; j < 4; ++j, q += 128) {
        // A group is 544 bytes, so half the groups' 64-byte loads would straddle lines.
        const __m512i a = load_halves(q), b = load_halves(q + 64);
        __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), values(a),
                                          _mm512_loadu_si512(y[i].y[j][0]));
        dot = _mm512_dpbusd_epi32(dot, values(_mm512_srli_epi16(a, 4)),
                                  _mm512_loadu_si512(y[i].y[j][1]));
        dot = _mm512_dpbusd_epi32(dot, values(b), _mm512_loadu_si512(y[i].y[j][2]));
        dot = _mm512_dpbusd_epi32(dot, values(_mm512_srli_epi16(b, 4)),
                                  _mm512_loadu_si512(y[i].y[j][3]));
        const __m512i scale =
            _mm512_srai_epi32(_mm512_maskz_permutexvar_epi8(kTopBytes, pick[j], scales), 24);
        sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(dot, scale));
      }
      // d of rows 0-3 times the activations' d.
      const __m128 d =
          _mm_mul_ps(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g))),
                     _mm_set1_ps(y[i].d[0]));
      acc = _mm_fmadd_ps(_mm_cvtepi32_ps(row_ints(sum)), d, acc);
    }
    _mm_storeu_ps(out, acc);
  }
};
