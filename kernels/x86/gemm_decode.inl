// Canonical decoders (kernels/gemm.hpp) on 256-bit registers, for the GEMM panels, of the
// 32-element types and of the K types, TQ2_0 and IQ4_XS (the latter through the dots'
// unpacked form); the grid IQ types and TQ1_0 use the scalar ones in gemm.cpp. Each gives
// the scalar decoder's values exactly (ctest IsaVsReference.GemmPanelAgrees compares the panels
// with the scalar ones). Included inside an anonymous namespace by the x86 translation units.

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

  // 0x10 in byte j where bit j of h is set.
  static __m256i fifth_bits(uint32_t h) {
    const __m256i spread =
        _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(h)),
                            _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2,
                                             2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit),
                            _mm256_set1_epi8(0x10));
  }
  // Elements 0..31 of a 32-element block from its 16 nibble bytes: low nibbles, then high.
  static __m256i nibbles32(const uint8_t* qs) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
  }

  static void q4_1(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
    const auto* b = static_cast<const BlockQ4_1*>(row);
    for (int64_t i = 0; i < n / 32; ++i) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i), nibbles32(b[i].qs));
      scale[i] = h2f(b[i].d);
      min[i] = -h2f(b[i].m);  // x = d q + m
    }
  }

  template <typename Block>  // Q5_0 (offset 16), Q5_1 (a min)
  static void q5(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
    const auto* b = static_cast<const Block*>(row);
    constexpr bool kMin = std::is_same_v<Block, BlockQ5_1>;
    for (int64_t i = 0; i < n / 32; ++i) {
      uint32_t qh;
      std::memcpy(&qh, b[i].qh, 4);
      __m256i v = _mm256_or_si256(nibbles32(b[i].qs), fifth_bits(qh));
      if constexpr (!kMin) v = _mm256_sub_epi8(v, _mm256_set1_epi8(16));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i), v);
      scale[i] = h2f(b[i].d);
      if constexpr (kMin) {
        min[i] = -h2f(b[i].m);
      } else {
        min[i] = 0.0f;
      }
    }
  }

  // An interleaved group read in place, one unit (a pair of blocks or a super-block) at a
  // time in memory order: its four rows' blocks gathered back into the file's layout on the
  // stack (L1), then decoded as the file's rows are. (Copying a whole panel's rows back,
  // `deinterleave`, cost 17-18% of a pp64 profile; decoding one row at a time in place read
  // each unit four times, a miss-bound walk.) `group` is at a column where the layout's
  // units start (the GEMM's chunks are multiples of kPairUnitColumns).
  template <TensorType T, DecodeGroupsFn kDecode>
  static void group_in_place(const uint8_t* group, int64_t n, int8_t* q, float* scale, float* min) {
    constexpr int64_t kUnit = repack_layout::kPairType<T> ? 64 : kQKK;  // elements
    constexpr size_t kBytes = repack_layout::kUnitBlocks<T> * repack_layout::kBlockBytes<T>;
    const int64_t per_unit = kUnit / gemm_type_info(T).group, n_groups = n / kUnit * per_unit;
    alignas(64) uint8_t blocks[kInterleaveRows * kBytes];
    for (int64_t u = 0; u < n / kUnit; ++u) {
      repack_layout::gather_group<T>(group, u, n / kUnit, blocks);
      for (int i = 0; i < kInterleaveRows; ++i) {
        const int64_t at = i * n_groups + u * per_unit;
        kDecode(blocks + i * kBytes, kUnit, q + i * n + u * kUnit, scale + at, min + at);
      }
    }
  }

  // IQ4_NL and MXFP4: each nibble's value from the type's table, the block's scale (f16, or
  // E8M0 as e8m0_to_fp32_half).
  template <typename Block>
  static void table_type(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
    constexpr bool kMx = std::is_same_v<Block, BlockMXFP4>;
    const auto* b = static_cast<const Block*>(row);
    const __m256i table = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMx ? kKvaluesMxfp4 : kKvaluesIq4nl)));
    for (int64_t i = 0; i < n / 32; ++i) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i),
                          _mm256_shuffle_epi8(table, nibbles32(b[i].qs)));
      if constexpr (kMx) {
        scale[i] = e8m0_to_fp32_half(b[i].e);
      } else {
        scale[i] = h2f(b[i].d);
      }
      min[i] = 0.0f;
    }
  }

  // ---- Super-blocks through the dots' unpacked form (x86_kquants.inl): 8 x 32 values plus an
  // offset, and the integer scales and mins per 16 as bytes.
  using K = X86K<IsaTraits>;

  // d times 16 signed bytes, as floats (d * float(byte): the reference's product).
  static void times16(__m128i bytes, float d, float* out) {
    const __m256 dv = _mm256_set1_ps(d);
    _mm256_storeu_ps(out, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes))));
    _mm256_storeu_ps(
        out + 8,
        _mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8)))));
  }

  template <typename Block>  // Q2_K, Q3_K, Q5_K, TQ2_0
  static void kquant(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
    const auto* b = static_cast<const Block*>(row);
    for (int64_t i = 0; i < n / kQKK; ++i, q += kQKK, scale += 16, min += 16) {
      typename K::Unpacked u;
      K::unpack(b[i], u);
      const __m256i offset = _mm256_set1_epi8(static_cast<char>(u.offset));
      for (int g = 0; g < 8; ++g) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * g),
                            _mm256_sub_epi8(u.q[g], offset));
      }
      __m128i sc, mn;
      K::scale_bytes(b[i], sc, mn);
      times16(sc, u.d, scale);
      times16(mn, u.dmin, min);
    }
  }

  static void iq4_xs(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
    const auto* b = static_cast<const BlockIQ4_XS*>(row);
    for (int64_t i = 0; i < n / kQKK; ++i, q += kQKK, scale += 16, min += 16) {
      for (int g = 0; g < 8; ++g) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * g),
                            K::iq4_values(b[i].qs + 16 * g));
      }
      times16(K::iq4_xs_scale_bytes(b[i]), h2f(b[i].d), scale);
      std::fill(min, min + 16, 0.0f);
    }
  }

  static void fill(KernelTable& t) {
    using T = TensorType;
    auto set = [&](T type, DecodeGroupsFn f) { t.gemm_decode[static_cast<uint32_t>(type)] = f; };
    set(T::Q4_0, q4_0);
    set(T::Q4_1, q4_1);
    set(T::Q5_0, q5<BlockQ5_0>);
    set(T::Q5_1, q5<BlockQ5_1>);
    set(T::Q8_0, q8_0);
    set(T::IQ4_NL, table_type<BlockIQ4_NL>);
    set(T::MXFP4, table_type<BlockMXFP4>);
    set(T::Q2_K, kquant<BlockQ2_K>);
    set(T::Q3_K, kquant<BlockQ3_K>);
    set(T::Q4_K, q4_K);
    set(T::Q5_K, kquant<BlockQ5_K>);
    set(T::Q6_K, q6_K);
    set(T::TQ2_0, kquant<BlockTQ2_0>);
    set(T::IQ4_XS, iq4_xs);
    auto set_interleaved = [&](T type, DecodeInterleavedFn f) {
      t.gemm_decode_interleaved[static_cast<uint32_t>(type)] = f;
    };
    set_interleaved(T::Q4_0, group_in_place<T::Q4_0, q4_0>);
    set_interleaved(T::Q4_1, group_in_place<T::Q4_1, q4_1>);
    set_interleaved(T::Q5_0, group_in_place<T::Q5_0, q5<BlockQ5_0>>);
    set_interleaved(T::Q5_1, group_in_place<T::Q5_1, q5<BlockQ5_1>>);
    set_interleaved(T::IQ4_NL, group_in_place<T::IQ4_NL, table_type<BlockIQ4_NL>>);
    set_interleaved(T::MXFP4, group_in_place<T::MXFP4, table_type<BlockMXFP4>>);
    set_interleaved(T::Q8_0, group_in_place<T::Q8_0, q8_0>);
    set_interleaved(T::Q2_K, group_in_place<T::Q2_K, kquant<BlockQ2_K>>);
    set_interleaved(T::Q3_K, group_in_place<T::Q3_K, kquant<BlockQ3_K>>);
    set_interleaved(T::Q4_K, group_in_place<T::Q4_K, q4_K>);
    set_interleaved(T::Q5_K, group_in_place<T::Q5_K, kquant<BlockQ5_K>>);
    set_interleaved(T::IQ4_XS, group_in_place<T::IQ4_XS, iq4_xs>);
  }
};
