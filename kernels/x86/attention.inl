// Flash attention for x86 (kernels/attention.hpp), one source for AVX2 and AVX-512 (float
// batches of 8 or 16). Included inside an anonymous namespace after x86_kernels.inl, whose
// X86<IsaTraits> gives the batch type, FMA and the vector exponential, and after
// attention_chunks.inl (AttentionBase: the batch types, the key chunks' softmax and sums).
//
// Per work unit (KV head g, tokens [t0, t1)): every query of the unit (tokens x the query
// heads of g) is held in Q; each block of 64 keys is converted once to f32, K transposed (so
// one query's 64 scores are 64/W FMA chains over the head dimension; a tiled f16 K is stored
// transposed already) and V row-major (so P.V is a broadcast probability times V rows). The
// scores of every query of the unit are kept (n_q x keys floats), so each chunk's softmax
// (kAttentionChunk keys) is exact as ggml's: its max, the sum, the float inverse,
// probabilities rounded to f16 for an f16 V. (An online softmax rounds unnormalized
// probabilities; measured further from llama.cpp's logits on the low-bit models.) Then each
// block of V is converted once for all queries, and each chunk's output is added to the
// query's with the chunk's weight (or kept, for attention_combine).
// Generation (few queries, a tiled K) takes a direct path with no conversion pass. A tiled
// q8_0 or q4_0 K is scored in integers where the table has vpdpbusd (AVX-512, AVX-VNNI), and a
// q8_0 or q4_0 V is summed in integers there by both paths (attention_pv_q8.inl).

struct AttentionX86 : AttentionBase {
  static void run(const KernelTable& kt, const AttentionArgs& a, int64_t g, int64_t t0, int64_t t1,
                  AttentionScratch& s) {
    const int64_t group = a.n_head / a.n_head_kv, n_q = (t1 - t0) * group;
    if (!vector_path(a)) {  // heads the vector path does not take: whole, by chunk 0's call
      if (a.part_o == nullptr || a.chunk0 == 0) {
        AttentionArgs whole = a;
        whole.chunk0 = 0;
        whole.chunk1 = std::numeric_limits<int64_t>::max();
        attention_scalar(whole, g, t0, t1, s);
      }
      return;
    }
    Unit u(a, g, t0, t1, s);
    if (u.empty()) return;
    const bool wide = a.head_dim_k % W == 0 && a.head_dim_v % W == 0;
    if (n_q <= kDirectQueries && a.k_tiled &&
        (a.v_type == TensorType::F16 || int_cache_type(a.v_type))) {
      if (wide) {
        run_direct<Wide>(a, u, s);
      } else {
        run_direct<Narrow>(a, u, s);
      }
    } else {
      run_blocks(kt, a, u, s, wide);
    }
  }

  // The prompt path.
  static void run_blocks(const KernelTable& kt, const AttentionArgs& a, Unit& u,
                         AttentionScratch& s, bool wide) {
    const int64_t hk = a.head_dim_k, hv = a.head_dim_v, group = u.group, n_q = u.n_q;
    const int64_t g = u.g, t0 = u.t0, last = u.last;
    // Blocks start at a multiple of KB (keys before the first one a query sees are masked).
    const int64_t first = u.first_of(0) / KB * KB;
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
    const bool int_k = int_cache_type(a.k_type), q4_k = a.k_type == TensorType::Q4_0;
    // With a q8_0 or q4_0 K the queries quantized (kernels/attention.hpp: the score's order of
    // operations). A tiled one is scored in integers by the direct path's kernel where the
    // table has vpdpbusd (kIntegerDots); otherwise the float FMAs take the queries' values as
    // floats in qb, and the keys' scales per block in k_scales.
    const QueriesQ8 q8 = int_k ? quantize_queries(a, u, s) : QueriesQ8{};
    const bool integer_scores = kIntegerDots && int_k && a.k_tiled;
    float* ks = nullptr;  // (hk / 32, KB)
    if (int_k && !integer_scores) {
      s.k_scales.resize(static_cast<size_t>(hk / 32 * KB));
      ks = s.k_scales.data();
    }
    for (int64_t i = 0; i < n_q && !integer_scores; ++i) {
      const int64_t t = t0 + i / group, h = g * group + i % group;
      const float* src = a.q + t * a.q_token_stride + h * hk;
      // With an f16 cache ggml rounds q to f16 for the K product (and P for the V product).
      for (int64_t d = 0; d < hk; d += 8) {
        const Narrow::B v =
            int_k ? Narrow::load_i8(reinterpret_cast<const uint8_t*>(q8.values) + i * hk + d)
                  : Narrow::load(src + d);
        (f16_k ? Narrow::round_f16(v) : v).store_unaligned(qb + i * hk + d);
      }
    }
    std::fill(ob, ob + n_q * hv, 0.0f);
    const auto dequantize_k = kt.types[static_cast<uint32_t>(a.k_type)].dequantize_row;
    const auto dequantize_v = kt.types[static_cast<uint32_t>(a.v_type)].dequantize_row;
    // Pass 1: every query's scores against every block of keys (masked ones -inf). In
    // integers, kDirectQueries queries at a time over every tile with a key the unit sees
    // (the same bits as the direct path).
    // An integer P.V's V scales: gathered by the first integer score loop, else on their own.
    const bool int_v = probs_for(a) == Probs::kExp;
    const PvQ8::ScaleGather gather =
        int_v ? PvQ8::scale_gather(u, first, span) : PvQ8::ScaleGather{};
    if (integer_scores) {
      const uint8_t* k0 =
          a.k_base + g * a.k_head_stride + key_tile_offset(first, 0, a.k_pos_stride);
      const int64_t n_tiles = (last + 1 - first + kKeyTile - 1) / kKeyTile;
      for (int64_t i = 0; i < n_q; i += kDirectQueries) {
        const QueriesQ8 some = q8.from(i, hk);
        with_queries(std::min(kDirectQueries, n_q - i), [&]<int NQ>() {
          if constexpr (kIntegerDots) {
            score_all_vnni<NQ>(some, hk, k0, kKeyTile * a.k_pos_stride, n_tiles, a.scale,
                               sc + i * span, span, q4_k, int_v && i == 0 ? &gather : nullptr);
          }
        });
      }
    }
    for (int64_t kb = first; kb <= last; kb += KB) {
      const int64_t nk = std::min(KB, last + 1 - kb);
      if (integer_scores) {
        for (int64_t i = 0; i < n_q; ++i)
          mask_scores(nk, kb, u.first_of(i), u.last_of(i), a, sc + i * span + (kb - first));
        continue;
      }
      if (a.k_tiled) {  // already transposed: convert the tiles (keys past the last: zeros)
        for (int64_t j0 = 0; j0 < KB; j0 += kKeyTile) {
          const uint8_t* tile =
              a.k_base + g * a.k_head_stride + key_tile_offset(kb + j0, 0, a.k_pos_stride);
          with_fmt(a.k_type, [&]<Fmt F>() {
            for (int64_t d = 0; d < hk; ++d) {
              for (int64_t c = 0; c < kKeyTile; c += 8) {
                const __m256 v =
                    j0 >= nk ? _mm256_setzero_ps() : __m256(tile_keys<Narrow, F>(tile, d, c));
                _mm256_storeu_ps(kt_buf + d * KB + j0 + c, v);
              }
            }
          });
          const size_t tile_block = int_k ? key_tile_block_bytes(a.k_type) : 0;
          for (int64_t b = 0; int_k && b < hk / 32; ++b) {
            for (int64_t c = 0; c < kKeyTile; c += 8) {
              const __m256 v = j0 >= nk ? _mm256_setzero_ps()
                                        : __m256(Narrow::load_f16(tile + b * tile_block + 2 * c));
              _mm256_storeu_ps(ks + b * KB + j0 + c, v);
            }
          }
        }
      } else {
        for (int64_t j0 = 0; j0 < KB; j0 += 8) {  // eight keys at a time, 8x8 transposes
          auto key = [&](int64_t r) {
            return a.k_base + (kb + j0 + r) * a.k_pos_stride + g * a.k_head_stride;
          };
          if (!f16_k) {
            for (int64_t r = 0; r < 8; ++r) {
              if (j0 + r >= nk) {
                std::fill(rows + r * hk, rows + (r + 1) * hk, 0.0f);
                for (int64_t b = 0; int_k && b < hk / 32; ++b) ks[b * KB + j0 + r] = 0.0f;
              } else if (int_k) {  // the values, and the scales apart
                for (int64_t b = 0; b < hk / 32; ++b) {
                  const uint8_t* block = key(r) + row_size_bytes(a.k_type, 32) * b;
                  ks[b * KB + j0 + r] = scale_f16(block);
                  for (int64_t e = 0; e < 32; ++e) {
                    rows[r * hk + 32 * b + e] =
                        q4_k ? static_cast<float>(
                                   (e < 16 ? block[2 + e] & 0xf : block[2 + e - 16] >> 4) - 8)
                             : static_cast<int8_t>(block[2 + e]);
                  }
                }
              } else {
                dequantize_k(key(r), rows + r * hk, hk);
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
      }
      int64_t i = 0;
      auto scores = [&]<int64_t QT>() {
        float* out = sc + i * span + (kb - first);
        if (int_k) {
          raw_scores_q8<QT>(qb + i * hk, q8.scales + i * (hk / 32), hk, kt_buf, ks, a.scale, out,
                            span);
        } else {
          raw_scores<QT>(qb + i * hk, hk, kt_buf, a.scale, out, span);
        }
      };
      // kTile queries share each load of the keys
      for (; i + kTile <= n_q; i += kTile) scores.template operator()<kTile>();
      for (; i < n_q; ++i) scores.template operator()<1>();
      for (i = 0; i < n_q; ++i)
        mask_scores(nk, kb, u.first_of(i), u.last_of(i), a, sc + i * span + (kb - first));
    }
    u.softmax(sc, first, span, probs_for(a));
    if (int_v) {  // P.V in integers, a token at a time as the direct path
      if (!integer_scores) gather.keys(0, span);
      PvQ8::convert_scales(u, gather);
      PvQ8::tokens(u, first, span, sc, s.v_scales.data(), ob);
      return;
    }
    // Pass 2, chunk by chunk, block by block: each block's V rows as f32 once for every query
    // (in L1); each query's O_c = P . V in registers from zero, kept in oc between the blocks,
    // at its last block added to its output with the chunk's weight (or kept for
    // attention_combine). A query's blocks are a prefix of the chunk's: it sees keys up to
    // its position.
    const uint8_t* v_head = a.v_base + g * a.v_head_stride;
    float* oc = u.chunk_out(hv);
    for (int64_t c = first / kChunk; c <= last / kChunk; ++c) {
      const int64_t c_lo = std::max(first, c * kChunk);
      const int64_t c_hi = std::min(last, c * kChunk + kChunk - 1);
      auto finish = [&](int64_t i, int64_t d, auto sum) { u.send(i, c, d, sum, ob + i * hv); };
      for (int64_t kb = c_lo; kb <= c_hi; kb += KB) {
        const int64_t nk = std::min(KB, c_hi + 1 - kb);
        for (int64_t j = 0; j < nk; ++j) {
          const uint8_t* row = v_head + (kb + j) * a.v_pos_stride;
          if (f16_v) {
            for (int64_t d = 0; d < hv; d += 8)
              Narrow::load_f16(row + 2 * d).store_unaligned(vb + j * hv + d);
          } else {
            dequantize_v(row, vb + j * hv, hv);
          }
        }
        auto keys_of = [&](int64_t i) {  // the keys of this block query i sees (0 if none)
          return std::clamp<int64_t>(u.last_of(i) + 1 - kb, 0, nk);
        };
        // The block's role for a query: its first (sums start at zero), its last (finish).
        const bool fresh = kb == c_lo;
        auto last_block = [&](int64_t i) { return kb + KB > std::min(c_hi, u.last_of(i)); };
        int64_t i = 0;
        if (wide) {
          // Tiles of kTile queries share each V load. A tile runs to its longest query: the
          // probabilities of keys a query does not see are exact zeros (masked, then exp).
          for (; i + kTile <= n_q; i += kTile) {
            const int64_t q = i + kTile - 1, n = keys_of(q);
            if (n > 0) {
              out_tile<kTile>(hv, n, sc + i * span + (kb - first), span, vb, oc + i * hv,
                              {fresh, last_block(q), i}, finish);
            }
          }
        }
        for (; i < n_q; ++i) {
          const int64_t n = keys_of(i);
          if (n == 0) continue;
          const float* p = sc + i * span + (kb - first);
          const Steps steps{fresh, last_block(i), i};
          if (wide) {
            out_update<Wide>(hv, n, p, oc + i * hv, steps, finish,
                             [&](int64_t j, int64_t d) { return Wide::load(vb + j * hv + d); });
          } else {
            out_update<Narrow>(hv, n, p, oc + i * hv, steps, finish,
                               [&](int64_t j, int64_t d) { return Narrow::load(vb + j * hv + d); });
          }
        }
      }
      for (int64_t i = 0; i < n_q; ++i) u.keep_stats(i, c);
    }
    for (int64_t i = 0; i < n_q; ++i) u.copy_out(i, ob + i * hv);
  }

  // Few queries (generation, up to 8: the query heads of one KV head for one token) on a tiled
  // K and an f16, q8_0 or q4_0 V, read straight from the cache with no conversion pass:
  // - scores: a tile's keys of one dimension are a vector, so a batch of W keys' scores is an
  //   FMA chain over the head's dimensions, each step one converted K vector times a broadcast
  //   query value (the queries transposed, so query i's value of dimension e is qt[e * NQ + i]);
  //   NQ queries share each K vector, and NB batches run side by side;
  // - the softmax of the block path;
  // - O += P . V for the queries of each token (they see the same keys): each V row is
  //   converted once per C batches of the head and used by all NQ queries, blocks of 64 rows
  //   at a time so the second batch group reads them from L1.
  // Software prefetch distances: the model's cache is read from memory (88 MB a token for
  // TinyLlama at depth 4096), and the hardware prefetcher alone left one layer's attention at
  // 2.5x its time from cache. Four tiles of K ahead, 64 rows of V ahead (8 KB at head 64).
  static constexpr int64_t kPrefetchTiles = 4;
  static constexpr int64_t kPrefetchRows = 64;

  template <typename V>
  static void run_direct(const AttentionArgs& a, Unit& u, AttentionScratch& s) {
    const int64_t hk = a.head_dim_k, hv = a.head_dim_v, group = u.group, n_q = u.n_q;
    const int64_t g = u.g, t0 = u.t0, t1 = u.t1, last = u.last;
    const int64_t first = u.first_of(0) / kKeyTile * kKeyTile;
    const int64_t span = (last + 1 - first + kKeyTile - 1) / kKeyTile * kKeyTile;
    s.queries.resize(static_cast<size_t>(n_q * hk));
    s.scores.resize(static_cast<size_t>(n_q * span));
    float* qt = s.queries.data();  // (hk, n_q) the queries transposed, rounded to f16 as ggml
    float* sc = s.scores.data();   // (n_q, span) scores, then probabilities
    const bool f16_k = a.k_type == TensorType::F16;
    // A q8_0 or q4_0 K's queries quantized (the float path takes their values from qt).
    const QueriesQ8 q8 = f16_k ? QueriesQ8{} : quantize_queries(a, u, s);
    for (int64_t i = 0; i < n_q; ++i) {
      const int64_t t = t0 + i / group, h = g * group + i % group;
      const float* src = a.q + t * a.q_token_stride + h * hk;
      alignas(32) float r[8];
      for (int64_t d = 0; d < hk; d += 8) {
        const Narrow::B v =
            f16_k ? Narrow::round_f16(Narrow::load(src + d))
                  : Narrow::load_i8(reinterpret_cast<const uint8_t*>(q8.values) + i * hk + d);
        v.store_aligned(r);
        for (int64_t c = 0; c < 8; ++c) qt[(d + c) * n_q + i] = r[c];
      }
    }
    const uint8_t* k0 = a.k_base + g * a.k_head_stride + key_tile_offset(first, 0, a.k_pos_stride);
    const size_t tile_bytes = kKeyTile * a.k_pos_stride;
    const bool int_v = probs_for(a) == Probs::kExp;
    // An integer P.V's V scales: gathered by the integer score loop, else on their own.
    const PvQ8::ScaleGather gather =
        int_v ? PvQ8::scale_gather(u, first, span) : PvQ8::ScaleGather{};
    const bool gathered = int_v && kIntegerDots && !f16_k;
    with_queries(n_q, [&]<int NQ>() {
      if (f16_k) {
        score_all<NQ, Fmt::kF16>(qt, nullptr, hk, k0, tile_bytes, span / W, a.scale, sc, span);
      } else if constexpr (kIntegerDots) {
        score_all_vnni<NQ>(q8, hk, k0, tile_bytes, span / kKeyTile, a.scale, sc, span,
                           a.k_type == TensorType::Q4_0, gathered ? &gather : nullptr);
      } else if (a.k_type == TensorType::Q8_0) {
        score_all<NQ, Fmt::kQ8>(qt, q8.scales, hk, k0, tile_bytes, span / W, a.scale, sc, span);
      } else {
        score_all<NQ, Fmt::kQ4>(qt, q8.scales, hk, k0, tile_bytes, span / W, a.scale, sc, span);
      }
    });
    for (int64_t i = 0; i < n_q; ++i) {
      float* row = sc + i * span;
      const int64_t lo = std::min(u.first_of(i) - first, span), hi = u.last_of(i) - first;
      std::fill(row, row + lo, -INFINITY);
      std::fill(row + std::max(lo, hi + 1), row + span, -INFINITY);
      if (a.softcap > 0.0f) {
        for (int64_t j = lo; j <= hi; ++j)
          row[j] = std::tanh(row[j] * (1.0f / a.softcap)) * a.softcap;
      }
    }
    u.softmax(sc, first, span, probs_for(a));
    if (int_v && !gathered) gather.keys(0, span);
    if (int_v) PvQ8::convert_scales(u, gather);
    // O_c = P . V per token and chunk, in registers from zero (kept in oc between blocks of
    // 64 rows), at the chunk's last block added to the output with the chunk's weight (or
    // kept for attention_combine). The token's queries are the group's heads, consecutive
    // output rows.
    const uint8_t* v_head = a.v_base + g * a.v_head_stride;
    float* oc = u.chunk_out(hv);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i0 = (t - t0) * group;
      float* o = a.out + t * a.out_token_stride + g * group * hv;
      if (a.part_o == nullptr) std::fill(o, o + group * hv, 0.0f);
      const int64_t lo = u.first_of(i0), hi = u.last_of(i0);
      for (int64_t c = lo / kChunk; c <= hi / kChunk; ++c) {
        const int64_t c_lo = std::max(lo, c * kChunk);
        const int64_t c_hi = std::min(hi, c * kChunk + kChunk - 1);
        auto finish = [&](int64_t i, int64_t d, auto sum) {
          u.send(i, c, d, sum, o + (i - i0) * hv);
        };
        with_queries(group, [&]<int NQ>() {
          if (int_v) {
            PvQ8::chunk<NQ>(u, v_head + first * a.v_pos_stride, a.v_pos_stride, first, span,
                            sc + i0 * span, s.v_scales.data(), i0, c, c_lo, c_hi, finish);
            return;
          }
          for (int64_t kb = c_lo; kb <= c_hi; kb += KB) {
            const int64_t n = std::min(KB, c_hi + 1 - kb);
            const float* p = sc + i0 * span + (kb - first);
            const uint8_t* rows = v_head + kb * a.v_pos_stride;
            const Steps steps{kb == c_lo, kb + KB > c_hi, i0};
            // Batches of the head per pass: NQ x C accumulators, within 16 of the registers
            // (AVX-512 has 32, AVX2 16). On AVX2 at least 2, as score_all's NB.
            constexpr int C = W == 16 ? (NQ <= 4 ? 4 : 2) : (NQ <= 2 ? 4 : 2);
            auto pass = [&]<int CB>(int64_t d0) {
              with_fmt(a.v_type, [&]<Fmt F>() {
                pv_batches<V, NQ, CB, F>(rows, a.v_pos_stride, n, d0, p, span, oc, hv, steps,
                                         finish);
              });
            };
            int64_t d0 = 0;
            for (; d0 + C * V::N <= hv; d0 += C * V::N) pass.template operator()<C>(d0);
            for (; d0 < hv; d0 += V::N) pass.template operator()<1>(d0);
          }
        });
        for (int64_t q = 0; q < group; ++q) u.keep_stats(i0 + q, c);
      }
    }
  }

  // Keys [c, c + V::N) of element e of a K tile, as floats: f16 values, or q8_0 (q4_0) values
  // without their scales.
  template <typename V, Fmt F>
  static typename V::B tile_keys(const uint8_t* tile, int64_t e, int64_t c) {
    if constexpr (F == Fmt::kF16) {
      return V::load_f16(tile + (e * kKeyTile + c) * 2);
    } else if constexpr (F == Fmt::kQ8) {
      const uint8_t* group =
          tile + (e / 32) * kQ8TileBlock + 2 * kKeyTile + (e % 32) / 4 * kQ8TileGroup;
      return V::load_biased_byte(group + 4 * c, static_cast<int>(e % 4));
    } else {  // group (e % 16) / 4, byte e % 4, the high nibble for elements 16 to 31
      const uint8_t* group =
          tile + (e / 32) * kQ4TileBlock + 2 * kKeyTile + (e % 16) / 4 * kQ8TileGroup;
      return V::load_lane_nibble(group + 4 * c, static_cast<int>(8 * (e % 4) + (e % 32) / 16 * 4));
    }
  }
  // A tile's bytes of a block of 32 elements.
  template <Fmt F>
  static constexpr size_t tile_block_bytes() {
    return F == Fmt::kQ4 ? kQ4TileBlock : kQ8TileBlock;
  }
  static float scale_f16(const uint8_t* p) {
    uint16_t d;
    std::memcpy(&d, p, 2);
    return _cvtsh_ss(d);
  }

  // A q8_0 or q4_0 K's queries (kernels/attention.hpp), quantized once per call: query i's values
  // at values + i * hk, its blocks' scales and sums of values at scales and sums + i * hk / 32.
  // For AVX-512's integer scores the same per group of kDirectQueries queries (query i in group
  // i / 8, slot i % 8), query-minor so that one pointer reaches every query's operand: at
  // words + (blk * 8 + w) * 8 + slot, the query's 4 values [4w, 4w + 4) of block blk; at
  // bias + blk * 8 + slot, minus the keys' bias (128, a q4_0 K's 8) times the block's sum; at
  // dq + blk * 8 + slot, the block's scale. A group's words take hk / 32 * 64 entries, its bias
  // and dq hk / 32 * 8.
  struct QueriesQ8 {
    const int8_t* values = nullptr;
    const float* scales = nullptr;
    const int32_t* sums = nullptr;
    const int32_t* words = nullptr;
    const int32_t* bias = nullptr;
    const float* dq = nullptr;
    // Queries from i (a multiple of kDirectQueries) on.
    QueriesQ8 from(int64_t i, int64_t hk) const {
      const int64_t nb = hk / 32, group = i / kDirectQueries;
      return {values + i * hk,
              scales + i * nb,
              sums + i * nb,
              words == nullptr ? nullptr : words + group * nb * 64,
              bias == nullptr ? nullptr : bias + group * nb * 8,
              dq == nullptr ? nullptr : dq + group * nb * 8};
    }
  };
  static QueriesQ8 quantize_queries(const AttentionArgs& a, const Unit& u, AttentionScratch& s) {
    const int64_t hk = a.head_dim_k, nb = hk / 32;
    s.q8.resize(static_cast<size_t>(u.n_q * hk));
    s.q_scales.resize(static_cast<size_t>(u.n_q * nb));
    s.q_sums.resize(static_cast<size_t>(u.n_q * nb));
    for (int64_t i = 0; i < u.n_q; ++i) {
      const int64_t t = u.t0 + i / u.group, h = u.g * u.group + i % u.group;
      quantize_query_q8(a.q + t * a.q_token_stride + h * hk, hk, s.q8.data() + i * hk,
                        s.q_scales.data() + i * nb, s.q_sums.data() + i * nb);
    }
    QueriesQ8 q{s.q8.data(), s.q_scales.data(), s.q_sums.data()};
    if (!(kIntegerDots && W == 16 && a.k_tiled)) return q;
    const int64_t groups = (u.n_q + kDirectQueries - 1) / kDirectQueries;
    s.q_words.assign(static_cast<size_t>(groups * nb * 64), 0);
    s.q_bias.assign(static_cast<size_t>(groups * nb * 8), 0);
    s.q_dq.assign(static_cast<size_t>(groups * nb * 8), 0.0f);
    const int32_t key_bias = a.k_type == TensorType::Q4_0 ? 8 : 128;
    for (int64_t i = 0; i < u.n_q; ++i) {
      const int64_t group = i / kDirectQueries, slot = i % kDirectQueries;
      for (int64_t blk = 0; blk < nb; ++blk) {
        const int64_t at = (group * nb + blk) * 8 + slot;
        s.q_bias[static_cast<size_t>(at)] = -key_bias * q.sums[i * nb + blk];
        s.q_dq[static_cast<size_t>(at)] = q.scales[i * nb + blk];
        for (int64_t w = 0; w < 8; ++w) {
          std::memcpy(&s.q_words[static_cast<size_t>(((group * nb + blk) * 8 + w) * 8 + slot)],
                      q.values + i * hk + blk * 32 + 4 * w, 4);
        }
      }
    }
    q.words = s.q_words.data();
    q.bias = s.q_bias.data();
    q.dq = s.q_dq.data();
    return q;
  }
  // Values [d, d + V::N) of an f16, q8_0 or q4_0 row, as floats (as the row's dequantization).
  template <typename V, Fmt F>
  static typename V::B row_values(const uint8_t* row, int64_t d) {
    if constexpr (F == Fmt::kF16) {
      return V::load_f16(row + 2 * d);
    } else if constexpr (F == Fmt::kQ8) {
      const uint8_t* block = row + d / 32 * 34;
      return V::load_i8(block + 2 + d % 32) * typename V::B(scale_f16(block));
    } else {
      const uint8_t* block = row + d / 32 * 18;
      return V::load_nibbles(block + 2 + d % 16, d % 32 >= 16) * typename V::B(scale_f16(block));
    }
  }

  static void prefetch(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
  }

  // Scores of NQ queries against n_batches batches of W keys from k0 (tiles tile_bytes
  // apart), row i of the output at sc + i * stride. NB batches per pass keep enough FMA
  // chains in flight: the registers hold NQ x NB accumulators. On AVX2 NB is at least 2: for 8
  // queries that is 16 accumulators, and GCC keeps three of them on the stack, yet one-layer
  // attention ran 7-22% faster than with one batch (session 59). With a q8_0 K (Fmt::kQ8) the query
  // values qt are integers, and each block of 32 is summed apart, then taken times its scales
  // into the output row (kernels/attention.hpp; query i's scales at q_scales + i * hk / 32).
  // A q4_0 K (F == Fmt::kQ4) the same.
  template <int NQ, Fmt F>
  static void score_all(const float* qt, const float* q_scales, int64_t hk, const uint8_t* k0,
                        size_t tile_bytes, int64_t n_batches, float scale, float* sc,
                        int64_t stride) {
    constexpr int NB = W == 16 ? std::min(8, std::max(2, 16 / NQ)) : std::max(2, 8 / NQ);
    int64_t b = 0;
    for (; b + NB <= n_batches; b += NB)
      score_batches<NQ, NB, F>(qt, q_scales, hk, k0, tile_bytes, b, scale, sc, stride);
    for (; b < n_batches; ++b)
      score_batches<NQ, 1, F>(qt, q_scales, hk, k0, tile_bytes, b, scale, sc, stride);
  }
  template <int NQ, int NB, Fmt F>
  static void score_batches(const float* qt, const float* q_scales, int64_t hk, const uint8_t* k0,
                            size_t tile_bytes, int64_t b, float scale, float* sc, int64_t stride) {
    const uint8_t* tile[NB];
    int64_t col[NB];
    for (int u = 0; u < NB; ++u) {
      const int64_t key = (b + u) * W;
      tile[u] = k0 + static_cast<size_t>(key / kKeyTile) * tile_bytes;
      col[u] = key % kKeyTile;
    }
    // A tile's bytes per element of the row (f16: 16 keys' values; q8_0: the same and a share
    // of the scales; q4_0 about half), for the prefetch ahead.
    constexpr bool Q = F != Fmt::kF16;
    constexpr int64_t kTileBytesPerE =
        Q ? static_cast<int64_t>(tile_block_bytes<F>()) / 32 : 2 * kKeyTile;
    const int64_t run = Q ? 32 : hk;  // elements summed before the scales
    for (int64_t e0 = 0; e0 < hk; e0 += run) {
      // (Every loop over queries and batches is unrolled whole, or GCC keeps the accumulators
      // on the stack: it had zeroed them with a memset.)
      fbatch acc[NQ][NB];
#pragma GCC unroll 16
      for (int i = 0; i < NQ; ++i)
#pragma GCC unroll 16
        for (int u = 0; u < NB; ++u) acc[i][u] = fbatch(0.0f);
      for (int64_t e = e0; e < e0 + run; ++e) {
        fbatch k[NB];
#pragma GCC unroll 16
        for (int u = 0; u < NB; ++u) {
          if (e % 2 == 0) prefetch(tile[u] + kPrefetchTiles * tile_bytes + e * kTileBytesPerE);
          k[u] = tile_keys<Wide, F>(tile[u], e, col[u]);
        }
#pragma GCC unroll 16
        for (int i = 0; i < NQ; ++i) {
          const fbatch q(qt[e * NQ + i]);
#pragma GCC unroll 16
          for (int u = 0; u < NB; ++u) acc[i][u] = X::fmadd(q, k[u], acc[i][u]);
        }
      }
#pragma GCC unroll 16
      for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 16
        for (int u = 0; u < NB; ++u) {
          float* out = sc + i * stride + (b + u) * W;
          if constexpr (!Q) {
            (acc[i][u] * fbatch(scale)).store_unaligned(out);
          } else {
            const int64_t blk = e0 / 32;
            const uint8_t* scales = tile[u] + blk * tile_block_bytes<F>() + 2 * col[u];
            add_block_scores(acc[i][u], Wide::load_f16(scales), q_scales[i * (hk / 32) + blk],
                             blk == 0, e0 + run == hk, scale, out);
          }
        }
      }
    }
  }

  // A q8_0 (q4_0) K's block of W scores into their row (kernels/attention.hpp: the order of
  // operations every path shares): the block's exact sums times the keys' and the query's
  // scales, added to the earlier blocks' (0 for the first), times scale after the last.
  static void add_block_scores(fbatch sums, fbatch k_scales, float q_scale, bool first, bool last,
                               float scale, float* out) {
    fbatch v = X::fmadd(sums, k_scales * fbatch(q_scale), first ? fbatch(0.0f) : load(out));
    if (last) v = v * fbatch(scale);
    v.store_unaligned(out);
  }

  // score_all for a q8_0 or q4_0 (q4) K in integers, on the tables with vpdpbusd: it multiplies
  // 4 of a key's values (plus 128, unsigned; a q4_0 key's nibbles, its values plus 8) by 4 of a
  // query's (signed) and adds them to the key's lane; 128 (8) times the block's sum of the
  // query's values comes off, and the block's exact sum goes on as the float path's does
  // (kernels/attention.hpp), so the scores have its bits.
  // - AVX-512: a batch is a tile; NT tiles per pass, NQ x NT sums in registers, each block's
  //   added into the output row (as AVX-VNNI's).
  // - AVX-VNNI: a batch is half a tile (8 keys); NB batches per pass, NQ x NB sums in
  //   registers, each block's added into the output row (16 registers hold no more).
  // With a gather, the V scales of each pass's keys are gathered before it (PvQ8::ScaleGather):
  // the loads, which wait on memory, go on beside the pass's integer dots.
  template <int NQ>
  static void score_all_vnni(const QueriesQ8& q, int64_t hk, const uint8_t* k0, size_t tile_bytes,
                             int64_t n_tiles, float scale, float* sc, int64_t stride, bool q4,
                             const PvQ8::ScaleGather* gather = nullptr) {
    if (q4) {
      score_all_vnni<NQ, true>(q, hk, k0, tile_bytes, n_tiles, scale, sc, stride, gather);
    } else {
      score_all_vnni<NQ, false>(q, hk, k0, tile_bytes, n_tiles, scale, sc, stride, gather);
    }
  }
  template <int NQ, bool Q4>
  static void score_all_vnni(const QueriesQ8& q, int64_t hk, const uint8_t* k0, size_t tile_bytes,
                             int64_t n_tiles, float scale, float* sc, int64_t stride,
                             const PvQ8::ScaleGather* gather) {
    int64_t b = 0;
    auto pass = [&](int64_t key0, int64_t key1, const auto& f) {  // keys [key0, key1)
      if (gather != nullptr) gather->keys(key0, key1);
      f();
    };
    if constexpr (W == 16) {
      // 16 sums at most in registers, each query's broadcast shared by NT tiles.
      constexpr int NT = std::clamp(16 / NQ, 1, 4);
      for (; b + NT <= n_tiles; b += NT) {
        pass(b * kKeyTile, (b + NT) * kKeyTile,
             [&] { score_tiles_vnni<NQ, NT, Q4>(q, hk, k0, tile_bytes, b, scale, sc, stride); });
      }
      for (; b < n_tiles; ++b) {
        pass(b * kKeyTile, (b + 1) * kKeyTile,
             [&] { score_tiles_vnni<NQ, 1, Q4>(q, hk, k0, tile_bytes, b, scale, sc, stride); });
      }
    } else {
      // (Wider, GCC kept loaded keys on the stack: 8 or 4 batches of one query.)
      constexpr int NB = NQ == 1 ? 2 : std::min(4, std::max(1, 8 / NQ));
      const int64_t n_batches = n_tiles * (kKeyTile / W);
      for (; b + NB <= n_batches; b += NB) {
        pass(b * W, (b + NB) * W,
             [&] { score_halves_vnni<NQ, NB, Q4>(q, hk, k0, tile_bytes, b, scale, sc, stride); });
      }
      for (; b < n_batches; ++b) {
        pass(b * W, (b + 1) * W,
             [&] { score_halves_vnni<NQ, 1, Q4>(q, hk, k0, tile_bytes, b, scale, sc, stride); });
      }
    }
  }
  // AVX-VNNI: batches [b, b + NB) of 8 keys (each half a tile) for NQ queries. (Not inlined:
  // inside the callers' loops GCC kept sums on the stack.)
  template <int NQ, int NB, bool Q4>
  [[gnu::noinline]] static void score_halves_vnni(const QueriesQ8& q, int64_t hk, const uint8_t* k0,
                                                  size_t tile_bytes, int64_t b, float scale,
                                                  float* sc, int64_t stride) {
    const int64_t nb = hk / 32;
    const uint8_t* tile[NB];
    int64_t col[NB];  // the batch's first key in its tile
#pragma GCC unroll 16
    for (int u = 0; u < NB; ++u) {
      const int64_t key = (b + u) * W;
      tile[u] = k0 + static_cast<size_t>(key / kKeyTile) * tile_bytes;
      col[u] = key % kKeyTile;
    }
    constexpr int32_t kBias = Q4 ? 8 : 128;  // the keys' bias
    constexpr size_t kBlock = Q4 ? kQ4TileBlock : kQ8TileBlock;
    for (int64_t blk = 0; blk < nb; ++blk) {
      __m256i sum[NQ][NB];
#pragma GCC unroll 16
      for (int i = 0; i < NQ; ++i) {
        const __m256i off = _mm256_set1_epi32(-kBias * q.sums[i * nb + blk]);
#pragma GCC unroll 16
        for (int u = 0; u < NB; ++u) sum[i][u] = off;
      }
      const size_t block = static_cast<size_t>(blk) * kBlock;
      // Per group, the keys' bytes and the query's 4 values at [4g, 4g + 4) of the block; a
      // q4_0 group's high nibbles go with the query's values at 16 + 4g.
      auto step = [&](const __m256i(&kv)[NB], int at) {
#pragma GCC unroll 16
        for (int i = 0; i < NQ; ++i) {
          int32_t four;
          std::memcpy(&four, q.values + i * hk + blk * 32 + at, 4);
          const __m256i qb = _mm256_set1_epi32(four);
#pragma GCC unroll 16
          for (int u = 0; u < NB; ++u) sum[i][u] = IsaTraits::dot_acc(sum[i][u], kv[u], qb);
        }
      };
#pragma GCC unroll 8
      for (int g = 0; g < (Q4 ? 4 : 8); ++g) {
        __m256i kv[NB];
#pragma GCC unroll 16
        for (int u = 0; u < NB; ++u) {
          const uint8_t* p = tile[u] + block + 2 * kKeyTile + g * kQ8TileGroup;
          if (col[u] == 0) prefetch(p + kPrefetchTiles * tile_bytes);
          kv[u] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4 * col[u]));
        }
        if constexpr (Q4) {
          const __m256i low = _mm256_set1_epi8(15);
          __m256i hi[NB];
#pragma GCC unroll 16
          for (int u = 0; u < NB; ++u) {
            hi[u] = _mm256_and_si256(_mm256_srli_epi16(kv[u], 4), low);
            kv[u] = _mm256_and_si256(kv[u], low);
          }
          step(kv, 4 * g);
          step(hi, 16 + 4 * g);
        } else {
          step(kv, 4 * g);
        }
      }
#pragma GCC unroll 16
      for (int u = 0; u < NB; ++u) {
        if (col[u] == 0) prefetch(tile[u] + block + kPrefetchTiles * tile_bytes);
        const fbatch dk = IsaTraits::load_f16(tile[u] + block + 2 * col[u]);
#pragma GCC unroll 16
        for (int i = 0; i < NQ; ++i) {
          add_block_scores(fbatch(_mm256_cvtepi32_ps(sum[i][u])), dk, q.scales[i * nb + blk],
                           blk == 0, blk == nb - 1, scale, sc + i * stride + (b + u) * W);
        }
      }
    }
  }
  // AVX-512: tiles [b, b + NT) for NQ queries (q.words, q.bias, q.dq: QueriesQ8), NQ x NT
  // sums in registers; each block's scores go through the output rows (kept in L1), so the
  // float operations are add_block_scores's. (Not inlined: inside the callers' loops GCC kept
  // sums on the stack.)
  template <int NQ, int NT, bool Q4>
  [[gnu::noinline]] static void score_tiles_vnni(const QueriesQ8& q, int64_t hk, const uint8_t* k0,
                                                 size_t tile_bytes, int64_t b, float scale,
                                                 float* sc, int64_t stride) {
    if constexpr (W == 16) {
      const int64_t nb = hk / 32;
      constexpr size_t kBlock = Q4 ? kQ4TileBlock : kQ8TileBlock;
      const uint8_t* tiles = k0 + static_cast<size_t>(b) * tile_bytes;
      for (int64_t blk = 0; blk < nb; ++blk) {
        const int32_t* words = q.words + blk * 64;
        const int32_t* bias = q.bias + blk * 8;
        __m512i sum[NQ][NT];
#pragma GCC unroll 16
        for (int i = 0; i < NQ; ++i) {
          const __m512i off = _mm512_set1_epi32(bias[i]);
#pragma GCC unroll 16
          for (int u = 0; u < NT; ++u) sum[i][u] = off;
        }
        const uint8_t* groups = tiles + static_cast<size_t>(blk) * kBlock + 2 * kKeyTile;
        // Per group, the keys' bytes and the query's 4 values [4w, 4w + 4) of the block (a
        // q4_0 group g's low nibbles take w = g, its high ones w = 4 + g).
        auto step = [&](const __m512i(&kv)[NT], int w) {
#pragma GCC unroll 16
          for (int i = 0; i < NQ; ++i) {
            const __m512i qb = _mm512_set1_epi32(words[w * 8 + i]);
#pragma GCC unroll 16
            for (int u = 0; u < NT; ++u) sum[i][u] = _mm512_dpbusd_epi32(sum[i][u], kv[u], qb);
          }
        };
#pragma GCC unroll 8
        for (int g = 0; g < (Q4 ? 4 : 8); ++g) {
          __m512i kv[NT];
#pragma GCC unroll 16
          for (int u = 0; u < NT; ++u) {
            const uint8_t* p = groups + u * tile_bytes + g * kQ8TileGroup;
            prefetch(p + kPrefetchTiles * tile_bytes);
            kv[u] = _mm512_loadu_si512(p);
          }
          if constexpr (Q4) {
            const __m512i low = _mm512_set1_epi8(15);
            __m512i hi[NT];
#pragma GCC unroll 16
            for (int u = 0; u < NT; ++u) {
              hi[u] = _mm512_and_si512(_mm512_srli_epi16(kv[u], 4), low);
              kv[u] = _mm512_and_si512(kv[u], low);
            }
            step(kv, g);
            step(hi, 4 + g);
          } else {
            step(kv, g);
          }
        }
        using Out = FbatchOf<NQ>;
#pragma GCC unroll 16
        for (int u = 0; u < NT; ++u) {
          const uint8_t* scales = tiles + u * tile_bytes + static_cast<size_t>(blk) * kBlock;
          prefetch(scales + kPrefetchTiles * tile_bytes);
          const Out dk(
              _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales))));
#pragma GCC unroll 16
          for (int i = 0; i < NQ; ++i) {
            add_block_scores(Out(_mm512_cvtepi32_ps(sum[i][u])), dk, q.dq[blk * 8 + i], blk == 0,
                             blk == nb - 1, scale, sc + i * stride + (b + u) * W);
          }
        }
      }
    }
  }

  // o_i[d0, d0 + C * N) += sum_j p_i[j] v_j for NQ queries over n V rows of format F
  // (row_bytes apart); p_i at p + i * stride, o_i at o + i * hv.
  template <typename V, int NQ, int C, Fmt F, typename Finish>
  static void pv_batches(const uint8_t* rows, size_t row_bytes, int64_t n, int64_t d0,
                         const float* p, int64_t stride, float* oc, int64_t hv, Steps steps,
                         const Finish& finish) {
    using B = typename V::B;
    B acc[NQ][C];
#pragma GCC unroll 16
    for (int i = 0; i < NQ; ++i)
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c)
        acc[i][c] = steps.fresh ? B(0.0f) : V::load(oc + i * hv + d0 + c * V::N);
    for (int64_t j = 0; j < n; ++j) {
      if (d0 == 0) {  // the row's lines, once
        const int64_t head_row = F == Fmt::kQ8   ? hv / 32 * 34
                                 : F == Fmt::kQ4 ? hv / 32 * 18
                                                 : 2 * hv;
        for (int64_t b = 0; b < head_row; b += 64)
          prefetch(rows + (j + kPrefetchRows) * row_bytes + b);
      }
      B v[C];
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) v[c] = row_values<V, F>(rows + j * row_bytes, d0 + c * V::N);
#pragma GCC unroll 16
      for (int i = 0; i < NQ; ++i) {
        const B pj(p[i * stride + j]);
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c) acc[i][c] = V::fma(pj, v[c], acc[i][c]);
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) {
        if (steps.last) {
          finish(steps.i0 + i, d0 + c * V::N, acc[i][c]);
        } else {
          acc[i][c].store_unaligned(oc + i * hv + d0 + c * V::N);
        }
      }
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

  // The same for a q8_0 or q4_0 K: q holds the queries' values (integers), q_scales their blocks'
  // scales (rows of hk / 32), kt_buf the keys' values and ks their blocks' scales (rows of
  // KB); each block of 32 is summed apart, then taken times its scales (kernels/attention.hpp).
  template <int64_t QT>
  static void raw_scores_q8(const float* q, const float* q_scales, int64_t hk, const float* kt_buf,
                            const float* ks, float scale, float* sc, int64_t stride) {
    constexpr int64_t NB = KB / W;
    const int64_t nb = hk / 32;
    for (int64_t blk = 0; blk < nb; ++blk) {
      fbatch acc[QT][NB];
      for (int64_t t = 0; t < QT; ++t)
        for (int64_t b = 0; b < NB; ++b) acc[t][b] = fbatch(0.0f);
      for (int64_t d = 32 * blk; d < 32 * blk + 32; ++d) {
        fbatch k[NB];
        for (int64_t b = 0; b < NB; ++b) k[b] = load(kt_buf + d * KB + b * W);
        for (int64_t t = 0; t < QT; ++t) {
          const fbatch qd(q[t * hk + d]);
          for (int64_t b = 0; b < NB; ++b) acc[t][b] = X::fmadd(qd, k[b], acc[t][b]);
        }
      }
      for (int64_t t = 0; t < QT; ++t) {
        for (int64_t b = 0; b < NB; ++b) {
          float* out = sc + t * stride + b * W;
          add_block_scores(acc[t][b], load(ks + blk * KB + b * W), q_scales[t * nb + blk], blk == 0,
                           blk == nb - 1, scale, out);
        }
      }
    }
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

  // sum_j p_t[j] v_j for QT queries (p rows `stride` apart, oc rows hv apart) over n rows of vb
  // (hv floats each), in registers, four batches of the output at a time, then one.
  template <int64_t QT, typename Finish>
  static void out_tile(int64_t hv, int64_t n, const float* p, int64_t stride, const float* vb,
                       float* oc, Steps steps, const Finish& finish) {
    int64_t b0 = 0;
    for (; b0 + 4 * W <= hv; b0 += 4 * W)
      out_tile_batches<QT, 4>(b0, hv, n, p, stride, vb, oc, steps, finish);
    for (; b0 < hv; b0 += W) out_tile_batches<QT, 1>(b0, hv, n, p, stride, vb, oc, steps, finish);
  }
  template <int64_t QT, int NB, typename Finish>
  static void out_tile_batches(int64_t b0, int64_t hv, int64_t n, const float* p, int64_t stride,
                               const float* vb, float* oc, Steps steps, const Finish& finish) {
    fbatch acc[QT][NB];
    for (int64_t t = 0; t < QT; ++t) {
      for (int b = 0; b < NB; ++b)
        acc[t][b] = steps.fresh ? fbatch(0.0f) : load(oc + t * hv + b0 + b * W);
    }
    for (int64_t j = 0; j < n; ++j) {
      fbatch v[NB];
      for (int b = 0; b < NB; ++b) v[b] = load(vb + j * hv + b0 + b * W);
      for (int64_t t = 0; t < QT; ++t) {
        const fbatch pj(p[t * stride + j]);
        for (int b = 0; b < NB; ++b) acc[t][b] = X::fmadd(pj, v[b], acc[t][b]);
      }
    }
    for (int64_t t = 0; t < QT; ++t) {
      for (int b = 0; b < NB; ++b) {
        if (steps.last) {
          finish(steps.i0 + t, b0 + b * W, acc[t][b]);
        } else {
          acc[t][b].store_unaligned(oc + t * hv + b0 + b * W);
        }
      }
    }
  }

  // The same for one query, in V's batches. row(j, d) gives batch d of V row j.
  template <typename V, typename Finish, typename Row>
  static void out_update(int64_t hv, int64_t nk, const float* p, float* oc, Steps steps,
                         const Finish& finish, const Row& row) {
    constexpr int64_t N = V::N;
    int64_t b0 = 0;
    for (; b0 + 4 * N <= hv; b0 += 4 * N) out_batches<V, 4>(b0, nk, p, oc, steps, finish, row);
    for (; b0 < hv; b0 += N) out_batches<V, 1>(b0, nk, p, oc, steps, finish, row);
  }
  template <typename V, int NB, typename Finish, typename Row>
  static void out_batches(int64_t b0, int64_t nk, const float* p, float* oc, Steps steps,
                          const Finish& finish, const Row& row) {
    using B = typename V::B;
    // One chain per output batch, keys in order: every path sums P.V in this order, so a
    // token's output does not depend on how a prompt was split into batches.
    B acc[NB];
    for (int b = 0; b < NB; ++b) acc[b] = steps.fresh ? B(0.0f) : V::load(oc + b0 + b * V::N);
    for (int64_t j = 0; j < nk; ++j) {
      const B pj(p[j]);
      for (int b = 0; b < NB; ++b) acc[b] = V::fma(pj, row(j, b0 + b * V::N), acc[b]);
    }
    for (int b = 0; b < NB; ++b) {
      if (steps.last) {
        finish(steps.i0, b0 + b * V::N, acc[b]);
      } else {
        acc[b].store_unaligned(oc + b0 + b * V::N);
      }
    }
  }
};
