// Interleaved Q2_K gemv on 512-bit registers (layout: kernels/repack.hpp). Included by
// avx512_kquants.cpp inside its anonymous namespace, after kdot256.inl, whose 256-bit kernel
// it replaces in the AVX-512 tables.
//
// A 64-byte load of a chunk's quant bytes holds two of the layout's 32-byte vectors m: dword
// lane L has 4 bytes of row L % 4, bytes 16h + 4m.. of the row's chunk (h = (L / 4) % 2). Each
// shift j of them (values 32 apart) meets the activations, permuted to the same lanes, in
// vpdpbusd; the lane's sum (one sub-block of 16, one scale) is multiplied by its scale in 32
// bits. The mins' products with the activations' sums per 16 come out once per super-block
// by vpmaddwd, in the same lanes (row L % 4). Not ggml's order (the fidelity rule allows it;
// the ISA tests hold it to the file layout's dot).
struct KInterleaved512 {
  // A 512-bit vector whose byte i is f(i).
  template <typename F>
  static __m512i bytes64(F f) {
    alignas(64) uint8_t b[64];
    for (int i = 0; i < 64; ++i) b[i] = static_cast<uint8_t>(f(i));
    return _mm512_load_si512(b);
  }

  // Activation dwords of lane L for the load of vectors (0, 1): 4h + m of the 32 values.
  static __m512i y_lanes() { return _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5); }

  static void rows_q2_k(int64_t n, const void* w, size_t, int, const void* act, float* out) {
    const __m512i ya = y_lanes(), yb = _mm512_add_epi32(ya, _mm512_set1_epi32(2));
    const __m512i three = _mm512_set1_epi8(3), nibble = _mm512_set1_epi8(0x0f);
    // Scale byte of (row r, sub-block s) at 16 + 8 (s / 2) + 2 r + s % 2 of the group; for
    // shift j of chunk c, lane L takes s = 8c + 2j + h: byte 8 (j % 2) + 2 r + h of the 16
    // at 16 + 32c + 16 (j / 2), into the low byte of the lane.
    static const __m512i pick[2] = {
        bytes64([](int i) { return i % 4 == 0 ? 2 * ((i / 4) % 4) + (i / 16) % 2 : 0x80; }),
        bytes64([](int i) { return i % 4 == 0 ? 8 + 2 * ((i / 4) % 4) + (i / 16) % 2 : 0x80; })};
    // Words 8p + 2r + e of the scale bytes (p = s / 2) meet the activations' sum of sub-block
    // 2p + e: dword p of the sums, in dwords 4p..4p+3.
    const __m512i sums_lo = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i sums_hi = _mm512_add_epi32(sums_lo, _mm512_set1_epi32(4));
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockQ2_K)) {
      prefetch_ahead(g, 4 * sizeof(BlockQ2_K));
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      __m512i isum = _mm512_setzero_si512();
      for (int c = 0; c < 2; ++c) {  // chunk c: values 128c .. 128c + 127
        __m512i a = _mm512_loadu_si512(g + 80 + 128 * c), b = _mm512_loadu_si512(g + 144 + 128 * c);
        for (int j = 0; j < 4; ++j) {  // bits 2j, 2j + 1: sub-blocks 8c + 2j + h
          const __m512i yv =
              _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(yq + 128 * c + 32 * j)));
          __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(a, three),
                                            _mm512_permutexvar_epi32(ya, yv));
          dot = _mm512_dpbusd_epi32(dot, _mm512_and_si512(b, three), _mm512_permutexvar_epi32(yb, yv));
          if (j < 3) {
            a = _mm512_srli_epi16(a, 2);
            b = _mm512_srli_epi16(b, 2);
          }
          const __m512i sc16 = _mm512_broadcast_i32x4(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16 + 32 * c + 16 * (j / 2))));
          const __m512i scale = _mm512_and_si512(_mm512_shuffle_epi8(sc16, pick[j % 2]), nibble);
          isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot, scale));
        }
      }
      // The mins: sum over sub-blocks of min(r, s) * (the activations' sum of s), per row.
      const __m512i bsums =
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums)));
      const __m512i mins = _mm512_and_si512(_mm512_srli_epi16(_mm512_loadu_si512(g + 16), 4), nibble);
      const __m512i msum = _mm512_add_epi32(
          _mm512_madd_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(mins)),
                            _mm512_permutexvar_epi32(sums_lo, bsums)),
          _mm512_madd_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(mins, 1)),
                            _mm512_permutexvar_epi32(sums_hi, bsums)));
      const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g));  // d, dmin
      const __m128 dy = _mm_set1_ps(y[i].d);
      const __m512 d = _mm512_broadcast_f32x4(_mm_mul_ps(_mm_cvtph_ps(halves), dy));
      const __m512 dmin =
          _mm512_broadcast_f32x4(_mm_mul_ps(_mm_cvtph_ps(_mm_srli_si128(halves, 8)), dy));
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), d, acc);
      acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), dmin, acc);
    }
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc);
    for (int r = 0; r < 4; ++r)
      out[r] = (lanes[r] + lanes[r + 4]) + (lanes[r + 8] + lanes[r + 12]);
  }

  static void fill(KernelTable& t) {
    t.types[static_cast<uint32_t>(TensorType::Q2_K)].vec_dot_interleaved = rows_q2_k;
  }
};
