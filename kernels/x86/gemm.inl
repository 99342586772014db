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

  // Decodes n_rows (<= 8; the rest are zero) rows to the canonical form and interleaves them.
  // The scratch holds the panel, then the 8 canonical rows.
  static Panel decode(const GemmTypeInfo& info, const uint8_t* w, size_t row_bytes, int n_rows,
                      int64_t n_cols, std::vector<uint8_t>& scratch) {
    const int G = info.group;
    const int64_t n_groups = n_cols / G;
    const size_t q_bytes = static_cast<size_t>(n_cols) * R;
    const size_t meta = static_cast<size_t>(n_groups) * R * 4;
    const size_t canon =
        (static_cast<size_t>(n_cols) + 2 * static_cast<size_t>(n_groups) * sizeof(float)) * R;
    scratch.resize(q_bytes + 3 * meta + canon + 64);
    uint8_t* base = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    const Panel p{reinterpret_cast<int8_t*>(base), reinterpret_cast<float*>(base + q_bytes),
                  reinterpret_cast<float*>(base + q_bytes + meta),
                  reinterpret_cast<int32_t*>(base + q_bytes + 2 * meta)};
    auto* cs =
        reinterpret_cast<float*>(base + q_bytes + 3 * meta);  // (R, n_groups); n_cols % 32 == 0
    float* cm = cs + n_groups * R;                            // (R, n_groups)
    // The 8 rows decoded one after another into rows of n_cols bytes (+ their group sums),
    // then interleaved 32 columns at a time by an 8x8 transpose of 4-byte words.
    auto* rows_q = reinterpret_cast<int8_t*>(cm + n_groups * R);
    for (int r = 0; r < R; ++r) {
      int8_t* cq = rows_q + static_cast<size_t>(r) * n_cols;
      float* cs_r = cs + r * n_groups;
      float* cm_r = cm + r * n_groups;
      if (r < n_rows) {
        info.decode(w + r * row_bytes, n_cols, cq, cs_r, cm_r);
      } else {
        std::fill(cq, cq + n_cols, int8_t{0});
        std::fill(cs_r, cs_r + n_groups, 0.0f);
        std::fill(cm_r, cm_r + n_groups, 0.0f);
      }
      for (int64_t g = 0; g < n_groups; ++g) {
        int sum = 0;
        for (int j = 0; j < G; ++j) sum += cq[g * G + j];
        p.scale[g * R + r] = cs_r[g];
        p.min[g * R + r] = cm_r[g];
        p.corr[g * R + r] = -128 * sum;
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

  static void store_rows(float* y, __m256 v, int n_rows) {
    if (n_rows == R) {
      _mm256_storeu_ps(y, v);
      return;
    }
    alignas(32) float tmp[R];
    _mm256_store_ps(tmp, v);
    for (int r = 0; r < n_rows; ++r) y[r] = tmp[r];
  }

  // RN tokens from t0 against the panel: y[(t0 + j) * y_stride + r]. On AVX2 the pairwise
  // products of maddubs are summed in 16 bits over I16 chunks before one madd widens them
  // (I16 from the type's bound on |q|, so the sums cannot saturate).
  template <int G, int RN, bool kWide, bool kMin, int I16>
  static void tile(const Panel& p, int64_t n_cols, const GemmActivations& a, int64_t t0, float* y,
                   int64_t y_stride, int n_rows) {
    const int64_t n_groups = n_cols / G;
    const int64_t n32 = n_cols / 32, n16 = n_cols / 16;
    // AVX2 multiplies |q| by the activations with q's signs (wide types); otherwise the
    // activations are unsigned (q + 128) and corr takes the 128 back out.
    constexpr bool kSigned = kWide && !IsaTraits::kVnni;
    __m256 facc[RN];
    for (int j = 0; j < RN; ++j) facc[j] = _mm256_setzero_ps();
    const uint8_t* act[RN];
    for (int j = 0; j < RN; ++j) {
      act[j] = kSigned ? reinterpret_cast<const uint8_t*>(a.q + (t0 + j) * n_cols)
                       : a.qu + (t0 + j) * n_cols;
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
          for (int j = 0; j < RN; ++j)
            iacc[j] = _mm256_add_epi32(iacc[j], _mm256_madd_epi16(s16[j], ones));
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
    for (int j = 0; j < RN; ++j) store_rows(y + (t0 + j) * y_stride, facc[j], n_rows);
  }

  template <int G, bool kWide, bool kMin, int I16>
  static void all_tokens(const Panel& p, int64_t n_cols, const GemmActivations& a, float* y,
                         int64_t y_stride, int n_rows) {
    constexpr int kTile = 4;
    int64_t t = 0;
    for (; t + kTile <= a.n_tokens; t += kTile)
      tile<G, kTile, kWide, kMin, I16>(p, n_cols, a, t, y, y_stride, n_rows);
    for (; t < a.n_tokens; ++t) tile<G, 1, kWide, kMin, I16>(p, n_cols, a, t, y, y_stride, n_rows);
  }

  // Float weights: the panel is (n_cols, 8 rows) floats, multiplied by broadcast activations.
  template <int RN>
  static void float_tile(const float* panel, int64_t n_cols, const float* x, int64_t t0, float* y,
                         int64_t y_stride, int n_rows) {
    __m256 acc[RN];
    for (int j = 0; j < RN; ++j) acc[j] = _mm256_setzero_ps();
    const float* xr[RN];
    for (int j = 0; j < RN; ++j) xr[j] = x + (t0 + j) * n_cols;
    for (int64_t k = 0; k < n_cols; ++k) {
      const __m256 w = _mm256_load_ps(panel + k * R);
      for (int j = 0; j < RN; ++j)
        acc[j] = _mm256_fmadd_ps(w, _mm256_broadcast_ss(xr[j] + k), acc[j]);
    }
    for (int j = 0; j < RN; ++j) store_rows(y + (t0 + j) * y_stride, acc[j], n_rows);
  }

  static void float_panel(const KernelTable& k, TensorType type, const uint8_t* w, size_t row_bytes,
                          int n_rows, int64_t n_cols, const GemmActivations& a, float* y,
                          int64_t y_stride, std::vector<uint8_t>& scratch) {
    const size_t panel_bytes = static_cast<size_t>(n_cols) * R * sizeof(float);
    scratch.resize(panel_bytes + static_cast<size_t>(n_cols) * sizeof(float) + 64);
    uint8_t* base = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    auto* panel = reinterpret_cast<float*>(base);
    auto* row = reinterpret_cast<float*>(base + panel_bytes);
    for (int r = 0; r < R; ++r) {
      if (r < n_rows) {
        k.types[static_cast<uint32_t>(type)].dequantize_row(w + r * row_bytes, row, n_cols);
      } else {
        std::fill(row, row + n_cols, 0.0f);
      }
      for (int64_t c = 0; c < n_cols; ++c) panel[c * R + r] = row[c];
    }
    constexpr int kTile = 8;
    int64_t t = 0;
    for (; t + kTile <= a.n_tokens; t += kTile)
      float_tile<kTile>(panel, n_cols, a.x, t, y, y_stride, n_rows);
    for (; t < a.n_tokens; ++t) float_tile<1>(panel, n_cols, a.x, t, y, y_stride, n_rows);
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
  static void by_int16(const GemmTypeInfo& info, const Panel& p, int64_t n_cols,
                       const GemmActivations& a, float* y, int64_t y_stride, int n_rows) {
    switch (int16_chunks(info)) {
      case 8:
        if constexpr (G / 4 >= 8) {
          all_tokens<G, kWide, kMin, 8>(p, n_cols, a, y, y_stride, n_rows);
          break;
        }
        [[fallthrough]];
      case 4:
        all_tokens<G, kWide, kMin, 4>(p, n_cols, a, y, y_stride, n_rows);
        break;
      case 2:
        all_tokens<G, kWide, kMin, 2>(p, n_cols, a, y, y_stride, n_rows);
        break;
      default:
        all_tokens<G, kWide, kMin, 1>(p, n_cols, a, y, y_stride, n_rows);
        break;
    }
  }

  template <int G>
  static void dispatch(const GemmTypeInfo& info, const Panel& p, int64_t n_cols,
                       const GemmActivations& a, float* y, int64_t y_stride, int n_rows) {
    if (info.wide) {
      by_int16<G, true, false>(info, p, n_cols, a, y, y_stride, n_rows);  // no wide type has a min
    } else if (info.has_min) {
      by_int16<G, false, true>(info, p, n_cols, a, y, y_stride, n_rows);
    } else {
      by_int16<G, false, false>(info, p, n_cols, a, y, y_stride, n_rows);
    }
  }

  // The GemmPanelFn of this ISA's table (kt: that table, for the float rows' dequantizer).
  static void panel(const KernelTable& kt, TensorType type, const uint8_t* w, size_t row_bytes,
                    int n_rows, int64_t n_cols, const GemmActivations& a, float* y,
                    int64_t y_stride, std::vector<uint8_t>& scratch) {
    if (is_float_type(type)) {
      float_panel(kt, type, w, row_bytes, n_rows, n_cols, a, y, y_stride, scratch);
      return;
    }
    const GemmTypeInfo& info = gemm_type_info(type);
    const Panel p = decode(info, w, row_bytes, n_rows, n_cols, scratch);
    if (info.group == 16) {
      dispatch<16>(info, p, n_cols, a, y, y_stride, n_rows);
    } else {
      dispatch<32>(info, p, n_cols, a, y, y_stride, n_rows);
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
