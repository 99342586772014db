// x86 kernels for the float and legacy types, written once and instantiated per ISA.
//
// Included inside an anonymous namespace by avx2_kernels.cpp and avx512_kernels.cpp, each
// compiled with its own flags; `Isa` supplies the xsimd architecture tag and the one integer
// primitive that differs (dot of 32 u8 x s8 pairs: maddubs+madd on AVX2, vpdpbusd on
// AVX-512 VNNI). Every function here has internal linkage, so code built for one ISA can
// never be picked by the linker for another. No #if inside a kernel body.
//
// Requires before inclusion: <immintrin.h>, <xsimd/xsimd.hpp>, kernels/blocks.hpp,
// kernels/float_conv.hpp, kernels/kernels.hpp, kernels/expf.hpp.

template <class Isa>
struct X86 {
  using fbatch = xsimd::batch<float, typename Isa::arch>;

  // Fused multiply-add. xsimd 8 has no AVX-512 fma and falls back to a multiply and an add,
  // so the ISA traits may supply the instruction.
  static fbatch fmadd(fbatch a, fbatch b, fbatch c) {
    if constexpr (requires { Isa::fma(a, b, c); }) {
      return Isa::fma(a, b, c);
    } else {
      return xsimd::fma(a, b, c);
    }
  }

  static float h2f(uint16_t h) { return _cvtsh_ss(h); }  // F16C: exact, like fp16_to_fp32

  // The final horizontal sum of a float batch: the ISA's own order where it has one.
  static float reduce(fbatch v) {
    if constexpr (requires { Isa::reduce(v); }) {
      return Isa::reduce(v);
    } else {
      return xsimd::hadd(v);
    }
  }

  static float hsum(__m256 v) {
    const __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    __m128 s = _mm_add_ps(lo, hi);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // 32 signed bytes x 32 signed bytes -> 8 lanes of int32 partial sums. The sign trick keeps
  // the unsigned operand |x| so AVX2's saturating maddubs cannot overflow for |x| <= 127.
  static __m256i dot_s8(__m256i x, __m256i y) {
    const __m256i ax = _mm256_sign_epi8(x, x);
    const __m256i sy = _mm256_sign_epi8(y, x);
    return Isa::dot_u8s8(ax, sy);
  }

  // The 32 values of a Q4_0 block as signed bytes (nibble - 8), in element order.
  static __m256i unpack_q4(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_and_si128(q, m);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), m);
    return _mm256_set_m128i(hi, lo);
  }

  template <typename WB>
  static float block_scale(const WB& b) {
    return h2f(b.d);
  }
  static float block_scale(const BlockMXFP4& b) { return e8m0_to_fp32_half(b.e); }

  template <typename WB, typename Decode>
  static void dot_q8_blocks(int64_t n, const void* w, const void* act, size_t stride, int nc,
                            float* out, Decode decode) {
    const auto* x = static_cast<const WB*>(w);
    const int64_t nb = n / 32;
    if (nc == 1) {
      // One column (generation): accumulators in registers, two independent chains. (The
      // general loop below keeps its per-column accumulators in memory, a store-to-load
      // round trip on every block's dependency chain.)
      const auto* y = static_cast<const BlockQ8_0*>(act);
      __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
      auto block = [&](int64_t i, __m256 acc) {
        const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs));
        const __m256 p = _mm256_cvtepi32_ps(dot_s8(decode(x[i]), yv));
        return _mm256_fmadd_ps(_mm256_set1_ps(block_scale(x[i]) * h2f(y[i].d)), p, acc);
      };
      int64_t i = 0;
      for (; i + 2 <= nb; i += 2) {
        prefetch_ahead(x + i, 2 * sizeof(WB));
        acc0 = block(i, acc0);
        acc1 = block(i + 1, acc1);
      }
      if (i < nb) acc0 = block(i, acc0);
      out[0] = hsum(_mm256_add_ps(acc0, acc1));
      return;
    }
    __m256 acc[kMaxDotCols];
    for (int c = 0; c < nc; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const __m256i xv = decode(x[i]);  // decoded once for every column
      const float dx = block_scale(x[i]);
      for (int c = 0; c < nc; ++c) {
        const auto* y =
            reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(act) + c * stride) + i;
        const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y->qs));
        const __m256 p = _mm256_cvtepi32_ps(dot_s8(xv, yv));
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * h2f(y->d)), p, acc[c]);
      }
    }
    for (int c = 0; c < nc; ++c) out[c] = hsum(acc[c]);
  }

  // Q5 values: nibble | 5th bit << 4, as unsigned bytes 0..31.
  static __m256i unpack_q5(const uint8_t* qs, const uint8_t* qh) {
    return _mm256_or_si256(unpack_q4(qs),
                           _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10)));
  }

  // Types with a minimum, against Q8_1: d_x*d_y*sum(q*y) + m_x*s_y per block; q unsigned.
  template <typename WB, typename Decode>
  static void dot_q8_1_blocks(int64_t n, const void* w, const void* act, size_t stride, int nc,
                              float* out, Decode decode) {
    const auto* x = static_cast<const WB*>(w);
    if (nc == 1) {  // generation: register accumulators, two chains (see dot_q8_blocks)
      const auto* y = static_cast<const BlockQ8_1*>(act);
      __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
      float min_sum = 0.0f;
      auto block = [&](int64_t i, __m256 acc) {
        const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs));
        const __m256 p = _mm256_cvtepi32_ps(Isa::dot_u8s8(decode(x[i]), yv));
        min_sum += h2f(x[i].m) * h2f(y[i].s);
        return _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[i].d) * h2f(y[i].d)), p, acc);
      };
      const int64_t nb = n / 32;
      int64_t i = 0;
      for (; i + 2 <= nb; i += 2) {
        acc0 = block(i, acc0);
        acc1 = block(i + 1, acc1);
      }
      if (i < nb) acc0 = block(i, acc0);
      out[0] = hsum(_mm256_add_ps(acc0, acc1)) + min_sum;
      return;
    }
    __m256 acc[kMaxDotCols];
    float mins[kMaxDotCols] = {};
    for (int c = 0; c < nc; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; ++i) {
      const __m256i xv = decode(x[i]);
      const float dx = h2f(x[i].d), mx = h2f(x[i].m);
      for (int c = 0; c < nc; ++c) {
        const auto* y =
            reinterpret_cast<const BlockQ8_1*>(static_cast<const uint8_t*>(act) + c * stride) + i;
        const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y->qs));
        const __m256 p = _mm256_cvtepi32_ps(Isa::dot_u8s8(xv, yv));
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * h2f(y->d)), p, acc[c]);
        mins[c] += mx * h2f(y->s);
      }
    }
    for (int c = 0; c < nc; ++c) out[c] = hsum(acc[c]) + mins[c];
  }

  static void dot_q4_1(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_1_blocks<BlockQ4_1>(n, w, a, s, nc, out,
                               [](const BlockQ4_1& b) { return unpack_q4(b.qs); });
  }
  static void dot_q5_1(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_1_blocks<BlockQ5_1>(n, w, a, s, nc, out,
                               [](const BlockQ5_1& b) { return unpack_q5(b.qs, b.qh); });
  }
  static void dot_q5_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    const __m256i sixteen = _mm256_set1_epi8(16);
    dot_q8_blocks<BlockQ5_0>(n, w, a, s, nc, out, [&](const BlockQ5_0& b) {
      return _mm256_sub_epi8(unpack_q5(b.qs, b.qh), sixteen);
    });
  }

  // x = q * d + m, 8 at a time: one multiply and one add, as the reference.
  static void store_affine(const __m256i bytes, float d, float m, float* y) {
    alignas(32) uint8_t b[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(b), bytes);
    for (int j = 0; j < 32; j += 8) {
      const __m256i v =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + j)));
      _mm256_storeu_ps(y + j, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(d)),
                                            _mm256_set1_ps(m)));
    }
  }
  static void dequantize_q4_1(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const BlockQ4_1*>(vx);
    for (int64_t i = 0; i < n / 32; ++i)
      store_affine(unpack_q4(x[i].qs), h2f(x[i].d), h2f(x[i].m), y + 32 * i);
  }
  static void dequantize_q5_1(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const BlockQ5_1*>(vx);
    for (int64_t i = 0; i < n / 32; ++i)
      store_affine(unpack_q5(x[i].qs, x[i].qh), h2f(x[i].d), h2f(x[i].m), y + 32 * i);
  }
  static void dequantize_q5_0(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const BlockQ5_0*>(vx);
    const __m256i sixteen = _mm256_set1_epi8(16);
    for (int64_t i = 0; i < n / 32; ++i) {
      store_scaled(_mm256_sub_epi8(unpack_q5(x[i].qs, x[i].qh), sixteen), h2f(x[i].d), y + 32 * i);
    }
  }

  // Non-linear 4-bit codes: nibbles looked up in a 16-entry signed table with pshufb.
  static __m256i lookup_nibbles(const uint8_t* qs, const int8_t* table) {
    const __m256i t =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
    return _mm256_shuffle_epi8(t, unpack_q4(qs));
  }
  static void dot_iq4_nl(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_blocks<BlockIQ4_NL>(n, w, a, s, nc, out, [](const BlockIQ4_NL& b) {
      return lookup_nibbles(b.qs, kKvaluesIq4nl);
    });
  }
  static void dot_mxfp4(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_blocks<BlockMXFP4>(n, w, a, s, nc, out, [](const BlockMXFP4& b) {
      return lookup_nibbles(b.qs, kKvaluesMxfp4);
    });
  }
  static void dequantize_iq4_nl(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const BlockIQ4_NL*>(vx);
    for (int64_t i = 0; i < n / 32; ++i)
      store_scaled(lookup_nibbles(x[i].qs, kKvaluesIq4nl), h2f(x[i].d), y + 32 * i);
  }
  static void dequantize_mxfp4(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const BlockMXFP4*>(vx);
    for (int64_t i = 0; i < n / 32; ++i) {
      store_scaled(lookup_nibbles(x[i].qs, kKvaluesMxfp4), e8m0_to_fp32_half(x[i].e), y + 32 * i);
    }
  }

  static void dot_q4_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    const __m256i eight = _mm256_set1_epi8(8);
    dot_q8_blocks<BlockQ4_0>(n, w, a, s, nc, out, [&](const BlockQ4_0& b) {
      return _mm256_sub_epi8(unpack_q4(b.qs), eight);
    });
  }

  // Q4_0 gemv over an interleaved group of four rows (kernels/repack.hpp): one sequential
  // stream a thread, and the per-block work shared by the rows. Per block pair, each row's
  // 32 quant bytes hold both blocks: the low nibbles in one register, the high in another,
  // against the activations of both blocks rearranged to match. The nibbles stay unsigned
  // (0..15); the offset 8 is subtracted as 8 * sum(y), once for the four rows (with VNNI, two
  // vpdpbusd a row sum the products in 32-bit lanes, where AVX2 takes five ops). Three
  // horizontal adds leave block b's four row sums in the low half and block b+1's in the high
  // half, scaled by the eight (row, block) scales, which are one 16-byte load. Integer sums
  // are exact; only the float summation order differs from vec_dot's.
  //
  // Q4_1: no offset; the eight mins (the next 16 bytes) times the Q8_1 activations'
  // d * sum(y) are added instead. Q5_1: Q5_0's fifth bits (after the mins) and Q4_1's mins.
  // IQ4_NL: Q4_0's layout; with AVX-VNNI each nibble looks up its value plus 128 (1..241,
  // unsigned) and the offset is 128; on plain AVX2, |value| against the activations with its
  // sign. MXFP4: the same layout with its E8M0 scales (8 bytes a pair), and its values plus
  // 16 (4..28), offset 16, on every table.
  // Q5_0: each value's 5th bit or-ed in as 16, and the offset 16. A row's fifth bits (the low
  // halves of its two qh words, then the high halves: two 4-byte loads) are broadcast to every
  // lane; an in-lane shuffle gives each byte the qh byte that holds its bit (block b's in the
  // low half, block b+1's in the high half), and a compare against the byte's bit turns it into
  // 16 or 0.
  template <TensorType T>
  static void rows_pair_interleaved(int64_t n, const void* w, size_t, int, const void* act,
                                    float* out) {
    using L = PairLayout<T>;
    constexpr bool kMin = L::kMins, kQ5 = L::kHighBits;
    constexpr bool kTable = T == TensorType::IQ4_NL || T == TensorType::MXFP4;
    // The table's shift: MXFP4's values (|v| <= 12) plus 16 fit vpmaddubsw's pairs (2 * 28 *
    // 127); IQ4_NL's (|v| <= 127) need 128, and so vpdpbusd. Without VNNI, IQ4_NL takes |value|
    // against the activations with the value's sign instead (kSigned; 2 * 127 * 127 fits, and
    // no value is 0), with no offset.
    constexpr bool kSigned = T == TensorType::IQ4_NL && !Isa::kVnni;
    constexpr int kShift = T == TensorType::MXFP4 ? 16 : kSigned ? 0 : 128;
    using YBlock = std::conditional_t<kMin, BlockQ8_1, BlockQ8_0>;
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const YBlock*>(act);
    const __m256i mask = _mm256_set1_epi8(0x0f), sixteen = _mm256_set1_epi8(16);
    constexpr int kOffset = kTable ? kShift : kQ5 ? 16 : 8;  // what the unsigned values add
    static_assert(!kSigned || kOffset == 0);
    const __m256i offset_value = _mm256_set1_epi8(static_cast<char>(kOffset));
    const __m256i ones = _mm256_set1_epi16(1);
    [[maybe_unused]] const __m256i table =
        shifted_values(T == TensorType::MXFP4 ? kKvaluesMxfp4 : kKvaluesIq4nl, kShift);
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
    // A pair of rows' 16 bytes of fifth bits (repack.hpp): row 2p + e's values 0..15 at bytes
    // 4e, 4e + 1 (block b, to the low lane) and 4e + 2, 4e + 3 (block b+1, to the high lane);
    // values 16..31 eight bytes on.
    const __m256i pick_lo[2] = {_mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                                 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3),
                                _mm256_setr_epi8(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5,  //
                                                 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7)};
    const __m256i to_high = _mm256_set1_epi8(8);
    auto fifth = [&](__m256i h, __m256i pick) {
      const __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(h, pick), bit);
      return _mm256_and_si256(_mm256_cmpeq_epi8(b, bit), sixteen);
    };
    __m256 acc = _mm256_setzero_ps();
    for_each_item<typename L::Units>(
        g, n / 64, [&](int64_t p, const uint8_t* meta, const uint8_t* qs) {
          const int64_t b = 2 * p;
          const __m256i y0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
          const __m256i y1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b + 1].qs));
          const __m256i ylo = _mm256_permute2x128_si256(y0, y1, 0x20);  // values 0..15 of both
          const __m256i yhi = _mm256_permute2x128_si256(y0, y1, 0x31);  // values 16..31
          // The offset's products: 16-bit pair sums for maddubs, 32-bit lanes for vpdpbusd.
          __m256i offset = _mm256_setzero_si256();
          if constexpr (!kMin && Isa::kVnni) {
            offset = Isa::dot_acc(Isa::dot_u8s8(offset_value, ylo), offset_value, yhi);
          } else if constexpr (!kMin && !kSigned) {
            offset = _mm256_add_epi16(_mm256_maddubs_epi16(offset_value, ylo),
                                      _mm256_maddubs_epi16(offset_value, yhi));
          }
          __m256i sums[4];
          for (int r = 0; r < 4; ++r) {
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * r));
            __m256i lo = _mm256_and_si256(q, mask);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), mask);
            if constexpr (kTable) {
              lo = _mm256_shuffle_epi8(table, lo);
              hi = _mm256_shuffle_epi8(table, hi);
            }
            if constexpr (kQ5) {
              const __m256i h = _mm256_broadcastsi128_si256(_mm_loadu_si128(
                  reinterpret_cast<const __m128i*>(meta + L::kQhAt + 16 * (r / 2))));
              lo = _mm256_or_si256(lo, fifth(h, pick_lo[r % 2]));
              hi = _mm256_or_si256(hi, fifth(h, _mm256_add_epi8(pick_lo[r % 2], to_high)));
            }
            if constexpr (kSigned) {  // each half's pair sums to 32 bits apart: two would overflow
              auto half = [&](__m256i v, __m256i yv) {
                return _mm256_madd_epi16(
                    _mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(yv, v)), ones);
              };
              sums[r] = _mm256_add_epi32(half(lo, ylo), half(hi, yhi));
            } else if constexpr (Isa::kVnni) {
              sums[r] = _mm256_sub_epi32(Isa::dot_acc(Isa::dot_u8s8(lo, ylo), hi, yhi), offset);
            } else {
              const __m256i s16 =
                  _mm256_add_epi16(_mm256_maddubs_epi16(lo, ylo), _mm256_maddubs_epi16(hi, yhi));
              sums[r] = _mm256_madd_epi16(_mm256_sub_epi16(s16, offset), ones);
            }
          }
          const __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(sums[0], sums[1]),
                                              _mm256_hadd_epi32(sums[2], sums[3]));
          auto halves = [&](int at) {
            return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + at)));
          };
          const __m256 dy = _mm256_set_m128(_mm_set1_ps(h2f(y[b + 1].d)), _mm_set1_ps(h2f(y[b].d)));
          acc =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(pair_scales<T>(meta), dy), acc);
          if constexpr (kMin) {
            const __m256 sy =
                _mm256_set_m128(_mm_set1_ps(h2f(y[b + 1].s)), _mm_set1_ps(h2f(y[b].s)));
            acc = _mm256_fmadd_ps(halves(16), sy, acc);
          }
        });
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)));
  }

  // Q8_0 interleaved (repack.hpp), four rows against one activation row, two blocks a step,
  // as the 4-bit pairs above: a row's two blocks are loaded by halves, so that values 0-15 of
  // both blocks share one register and values 16-31 another (block b in the low 128-bit lane,
  // b + 1 in the high), against activations arranged the same way once per matmul
  // (Q8PairAct). With VNNI the weights are made unsigned (+128, one xor) for vpdpbusd, and
  // 128 * sum(y) comes off after the sums; plain AVX2 keeps the sign trick (|q| against y
  // with q's signs, whose maddubs pairs cannot saturate). Three horizontal adds leave the
  // eight (row, block) sums in the scales' order.
  struct Q8PairAct {
    int8_t lo[32];    // values 0-15 of block b, then those of block b + 1
    int8_t hi[32];    // values 16-31 of both
    float d[8];       // d of block b (4 lanes), then of b + 1
    int32_t bias[8];  // 128 * the sum of block b's values (4 lanes), then b + 1's
  };
  static_assert(sizeof(Q8PairAct) == 128);
  static size_t q8_pair_act_bytes(int64_t n) {
    return static_cast<size_t>(n / 64) * sizeof(Q8PairAct);
  }
  static void prepare_q8_pair_act(void* act, int64_t n) {  // in place, from the last pair
    for (int64_t p = n / 64 - 1; p >= 0; --p) {
      const BlockQ8_0* y = static_cast<const BlockQ8_0*>(act) + 2 * p;
      Q8PairAct a;
      for (int h = 0; h < 2; ++h) {
        int32_t sum = 0;
        for (int8_t v : y[h].qs) sum += v;
        std::memcpy(a.lo + 16 * h, y[h].qs, 16);
        std::memcpy(a.hi + 16 * h, y[h].qs + 16, 16);
        std::fill_n(a.d + 4 * h, 4, h2f(y[h].d));
        std::fill_n(a.bias + 4 * h, 4, 128 * sum);
      }
      std::memcpy(static_cast<Q8PairAct*>(act) + p, &a, sizeof a);
    }
  }
  static void rows_q8_0_interleaved(int64_t n, const void* w, size_t, int, const void* act,
                                    float* out) {
    using L = PairLayout<TensorType::Q8_0>;
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* ya = static_cast<const Q8PairAct*>(act);
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
    __m256 acc = _mm256_setzero_ps();
    for_each_item<L::Units>(g, n / 64, [&](int64_t p, const uint8_t* meta, const uint8_t* qs) {
      const __m256i ylo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ya[p].lo));
      const __m256i yhi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ya[p].hi));
      __m256i sums[4];
      for (int r = 0; r < 4; ++r) {
        auto half = [&](int h, int v0) {  // values v0..v0 + 15 of block h of the pair
          return reinterpret_cast<const __m128i*>(qs + L::qs(h, r) + v0);
        };
        const __m256i qlo = _mm256_loadu2_m128i(half(1, 0), half(0, 0));  // values 0-15
        const __m256i qhi = _mm256_loadu2_m128i(half(1, 16), half(0, 16));
        if constexpr (Isa::kVnni) {
          sums[r] = Isa::dot_acc(Isa::dot_u8s8(_mm256_xor_si256(qlo, bias), ylo),
                                 _mm256_xor_si256(qhi, bias), yhi);
        } else {
          sums[r] = _mm256_add_epi32(dot_s8(qlo, ylo), dot_s8(qhi, yhi));
        }
      }
      __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(sums[0], sums[1]),
                                    _mm256_hadd_epi32(sums[2], sums[3]));
      if constexpr (Isa::kVnni)
        s = _mm256_sub_epi32(s, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ya[p].bias)));
      const __m256 d = _mm256_mul_ps(
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + L::d(0, 0)))),
          _mm256_loadu_ps(ya[p].d));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d, acc);
    });
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)));
  }

  static void dot_q8_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_blocks<BlockQ8_0>(n, w, a, s, nc, out, [](const BlockQ8_0& b) {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    });
  }

  // Bytes -> floats times d, 8 at a time: exact ints times one float, so bit-identical to
  // the reference.
  static void store_scaled(const __m256i bytes, float d, float* y) {
    const __m256 dv = _mm256_set1_ps(d);
    alignas(32) int8_t b[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(b), bytes);
    for (int j = 0; j < 32; j += 8) {
      const __m256i v =
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + j)));
      _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_cvtepi32_ps(v), dv));
    }
  }

  static void dequantize_q4_0(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const BlockQ4_0*>(vx);
    const __m256i eight = _mm256_set1_epi8(8);
    for (int64_t i = 0; i < n / 32; ++i) {
      store_scaled(_mm256_sub_epi8(unpack_q4(x[i].qs), eight), h2f(x[i].d), y + 32 * i);
    }
  }

  static void dequantize_q8_0(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const BlockQ8_0*>(vx);
    for (int64_t i = 0; i < n / 32; ++i) {
      store_scaled(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs)), h2f(x[i].d),
                   y + 32 * i);
    }
  }

  // ---- float types with xsimd batches

  // Float dots. A row that is a multiple of 4 batches runs four accumulators, reduced
  // pairwise; another multiple of the batch one accumulator and the ISA's reduction
  // (tinyBLAS's order); any other length ggml_vec_dot's layout: four accumulators over steps
  // of 4 batches, reduced pairwise, and the remainder summed in double.
  template <typename Load>
  static void dot_float(int64_t n, const void* w, const void* act, size_t stride, int nc,
                        float* out, size_t elem_bytes, Load load, bool bf16 = false) {
    constexpr int64_t W = fbatch::size;
    const auto* wp = static_cast<const uint8_t*>(w);
    for (int c = 0; c < nc; ++c) {
      const auto* ap = static_cast<const uint8_t*>(act) + c * stride;
      if (n % (4 * W) == 0) {  // four FMA chains: one is latency-bound in generation
        fbatch acc[4] = {fbatch(0.0f), fbatch(0.0f), fbatch(0.0f), fbatch(0.0f)};
        for (int64_t i = 0; i < n; i += 4 * W) {
          prefetch_ahead(wp + i * elem_bytes, static_cast<int64_t>(4 * W * elem_bytes));
          for (int j = 0; j < 4; ++j) {
            acc[j] = fmadd(load(wp + (i + j * W) * elem_bytes), load(ap + (i + j * W) * elem_bytes),
                           acc[j]);
          }
        }
        out[c] = reduce((acc[0] + acc[2]) + (acc[1] + acc[3]));
        continue;
      }
      if (n % W == 0) {
        fbatch acc(0.0f);
        for (int64_t i = 0; i < n; i += W)
          acc = fmadd(load(wp + i * elem_bytes), load(ap + i * elem_bytes), acc);
        out[c] = reduce(acc);
        continue;
      }
      fbatch acc[4] = {fbatch(0.0f), fbatch(0.0f), fbatch(0.0f), fbatch(0.0f)};
      const int64_t np = n - n % (4 * W);
      for (int64_t i = 0; i < np; i += 4 * W) {
        for (int j = 0; j < 4; ++j) {
          acc[j] = fmadd(load(wp + (i + j * W) * elem_bytes), load(ap + (i + j * W) * elem_bytes),
                         acc[j]);
        }
      }
      double sum = reduce((acc[0] + acc[2]) + (acc[1] + acc[3]));
      for (int64_t j = np; j < n; ++j) {
        sum += static_cast<double>(scalar(wp + j * elem_bytes, elem_bytes, bf16) *
                                   scalar(ap + j * elem_bytes, elem_bytes, bf16));
      }
      out[c] = static_cast<float>(sum);
    }
  }

  static float scalar(const uint8_t* p, size_t elem_bytes, bool bf16 = false) {
    if (elem_bytes == 4) {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return bf16 ? bf16_to_fp32(h) : fp16_to_fp32(h);
  }

  static void dot_f32(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_float(n, w, a, s, nc, out, 4, [](const uint8_t* p) {
      return fbatch::load_unaligned(reinterpret_cast<const float*>(p));
    });
  }

  static void dot_f16(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_float(n, w, a, s, nc, out, 2, [](const uint8_t* p) { return Isa::load_f16(p); });
  }

  // F16 rows for one token (vec_dot_rows) on Intel's AVX-512 cores (fill, below): the
  // rows one after the other, each summed exactly as dot_f16 sums it (the same four chains, in
  // the same order), against the activation row widened to f32 once per call (exact). So a row
  // takes one vcvtph2ps per FMA (Intel's cores split it into two uops; dot_f16 takes two per
  // FMA), and the rows are one sequential stream. Four rows side by side, sharing each widened
  // activation vector, were four short streams: on Zen 5 that read 12-20% slower from memory
  // (docs/kernels.md, session 60). Zen 5 reads faster still with dot_f16 row by row (session
  // 76), whose f16 activations take half the L1.
  static constexpr int64_t kF16RowsMaxCols = 16384;  // the widened row: 64 KiB of stack
  static void rows_f16(int64_t n, const void* w, size_t row_bytes, int n_rows, const void* act,
                       float* out) {
    constexpr int64_t W = fbatch::size;
    if (n % (4 * W) != 0 || n > kF16RowsMaxCols) {
      rows_by_dot<dot_f16>(n, w, row_bytes, n_rows, act, out);
      return;
    }
    alignas(64) float a[kF16RowsMaxCols];
    const auto* ap = static_cast<const uint8_t*>(act);
    for (int64_t i = 0; i < n; i += W) Isa::load_f16(ap + 2 * i).store_aligned(a + i);
    for (int r = 0; r < n_rows; ++r) {
      const auto* wr = static_cast<const uint8_t*>(w) + static_cast<size_t>(r) * row_bytes;
      fbatch acc[4] = {fbatch(0.0f), fbatch(0.0f), fbatch(0.0f), fbatch(0.0f)};
      for (int64_t i = 0; i < n; i += 4 * W) {
        prefetch_ahead(wr + 2 * i, 8 * W);
        for (int j = 0; j < 4; ++j) {
          acc[j] = fmadd(Isa::load_f16(wr + 2 * (i + j * W)), fbatch::load_aligned(a + i + j * W),
                         acc[j]);
        }
      }
      out[r] = reduce((acc[0] + acc[2]) + (acc[1] + acc[3]));
    }
  }

  static void dot_bf16(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    if constexpr (requires { Isa::dot_bf16(nullptr, nullptr, 0); }) {  // the ISA's own
      for (int c = 0; c < nc; ++c) {
        out[c] = Isa::dot_bf16(
            static_cast<const uint16_t*>(w),
            reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(a) + c * s), n);
      }
    } else {
      dot_float(
          n, w, a, s, nc, out, 2, [](const uint8_t* p) { return Isa::load_bf16(p); }, true);
    }
  }

  static void dequantize_f16(const void* vx, float* y, int64_t n) {
    constexpr int64_t W = fbatch::size;
    const auto* p = static_cast<const uint8_t*>(vx);
    int64_t i = 0;
    for (; i + W <= n; i += W) Isa::load_f16(p + 2 * i).store_unaligned(y + i);
    for (; i < n; ++i) y[i] = scalar(p + 2 * i, 2);
  }
  static void dequantize_bf16(const void* vx, float* y, int64_t n) {  // exact: a shift
    constexpr int64_t W = fbatch::size;
    const auto* p = static_cast<const uint8_t*>(vx);
    int64_t i = 0;
    for (; i + W <= n; i += W) Isa::load_bf16(p + 2 * i).store_unaligned(y + i);
    for (; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      y[i] = bf16_to_fp32(h);
    }
  }

  // ---- attention primitives (xsimd batches; the f16 rows widen with F16C)
  static float vdot_f32(const float* a, const float* b, int64_t n) {
    float out;
    dot_f32(n, a, b, 0, 1, &out);
    return out;
  }
  // q . k over one head: lanes of FMAs then the ISA's reduction, like ggml's tinyBLAS; a
  // length that is not a multiple of the batch sums its float products in double, like
  // ggml's vec_dot_f16 for short rows.
  static float vdot_f16(const float* a, const uint16_t* b, int64_t n) {
    constexpr int64_t W = fbatch::size;
    if (n % W != 0) {
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i] * fp16_to_fp32(b[i]));
      return static_cast<float>(sum);
    }
    fbatch acc(0.0f);
    for (int64_t i = 0; i < n; i += W) {
      acc = fmadd(fbatch::load_unaligned(a + i),
                  Isa::load_f16(reinterpret_cast<const uint8_t*>(b + i)), acc);
    }
    return reduce(acc);
  }
  static void vaxpy_f32(float* y, float a, const float* x, int64_t n) {
    constexpr int64_t W = fbatch::size;
    const fbatch av(a);
    int64_t i = 0;
    for (; i + W <= n; i += W)
      fmadd(av, fbatch::load_unaligned(x + i), fbatch::load_unaligned(y + i))
          .store_unaligned(y + i);
    for (; i < n; ++i) y[i] += a * x[i];
  }
  static void vaxpy_f16(float* y, float a, const uint16_t* x, int64_t n) {
    constexpr int64_t W = fbatch::size;
    const fbatch av(a);
    int64_t i = 0;
    for (; i + W <= n; i += W) {
      fmadd(av, Isa::load_f16(reinterpret_cast<const uint8_t*>(x + i)),
            fbatch::load_unaligned(y + i))
          .store_unaligned(y + i);
    }
    for (; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
  }

  // ---- element-wise float ops (xsimd batches; bit-identical to the scalar table)
  template <typename Batch, typename Scalar>
  static void map(float* x, int64_t n, Batch batch, Scalar scalar) {
    constexpr int64_t W = fbatch::size;
    int64_t i = 0;
    for (; i + W <= n; i += W) batch(i).store_unaligned(x + i);
    for (; i < n; ++i) x[i] = scalar(i);
  }
  static fbatch load(const float* p) { return fbatch::load_unaligned(p); }
  static void vadd(float* x, const float* y, int64_t n) {
    map(
        x, n, [&](int64_t i) { return load(x + i) + load(y + i); },
        [&](int64_t i) { return x[i] + y[i]; });
  }
  static void vscale_mul(float* x, float s, const float* w, int64_t n) {
    map(
        x, n, [&](int64_t i) { return (load(x + i) * fbatch(s)) * load(w + i); },
        [&](int64_t i) { return (x[i] * s) * w[i]; });
  }
  // kernels/expf.hpp for a batch. The scaling by 2^n rounds once, as ldexp, also for subnormal
  // results: in one instruction where the ISA has one (Isa::scale_pow2), else in two exact
  // steps (2^(n/2), then the rest).
  static fbatch expf(fbatch x) {
    fbatch n;
    const fbatch scaled = expf_scaled(x, n);
    const fbatch out_of_range = xsimd::select(n <= fbatch(0.0f), fbatch(0.0f), fbatch(INFINITY));
    return xsimd::select(xsimd::abs(n) > fbatch(192.0f), out_of_range, scaled);
  }
  // The same for a softmax's shifted scores (x <= 0, or -inf for a masked key), the same bits
  // with four fewer operations: x is clamped at -127, where n = -183 and the result rounds to
  // 0 as ggml_expf's does below it (2^-183 is below the least subnormal, and n < -192 gives 0).
  // (max's operands in this order keep a NaN: the instruction returns the second when either
  // is one.)
  static fbatch expf_nonpositive(fbatch x) {
    fbatch n;
    return expf_scaled(xsimd::max(fbatch(-127.0f), x), n);
  }
  // j * 2^n, n = round(x log2 e), without expf's range check.
  static fbatch expf_scaled(fbatch x, fbatch& n) {
    using ibatch = xsimd::batch<int32_t, typename Isa::arch>;
    const fbatch r(kExpRound);
    n = fmadd(x, fbatch(kLog2e), r) - r;
    const fbatch b = fmadd(-n, fbatch(kLn2Lo), fmadd(-n, fbatch(kLn2Hi), x));
    const fbatch u = b * b;
    const fbatch j = fmadd(fmadd(fmadd(fbatch(kExpC5), b, fbatch(kExpC4)), u,
                                 fmadd(fbatch(kExpC3), b, fbatch(kExpC2))),
                           u, fmadd(fbatch(kExpC1), b, fbatch(1.0f)));
    if constexpr (requires { Isa::scale_pow2(j, n); }) {
      return Isa::scale_pow2(j, n);
    } else {
      const fbatch half = xsimd::floor(n * fbatch(0.5f));  // exact: n is a small integer
      const ibatch n1 = xsimd::to_int(half), n2 = xsimd::to_int(n - half);
      auto pow2 = [](ibatch e) { return xsimd::bitwise_cast<fbatch>((e + ibatch(127)) << 23); };
      return (j * pow2(n1)) * pow2(n2);
    }
  }
  static void vexp_shift(float* x, float shift, int64_t n) {
    map(
        x, n, [&](int64_t i) { return expf(load(x + i) - fbatch(shift)); },
        [&](int64_t i) { return ggml_expf(x[i] - shift); });
  }
  static void vsilu_mul(float* gate, const float* up, int64_t n) {
    map(
        gate, n,
        [&](int64_t i) {
          const fbatch g = load(gate + i);
          return g / (fbatch(1.0f) + expf(fbatch(0.0f) - g)) * load(up + i);
        },
        [&](int64_t i) { return gate[i] / (1.0f + ggml_expf(0.0f - gate[i])) * up[i]; });
  }

  // RoPE with the scalar table's bits: the same fused products, W pairs at a time. Neox
  // rotates (i, i + n_rot/2), so both halves are plain batches against the cosines and sines
  // gathered once; the normal mode rotates neighbours (2i, 2i+1): each lane takes its partner
  // by an in-lane swap and the even and odd formulas are blended.
  static void vrope(float* x, int64_t n_heads, int64_t head_dim, const float* cs, int64_t n_rot,
                    bool neox) {
    constexpr int64_t W = fbatch::size;
    const int64_t half = n_rot / 2;
    alignas(64) float c[512], s[512];  // neox: cos_i, sin_i; normal: each repeated for a pair
    if (half > 256) {  // no model has such rotary sizes; the scalar loop covers them
      table(kernels::Isa::kScalar).vec.rope(x, n_heads, head_dim, cs, n_rot, neox);
      return;
    }
    for (int64_t i = 0; i < half; ++i) {
      if (neox) {
        c[i] = cs[2 * i];
        s[i] = cs[2 * i + 1];
      } else {
        c[2 * i] = c[2 * i + 1] = cs[2 * i];
        s[2 * i] = s[2 * i + 1] = cs[2 * i + 1];
      }
    }
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + h * head_dim;
      int64_t i = 0;
      if (neox) {
        for (; i + W <= half; i += W) {
          const fbatch x0 = load(v + i), x1 = load(v + half + i);
          const fbatch cv = load(c + i), sv = load(s + i);
          fmadd(x0, cv, -(x1 * sv)).store_unaligned(v + i);
          fmadd(x0, sv, x1 * cv).store_unaligned(v + half + i);
        }
      } else {
        for (; 2 * i + W <= n_rot; i += W / 2) {
          const fbatch xv = load(v + 2 * i), cv = load(c + 2 * i), sv = load(s + 2 * i);
          const fbatch sw = swap_pairs(xv);
          const fbatch even = fmadd(xv, cv, -(sw * sv)), odd = fmadd(sw, sv, xv * cv);
          odd_lanes(even, odd).store_unaligned(v + 2 * i);
        }
      }
      for (; i < half; ++i) {
        const int64_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
        const float x0 = v[a], x1 = v[b], cv = cs[2 * i], sv = cs[2 * i + 1];
        v[a] = std::fma(x0, cv, -(x1 * sv));
        v[b] = std::fma(x0, sv, x1 * cv);
      }
    }
  }
  static fbatch swap_pairs(fbatch v) {  // lanes (2i, 2i+1) exchanged
    if constexpr (fbatch::size == 16) {
      return _mm512_permute_ps(v, 0xB1);
    } else {
      return _mm256_permute_ps(v, 0xB1);
    }
  }
  static fbatch odd_lanes(fbatch even, fbatch odd) {  // even lanes of `even`, odd of `odd`
    if constexpr (fbatch::size == 16) {
      return _mm512_mask_blend_ps(0xAAAA, even, odd);
    } else {
      return _mm256_blend_ps(even, odd, 0xAA);
    }
  }

  static void fill(KernelTable& t) {
    using T = TensorType;
    t.vec = {vdot_f32,   vdot_f16,   vaxpy_f32, vaxpy_f16, vadd,
             vscale_mul, vexp_shift, vsilu_mul, vrope};
    t.types[uint32_t(T::F32)].vec_dot = dot_f32;
    t.types[uint32_t(T::F16)] = {dequantize_f16, dot_f16};
    // F16 rows: AVX2 keeps dot_f16 per row (rows_f16 measured 3% slower there on Zen 5, session
    // 60). AVX-512 runs dot_f16 row by row too, against the f16 activations, except on Intel's
    // cores, which split each vcvtph2ps into two uops on the FMA ports and so take rows_f16
    // (session 55). On Zen 5 the f16 activations (half the L1 footprint, half the bytes
    // loaded) read the F16 layer stack 3-7% faster than rows_f16 (session 76). Both forms
    // give dot_f16's bits.
    if constexpr (fbatch::size == 16) {
      t.types[uint32_t(T::F16)].vec_dot_rows = cpu_is_intel() ? rows_f16 : rows_by_dot<dot_f16>;
    }
    t.types[uint32_t(T::BF16)] = {dequantize_bf16, dot_bf16};
    t.types[uint32_t(T::Q4_0)] = {dequantize_q4_0, dot_q4_0};
    t.types[uint32_t(T::Q4_1)] = {dequantize_q4_1, dot_q4_1};
    t.types[uint32_t(T::Q5_0)] = {dequantize_q5_0, dot_q5_0};
    t.types[uint32_t(T::Q5_1)] = {dequantize_q5_1, dot_q5_1};
    t.types[uint32_t(T::IQ4_NL)] = {dequantize_iq4_nl, dot_iq4_nl};
    t.types[uint32_t(T::MXFP4)] = {dequantize_mxfp4, dot_mxfp4};
    t.types[uint32_t(T::Q8_0)] = {dequantize_q8_0, dot_q8_0};
  }
};
