// AVX-512 super-block dots over 4 x 64 unsigned bytes with integer scales (Grid512::Super):
// Q2_K..Q6_K (over X86K's unpacked form), IQ4_XS and the grid types; TQ1_0 and TQ2_0.
// - word_dot (K types, IQ4_XS, the IQ2/IQ3 grid types; with VBMI only IQ2_S of them, the
//   others take avx512vbmi_gridlanes.inl's lane dot): vpdpbusd sums of four (vpmaddubsw
//   pairs for IQ4_XS), then vpdpwssd by the scale of each sum's sub-block, so a column's block
//   sum is one integer vector, whose lanes are ggml's (docs/kernels.md): these dots equal
//   llama.cpp's bit for bit;
// - lane_dot (TQ1_0, one scale a block): four vpdpbusd into one accumulator; with VBMI in
//   a lane layout (lane_layout.hpp), otherwise in element order;
// - iq1_dot (IQ1_S, IQ1_M): word_dot's form, with the delta terms summed apart as ggml does;
// - tq2_dot, tq2_rows (TQ2_0): four vpdpbusd against lane-ordered activations less their lane
//   sums, 16 float lanes a row (not ggml's order).
// One FMA per block and column; scalar code only where ggml's own sum is scalar (the Q5_K
// mins, the IQ1_S delta).
//
// Included after avx512_grid.inl by avx512_kquants.inl.

struct KDot512 : Grid512 {
  using K = X86K<IsaTraits>;
  using Grid512::load;

  // A super-block ready for the dot (Grid512::Super): 4 x 64 unsigned values (value + offset),
  // in element order; integer scale and min per sub-block of 16;
  // value = d*scale*(q - offset) - dmin*min, negated where the sign mask is set.
  template <typename Block>
  QINFER_INLINE static void load(const Block& b, Super& s) {
    typename K::Unpacked u;
    K::unpack(b, u);
    for (int p = 0; p < 4; ++p)
      s.q[p] = _mm512_inserti64x4(_mm512_castsi256_si512(u.q[2 * p]), u.q[2 * p + 1], 1);
    __m128i scale, min;
    K::scale_bytes(b, scale, min);
    s.scale = _mm512_cvtepi8_epi32(scale);
    s.min = _mm512_cvtepi8_epi32(min);
    s.d = u.d;
    s.dmin = u.dmin;
    s.offset = u.offset;
  }

  // IQ4_XS as ggml sums it: |value| against the activations negated where the value is
  // negative (with -128 staying -128, as vpsignb leaves it); 6-bit scales minus 32 per 32.
#if defined(__AVX512VBMI__)
  // With VBMI: vpermb copies each 16 code bytes twice, vpmultishiftqb moves the low or high
  // nibbles down, and vpermb looks up |value| four times over (it reads six index bits); the
  // codes below 8 are the negative values — three permutes per 64 values.
  static void iq4_codes(const BlockIQ4_XS& b, Super& s) {
    static constexpr Bytes64 kDup = perm_bytes([](int i) { return 16 * (i / 32) + i % 16; });
    static constexpr Bytes64 kShifts =
        perm_bytes([](int i) { return 8 * (i % 8) + 4 * ((i / 16) % 2); });
    static const Bytes64 kAbs = perm_bytes([](int p) {
      return kKvaluesIq4nl[p % 16] < 0 ? -kKvaluesIq4nl[p % 16] : kKvaluesIq4nl[p % 16];
    });
    const __m512i dup = kDup.load(), shifts = kShifts.load(), values = kAbs.load();
    for (int p = 0; p < 4; ++p) {
      const __m512i q = _mm512_castsi256_si512(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * p)));
      const __m512i codes = _mm512_multishift_epi64_epi8(shifts, _mm512_permutexvar_epi8(dup, q));
      s.q[p] = _mm512_permutexvar_epi8(codes, values);
      s.neg[p] = _mm512_testn_epi8_mask(codes, _mm512_set1_epi8(8));
    }
  }
#else
  static void iq4_codes(const BlockIQ4_XS& b, Super& s) {
    static const ShiftedTable table(kKvaluesIq4nl);
    for (int p = 0; p < 4; ++p) {
      const __m512i u = table.lookup(nibbles2(b.qs + 32 * p, b.qs + 32 * p + 16));  // value + 128
      s.neg[p] = _knot_mask64(_mm512_movepi8_mask(u));
      s.q[p] = _mm512_abs_epi8(_mm512_xor_si512(u, _mm512_set1_epi8(static_cast<char>(0x80))));
    }
  }
#endif
  QINFER_INLINE static void load(const BlockIQ4_XS& b, Super& s) {
    iq4_codes(b, s);
    s.scale = _mm512_cvtepi8_epi32(K::iq4_xs_scale_bytes(b));
    s.d = _cvtsh_ss(b.d);
  }

  using MinSum = K::MinSum;

  // Scales as 16-bit words for vpdpwssd after vpmaddubsw: w[g] word i is the scale of the
  // sub-block holding elements 64g + 2i and 64g + 2i + 1, the pair summed into word i, read
  // from word Grid512::scale_word<Block>(sub-block) of Super::scale.
  template <typename Block>
  struct ScaleWords {
    alignas(64) uint16_t idx[4][32] = {};
    constexpr ScaleWords() {
      for (int g = 0; g < 4; ++g) {
        for (int i = 0; i < 32; ++i)
          idx[g][i] = static_cast<uint16_t>(scale_word<Block>(4 * g + i / 8));
      }
    }
  };
  template <typename Block>
  static void scale_words(__m512i scale, __m512i* w) {
    static constexpr ScaleWords<Block> kIdx;
    for (int g = 0; g < 4; ++g)
      w[g] = _mm512_permutexvar_epi16(_mm512_load_si512(kIdx.idx[g]), scale);
  }

  // The types whose sums of four products fit in 16 bits (values below 64, activations down
  // to -128; all but IQ4_XS): word_dot sums each 64 values by vpdpbusd, four products a dword
  // (less the offset's four, Q3_K and Q6_K), then pairs two such sums into the words of one
  // vpdpwssd, so a block needs two scale-word vectors instead of four. Dword i of the pair
  // (g, g + 1) holds elements 4i..4i+3 of both 64s: the same ggml lane (i % 8) as before, so
  // the block sums do not change.
  template <typename Block>
  static constexpr bool kPack = !std::is_same_v<Block, BlockIQ4_XS>;
  template <typename Block>
  struct PackedScaleWords {
    alignas(64) uint16_t idx[2][32] = {};
    constexpr PackedScaleWords() {
      for (int h = 0; h < 2; ++h) {
        for (int w = 0; w < 32; ++w)
          idx[h][w] = static_cast<uint16_t>(scale_word<Block>(4 * (2 * h + w % 2) + w / 8));
      }
    }
  };
  template <typename Block>
  static void packed_scale_words(__m512i scale, __m512i* w) {
    static constexpr PackedScaleWords<Block> kIdx;
    for (int h = 0; h < 2; ++h)
      w[h] = _mm512_permutexvar_epi16(_mm512_load_si512(kIdx.idx[h]), scale);
  }
  // Word 2i: dword i of a, word 2i + 1: dword i of b (each below 2^15 in magnitude).
  static __m512i pair_words(__m512i a, __m512i b) {
    static constexpr struct Idx {
      alignas(64) uint16_t w[32] = {};
      constexpr Idx() {
        for (int i = 0; i < 32; ++i) w[i] = static_cast<uint16_t>(i % 2 == 0 ? i : 31 + i);
      }
    } kIdx;
    return _mm512_permutex2var_epi16(a, _mm512_load_si512(kIdx.w), b);
  }
  // A block's four vpdpbusd sums times their scales (packed_scale_words), summed.
  static __m512i scale_quads(const __m512i* quads, const __m512i* sw) {
    const __m512i low =
        _mm512_dpwssd_epi32(_mm512_setzero_si512(), pair_words(quads[0], quads[1]), sw[0]);
    return _mm512_dpwssd_epi32(low, pair_words(quads[2], quads[3]), sw[1]);
  }

  // A block sum's 16 lanes (lane i: bytes 4i..4i+3 of each 64) folded into ggml's 8.
  static __m256i ggml_lanes(__m512i sum) {
    return _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
  }

  // The dot of the K types, IQ4_XS and the IQ2/IQ3 grid types, in ggml's AVX2 order (its
  // vec_dot_*_q8_K), so that the sums are llama.cpp's bit for bit: per 64 values vpdpbusd
  // (kPack; Q3_K and Q6_K less the offset's products) or vpmaddubsw (IQ4_XS), then vpdpwssd
  // by the scale words, so each column's super-block sum is one integer vector. The
  // values are unsigned (|value| for the signed types) and below 128, so a pair's 16-bit sum
  // cannot saturate (nor, below 64, a sum of four). Its 16 lanes fold
  // into ggml's 8 (lane j: the elements 4j..4j+3 of every 32), which one FMA adds to an 8-lane
  // accumulator. The min terms follow each type's own ggml kernel (MinSum).
  // IQ2_S with VBMI loads two blocks a step (kPairs, load_pair); each block's sum and its
  // place in the order stay as they were.
  template <typename Block>
  static void word_dot(int64_t n, const void* w, const void* act, size_t stride, int nc,
                       float* out) {
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const Block*>(w);
      Super b;
      __m512i sw[4];
      __m256 acc[NC];
      MinSum mins[NC];
      for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
      auto block = [&](int64_t i, const Super& s) {
        if constexpr (kPack<Block>) {
          packed_scale_words<Block>(s.scale, sw);
        } else {
          scale_words<Block>(s.scale, sw);
        }
        const __m512i offset = _mm512_set1_epi8(static_cast<char>(s.offset));
        const __m256i min =
            K::kHasMin<Block> ? _mm512_cvtepi32_epi16(s.min) : _mm256_setzero_si256();
        for (int c = 0; c < NC; ++c) {
          const auto* y =
              reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * stride) + i;
          const auto* yq = reinterpret_cast<const uint8_t*>(y->qs);
          __m512i sum = _mm512_setzero_si512(), quads[4];
          for (int g = 0; g < 4; ++g) {
            __m512i a = _mm512_loadu_si512(yq + 64 * g);
            if constexpr (K::kSigned<Block>)
              a = _mm512_mask_sub_epi8(a, s.neg[g], _mm512_setzero_si512(), a);
            if constexpr (kPack<Block>) {
              quads[g] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), s.q[g], a);
              if constexpr (K::kHasOffset<Block>) {
                quads[g] = _mm512_sub_epi32(quads[g],
                                            _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset, a));
              }
            } else {  // IQ4_XS: no offset
              sum = _mm512_dpwssd_epi32(sum, _mm512_maddubs_epi16(s.q[g], a), sw[g]);
            }
          }
          if constexpr (kPack<Block>) sum = scale_quads(quads, sw);
          if constexpr (K::kHasMin<Block>) {
            const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y->bsums));
            mins[c].template add<Block>(-y->d * s.dmin, _mm256_madd_epi16(min, bsums), acc[c]);
          }
          acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(y->d * s.d), _mm256_cvtepi32_ps(ggml_lanes(sum)),
                                   acc[c]);
        }
      };
      const int64_t nb = n / kQKK;
      int64_t i = 0;
      if constexpr (kPairs<Block>) {
        for (Super b2; i + 1 < nb; i += 2) {
          prefetch_ahead(x + i, 2 * sizeof(Block));
          load_pair(x[i], x[i + 1], b, b2);
          block(i, b);
          block(i + 1, b2);
        }
      }
      for (; i < nb; ++i) {
        prefetch_ahead(x + i, sizeof(Block));
        load(x[i], b);
        block(i, b);
      }
      for (int c = 0; c < NC; ++c) out[c] = K::hsum_ps(acc[c]) + mins[c].total();
    });
  }

  // IQ1_S and IQ1_M in ggml's order: the grid part (|g| against the activations negated
  // where g < 0, as vpsignb) and the delta part summed apart, each as ggml's kernel does —
  // IQ1_S's delta as one integer per block from the 16-bit block sums, IQ1_M's in 8 lanes of
  // its own; both scaled by 1/8 at the end.
  template <typename Block>
  static void iq1_dot(int64_t n, const void* w, const void* act, size_t stride, int nc,
                      float* out) {
    constexpr bool kM = std::is_same_v<Block, BlockIQ1_M>;
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const Block*>(w);
      Iq1 b;
      __m512i sw[2];
      __m256 acc[NC], acc_delta[NC];
      float delta[NC];
      for (int c = 0; c < NC; ++c) acc[c] = acc_delta[c] = _mm256_setzero_ps(), delta[c] = 0.0f;
      const __m512i ones = _mm512_set1_epi8(1);
      for (int64_t i = 0; i < n / kQKK; ++i) {
        load_iq1(x[i], b);
        packed_scale_words<Block>(b.scale, sw);
        for (int c = 0; c < NC; ++c) {
          const auto* y =
              reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * stride) + i;
          const auto* yq = reinterpret_cast<const uint8_t*>(y->qs);
          __m512i quads[4], delta_quads[4];
          for (int g = 0; g < 4; ++g) {
            const __m512i a = _mm512_loadu_si512(yq + 64 * g);
            const __m512i signed_a = _mm512_mask_sub_epi8(a, b.neg[g], _mm512_setzero_si512(), a);
            quads[g] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), b.q[g], signed_a);
            if constexpr (kM) {
              const __m512i delta_a =
                  _mm512_mask_sub_epi8(a, b.minus[g], _mm512_setzero_si512(), a);
              delta_quads[g] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, delta_a);
            }
          }
          const __m512i sum = scale_quads(quads, sw);
          const float d = y->d * b.d;
          acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(ggml_lanes(sum)), acc[c]);
          if constexpr (kM) {
            const __m512i sum_delta = scale_quads(delta_quads, sw);
            acc_delta[c] = _mm256_fmadd_ps(_mm256_set1_ps(d),
                                           _mm256_cvtepi32_ps(ggml_lanes(sum_delta)), acc_delta[c]);
          } else {
            const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y->bsums));
            delta[c] = std::fma(
                d, static_cast<float>(K::hsum_i32(_mm256_madd_epi16(b.delta_words, bsums))),
                delta[c]);
          }
        }
      }
      for (int c = 0; c < NC; ++c) {
        out[c] = std::fma(0.125f, kM ? K::hsum_ps(acc_delta[c]) : delta[c], K::hsum_ps(acc[c]));
      }
    });
  }

  // The dot of TQ1_0, in its lane layout (kLanes: load_lanes, VBMI) or in element order. With
  // one scale per block, the 16 per-sub-block sums need not be separated: the four chunks'
  // vpdpbusd go into one accumulator, which starts from minus the activations' sums (the
  // trits' offset), so a block costs one conversion and one FMA per column.
  template <typename Block, bool kLanes>  // Block: TQ1_0 (load_lanes exists only with VBMI)
  static void lane_dot(int64_t n, const void* w, const void* act, size_t stride, int nc,
                       float* out) {
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const Block*>(w);
      Super b;
      __m512 acc[NC];
      for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
      for (int64_t i = 0; i < n / kQKK; ++i) {
        if constexpr (kLanes) {
          load_lanes(x[i], b);
        } else {
          load(x[i], b);
        }
        for (int c = 0; c < NC; ++c) {
          const auto* y =
              reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * stride) + i;
          const auto* yq = reinterpret_cast<const uint8_t*>(y->qs);
          // trits 0..2 with offset 1: start from minus the activations' sums
          __m512i sum = _mm512_sub_epi32(_mm512_setzero_si512(),
                                         _mm512_cvtepi16_epi32(_mm256_loadu_si256(
                                             reinterpret_cast<const __m256i*>(y->bsums))));
          for (int g = 0; g < 4; ++g)
            sum = _mm512_dpbusd_epi32(sum, b.q[g], _mm512_loadu_si512(yq + 64 * g));
          acc[c] = _mm512_fmadd_ps(_mm512_set1_ps(y->d * b.d), _mm512_cvtepi32_ps(sum), acc[c]);
        }
      }
      for (int c = 0; c < NC; ++c) out[c] = _mm512_reduce_add_ps(acc[c]);
    });
  }
  // TQ2_0 in lane order (it left ggml's, docs/kernels.md): both 32-byte halves of the codes
  // are shifted at once, so field l holds elements 32l + m (bytes m < 32) and 128 + 32l + m
  // (bytes 32 + m); the activations are prepared in that order with lane sums
  // (tq2_lane_from), so a block's 16 lanes less those sums are its exact integer dot with
  // values c - 1. Each row and column keeps 16 float lanes (one FMA a block), reduced once
  // at the end. A group of rows shares each activation load; a row's bits are the same alone,
  // in a group, or beside other columns.
  static constexpr int tq2_lane_from(int p) { return 128 * (p % 64 / 32) + 32 * (p / 64) + p % 32; }
  template <int NR, int NC>
  static void tq2_dots(int64_t n, const uint8_t* w, size_t row_bytes, const void* act,
                       size_t stride, float* out) {
    const __m512i three = _mm512_set1_epi8(3);
    __m512 acc[NR][NC];
    for (auto& row : acc)
      for (__m512& a : row) a = _mm512_setzero_ps();
    // A group of rows is NR short streams, which the hardware prefetcher follows too late:
    // each step fetches a later group's bytes (they follow in a matmul) at the pace it reads
    // its own (group_ahead), as rows_chain does. One row alone is one stream, left to the
    // hardware.
    constexpr size_t kStep = NR * sizeof(BlockTQ2_0);
    const char* next = group_ahead(w, NR * row_bytes);
    for (int64_t i = 0; i < n / kQKK; ++i) {
      if constexpr (NR > 1) {
        for (size_t b = 0; b < kStep; b += 64)
          __builtin_prefetch(next + i * kStep + b, 0, IsaTraits::kPrefetchLocality);
      }
      const BlockQ8_K* y[NC];
      __m512i a[NC][4], lane_sums[NC];
      for (int c = 0; c < NC; ++c) {
        y[c] =
            reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * stride) + i;
        for (int l = 0; l < 4; ++l) a[c][l] = _mm512_loadu_si512(y[c]->qs + 64 * l);
        lane_sums[c] = _mm512_cvtepi16_epi32(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[c]->bsums)));
      }
      for (int r = 0; r < NR; ++r) {
        const auto* x = reinterpret_cast<const BlockTQ2_0*>(w + r * row_bytes) + i;
        const __m512i codes = load_once(x->qs);
        const float d = _cvtsh_ss(x->d);
        __m512i sum[NC];
        for (int c = 0; c < NC; ++c) sum[c] = _mm512_setzero_si512();
        for (int l = 0; l < 4; ++l) {
          const __m512i q = _mm512_and_si512(_mm512_srli_epi16(codes, 2 * l), three);
          for (int c = 0; c < NC; ++c) sum[c] = _mm512_dpbusd_epi32(sum[c], q, a[c][l]);
        }
        for (int c = 0; c < NC; ++c) {
          const __m512 lanes = _mm512_cvtepi32_ps(_mm512_sub_epi32(sum[c], lane_sums[c]));
          acc[r][c] = _mm512_fmadd_ps(lanes, _mm512_set1_ps(y[c]->d * d), acc[r][c]);
        }
      }
    }
    for (int r = 0; r < NR; ++r)
      for (int c = 0; c < NC; ++c) out[r * NC + c] = _mm512_reduce_add_ps(acc[r][c]);
  }
  static void tq2_dot(int64_t n, const void* w, const void* act, size_t stride, int nc,
                      float* out) {
    by_cols(nc, [&]<int NC>() {
      tq2_dots<1, NC>(n, static_cast<const uint8_t*>(w), 0, act, stride, out);
    });
  }
  static void tq2_rows(int64_t n, const void* w, size_t row_bytes, int n_rows, const void* act,
                       float* out) {
    const auto* wr = static_cast<const uint8_t*>(w);
    if (n_rows == kMaxDotRows) return tq2_dots<kMaxDotRows, 1>(n, wr, row_bytes, act, 0, out);
    for (int r = 0; r < n_rows; ++r) tq2_dots<1, 1>(n, wr + r * row_bytes, 0, act, 0, out + r);
  }

  // A layout's prepare function (matmul shares prepared activations between types whose
  // prepare_act is the same function).
  template <int (*kFrom)(int), bool kLaneSums>
  static void prepare_lanes(void* act, int64_t n) {
    static constexpr LaneLayout kLayout = [] {
      LaneLayout l{};
      for (int p = 0; p < 256; ++p) l.from[p] = static_cast<uint8_t>(kFrom(p));
      l.lane_sums = kLaneSums;
      return l;
    }();
    apply_lane_layout(kLayout, act, n);
  }

  static void fill(KernelTable& t) {
    using T = TensorType;
    set_dot<word_dot<BlockQ2_K>>(t, T::Q2_K);
    set_dot<word_dot<BlockQ3_K>>(t, T::Q3_K);
    set_dot<word_dot<BlockQ4_K>>(t, T::Q4_K);
    set_dot<word_dot<BlockQ5_K>>(t, T::Q5_K);
    set_dot<word_dot<BlockQ6_K>>(t, T::Q6_K);
    t.types[uint32_t(T::TQ2_0)].vec_dot = tq2_dot;
    t.types[uint32_t(T::TQ2_0)].vec_dot_rows = rows_in_groups<tq2_rows>;
    t.types[uint32_t(T::TQ2_0)].prepare_act = prepare_lanes<tq2_lane_from, true>;
    fill_grid(t);
  }
  // The types whose kernels differ when compiled with VBMI (avx512vbmi_kquants.cpp calls this).
  static void fill_grid(KernelTable& t) {
    using T = TensorType;
#if defined(__AVX512VBMI__)
    set_dot<lane_dot<BlockTQ1_0, true>>(t, T::TQ1_0);
    t.types[uint32_t(T::TQ1_0)].prepare_act = prepare_lanes<tq1_lane_from, true>;
#else
    set_dot<lane_dot<BlockTQ1_0, false>>(t, T::TQ1_0);
#endif
#if !defined(__AVX512VBMI__)  // with VBMI in lane layouts (avx512vbmi_gridlanes.inl)
    set_dot<word_dot<BlockIQ2_XXS>>(t, T::IQ2_XXS);
    set_dot<word_dot<BlockIQ2_XS>>(t, T::IQ2_XS);
    set_dot<word_dot<BlockIQ3_XXS>>(t, T::IQ3_XXS);
    set_dot<word_dot<BlockIQ3_S>>(t, T::IQ3_S);
#endif
    set_dot<word_dot<BlockIQ2_S>>(t, T::IQ2_S);  // its loader differs with VBMI
    set_dot<iq1_dot<BlockIQ1_S>>(t, T::IQ1_S);
    set_dot<iq1_dot<BlockIQ1_M>>(t, T::IQ1_M);
    set_dot<word_dot<BlockIQ4_XS>>(t, T::IQ4_XS);  // iq4_codes
  }
};
