// P.V for a q8_0 or q4_0 V in integers (AVX-512 and AVX-VNNI; decision record:
// docs/kernels.md, "P.V in integers for a q8_0 V"). Included inside an anonymous namespace after
// attention_chunks.inl, before attention.inl, which calls it from both its paths (generation's and
// the prompt's) with the same keys per token and chunk, so a token's output has the same bits in
// either.
//
// A V row's block b is 32 int8 values v_jd times the row's scale s_jb. For a token's queries
// and one chunk of keys [c_lo, c_hi] (the ones they see of it), with e_j = exp(score_j - max)
// (the softmax left unnormalized) and S_b the largest |s_jb| of those keys:
//   f_b = 32767 / S_b;  q_j = round(e_j * (s_jb * f_b))  (int16: e_j <= 1);
//   O_d = float(sum_j q_j v_jd) * r_b,  r_b = inv * (S_b / 32767),  inv = 1 / the chunk's sum
// The sums are exact in int32 (512 keys x 32767 x 128 < 2^31), and vpdpwssd takes two keys'
// values and weights per 32-bit lane: 32 products an instruction against an FMA's 16, the V
// rows widened once for all the token's queries. A weight's rounding is at most 2^-16 of
// S_b / inv; the values are the rows' own. A q4_0 row's values are its nibbles less 8, in the
// row's order (block bytes [0, 16) hold values 0 to 15 low and 16 to 31 high).

struct PvQ8 : AttentionBase {
  // The block scales' bits of V rows, gathered for a range of keys at a time: into out (block
  // b's at b * span, key j's at j from the row of key `first`), for keys below n (the unit's
  // last key; rows past it may not exist), prefetching kGatherAhead rows ahead.
  struct ScaleGather {
    const uint8_t* rows;
    size_t row_bytes;
    int64_t blocks;
    size_t block_bytes;
    uint16_t* out;
    int64_t span, n;
    // Row by row, each row's blocks (a loop per block over the keys left 12% of a layer in
    // load misses), the fields in locals: through memcpy's stores GCC reloaded each from the
    // struct every key, and the loop was 14% of attention at depth 4096.
    void keys(int64_t j0, int64_t j1) const {
      const size_t stride = row_bytes, bb = block_bytes;
      const int64_t nb = blocks, sp = span, end = std::min(j1, n);
      const uint8_t* row = rows + j0 * stride;
      uint16_t* o = out;
      for (int64_t j = j0; j < end; ++j, row += stride) {
        for (int64_t b = 0; b < nb; ++b) {
          _mm_prefetch(reinterpret_cast<const char*>(row + kGatherAhead * stride + bb * b),
                       _MM_HINT_T0);
          uint16_t bits;
          std::memcpy(&bits, row + bb * b, 2);
          o[b * sp + j] = bits;
        }
      }
    }
  };
  // The gather of the unit's V scales for keys [first, first + span), into u.s.v_scale_bits:
  // by the integer score loop (score_all_vnni, as it reads the keys: the loads then wait on
  // memory beside its integer dots), or in one pass after the softmax.
  static ScaleGather scale_gather(Unit& u, int64_t first, int64_t span) {
    const AttentionArgs& a = u.a;
    const int64_t nb = a.head_dim_v / 32;
    u.s.v_scale_bits.resize(static_cast<size_t>(nb * span));
    return {a.v_base + u.g * a.v_head_stride + first * a.v_pos_stride,
            a.v_pos_stride,
            nb,
            static_cast<size_t>(v_block_bytes(a)),
            u.s.v_scale_bits.data(),
            span,
            std::clamp<int64_t>(u.last + 1 - first, 0, span)};
  }
  // Then the scales as floats, into u.s.v_scales (block b's at b * span); 0 past the unit's
  // last key.
  static void convert_scales(Unit& u, const ScaleGather& gather) {
    const int64_t nb = gather.blocks, span = gather.span, n = gather.n;
    u.s.v_scales.resize(static_cast<size_t>(nb * span));
    float* sv = u.s.v_scales.data();
    uint16_t* bits = gather.out;
    for (int64_t b = 0; b < nb; ++b) std::fill(bits + b * span + n, bits + (b + 1) * span, 0);
    for (int64_t i = 0; i < nb * span; i += W) store_f16_as_float(bits + i, sv + i);
  }

  // The P.V of chunk c over keys [c_lo, c_hi] for NQ queries from query i0, which see the same
  // keys: e, their rows of exponentials (span apart, from key `first`); sv, the scales
  // (convert_scales); rows, the V row of key `first`, row_bytes apart. finish(i, d, sum) takes
  // query i's sums of dimensions [d, d + 16).
  template <int NQ, typename Finish>
  static void chunk(Unit& u, const uint8_t* rows, size_t row_bytes, int64_t first, int64_t span,
                    const float* e, const float* sv, int64_t i0, int64_t c, int64_t c_lo,
                    int64_t c_hi, const Finish& finish) {
    if constexpr (kIntegerDots) {
      const int64_t nb = u.a.head_dim_v / 32;
      // The keys' offsets from first: [j0, j1) in pairs, [v0, v1) in whole vectors (keys of
      // it outside the chunk's range are ones the queries do not see: e = 0).
      const int64_t j0 = (c_lo - first) & ~int64_t{1}, j1 = c_hi - first + 1;
      const int64_t v0 = (c_lo - first) / W * W, v1 = (j1 + W - 1) / W * W, n = v1 - v0;
      u.s.p16.resize(static_cast<size_t>(NQ * n));
      int16_t* q = u.s.p16.data();
      float inv[NQ];
#pragma GCC unroll 8
      for (int i = 0; i < NQ; ++i) inv[i] = static_cast<float>(1.0 / u.stats(i0 + i, c).sum);
      for (int64_t b = 0; b < nb; ++b) {
        const float* s = sv + b * span;
        const float S = largest_scale(s, v0, v1, c_lo - first, j1);
        for (int64_t j = v0; j < v1; j += W)
          weights<NQ>(e + j, span, s + j, S > 0.0f ? 32767.0f / S : 0.0f, q + j - v0, n);
        float r[NQ];
#pragma GCC unroll 8
        for (int i = 0; i < NQ; ++i) r[i] = inv[i] * (S / 32767.0f);
        const uint8_t* v = rows + j0 * row_bytes + v_block_bytes(u.a) * b + 2;
        const bool q4 = u.a.v_type == TensorType::Q4_0;
        if constexpr (W == 16) {
          auto run = [&]<bool kPrefetch>() {
            if (q4) {
              block<NQ, kPrefetch, true>(v, row_bytes, j0, j1, q, v0, n, r, i0, 32 * b, finish);
            } else {
              block<NQ, kPrefetch, false>(v, row_bytes, j0, j1, q, v0, n, r, i0, 32 * b, finish);
            }
          };
          if (b == 0) {
            run.template operator()<true>();
          } else {
            run.template operator()<false>();
          }
        } else {  // AVX-VNNI: 16 of the block's values and 4 queries at a time
          for (int64_t h = 0; h < 32; h += 16) {
            for (int i = 0; i < NQ; i += 4) {
              auto run = [&]<int QN>() {
                auto half = [&]<bool kPrefetch, bool Q4>() {
                  half_block<QN, kPrefetch, Q4>(v, h, row_bytes, j0, j1, q + i * n, v0, n, r + i,
                                                i0 + i, 32 * b + h, finish);
                };
                const bool ahead = b == 0 && h == 0 && i == 0;
                if (ahead && q4) {
                  half.template operator()<true, true>();
                } else if (ahead) {
                  half.template operator()<true, false>();
                } else if (q4) {
                  half.template operator()<false, true>();
                } else {
                  half.template operator()<false, false>();
                }
              };
              if (NQ - i >= 4) {
                run.template operator()<4>();
              } else if constexpr (NQ % 4 != 0) {
                run.template operator()<NQ % 4>();
              }
            }
          }
        }
      }
    }
  }

  // The block path's P.V (its unit's queries, rows of e from key first): chunk() for each
  // token's queries, up to kDirectQueries at a time, the chunks' sums added into ob (a row of
  // head_dim_v per query), then to the output.
  static void tokens(Unit& u, int64_t first, int64_t span, const float* e, const float* sv,
                     float* ob) {
    const AttentionArgs& a = u.a;
    const int64_t hv = a.head_dim_v, group = u.group;
    const uint8_t* rows = a.v_base + u.g * a.v_head_stride + first * a.v_pos_stride;
    std::fill(ob, ob + u.n_q * hv, 0.0f);
    for (int64_t i0 = 0; i0 < u.n_q; i0 += group) {
      const int64_t lo = u.first_of(i0), hi = u.last_of(i0);
      for (int64_t c = lo / kChunk; c <= hi / kChunk; ++c) {
        const int64_t c_lo = std::max(lo, c * kChunk);
        const int64_t c_hi = std::min(hi, c * kChunk + kChunk - 1);
        for (int64_t i = i0; i < i0 + group; i += kDirectQueries) {
          with_queries(std::min(kDirectQueries, i0 + group - i), [&]<int NQ>() {
            chunk<NQ>(u, rows, a.v_pos_stride, first, span, e + i * span, sv, i, c, c_lo, c_hi,
                      [&](int64_t q, int64_t d, auto sum) { u.send(q, c, d, sum, ob + q * hv); });
          });
        }
        for (int64_t q = i0; q < i0 + group; ++q) u.keep_stats(q, c);
      }
    }
    for (int64_t i = 0; i < u.n_q; ++i) u.copy_out(i, ob + i * hv);
  }

 private:
  // One block's sums for NQ queries: keys [j0, j1)'s values (from v, row_bytes apart; Q4: a
  // q4_0 block's nibbles) times query i's weights (q + i * n + j - v0, int16), two keys a step,
  // prefetching kPrefetchRows rows ahead; then times r[i] into finish(i0 + i, d + [0, 16) and
  // d + [16, 32)). (Not inlined: inside the paths' loops GCC kept the accumulators on the
  // stack.)
  template <int NQ, bool kPrefetch, bool Q4, typename Finish>
  [[gnu::noinline]] static void block(const uint8_t* v, size_t row_bytes, int64_t j0, int64_t j1,
                                      const int16_t* q, int64_t v0, int64_t n, const float* r,
                                      int64_t i0, int64_t d, const Finish& finish) {
    // (Two arrays of at most 512 bytes: GCC keeps a larger one on the stack.)
    __m512i acc0[NQ], acc1[NQ];
#pragma GCC unroll 8
    for (int i = 0; i < NQ; ++i) acc0[i] = acc1[i] = _mm512_setzero_si512();
    for (int64_t j = j0; j < j1; j += 2, v += 2 * row_bytes) {
      if constexpr (kPrefetch) {  // the pair's 136 bytes from 2 before v
        const uint8_t* ahead = v - 2 + kPrefetchRows * row_bytes;
        for (int k = 0; k < 3; ++k)
          _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * k), _MM_HINT_T0);
      }
      // Keys j and j + 1 (none past the last: a chunk's last pair may be one key).
      const __mmask32 second = j + 1 < j1 ? ~__mmask32{0} : __mmask32{0};
      __m512i x, y;
      if constexpr (Q4) {
        x = _mm512_cvtepi8_epi16(nibbles(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v))));
        y = _mm512_cvtepi8_epi16(
            nibbles(_mm_maskz_loadu_epi8(static_cast<__mmask16>(second), v + row_bytes)));
      } else {
        x = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v)));
        y = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(second, v + row_bytes));
      }
      const __m512i lo = _mm512_unpacklo_epi16(x, y), hi = _mm512_unpackhi_epi16(x, y);
#pragma GCC unroll 8
      for (int i = 0; i < NQ; ++i) {
        int32_t two;
        std::memcpy(&two, q + i * n + (j - v0), 4);
        const __m512i w = _mm512_set1_epi32(two);
        dpwssd(acc0[i], lo, w);
        dpwssd(acc1[i], hi, w);
      }
    }
    // Lane 4L + k of acc0[i] holds dimension 8L + k of the block, of acc1[i] 8L + 4 + k.
    const __m512i first_half =
        _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i second_half =
        _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    using Out = FbatchOf<NQ>;
#pragma GCC unroll 8
    for (int i = 0; i < NQ; ++i) {
      const __m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(acc0[i]), _mm512_set1_ps(r[i]));
      const __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(acc1[i]), _mm512_set1_ps(r[i]));
      finish(i0 + i, d, Out(_mm512_permutex2var_ps(x, first_half, y)));
      finish(i0 + i, d + 16, Out(_mm512_permutex2var_ps(x, second_half, y)));
    }
  }
  // The largest |s_j| of the keys [lo, hi) among [v0, v1) (whole vectors of s).
  static float largest_scale(const float* s, int64_t v0, int64_t v1, int64_t lo, int64_t hi) {
    if constexpr (W == 16) {
      __m512 top = _mm512_setzero_ps();
      for (int64_t j = v0; j < v1; j += W) {
        const __mmask16 in = range_mask(j, lo, hi);
        top = _mm512_max_ps(top, _mm512_abs_ps(_mm512_maskz_loadu_ps(in, s + j)));
      }
      return _mm512_reduce_max_ps(top);
    } else {
      const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
      const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      __m256 top = _mm256_setzero_ps();
      for (int64_t j = v0; j < v1; j += W) {
        const __m256i key = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(j)), lanes);
        const __m256i in = _mm256_and_si256(
            _mm256_cmpgt_epi32(key, _mm256_set1_epi32(static_cast<int32_t>(lo - 1))),
            _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(hi)), key));
        top = _mm256_max_ps(top, _mm256_and_ps(_mm256_and_ps(_mm256_loadu_ps(s + j), abs),
                                               _mm256_castsi256_ps(in)));
      }
      __m128 m = _mm_max_ps(_mm256_castps256_ps128(top), _mm256_extractf128_ps(top, 1));
      m = _mm_max_ps(m, _mm_movehl_ps(m, m));
      return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
    }
  }
  // W keys' int16 weights for NQ queries: round(e_j * (s_j * f)), query i's exponentials at
  // e + i * span, its weights at q + i * n.
  template <int NQ>
  static void weights(const float* e, int64_t span, const float* s, float f, int16_t* q,
                      int64_t n) {
    if constexpr (W == 16) {
      const __m512 sf = _mm512_mul_ps(_mm512_loadu_ps(s), _mm512_set1_ps(f));
#pragma GCC unroll 8
      for (int i = 0; i < NQ; ++i) {
        const __m512 w = _mm512_mul_ps(_mm512_loadu_ps(e + i * span), sf);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i * n),
                            _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(w)));
      }
    } else {
      const __m256 sf = _mm256_mul_ps(_mm256_loadu_ps(s), _mm256_set1_ps(f));
#pragma GCC unroll 8
      for (int i = 0; i < NQ; ++i) {
        const __m256i w = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(e + i * span), sf));
        const __m128i packed =
            _mm_packs_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i * n), packed);
      }
    }
  }
  // AVX-VNNI's block(): values [h, h + 16) of a block (from v), NQ (up to 4) queries, vpdpwssd
  // on pairs of keys; finish(i0 + i, d + [0, 8) and d + [8, 16)).
  template <int NQ, bool kPrefetch, bool Q4, typename Finish>
  [[gnu::noinline]] static void half_block(const uint8_t* v, int64_t h, size_t row_bytes,
                                           int64_t j0, int64_t j1, const int16_t* q, int64_t v0,
                                           int64_t n, const float* r, int64_t i0, int64_t d,
                                           const Finish& finish) {
    __m256i acc0[NQ], acc1[NQ];
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) acc0[i] = acc1[i] = _mm256_setzero_si256();
    for (int64_t j = j0; j < j1; j += 2, v += 2 * row_bytes) {
      if constexpr (kPrefetch) {  // the pair's 136 bytes from 2 before v
        const uint8_t* ahead = v - 2 + kPrefetchRows * row_bytes;
        for (int k = 0; k < 3; ++k)
          _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * k), _MM_HINT_T0);
      }
      // Keys j and j + 1 (none past the last: a chunk's last pair may be one key).
      auto values = [&](const uint8_t* row) {  // the row's values [h, h + 16) as int16
        if constexpr (Q4) {
          const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row));
          const __m128i n = _mm_and_si128(h == 0 ? b : _mm_srli_epi16(b, 4), _mm_set1_epi8(15));
          return _mm256_cvtepi8_epi16(_mm_sub_epi8(n, _mm_set1_epi8(8)));
        } else {
          return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + h)));
        }
      };
      const __m256i x = values(v);
      const __m256i y = j + 1 < j1 ? values(v + row_bytes) : _mm256_setzero_si256();
      const __m256i lo = _mm256_unpacklo_epi16(x, y), hi = _mm256_unpackhi_epi16(x, y);
#pragma GCC unroll 4
      for (int i = 0; i < NQ; ++i) {
        int32_t two;
        std::memcpy(&two, q + i * n + (j - v0), 4);
        const __m256i w = _mm256_set1_epi32(two);
        acc0[i] = dpwssd_vex(acc0[i], lo, w);
        acc1[i] = dpwssd_vex(acc1[i], hi, w);
      }
    }
    // Lanes 0-3 of acc0[i] hold dimensions 0-3, lanes 4-7 dimensions 8-11; acc1[i] 4-7, 12-15.
    using Out = FbatchOf<NQ>;
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) {
      const __m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(acc0[i]), _mm256_set1_ps(r[i]));
      const __m256 y = _mm256_mul_ps(_mm256_cvtepi32_ps(acc1[i]), _mm256_set1_ps(r[i]));
      finish(i0 + i, d, Out(_mm256_permute2f128_ps(x, y, 0x20)));
      finish(i0 + i, d + 8, Out(_mm256_permute2f128_ps(x, y, 0x31)));
    }
  }
  // A q4_0 block's 16 bytes as its 32 values (int8, the nibbles less 8) in order.
  template <int = 0>  // (a template: the AVX2 builds never instantiate it)
  static __m256i nibbles(__m128i b) {
    const __m128i low = _mm_set1_epi8(15);
    const __m256i n =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low), _mm_and_si128(b, low));
    return _mm256_sub_epi8(n, _mm256_set1_epi8(8));
  }
  // Bytes of a block of a V row: q8_0 or q4_0.
  static int64_t v_block_bytes(const AttentionArgs& a) {
    return static_cast<int64_t>(row_size_bytes(a.v_type, 32));
  }
  static constexpr int64_t kPrefetchRows = 64;
  static constexpr int64_t kGatherAhead = 128;  // rows ScaleGather prefetches ahead
  // acc += vpdpwssd(a, b), in assembly: with the intrinsic GCC 12 copied each accumulator to
  // another register and back every step (and spilled some), 200 against 172 us a layer
  // (bench_kernels attention_q8_0/avx512/q1/ctx4096/layers1). A template, so that clang checks
  // the 512-bit operands only where it is used (the AVX2 translation units include this file).
  template <typename R>
  static void dpwssd(R& acc, R a, R b) {
    asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  }
  // The same in AVX-VNNI's VEX form (the assembler would take plain vpdpwssd as AVX-512's).
  template <typename R>
  static R dpwssd_vex(R acc, R a, R b) {
    asm("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    return acc;
  }
  // Lanes of the vector of keys [j, j + 16) inside [lo, hi).
  static __mmask16 range_mask(int64_t j, int64_t lo, int64_t hi) {
    uint32_t m = 0xffffu;
    if (lo > j) m &= 0xffffu << std::min<int64_t>(lo - j, 16);
    if (hi < j + 16) m &= (1u << std::max<int64_t>(hi - j, 0)) - 1;
    return static_cast<__mmask16>(m);
  }
  template <int = 0>  // (a template: the plain AVX2 build never instantiates it)
  static void store_f16_as_float(const uint16_t* h, float* out) {
    if constexpr (W == 16) {
      _mm512_storeu_ps(out,
                       _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h))));
    } else {
      _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h))));
    }
  }
};
