// AVX-512 VBMI dots of the 4-bit 32-element block types (Q4_0, IQ4_NL, MXFP4) against Q8_0,
// four blocks per step, from whole-register loads and byte permutes (avx512_legacy.inl, the
// plain AVX-512 version, loads every block and scale separately):
//  - three 32-byte loads hold the four weight blocks, scales included (64-byte loads that
//    straddle cache lines halved the speed on matrices streamed from memory, measured on
//    Zen 5, though not on cache-resident ones); one vpermt2b gathers their 64 code bytes,
//    and vpermb looks the low nibbles up in the type's values (+128, the 16 entries four
//    times over, since vpermb reads six index bits), then the high nibbles after a 16-bit
//    shift;
//  - four loads hold the four activation blocks; two vpermt2b gather their elements 0-15 and
//    16-31, matching the low and high nibbles;
//  - so two chained vpdpbusd leave each block's sum in four lanes of its own, and the scale
//    vector is each block's d_w * d_y four times: no transpose, no per-block broadcast.
//    One vpermt2w pair gathers the f16 scales; MXFP4's E8M0 exponents go in by vscalefps.
// A row whose block count is not a multiple of four ends with the same step on masked loads
// (zero bytes give zero products and zero scales), so nothing past the row is read.
//
// Included by avx512vbmi_kquants.cpp (compiled with VBMI) only, after avx512_grid.inl (Bytes64,
// perm_bytes, values64).

inline __mmask64 prefix_mask(int64_t k) { return k <= 0 ? 0 : k >= 64 ? ~0ull : (1ull << k) - 1; }

struct Legacy512Vbmi {
  // Activation layout (Q8_0, 34 bytes a block): four blocks are 136 bytes, read as
  // L0 = +0, L1 = +64 (elements 0-15 and the scales) and M0 = +8, M1 = +72 (elements 16-31).
  static constexpr int kActBytes = sizeof(BlockQ8_0);
  static constexpr Bytes64 kActLow =
      perm_bytes([](int p) { return kActBytes * (p / 16) + 2 + p % 16; });
  static constexpr Bytes64 kActHigh =
      perm_bytes([](int p) { return kActBytes * (p / 16) + 18 + p % 16 - 8; });
  // Activation scales four times each, in words 0-15 of (L0, L1).
  static constexpr Bytes64 kActScales = perm_words([](int q) { return kActBytes * (q / 4) / 2; });

  // The type's scale vector: lane j holds block j/4's d_w * d_y.
  template <int kBlockBytes>
  struct F16Scales {  // an f16 d at the start of each block
    static constexpr Bytes64 kWeightScales =
        perm_words([](int q) { return kBlockBytes * (q / 4) / 2; });
    __m512i w_idx = kWeightScales.load(), y_idx = kActScales.load();
    __m512 weights(__m512i wa) const {
      return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(w_idx, wa)));
    }
    __m512 operator()(__m512 w, __m512i l0, __m512i l1) const {
      return _mm512_mul_ps(
          w, _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(l0, y_idx, l1))));
    }
  };
  struct E8M0Scales {  // MXFP4: an exponent byte at the start of each block, 2^(e - 128)
    static constexpr Bytes64 kExponents = perm_bytes(
        [](int p) { return p % 4 == 0 ? static_cast<int>(sizeof(BlockMXFP4)) * (p / 16) : 0; });
    __m512i e_idx = kExponents.load(), y_idx = kActScales.load();
    __m512 weights(__m512i wa) const {  // the exponent minus 128, as a float
      const __m512i e = _mm512_maskz_permutexvar_epi8(0x1111111111111111ull, e_idx, wa);
      return _mm512_cvtepi32_ps(_mm512_sub_epi32(e, _mm512_set1_epi32(128)));
    }
    __m512 operator()(__m512 w, __m512i l0, __m512i l1) const {
      // d_y * 2^(e - 128), rounded once as the scalar product is.
      return _mm512_scalef_ps(
          _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(l0, y_idx, l1))), w);
    }
  };

  // Weight layout: four blocks of kBytes, their codes at kCodesAt in each, read as 64 bytes
  // at +0 (two loads) and 32 at +kHiAt.
  template <int kBytes, int kCodesAt>
  struct WeightLayout {
    static constexpr int kHiAt = 4 * kBytes - 32;
    static_assert(kHiAt > 32 && kHiAt <= 64);
    static constexpr Bytes64 kCodes = perm_bytes([](int p) {
      const int o = kBytes * (p / 16) + kCodesAt + p % 16;
      return o < 64 ? o : 64 + o - kHiAt;
    });
  };

  template <typename WB, int kCodesAt, typename Scales>
  static void dot(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out,
                  const Bytes64& table) {
    constexpr int kBytes = sizeof(WB);
    using Layout = WeightLayout<kBytes, kCodesAt>;
    constexpr int kHiAt = Layout::kHiAt;
    const Scales scales;
    const __m512i codes_idx = Layout::kCodes.load();
    const __m512i values = table.load(), low_idx = kActLow.load(), high_idx = kActHigh.load();
    const __m512i zero = _mm512_setzero_si512(), off = _mm512_set1_epi8(static_cast<char>(0x80));
    const int64_t nb = n / 32;
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const uint8_t*>(w);
      __m512 acc[NC];
      for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
      // Blocks i..i+3; `left` is the row's bytes from block i on, for the masked last step.
      auto step = [&](int64_t i, bool masked, int64_t left) {
        const uint8_t* xi = x + i * kBytes;
        const __m512i wa =
            masked ? _mm512_maskz_loadu_epi8(prefix_mask(left), xi) : load_halves(xi);
        const __m512i wb = masked ? _mm512_maskz_loadu_epi8(prefix_mask(left - kHiAt), xi + kHiAt)
                                  : _mm512_castsi256_si512(_mm256_loadu_si256(
                                        reinterpret_cast<const __m256i*>(xi + kHiAt)));
        const __m512i q = _mm512_permutex2var_epi8(wa, codes_idx, wb);
        const __m512i u0 = _mm512_permutexvar_epi8(q, values),
                      u1 = _mm512_permutexvar_epi8(_mm512_srli_epi16(q, 4), values);
        const __m512 sw = scales.weights(wa);
        for (int c = 0; c < NC; ++c) {
          const uint8_t* y = static_cast<const uint8_t*>(act) + c * stride + i * kActBytes;
          const int64_t yleft = left / kBytes * kActBytes;
          auto load = [&](int at) {
            return masked ? _mm512_maskz_loadu_epi8(prefix_mask(yleft - at), y + at)
                          : _mm512_loadu_si512(y + at);
          };
          const __m512i l0 = load(0), l1 = load(64), m0 = load(8), m1 = load(72);
          const __m512i y0 = _mm512_permutex2var_epi8(l0, low_idx, l1),
                        y1 = _mm512_permutex2var_epi8(m0, high_idx, m1);
          const __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, u0, y0), u1, y1);
          const __m512i o = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, off, y0), off, y1);
          acc[c] = _mm512_fmadd_ps(scales(sw, l0, l1), _mm512_cvtepi32_ps(_mm512_sub_epi32(p, o)),
                                   acc[c]);
        }
      };
      int64_t i = 0;
      for (; i + 4 <= nb; i += 4) step(i, false, 0);
      if (i < nb) step(i, true, (nb - i) * kBytes);
      for (int c = 0; c < NC; ++c) out[c] = _mm512_reduce_add_ps(acc[c]);
    });
  }

  static void dot_q4_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    static constexpr int8_t kQ4[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
    static constexpr Bytes64 kValues = values64(kQ4);
    dot<BlockQ4_0, offsetof(BlockQ4_0, qs), F16Scales<sizeof(BlockQ4_0)>>(n, w, a, s, nc, out,
                                                                          kValues);
  }
  static void dot_iq4_nl(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot<BlockIQ4_NL, offsetof(BlockIQ4_NL, qs), F16Scales<sizeof(BlockIQ4_NL)>>(n, w, a, s, nc, out,
                                                                                iq4nl_values64());
  }
  static void dot_mxfp4(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    static constexpr Bytes64 kValues = values64(kKvaluesMxfp4);
    dot<BlockMXFP4, offsetof(BlockMXFP4, qs), E8M0Scales>(n, w, a, s, nc, out, kValues);
  }

  static void fill(KernelTable& t) {
    t.types[uint32_t(TensorType::Q4_0)].vec_dot = dot_q4_0;
    t.types[uint32_t(TensorType::Q4_0)].vec_dot_rows =
        nullptr;  // the plain one sums in another order
    set_dot<dot_iq4_nl>(t, TensorType::IQ4_NL);
    set_dot<dot_mxfp4>(t, TensorType::MXFP4);
  }
};
