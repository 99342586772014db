// AVX-512 dots for the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4):
// two blocks per 512-bit register. The weights are made unsigned (value + Offset) so one
// vpdpbusd multiplies them with the signed activations — AVX-512 has no byte sign trick —
// and Offset times the activation's block sum (one more vpdpbusd) is taken off. The four f16
// scales of a block pair are widened by one vcvtph2ps. A block-count tail of one block runs
// the same code on the block paired with itself, keeping its half.
//
// Included after x86_kernels.inl by avx512_kernels.cpp only (needs AVX-512 F/BW/VNNI).

struct Legacy512 {
  static __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

  // 0x10 in every byte whose fifth bit is set (bit j of qh -> element j).
  static __m512i fifth2(const uint8_t* h0, const uint8_t* h1) {
    uint32_t a, b;
    std::memcpy(&a, h0, 4);
    std::memcpy(&b, h1, 4);
    return _mm512_maskz_mov_epi8(_cvtu64_mask64(a | static_cast<uint64_t>(b) << 32), _mm512_set1_epi8(0x10));
  }
  // Four f16 -> [a*c in lanes 0-7, b*d in lanes 8-15].
  static __m512 halves(__m128 p) {
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(p));
  }
  static __m128 f16x4(uint16_t a, uint16_t b, uint16_t c, uint16_t d) {
    const uint64_t v = a | static_cast<uint64_t>(b) << 16 | static_cast<uint64_t>(c) << 32 | static_cast<uint64_t>(d) << 48;
    return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(v)));
  }
  static __m128 pair_products(__m128 v) { return _mm_mul_ps(v, _mm_movehl_ps(v, v)); }

  template <typename WB> static __m512 scales(const WB& x0, const WB& x1, uint16_t y0, uint16_t y1) {
    return halves(pair_products(f16x4(x0.d, x1.d, y0, y1)));
  }
  static __m512 scales(const BlockMXFP4& x0, const BlockMXFP4& x1, uint16_t y0, uint16_t y1) {
    const __m128 dy = f16x4(y0, y1, 0, 0);
    return halves(_mm_mul_ps(_mm_setr_ps(e8m0_to_fp32_half(x0.e), e8m0_to_fp32_half(x1.e), 0.0f, 0.0f), dy));
  }

  static float hsum8(__m512 v) {  // lanes 0-7
    const __m256 h = _mm512_castps512_ps256(v);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // Products of unsigned weights (value + Offset) and signed activations, as floats: lane j
  // of each 256-bit half sums elements 4j..4j+3 of its block.
  template <int Offset>
  static __m512 products(__m512i u, __m512i yv) {
    const __m512i zero = _mm512_setzero_si512();
    __m512i p = _mm512_dpbusd_epi32(zero, u, yv);
    if constexpr (Offset != 0) {
      p = _mm512_sub_epi32(p, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(static_cast<char>(Offset)), yv));
    }
    return _mm512_cvtepi32_ps(p);
  }
  static float upper_hsum8(__m512 v) { return hsum8(_mm512_castps256_ps512(_mm512_extractf32x8_ps(v, 1))); }

  // ggml's order, which llama.cpp's results depend on: one 8-lane accumulator per dot, and
  // block by block one FMA of d_w * d_y with the block's eight lane sums; then hsum8. The
  // Q8_1 types add m_w * s_y per block to a float (fused, as GCC compiles ggml's loop) and
  // that float to the sum at the end. The FMA chain is the speed limit of one dot, so gemv
  // runs dot2: two weight rows, one per 256-bit half, sharing each activation block.
  template <typename T>
  static void dot(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out) {
    using WB = typename T::W;
    using YB = typename T::Y;
    constexpr int Offset = T::kOffset;
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const WB*>(w);
      const int64_t nb = n / 32;
      __m256 acc[NC];
      float mins[NC];
      for (int c = 0; c < NC; ++c) {
        acc[c] = _mm256_setzero_ps();
        mins[c] = 0.0f;
      }
      auto add = [&](int c, const WB& xb, const YB& y, __m256 p) {
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(block_scale(xb, y)), p, acc[c]);
        if constexpr (kHasMin<YB>) mins[c] = std::fma(_cvtsh_ss(xb.m), _cvtsh_ss(y.s), mins[c]);
      };
      auto yblock = [&](int c, int64_t i) {
        return reinterpret_cast<const YB*>(static_cast<const uint8_t*>(act) + c * stride) + i;
      };
      int64_t i = 0;
      for (; i + 2 <= nb; i += 2) {
        const __m512i u = T::decode2(x[i], x[i + 1]);
        for (int c = 0; c < NC; ++c) {
          const YB* y = yblock(c, i);
          const __m512 p = products<Offset>(u, _mm512_inserti64x4(_mm512_castsi256_si512(load256(y[0].qs)), load256(y[1].qs), 1));
          add(c, x[i], y[0], _mm512_castps512_ps256(p));
          add(c, x[i + 1], y[1], _mm512_extractf32x8_ps(p, 1));
        }
      }
      for (int c = 0; c < NC; ++c) {
        if (i < nb) {  // one block left
          const YB* y = yblock(c, i);
          const __m512 p = products<Offset>(T::decode2(x[i], x[i]), _mm512_castsi256_si512(load256(y->qs)));
          add(c, x[i], *y, _mm512_castps512_ps256(p));
        }
        out[c] = hsum8(_mm512_castps256_ps512(acc[c])) + mins[c];
      }
    });
  }

  template <typename T>
  static void dot2(int64_t n, const void* w0, const void* w1, const void* act, float* out) {
    using WB = typename T::W;
    using YB = typename T::Y;
    constexpr int Offset = T::kOffset;
    const auto* a = static_cast<const WB*>(w0);
    const auto* b = static_cast<const WB*>(w1);
    const auto* y = static_cast<const YB*>(act);
    __m512 acc = _mm512_setzero_ps();
    __m128 mins = _mm_setzero_ps();  // lanes 0 and 1
    for (int64_t i = 0; i < n / 32; ++i) {
      const __m512i yv = _mm512_broadcast_i64x4(load256(y[i].qs));
      acc = _mm512_fmadd_ps(scales(a[i], b[i], y[i].d, y[i].d), products<Offset>(T::decode2(a[i], b[i]), yv), acc);
      if constexpr (kHasMin<YB>) {
        mins = _mm_fmadd_ps(f16x4(a[i].m, b[i].m, 0, 0), _mm_set1_ps(_cvtsh_ss(y[i].s)), mins);
      }
    }
    out[0] = hsum8(acc) + _mm_cvtss_f32(mins);
    out[1] = upper_hsum8(acc) + _mm_cvtss_f32(_mm_movehdup_ps(mins));
  }

  template <typename YB>
  static constexpr bool kHasMin = std::is_same_v<YB, BlockQ8_1>;
  template <typename WB, typename YB>
  static float block_scale(const WB& x, const YB& y) {
    if constexpr (std::is_same_v<WB, BlockMXFP4>) {
      return e8m0_to_fp32_half(x.e) * _cvtsh_ss(y.d);
    } else {
      return _cvtsh_ss(x.d) * _cvtsh_ss(y.d);
    }
  }

  // Each type: its block, activation block, offset and the decoding of two blocks.
  struct Q4_0 {
    using W = BlockQ4_0;
    using Y = BlockQ8_0;
    static constexpr int kOffset = 8;
    static __m512i decode2(const W& a, const W& b) { return nibbles2(a.qs, b.qs); }
  };
  struct Q5_0 {
    using W = BlockQ5_0;
    using Y = BlockQ8_0;
    static constexpr int kOffset = 16;
    static __m512i decode2(const W& a, const W& b) { return _mm512_or_si512(nibbles2(a.qs, b.qs), fifth2(a.qh, b.qh)); }
  };
  struct Q8_0 {
    using W = BlockQ8_0;
    using Y = BlockQ8_0;
    static constexpr int kOffset = 128;
    static __m512i decode2(const W& a, const W& b) {
      const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(load256(a.qs)), load256(b.qs), 1);
      return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));  // + 128
    }
  };
  template <typename Block, const int8_t* kValues>
  struct Table4 {  // IQ4_NL, MXFP4: 4-bit codes into a 16-entry table
    using W = Block;
    using Y = BlockQ8_0;
    static constexpr int kOffset = 128;
    static __m512i decode2(const W& a, const W& b) {
      return ShiftedTable(kValues).lookup(nibbles2(a.qs, b.qs));  // loop-invariant, hoisted
    }
  };
  struct Q4_1 {
    using W = BlockQ4_1;
    using Y = BlockQ8_1;
    static constexpr int kOffset = 0;
    static __m512i decode2(const W& a, const W& b) { return nibbles2(a.qs, b.qs); }
  };
  struct Q5_1 {
    using W = BlockQ5_1;
    using Y = BlockQ8_1;
    static constexpr int kOffset = 0;
    static __m512i decode2(const W& a, const W& b) { return _mm512_or_si512(nibbles2(a.qs, b.qs), fifth2(a.qh, b.qh)); }
  };

  template <typename T>
  static void set(KernelTable& t, TensorType type) {
    t.types[static_cast<uint32_t>(type)].vec_dot = dot<T>;
    t.types[static_cast<uint32_t>(type)].vec_dot_rows2 = dot2<T>;
  }

  static void fill(KernelTable& t) {
    using T = TensorType;
    set<Q4_0>(t, T::Q4_0);
    set<Q4_1>(t, T::Q4_1);
    set<Q5_0>(t, T::Q5_0);
    set<Q5_1>(t, T::Q5_1);
    set<Q8_0>(t, T::Q8_0);
    set<Table4<BlockIQ4_NL, kKvaluesIq4nl>>(t, T::IQ4_NL);
    set<Table4<BlockMXFP4, kKvaluesMxfp4>>(t, T::MXFP4);
  }
};
