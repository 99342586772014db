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

  // Against Q8_0. Decode2(x0, x1) gives the unsigned values of two blocks.
  template <typename WB, int Offset, typename Decode2>
  static void dot_q8_0(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out, Decode2 decode2) {
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const WB*>(w);
      const int64_t nb = n / 32;
      const __m512i zero = _mm512_setzero_si512(), off = _mm512_set1_epi8(static_cast<char>(Offset));
      auto yblock = [&](int c, int64_t i) {
        return reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(act) + c * stride) + i;
      };
      auto products = [&](__m512i u, __m512i yv) {
        __m512i p = _mm512_dpbusd_epi32(zero, u, yv);
        if constexpr (Offset != 0) p = _mm512_sub_epi32(p, _mm512_dpbusd_epi32(zero, off, yv));
        return _mm512_cvtepi32_ps(p);
      };
      __m512 acc[NC];
      for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
      int64_t i = 0;
      for (; i + 2 <= nb; i += 2) {
        const __m512i u = decode2(x[i], x[i + 1]);
        for (int c = 0; c < NC; ++c) {
          const BlockQ8_0* y = yblock(c, i);
          const __m512i yv = _mm512_inserti64x4(_mm512_castsi256_si512(load256(y[0].qs)), load256(y[1].qs), 1);
          acc[c] = _mm512_fmadd_ps(scales(x[i], x[i + 1], y[0].d, y[1].d), products(u, yv), acc[c]);
        }
      }
      for (int c = 0; c < NC; ++c) {
        out[c] = _mm512_reduce_add_ps(acc[c]);
        if (i < nb) {  // one block left
          const BlockQ8_0* y = yblock(c, i);
          const __m512i yv = _mm512_castsi256_si512(load256(y->qs));
          out[c] += hsum8(_mm512_mul_ps(scales(x[i], x[i], y->d, y->d), products(decode2(x[i], x[i]), yv)));
        }
      }
    });
  }

  // Types with a minimum against Q8_1: d_x*d_y*sum(q*y) + m_x*s_y per block.
  template <typename WB, typename Decode2>
  static void dot_q8_1(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out, Decode2 decode2) {
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const WB*>(w);
      const int64_t nb = n / 32;
      auto yblock = [&](int c, int64_t i) {
        return reinterpret_cast<const BlockQ8_1*>(static_cast<const uint8_t*>(act) + c * stride) + i;
      };
      __m512 acc[NC];
      __m128 mins[NC];
      for (int c = 0; c < NC; ++c) {
        acc[c] = _mm512_setzero_ps();
        mins[c] = _mm_setzero_ps();
      }
      int64_t i = 0;
      for (; i + 2 <= nb; i += 2) {
        const __m512i u = decode2(x[i], x[i + 1]);
        for (int c = 0; c < NC; ++c) {
          const BlockQ8_1* y = yblock(c, i);
          const __m512i yv = _mm512_inserti64x4(_mm512_castsi256_si512(load256(y[0].qs)), load256(y[1].qs), 1);
          const __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, yv));
          acc[c] = _mm512_fmadd_ps(scales(x[i], x[i + 1], y[0].d, y[1].d), p, acc[c]);
          mins[c] = _mm_add_ps(mins[c], pair_products(f16x4(x[i].m, x[i + 1].m, y[0].s, y[1].s)));
        }
      }
      for (int c = 0; c < NC; ++c) {
        out[c] = _mm512_reduce_add_ps(acc[c]) + (_mm_cvtss_f32(mins[c]) + _mm_cvtss_f32(_mm_movehdup_ps(mins[c])));
        if (i < nb) {
          const BlockQ8_1* y = yblock(c, i);
          const __m512i yv = _mm512_castsi256_si512(load256(y->qs));
          const __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), decode2(x[i], x[i]), yv));
          out[c] += hsum8(_mm512_mul_ps(scales(x[i], x[i], y->d, y->d), p)) + _cvtsh_ss(x[i].m) * _cvtsh_ss(y->s);
        }
      }
    });
  }

  static void dot_q4_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_0<BlockQ4_0, 8>(n, w, a, s, nc, out, [](const BlockQ4_0& x0, const BlockQ4_0& x1) { return nibbles2(x0.qs, x1.qs); });
  }
  static void dot_q5_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_0<BlockQ5_0, 16>(n, w, a, s, nc, out, [](const BlockQ5_0& x0, const BlockQ5_0& x1) {
      return _mm512_or_si512(nibbles2(x0.qs, x1.qs), fifth2(x0.qh, x1.qh));
    });
  }
  static void dot_q8_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_0<BlockQ8_0, 128>(n, w, a, s, nc, out, [](const BlockQ8_0& x0, const BlockQ8_0& x1) {
      const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(load256(x0.qs)), load256(x1.qs), 1);
      return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));  // + 128
    });
  }
  static void dot_iq4_nl(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    static const ShiftedTable table(kKvaluesIq4nl);
    dot_q8_0<BlockIQ4_NL, 128>(n, w, a, s, nc, out, [](const BlockIQ4_NL& x0, const BlockIQ4_NL& x1) {
      return table.lookup(nibbles2(x0.qs, x1.qs));
    });
  }
  static void dot_mxfp4(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    static const ShiftedTable table(kKvaluesMxfp4);
    dot_q8_0<BlockMXFP4, 128>(n, w, a, s, nc, out, [](const BlockMXFP4& x0, const BlockMXFP4& x1) {
      return table.lookup(nibbles2(x0.qs, x1.qs));
    });
  }
  static void dot_q4_1(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_1<BlockQ4_1>(n, w, a, s, nc, out, [](const BlockQ4_1& x0, const BlockQ4_1& x1) { return nibbles2(x0.qs, x1.qs); });
  }
  static void dot_q5_1(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_1<BlockQ5_1>(n, w, a, s, nc, out, [](const BlockQ5_1& x0, const BlockQ5_1& x1) {
      return _mm512_or_si512(nibbles2(x0.qs, x1.qs), fifth2(x0.qh, x1.qh));
    });
  }

  static void fill(KernelTable& t) {
    using T = TensorType;
    t.types[uint32_t(T::Q4_0)].vec_dot = dot_q4_0;
    t.types[uint32_t(T::Q4_1)].vec_dot = dot_q4_1;
    t.types[uint32_t(T::Q5_0)].vec_dot = dot_q5_0;
    t.types[uint32_t(T::Q5_1)].vec_dot = dot_q5_1;
    t.types[uint32_t(T::Q8_0)].vec_dot = dot_q8_0;
    t.types[uint32_t(T::IQ4_NL)].vec_dot = dot_iq4_nl;
    t.types[uint32_t(T::MXFP4)].vec_dot = dot_mxfp4;
  }
};
