// The key chunks of the x86 attention (kernels/attention.hpp, kAttentionChunk; decision
// record: docs/kernels.md, "Key chunks"): each query's softmax per chunk, the chunks'
// weights, the work unit that sends each chunk's sum on (into the output, or to
// attention_combine), and the combination itself. With the batch types both paths use.
// Included inside an anonymous namespace after x86_kernels.inl, before attention.inl.

struct AttentionBase {
  using X = X86<IsaTraits>;
  using fbatch = X::fbatch;
  static constexpr int64_t W = static_cast<int64_t>(fbatch::size);
  static constexpr int64_t KB = kAttentionKeyBlock;
  // fbatch under a name that depends on a kernel's template parameter N, for the 512-bit
  // kernels that build it from __m512: clang checks a template's other expressions where it is
  // defined, and the AVX2 translation units (which never instantiate those kernels) have an
  // 8-lane fbatch that takes no __m512.
  template <int N>
  using FbatchOf = std::conditional_t<N != 0, fbatch, void>;

  static fbatch load(const float* p) { return fbatch::load_unaligned(p); }

  // W int8 values as floats (a template, so the AVX2 build never sees the 512-bit form).
  template <typename B>
  static B load_i8_as(const uint8_t* p) {
    const auto* x = reinterpret_cast<const __m128i*>(p);
    if constexpr (B::size == 16) {
      return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(x)));
    } else {  // 8 bytes only: a row's last values end its buffer
      return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(x)));
    }
  }

  // Byte `byte` (0 to 3) of W 32-bit lanes at p, less 128, as floats: one element of W keys
  // of a q8_0 K tile (kernels/attention.hpp stores values plus 128, 4 elements a key).
  template <typename B>
  static B load_biased_byte_as(const uint8_t* p, int byte) {
    const __m128i left = _mm_cvtsi32_si128(24 - 8 * byte);
    if constexpr (B::size == 16) {
      const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_set1_epi8(-128));
      return _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_sll_epi32(v, left), 24));
    } else {
      const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                                         _mm256_set1_epi8(-128));
      return _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_sll_epi32(v, left), 24));
    }
  }

  // Bits [shift, shift + 4) of W 32-bit lanes at p, less 8, as floats: one element of W keys
  // of a q4_0 K tile (kernels/attention.hpp keeps a value plus 8 in a nibble).
  template <typename B>
  static B load_lane_nibble_as(const uint8_t* p, int shift) {
    const __m128i right = _mm_cvtsi32_si128(shift);
    if constexpr (B::size == 16) {
      const __m512i v =
          _mm512_and_si512(_mm512_srl_epi32(_mm512_loadu_si512(p), right), _mm512_set1_epi32(15));
      return _mm512_cvtepi32_ps(_mm512_sub_epi32(v, _mm512_set1_epi32(8)));
    } else {
      const __m256i v = _mm256_and_si256(
          _mm256_srl_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), right),
          _mm256_set1_epi32(15));
      return _mm256_cvtepi32_ps(_mm256_sub_epi32(v, _mm256_set1_epi32(8)));
    }
  }
  // The low (or high) nibbles of W bytes at p, less 8, as floats: W values of a q4_0 row.
  template <typename B>
  static B load_nibbles_as(const uint8_t* p, bool high) {
    const auto* x = reinterpret_cast<const __m128i*>(p);
    if constexpr (B::size == 16) {
      const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(x));
      const __m512i n = high ? _mm512_srli_epi32(v, 4) : _mm512_and_si512(v, _mm512_set1_epi32(15));
      return _mm512_cvtepi32_ps(_mm512_sub_epi32(n, _mm512_set1_epi32(8)));
    } else {  // 8 bytes only, as load_i8_as
      const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(x));
      const __m256i n = high ? _mm256_srli_epi32(v, 4) : _mm256_and_si256(v, _mm256_set1_epi32(15));
      return _mm256_cvtepi32_ps(_mm256_sub_epi32(n, _mm256_set1_epi32(8)));
    }
  }

  // Batches along a head's dimensions: the ISA's width (Wide), or 8 floats (Narrow) for heads
  // that are a multiple of 8 but not of the ISA's batch (stories260K's 8 on AVX-512).
  struct Wide {
    using B = fbatch;
    static constexpr int64_t N = W;
    static B load(const float* p) { return B::load_unaligned(p); }
    static B load_f16(const uint8_t* p) { return IsaTraits::load_f16(p); }
    static B load_i8(const uint8_t* p) { return load_i8_as<B>(p); }  // N int8 as floats
    static B load_biased_byte(const uint8_t* p, int byte) {
      return load_biased_byte_as<B>(p, byte);
    }
    static B load_lane_nibble(const uint8_t* p, int shift) {
      return load_lane_nibble_as<B>(p, shift);
    }
    static B load_nibbles(const uint8_t* p, bool high) { return load_nibbles_as<B>(p, high); }
    static B round_f16(B v) { return IsaTraits::round_f16(v); }
    static B fma(B x, B y, B z) { return X::fmadd(x, y, z); }
  };
  struct Narrow {
    using B = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;
    static constexpr int64_t N = 8;
    static B load(const float* p) { return B::load_unaligned(p); }
    static B load_f16(const uint8_t* p) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static B load_i8(const uint8_t* p) { return load_i8_as<B>(p); }
    static B load_biased_byte(const uint8_t* p, int byte) {
      return load_biased_byte_as<B>(p, byte);
    }
    static B load_lane_nibble(const uint8_t* p, int shift) {
      return load_lane_nibble_as<B>(p, shift);
    }
    static B load_nibbles(const uint8_t* p, bool high) { return load_nibbles_as<B>(p, high); }
    static B round_f16(B v) {
      return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    static B fma(B x, B y, B z) { return _mm256_fmadd_ps(x, y, z); }
  };

  static constexpr int64_t kChunk = kAttentionChunk;
  // Queries the kernels hold at a time: the query heads of one KV head for one token, up to 8
  // (generation's direct path, P.V in integers).
  static constexpr int64_t kDirectQueries = 8;

  // Calls f.template operator()<NQ>() with NQ = n (1 to kDirectQueries).
  template <typename F>
  static void with_queries(int64_t n, const F& f) {
    switch (n) {
      case 1:
        return f.template operator()<1>();
      case 2:
        return f.template operator()<2>();
      case 3:
        return f.template operator()<3>();
      case 4:
        return f.template operator()<4>();
      case 5:
        return f.template operator()<5>();
      case 6:
        return f.template operator()<6>();
      case 7:
        return f.template operator()<7>();
      default:
        return f.template operator()<8>();
    }
  }

  // The table has vpdpbusd and vpdpwssd (AVX-512, AVX-VNNI): a q8_0 or q4_0 cache's scores
  // and P.V are summed in integers (attention.inl, attention_pv_q8.inl).
  static constexpr bool kIntegerDots = W == 16 || IsaTraits::kVnni;
  // What the softmax leaves in the scores' rows: probabilities (times the float inverse of the
  // chunk's sum), those rounded to f16 (for an f16 V, as ggml), or the exponentials alone (a
  // q8_0 or q4_0 V with kIntegerDots, whose P.V takes the inverse last: attention_pv_q8.inl).
  enum class Probs { kFloat, kF16, kExp };
  static Probs probs_for(const AttentionArgs& a) {
    if (a.v_type == TensorType::F16) return Probs::kF16;
    return kIntegerDots && int_cache_type(a.v_type) ? Probs::kExp : Probs::kFloat;
  }
  // A tiled K's or a V row's format, as the direct path reads it.
  enum class Fmt { kF16, kQ8, kQ4 };
  static Fmt fmt_of(TensorType t) {
    return t == TensorType::F16 ? Fmt::kF16 : t == TensorType::Q8_0 ? Fmt::kQ8 : Fmt::kQ4;
  }
  // Calls f.template operator()<F>() with F = fmt_of(t).
  template <typename F>
  static void with_fmt(TensorType t, const F& f) {
    switch (fmt_of(t)) {
      case Fmt::kF16:
        return f.template operator()<Fmt::kF16>();
      case Fmt::kQ8:
        return f.template operator()<Fmt::kQ8>();
      default:
        return f.template operator()<Fmt::kQ4>();
    }
  }

  // Heads the vector paths take (whole batches of 8, and an output that fits the registers).
  static bool vector_path(const AttentionArgs& a) {
    return a.head_dim_k % 8 == 0 && a.head_dim_v % 8 == 0 && a.head_dim_v <= 512;
  }

  // A block's place in a query's sum over a chunk: the first (the sum starts at zero, else it
  // is loaded from the query's row of oc), the last (finish(i, batch offset, sum), else the
  // sum is stored back), and the first query's number.
  struct Steps {
    bool fresh, last;
    int64_t i0;
  };

  // One call's work: the queries of KV head g for tokens [t0, t1) over the keys of its
  // chunks. Holds each query's softmax per chunk and sends each chunk's output on: added into
  // the output with the chunk's weight, or kept for attention_combine (AttentionArgs::part_o).
  struct Unit {
    const AttentionArgs& a;
    AttentionScratch& s;
    int64_t g, t0, t1, group, n_q;
    int64_t k_begin;               // the first key of the call's chunks
    int64_t last;                  // the last key the call covers
    int64_t c_first = 0, n_c = 0;  // the chunks of the scores' rows

    Unit(const AttentionArgs& args, int64_t kv_head, int64_t tok0, int64_t tok1,
         AttentionScratch& scratch)
        : a(args), s(scratch), g(kv_head), t0(tok0), t1(tok1) {
      group = a.n_head / a.n_head_kv;
      n_q = (t1 - t0) * group;
      k_begin = a.chunk0 * kChunk;
      const int64_t top = a.pos0 + t1 - 1;
      last = a.chunk1 > top / kChunk ? top : a.chunk1 * kChunk - 1;
      if (a.part_o == nullptr) return;
      for (int64_t i = 0; i < n_q; ++i) {  // chunks the query does not see keep max -inf
        ChunkStats* st = a.part_stats + part_index(i, 0);
        std::fill(st + a.chunk0, st + std::min(a.chunk1, a.n_chunks), ChunkStats{});
      }
    }
    int64_t pos_of(int64_t i) const { return a.pos0 + t0 + i / group; }
    int64_t first_of(int64_t i) const {
      return std::max(k_begin, a.window > 0 ? pos_of(i) - a.window + 1 : 0);
    }
    int64_t last_of(int64_t i) const { return std::min(pos_of(i), last); }
    bool empty() const { return first_of(0) > last; }
    int64_t part_index(int64_t i, int64_t c) const {
      return ((t0 + i / group) * a.n_head + g * group + i % group) * a.n_chunks + c;
    }

    // The softmax of each query's scores (rows of sc, keys [first, first + span)), chunk by
    // chunk; without part_o, each chunk's weight in the query's output.
    void softmax(float* sc, int64_t first, int64_t span, Probs probs) {
      c_first = first / kChunk;
      n_c = last / kChunk - c_first + 1;
      s.chunk_stats.resize(static_cast<size_t>(n_q * n_c));
      s.chunk_weights.resize(static_cast<size_t>(n_q * n_c));
      for (int64_t i = 0; i < n_q; ++i) {
        softmax_chunks(sc + i * span, first, span, n_c, probs, &stats(i, c_first));
        if (a.part_o == nullptr)
          chunk_weights(&stats(i, c_first), n_c, s.chunk_weights.data() + i * n_c);
      }
    }
    ChunkStats& stats(int64_t i, int64_t c) { return s.chunk_stats[i * n_c + c - c_first]; }
    float* chunk_out(int64_t hv) {
      s.chunk_out.resize(static_cast<size_t>(n_q * hv));
      return s.chunk_out.data();
    }
    // For the paths' P.V, which sum each chunk in registers: query i's sum of chunk c over
    // batch d of the output, added with the chunk's weight into its output row o (or kept in
    // part_o); the chunk's stats to part_stats.
    bool visible(int64_t i, int64_t c) { return stats(i, c).max != -INFINITY; }
    template <typename B>
    void send(int64_t i, int64_t c, int64_t d, B sum, float* o) {
      if (!visible(i, c)) return;
      if (a.part_o != nullptr) {
        sum.store_unaligned(a.part_o + part_index(i, c) * a.head_dim_v + d);
        return;
      }
      const B w(s.chunk_weights[i * n_c + c - c_first]);
      fused(w, sum, B::load_unaligned(o + d)).store_unaligned(o + d);
    }
    void keep_stats(int64_t i, int64_t c) {
      if (a.part_o != nullptr && visible(i, c)) a.part_stats[part_index(i, c)] = stats(i, c);
    }
    // Query i's output (o, the chunks added) to out.
    void copy_out(int64_t i, const float* o) const {
      if (a.part_o != nullptr) return;
      const int64_t t = t0 + i / group, h = g * group + i % group;
      std::copy(o, o + a.head_dim_v, a.out + t * a.out_token_stride + h * a.head_dim_v);
    }
  };

  // The weight of each of a query's n chunks in its output: exp(max_c - M) sum_c / L, with M
  // the chunks' largest max and L the sum of exp(max_c - M) sum_c (1 for a lone chunk, so a
  // context of one chunk gives the plain softmax's output); 0 for chunks it does not see.
  static void chunk_weights(const ChunkStats* st, int64_t n, float* w) {
    float m = -INFINITY;
    for (int64_t c = 0; c < n; ++c) m = std::max(m, st[c].max);
    if (n == 1 || m == -INFINITY) {  // exp(0) sum / sum; or no chunk seen
      std::fill(w, w + n, m == -INFINITY ? 0.0f : 1.0f);
      return;
    }
    // exp(max_c - m), W chunks per vector exponential (exp(-inf) = 0 for the unseen).
    for (int64_t c0 = 0; c0 < n; c0 += W) {
      alignas(64) float x[W];
      for (int64_t c = 0; c < W; ++c) x[c] = c0 + c < n ? st[c0 + c].max : -INFINITY;
      (X::expf(load(x) - fbatch(m))).store_aligned(x);
      std::copy(x, x + std::min(W, n - c0), w + c0);
    }
    double total = 0.0;
    for (int64_t c = 0; c < n; ++c) total = std::fma(static_cast<double>(w[c]), st[c].sum, total);
    for (int64_t c = 0; c < n; ++c) w[c] = static_cast<float>(w[c] * st[c].sum / total);
  }

  // A fused multiply-add in either batch type (xsimd's fma of AVX-512 is not fused).
  template <typename B>
  static B fused(B x, B y, B z) {
    if constexpr (std::is_same_v<B, fbatch>) {
      return X::fmadd(x, y, z);
    } else {
      return Narrow::fma(x, y, z);
    }
  }
  // o = fma(w, oc, o) over a head (a multiple of 8): a chunk's part added to the output, as
  // the kernels add their chunks' sums in registers.
  static void add_chunk(float* o, const float* oc, float w, int64_t hv) {
    const Narrow::B wb(w);
    for (int64_t d = 0; d < hv; d += 8)
      Narrow::fma(wb, Narrow::load(oc + d), Narrow::load(o + d)).store_unaligned(o + d);
  }

  // attention_combine: the partial results of query heads [h0, h1) of tokens [t0, t1).
  static void combine(const AttentionArgs& a, int64_t h0, int64_t h1, int64_t t0, int64_t t1,
                      AttentionScratch& s) {
    if (!vector_path(a)) return;  // computed whole by the call of chunk 0
    const int64_t hv = a.head_dim_v, n = a.n_chunks;
    s.chunk_weights.resize(static_cast<size_t>(n));
    float* w = s.chunk_weights.data();
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t h = h0; h < h1; ++h) {
        const int64_t at = (t * a.n_head + h) * n;
        chunk_weights(a.part_stats + at, n, w);
        float* o = a.out + t * a.out_token_stride + h * hv;
        std::fill(o, o + hv, 0.0f);
        for (int64_t c = 0; c < n; ++c) {
          if (a.part_stats[at + c].max != -INFINITY)
            add_chunk(o, a.part_o + (at + c) * hv, w[c], hv);
        }
      }
    }
  }

  // A batch's largest lane, and its lanes' sum in double (a tree: lanes j and j + W/2, and so
  // on). Templates, so the AVX2 build never sees the 512-bit forms. Short dependency chains:
  // each chunk of each query takes both.
  template <typename B>
  static float lanes_max(B v) {
    if constexpr (B::size == 16) {
      return _mm512_reduce_max_ps(v);
    } else {
      __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
      x = _mm_max_ps(x, _mm_movehl_ps(x, x));
      return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
    }
  }
  template <typename B>
  static double lanes_sum(B v) {
    if constexpr (B::size == 16) {
      const __m512 f = v;
      const __m256 hi = _mm256_castsi256_ps(_mm512_extracti64x4_epi64(_mm512_castps_si512(f), 1));
      return _mm512_reduce_add_pd(
          _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(f)), _mm512_cvtps_pd(hi)));
    } else {
      const __m256d d = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                                      _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
      const __m128d x = _mm_add_pd(_mm256_castpd256_pd128(d), _mm256_extractf128_pd(d, 1));
      return _mm_cvtsd_f64(_mm_add_sd(x, _mm_unpackhi_pd(x, x)));
    }
  }

  // The softmax of each of the n_c chunks of a row of scores (keys [first, first + span),
  // chunk boundaries at multiples of kChunk; span and the boundaries multiples of W) in place,
  // each chunk's stats to st. Phase by phase over the chunks, so that one chunk's reductions
  // overlap the next one's vectors (a chunk at a time, each phase's drain showed in profiles).
  static void softmax_chunks(float* row, int64_t first, int64_t span, int64_t n_c, Probs probs,
                             ChunkStats* st) {
    auto bounds = [&](int64_t c) {  // chunk c of the row, as offsets into it
      const int64_t k0 = (first / kChunk + c) * kChunk;
      return std::pair<int64_t, int64_t>{std::max(first, k0) - first,
                                         std::min(first + span, k0 + kChunk) - first};
    };
    // The max in vectors: a scalar max is one dependent vmaxss per score. Two chains, so
    // that the loop is not bound by vmaxps's latency.
    for (int64_t c = 0; c < n_c; ++c) {
      const auto [lo, hi] = bounds(c);
      fbatch m0(-INFINITY), m1(-INFINITY);
      int64_t j = lo;
      for (; j + 2 * W <= hi; j += 2 * W) {
        m0 = xsimd::max(m0, load(row + j));
        m1 = xsimd::max(m1, load(row + j + W));
      }
      if (j < hi) m0 = xsimd::max(m0, load(row + j));
      st[c] = {lanes_max(xsimd::max(m0, m1)), 0.0};
    }
    // The exponentials summed in a float vector (not ggml's order: groups of 16 summed in
    // float, the groups in double; the scalar sum of each group was 30% of generation's
    // attention), its lanes in double (lanes_sum).
    for (int64_t c = 0; c < n_c; ++c) {
      const auto [lo, hi] = bounds(c);
      if (st[c].max == -INFINITY) {
        std::fill(row + lo, row + hi, 0.0f);
        continue;
      }
      const fbatch max(st[c].max);
      fbatch acc(0.0f);
      for (int64_t j = lo; j < hi; j += W) {
        const fbatch e = X::expf_nonpositive(load(row + j) - max);
        e.store_unaligned(row + j);
        acc += e;
      }
      st[c].sum = lanes_sum(acc);
    }
    // Probabilities: times the float inverse of the chunk's sum, rounded to f16 for an f16 V.
    for (int64_t c = 0; c < n_c && probs != Probs::kExp; ++c) {
      if (st[c].max == -INFINITY) continue;
      const auto [lo, hi] = bounds(c);
      const fbatch inv(static_cast<float>(1.0 / st[c].sum));
      for (int64_t j = lo; j < hi; j += W) {
        fbatch p = load(row + j) * inv;
        if (probs == Probs::kF16) p = IsaTraits::round_f16(p);
        p.store_unaligned(row + j);
      }
    }
  }
};
