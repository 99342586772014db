// AVX-512 dots for the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4).
// The weights are made unsigned (value + Offset) so one vpdpbusd multiplies them with the
// signed activations — AVX-512 has no byte sign trick — and Offset times the activation's
// block sum (one more vpdpbusd) is taken off.
//
// The float sums follow ggml's AVX2 kernels (docs/kernels.md, "Summation order"), on which
// llama.cpp's logits depend:
// - IQ4_NL (and MXFP4, built alike) take two blocks per 512-bit register, one accumulator
//   per 256-bit half, as ggml's IQ4_NL kernel keeps two for even and odd blocks.
// - Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 have one 8-lane FMA chain per dot. The integer part
//   still takes two blocks per register; each half then joins the chain. For gemv (one
//   token), `rows` runs up to four weight rows at once, a row per 256-bit half, so that
//   two chains are in flight and each activation block is loaded once.
//
// Included after x86_kernels.inl by avx512_kernels.cpp (needs AVX-512 F/BW/VNNI), and by
// avx512vbmi_kquants.cpp for its interleaved pair kernels with GFNI.

struct Legacy512 {
  static __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
  }

  // 0x10 in every byte whose fifth bit is set (bit j of qh -> element j).
  static __m512i fifth2(const uint8_t* h0, const uint8_t* h1) {
    uint32_t a, b;
    std::memcpy(&a, h0, 4);
    std::memcpy(&b, h1, 4);
    return _mm512_maskz_mov_epi8(_cvtu64_mask64(a | static_cast<uint64_t>(b) << 32),
                                 _mm512_set1_epi8(0x10));
  }
  // Lane kFirst of p in lanes 0-7, lane kFirst + 1 in lanes 8-15.
  template <int kFirst = 0>
  static __m512 halves(__m128 p) {
    const __m512i idx = _mm512_set_epi32(kFirst + 1, kFirst + 1, kFirst + 1, kFirst + 1, kFirst + 1,
                                         kFirst + 1, kFirst + 1, kFirst + 1, kFirst, kFirst, kFirst,
                                         kFirst, kFirst, kFirst, kFirst, kFirst);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(p));
  }
  static __m128 f16x4(uint16_t a, uint16_t b, uint16_t c, uint16_t d) {
    const uint64_t v = a | static_cast<uint64_t>(b) << 16 | static_cast<uint64_t>(c) << 32 |
                       static_cast<uint64_t>(d) << 48;
    return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(v)));
  }
  static __m128 pair_products(__m128 v) { return _mm_mul_ps(v, _mm_movehl_ps(v, v)); }

  template <typename WB>
  static __m512 scales(const WB& x0, const WB& x1, uint16_t y0, uint16_t y1) {
    return halves(pair_products(f16x4(x0.d, x1.d, y0, y1)));
  }
  static __m512 scales(const BlockMXFP4& x0, const BlockMXFP4& x1, uint16_t y0, uint16_t y1) {
    const __m128 dy = f16x4(y0, y1, 0, 0);
    return halves(
        _mm_mul_ps(_mm_setr_ps(e8m0_to_fp32_half(x0.e), e8m0_to_fp32_half(x1.e), 0.0f, 0.0f), dy));
  }

  static float hsum8(__m512 v) {  // lanes 0-7
    const __m256 h = _mm512_castps512_ps256(v);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // Products of unsigned weights (value + Offset) and signed activations, as floats; lane j
  // of each 256-bit half sums elements 4j..4j+3 of its block. yoff: Offset times the
  // activation sums, from offset_sums.
  static __m512 products(__m512i u, __m512i yv, __m512i yoff) {
    return _mm512_cvtepi32_ps(
        _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, yv), yoff));
  }
  template <int Offset>
  static __m512i offset_sums(__m512i yv) {
    if constexpr (Offset == 0) return _mm512_setzero_si512();
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(Offset)),
                               yv);
  }
  static __m512i two_blocks(const void* a, const void* b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load256(a)), load256(b), 1);
  }

  // IQ4_NL, MXFP4 against Q8_0. Decode2(x0, x1) gives the unsigned values of two blocks.
  template <typename WB, int Offset, typename Decode2>
  static void dot_pairs(int64_t n, const void* w, const void* act, size_t stride, int nc,
                        float* out, Decode2 decode2) {
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const WB*>(w);
      const int64_t nb = n / 32;
      auto yblock = [&](int c, int64_t i) {
        return reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(act) + c * stride) +
               i;
      };
      __m512 acc[NC];
      for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
      int64_t i = 0;
      for (; i + 2 <= nb; i += 2) {
        const __m512i u = decode2(x[i], x[i + 1]);
        for (int c = 0; c < NC; ++c) {
          const BlockQ8_0* y = yblock(c, i);
          const __m512i yv = two_blocks(y[0].qs, y[1].qs);
          acc[c] = _mm512_fmadd_ps(scales(x[i], x[i + 1], y[0].d, y[1].d),
                                   products(u, yv, offset_sums<Offset>(yv)), acc[c]);
        }
      }
      for (int c = 0; c < NC; ++c) {
        out[c] = _mm512_reduce_add_ps(acc[c]);
        if (i < nb) {  // one block left
          const BlockQ8_0* y = yblock(c, i);
          const __m512i yv = _mm512_castsi256_si512(load256(y->qs));
          out[c] +=
              hsum8(_mm512_mul_ps(scales(x[i], x[i], y->d, y->d),
                                  products(decode2(x[i], x[i]), yv, offset_sums<Offset>(yv))));
        }
      }
    });
  }

  // The chain types: each names its weight and activation blocks, its Offset and how two
  // blocks (of one row, or of two rows) are decoded into one register.
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
    static __m512i decode2(const W& a, const W& b) {
      return _mm512_or_si512(nibbles2(a.qs, b.qs), fifth2(a.qh, b.qh));
    }
  };
  struct Q8_0 {
    using W = BlockQ8_0;
    using Y = BlockQ8_0;
    static constexpr int kOffset = 128;
    static __m512i decode2(const W& a, const W& b) {
      return _mm512_xor_si512(two_blocks(a.qs, b.qs),
                              _mm512_set1_epi8(static_cast<char>(0x80)));  // + 128
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
    static __m512i decode2(const W& a, const W& b) {
      return _mm512_or_si512(nibbles2(a.qs, b.qs), fifth2(a.qh, b.qh));
    }
  };
  // Q4_1 and Q5_1 add m_w * s_y per block to one float, fused as GCC compiles ggml's loop.
  template <typename YB>
  static constexpr bool kHasMin = std::is_same_v<YB, BlockQ8_1>;

  // One row against 1..4 activation rows, in ggml's order: per column one 8-lane
  // accumulator; block by block acc = fma(d_w * d_y, the block's lane sums, acc); hsum8.
  template <typename T>
  static void dot_chain(int64_t n, const void* w, const void* act, size_t stride, int nc,
                        float* out) {
    using WB = typename T::W;
    using YB = typename T::Y;
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
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(xb.d) * _cvtsh_ss(y.d)), p, acc[c]);
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
          const __m512i yv = two_blocks(y[0].qs, y[1].qs);
          const __m512 p = products(u, yv, offset_sums<T::kOffset>(yv));
          add(c, x[i], y[0], _mm512_castps512_ps256(p));
          add(c, x[i + 1], y[1], _mm512_extractf32x8_ps(p, 1));
        }
      }
      for (int c = 0; c < NC; ++c) {
        if (i < nb) {  // one block left
          const YB* y = yblock(c, i);
          const __m512i yv = _mm512_castsi256_si512(load256(y->qs));
          add(c, x[i], *y,
              _mm512_castps512_ps256(
                  products(T::decode2(x[i], x[i]), yv, offset_sums<T::kOffset>(yv))));
        }
        out[c] = hsum8(_mm512_castps256_ps512(acc[c])) + mins[c];
      }
    });
  }

  // Up to four rows (row_bytes apart) against one activation row, with dot_chain's bits:
  // rows 0 and 1 share a register (a row per 256-bit half), as do rows 2 and 3, so two FMA
  // chains run side by side. Missing rows repeat the last one and are not written.
  static_assert(kMaxDotRows == 4, "rows_chain runs two registers of two rows");
  template <typename T>
  static void rows_chain(int64_t n, const void* w, size_t row_bytes, int n_rows, const void* act,
                         float* out) {
    using WB = typename T::W;
    using YB = typename T::Y;
    const WB* x[kMaxDotRows];
    for (int r = 0; r < kMaxDotRows; ++r) {
      x[r] = reinterpret_cast<const WB*>(static_cast<const uint8_t*>(w) +
                                         std::min(r, n_rows - 1) * row_bytes);
    }
    const auto* y = static_cast<const YB*>(act);
    __m512 acc01 = _mm512_setzero_ps(), acc23 = _mm512_setzero_ps();
    __m128 mins = _mm_setzero_ps();
    // Four rows are four short streams, on which the hardware prefetcher trains too late
    // (gemv from memory ran at 40% of the single-stream speed). So each step fetches the
    // bytes of four rows further on, which follow in a matmul, at the pace it reads its own
    // (group_ahead).
    const char* next = group_ahead(w, kMaxDotRows * row_bytes);
    constexpr size_t kStep = kMaxDotRows * sizeof(WB);
    for (int64_t i = 0; i < n / 32; ++i) {
      for (size_t b = 0; b < kStep; b += 64)
        __builtin_prefetch(next + i * kStep + b, 0, IsaTraits::kPrefetchLocality);
      const __m512i yv = _mm512_broadcast_i64x4(load256(y[i].qs));
      const __m512i yoff = offset_sums<T::kOffset>(yv);
      const __m128 d = _mm_mul_ps(f16x4(x[0][i].d, x[1][i].d, x[2][i].d, x[3][i].d),
                                  _mm_set1_ps(_cvtsh_ss(y[i].d)));
      acc01 =
          _mm512_fmadd_ps(halves<0>(d), products(T::decode2(x[0][i], x[1][i]), yv, yoff), acc01);
      acc23 =
          _mm512_fmadd_ps(halves<2>(d), products(T::decode2(x[2][i], x[3][i]), yv, yoff), acc23);
      if constexpr (kHasMin<YB>) {
        mins = _mm_fmadd_ps(f16x4(x[0][i].m, x[1][i].m, x[2][i].m, x[3][i].m),
                            _mm_set1_ps(_cvtsh_ss(y[i].s)), mins);
      }
    }
    float m[kMaxDotRows];
    _mm_storeu_ps(m, mins);
    const float sums[kMaxDotRows] = {hsum8(acc01), upper_hsum8(acc01), hsum8(acc23),
                                     upper_hsum8(acc23)};
    for (int r = 0; r < n_rows; ++r) out[r] = sums[r] + m[r];
  }
  static float upper_hsum8(__m512 v) {
    return hsum8(_mm512_castps256_ps512(_mm512_extractf32x8_ps(v, 1)));
  }

  static void dot_iq4_nl(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    static const ShiftedTable table(kKvaluesIq4nl);
    dot_pairs<BlockIQ4_NL, 128>(n, w, a, s, nc, out,
                                [](const BlockIQ4_NL& x0, const BlockIQ4_NL& x1) {
                                  return table.lookup(nibbles2(x0.qs, x1.qs));
                                });
  }
  static void dot_mxfp4(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    static const ShiftedTable table(kKvaluesMxfp4);
    dot_pairs<BlockMXFP4, 128>(n, w, a, s, nc, out, [](const BlockMXFP4& x0, const BlockMXFP4& x1) {
      return table.lookup(nibbles2(x0.qs, x1.qs));
    });
  }

  template <typename T>
  static void set_chain(KernelTable& t, TensorType type) {
    t.types[static_cast<uint32_t>(type)].vec_dot = dot_chain<T>;
    t.types[static_cast<uint32_t>(type)].vec_dot_rows = rows_in_groups<rows_chain<T>>;
  }

  // The interleaved Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL gemv (layout: kernels/repack.hpp) on
  // 512-bit registers: per block pair, rows 0-1 in one register and rows 2-3 in another (a
  // row's 32 quant bytes per 256-bit half), the nibbles unsigned against the signed
  // activations by vpdpbusd, so no 16-bit step. Lane 4q + i of a row's half sums 8 products of
  // block b (q = 0) or b + 1 (q = 1); the lanes are scaled by their (row, block) scale times
  // the activation's and summed at the end. Q4_0 and Q5_0 take their offset (8, 16) times
  // sum(y) out per lane; Q5_0's fifth bits are a byte mask as the layout stores them; Q4_1
  // adds its mins times the Q8_1 activations' d * sum(y); Q5_1 takes Q5_0's fifth bits and
  // Q4_1's mins; IQ4_NL looks its values up plus 128 (unsigned) and takes 128 times sum(y)
  // out.
  //
  // The activations come prepared once per matmul (prepare_pair_act), not once per group of
  // four rows. That work was a third of the kernel's instructions
  // (gemv_l2_interleaved/q4_0/avx512/1: 51 GB/s with it in the loop). Per block pair: values
  // 0..15 of blocks b, b + 1, then values 16..31 (32 + 32 bytes); d of block b (4 float
  // lanes), then of b + 1; then Q4_1 (kMin, Q8_1 activations) adds s in the same form, and
  // Q4_0 and Q5_0 the offset's part of each lane, -8 x the sum of the 4 + 4 values the lane
  // takes (int32; Q5_0 doubles it): three fewer vector ops a step for the four rows.
  static constexpr size_t kPairActBytes = 128;
  static size_t pair_act_bytes(int64_t n) { return static_cast<size_t>(n / 64) * kPairActBytes; }

  // In place, pair by pair from the last (the prepared pair is larger than its two blocks, so
  // pair p's writes only reach the blocks of pairs already done). Q4_0, Q5_0 and IQ4_NL share
  // it, so matmul prepares their activations once.
  template <bool kMin>
  static void prepare_pair_act(void* act, int64_t n) {
    using YBlock = std::conditional_t<kMin, BlockQ8_1, BlockQ8_0>;
    auto pairs = [](float v0, float v1) {  // [v0 x 4, v1 x 4]
      return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_setr_ps(v0, v1, 0.0f, 0.0f)),
                                      _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
    };
    for (int64_t p = n / 64 - 1; p >= 0; --p) {
      const YBlock* y = static_cast<const YBlock*>(act) + 2 * p;
      const __m256i y0 = load256(y[0].qs), y1 = load256(y[1].qs);
      const __m256 d = pairs(_cvtsh_ss(y[0].d), _cvtsh_ss(y[1].d));
      const __m256i lo = _mm256_permute2x128_si256(y0, y1, 0x20);
      const __m256i hi = _mm256_permute2x128_si256(y0, y1, 0x31);
      __m256 sums = d;  // (read before the stores below, which may overwrite the pair's blocks)
      if constexpr (kMin) sums = pairs(_cvtsh_ss(y[0].s), _cvtsh_ss(y[1].s));
      auto* out = static_cast<uint8_t*>(act) + p * kPairActBytes;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32), hi);
      _mm256_storeu_ps(reinterpret_cast<float*>(out + 64), d);
      if constexpr (kMin) {
        _mm256_storeu_ps(reinterpret_cast<float*>(out + 96), sums);
      } else {
        const __m256i eight = _mm256_set1_epi8(8), zero = _mm256_setzero_si256();
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(out + 96),
            _mm256_sub_epi32(zero,
                             _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(zero, eight, lo), eight, hi)));
      }
    }
  }

  template <TensorType T>
  static void rows_pair_interleaved(int64_t n, const void* w, size_t, int, const void* act,
                                    float* out) {
    using L = PairLayout<T>;
    constexpr bool kMin = L::kMins, kQ5 = L::kHighBits;
    // IQ4_NL and MXFP4: values + 128 by vpshufb, offset 128.
    constexpr bool kTable = T == TensorType::IQ4_NL || T == TensorType::MXFP4;
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* ya = static_cast<const uint8_t*>(act);
    const __m512i mask = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(16);
    [[maybe_unused]] const __m512i table =
        ShiftedTable(T == TensorType::MXFP4 ? kKvaluesMxfp4 : kKvaluesIq4nl).v;
    // Lane l of rows (0, 1) / (2, 3) takes scale (row, block) at index block * 4 + row.
    const __m512i pick01 = _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5);
    const __m512i pick23 = _mm512_add_epi32(pick01, _mm512_set1_epi32(2));
    __m512 acc01 = _mm512_setzero_ps(), acc23 = _mm512_setzero_ps();
    __m256 acc_min = _mm256_setzero_ps();
    for_each_item<typename L::Units>(
        g, n / 64, [&](int64_t p, const uint8_t* meta, const uint8_t* qs) {
          const uint8_t* y = ya + p * kPairActBytes;
          const __m512i ylo = _mm512_broadcast_i64x4(load256(y));
          const __m512i yhi = _mm512_broadcast_i64x4(load256(y + 32));
          __m512i start = _mm512_setzero_si512();
          if constexpr (!kMin) start = _mm512_broadcast_i64x4(load256(y + 96));
          if constexpr (kQ5 && !kMin) start = _mm512_add_epi32(start, start);
          if constexpr (kTable) start = _mm512_slli_epi32(start, 4);  // -8 x 16 per value
          auto rows = [&](int r) {                                    // rows r, r + 1
            const __m512i q = _mm512_loadu_si512(qs + 32 * r);
            __m512i lo = _mm512_and_si512(q, mask);
            __m512i hi = high_nibbles(q);
            if constexpr (kTable) {
              lo = _mm512_shuffle_epi8(table, lo);
              hi = _mm512_shuffle_epi8(table, hi);
            }
            if constexpr (kQ5) {  // the layout keeps each load's fifth bits as its byte mask
              __mmask64 low, high;
              std::memcpy(&low, meta + L::kQhAt + 8 * r, 8);
              std::memcpy(&high, meta + L::kQhAt + 8 + 8 * r, 8);
              lo = _mm512_mask_add_epi8(lo, low, lo, sixteen);
              hi = _mm512_mask_add_epi8(hi, high, hi, sixteen);
            }
            return _mm512_cvtepi32_ps(
                _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(start, lo, ylo), hi, yhi));
          };
          const __m256 scales = pair_scales<T>(meta);
          const __m512 sd = _mm512_castps256_ps512(
              _mm256_mul_ps(scales, _mm256_loadu_ps(reinterpret_cast<const float*>(y + 64))));
          acc01 = _mm512_fmadd_ps(rows(0), _mm512_permutexvar_ps(pick01, sd), acc01);
          acc23 = _mm512_fmadd_ps(rows(2), _mm512_permutexvar_ps(pick23, sd), acc23);
          if constexpr (kMin) {
            const __m256 mins =
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 16)));
            acc_min = _mm256_fmadd_ps(mins, _mm256_loadu_ps(reinterpret_cast<const float*>(y + 96)),
                                      acc_min);
          }
        });
    // Row r: the 8 lanes of its half (blocks b and b + 1 side by side: lanes 4r..4r+3 of a), plus
    // its mins of both blocks (lanes r and r + 4).
    const __m512 a = _mm512_add_ps(_mm512_shuffle_f32x4(acc01, acc23, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(acc01, acc23, _MM_SHUFFLE(3, 1, 3, 1)));
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, a);
    alignas(32) float mins[8];
    _mm256_store_ps(mins, acc_min);
    for (int r = 0; r < 4; ++r) {
      out[r] = (lanes[4 * r] + lanes[4 * r + 1]) + (lanes[4 * r + 2] + lanes[4 * r + 3]) +
               (mins[r] + mins[r + 4]);
    }
  }

  // Q8_0 interleaved (repack.hpp), four rows against one activation row, two blocks a step:
  // a row's 64 quant bytes (blocks b, b + 1) biased by 128 to unsigned against the
  // activations of both blocks, one vpdpbusd, less 128 * sum(y) per lane. Lanes 0-7 hold
  // block b, 8-15 block b + 1; each row keeps 16 float lanes. The activations come prepared
  // once per matmul (Q8Act), as for the 4-bit pairs.
  struct Q8Act {
    int8_t qs[64];  // blocks b, b + 1
    float d[8];     // d of block b (4 lanes), then of b + 1
  };
  static_assert(sizeof(Q8Act) == 96);
  static size_t q8_act_bytes(int64_t n) { return static_cast<size_t>(n / 64) * sizeof(Q8Act); }
  static void prepare_q8_act(void* act, int64_t n) {  // in place, from the last pair
    for (int64_t p = n / 64 - 1; p >= 0; --p) {
      const BlockQ8_0* y = static_cast<const BlockQ8_0*>(act) + 2 * p;
      const __m512i yv = two_blocks(y[0].qs, y[1].qs);
      const __m128 d = _mm_setr_ps(_cvtsh_ss(y[0].d), _cvtsh_ss(y[1].d), 0.0f, 0.0f);
      auto* out = static_cast<Q8Act*>(act) + p;
      _mm512_storeu_si512(out->qs, yv);
      _mm256_storeu_ps(out->d, _mm256_permutevar8x32_ps(_mm256_castps128_ps256(d),
                                                        _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1)));
    }
  }
  static void rows_q8_0_interleaved(int64_t n, const void* w, size_t, int, const void* act,
                                    float* out) {
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* ya = static_cast<const Q8Act*>(act);
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    // Row r's scales: lanes 0-7 take (r, b) at index r, lanes 8-15 (r, b + 1) at index 4 + r.
    __m512i pick[4];
    for (int r = 0; r < 4; ++r) {
      pick[r] = _mm512_mask_blend_epi32(0xff00, _mm512_set1_epi32(r), _mm512_set1_epi32(4 + r));
    }
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    using L = PairLayout<TensorType::Q8_0>;
    for_each_item<L::Units>(g, n / 64, [&](int64_t p, const uint8_t* meta, const uint8_t* qs) {
      const __m512i yv = _mm512_loadu_si512(ya[p].qs);
      const __m512i start = _mm512_sub_epi32(_mm512_setzero_si512(),
                                             _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, yv));
      const __m512 sd = _mm512_castps256_ps512(
          _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(meta))),
                        _mm256_loadu_ps(ya[p].d)));
      for (int r = 0; r < 4; ++r) {
        const __m512i q = _mm512_xor_si512(_mm512_loadu_si512(qs + L::qs(0, r)), bias);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(start, q, yv)),
                                 _mm512_permutexvar_ps(pick[r], sd), acc[r]);
      }
    });
    for (int r = 0; r < 4; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
  }

  // The 4-bit pair gemvs, which take the unit's high_nibbles (isa_avx512.inl): the VBMI unit
  // installs its own build of them too (avx512vbmi_kquants.cpp, with GFNI).
  static void fill_pair_interleaved(KernelTable& t) {
    using T = TensorType;
    t.types[uint32_t(T::Q4_0)].vec_dot_interleaved = rows_in_groups<rows_pair_interleaved<T::Q4_0>>;
    t.types[uint32_t(T::Q4_1)].vec_dot_interleaved = rows_in_groups<rows_pair_interleaved<T::Q4_1>>;
    t.types[uint32_t(T::Q5_0)].vec_dot_interleaved = rows_in_groups<rows_pair_interleaved<T::Q5_0>>;
    t.types[uint32_t(T::Q5_1)].vec_dot_interleaved = rows_in_groups<rows_pair_interleaved<T::Q5_1>>;
    t.types[uint32_t(T::IQ4_NL)].vec_dot_interleaved =
        rows_in_groups<rows_pair_interleaved<T::IQ4_NL>>;
    t.types[uint32_t(T::MXFP4)].vec_dot_interleaved =
        rows_in_groups<rows_pair_interleaved<T::MXFP4>>;
  }
  static void fill(KernelTable& t) {
    using T = TensorType;
    t.types[uint32_t(T::Q8_0)].vec_dot_interleaved = rows_in_groups<rows_q8_0_interleaved>;
    t.types[uint32_t(T::Q8_0)].prepare_act_interleaved = prepare_q8_act;
    t.types[uint32_t(T::Q8_0)].act_interleaved_bytes = q8_act_bytes;
    fill_pair_interleaved(t);
    for (TensorType type : {T::Q4_0, T::Q4_1, T::Q5_0, T::Q5_1, T::IQ4_NL, T::MXFP4}) {
      const bool min = type == T::Q4_1 || type == T::Q5_1;
      t.types[uint32_t(type)].prepare_act_interleaved =
          min ? prepare_pair_act<true> : prepare_pair_act<false>;
      t.types[uint32_t(type)].act_interleaved_bytes = pair_act_bytes;
    }
    set_chain<Q4_0>(t, T::Q4_0);
    set_chain<Q4_1>(t, T::Q4_1);
    set_chain<Q5_0>(t, T::Q5_0);
    set_chain<Q5_1>(t, T::Q5_1);
    set_chain<Q8_0>(t, T::Q8_0);
    set_dot<dot_iq4_nl>(t, T::IQ4_NL);
    set_dot<dot_mxfp4>(t, T::MXFP4);
  }
};
