// x86 pieces for the 256-element types, written once and instantiated per ISA (see
// x86_kernels.inl for the rules): the K types' unpacked form — 8 groups of 32 unsigned bytes
// q, an integer scale and min per 16 elements, and a constant `offset` — so that
//   value = (d * scale) * (q - offset) - (dmin * min)
// and one dequantizer serves all five types (and TQ2_0); IQ4_XS's and TQ1_0's dequantizers;
// and what the super-block dots of both widths share (kdot256.inl, avx512_kdot.inl): the
// scales and mins as bytes (built in registers; the dequantizers read them too), ggml's min
// sums.
//
// Requires <immintrin.h>, kernels/blocks.hpp, kernels/float_conv.hpp, kernels/kernels.hpp and
// an Isa traits struct (isa_avx2.inl / isa_avx512.inl).

template <class Isa>
struct X86K {
  struct Unpacked {
    __m256i q[8];  // elements 32g..32g+31 as unsigned bytes
    float d, dmin;
    int32_t offset;  // subtracted from q (Q3_K: 4, Q6_K: 32)
  };

  static __m256i load32(const uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static __m256i bits(__m256i v, int shift, int mask) {  // (byte >> shift) & mask, per byte
    return _mm256_and_si256(_mm256_srli_epi16(v, shift), _mm256_set1_epi8(static_cast<char>(mask)));
  }

  static void unpack(const BlockQ2_K& b, Unpacked& u) {
    for (int n = 0; n < 2; ++n) {
      const __m256i qs = load32(b.qs + 32 * n);
      for (int j = 0; j < 4; ++j) u.q[4 * n + j] = bits(qs, 2 * j, 3);
    }
    u.d = _cvtsh_ss(b.d);
    u.dmin = _cvtsh_ss(b.dmin);
    u.offset = 0;
  }

  static void unpack(const BlockQ3_K& b, Unpacked& u) {
    const __m256i hm = load32(b.hmask);
    for (int n = 0; n < 2; ++n) {
      const __m256i qs = load32(b.qs + 32 * n);
      for (int j = 0; j < 4; ++j) {
        const __m256i high = _mm256_slli_epi16(bits(hm, 4 * n + j, 1), 2);
        u.q[4 * n + j] = _mm256_or_si256(bits(qs, 2 * j, 3), high);  // q + 4, in 0..7
      }
    }
    u.d = _cvtsh_ss(b.d);
    u.dmin = 0.0f;
    u.offset = 4;
  }

  template <typename Block>  // Q4_K, Q5_K
  static void k4_header(const Block& b, Unpacked& u) {
    u.d = _cvtsh_ss(b.d);
    u.dmin = _cvtsh_ss(b.dmin);
    u.offset = 0;
  }

  static void unpack(const BlockQ4_K& b, Unpacked& u) {
    for (int j = 0; j < 4; ++j) {
      const __m256i qs = load32(b.qs + 32 * j);
      u.q[2 * j] = bits(qs, 0, 0x0f);
      u.q[2 * j + 1] = bits(qs, 4, 0x0f);
    }
    k4_header(b, u);
  }

  static void unpack(const BlockQ5_K& b, Unpacked& u) {
    const __m256i qh = load32(b.qh);
    for (int j = 0; j < 4; ++j) {
      const __m256i qs = load32(b.qs + 32 * j);
      u.q[2 * j] = _mm256_or_si256(bits(qs, 0, 0x0f), _mm256_slli_epi16(bits(qh, 2 * j, 1), 4));
      u.q[2 * j + 1] =
          _mm256_or_si256(bits(qs, 4, 0x0f), _mm256_slli_epi16(bits(qh, 2 * j + 1, 1), 4));
    }
    k4_header(b, u);
  }

  static void unpack(const BlockQ6_K& b, Unpacked& u) {
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = load32(b.ql + 64 * h), l1 = load32(b.ql + 64 * h + 32);
      const __m256i qh = load32(b.qh + 32 * h);
      const __m256i low[4] = {bits(l0, 0, 0x0f), bits(l1, 0, 0x0f), bits(l0, 4, 0x0f),
                              bits(l1, 4, 0x0f)};
      for (int k = 0; k < 4; ++k) {
        u.q[4 * h + k] =
            _mm256_or_si256(low[k], _mm256_slli_epi16(bits(qh, 2 * k, 3), 4));  // q + 32
      }
    }
    u.d = _cvtsh_ss(b.d);
    u.dmin = 0.0f;
    u.offset = 32;
  }

  // TQ2_0: 2-bit codes c in 0..2 with value c - 1, one scale d.
  static void unpack(const BlockTQ2_0& b, Unpacked& u) {
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load32(b.qs + 32 * h);
      for (int l = 0; l < 4; ++l) u.q[4 * h + l] = bits(qs, 2 * l, 3);
    }
    u.d = _cvtsh_ss(b.d);
    u.dmin = 0.0f;
    u.offset = 1;
  }

  // IQ4_XS: signed non-linear values (as low as -127), so the dot uses the sign trick per 32
  // elements instead of the unsigned unpacked form.
  static __m256i iq4_values(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m = _mm_set1_epi8(0x0f);
    const __m256i nib =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
    const __m256i t = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kKvaluesIq4nl)));
    return _mm256_shuffle_epi8(t, nib);
  }
  static void dequantize_iq4_xs(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const BlockIQ4_XS*>(vx);
    for (int64_t i = 0; i < n / kQKK; ++i) {
      const float d = _cvtsh_ss(x[i].d);
      alignas(16) int8_t sc[16];  // per 16: sub-block g's scale at bytes 2g, 2g + 1
      _mm_store_si128(reinterpret_cast<__m128i*>(sc), iq4_xs_scale_bytes(x[i]));
      for (int g = 0; g < 8; ++g, y += 32) {
        alignas(32) int8_t q[32];
        _mm256_store_si256(reinterpret_cast<__m256i*>(q), iq4_values(x[i].qs + 16 * g));
        const __m256 dl = _mm256_set1_ps(d * static_cast<float>(sc[2 * g]));
        for (int k = 0; k < 32; k += 8) {
          const __m256i w =
              _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + k)));
          _mm256_storeu_ps(y + k, _mm256_mul_ps(dl, _mm256_cvtepi32_ps(w)));
        }
      }
    }
  }

  static int32_t hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
  }

  // ---- Shared by the super-block dots (kdot256.inl, avx512_kdot.inl): each sub-block's
  // integer scale and min as 16 signed bytes (sub-block s at byte s), built in registers
  // from the block's bytes (the unpacked arrays would be read back right after scalar
  // stores, which stalls store-to-load forwarding).
  static constexpr uint64_t kLow4 = 0x0f0f0f0f0f0f0f0full;
  static uint64_t load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  static __m128i bytes16(uint64_t lo, uint64_t hi) {
    return _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo));
  }
  static __m128i pairs16(uint64_t v) {  // 8 bytes, each used by two sub-blocks
    const __m128i b = _mm_cvtsi64_si128(static_cast<long long>(v));
    return _mm_unpacklo_epi8(b, b);
  }
  static void scale_bytes(const BlockQ2_K& b, __m128i& scale, __m128i& min) {
    const uint64_t lo = load64(b.scales), hi = load64(b.scales + 8);
    scale = bytes16(lo & kLow4, hi & kLow4);
    min = bytes16((lo >> 4) & kLow4, (hi >> 4) & kLow4);
  }
  static void scale_bytes(const BlockQ3_K& b, __m128i& scale, __m128i& min) {
    const uint64_t low = load64(b.scales);  // low 4 bits: sub-blocks 0-7 low nibbles, 8-15 high
    uint32_t h32;
    std::memcpy(&h32, b.scales + 8, 4);
    const uint64_t h = h32, m2 = 0x03030303u;
    const uint64_t high_lo = (h & m2) | ((h >> 2) & m2) << 32,
                   high_hi = ((h >> 4) & m2) | ((h >> 6) & m2) << 32;
    scale = _mm_sub_epi8(bytes16((low & kLow4) | high_lo << 4, ((low >> 4) & kLow4) | high_hi << 4),
                         _mm_set1_epi8(32));
    min = _mm_setzero_si128();
  }
  template <typename Block>  // Q4_K, Q5_K: 8 six-bit scales and mins in 12 bytes
  static void k4_scale_bytes(const Block& b, __m128i& scale, __m128i& min) {
    uint32_t a, m, c;
    std::memcpy(&a, b.scales, 4);
    std::memcpy(&m, b.scales + 4, 4);
    std::memcpy(&c, b.scales + 8, 4);
    const uint32_t six = 0x3f3f3f3fu, four = 0x0f0f0f0fu, two = 0x03030303u;
    scale = pairs16((a & six) | static_cast<uint64_t>((c & four) | ((a >> 6) & two) << 4) << 32);
    min =
        pairs16((m & six) | static_cast<uint64_t>(((c >> 4) & four) | ((m >> 6) & two) << 4) << 32);
  }
  static void scale_bytes(const BlockQ4_K& b, __m128i& scale, __m128i& min) {
    k4_scale_bytes(b, scale, min);
  }
  static void scale_bytes(const BlockQ5_K& b, __m128i& scale, __m128i& min) {
    k4_scale_bytes(b, scale, min);
  }
  static void scale_bytes(const BlockQ6_K& b, __m128i& scale, __m128i& min) {
    scale = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    min = _mm_setzero_si128();
  }
  static void scale_bytes(const BlockTQ2_0&, __m128i& scale, __m128i& min) {  // one scale, d
    scale = _mm_set1_epi8(1);
    min = _mm_setzero_si128();
  }
  // IQ4_XS's 6-bit scales of sub-blocks 0-7 (per 32) as bytes 0-7, from scales_h and
  // scales_l.
  static uint64_t iq4_xs_scales(uint16_t scales_h, uint32_t l) {
    uint64_t lo = l;  // nibble j -> byte j
    lo = (lo | lo << 16) & 0x0000ffff0000ffffull;
    lo = (lo | lo << 8) & 0x00ff00ff00ff00ffull;
    lo = (lo | lo << 4) & kLow4;
    uint64_t hi = scales_h;  // 2-bit field j -> byte j
    hi = (hi | hi << 24) & 0x000000ff000000ffull;
    hi = (hi | hi << 12) & 0x000f000f000f000full;
    hi = (hi | hi << 6) & 0x0303030303030303ull;
    return lo | hi << 4;
  }
  static __m128i iq4_xs_scale_bytes(const BlockIQ4_XS& b) {  // 6-bit scales minus 32, per 32
    uint32_t l;
    std::memcpy(&l, b.scales_l, 4);
    return _mm_sub_epi8(pairs16(iq4_xs_scales(b.scales_h, l)), _mm_set1_epi8(32));
  }

  // ggml's three ways with the K types' min terms; products[t] is the sum over sub-blocks 2t
  // and 2t+1 (of 16) of min times the activations' block sum, and dmin is -y.d * dmin.
  struct MinSum {
    __m128 acc = _mm_setzero_ps();  // Q4_K: four lanes, sub-blocks 4k..4k+3
    float sum = 0.0f;               // Q5_K: one running float
    template <typename Block>
    void add(float dmin, __m256i products, __m256& main) {
      if constexpr (std::is_same_v<Block, BlockQ2_K>) {  // into the main accumulator, first
        main = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(products), main);
      } else if constexpr (std::is_same_v<Block, BlockQ4_K>) {
        const __m128i four =
            _mm_hadd_epi32(_mm256_castsi256_si128(products), _mm256_extracti128_si256(products, 1));
        acc = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(four), acc);
      } else {
        sum = std::fma(dmin, static_cast<float>(hsum_i32(products)), sum);
      }
    }
    float total() const {
      const __m128 s = _mm_add_ps(acc, _mm_movehl_ps(acc, acc));
      return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s))) + sum;
    }
  };
  template <typename Block>
  static constexpr bool kHasMin =
      std::is_same_v<Block, BlockQ2_K> || std::is_same_v<Block, BlockQ4_K> ||
      std::is_same_v<Block, BlockQ5_K>;
  // Q3_K and Q6_K store q + offset (4, 32); the dots subtract it per pair, as ggml does (per
  // four on AVX-512: same integer sums).
  template <typename Block>
  static constexpr bool kHasOffset =
      std::is_same_v<Block, BlockQ3_K> || std::is_same_v<Block, BlockQ6_K>;
  // The types whose dots take |value| against the activations given the value's sign (both
  // dot widths).
  template <typename Block>
  static constexpr bool kSigned =
      std::is_same_v<Block, BlockIQ2_XXS> || std::is_same_v<Block, BlockIQ2_XS> ||
      std::is_same_v<Block, BlockIQ2_S> || std::is_same_v<Block, BlockIQ3_XXS> ||
      std::is_same_v<Block, BlockIQ3_S> || std::is_same_v<Block, BlockIQ4_XS>;

  // Bit-identical to the reference: the same scale and min products, one multiply and one
  // subtract per element.
  template <typename Block>
  static void dequantize(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const Block*>(vx);
    Unpacked u;
    for (int64_t i = 0; i < n / kQKK; ++i, y += kQKK) {
      unpack(x[i], u);
      __m128i scale_v, min_v;
      scale_bytes(x[i], scale_v, min_v);
      alignas(16) int8_t sc[16], mn[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(sc), scale_v);
      _mm_store_si128(reinterpret_cast<__m128i*>(mn), min_v);
      const __m256i off = _mm256_set1_epi32(u.offset);
      for (int g = 0; g < 8; ++g) {
        alignas(32) uint8_t q[32];
        _mm256_store_si256(reinterpret_cast<__m256i*>(q), u.q[g]);
        for (int h = 0; h < 2; ++h) {
          const int s = 2 * g + h;
          const __m256 scale = _mm256_set1_ps(u.d * static_cast<float>(sc[s]));
          const __m256 min = _mm256_set1_ps(u.dmin * static_cast<float>(mn[s]));
          for (int k = 0; k < 16; k += 8) {
            const __m256i v = _mm256_sub_epi32(
                _mm256_cvtepu8_epi32(
                    _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 16 * h + k))),
                off);
            _mm256_storeu_ps(y + 32 * g + 16 * h + k,
                             _mm256_sub_ps(_mm256_mul_ps(scale, _mm256_cvtepi32_ps(v)), min));
          }
        }
      }
    }
  }

  // value = scale * q - min, 8 at a time, for 16 signed bytes sharing one scale and min: exact
  // ints, one multiply, one subtraction, as the reference.
  static void store16(const int8_t* q, float scale, float min, float* y) {
    const __m256 sv = _mm256_set1_ps(scale), mv = _mm256_set1_ps(min);
    for (int k = 0; k < 16; k += 8) {
      const __m256i v =
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + k)));
      _mm256_storeu_ps(y + k, _mm256_sub_ps(_mm256_mul_ps(sv, _mm256_cvtepi32_ps(v)), mv));
    }
  }
  // Types decoded by the reference decoder (TQ1_0).
  template <typename Block, void (*Decode)(const Block&, ref::Decoded&)>
  static void dequantize_decoded(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const Block*>(vx);
    ref::Decoded dec;
    for (int64_t i = 0; i < n / kQKK; ++i, y += kQKK) {
      Decode(x[i], dec);
      for (int s = 0; s < kQKK / 16; ++s)
        store16(dec.q + 16 * s, dec.scale[s], dec.min[s], y + 16 * s);
    }
  }

  static float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // The dequantizers; the dots are the super-block dots' (kdot256.inl, avx512_kdot.inl), and
  // the grid types' dequantizers share kdot256.inl's loaders.
  static void fill(KernelTable& t) {
    using T = TensorType;
    t.types[uint32_t(T::TQ1_0)].dequantize_row = dequantize_decoded<BlockTQ1_0, ref::decode_tq1_0>;
    t.types[uint32_t(T::Q2_K)].dequantize_row = dequantize<BlockQ2_K>;
    t.types[uint32_t(T::Q3_K)].dequantize_row = dequantize<BlockQ3_K>;
    t.types[uint32_t(T::Q4_K)].dequantize_row = dequantize<BlockQ4_K>;
    t.types[uint32_t(T::Q5_K)].dequantize_row = dequantize<BlockQ5_K>;
    t.types[uint32_t(T::Q6_K)].dequantize_row = dequantize<BlockQ6_K>;
    t.types[uint32_t(T::TQ2_0)].dequantize_row = dequantize<BlockTQ2_0>;
    t.types[uint32_t(T::IQ4_XS)].dequantize_row = dequantize_iq4_xs;
  }
};
