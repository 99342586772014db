// IQ2_XXS, IQ2_XS, IQ3_XXS and IQ3_S with VBMI in lane layouts (lane_layout.hpp; decision
// record: docs/kernels.md, "Grid lane layouts with VBMI"). The rows' level codes are looked up
// as Grid512's loaders look them up, but expanded where they sit instead of into element
// order, so that each 32-bit lane of a vpdpbusd over the four outputs holds values of one
// sub-scale. The activations are permuted to match once per matmul; a block then costs four
// vpdpbusd, one vpmulld by the lanes' scales, one conversion and one FMA per column (ggml's
// order is left: the fidelity rule allows it).
//
// Included by avx512vbmi_kquants.cpp inside its anonymous namespace, after avx512_kquants.inl.

struct GridLanes : Grid512 {
  // IQ3 (rows of 4 values): output k, byte b of qword Q holds row 4(k%2) + b/2 of sub-block Q,
  // value 2(k/2) + b%2, so lanes 2Q and 2Q + 1 hold sub-block Q alone.
  static constexpr int element(int k, int b) {
    return 4 * (4 * (k % 2) + b / 2) + 2 * (k / 2) + b % 2;
  }
  static constexpr int lane_from(int p) { return 32 * (p / 8 % 8) + element(p / 64, p % 8); }

  // lo, hi: row r's codes of values 0-1 and 2-3 at byte r (Grid512's lookups); signs: the
  // sign bit of value e of sub-block Q at bit e of qword Q.
  template <int N>
  QINFER_INLINE static void expand(__m512i lo, __m512i hi, const GridCodes<N>& c, __m512i signs,
                                   Super& s) {
    static constexpr uint64_t kShifts[2] = {
        Vbmi::per_byte([](int b) { return 8 * (b / 2) + 3 * (b % 2); }),
        Vbmi::per_byte([](int b) { return 32 + 8 * (b / 2) + 3 * (b % 2); })};
    static constexpr Vbmi::Controls kSignBits([](int k, int i) { return element(k, i % 8); });
    for (int k = 0; k < 4; ++k) {
      s.q[k] = Vbmi::values(k < 2 ? lo : hi, kShifts[k % 2], c);
      s.neg[k] = _mm512_bitshuffle_epi64_mask(signs, kSignBits[k]);
    }
  }
  // Lane scales 2s + 1: byte 0 of lane L takes the 8 bits at shift(L) of its qword of x
  // (vpmultishiftqb), and a masked vpermb maps their low 4 to 2s + 1, zeroing the lane's other
  // bytes.
  template <typename F>
  static constexpr Bytes64 lane_shifts(F shift) {
    return perm_bytes([shift](int p) { return p % 4 == 0 ? shift(p / 4) : 0; });
  }
  static __m512i odd_scales(const Bytes64& shifts, __m512i x) {
    static constexpr Bytes64 kOdd = perm_bytes([](int e) { return 2 * (e % 16) + 1; });
    return _mm512_maskz_permutexvar_epi8(
        0x1111111111111111ull, _mm512_multishift_epi64_epi8(shifts.load(), x), kOdd.load());
  }

  // IQ2_XXS: qword Q holds rows 4Q..4Q+3 (four grid bytes, then the signs and the scale).
  // Output k, byte b of a qword: row 2(k%2) + b/4 of them, value 4(k/2) + b%4 of that row.
  static constexpr int iq2xxs_element(int k, int b) {
    return 8 * (2 * (k % 2) + b / 4) + 4 * (k / 2) + b % 4;
  }
  static constexpr int iq2xxs_lane_from(int p) {
    return 32 * (p / 8 % 8) + iq2xxs_element(p / 64, p % 8);
  }
  QINFER_INLINE static void load_lanes(const BlockIQ2_XXS& b, Super& s) {
    const __m512i raw = _mm512_loadu_si512(b.qs);
    const __m512i codes[2] = {Vbmi::lookup256(kIq2xxsCodes.code_lo, raw),
                              Vbmi::lookup256(kIq2xxsCodes.code_hi, raw)};
    static constexpr uint64_t kShifts[2] = {
        Vbmi::per_byte([](int b) { return 8 * (b / 4) + 2 * (b % 4); }),
        Vbmi::per_byte([](int b) { return 16 + 8 * (b / 4) + 2 * (b % 4); })};
    for (int k = 0; k < 4; ++k) s.q[k] = Vbmi::values(codes[k / 2], kShifts[k % 2], kIq2xxsCodes);
    // row t's sign field (bits 32 + 7t of qword Q) to byte t: value e's bit is 8 * row + e%8
    static constexpr Vbmi::Controls kSignBits(
        [](int k, int i) { return iq2xxs_element(k, i % 8); });
    const __m512i signs = Vbmi::sign_bytes(Vbmi::fields(0x352e2720, raw));
    for (int k = 0; k < 4; ++k) s.neg[k] = _mm512_bitshuffle_epi64_mask(signs, kSignBits[k]);
    static constexpr Bytes64 kScale = lane_shifts([](int) { return 60; });
    s.scale = odd_scales(kScale, raw);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }

  // IQ2_XS (IQ2_S too would fit, but its element-order loader that takes two blocks at once,
  // sharing each lookup of its 1024-row grid, measured 1.45x this one): the 16-bit codes of
  // rows 4Q..4Q+3 in qword Q, and the rows' sign bytes at
  // bytes 0, 2, 4, 6 of qword Q of `signs`. Sub-blocks of 16 (two rows) have their own
  // scales, so output k, byte b of a qword is row 2(b/4) + k/2 of its four, value
  // 4(k%2) + b%4: lane 2Q holds sub-block 2Q, lane 2Q + 1 sub-block 2Q + 1.
  static constexpr int iq2w_element(int k, int b) {
    return 8 * (2 * (b / 4) + k / 2) + 4 * (k % 2) + b % 4;
  }
  static constexpr int iq2w_lane_from(int p) {
    return 32 * (p / 8 % 8) + iq2w_element(p / 64, p % 8);
  }
  template <int N>
  QINFER_INLINE static void iq2w_lanes(__m512i codes, __m512i signs, const GridCodes<N>& c,
                                       const uint8_t* scales, Super& s) {
    // value v of row r of a qword: code bits 16r + 2v; its sign: bit 16r + v of the qword
    static constexpr Vbmi::Controls kSignBits([](int k, int i) {
      const int e = iq2w_element(k, i % 8);
      return 16 * (e / 8) + e % 8;
    });
    for (int k = 0; k < 4; ++k) {
      const uint64_t shifts = Vbmi::per_byte([k](int b) {
        const int e = iq2w_element(k, b);
        return 16 * (e / 8) + 2 * (e % 8);
      });
      s.q[k] = Vbmi::values(codes, shifts, c);
      s.neg[k] = _mm512_bitshuffle_epi64_mask(signs, kSignBits[k]);
    }
    static constexpr Bytes64 kScale = lane_shifts([](int lane) { return 4 * lane; });
    s.scale = odd_scales(kScale, _mm512_set1_epi64(static_cast<long long>(load64(scales))));
  }
  QINFER_INLINE static void load_lanes(const BlockIQ2_XS& b, Super& s) {
    const __m512i raw = _mm512_loadu_si512(b.qs);  // 9-bit row, 7 sign bits (not looked up)
    iq2w_lanes(Iq2Codes::lookup(kIq2xsCodes, raw), Vbmi::sign_bytes(_mm512_srli_epi16(raw, 9)),
               kIq2xsCodes, b.scales, s);
    s.d = _cvtsh_ss(b.d) * 0.125f;
  }

  QINFER_INLINE static void load_lanes(const BlockIQ3_XXS& b, Super& s) {
    const __m512i idx = _mm512_loadu_si512(b.qs);
    // qword Q: sub-block Q's word of four 7-bit sign fields and a 4-bit scale
    const __m512i words =
        _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 64)));
    // (qinfer::'s grid codes: pack.hpp, also in this unit, has nibble codes of the same names)
    expand(Vbmi::lookup256(qinfer::kIq3xxsCodes.code_lo, idx),
           Vbmi::lookup256(qinfer::kIq3xxsCodes.code_hi, idx), qinfer::kIq3xxsCodes,
           Vbmi::sign_bytes(Vbmi::fields(0x150e0700, words)), s);
    static constexpr Bytes64 kScale = lane_shifts([](int) { return 28; });
    s.scale = odd_scales(kScale, words);
    s.d = _cvtsh_ss(b.d) * 0.25f;
  }
  QINFER_INLINE static void load_lanes(const BlockIQ3_S& b, Super& s) {
    // row r: qs[r] plus bit r%8 of qh[r/8] as bit 8
    const __m512i qs = _mm512_loadu_si512(b.qs);
    const __mmask64 high = mask_at(b.qh);
    auto lookup512 = [&](const uint8_t* t) {
      return _mm512_mask_blend_epi8(high, Vbmi::lookup256(t, qs), Vbmi::lookup256(t + 256, qs));
    };
    expand(lookup512(qinfer::kIq3sCodes.code_lo), lookup512(qinfer::kIq3sCodes.code_hi),
           qinfer::kIq3sCodes,
           _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.signs))), s);
    uint32_t sc;  // nibble Q: sub-block Q
    std::memcpy(&sc, b.scales, 4);
    static constexpr Bytes64 kScale = lane_shifts([](int lane) { return 4 * (lane / 2); });
    s.scale = odd_scales(kScale, _mm512_set1_epi64(sc));
    s.d = _cvtsh_ss(b.d);
  }

  template <typename Block>
  static void dot(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out) {
    by_cols(nc, [&]<int NC>() {
      const auto* x = static_cast<const Block*>(w);
      Super b;
      __m512 acc[NC];
      for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
      for (int64_t i = 0; i < n / kQKK; ++i) {
        prefetch_ahead(x + i, sizeof(Block));
        load_lanes(x[i], b);
        for (int c = 0; c < NC; ++c) {
          const auto* y =
              reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * stride) + i;
          const auto* yq = reinterpret_cast<const uint8_t*>(y->qs);
          __m512i sum = _mm512_setzero_si512();
          for (int g = 0; g < 4; ++g) {
            const __m512i a = _mm512_loadu_si512(yq + 64 * g);
            sum = _mm512_dpbusd_epi32(sum, b.q[g],
                                      _mm512_mask_sub_epi8(a, b.neg[g], _mm512_setzero_si512(), a));
          }
          sum = _mm512_mullo_epi32(sum, b.scale);
          acc[c] = _mm512_fmadd_ps(_mm512_set1_ps(y->d * b.d), _mm512_cvtepi32_ps(sum), acc[c]);
        }
      }
      for (int c = 0; c < NC; ++c) out[c] = _mm512_reduce_add_ps(acc[c]);
    });
  }

  template <typename Block, int (*kFrom)(int)>
  static void set_lanes(KernelTable& t, TensorType type) {
    set_dot<dot<Block>>(t, type);
    t.types[static_cast<uint32_t>(type)].prepare_act = KDot512::prepare_lanes<kFrom, false>;
  }

  static void fill(KernelTable& t) {
    set_lanes<BlockIQ2_XXS, iq2xxs_lane_from>(t, TensorType::IQ2_XXS);
    set_lanes<BlockIQ2_XS, iq2w_lane_from>(t, TensorType::IQ2_XS);
    set_lanes<BlockIQ3_XXS, lane_from>(t, TensorType::IQ3_XXS);
    set_lanes<BlockIQ3_S, lane_from>(t, TensorType::IQ3_S);
  }
};
