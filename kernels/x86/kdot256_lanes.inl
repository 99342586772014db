// The 256-bit interleaved Q2_K, Q3_K and Q6_K gemvs, whose layouts have a 128-bit lane per row
// (kernels/repack.hpp): two rows in each register, against the activations of
// lane_layout.hpp's prepare_row_lanes. Included after kdot256.inl, inside the same anonymous
// namespace.
//
// With AVX-VNNI a chain is one vpdpbusd a step instead of vpmaddubsw and a 16-bit add: its
// dwords hold sums of 4 products, not words of 2. A chain's sum stays within 16 bits either
// way, so the low word of each dword is that sum (whatever the high word), and vpmaddwd by
// the scale in the low word only (0 in the high) gives the same integers as the AVX2 form.
struct RowLanes256 {
  using K = X86K<IsaTraits>;

  // chain + the products of v (unsigned) and a (signed): in 16-bit pairs, or in dwords.
  static __m256i chain_add(__m256i chain, __m256i v, __m256i a) {
    if constexpr (IsaTraits::kVnni) return IsaTraits::dot_acc(chain, v, a);
    return _mm256_add_epi16(chain, _mm256_maddubs_epi16(v, a));
  }
  // Whether byte e of a dword takes the scale byte (the low byte of a word, or with sign = the
  // high byte): both words, or with AVX-VNNI the low word only.
  static constexpr bool scale_byte(int e, bool high) {
    return IsaTraits::kVnni ? e == (high ? 1 : 0) : e % 2 == (high ? 1 : 0);
  }

  // Row 2h + r's result: the sum of 128-bit lane r of acc[h].
  static void store_rows(const __m256 acc[2], float* out) {
    for (int h = 0; h < 2; ++h) {
      const __m256 pairs = _mm256_hadd_ps(acc[h], acc[h]);
      const __m256 quads = _mm256_hadd_ps(pairs, pairs);
      out[2 * h] = _mm256_cvtss_f32(quads);
      out[2 * h + 1] = _mm_cvtss_f32(_mm256_extractf128_ps(quads, 1));
    }
  }

  // Q2_K gemv over an interleaved group of four rows (kernels/repack.hpp: a 128-bit lane per
  // row), rows 2h and 2h + 1 in each 256-bit half: chain k takes bits 2k, 2k + 1 of the step's
  // qs bytes and meets the prepared activations (lane_layout.hpp's prepare_row_lanes: one
  // 16-byte broadcast for both rows) in vpmaddubsw, summed over the four steps in 16 bits (at
  // most 8 * 3 * 128; 16 * 12 * 127 in a dword with AVX-VNNI, chain_add). vpmaddwd by the
  // lane's scale in both words of its dword (scale_byte) gives the lane's integer; the mins
  // meet the activations' sub-block sums the same way.
  static void rows_q2_k_interleaved(int64_t n, const void* w, size_t, int, const void* act,
                                    float* out) {
    const __m256i three = _mm256_set1_epi8(3), twelve = _mm256_set1_epi8(12),
                  nibble = _mm256_set1_epi8(0x0f);
    // Dword d of row 2h + r's lane (lane r of a half): its scale byte (4 (2h + r) + d of the
    // chain's 16) in both words (scale_byte).
    auto pick = [](int h) {
      alignas(32) int8_t b[32];
      for (int r = 0; r < 2; ++r)
        for (int d = 0; d < 4; ++d)
          for (int e = 0; e < 4; ++e)
            b[16 * r + 4 * d + e] =
                scale_byte(e, false) ? static_cast<int8_t>(4 * (2 * h + r) + d) : -128;
      return K::load32(reinterpret_cast<const uint8_t*>(b));
    };
    const __m256i picks[2] = {pick(0), pick(1)};
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockQ2_K)) {
      prefetch_ahead(g, 4 * sizeof(BlockQ2_K));
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      const __m128 dd = _mm_mul_ps(  // d of rows 0-3, then dmin
          _mm_set1_ps(y[i].d), _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g))));
      const __m128 dm =
          _mm_mul_ps(_mm_set1_ps(y[i].d),
                     _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g + 8))));
      __m256i sums[4], raw[4];  // chain k's sub-block sums, low word of each dword; scale bytes
      for (int k = 0; k < 4; ++k) {
        sums[k] = _mm256_broadcastsi128_si256(_mm_cvtepu16_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(y[i].bsums + 4 * k))));
        raw[k] = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16 + 16 * k)));
      }
      for (int h = 0; h < 2; ++h) {
        // Chains 1 and 3 take their bits unshifted: 4 times the values and dots (still within
        // 16 bits), divided out exactly at the end.
        __m256i chain[4] = {};
        for (int t = 0; t < 4; ++t) {
          const __m256i q = K::load32(g + 80 + 64 * t + 32 * h), q4 = _mm256_srli_epi16(q, 4);
          for (int k = 0; k < 4; ++k) {
            const __m256i a = _mm256_broadcastsi128_si256(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(yq + 64 * t + 16 * k)));
            const __m256i v = _mm256_and_si256(k < 2 ? q : q4, k % 2 == 0 ? three : twelve);
            chain[k] = chain_add(chain[k], v, a);
          }
        }
        __m256i isum[2] = {}, msum = _mm256_setzero_si256();
        for (int k = 0; k < 4; ++k) {
          const __m256i both = _mm256_shuffle_epi8(raw[k], picks[h]);  // byte in both words
          isum[k % 2] = IsaTraits::madd_acc(isum[k % 2], chain[k], _mm256_and_si256(both, nibble));
          msum = IsaTraits::madd_acc(msum, sums[k], _mm256_srli_epi16(both, 4));
        }
        const __m256i rows = _mm256_setr_epi32(2 * h, 2 * h, 2 * h, 2 * h, 2 * h + 1, 2 * h + 1,
                                               2 * h + 1, 2 * h + 1);
        acc[h] = _mm256_fmadd_ps(
            _mm256_cvtepi32_ps(_mm256_add_epi32(isum[0], _mm256_srai_epi32(isum[1], 2))),
            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(dd), rows), acc[h]);
        acc[h] =
            _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum),
                             _mm256_permutevar8x32_ps(_mm256_castps128_ps256(dm), rows), acc[h]);
      }
    }
    store_rows(acc, out);
  }

  // Q3_K gemv over an interleaved group of four rows (kernels/repack.hpp: a 128-bit lane per
  // row), in rows_q2_k_interleaved's form. A value is (2 bits | hmask bit << 2) - 4: chain k
  // takes bits 2k, 2k + 1 of the step's qs bytes and bit 4n + k of its lane's hmask bytes
  // (lane d = 2n + b; a vpermq gives each row's two hmask dwords of the step to both halves,
  // and a shift by dword moves half 1's bits down by 4). The chain's low words start at -4
  // times the sub-block's activation sum, so vpmaddwd by the lane's scale (sign-extended in
  // both words) gives the exact integer of the signed values (a word stays within 8192 +
  // 8 * 7 * 128; the low word of a dword within 8192 + 16 * 7 * 127 with AVX-VNNI).
  static void rows_q3_k_interleaved(int64_t n, const void* w, size_t, int, const void* act,
                                    float* out) {
    const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    const __m256i half1_down = _mm256_setr_epi32(0, 0, 4, 4, 0, 0, 4, 4);
    // Dword d of row 2h + r's lane: its scale byte (4 (2h + r) + d of the chain's 16) in the
    // high byte of both words (scale_byte).
    auto pick = [](int h) {
      alignas(32) int8_t b[32];
      for (int r = 0; r < 2; ++r)
        for (int d = 0; d < 4; ++d)
          for (int e = 0; e < 4; ++e)
            b[16 * r + 4 * d + e] =
                scale_byte(e, true) ? static_cast<int8_t>(4 * (2 * h + r) + d) : -128;
      return K::load32(reinterpret_cast<const uint8_t*>(b));
    };
    const __m256i picks[2] = {pick(0), pick(1)};
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockQ3_K)) {
      prefetch_ahead(g, 4 * sizeof(BlockQ3_K));
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      const __m128 d4 = _mm_mul_ps(
          _mm_set1_ps(y[i].d), _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g))));
      __m128i sc[4];
      KDot256::q3_k_chain_scales(g, sc);
      __m256i start[4];  // chain k's start: -4 times its sub-block sums, in each low word
      for (int k = 0; k < 4; ++k) {
        const __m256i sums = _mm256_broadcastsi128_si256(_mm_cvtepu16_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(y[i].bsums + 4 * k))));
        start[k] = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sums, 2));
      }
      __m256i chains[2][4] = {{start[0], start[1], start[2], start[3]},
                              {start[0], start[1], start[2], start[3]}};
      for (int t = 0; t < 4; ++t) {
        const __m256i step_hm = K::load32(g + 56 + 32 * t);
        const __m256i q[2] = {K::load32(g + 184 + 64 * t), K::load32(g + 216 + 64 * t)};
        // bit k of each byte: chain k's (rows 0, 1 | rows 2, 3)
        const __m256i hm[2] = {
            _mm256_srlv_epi32(_mm256_permute4x64_epi64(step_hm, 0x50), half1_down),
            _mm256_srlv_epi32(_mm256_permute4x64_epi64(step_hm, 0xfa), half1_down)};
        for (int k = 0; k < 4; ++k) {
          const __m256i a = _mm256_broadcastsi128_si256(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(yq + 64 * t + 16 * k)));
          for (int h = 0; h < 2; ++h) {
            const __m256i bits = k == 0 ? q[h] : _mm256_srli_epi16(q[h], 2 * k);
            const __m256i high = k < 2    ? _mm256_slli_epi16(hm[h], 2 - k)
                                 : k == 2 ? hm[h]
                                          : _mm256_srli_epi16(hm[h], 1);
            const __m256i v =
                _mm256_or_si256(_mm256_and_si256(bits, three), _mm256_and_si256(high, four));
            chains[h][k] = chain_add(chains[h][k], v, a);
          }
        }
      }
      for (int h = 0; h < 2; ++h) {
        const __m256i* chain = chains[h];
        __m256i isum = _mm256_setzero_si256();
        for (int k = 0; k < 4; ++k) {
          const __m256i words = _mm256_srai_epi16(
              _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(sc[k]), picks[h]), 8);
          isum = IsaTraits::madd_acc(isum, chain[k], words);
        }
        const __m256i rows = _mm256_setr_epi32(2 * h, 2 * h, 2 * h, 2 * h, 2 * h + 1, 2 * h + 1,
                                               2 * h + 1, 2 * h + 1);
        acc[h] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum),
                            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(d4), rows), acc[h]);
      }
    }
    store_rows(acc, out);
  }

  // Q6_K's values (0..63, unsigned) of chain k at step t of a group's super-block at g, rows
  // 2h and 2h + 1 (kernels/repack.hpp: a 128-bit lane per row, as Q2_K's): the ql nibble
  // (ql chunk k % 2, low nibbles for k < 2) with qh's field k in bits 4-5.
  QINFER_INLINE static __m256i q6_k_value(const uint8_t* g, int t, int h, int k) {
    const __m256i qh = K::load32(g + 72 + 64 * t + 32 * h);
    const __m256i l = K::load32(g + (k % 2 ? 392 : 328) + 128 * t + 32 * h);
    const __m256i nibble = k < 2 ? l : _mm256_srli_epi16(l, 4);
    const __m256i h45 = k == 0   ? _mm256_slli_epi16(qh, 4)
                        : k == 1 ? _mm256_slli_epi16(qh, 2)
                        : k == 2 ? qh
                                 : _mm256_srli_epi16(qh, 2);
    return _mm256_or_si256(_mm256_and_si256(nibble, _mm256_set1_epi8(0x0f)),
                           _mm256_and_si256(h45, _mm256_set1_epi8(0x30)));
  }

  // Q6_K gemv over an interleaved group of four rows, rows 2h and 2h + 1 in each 256-bit half
  // (q6_k_value; vpmaddubsw's pairs stay within 2 * 63 * 127). Chain k starts at -32 times
  // its sub-block's activation sum, so it ends at the exact dot of the signed values (up to
  // 129024 in magnitude: vpmulld by the scales).
  static void rows_q6_k_interleaved(int64_t n, const void* w, size_t, int, const void* act,
                                    float* out) {
    const auto* g = static_cast<const uint8_t*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(act);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < n / kQKK; ++i, g += 4 * sizeof(BlockQ6_K)) {
      prefetch_ahead(g, 4 * sizeof(BlockQ6_K));
      const auto* yq = reinterpret_cast<const uint8_t*>(y[i].qs);
      const __m128 d4 = _mm_mul_ps(
          _mm_set1_ps(y[i].d), _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g))));
      __m256i chains[2][4];
      for (int k = 0; k < 4; ++k) {  // lane d of chain k: sub-block sum 4k + d, times -32
        const __m256i sums = _mm256_broadcastsi128_si256(_mm_cvtepi16_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(y[i].bsums + 4 * k))));
        chains[0][k] = chains[1][k] =
            _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 5));
      }
      for (int t = 0; t < 4; ++t) {
        __m256i a[4];
        for (int k = 0; k < 4; ++k) {
          a[k] = _mm256_broadcastsi128_si256(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(yq + 64 * t + 16 * k)));
        }
        for (int h = 0; h < 2; ++h) {
          // The loads of qh and ql repeat across k; the compiler merges them.
          for (int k = 0; k < 4; ++k)
            chains[h][k] = IsaTraits::dot_acc(chains[h][k], q6_k_value(g, t, h, k), a[k]);
        }
      }
      for (int h = 0; h < 2; ++h) {
        __m256i isum = _mm256_setzero_si256();
        for (int k = 0; k < 4; ++k) {  // row 2h + r's 4 scales of chain k at 8 + 16k + 4 (2h + r)
          const __m256i scale = _mm256_cvtepi8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g + 8 + 16 * k + 8 * h)));
          isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(chains[h][k], scale));
        }
        const __m256i rows = _mm256_setr_epi32(2 * h, 2 * h, 2 * h, 2 * h, 2 * h + 1, 2 * h + 1,
                                               2 * h + 1, 2 * h + 1);
        acc[h] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum),
                            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(d4), rows), acc[h]);
      }
    }
    store_rows(acc, out);
  }

  // The GEMM's in-place decoder of an interleaved Q6_K group (kernels/gemm.hpp): chain k's
  // values at steps t = 0..3, less 32, then a 4 x 4 transpose of dwords in each 128-bit lane
  // (a row): lane d = 2n + b then holds the 16 values at 128n + 32k + 16b of its row, the
  // sub-block 8n + 2k + b whose scale is byte 8 + 16k + 4r + d of the group.
  static void decode_q6_k(const uint8_t* group, int64_t n, int8_t* q, float* scale, float* min) {
    const __m256i off = _mm256_set1_epi8(32);
    const int64_t n_groups = n / 16;
    for (int64_t u = 0; u < n / kQKK; ++u, group += kInterleaveRows * sizeof(BlockQ6_K)) {
      for (int r = 0; r < kInterleaveRows; ++r) {
        uint16_t dh;
        std::memcpy(&dh, group + 2 * r, 2);
        const float d = _cvtsh_ss(dh);
        for (int k = 0; k < 4; ++k) {
          for (int lane = 0; lane < 4; ++lane) {
            const int s = 8 * (lane / 2) + 2 * k + lane % 2;
            const auto sc = static_cast<int8_t>(group[8 + 16 * k + 4 * r + lane]);
            scale[r * n_groups + u * 16 + s] = d * static_cast<float>(sc);
            min[r * n_groups + u * 16 + s] = 0.0f;
          }
        }
      }
      for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < 4; ++k) {  // chain by chain: 16 vectors at once would spill
          __m256i v[4];                // step t, less 32
          for (int t = 0; t < 4; ++t) v[t] = _mm256_sub_epi8(q6_k_value(group, t, h, k), off);
          const __m256i a = _mm256_unpacklo_epi32(v[0], v[1]),
                        b = _mm256_unpackhi_epi32(v[0], v[1]),
                        c = _mm256_unpacklo_epi32(v[2], v[3]),
                        e = _mm256_unpackhi_epi32(v[2], v[3]);
          const __m256i lanes[4] = {_mm256_unpacklo_epi64(a, c), _mm256_unpackhi_epi64(a, c),
                                    _mm256_unpacklo_epi64(b, e), _mm256_unpackhi_epi64(b, e)};
          for (int half = 0; half < 2; ++half) {  // lanes 2n, 2n + 1: 32 values at 128n + 32k
            const __m256i x = lanes[2 * half], z = lanes[2 * half + 1];
            const int64_t at = u * kQKK + 128 * half + 32 * k;
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + (2 * h) * n + at),
                                _mm256_permute2x128_si256(x, z, 0x20));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + (2 * h + 1) * n + at),
                                _mm256_permute2x128_si256(x, z, 0x31));
          }
        }
      }
    }
  }

  static void fill(KernelTable& t) {
    using T = TensorType;
    t.types[uint32_t(T::Q2_K)].vec_dot_interleaved = rows_in_groups<rows_q2_k_interleaved>;
    t.types[uint32_t(T::Q2_K)].prepare_act_interleaved = prepare_row_lanes;
    t.types[uint32_t(T::Q3_K)].vec_dot_interleaved = rows_in_groups<rows_q3_k_interleaved>;
    t.types[uint32_t(T::Q3_K)].prepare_act_interleaved = prepare_row_lanes;
    t.types[uint32_t(T::Q6_K)].vec_dot_interleaved = rows_in_groups<rows_q6_k_interleaved>;
    t.types[uint32_t(T::Q6_K)].prepare_act_interleaved = prepare_row_lanes;
    t.gemm_decode_interleaved[uint32_t(T::Q6_K)] = decode_q6_k;  // the AVX-512 tables' own
  }
};
