// Interleaved Q2_K, Q3_K, Q4_K, Q5_K and Q6_K gemvs on 512-bit registers (layouts:
// kernels/repack.hpp). Included by avx512_kquants.cpp inside its anonymous namespace, after
// kdot256.inl, whose 256-bit kernels it replaces in the AVX-512 tables. Q2_K, Q3_K and Q6_K
// have a 128-bit lane per row (below, "A 128-bit lane per row"); Q4_K and Q5_K the form that
// follows.
//
// A 64-byte load of a chunk's quant bytes holds two of the layout's 32-byte vectors m: dword
// lane L has 4 bytes of row L % 4, bytes 16h + 4m.. of the row's chunk (h = (L / 4) % 2). Each
// shift j of them (values 32 apart) meets the activations, permuted to the same lanes, in
// vpdpbusd; the lane's sum (one sub-block of 16, one scale) is multiplied by its scale in 32
// bits. The mins' products with the activations' sums per 32 come out once per super-block by
// vpmaddwd. A row's four lanes add up to
// its exact integer super-block sum (row_ints), and the float steps are those of the 256-bit
// kernels and of the GEMM, so a prompt gives the logits of token-by-token decoding (ctest
// Forward.SameLogits...). Not ggml's order (the fidelity rule allows it; the ISA tests hold
// it to the file layout's dot).
struct KInterleaved512 {
  // Activation dwords of lane L for the load of vectors (0, 1): 4h + m of the 32 values.
  static __m512i y_lanes() {
    return _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5);
  }

  // A vpermd index from dwords that hold row (L / 2) % 4 (vpmaddwd of byte 4r + k against
  // four sums) to lanes of row L % 4.
  static __m512i rows_from_pairs() {
    return _mm512_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
  }

  // isum + dot * scale per dword, for a dot within int16 (at most 8 products of a value below
  // 32 and an activation of at most 128 in magnitude) and a scale whose high word is zero: one
  // vpdpwssd (the high words' product is 0) instead of vpmulld and an add (vpmulld is two
  // uops with 10 cycles' latency on Intel's cores).
  static __m512i times_scale(__m512i isum, __m512i dot, __m512i scale) {
    return _mm512_dpwssd_epi32(isum, dot, scale);
  }

  // Q4_K and Q5_K: a chunk's low nibbles are sub-block 2j, its high nibbles 2j + 1, in both
  // halves of a load; Q5_K's fifth bits come from its qh, laid out as one chunk of quant
  // bytes (bit 2j or 2j + 1 of the same lane's byte, moved to bit 4 by 16-bit shifts). The
  // scales and mins unpack for the four rows together (16-byte registers, byte 4r + k for
  // sub-block k or 4 + k), as the 256-bit kernel does; the mins' products with the
  // activations' sums per 32 come out once per super-block by vpmaddwd.
  //
  // The activations come prepared once per matmul (LanesAct, below): in the loop they were
  // 20 permutes a super-block for the four rows, on the port the scales' shuffles also need.

  // Q8_K activations for the interleaved gemvs that read a chunk of 64 values as four
  // vectors of dwords permuted to their lanes (Q4_K, Q5_K; IQ4_XS): per super-block, chunk j's
  // four vectors in the order the kernel takes them, the activations' sums per 32 values as
  // the kernel's mins or scales take them, then d. Prepared once per matmul, in place from the
  // last super-block (1152 bytes each, the file's 292).
  struct LanesAct {
    int8_t y[4][4][64];  // chunk j, vector k: the chunk's dwords at idx[k]
    int16_t sums[32];    // sums32 (sub-blocks 0-7) spread as the kernel's lanes take them
    float d[16];         // d, then padding (a whole number of 64-byte lines)
  };
  static_assert(sizeof(LanesAct) == 1152);
  static size_t lanes_act_bytes(int64_t n) {
    return static_cast<size_t>(n / kQKK) * sizeof(LanesAct);
  }
  template <typename Spread>
  static void prepare_lanes_act(void* act, int64_t n, const __m512i (&idx)[4], Spread spread) {
    for (int64_t i = n / kQKK - 1; i >= 0; --i) {
      // The whole block into registers first: the prepared one is larger and may overwrite it.
      const BlockQ8_K* b = static_cast<const BlockQ8_K*>(act) + i;
      __m512i yv[4];
      for (int j = 0; j < 4; ++j) yv[j] = _mm512_loadu_si512(b->qs + 64 * j);
      const float d = b->d;
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->bsums));
      const __m128i sums32 = _mm256_cvtepi32_epi16(_mm256_madd_epi16(bsums, _mm256_set1_epi16(1)));
      LanesAct* out = static_cast<LanesAct*>(act) + i;
      for (int j = 0; j < 4; ++j) {
        for (int k = 0; k < 4; ++k)
          _mm512_storeu_si512(out->y[j][k], _mm512_permutexvar_epi32(idx[k], yv[j]));
      }
      _mm512_storeu_si512(out->sums, spread(sums32));
      std::fill(std::begin(out->d), std::end(out->d), 0.0f);
      out->d[0] = d;
    }
  }
  // Q4_K and Q5_K: vectors (lo_a, lo_b, hi_a, hi_b); sub-blocks 0-3's sums four times, then
  // 4-7's (the mins' lanes).
  static void prepare_q45_act(void* act, int64_t n) {
    const __m512i ya = y_lanes(), two = _mm512_set1_epi32(2), eight = _mm512_set1_epi32(8);
    const __m512i yb = _mm512_add_epi32(ya, two);
    const __m512i idx[4] = {ya, yb, _mm512_add_epi32(ya, eight), _mm512_add_epi32(yb, eight)};
    prepare_lanes_act(act, n, idx, [](__m128i sums32) {
      return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 0, 0, 0, 1, 1, 1, 1),
                                      _mm512_castsi128_si512(sums32));
    });
  }

  template <bool kQ5>
  static void rows_q45_k(int64_t n, const void* w, size_t, int, const void* act, float* out) {
    constexpr size_t kGroupBytes = 4 * (kQ5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
    constexpr int kQs = kQ5 ? 192 : 64;
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    // Bit `bit` of each byte of h at bit 4, the others 0.
    auto fifth_bit = [](__m512i h, int bit) {
#if defined(__GFNI__)
      return _mm512_gf2p8affine_epi64_epi8(h, _mm512_set1_epi64(int64_t{1} << bit << 24), 0);
#else  // 16-bit shifts: bit 4 of each byte stays clean
      const __m512i at4 = bit <= 4 ? _mm512_slli_epi16(h, 4 - bit) : _mm512_srli_epi16(h, bit - 4);
      return _mm512_and_si512(at4, _mm512_set1_epi8(0x10));
#endif
    };
    // Bits 0-3 of l, bit 4 of f (whose other bits are 0).
    auto merge = [&](__m512i l, __m512i f) {
      return _mm512_ternarylogic_epi32(l, f, nibble, 0xe4);
    };
    // Sub-block k (mod 4) of row L % 4 into the low byte of lane L.
    static constexpr Bytes64 kPick[4] = {
        perm_bytes([](int i) { return i % 4 == 0 ? 4 * ((i / 4) % 4) + 0 : 0x80; }),
        perm_bytes([](int i) { return i % 4 == 0 ? 4 * ((i / 4) % 4) + 1 : 0x80; }),
        perm_bytes([](int i) { return i % 4 == 0 ? 4 * ((i / 4) % 4) + 2 : 0x80; }),
        perm_bytes([](int i) { return i % 4 == 0 ? 4 * ((i / 4) % 4) + 3 : 0x80; })};
    const __m512i pick[4] = {kPick[0].load(), kPick[1].load(), kPick[2].load(), kPick[3].load()};
    const __m512i to_rows = rows_from_pairs();
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const LanesAct*>(act);
    __m128 acc = _mm_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i, g += kGroupBytes) {
      prefetch_ahead(g, kGroupBytes);
      auto load16 = [&](int at) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + at));
      };
      __m128i sc4[2], mn4[2];
      KDot256::q45_k_scales(g, sc4, mn4);
      const __m128i mn_lo = mn4[0], mn_hi = mn4[1];
      const __m512i sc[2] = {_mm512_broadcast_i32x4(sc4[0]), _mm512_broadcast_i32x4(sc4[1])};
      __m512i qh_a = _mm512_setzero_si512(), qh_b = _mm512_setzero_si512();
      if constexpr (kQ5) {
        qh_a = _mm512_loadu_si512(g + 64);
        qh_b = _mm512_loadu_si512(g + 128);
      }
      __m512i isum = _mm512_setzero_si512();
      for (int j = 0; j < 4; ++j) {  // chunk j: sub-blocks 2j (low nibbles), 2j + 1 (high)
        const __m512i va = _mm512_loadu_si512(g + kQs + 128 * j),
                      vb = _mm512_loadu_si512(g + kQs + 128 * j + 64);
        __m512i lo_a, lo_b, hi_a, hi_b;
        if constexpr (kQ5) {  // one ternlog merges each nibble with its fifth bit
          lo_a = merge(va, fifth_bit(qh_a, 2 * j));
          lo_b = merge(vb, fifth_bit(qh_b, 2 * j));
          hi_a = merge(_mm512_srli_epi16(va, 4), fifth_bit(qh_a, 2 * j + 1));
          hi_b = merge(_mm512_srli_epi16(vb, 4), fifth_bit(qh_b, 2 * j + 1));
        } else {
          lo_a = _mm512_and_si512(va, nibble), lo_b = _mm512_and_si512(vb, nibble);
          hi_a = high_nibbles(va), hi_b = high_nibbles(vb);
        }
        auto yk = [&](int k) { return _mm512_loadu_si512(y[i].y[j][k]); };
        __m512i lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo_a, yk(0));
        lo = _mm512_dpbusd_epi32(lo, lo_b, yk(1));
        __m512i hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi_a, yk(2));
        hi = _mm512_dpbusd_epi32(hi, hi_b, yk(3));
        const int s0 = 2 * j, s1 = 2 * j + 1;  // sub-block s: byte 4r + s % 4 of sc[s / 4]
        isum = times_scale(isum, lo, _mm512_shuffle_epi8(sc[s0 / 4], pick[s0 % 4]));
        isum = times_scale(isum, hi, _mm512_shuffle_epi8(sc[s1 / 4], pick[s1 % 4]));
      }
      // The mins: min(r, s) times the activations' sum of sub-block s (32 values), per row.
      const __m512i mins = _mm512_madd_epi16(_mm512_cvtepu8_epi16(_mm256_set_m128i(mn_hi, mn_lo)),
                                             _mm512_loadu_si512(y[i].sums));
      const __m512i msum = _mm512_permutexvar_epi32(to_rows, mins);
      const __m128i halves = load16(0);  // d, dmin of rows 0-3
      const __m128 dy = _mm_set1_ps(y[i].d[0]);
      const __m128 d = _mm_mul_ps(_mm_cvtph_ps(halves), dy);
      const __m128 dmin = _mm_mul_ps(_mm_cvtph_ps(_mm_srli_si128(halves, 8)), dy);
      acc = _mm_fmadd_ps(_mm_cvtepi32_ps(row_ints(isum)), d, acc);
      acc = _mm_fnmadd_ps(_mm_cvtepi32_ps(row_ints(msum)), dmin, acc);
    }
    _mm_storeu_ps(out, acc);
  }

  // ---- A 128-bit lane per row (Q2_K, Q3_K and Q6_K; layouts: repack.hpp). Dword d = 2n + b of row
  // r's lane sums 16 values of sub-block 8n + 2k + b in chain k: four vpdpbusd over steps t,
  // against activations laid out once per matmul (prepare_row_lanes) so that one 16-byte
  // broadcast serves the four rows, with no permutes. A chain is an exact integer; each
  // super-block ends with one conversion and one FMA by the rows' d broadcast per lane, and a
  // row's four float lanes are summed at the end of the row (not ggml's order: the fidelity
  // rule allows it; a row's bits depend on neither the thread count nor the batch).

  // lane_layout.hpp's prepare_row_lanes, by permutes: new dword 16t + j (j = 4k + d) is
  // dword 32n + 8k + 4b + t of the plain block.
  static void prepare_row_lanes512(void* act, int64_t n) {
    static constexpr struct Idx {
      alignas(64) uint32_t dw[4][16] = {};
      alignas(32) uint16_t sums[16] = {};
      constexpr Idx() {
        for (int t = 0; t < 4; ++t) {
          for (int j = 0; j < 16; ++j)
            dw[t][j] = static_cast<uint32_t>(8 * (j / 4) + 4 * (j % 2) + t);
        }
        for (int j = 0; j < 16; ++j)
          sums[j] = static_cast<uint16_t>(8 * ((j % 4) / 2) + 2 * (j / 4) + j % 2);
      }
    } kIdx;
    auto* y = static_cast<BlockQ8_K*>(act);
    for (int64_t i = 0; i < n / kQKK; ++i) {
      auto* qs = reinterpret_cast<uint8_t*>(y[i].qs);
      __m512i src[4];
      for (int c = 0; c < 4; ++c) src[c] = _mm512_loadu_si512(qs + 64 * c);
      for (int t = 0; t < 4; ++t) {  // lanes d = 2, 3 (n = 1) come from the second half
        const __m512i idx = _mm512_load_si512(kIdx.dw[t]);
        _mm512_storeu_si512(qs + 64 * t, _mm512_mask_blend_epi32(
                                             0xcccc, _mm512_permutex2var_epi32(src[0], idx, src[1]),
                                             _mm512_permutex2var_epi32(src[2], idx, src[3])));
      }
      auto* sums = reinterpret_cast<__m256i*>(y[i].bsums);
      _mm256_storeu_si256(sums, _mm256_permutexvar_epi16(
                                    _mm256_load_si256(reinterpret_cast<const __m256i*>(kIdx.sums)),
                                    _mm256_loadu_si256(sums)));
    }
  }
  // The 16 bytes of prepared activations chain k reads at step t, in every row's lane.
  static __m512i row_lanes_act(const uint8_t* yq, int t, int k) {
    return _mm512_broadcast_i32x4(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(yq + 64 * t + 16 * k)));
  }
  // The prepared sums of sub-blocks as dwords (128-bit lane k: chain k's), and chain k's in
  // every row's lane.
  static __m512i row_lanes_sums(const BlockQ8_K& y) {
    return _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)));
  }
  static __m512i chain_sums(__m512i sums, int k) {
    switch (k) {
      case 0:
        return _mm512_shuffle_i32x4(sums, sums, 0x00);
      case 1:
        return _mm512_shuffle_i32x4(sums, sums, 0x55);
      case 2:
        return _mm512_shuffle_i32x4(sums, sums, 0xaa);
      default:
        return _mm512_shuffle_i32x4(sums, sums, 0xff);
    }
  }
  // Four floats, one per row, each in its row's lane.
  static __m512 per_row(__m128 v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                 _mm512_castps128_ps512(v));
  }
  // Row r's result: the sum of lane r.
  static void store_rows(__m512 acc, float* out) {
    const __m512 pairs = _mm512_add_ps(acc, _mm512_permute_ps(acc, 0xb1));
    const __m512 quads = _mm512_add_ps(pairs, _mm512_permute_ps(pairs, 0x4e));
    _mm_storeu_ps(out,
                  _mm512_castps512_ps128(_mm512_permutexvar_ps(
                      _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), quads)));
  }

  // Q2_K: chain k takes bits 2k, 2k + 1 of the step's qs vector (a qs byte holds four values
  // 32 apart). A chain's dot fits in 16 bits (16 products of at most 3 and 128), so vpdpwssd
  // multiplies it by the lanes' scales (low nibbles of bytes the layout puts in lane order),
  // and the activations' sub-block sums by the mins (high nibbles).
  static void rows_q2_k(int64_t n, const void* w, size_t, int, const void* act, float* out) {
    const __m512i three = _mm512_set1_epi8(3), twelve = _mm512_set1_epi8(12),
                  low = _mm512_set1_epi32(0x0f);
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockQ2_K)) {
      prefetch_ahead(g, 4 * sizeof(BlockQ2_K));
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      const __m512i sums = row_lanes_sums(y[i]);
      // Chain by chain, each scaled as it ends. Chains 1 and 3 take their bits unshifted
      // (4 times the value, so 4 times the dot, still within 16 bits), and their scaled sums
      // are divided by 4 at the end, exactly.
      __m512i isum[2] = {}, msum = _mm512_setzero_si512(), qs[2][4];
      for (int t = 0; t < 4; ++t) {
        qs[0][t] = _mm512_loadu_si512(g + 80 + 64 * t);
        qs[1][t] = _mm512_srli_epi16(qs[0][t], 4);
      }
      for (int k = 0; k < 4; ++k) {
        __m512i chain = _mm512_setzero_si512();
        for (int t = 0; t < 4; ++t) {
          const __m512i v = _mm512_and_si512(qs[k / 2][t], k % 2 == 0 ? three : twelve);
          chain = _mm512_dpbusd_epi32(chain, v, row_lanes_act(yq, t, k));
        }
        const __m512i bytes = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16 + 16 * k)));
        isum[k % 2] = _mm512_dpwssd_epi32(isum[k % 2], chain, _mm512_and_si512(bytes, low));
        msum = _mm512_dpwssd_epi32(msum, chain_sums(sums, k), _mm512_srli_epi32(bytes, 4));
      }
      const __m256 dd = _mm256_mul_ps(
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g))),  // d, dmin
          _mm256_set1_ps(y[i].d));
      acc = _mm512_fmadd_ps(
          _mm512_cvtepi32_ps(_mm512_add_epi32(isum[0], _mm512_srai_epi32(isum[1], 2))),
          per_row(_mm256_castps256_ps128(dd)), acc);
      acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), per_row(_mm256_extractf128_ps(dd, 1)), acc);
    }
    store_rows(acc, out);
  }

  // Q3_K: a value is (2 bits | hmask bit << 2) - 4. Chain k takes bits 2k, 2k + 1 of the
  // step's qs vector, as Q2_K, and bit 4n + k of its lane's hmask bytes (lane d = 2n + b):
  // a vpermq gives each row's two hmask dwords of the step to both halves, a shift by dword
  // moves half 1's bits down by 4, a shift and an AND put chain k's at bit 2, and a
  // vpternlogd merges it with the 2 bits. The chain starts at -4 times its sub-block's
  // activation sum, so it ends at the exact dot of the signed values, within 16 bits (at most
  // 4 * 128 * 16): vpdpwssd multiplies it by the lanes' scales (sign-extended, high word
  // cleared). With VBMI and GFNI, avx512vbmi_q3k.inl's kernel replaces this one.
  // Q3_K's hmask at step t of a group's super-block at g: each row's two dwords (b = 0, 1) in
  // both halves of its lane (repack.hpp stores them once), as lane d = 2n + b reads them.
  static __m512i q3_k_hmask(const uint8_t* g, int t) {
    return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 0, 1, 1, 2, 2, 3, 3),
                                    _mm512_castsi256_si512(_mm256_loadu_si256(
                                        reinterpret_cast<const __m256i*>(g + 56 + 32 * t))));
  }
  static void rows_q3_k(int64_t n, const void* w, size_t, int, const void* act, float* out) {
    const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4),
                  low_word = _mm512_set1_epi32(0xffff);
    const __m512i half1_down = _mm512_broadcast_i32x4(_mm_setr_epi32(0, 0, 4, 4));
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockQ3_K)) {
      prefetch_ahead(g, 4 * sizeof(BlockQ3_K));
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      const __m512i start =
          _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(row_lanes_sums(y[i]), 2));
      __m128i sc[4];
      KDot256::q3_k_chain_scales(g, sc);
      __m512i chain[4], scale[4];
      for (int k = 0; k < 4; ++k) {
        chain[k] = chain_sums(start, k);
        scale[k] = _mm512_and_si512(_mm512_cvtepi8_epi32(sc[k]), low_word);
      }
      for (int t = 0; t < 4; ++t) {
        const __m512i q = _mm512_loadu_si512(g + 184 + 64 * t);
        const __m512i hm = _mm512_srlv_epi32(q3_k_hmask(g, t), half1_down);
        for (int k = 0; k < 4; ++k) {
          const __m512i bits = k == 0 ? q : _mm512_srli_epi16(q, 2 * k);
          const __m512i high = _mm512_and_si512(k < 2    ? _mm512_slli_epi16(hm, 2 - k)
                                                : k == 2 ? hm
                                                         : _mm512_srli_epi16(hm, 1),
                                                four);
          const __m512i v = _mm512_ternarylogic_epi32(bits, high, three, 0xe4);  // 3 ? bits : high
          chain[k] = _mm512_dpbusd_epi32(chain[k], v, row_lanes_act(yq, t, k));
        }
      }
      __m512i isum[2] = {};
      for (int k = 0; k < 4; ++k)
        isum[k % 2] = _mm512_dpwssd_epi32(isum[k % 2], chain[k], scale[k]);
      const __m128 d = _mm_mul_ps(
          _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g))), _mm_set1_ps(y[i].d));
      acc =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(isum[0], isum[1])), per_row(d), acc);
    }
    store_rows(acc, out);
  }

  // Q6_K: a value is its ql nibble with qh's 2 bits of field k moved to bits 4-5 (a qh byte
  // serves chains 0-3 of a lane and step, a ql vector chains k and k + 2; one vpternlogd merges
  // them). The chain starts at -32 times its sub-block's activation sum, so it ends at the
  // exact dot of the signed values (up to 129024 in magnitude: vpmulld by the scales).
  // The unsigned values (0..63) of chains 0-3 at step t of a group's super-block at g: ql's
  // nibble with qh's field k moved to bits 4-5, merged by vpternlogd ("c ? a : b").
  QINFER_INLINE static void q6_k_values(const uint8_t* g, int t, __m512i v[4]) {
    const __m512i low = _mm512_set1_epi8(0x0f);
    const __m512i qh = _mm512_loadu_si512(g + 72 + 64 * t);
    const __m512i l0 = _mm512_loadu_si512(g + 328 + 128 * t),
                  l1 = _mm512_loadu_si512(g + 392 + 128 * t);
    // Bits 0-3 of l, and h45 (bits 4-5, the rest 0).
    auto merge = [&](__m512i l, __m512i h45) {
      return _mm512_ternarylogic_epi32(l, h45, low, 0xe4);
    };
    v[0] = merge(l0, qh_bits_to_45<0>(qh));
    v[1] = merge(l1, qh_bits_to_45<2>(qh));
    v[2] = merge(_mm512_srli_epi16(l0, 4), qh_bits_to_45<4>(qh));
    v[3] = merge(_mm512_srli_epi16(l1, 4), qh_bits_to_45<6>(qh));
  }
  // Bits kBit and kBit + 1 of each byte moved to bits 4 and 5, the others 0: one
  // vgf2p8affineqb with GFNI (row 7 - i of its matrix picks output bit i), else a shift and a
  // mask.
  template <int kBit>
  QINFER_INLINE static __m512i qh_bits_to_45(__m512i h) {
#if defined(__GFNI__)
    constexpr uint64_t kMatrix = uint64_t{1u << kBit} << 24 | uint64_t{1u << (kBit + 1)} << 16;
    return _mm512_gf2p8affine_epi64_epi8(h, _mm512_set1_epi64(static_cast<int64_t>(kMatrix)), 0);
#else
    const __m512i shifted = kBit < 4 ? _mm512_slli_epi16(h, 4 - kBit)
                            : kBit > 4 ? _mm512_srli_epi16(h, kBit - 4)
                                       : h;
    return _mm512_and_si512(shifted, _mm512_set1_epi8(0x30));
#endif
  }
  static void rows_q6_k(int64_t n, const void* w, size_t, int, const void* act, float* out) {
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockQ6_K)) {
      prefetch_ahead(g, 4 * sizeof(BlockQ6_K));
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      const __m512i start =
          _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(row_lanes_sums(y[i]), 5));
      __m512i chain[4];
      for (int k = 0; k < 4; ++k) chain[k] = chain_sums(start, k);
      for (int t = 0; t < 4; ++t) {
        __m512i v[4];
        q6_k_values(g, t, v);
        for (int k = 0; k < 4; ++k)
          chain[k] = _mm512_dpbusd_epi32(chain[k], v[k], row_lanes_act(yq, t, k));
      }
      __m512i isum = _mm512_setzero_si512();
      for (int k = 0; k < 4; ++k) {
        const __m512i scale =
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 8 + 16 * k)));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(chain[k], scale));
      }
      const __m128 d = _mm_mul_ps(
          _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g))), _mm_set1_ps(y[i].d));
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), per_row(d), acc);
    }
    store_rows(acc, out);
  }

  // The GEMM's in-place decoder of an interleaved Q6_K group (kernels/gemm.hpp): the values of
  // chain k at steps t = 0..3 formed as rows_q6_k forms them, less 32, then a 4 x 4 transpose
  // of dwords in each 128-bit lane (a row) puts each sub-block's 16 values together.
  static void decode_q6_k(const uint8_t* group, int64_t n, int8_t* q, float* scale, float* min) {
    const __m512i off = _mm512_set1_epi8(32);
    // Rows 0, 1 (then 2, 3) of two vectors of lanes, each row's two lanes side by side.
    const __m512i pair_rows[2] = {_mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11),
                                  _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15)};
    // sub-block s = 8n + 2k + b from 4k + lane (lane 2n + b)
    const __m512i to_blocks =
        _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    const int64_t n_groups = n / 16;
    for (int64_t u = 0; u < n / kQKK; ++u, group += kInterleaveRows * sizeof(BlockQ6_K)) {
      const __m512 d =
          per_row(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(group))));
      __m512 sc[4];  // per k: d times the scales, 128-bit lane r for row r (lanes 2n + b)
      for (int k = 0; k < 4; ++k) {
        sc[k] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                                     reinterpret_cast<const __m128i*>(group + 8 + 16 * k)))));
      }
      // Row r's 16 scales: 4k + lane after a 4 x 4 transpose of 128-bit lanes, then sub-block
      // order (s = 8n + 2k + b).
      const __m512 t0 = _mm512_shuffle_f32x4(sc[0], sc[1], 0x44),
                   t1 = _mm512_shuffle_f32x4(sc[0], sc[1], 0xee),
                   t2 = _mm512_shuffle_f32x4(sc[2], sc[3], 0x44),
                   t3 = _mm512_shuffle_f32x4(sc[2], sc[3], 0xee);
      const __m512 rows_sc[4] = {
          _mm512_shuffle_f32x4(t0, t2, 0x88), _mm512_shuffle_f32x4(t0, t2, 0xdd),
          _mm512_shuffle_f32x4(t1, t3, 0x88), _mm512_shuffle_f32x4(t1, t3, 0xdd)};
      for (int r = 0; r < kInterleaveRows; ++r) {
        _mm512_storeu_ps(scale + r * n_groups + u * 16,
                         _mm512_permutexvar_ps(to_blocks, rows_sc[r]));
        _mm512_storeu_ps(min + r * n_groups + u * 16, _mm512_setzero_ps());
      }
      __m512i v[4][4];  // [k][t], less 32
      for (int t = 0; t < 4; ++t) {
        __m512i step[4];
        q6_k_values(group, t, step);
        for (int k = 0; k < 4; ++k) v[k][t] = _mm512_sub_epi8(step[k], off);
      }
      for (int k = 0; k < 4; ++k) {
        const __m512i a = _mm512_unpacklo_epi32(v[k][0], v[k][1]),
                      b = _mm512_unpackhi_epi32(v[k][0], v[k][1]),
                      c = _mm512_unpacklo_epi32(v[k][2], v[k][3]),
                      e = _mm512_unpackhi_epi32(v[k][2], v[k][3]);
        // lanes 2n + b: the 16 values at 128n + 32k + 16b of each row; b = 0, 1 side by side
        const __m512i lanes[4] = {_mm512_unpacklo_epi64(a, c), _mm512_unpackhi_epi64(a, c),
                                  _mm512_unpacklo_epi64(b, e), _mm512_unpackhi_epi64(b, e)};
        for (int h = 0; h < 2; ++h) {  // rows 0, 1 then 2, 3 of lanes (2h, 2h + 1) -> 32 bytes
          const __m512i rows[2] = {
              _mm512_permutex2var_epi64(lanes[2 * h], pair_rows[0], lanes[2 * h + 1]),
              _mm512_permutex2var_epi64(lanes[2 * h], pair_rows[1], lanes[2 * h + 1])};
          for (int r = 0; r < kInterleaveRows; ++r) {
            const __m512i x = rows[r / 2];
            const __m256i half =
                r % 2 == 0 ? _mm512_castsi512_si256(x) : _mm512_extracti64x4_epi64(x, 1);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + r * n + u * kQKK + 128 * h + 32 * k),
                                half);
          }
        }
      }
    }
  }

  // The gemvs that take the unit's high_nibbles and qh_bits_to_45: the VBMI unit installs its
  // own build of them too (avx512vbmi_kquants.cpp, with GFNI).
  static void fill_nibble_rows(KernelTable& t) {
    t.types[static_cast<uint32_t>(TensorType::Q4_K)].vec_dot_interleaved =
        rows_in_groups<rows_q45_k<false>>;
    t.types[static_cast<uint32_t>(TensorType::Q5_K)].vec_dot_interleaved =
        rows_in_groups<rows_q45_k<true>>;
    t.types[static_cast<uint32_t>(TensorType::Q6_K)].vec_dot_interleaved =
        rows_in_groups<rows_q6_k>;
  }
  static void fill(KernelTable& t) {
    fill_nibble_rows(t);
    t.types[static_cast<uint32_t>(TensorType::Q2_K)].vec_dot_interleaved =
        rows_in_groups<rows_q2_k>;
    t.types[static_cast<uint32_t>(TensorType::Q3_K)].vec_dot_interleaved =
        rows_in_groups<rows_q3_k>;
    for (TensorType type : {TensorType::Q4_K, TensorType::Q5_K}) {
      t.types[static_cast<uint32_t>(type)].prepare_act_interleaved = prepare_q45_act;
      t.types[static_cast<uint32_t>(type)].act_interleaved_bytes = lanes_act_bytes;
    }
    t.types[static_cast<uint32_t>(TensorType::Q6_K)].prepare_act_interleaved = prepare_row_lanes512;
    t.types[static_cast<uint32_t>(TensorType::Q2_K)].prepare_act_interleaved = prepare_row_lanes512;
    t.types[static_cast<uint32_t>(TensorType::Q3_K)].prepare_act_interleaved = prepare_row_lanes512;
    t.gemm_decode_interleaved[static_cast<uint32_t>(TensorType::Q6_K)] = decode_q6_k;
  }
};
