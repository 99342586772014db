// Activation quantizers for x86 (Q8_0, Q8_1, Q8_K, F16 and BF16), byte-identical to the reference
// ones (which are ggml's): included inside an anonymous namespace by the ISA's translation unit.
// Both run on 256-bit registers, so the AVX-512 table keeps the AVX2 ones.

struct QuantizeActX86 {
  static __m256 abs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
  static float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  // round-half-even(v) of 32 floats as 32 int8 (the values fit), in element order.
  static __m256i round_pack(__m256 a, __m256 b, __m256 c, __m256 d) {
    const auto r = [](__m256 v) {
      return _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    };
    const __m256i ab = _mm256_packs_epi32(r(a), r(b)), cd = _mm256_packs_epi32(r(c), r(d));
    const __m256i q = _mm256_packs_epi16(ab, cd);
    // the packs interleave 128-bit lanes: put the 32-bit groups back in order
    return _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }

  // One block of 32: qs = round(x * 127 / amax), and d = amax / 127 (its float value).
  static __m256i q8_block(const float* x, float& d) {
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8), v2 = _mm256_loadu_ps(x + 16),
                 v3 = _mm256_loadu_ps(x + 24);
    const float amax =
        hmax(_mm256_max_ps(_mm256_max_ps(abs(v0), abs(v1)), _mm256_max_ps(abs(v2), abs(v3))));
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    d = amax / 127.f;
    const __m256 s = _mm256_set1_ps(id);
    return round_pack(_mm256_mul_ps(v0, s), _mm256_mul_ps(v1, s), _mm256_mul_ps(v2, s),
                      _mm256_mul_ps(v3, s));
  }
  static void q8_0(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<BlockQ8_0*>(vy);
    for (int64_t i = 0; i < n / 32; ++i, x += 32) {
      float d;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs), q8_block(x, d));
      y[i].d = fp32_to_fp16(d);
    }
  }
  // Q8_1 (Q4_1's and Q5_1's activations): Q8_0's block and s = d * sum(qs), as the reference.
  // It was the scalar reference before, 43% of a one-core Q4_1 gemv from L2.
  static void q8_1(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<BlockQ8_1*>(vy);
    for (int64_t i = 0; i < n / 32; ++i, x += 32) {
      float d;
      const __m256i q = q8_block(x, d);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs), q);
      const __m256i pairs =
          _mm256_madd_epi16(_mm256_add_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(q)),
                                             _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1))),
                            _mm256_set1_epi16(1));
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
      s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
      y[i].d = fp32_to_fp16(d);
      y[i].s = fp32_to_fp16(d * static_cast<float>(_mm_cvtsi128_si32(s4)));
    }
  }

  // F16 activations (the float GEMM rounds its inputs as the dot's type): F16C's conversion
  // rounds to nearest even and keeps NaN payloads as the reference does.
  static void f16(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<uint16_t*>(vy);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
  }

  // BF16 activations: round to nearest even on the bits, NaNs made quiet, as the reference.
  static void bf16(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<uint16_t*>(vy);
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      const __m256i u = _mm256_castps_si256(v);
      const __m256i rounded = _mm256_srli_epi32(
          _mm256_add_epi32(u,
                           _mm256_add_epi32(half, _mm256_and_si256(_mm256_srli_epi32(u, 16), one))),
          16);
      const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
      const __m256i r =
          _mm256_blendv_epi8(rounded, nan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
      const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xd8);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_castsi256_si128(packed));
    }
    for (; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
  }

  static void q8_K(const float* x, void* vy, int64_t n) {
    auto* y = static_cast<BlockQ8_K*>(vy);
    for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
      __m256 m = _mm256_setzero_ps();
      for (int j = 0; j < kQKK; j += 8) m = _mm256_max_ps(m, abs(_mm256_loadu_ps(x + j)));
      const float amax = hmax(m);
      if (!(amax > 0.0f)) {
        std::memset(&y[i], 0, sizeof(BlockQ8_K));
        continue;
      }
      // The signed value of largest magnitude, the first one on ties (as the reference).
      int first = 0;
      while (std::fabs(x[first]) != amax) ++first;
      const float iscale = -127.f / x[first];
      const __m256 s = _mm256_set1_ps(iscale);
      const __m256i top = _mm256_set1_epi8(127);
      for (int j = 0; j < kQKK; j += 32) {
        const __m256i q = round_pack(_mm256_mul_ps(_mm256_loadu_ps(x + j), s),
                                     _mm256_mul_ps(_mm256_loadu_ps(x + j + 8), s),
                                     _mm256_mul_ps(_mm256_loadu_ps(x + j + 16), s),
                                     _mm256_mul_ps(_mm256_loadu_ps(x + j + 24), s));
        // min(127, v): the only value past 127 is 128 (x = -max exactly), saturated by the
        // packs to 127 already; the min keeps the intent explicit.
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + j), _mm256_min_epi8(q, top));
      }
      for (int j = 0; j < 16; ++j) {
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[i].qs + 16 * j));
        const __m256i w = _mm256_cvtepi8_epi16(q);
        __m128i s16 = _mm_add_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
        s16 = _mm_add_epi16(s16, _mm_unpackhi_epi64(s16, s16));
        s16 = _mm_add_epi16(s16, _mm_shufflelo_epi16(s16, 0x4e));
        s16 = _mm_add_epi16(s16, _mm_shufflelo_epi16(s16, 0xb1));
        y[i].bsums[j] = static_cast<int16_t>(_mm_extract_epi16(s16, 0));
      }
      y[i].d = 1 / iscale;
    }
  }
};
