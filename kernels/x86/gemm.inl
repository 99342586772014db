// GEMM panels for x86 (kernels/gemm.hpp), one source for AVX2 and AVX-512: the panel holds 8
// weight rows interleaved 4 bytes at a time, so one 256-bit register carries 4 values of each
// of 8 rows, and a broadcast of 4 activation values multiplies all 8 rows at once; the 8 int32
// lanes of the sum are the 8 rows' sums. With VNNI (the AVX-512 table) the product is one
// vpdpbusd; on AVX2 it is maddubs + madd. Included inside an anonymous namespace by the ISA's
// translation unit, after its traits (IsaTraits: kVnni, dot_acc).
//
// Panel layout for a type with groups of G elements (n_groups = n_cols / G):
//   q     (n_groups, G / 4, 8 rows, 4)  int8 values
//   scale (n_groups, 8) float, min (n_groups, 8) float
//   corr  (n_groups, 8) int32: -128 * sum(q), which removes the +128 of unsigned activations
// Float types: (n_cols, 8 rows) floats.

struct GemmX86 {
  static constexpr int R = kPanelRows;

  struct Panel {
    int8_t* q;
    float* scale;
    float* min;
    int32_t* corr;
  };

  // Bytes of one panel of n_cols columns in groups of G (a multiple of 64).
  static size_t panel_bytes(int G, int64_t n_cols) {
    return static_cast<size_t>(n_cols) * R + 3 * static_cast<size_t>(n_cols / G) * R * 4;
  }
  // Bytes of the canonical rows decode() works in.
  static size_t canon_bytes(int G, int64_t n_cols) {
    return (static_cast<size_t>(n_cols) + 2 * static_cast<size_t>(n_cols / G) * sizeof(float)) * R;
  }

  // Decodes n_rows (<= 8; the rest are zero) rows to the canonical form (in `canon`) and
  // interleaves them into the panel at `base` (64-byte aligned).
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
    // The 8 rows decoded one after another into rows of n_cols bytes (+ their group sums),
    // then interleaved 32 columns at a time by an 8x8 transpose of 4-byte words.
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
        p.corr[g * R + r] = -128 * group_sum(cq + g * G, G);
      }
    }
    for (int64_t c = 0; c < n_cols; c += 32) {
      __m256i v[R];
      for (int r = 0; r < R; ++r)
        v[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows_q + r * n_cols + c));
      transpose8x8_epi32(v);
      // word k of the transposed vector r' holds row k's bytes 4r'..4r'+3: chunk r' of the
      // 32 columns, as the layout wants (chunk index (c / 4) + r').
      for (int r = 0; r < R; ++r)
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.q + (c + 4 * r) * R), v[r]);
    }
    return p;
  }

  // The sum of G (16 or 32) int8 values: the bytes made unsigned (+128) and summed 8 at a
  // time by vpsadbw. (A plain loop became a byte-by-byte loop for G = 16: 41% of a TQ2_0
  // prompt of 64 tokens.)
  static int group_sum(const int8_t* q, int G) {
    const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
    __m128i s =
        _mm_sad_epu8(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)), flip),
                     _mm_setzero_si128());
    if (G == 32) {
      s = _mm_add_epi64(
          s, _mm_sad_epu8(
                 _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)), flip),
                 _mm_setzero_si128()));
    }
    return static_cast<int>(_mm_cvtsi128_si64(s) + _mm_extract_epi64(s, 1)) - 128 * G;
  }

  // An 8x8 matrix of 32-bit words, one row per register, transposed in place.
  static void transpose8x8_epi32(__m256i* v) {
    __m256i t[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    __m256i u[8];
    for (int i = 0; i < 2; ++i) {
      u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
      u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
      u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
      u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_permute2x128_si256(u[i], u[4 + i], 0x20);
      v[4 + i] = _mm256_permute2x128_si256(u[i], u[4 + i], 0x31);
    }
  }

  static int32_t load4(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }

  QINFER_INLINE static void store_rows(float* y, __m256 v, int n_rows, bool accumulate) {
    if (n_rows == R) {
      _mm256_storeu_ps(y, accumulate ? _mm256_add_ps(_mm256_loadu_ps(y), v) : v);
      return;
    }
    alignas(32) float tmp[R];
    _mm256_store_ps(tmp, v);
    for (int r = 0; r < n_rows; ++r) y[r] = accumulate ? y[r] + tmp[r] : tmp[r];
  }

  // Where a panel's results go: y[t * stride + r] for r < n_rows, stored or added.
  struct Out {
    float* y;
    int64_t stride;
    int n_rows;
    bool acc;
    void put(int64_t t, __m256 v) const { store_rows(y + t * stride, v, n_rows, acc); }
  };

  // RN tokens from t0 against the panel: y[(t0 + j) * y_stride + r]. On AVX2 the pairwise
  // products of maddubs are summed in 16 bits over I16 chunks before one madd widens them
  // (I16 from the type's bound on |q|, so the sums cannot saturate).
  template <int G, int RN, bool kWide, bool kMin, int I16>
  static void tile(const Panel& p, const GemmActivations& a, int64_t t0, const Out& o) {
    const int64_t n_groups = a.n_cols / G;
    const int64_t n32 = a.stride / 32, n16 = a.stride / 16;
    // AVX2 multiplies |q| by the activations with q's signs (wide types); otherwise the
    // activations are unsigned (q + 128) and corr takes the 128 back out.
    constexpr bool kSigned = kWide && !IsaTraits::kVnni;
    __m256 facc[RN];
    for (int j = 0; j < RN; ++j) facc[j] = _mm256_setzero_ps();
    const uint8_t* act[RN];
    for (int j = 0; j < RN; ++j) {
      act[j] = kSigned ? reinterpret_cast<const uint8_t*>(a.q + (t0 + j) * a.stride)
                       : a.qu + (t0 + j) * a.stride;
    }
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t g = 0; g < n_groups; ++g) {
      __m256i iacc[RN];
      const int8_t* wq = p.q + g * G * R;
      if constexpr (IsaTraits::kVnni) {
        for (int j = 0; j < RN; ++j)
          iacc[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(p.corr + g * R));
        for (int c = 0; c < G / 4; ++c) {
          const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(wq + c * 32));
          for (int j = 0; j < RN; ++j) {
            iacc[j] =
                IsaTraits::dot_acc(iacc[j], _mm256_set1_epi32(load4(act[j] + g * G + 4 * c)), wv);
          }
        }
      } else {
        for (int j = 0; j < RN; ++j) {
          iacc[j] = kSigned ? _mm256_setzero_si256()
                            : _mm256_load_si256(reinterpret_cast<const __m256i*>(p.corr + g * R));
        }
        auto product = [&](int j, int c, __m256i wv, __m256i wu) {
          const __m256i av = _mm256_set1_epi32(load4(act[j] + g * G + 4 * c));
          return kSigned ? _mm256_maddubs_epi16(wu, _mm256_sign_epi8(av, wv))
                         : _mm256_maddubs_epi16(av, wv);
        };
        for (int c0 = 0; c0 < G / 4; c0 += I16) {
          __m256i s16[RN];
          {
            const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(wq + c0 * 32));
            const __m256i wu = kSigned ? _mm256_abs_epi8(wv) : wv;
            for (int j = 0; j < RN; ++j) s16[j] = product(j, c0, wv, wu);
          }
#pragma GCC unroll 1
          for (int c = c0 + 1; c < c0 + I16; ++c) {
            const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(wq + c * 32));
            const __m256i wu = kSigned ? _mm256_abs_epi8(wv) : wv;
            for (int j = 0; j < RN; ++j) s16[j] = _mm256_add_epi16(s16[j], product(j, c, wv, wu));
          }
          for (int j = 0; j < RN; ++j) iacc[j] = IsaTraits::madd_acc(iacc[j], s16[j], ones);
        }
      }
      const __m256 sc = _mm256_load_ps(p.scale + g * R);
      for (int j = 0; j < RN; ++j) {
        const __m256 d = _mm256_set1_ps(a.d[(t0 + j) * n32 + (g * G) / 32]);
        facc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(iacc[j]), _mm256_mul_ps(sc, d), facc[j]);
      }
      if constexpr (kMin) {
        const __m256 mn = _mm256_load_ps(p.min + g * R);
        for (int j = 0; j < RN; ++j) {
          const float* s16 = a.sum16 + (t0 + j) * n16 + (g * G) / 16;
          const float xs = G == 32 ? s16[0] + s16[1] : s16[0];
          facc[j] = _mm256_fnmadd_ps(mn, _mm256_set1_ps(xs), facc[j]);
        }
      }
    }
    for (int j = 0; j < RN; ++j) o.put(t0 + j, facc[j]);
  }

  // Every token against the block's panels: tiles of 4 tokens outermost, so a tile's
  // activations stay in L1 while the panels (in L2) pass over them.
  template <int G, bool kWide, bool kMin, int I16>
  static void all_tokens(const Panel* ps, const Out* os, int n_panels, const GemmActivations& a) {
    constexpr int kTile = 4;
    int64_t t = 0;
    for (; t + kTile <= a.n_tokens; t += kTile) {
      for (int i = 0; i < n_panels; ++i) tile<G, kTile, kWide, kMin, I16>(ps[i], a, t, os[i]);
    }
    for (; t < a.n_tokens; ++t) {
      for (int i = 0; i < n_panels; ++i) tile<G, 1, kWide, kMin, I16>(ps[i], a, t, os[i]);
    }
  }

  // Float weights: panels of 16 rows, (n_cols, 16) floats, times 6 broadcast tokens: 12
  // accumulators, two panel loads and six broadcasts per column.
  static constexpr int kFloatRows = 16;

  // kFloatTile tokens from t0 (a tile of the packed activations; n_valid of them real).
  static void float_tile(const float* __restrict panel, const GemmActivations& a, int64_t t0,
                         int n_valid, const Out& lo, const Out& hi) {
    static_assert(kFloatTile == 6);
    const int64_t n = a.n_cols;
    const float* __restrict x = a.x + t0 * a.stride;  // t0 is a multiple of the tile
    __m256 l0 = _mm256_setzero_ps(), l1 = l0, l2 = l0, l3 = l0, l4 = l0, l5 = l0;
    __m256 h0 = l0, h1 = l0, h2 = l0, h3 = l0, h4 = l0, h5 = l0;
    for (int64_t k = 0; k < n; ++k) {
      const __m256 wl = _mm256_load_ps(panel + k * kFloatRows);
      const __m256 wh = _mm256_load_ps(panel + k * kFloatRows + 8);
      const float* xk = x + k * kFloatTile;
      __m256 b = _mm256_broadcast_ss(xk + 0);
      l0 = _mm256_fmadd_ps(wl, b, l0);
      h0 = _mm256_fmadd_ps(wh, b, h0);
      b = _mm256_broadcast_ss(xk + 1);
      l1 = _mm256_fmadd_ps(wl, b, l1);
      h1 = _mm256_fmadd_ps(wh, b, h1);
      b = _mm256_broadcast_ss(xk + 2);
      l2 = _mm256_fmadd_ps(wl, b, l2);
      h2 = _mm256_fmadd_ps(wh, b, h2);
      b = _mm256_broadcast_ss(xk + 3);
      l3 = _mm256_fmadd_ps(wl, b, l3);
      h3 = _mm256_fmadd_ps(wh, b, h3);
      b = _mm256_broadcast_ss(xk + 4);
      l4 = _mm256_fmadd_ps(wl, b, l4);
      h4 = _mm256_fmadd_ps(wh, b, h4);
      b = _mm256_broadcast_ss(xk + 5);
      l5 = _mm256_fmadd_ps(wl, b, l5);
      h5 = _mm256_fmadd_ps(wh, b, h5);
    }
    // Named accumulators, not an array: GCC kept an array of them in memory and stored it
    // on every step of the loop above.
    const __m256 lows[kFloatTile] = {l0, l1, l2, l3, l4, l5};
    const __m256 highs[kFloatTile] = {h0, h1, h2, h3, h4, h5};
    for (int j = 0; j < n_valid; ++j) {
      lo.put(t0 + j, lows[j]);
      if (hi.n_rows > 0) hi.put(t0 + j, highs[j]);
    }
  }

  // The 8x8 transpose of m (rows in, columns out).
  static void transpose8(__m256* m) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(m[i], m[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(m[i], m[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {
      m[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
      m[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
  }

  // n_rows rows as panels of 16 (Outs of 8 rows each, os[2i] and os[2i + 1] for panel i):
  // each half panel's 8 rows dequantized, then written column by column with 8x8 transposes.
  static void float_block(const KernelTable& k, TensorType type, const uint8_t* w, size_t row_bytes,
                          int n_rows, const Out* os, const GemmActivations& a, uint8_t* base) {
    const int64_t n_cols = a.n_cols;
    const int n_panels = (n_rows + kFloatRows - 1) / kFloatRows;
    const size_t panel_floats = static_cast<size_t>(n_cols) * kFloatRows;
    float* rows = reinterpret_cast<float*>(base) + n_panels * panel_floats;  // 8 x n_cols
    for (int i = 0; i < n_panels; ++i) {
      float* panel = reinterpret_cast<float*>(base) + i * panel_floats;
      for (int h = 0; h < kFloatRows; h += 8) {
        for (int r = 0; r < 8; ++r) {
          const int row = i * kFloatRows + h + r;
          if (row < n_rows) {
            k.types[static_cast<uint32_t>(type)].dequantize_row(w + row * row_bytes,
                                                                rows + r * n_cols, n_cols);
          } else {
            std::fill(rows + r * n_cols, rows + (r + 1) * n_cols, 0.0f);
          }
        }
        for (int64_t c = 0; c < n_cols; c += 8) {
          __m256 m[8];
          for (int r = 0; r < 8; ++r) m[r] = _mm256_loadu_ps(rows + r * n_cols + c);
          transpose8(m);
          for (int j = 0; j < 8; ++j) _mm256_store_ps(panel + (c + j) * kFloatRows + h, m[j]);
        }
      }
    }
    const Out none{nullptr, 0, 0, false};
    for (int64_t t = 0; t < a.n_tokens; t += kFloatTile) {
      const int valid = static_cast<int>(std::min<int64_t>(kFloatTile, a.n_tokens - t));
      for (int i = 0; i < n_panels; ++i) {
        const bool has_high = 2 * i + 1 < (n_rows + R - 1) / R;
        float_tile(reinterpret_cast<float*>(base) + i * panel_floats, a, t, valid, os[2 * i],
                   has_high ? os[2 * i + 1] : none);
      }
    }
  }

  // Chunks of 4 products per row whose maddubs pairs may sum in 16 bits: each pair is at
  // most 2 * 255 * max|q| (unsigned activations) or 2 * 128 * 127 (wide types, signed).
  static int int16_chunks(const GemmTypeInfo& info) {
    const int pair = info.wide ? 2 * 128 * 127 : 2 * 255 * info.max_abs_q;
    int n = 1;
    while (n * 2 <= info.group / 4 && n * 2 * pair <= 32767) n *= 2;
    return n;
  }

  template <int G, bool kWide, bool kMin>
  static void by_int16(const GemmTypeInfo& info, const Panel* ps, const Out* os, int n_panels,
                       const GemmActivations& a) {
    switch (int16_chunks(info)) {
      case 8:
        if constexpr (G / 4 >= 8) {
          all_tokens<G, kWide, kMin, 8>(ps, os, n_panels, a);
          break;
        }
        [[fallthrough]];
      case 4:
        all_tokens<G, kWide, kMin, 4>(ps, os, n_panels, a);
        break;
      case 2:
        all_tokens<G, kWide, kMin, 2>(ps, os, n_panels, a);
        break;
      default:
        all_tokens<G, kWide, kMin, 1>(ps, os, n_panels, a);
        break;
    }
  }

  template <int G>
  static void dispatch(const GemmTypeInfo& info, const Panel* ps, const Out* os, int n_panels,
                       const GemmActivations& a) {
    if (info.wide) {
      by_int16<G, true, false>(info, ps, os, n_panels, a);  // no wide type has a min
    } else if (info.has_min) {
      by_int16<G, false, true>(info, ps, os, n_panels, a);
    } else {
      by_int16<G, false, false>(info, ps, os, n_panels, a);
    }
  }

  // How the table kt's panels read rows of the type (GemmRows): an interleaved matrix needs
  // the table's in-place decoder (matmul copies the rows out otherwise); a packed copy's rows
  // take the packed decoder (kernels/pack.hpp).
  static GemmRows rows_of(const KernelTable& kt, TensorType type, size_t row_bytes,
                          PanelRows layout) {
    const DecodeGroupsFn fast = kt.gemm_decode[static_cast<uint32_t>(type)];
    GemmRows rows{fast != nullptr ? fast : gemm_type_info(type).decode, nullptr, row_bytes};
    if (layout == PanelRows::kPacked) {
      rows.decoder = packed_gemm_decoder(type);
      if (rows.decoder == nullptr)
        throw Error(ErrorCode::kInternal, "a packed GEMM panel without its decoder");
    }
    if (layout == PanelRows::kInterleaved) {
      rows.interleaved = kt.gemm_decode_interleaved[static_cast<uint32_t>(type)];
      if (rows.interleaved == nullptr)
        throw Error(ErrorCode::kInternal, "an interleaved GEMM panel without its decoder");
    }
    return rows;
  }

  // The GemmPanelFn of this ISA's table (kt: that table, for the float rows' dequantizer):
  // up to kGemmBlockRows rows as panels of 8.
  static void block(const KernelTable& kt, TensorType type, const uint8_t* w, size_t row_bytes,
                    int n_rows, const GemmActivations& a, float* y, int64_t y_stride,
                    bool accumulate, std::vector<uint8_t>& scratch, PanelRows layout) {
    constexpr int kMaxPanels = kGemmBlockRows / R;
    const int n_panels = (n_rows + R - 1) / R;
    Out os[kMaxPanels];
    for (int i = 0; i < n_panels; ++i)
      os[i] = {y + i * R, y_stride, std::min(R, n_rows - i * R), accumulate};
    const bool is_float = is_float_type(type);
    const GemmTypeInfo& info = gemm_type_info(type);
    const size_t one =
        is_float ? static_cast<size_t>(a.n_cols) * R * sizeof(float)  // half a float panel
                 : panel_bytes(info.group, a.n_cols);
    const size_t work = is_float ? static_cast<size_t>(a.n_cols) * 8 * sizeof(float)
                                 : canon_bytes(info.group, a.n_cols);
    scratch.resize((n_panels + 1) * one + work + 64);  // (+1: float panels come in pairs)
    uint8_t* base = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    if (is_float) {
      float_block(kt, type, w, row_bytes, n_rows, os, a, base);
      return;
    }
    Panel ps[kMaxPanels];
    const GemmRows rows = GemmX86::rows_of(kt, type, row_bytes, layout);
    for (int i = 0; i < n_panels; ++i) {
      ps[i] = decode(info, rows, w + i * R * row_bytes, os[i].n_rows, a.n_cols, base + i * one,
                     base + n_panels * one);
    }
    if (info.group == 16) {
      dispatch<16>(info, ps, os, n_panels, a);
    } else {
      dispatch<32>(info, ps, os, n_panels, a);
    }
  }
};

// Peak probes (KernelTable::peak_*): independent chains of the integer product instruction
// (vpdpbusd with VNNI; vpmaddubsw, whose 16-bit pair sums are 2 products each, on AVX2) and
// of f32 FMAs on 256-bit registers; the result feeds the benchmark's "share of peak". The
// operands pass through an empty asm each step so the compiler cannot fold the constant
// products.
inline int64_t peak_int8_macs(int64_t iters) {
  __m256i c0 = _mm256_set1_epi32(0), c1 = c0, c2 = c0, c3 = c0;
  __m256i a0 = _mm256_set1_epi8(1), a1 = _mm256_set1_epi8(2), a2 = _mm256_set1_epi8(3),
          a3 = _mm256_set1_epi8(4), b = _mm256_set1_epi8(7);
  for (int64_t i = 0; i < iters; ++i) {  // four chains with four different products
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(b));
    if constexpr (IsaTraits::kVnni) {
      c0 = IsaTraits::dot_acc(c0, a0, b);
      c1 = IsaTraits::dot_acc(c1, a1, b);
      c2 = IsaTraits::dot_acc(c2, a2, b);
      c3 = IsaTraits::dot_acc(c3, a3, b);
    } else {
      c0 = _mm256_add_epi16(c0, _mm256_maddubs_epi16(a0, b));
      c1 = _mm256_add_epi16(c1, _mm256_maddubs_epi16(a1, b));
      c2 = _mm256_add_epi16(c2, _mm256_maddubs_epi16(a2, b));
      c3 = _mm256_add_epi16(c3, _mm256_maddubs_epi16(a3, b));
    }
  }
  const __m256i s = _mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3));
  volatile int sink = _mm256_extract_epi32(s, 0);
  (void)sink;
  return iters * 4 * 32;
}

inline int64_t peak_f32_macs(int64_t iters) {
  __m256 c0 = _mm256_set1_ps(0.0f), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0,
         c8 = c0, c9 = c0;
  const __m256 a = _mm256_set1_ps(1.0001f), b = _mm256_set1_ps(0.9999f);
  for (int64_t i = 0; i < iters; ++i) {
    c0 = _mm256_fmadd_ps(c0, a, b);
    c1 = _mm256_fmadd_ps(c1, a, b);
    c2 = _mm256_fmadd_ps(c2, a, b);
    c3 = _mm256_fmadd_ps(c3, a, b);
    c4 = _mm256_fmadd_ps(c4, a, b);
    c5 = _mm256_fmadd_ps(c5, a, b);
    c6 = _mm256_fmadd_ps(c6, a, b);
    c7 = _mm256_fmadd_ps(c7, a, b);
    c8 = _mm256_fmadd_ps(c8, a, b);
    c9 = _mm256_fmadd_ps(c9, a, b);
  }
  const __m256 s =
      _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                    _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)),
                                  _mm256_add_ps(c8, c9)));
  volatile float sink = _mm256_cvtss_f32(s);
  (void)sink;
  return iters * 10 * 8;
}
