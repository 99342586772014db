// Canonical decoders (kernels/gemm.hpp) of the most used types on 256-bit registers, for the
// GEMM panels; the others use the scalar ones in gemm.cpp. Each gives the scalar decoder's
// values exactly (ctest IsaVsReference.GemmPanelAgrees compares the panels with the scalar
// ones). Included inside an anonymous namespace by the x86 translation units.

struct GemmDecodeX86 {
  static __m256i nibbles_lo(__m256i v) { return _mm256_and_si256(v, _mm256_set1_epi8(0x0f)); }
  static __m256i nibbles_hi(__m256i v) {
    return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
  }
  static float h2f(uint16_t h) { return _cvtsh_ss(h); }

  static void q4_0(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
    const auto* b = static_cast<const BlockQ4_0*>(row);
    const __m128i mask = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
    for (int64_t i = 0; i < n / 32; ++i) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(v, mask), eight);
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), mask), eight);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * i), lo);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * i + 16), hi);
      scale[i] = h2f(b[i].d);
      min[i] = 0.0f;
    }
  }

  static void q8_0(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
    const auto* b = static_cast<const BlockQ8_0*>(row);
    for (int64_t i = 0; i < n / 32; ++i) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs)));
      scale[i] = h2f(b[i].d);
      min[i] = 0.0f;
    }
  }

  // Q4_K's 6-bit scale and min of sub-block j (of 8), as ggml's get_scale_min_k4.
  static void scale_min_k4(int j, const uint8_t* s, int& sc, int& m) {
    if (j < 4) {
      sc = s[j] & 63;
      m = s[j + 4] & 63;
    } else {
      sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
      m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
  }

  static void q4_K(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
    const auto* b = static_cast<const BlockQ4_K*>(row);
    for (int64_t i = 0; i < n / kQKK; ++i, q += kQKK, scale += 16, min += 16) {
      const float d = h2f(b[i].d), dmin = h2f(b[i].dmin);
      for (int j = 0; j < 8; ++j) {
        int sc, m;
        scale_min_k4(j, b[i].scales, sc, m);
        scale[2 * j] = scale[2 * j + 1] = d * static_cast<float>(sc);
        min[2 * j] = min[2 * j + 1] = dmin * static_cast<float>(m);
      }
      for (int j = 0; j < 4; ++j) {  // 64 values per 32 bytes: low nibbles, then high
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs + 32 * j));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * j), nibbles_lo(v));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * j + 32), nibbles_hi(v));
      }
    }
  }

  static void q6_K(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
    const auto* b = static_cast<const BlockQ6_K*>(row);
    const __m256i three = _mm256_set1_epi8(3), off = _mm256_set1_epi8(32);
    for (int64_t i = 0; i < n / kQKK; ++i, q += kQKK, scale += 16, min += 16) {
      const float d = h2f(b[i].d);
      for (int s = 0; s < 16; ++s) {
        scale[s] = d * static_cast<float>(b[i].scales[s]);
        min[s] = 0.0f;
      }
      for (int h = 0; h < 2; ++h) {  // 128 values from 64 bytes of ql and 32 of qh
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].ql + 64 * h));
        const __m256i l1 =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].ql + 64 * h + 32));
        const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qh + 32 * h));
        const auto high = [&](int shift) {  // bits shift, shift+1 of qh, to bits 4, 5
          const __m256i bits = _mm256_and_si256(_mm256_srli_epi16(hb, shift), three);
          return _mm256_slli_epi16(bits, 4);  // 2-bit values: no carry into the next byte
        };
        const __m256i v[4] = {
            _mm256_or_si256(nibbles_lo(l0), high(0)), _mm256_or_si256(nibbles_lo(l1), high(2)),
            _mm256_or_si256(nibbles_hi(l0), high(4)), _mm256_or_si256(nibbles_hi(l1), high(6))};
        for (int k = 0; k < 4; ++k) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 128 * h + 32 * k),
                              _mm256_sub_epi8(v[k], off));
        }
      }
    }
  }

  // The fast decoder of a type, or nullptr.
  static DecodeGroupsFn find(TensorType t) {
    switch (t) {
      case TensorType::Q4_0:
        return q4_0;
      case TensorType::Q8_0:
        return q8_0;
      case TensorType::Q4_K:
        return q4_K;
      case TensorType::Q6_K:
        return q6_K;
      default:
        return nullptr;
    }
  }
};
