// x86 kernels for the float and legacy types, written once and instantiated per ISA.
//
// Included inside an anonymous namespace by avx2_kernels.cpp and avx512_kernels.cpp, each
// compiled with its own flags; `Isa` supplies the xsimd architecture tag and the one integer
// primitive that differs (dot of 32 u8 x s8 pairs: maddubs+madd on AVX2, vpdpbusd on
// AVX-512 VNNI). Every function here has internal linkage, so code built for one ISA can
// never be picked by the linker for another. No #if inside a kernel body.
//
// Requires before inclusion: <immintrin.h>, <xsimd/xsimd.hpp>, kernels/blocks.hpp,
// kernels/float_conv.hpp, kernels/kernels.hpp.

template <class Isa>
struct X86 {
  using fbatch = xsimd::batch<float, typename Isa::arch>;

  static float hsum(__m256 v) {
    const __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    __m128 s = _mm_add_ps(lo, hi);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // 32 signed bytes x 32 signed bytes -> 8 lanes of int32 partial sums. The sign trick keeps
  // the unsigned operand |x| so AVX2's saturating maddubs cannot overflow for |x| <= 127.
  static __m256i dot_s8(__m256i x, __m256i y) {
    const __m256i ax = _mm256_sign_epi8(x, x);
    const __m256i sy = _mm256_sign_epi8(y, x);
    return Isa::dot_u8s8(ax, sy);
  }

  // The 32 values of a Q4_0 block as signed bytes (nibble - 8), in element order.
  static __m256i unpack_q4(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_and_si128(q, m);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), m);
    return _mm256_set_m128i(hi, lo);
  }

  template <typename WB, typename Decode>
  static void dot_q8_blocks(int64_t n, const void* w, const void* act, size_t stride, int nc,
                            float* out, Decode decode) {
    const auto* x = static_cast<const WB*>(w);
    const int64_t nb = n / 32;
    __m256 acc[kMaxDotCols];
    for (int c = 0; c < nc; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const __m256i xv = decode(x[i]);  // decoded once for every column
      const float dx = fp16_to_fp32(x[i].d);
      for (int c = 0; c < nc; ++c) {
        const auto* y = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(act) + c * stride) + i;
        const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y->qs));
        const __m256 p = _mm256_cvtepi32_ps(dot_s8(xv, yv));
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * fp16_to_fp32(y->d)), p, acc[c]);
      }
    }
    for (int c = 0; c < nc; ++c) out[c] = hsum(acc[c]);
  }

  static void dot_q4_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    const __m256i eight = _mm256_set1_epi8(8);
    dot_q8_blocks<BlockQ4_0>(n, w, a, s, nc, out, [&](const BlockQ4_0& b) {
      return _mm256_sub_epi8(unpack_q4(b.qs), eight);
    });
  }

  static void dot_q8_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_blocks<BlockQ8_0>(n, w, a, s, nc, out, [](const BlockQ8_0& b) {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    });
  }

  // Bytes -> floats times d, 8 at a time: exact ints times one float, so bit-identical to
  // the reference.
  static void store_scaled(const __m256i bytes, float d, float* y) {
    const __m256 dv = _mm256_set1_ps(d);
    alignas(32) int8_t b[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(b), bytes);
    for (int j = 0; j < 32; j += 8) {
      const __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + j)));
      _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_cvtepi32_ps(v), dv));
    }
  }

  static void dequantize_q4_0(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const BlockQ4_0*>(vx);
    const __m256i eight = _mm256_set1_epi8(8);
    for (int64_t i = 0; i < n / 32; ++i) {
      store_scaled(_mm256_sub_epi8(unpack_q4(x[i].qs), eight), fp16_to_fp32(x[i].d), y + 32 * i);
    }
  }

  static void dequantize_q8_0(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const BlockQ8_0*>(vx);
    for (int64_t i = 0; i < n / 32; ++i) {
      store_scaled(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs)), fp16_to_fp32(x[i].d), y + 32 * i);
    }
  }

  // ---- float types with xsimd batches

  template <typename Load>
  static void dot_float(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out,
                        size_t elem_bytes, Load load) {
    constexpr int64_t W = fbatch::size;
    const auto* wp = static_cast<const uint8_t*>(w);
    fbatch acc[kMaxDotCols];
    for (int c = 0; c < nc; ++c) acc[c] = fbatch(0.0f);
    int64_t i = 0;
    for (; i + W <= n; i += W) {
      const fbatch wv = load(wp + i * elem_bytes);
      for (int c = 0; c < nc; ++c) {
        const auto* ap = static_cast<const uint8_t*>(act) + c * stride;
        acc[c] = xsimd::fma(wv, load(ap + i * elem_bytes), acc[c]);
      }
    }
    for (int c = 0; c < nc; ++c) {
      float tail = 0.0f;
      const auto* ap = static_cast<const uint8_t*>(act) + c * stride;
      for (int64_t j = i; j < n; ++j) tail += scalar(wp + j * elem_bytes, elem_bytes) * scalar(ap + j * elem_bytes, elem_bytes);
      out[c] = xsimd::hadd(acc[c]) + tail;
    }
  }

  static float scalar(const uint8_t* p, size_t elem_bytes) {
    if (elem_bytes == 4) {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16_to_fp32(h);
  }

  static void dot_f32(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_float(n, w, a, s, nc, out, 4, [](const uint8_t* p) {
      return fbatch::load_unaligned(reinterpret_cast<const float*>(p));
    });
  }

  static void dot_f16(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_float(n, w, a, s, nc, out, 2, [](const uint8_t* p) { return Isa::load_f16(p); });
  }

  static void dequantize_f16(const void* vx, float* y, int64_t n) {
    constexpr int64_t W = fbatch::size;
    const auto* p = static_cast<const uint8_t*>(vx);
    int64_t i = 0;
    for (; i + W <= n; i += W) Isa::load_f16(p + 2 * i).store_unaligned(y + i);
    for (; i < n; ++i) y[i] = scalar(p + 2 * i, 2);
  }

  static void fill(KernelTable& t) {
    using T = TensorType;
    t.types[uint32_t(T::F32)].vec_dot = dot_f32;
    t.types[uint32_t(T::F16)] = {dequantize_f16, dot_f16};
    t.types[uint32_t(T::Q4_0)] = {dequantize_q4_0, dot_q4_0};
    t.types[uint32_t(T::Q8_0)] = {dequantize_q8_0, dot_q8_0};
  }
};
