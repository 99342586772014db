// Flash attention for x86 (kernels/attention.hpp), one source for AVX2 and AVX-512 (float
// batches of 8 or 16). Included inside an anonymous namespace after x86_kernels.inl, whose
// X86<IsaTraits> gives the batch type, FMA and the vector exponential.
//
// Per work unit (KV head g, tokens [t0, t1)): every query of the unit (tokens x the query
// heads of g) is held in Q; each block of 64 keys is converted once to f32, K transposed (so
// one query's 64 scores are 64/W FMA chains over the head dimension) and V row-major (so P.V
// is a broadcast probability times V rows). The scores of every query of the unit are kept
// (n_q x keys floats), so the softmax can be ggml's exactly: global max, sums of 16 in float
// and of the groups in double, the float inverse, probabilities rounded to f16 for an f16 V.
// (An online softmax rounds unnormalized probabilities; measured further from llama.cpp's
// logits on the low-bit models.) Then each block of V is converted once for all queries.

struct AttentionX86 {
  using X = X86<IsaTraits>;
  using fbatch = X::fbatch;
  static constexpr int64_t W = static_cast<int64_t>(fbatch::size);
  static constexpr int64_t KB = kAttentionKeyBlock;

  static fbatch load(const float* p) { return fbatch::load_unaligned(p); }

  // Batches along a head's dimensions: the ISA's width (Wide), or 8 floats (Narrow) for heads
  // that are a multiple of 8 but not of the ISA's batch (stories260K's 8 on AVX-512).
  struct Wide {
    using B = fbatch;
    static constexpr int64_t N = W;
    static B load(const float* p) { return B::load_unaligned(p); }
    static B load_f16(const uint8_t* p) { return IsaTraits::load_f16(p); }
    static B round_f16(B v) { return IsaTraits::round_f16(v); }
    static B sums(const B* r) { return IsaTraits::sums(r); }  // lane j: the sum of r[j]
    static B fma(B x, B y, B z) { return X::fmadd(x, y, z); }
  };
  struct Narrow {
    using B = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;
    static constexpr int64_t N = 8;
    static B load(const float* p) { return B::load_unaligned(p); }
    static B load_f16(const uint8_t* p) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static B round_f16(B v) {
      return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    static B sums(const B* r) { return xsimd::haddp(r); }
    static B fma(B x, B y, B z) { return _mm256_fmadd_ps(x, y, z); }
  };

  static void run(const KernelTable& kt, const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                  AttentionScratch& s) {
    const int64_t hk = a.head_dim_k, hv = a.head_dim_v, group = a.n_head / a.n_head_kv;
    if (hk % 8 != 0 || hv % 8 != 0 || hv > 512) {  // the vector path wants whole batches
      attention_scalar(a, g, t0, t1, s);
      return;
    }
    const bool wide = hk % W == 0 && hv % W == 0;
    const int64_t n_q = (t1 - t0) * group;
    if (n_q <= kDirectQueries && a.k_type == TensorType::F16 && a.v_type == TensorType::F16) {
      if (wide) {
        run_direct_f16<Wide>(a, g, t0, t1, s);
      } else {
        run_direct_f16<Narrow>(a, g, t0, t1, s);
      }
      return;
    }
    const int64_t last = a.pos0 + t1 - 1;
    // Blocks start at a multiple of KB, so groups of 16 keys line up with key 0 as in ggml's
    // softmax (keys before the first one any query sees are masked).
    const int64_t first =
        (a.window > 0 ? std::max<int64_t>(0, a.pos0 + t0 - a.window + 1) : 0) / KB * KB;
    const int64_t span = (last + 1 - first + KB - 1) / KB * KB;
    s.keys.resize(static_cast<size_t>(hk * KB + 8 * hk));
    s.values.resize(static_cast<size_t>(KB * hv));
    s.queries.resize(static_cast<size_t>(n_q * (hk + hv)));
    s.scores.resize(static_cast<size_t>(n_q * span));
    float* kt_buf = s.keys.data();          // (hk, KB) keys transposed
    float* rows = s.keys.data() + hk * KB;  // (8, hk) eight dequantized keys
    float* vb = s.values.data();            // (KB, hv)
    float* qb = s.queries.data();           // (n_q, hk)
    float* ob = qb + n_q * hk;              // (n_q, hv)
    float* sc = s.scores.data();            // (n_q, span): scores, then probabilities
    const bool f16_k = a.k_type == TensorType::F16, f16_v = a.v_type == TensorType::F16;
    for (int64_t i = 0; i < n_q; ++i) {
      const int64_t t = t0 + i / group, h = g * group + i % group;
      const float* src = a.q + t * a.q_token_stride + h * hk;
      // With an f16 cache ggml rounds q to f16 for the K product (and P for the V product).
      for (int64_t d = 0; d < hk; d += 8) {
        const Narrow::B v = Narrow::load(src + d);
        (f16_k ? Narrow::round_f16(v) : v).store_unaligned(qb + i * hk + d);
      }
      std::fill(ob + i * hv, ob + (i + 1) * hv, 0.0f);
    }
    const auto dequantize_k = kt.types[static_cast<uint32_t>(a.k_type)].dequantize_row;
    const auto dequantize_v = kt.types[static_cast<uint32_t>(a.v_type)].dequantize_row;
    // Pass 1: every query's scores against every block of keys (masked ones -inf).
    for (int64_t kb = first; kb <= last; kb += KB) {
      const int64_t nk = std::min(KB, last + 1 - kb);
      for (int64_t j0 = 0; j0 < KB; j0 += 8) {  // eight keys at a time, 8x8 transposes
        auto key = [&](int64_t r) {
          return a.k_base + (kb + j0 + r) * a.k_row_bytes + g * a.k_head_bytes;
        };
        if (!f16_k) {
          for (int64_t r = 0; r < 8; ++r) {
            if (j0 + r < nk) {
              dequantize_k(key(r), rows + r * hk, hk);
            } else {
              std::fill(rows + r * hk, rows + (r + 1) * hk, 0.0f);
            }
          }
        }
        for (int64_t d = 0; d < hk; d += 8) {
          __m256 m[8];
          for (int r = 0; r < 8; ++r) {
            if (!f16_k) {
              m[r] = _mm256_loadu_ps(rows + r * hk + d);
            } else {
              m[r] = j0 + r < nk ? __m256(Narrow::load_f16(key(r) + 2 * d)) : _mm256_setzero_ps();
            }
          }
          GemmX86::transpose8(m);
          for (int c = 0; c < 8; ++c) _mm256_storeu_ps(kt_buf + (d + c) * KB + j0, m[c]);
        }
      }
      int64_t i = 0;
      for (; i + kTile <= n_q; i += kTile)  // kTile queries share each load of the keys
        raw_scores<kTile>(qb + i * hk, hk, kt_buf, a.scale, sc + i * span + (kb - first), span);
      for (; i < n_q; ++i)
        raw_scores<1>(qb + i * hk, hk, kt_buf, a.scale, sc + i * span + (kb - first), span);
      for (i = 0; i < n_q; ++i) {
        const int64_t pos = a.pos0 + t0 + i / group;
        const int64_t k_first = a.window > 0 ? std::max<int64_t>(0, pos - a.window + 1) : 0;
        mask_scores(nk, kb, k_first, pos, a, sc + i * span + (kb - first));
      }
    }
    // The softmax of each row as ggml computes it: the max; exponentials 16 at a time, each
    // group summed in float, the groups in double; probabilities times the float inverse of
    // the sum, rounded to f16 for an f16 V.
    for (int64_t i = 0; i < n_q; ++i) softmax_row(sc + i * span, span, f16_v);
    // Pass 2: O += P . V, block by block.
    const uint8_t* v_head = a.v_base + g * a.v_head_bytes;
    for (int64_t kb = first; kb <= last; kb += KB) {
      const int64_t nk = std::min(KB, last + 1 - kb);
      for (int64_t j = 0; j < nk; ++j) {  // the block's V rows as f32, once for every query
        const uint8_t* row = v_head + (kb + j) * a.v_row_bytes;
        if (f16_v) {
          for (int64_t d = 0; d < hv; d += 8)
            Narrow::load_f16(row + 2 * d).store_unaligned(vb + j * hv + d);
        } else {
          dequantize_v(row, vb + j * hv, hv);
        }
      }
      auto keys_of = [&](int64_t i) {  // the keys of this block query i sees (0 if none)
        return std::clamp<int64_t>(a.pos0 + t0 + i / group + 1 - kb, 0, nk);
      };
      int64_t i = 0;
      if (wide) {
        // Tiles of kTile queries share each V load. A tile runs to its longest query: the
        // probabilities of keys a query does not see are exact zeros (masked, then exp).
        for (; i + kTile <= n_q; i += kTile) {
          const int64_t n = keys_of(i + kTile - 1);
          if (n > 0) out_tile<kTile>(hv, n, sc + i * span + (kb - first), span, vb, ob + i * hv);
        }
      }
      for (; i < n_q; ++i) {
        const int64_t n = keys_of(i);
        if (n == 0) continue;
        const float* p = sc + i * span + (kb - first);
        if (wide) {
          out_update<Wide>(hv, n, p, ob + i * hv,
                           [&](int64_t j, int64_t d) { return Wide::load(vb + j * hv + d); });
        } else {
          out_update<Narrow>(hv, n, p, ob + i * hv,
                             [&](int64_t j, int64_t d) { return Narrow::load(vb + j * hv + d); });
        }
      }
    }
    for (int64_t i = 0; i < n_q; ++i) {
      const int64_t t = t0 + i / group, h = g * group + i % group;
      std::copy(ob + i * hv, ob + (i + 1) * hv, a.out + t * a.out_token_stride + h * hv);
    }
  }

  // Few queries (generation, up to 8: the query heads of one KV head for one token). Each block
  // of KB keys is converted to f32 rows once (no transpose) into L1 and read by every query:
  // N keys at a time, each key's products summed in its own batch (the N batches live in
  // registers over the head's dimensions) and the N batches reduced together (V::sums). The
  // softmax is the block path's; then each block of V rows is converted once and every query
  // adds its probabilities times the rows.
  static constexpr int64_t kDirectQueries = 8;

  template <typename V>
  static void run_direct_f16(const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                             AttentionScratch& s) {
    using B = typename V::B;
    constexpr int64_t N = V::N;
    const int64_t hk = a.head_dim_k, hv = a.head_dim_v, group = a.n_head / a.n_head_kv;
    const int64_t n_q = (t1 - t0) * group;
    const int64_t last = a.pos0 + t1 - 1;
    const int64_t first =
        (a.window > 0 ? std::max<int64_t>(0, a.pos0 + t0 - a.window + 1) : 0) / KB * KB;
    const int64_t span = (last + 1 - first + KB - 1) / KB * KB;
    s.queries.resize(static_cast<size_t>(n_q * (hk + hv)));
    s.scores.resize(static_cast<size_t>(n_q * span));
    s.keys.resize(static_cast<size_t>((KB + N) * hk));  // + N rows of zeros past a block
    s.values.resize(static_cast<size_t>((KB + N) * hv));
    float* qb = s.queries.data();
    float* ob = qb + n_q * hk;
    float* kf = s.keys.data();    // (KB, hk) a block of keys as f32
    float* vf = s.values.data();  // (KB, hv) a block of values as f32
    auto pos_of = [&](int64_t i) { return a.pos0 + t0 + i / group; };
    auto first_of = [&](int64_t i) {
      return a.window > 0 ? std::max<int64_t>(0, pos_of(i) - a.window + 1) : 0;
    };
    for (int64_t i = 0; i < n_q; ++i) {
      const int64_t t = t0 + i / group, h = g * group + i % group;
      const float* src = a.q + t * a.q_token_stride + h * hk;
      for (int64_t d = 0; d < hk; d += N)
        V::round_f16(V::load(src + d)).store_unaligned(qb + i * hk + d);
      std::fill(s.scores.data() + i * span, s.scores.data() + (i + 1) * span, -INFINITY);
      std::fill(ob + i * hv, ob + (i + 1) * hv, 0.0f);
    }
    const uint8_t* k_head = a.k_base + g * a.k_head_bytes;
    const uint8_t* v_head = a.v_base + g * a.v_head_bytes;
    // Rows [kb, kb + nk) of K or V as f32 in dst, the rest of the block zero.
    auto convert = [&](const uint8_t* head, size_t row_bytes, int64_t dim, int64_t kb, int64_t nk,
                       float* dst) {
      for (int64_t j = 0; j < nk; ++j) {
        const uint8_t* row = head + (kb + j) * row_bytes;
        for (int64_t d = 0; d < dim; d += N)
          V::load_f16(row + 2 * d).store_unaligned(dst + j * dim + d);
      }
      std::fill(dst + nk * dim, dst + (KB + N) * dim, 0.0f);
    };
    for (int64_t kb = first; kb <= last; kb += KB) {  // scores, a block of keys at a time
      const int64_t nk = std::min(KB, last + 1 - kb);
      convert(k_head, a.k_row_bytes, hk, kb, nk, kf);
      for (int64_t i = 0; i < n_q; ++i) {
        const int64_t lo = std::max(kb, first_of(i)), hi = std::min(kb + KB - 1, pos_of(i));
        const float* q = qb + i * hk;
        float* sc = s.scores.data() + i * span;
        for (int64_t p0 = lo; p0 <= hi; p0 += N) {
          const int64_t n = std::min(N, hi + 1 - p0);
          // N dot products (rows past the block's end read the zero padding)
          const B dots = dots_of<V>(q, kf + (p0 - kb) * hk, hk) * B(a.scale);
          float* dst = sc + p0 - first;
          if (a.softcap <= 0.0f && n == N) {
            dots.store_unaligned(dst);
            continue;
          }
          alignas(64) float v[N];
          dots.store_aligned(v);
          for (int64_t j = 0; j < n; ++j)
            dst[j] = a.softcap > 0.0f ? std::tanh(v[j] * (1.0f / a.softcap)) * a.softcap : v[j];
        }
      }
    }
    for (int64_t i = 0; i < n_q; ++i) softmax_row(s.scores.data() + i * span, span, true);
    for (int64_t kb = first; kb <= last; kb += KB) {  // O += P . V, a block of rows at a time
      const int64_t nk = std::min(KB, last + 1 - kb);
      convert(v_head, a.v_row_bytes, hv, kb, nk, vf);
      for (int64_t i = 0; i < n_q; ++i) {
        const int64_t lo = std::max(kb, first_of(i)), hi = std::min(kb + KB - 1, pos_of(i));
        if (lo > hi) continue;
        const float* v_rows = vf + (lo - kb) * hv;
        out_update<V>(hv, hi + 1 - lo, s.scores.data() + i * span + (lo - first), ob + i * hv,
                      [&](int64_t j, int64_t d) { return V::load(v_rows + j * hv + d); });
      }
    }
    for (int64_t i = 0; i < n_q; ++i) {
      const int64_t t = t0 + i / group, h = g * group + i % group;
      std::copy(ob + i * hv, ob + (i + 1) * hv, a.out + t * a.out_token_stride + h * hv);
    }
  }

  // Lane j: the dot product of q with row j of k (N rows of hk floats, hk a multiple of N).
  // The query's batches and the N accumulators stay in registers; for the usual head sizes
  // (up to 8 batches) the row stride is a constant, so every load is one base plus an offset.
  template <typename V>
  static typename V::B dots_of(const float* q, const float* k, int64_t hk) {
    switch (hk / V::N) {
      case 1:
        return dots_fixed<V, 1>(q, k);
      case 2:
        return dots_fixed<V, 2>(q, k);
      case 3:
        return dots_fixed<V, 3>(q, k);
      case 4:
        return dots_fixed<V, 4>(q, k);
      case 6:
        return dots_fixed<V, 6>(q, k);
      case 8:
        return dots_fixed<V, 8>(q, k);
      default:
        break;
    }
    using B = typename V::B;
    B acc[V::N];
    for (int64_t j = 0; j < V::N; ++j) {
      acc[j] = B(0.0f);
      for (int64_t d = 0; d < hk; d += V::N)
        acc[j] = V::fma(V::load(q + d), V::load(k + j * hk + d), acc[j]);
    }
    return V::sums(acc);
  }
  template <typename V, int ND>
  static typename V::B dots_fixed(const float* q, const float* k) {
    using B = typename V::B;
    constexpr int64_t N = V::N;
    B qr[ND], acc[N];
    for (int b = 0; b < ND; ++b) qr[b] = V::load(q + b * N);
#pragma GCC unroll 16
    for (int64_t j = 0; j < N; ++j) {
      acc[j] = B(0.0f);
      for (int b = 0; b < ND; ++b) acc[j] = V::fma(qr[b], V::load(k + (j * ND + b) * N), acc[j]);
    }
    return V::sums(acc);
  }

  // The sum of 16 floats in the order of GCC's _mm512_reduce_add_ps (as ggml's softmax groups
  // are summed on the reference machine).
  static float sum16(const float* v) {
    float t3[8], t6[4];
    for (int i = 0; i < 8; ++i) t3[i] = v[8 + i] + v[i];
    for (int i = 0; i < 4; ++i) t6[i] = t3[4 + i] + t3[i];
    return (t6[0] + t6[2]) + (t6[1] + t6[3]);
  }

  static void softmax_row(float* x, int64_t n, bool round_to_f16) {
    // The max in vectors (n is a multiple of KB, so of W): a scalar max is one dependent
    // vmaxss per score.
    fbatch m(-INFINITY);
    for (int64_t j = 0; j < n; j += W) m = xsimd::max(m, load(x + j));
    alignas(64) float lanes[W];
    m.store_aligned(lanes);
    float max = -INFINITY;
    for (int64_t j = 0; j < W; ++j) max = std::max(max, lanes[j]);
    if (max == -INFINITY) {
      std::fill(x, x + n, 0.0f);
      return;
    }
    double sum = 0.0;
    for (int64_t j = 0; j < n; j += 16) {
      for (int64_t b = 0; b < 16; b += W)
        X::expf(load(x + j + b) - fbatch(max)).store_unaligned(x + j + b);
      sum += sum16(x + j);
    }
    const fbatch inv(static_cast<float>(1.0 / sum));
    for (int64_t j = 0; j < n; j += W) {
      fbatch p = load(x + j) * inv;
      if (round_to_f16) p = IsaTraits::round_f16(p);
      p.store_unaligned(x + j);
    }
  }

  // Queries per tile of the prompt path: AVX-512 has the registers for 4 queries x 4 batches
  // of scores (and of outputs); AVX2's 16 ymm registers hold one query's 8 batches.
  static constexpr int64_t kTile = W == 16 ? 4 : 1;

  // The scaled scores of QT queries (rows of hk floats from q) against a transposed key block
  // (kt_buf: hk rows of KB keys): row t of the output at sc + t * stride.
  template <int64_t QT>
  static void raw_scores(const float* q, int64_t hk, const float* kt_buf, float scale, float* sc,
                         int64_t stride) {
    constexpr int64_t NB = KB / W;
    fbatch acc[QT][NB];
    for (int64_t t = 0; t < QT; ++t)
      for (int64_t b = 0; b < NB; ++b) acc[t][b] = fbatch(0.0f);
    for (int64_t d = 0; d < hk; ++d) {
      fbatch k[NB];
      for (int64_t b = 0; b < NB; ++b) k[b] = load(kt_buf + d * KB + b * W);
      for (int64_t t = 0; t < QT; ++t) {
        const fbatch qd(q[t * hk + d]);
        for (int64_t b = 0; b < NB; ++b) acc[t][b] = X::fmadd(qd, k[b], acc[t][b]);
      }
    }
    for (int64_t t = 0; t < QT; ++t)
      for (int64_t b = 0; b < NB; ++b)
        (acc[t][b] * fbatch(scale)).store_unaligned(sc + t * stride + b * W);
  }

  // One query's scores of one key block: the keys it does not see -inf, the soft-cap applied.
  static void mask_scores(int64_t nk, int64_t kb, int64_t k_first, int64_t pos,
                          const AttentionArgs& a, float* sc) {
    if (a.softcap <= 0.0f && nk == KB && kb >= k_first && kb + KB - 1 <= pos) return;
    const float inv_cap = a.softcap > 0.0f ? 1.0f / a.softcap : 0.0f;
    for (int64_t j = 0; j < KB; ++j) {
      const int64_t p = kb + j;
      if (j >= nk || p < k_first || p > pos) {
        sc[j] = -INFINITY;
      } else if (a.softcap > 0.0f) {  // as ggml: scale by 1/cap, tanh, scale by cap
        sc[j] = std::tanh(sc[j] * inv_cap) * a.softcap;
      }
    }
  }

  // o_t += sum_j p_t[j] v_j for QT queries (p rows `stride` apart, o rows hv apart) over n
  // rows of vb (hv floats each), four batches of the output at a time, then one.
  template <int64_t QT>
  static void out_tile(int64_t hv, int64_t n, const float* p, int64_t stride, const float* vb,
                       float* o) {
    int64_t b0 = 0;
    for (; b0 + 4 * W <= hv; b0 += 4 * W) out_tile_batches<QT, 4>(b0, hv, n, p, stride, vb, o);
    for (; b0 < hv; b0 += W) out_tile_batches<QT, 1>(b0, hv, n, p, stride, vb, o);
  }
  template <int64_t QT, int NB>
  static void out_tile_batches(int64_t b0, int64_t hv, int64_t n, const float* p, int64_t stride,
                               const float* vb, float* o) {
    fbatch acc[QT][NB];
    for (int64_t t = 0; t < QT; ++t)
      for (int b = 0; b < NB; ++b) acc[t][b] = load(o + t * hv + b0 + b * W);
    for (int64_t j = 0; j < n; ++j) {
      fbatch v[NB];
      for (int b = 0; b < NB; ++b) v[b] = load(vb + j * hv + b0 + b * W);
      for (int64_t t = 0; t < QT; ++t) {
        const fbatch pj(p[t * stride + j]);
        for (int b = 0; b < NB; ++b) acc[t][b] = X::fmadd(pj, v[b], acc[t][b]);
      }
    }
    for (int64_t t = 0; t < QT; ++t)
      for (int b = 0; b < NB; ++b) acc[t][b].store_unaligned(o + t * hv + b0 + b * W);
  }

  // o += sum_j p_j v_j, the output kept in registers: four batches at a time, then one.
  // row(j, b) gives batch b of V row j.
  template <typename V, typename Row>
  static void out_update(int64_t hv, int64_t nk, const float* p, float* o, const Row& row) {
    constexpr int64_t N = V::N;
    int64_t b0 = 0;
    for (; b0 + 4 * N <= hv; b0 += 4 * N) out_batches<V, 4>(b0, nk, p, o, row);
    for (; b0 < hv; b0 += N) out_batches<V, 1>(b0, nk, p, o, row);
  }
  template <typename V, int NB, typename Row>
  static void out_batches(int64_t b0, int64_t nk, const float* p, float* o, const Row& row) {
    using B = typename V::B;
    // Even and odd rows into two sets of accumulators: with one set, each FMA waited for the
    // previous row's (NB chains of FMA latency).
    B acc[NB], odd[NB];
    for (int b = 0; b < NB; ++b) {
      acc[b] = V::load(o + b0 + b * V::N);
      odd[b] = B(0.0f);
    }
    int64_t j = 0;
    for (; j + 2 <= nk; j += 2) {
      const B p0(p[j]), p1(p[j + 1]);
      for (int b = 0; b < NB; ++b) {
        acc[b] = V::fma(p0, row(j, b0 + b * V::N), acc[b]);
        odd[b] = V::fma(p1, row(j + 1, b0 + b * V::N), odd[b]);
      }
    }
    if (j < nk) {
      const B pj(p[j]);
      for (int b = 0; b < NB; ++b) acc[b] = V::fma(pj, row(j, b0 + b * V::N), acc[b]);
    }
    for (int b = 0; b < NB; ++b) (acc[b] + odd[b]).store_unaligned(o + b0 + b * V::N);
  }
};
