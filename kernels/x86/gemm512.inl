// GEMM panels on 512-bit registers (the AVX-512 table; decision record: docs/kernels.md,
// "GEMM on AVX-512"). A panel holds 16 weight rows interleaved 4 bytes at a time, so one zmm
// register carries 4 values of each of 16 rows and one vpdpbusd with a broadcast of 4
// activation bytes multiplies all 16 rows. The panels of a block of rows are decoded once over
// the whole reduction dimension; a tile of 16 rows x 8 tokens then keeps its accumulators in
// registers over every column and stores each output once (the 256-bit kernel of gemm.inl
// splits the columns into chunks and adds each chunk's result into the output, which cost 11%
// of a prompt in the re-reads of the output on Zen 5).
//
// Panel layout for a type with groups of G elements (n_groups = n_cols / G):
//   q     (n_groups, G / 4, 16 rows, 4)  int8 values
//   scale (n_groups, 16) float, min (n_groups, 16) float
//   corr  (n_groups, 16) int32: -128 * sum(q), which removes the +128 of unsigned activations
// Included inside an anonymous namespace after gemm.inl by avx512_kernels.cpp.

struct Gemm512 {
  static constexpr int R = 16;  // rows of a panel
  static constexpr int T = 8;   // tokens of a tile

  using Panel = GemmX86::Panel;

  static size_t panel_bytes(int G, int64_t n_cols) {
    return static_cast<size_t>(n_cols) * R + 3 * static_cast<size_t>(n_cols / G) * R * 4;
  }
  // Bytes of the canonical rows decode() works in.
  static size_t canon_bytes(int G, int64_t n_cols) {
    return (static_cast<size_t>(n_cols) + 2 * static_cast<size_t>(n_cols / G) * sizeof(float)) * R;
  }

  // Decodes n_rows (<= 16; the rest are zero) rows to the canonical form (in `canon`) and
  // interleaves them into the panel at `base` (64-byte aligned): per 32 columns, an 8x8
  // transpose of 4-byte words for rows 0-7 and one for rows 8-15 give the two 256-bit halves
  // of each of the 8 chunks of 4 columns.
  static Panel decode(const GemmTypeInfo& info, const GemmRows& rows, const uint8_t* w, int n_rows,
                      int64_t n_cols, uint8_t* base, uint8_t* canon) {
    const int G = info.group;
    const int64_t n_groups = n_cols / G;
    const size_t q_bytes = static_cast<size_t>(n_cols) * R;
    const size_t meta = static_cast<size_t>(n_groups) * R * 4;
    const Panel p{reinterpret_cast<int8_t*>(base), reinterpret_cast<float*>(base + q_bytes),
                  reinterpret_cast<float*>(base + q_bytes + meta),
                  reinterpret_cast<int32_t*>(base + q_bytes + 2 * meta)};
    auto* cs = reinterpret_cast<float*>(canon);  // (R, n_groups)
    float* cm = cs + n_groups * R;               // (R, n_groups)
    auto* rows_q = reinterpret_cast<int8_t*>(cm + n_groups * R);
    rows.decode(w, n_rows, n_cols, n_groups, rows_q, cs, cm);
    for (int r = 0; r < R; ++r) {
      int8_t* cq = rows_q + static_cast<size_t>(r) * n_cols;
      float* cs_r = cs + r * n_groups;
      float* cm_r = cm + r * n_groups;
      if (r >= n_rows) {
        std::fill(cq, cq + n_cols, int8_t{0});
        std::fill(cs_r, cs_r + n_groups, 0.0f);
        std::fill(cm_r, cm_r + n_groups, 0.0f);
      }
      for (int64_t g = 0; g < n_groups; ++g) {
        p.scale[g * R + r] = cs_r[g];
        p.min[g * R + r] = cm_r[g];
        p.corr[g * R + r] = -128 * GemmX86::group_sum(cq + g * G, G);
      }
    }
    for (int64_t c = 0; c < n_cols; c += 32) {
      __m256i lo[8], hi[8];
      for (int r = 0; r < 8; ++r) {
        lo[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows_q + r * n_cols + c));
        hi[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows_q + (r + 8) * n_cols + c));
      }
      GemmX86::transpose8x8_epi32(lo);
      GemmX86::transpose8x8_epi32(hi);
      for (int r = 0; r < 8; ++r) {  // chunk (c / 4) + r: rows 0-7, then rows 8-15
        int8_t* dst = p.q + (c + 4 * r) * R;
        _mm256_store_si256(reinterpret_cast<__m256i*>(dst), lo[r]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(dst + 32), hi[r]);
      }
    }
    return p;
  }

  // NT tokens from t0 against the panel, over every column: y[(t0 + j) * y_stride + r].
  template <int G, int NT, bool kMin>
  static void tile(const Panel& p, const GemmActivations& a, int64_t t0, float* y, int64_t y_stride,
                   int n_rows, bool accumulate) {
    const int64_t n_groups = a.n_cols / G;
    const int64_t n32 = a.stride / 32, n16 = a.stride / 16;
    __m512 facc[NT];
    for (int j = 0; j < NT; ++j) facc[j] = _mm512_setzero_ps();
    const uint8_t* act[NT];
    for (int j = 0; j < NT; ++j) act[j] = a.qu + (t0 + j) * a.stride;
    for (int64_t g = 0; g < n_groups; ++g) {
      const int8_t* wq = p.q + g * G * R;
      const __m512i corr = _mm512_load_si512(p.corr + g * R);
      __m512i iacc[NT];
      for (int j = 0; j < NT; ++j) iacc[j] = corr;
      for (int c = 0; c < G / 4; ++c) {
        const __m512i wv = _mm512_load_si512(wq + c * 64);
        for (int j = 0; j < NT; ++j) {
          iacc[j] = _mm512_dpbusd_epi32(
              iacc[j], _mm512_set1_epi32(GemmX86::load4(act[j] + g * G + 4 * c)), wv);
        }
      }
      const __m512 sc = _mm512_load_ps(p.scale + g * R);
      for (int j = 0; j < NT; ++j) {
        const __m512 d = _mm512_set1_ps(a.d[(t0 + j) * n32 + (g * G) / 32]);
        facc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(iacc[j]), _mm512_mul_ps(sc, d), facc[j]);
      }
      if constexpr (kMin) {
        const __m512 mn = _mm512_load_ps(p.min + g * R);
        for (int j = 0; j < NT; ++j) {
          const float* s16 = a.sum16 + (t0 + j) * n16 + (g * G) / 16;
          const float xs = G == 32 ? s16[0] + s16[1] : s16[0];
          facc[j] = _mm512_fnmadd_ps(mn, _mm512_set1_ps(xs), facc[j]);
        }
      }
    }
    const __mmask16 rows = static_cast<__mmask16>((1u << n_rows) - 1);
    for (int j = 0; j < NT; ++j) {
      float* out = y + (t0 + j) * y_stride;
      __m512 v = facc[j];
      if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(rows, out));
      _mm512_mask_storeu_ps(out, rows, v);
    }
  }

  // Every token against the block's panels: tiles of T tokens outermost, so a tile's
  // activations stay in L1 while the panels (in L2) pass over them.
  template <int G, bool kMin>
  static void all_tokens(const Panel* ps, const GemmX86::Out* os, int n_panels,
                         const GemmActivations& a) {
    int64_t t = 0;
    for (; t + T <= a.n_tokens; t += T) {
      for (int i = 0; i < n_panels; ++i)
        tile<G, T, kMin>(ps[i], a, t, os[i].y, os[i].stride, os[i].n_rows, os[i].acc);
    }
    if (t < a.n_tokens) rest<G, kMin, T - 1>(ps, os, n_panels, a, t);
  }
  // The last a.n_tokens - t (< T) tokens, in one tile of that many.
  template <int G, bool kMin, int NT>
  static void rest(const Panel* ps, const GemmX86::Out* os, int n_panels, const GemmActivations& a,
                   int64_t t) {
    if constexpr (NT > 0) {
      if (a.n_tokens - t != NT) {
        rest<G, kMin, NT - 1>(ps, os, n_panels, a, t);
        return;
      }
      for (int i = 0; i < n_panels; ++i)
        tile<G, NT, kMin>(ps[i], a, t, os[i].y, os[i].stride, os[i].n_rows, os[i].acc);
    }
  }

  // ---- Float weights. F16 and BF16 (without AVX512_BF16): panels of 16 rows as f32
  // (n_cols, 16), each multiplied with tiles of 12 tokens (two packs of kFloatTile) by FMAs with
  // a broadcast activation, 12 accumulators over every column. BF16 with AVX512_BF16: the
  // panel keeps the bf16 pairs, (n_cols / 2, 16) 32-bit words, and one vdpbf16ps multiplies
  // two columns of 16 rows with a broadcast pair of the activations.
  static constexpr int kPacks = 2;

  // Rows [0, n) (n <= 16; the rest zero) of w dequantized into an f32 panel (n_cols, 16),
  // 8 rows at a time through `rows` (8 x n_cols floats) and 8x8 transposes.
  static void float_panel(const KernelTable& kt, TensorType type, const uint8_t* w,
                          size_t row_bytes, int n, int64_t n_cols, float* panel, float* rows) {
    if (type == TensorType::F16 || type == TensorType::BF16) {  // converted as transposed
      const bool f16 = type == TensorType::F16;
      for (int h = 0; h < R; h += 8) {
        for (int64_t c = 0; c < n_cols; c += 8) {
          __m256 m[8];
          for (int r = 0; r < 8; ++r) {
            if (h + r >= n) {
              m[r] = _mm256_setzero_ps();
              continue;
            }
            const __m128i v =
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + (h + r) * row_bytes + 2 * c));
            m[r] = f16 ? _mm256_cvtph_ps(v)
                       : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
          }
          GemmX86::transpose8(m);
          for (int j = 0; j < 8; ++j) _mm256_store_ps(panel + (c + j) * R + h, m[j]);
        }
      }
      return;
    }
    const DequantizeRowFn dequantize = kt.types[static_cast<uint32_t>(type)].dequantize_row;
    for (int h = 0; h < R; h += 8) {
      for (int r = 0; r < 8; ++r) {
        if (h + r < n) {
          dequantize(w + (h + r) * row_bytes, rows + r * n_cols, n_cols);
        } else {
          std::fill(rows + r * n_cols, rows + (r + 1) * n_cols, 0.0f);
        }
      }
      for (int64_t c = 0; c < n_cols; c += 8) {
        __m256 m[8];
        for (int r = 0; r < 8; ++r) m[r] = _mm256_loadu_ps(rows + r * n_cols + c);
        GemmX86::transpose8(m);
        for (int j = 0; j < 8; ++j) _mm256_store_ps(panel + (c + j) * R + h, m[j]);
      }
    }
  }

  // Rows [0, n) of BF16 weights as pairs: word (p, r) of the panel is row r's columns 2p and
  // 2p + 1, so the panel is the transpose of the rows read as 32-bit words.
  static void bf16_panel(const uint8_t* w, size_t row_bytes, int n, int64_t n_cols,
                         uint32_t* panel) {
    for (int64_t c = 0; c < n_cols; c += 16) {  // 8 words of each row
      __m256i lo[8], hi[8];
      for (int r = 0; r < 8; ++r) {
        auto word8 = [&](int row) {
          return row < n ? _mm256_loadu_si256(
                               reinterpret_cast<const __m256i*>(w + row * row_bytes + 2 * c))
                         : _mm256_setzero_si256();
        };
        lo[r] = word8(r);
        hi[r] = word8(r + 8);
      }
      GemmX86::transpose8x8_epi32(lo);
      GemmX86::transpose8x8_epi32(hi);
      for (int j = 0; j < 8; ++j) {
        uint32_t* dst = panel + (c / 2 + j) * R;
        _mm256_store_si256(reinterpret_cast<__m256i*>(dst), lo[j]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(dst + 8), hi[j]);
      }
    }
  }

  // Stores the n_valid first of NA accumulators, one token each from t0.
  template <int NA>
  static void store_tokens(const __m512* acc, int n_valid, int64_t t0, const GemmX86::Out& o) {
    const __mmask16 rows = static_cast<__mmask16>((1u << o.n_rows) - 1);
    for (int j = 0; j < NA && j < n_valid; ++j) {
      float* out = o.y + (t0 + j) * o.stride;
      __m512 v = acc[j];
      if (o.acc) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(rows, out));
      _mm512_mask_storeu_ps(out, rows, v);
    }
  }

  // NP packs of tokens from t0 (a multiple of kFloatTile) against an f32 panel.
  template <int NP>
  static void float_tile(const float* __restrict panel, const GemmActivations& a, int64_t t0,
                         int n_valid, const GemmX86::Out& o) {
    constexpr int NA = NP * kFloatTile;
    const float* x[NP];
    for (int p = 0; p < NP; ++p) x[p] = a.x + (t0 / kFloatTile + p) * a.stride * kFloatTile;
    __m512 acc[NA];
    for (int j = 0; j < NA; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t k = 0; k < a.n_cols; ++k) {
      const __m512 wv = _mm512_load_ps(panel + k * R);
      for (int p = 0; p < NP; ++p) {
        for (int j = 0; j < kFloatTile; ++j) {
          acc[p * kFloatTile + j] = _mm512_fmadd_ps(wv, _mm512_set1_ps(x[p][k * kFloatTile + j]),
                                                    acc[p * kFloatTile + j]);
        }
      }
    }
    store_tokens<NA>(acc, n_valid, t0, o);
  }

  // The same with bf16 pairs and vdpbf16ps (two columns a step).
  template <int NP>
  [[gnu::target("avx512bf16")]] static void bf16_tile(const uint32_t* __restrict panel,
                                                      const GemmActivations& a, int64_t t0,
                                                      int n_valid, const GemmX86::Out& o) {
    constexpr int NA = NP * kFloatTile;
    const uint32_t* x[NP];
    for (int p = 0; p < NP; ++p) x[p] = a.xb + (t0 / kFloatTile + p) * (a.stride / 2) * kFloatTile;
    __m512 acc[NA];
    for (int j = 0; j < NA; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t k = 0; k < a.n_cols / 2; ++k) {
      const __m512bh wv = reinterpret_cast<__m512bh>(_mm512_load_si512(panel + k * R));
      for (int p = 0; p < NP; ++p) {
        for (int j = 0; j < kFloatTile; ++j) {
          const __m512bh xv = reinterpret_cast<__m512bh>(
              _mm512_set1_epi32(static_cast<int>(x[p][k * kFloatTile + j])));
          acc[p * kFloatTile + j] = _mm512_dpbf16_ps(acc[p * kFloatTile + j], wv, xv);
        }
      }
    }
    store_tokens<NA>(acc, n_valid, t0, o);
  }

  // Float rows: one panel of 16 at a time, every token against it (the panel stays in L2 while
  // the packed activations stream past).
  static void float_block(const KernelTable& kt, TensorType type, const uint8_t* w,
                          size_t row_bytes, int n_rows, const GemmActivations& a, float* y,
                          int64_t y_stride, bool accumulate, std::vector<uint8_t>& scratch) {
    const int64_t n_cols = a.n_cols;
    const bool pairs = type == TensorType::BF16 && kt.gemm_bf16_pairs;
    const size_t panel = static_cast<size_t>(n_cols) * R * sizeof(float);
    scratch.resize(panel + (pairs ? 0 : panel / 2) + 64);  // + 8 rows of floats
    uint8_t* base = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    constexpr int64_t kStep = kPacks * kFloatTile;
    for (int r0 = 0; r0 < n_rows; r0 += R) {
      const int n = std::min(R, n_rows - r0);
      const GemmX86::Out o{y + r0, y_stride, n, accumulate};
      const uint8_t* wr = w + r0 * row_bytes;
      if (pairs) {
        auto* p = reinterpret_cast<uint32_t*>(base);
        bf16_panel(wr, row_bytes, n, n_cols, p);
        int64_t t = 0;
        for (; t + kStep <= a.n_tokens; t += kStep) bf16_tile<kPacks>(p, a, t, kStep, o);
        for (; t < a.n_tokens; t += kFloatTile)
          bf16_tile<1>(p, a, t, static_cast<int>(std::min<int64_t>(kFloatTile, a.n_tokens - t)), o);
      } else {
        auto* p = reinterpret_cast<float*>(base);
        float_panel(kt, type, wr, row_bytes, n, n_cols, p, reinterpret_cast<float*>(base + panel));
        int64_t t = 0;
        for (; t + kStep <= a.n_tokens; t += kStep) float_tile<kPacks>(p, a, t, kStep, o);
        for (; t < a.n_tokens; t += kFloatTile)
          float_tile<1>(p, a, t, static_cast<int>(std::min<int64_t>(kFloatTile, a.n_tokens - t)),
                        o);
      }
    }
  }

  // The GemmPanelFn of the AVX-512 table: up to kGemmBlockRows rows as panels of 16.
  static void block(const KernelTable& kt, TensorType type, const uint8_t* w, size_t row_bytes,
                    int n_rows, const GemmActivations& a, float* y, int64_t y_stride,
                    bool accumulate, std::vector<uint8_t>& scratch, PanelRows layout) {
    if (is_float_type(type)) {
      float_block(kt, type, w, row_bytes, n_rows, a, y, y_stride, accumulate, scratch);
      return;
    }
    constexpr int kMaxPanels = kGemmBlockRows / R;
    const int n_panels = (n_rows + R - 1) / R;
    GemmX86::Out os[kMaxPanels];
    for (int i = 0; i < n_panels; ++i)
      os[i] = {y + i * R, y_stride, std::min(R, n_rows - i * R), accumulate};
    const GemmTypeInfo& info = gemm_type_info(type);
    const size_t one = panel_bytes(info.group, a.n_cols);
    scratch.resize(n_panels * one + canon_bytes(info.group, a.n_cols) + 64);
    uint8_t* base = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    Panel ps[kMaxPanels];
    const GemmRows rows = GemmX86::rows_of(kt, type, row_bytes, layout);
    for (int i = 0; i < n_panels; ++i) {
      ps[i] = decode(info, rows, w + i * R * row_bytes, os[i].n_rows, a.n_cols, base + i * one,
                     base + n_panels * one);
    }
    if (info.group == 16) {
      if (info.has_min) {
        all_tokens<16, true>(ps, os, n_panels, a);
      } else {
        all_tokens<16, false>(ps, os, n_panels, a);
      }
    } else if (info.has_min) {
      all_tokens<32, true>(ps, os, n_panels, a);
    } else {
      all_tokens<32, false>(ps, os, n_panels, a);
    }
  }
};

// Peak probes of the AVX-512 table (KernelTable::peak_*): the instructions its GEMM runs,
// vpdpbusd and vfmadd231ps on zmm registers, in 12 independent chains (the 256-bit probes of
// gemm.inl ran 4 chains and measured the latency, a quarter of Zen 5's rate).
inline int64_t peak_int8_macs_512(int64_t iters) {
  __m512i c[12];
  for (int i = 0; i < 12; ++i) c[i] = _mm512_set1_epi32(i);
  __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(7);
  for (int64_t i = 0; i < iters; ++i) {
    __asm__ volatile("" : "+v"(a), "+v"(b));
    for (int j = 0; j < 12; ++j) c[j] = _mm512_dpbusd_epi32(c[j], a, b);
  }
  __m512i s = c[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_epi32(s, c[i]);
  volatile int sink = _mm512_reduce_add_epi32(s);
  (void)sink;
  return iters * 12 * 64;
}

inline int64_t peak_f32_macs_512(int64_t iters) {
  __m512 c[12];
  for (int i = 0; i < 12; ++i) c[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(1.0001f), b = _mm512_set1_ps(0.9999f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int j = 0; j < 12; ++j) c[j] = _mm512_fmadd_ps(c[j], a, b);
  }
  __m512 s = c[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, c[i]);
  volatile float sink = _mm512_reduce_add_ps(s);
  (void)sink;
  return iters * 12 * 16;
}
