// NEON kernels (aarch64), written once over an integer-dot traits struct and instantiated
// twice: with vdotq_s32 (dotprod) and with plain NEON widening multiplies. Included inside
// an anonymous namespace by neon_dotprod.cpp and neon_plain.cpp.
//
// Requires <arm_neon.h>, kernels/blocks.hpp, kernels/float_conv.hpp, kernels/kernels.hpp.

template <class Dot>
struct Neon {
  static float h2f(uint16_t h) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
  }

  // ---- float types
  template <typename Load>
  static void dot_float(int64_t n, const void* w, const void* act, size_t stride, int nc,
                        float* out, size_t elem_bytes, Load load, float (*scalar)(const uint8_t*)) {
    const auto* wp = static_cast<const uint8_t*>(w);
    for (int c = 0; c < nc; ++c) {
      const auto* ap = static_cast<const uint8_t*>(act) + c * stride;
      float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        acc0 = vfmaq_f32(acc0, load(wp + i * elem_bytes), load(ap + i * elem_bytes));
        acc1 = vfmaq_f32(acc1, load(wp + (i + 4) * elem_bytes), load(ap + (i + 4) * elem_bytes));
      }
      float sum = vaddvq_f32(vaddq_f32(acc0, acc1));
      for (; i < n; ++i) sum += scalar(wp + i * elem_bytes) * scalar(ap + i * elem_bytes);
      out[c] = sum;
    }
  }
  static float f32_at(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  static float f16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16_to_fp32(h);
  }
  static void dot_f32(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_float(
        n, w, a, s, nc, out, 4,
        [](const uint8_t* p) { return vld1q_f32(reinterpret_cast<const float*>(p)); }, f32_at);
  }
  static float bf16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return bf16_to_fp32(h);
  }
  static float32x4_t load4_f16(const uint8_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
  }
  static float32x4_t load4_bf16(const uint8_t* p) {  // bf16 is the high half of an f32
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)), 16));
  }
  static void dot_f16(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_float(n, w, a, s, nc, out, 2, load4_f16, f16_at);
  }
  static void dot_bf16(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_float(n, w, a, s, nc, out, 2, load4_bf16, bf16_at);
  }
  // Both conversions are exact, so these equal the reference bit for bit.
  template <float32x4_t (*Load)(const uint8_t*), float (*Scalar)(const uint8_t*)>
  static void dequantize_half(const void* vx, float* y, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(vx);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, Load(p + 2 * i));
    for (; i < n; ++i) y[i] = Scalar(p + 2 * i);
  }

  // ---- legacy and 4-bit non-linear types against Q8_0: 32 signed bytes per block
  template <typename WB>
  static float block_scale(const WB& b) {
    return h2f(b.d);
  }
  static float block_scale(const BlockMXFP4& b) { return e8m0_to_fp32_half(b.e); }

  template <typename WB, typename Decode>
  static void dot_q8_blocks(int64_t n, const void* w, const void* act, size_t stride, int nc,
                            float* out, Decode decode) {
    const auto* x = static_cast<const WB*>(w);
    float sum[kMaxDotCols] = {};
    for (int64_t i = 0; i < n / 32; ++i) {
      int8x16_t lo, hi;
      decode(x[i], lo, hi);  // once for every column
      const float dx = block_scale(x[i]);
      for (int c = 0; c < nc; ++c) {
        const auto* y =
            reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(act) + c * stride) + i;
        const int32x4_t p =
            Dot::dot(Dot::dot(vdupq_n_s32(0), lo, vld1q_s8(y->qs)), hi, vld1q_s8(y->qs + 16));
        sum[c] += dx * h2f(y->d) * static_cast<float>(vaddvq_s32(p));
      }
    }
    for (int c = 0; c < nc; ++c) out[c] = sum[c];
  }

  static void unpack_q4_0(const BlockQ4_0& b, int8x16_t& lo, int8x16_t& hi) {
    const uint8x16_t q = vld1q_u8(b.qs);
    lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0f))), vdupq_n_s8(8));
    hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), vdupq_n_s8(8));
  }
  static void dot_q4_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_blocks<BlockQ4_0>(n, w, a, s, nc, out, unpack_q4_0);
  }
  static void dot_q8_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_blocks<BlockQ8_0>(n, w, a, s, nc, out, unpack_q8_0);
  }

  static void lookup_nibbles(const uint8_t* qs, const int8_t* table, int8x16_t& lo, int8x16_t& hi) {
    const uint8x16_t q = vld1q_u8(qs);
    const int8x16_t t = vld1q_s8(table);
    lo = vqtbl1q_s8(t, vandq_u8(q, vdupq_n_u8(0x0f)));
    hi = vqtbl1q_s8(t, vshrq_n_u8(q, 4));
  }
  static void dot_iq4_nl(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_blocks<BlockIQ4_NL>(n, w, a, s, nc, out, unpack_iq4_nl);
  }
  static void dot_mxfp4(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_blocks<BlockMXFP4>(n, w, a, s, nc, out, unpack_mxfp4);
  }

  // Q5 types: the fifth bit of 16 elements (bit j of h -> element j) as 0x10 bytes.
  static uint8x16_t fifth_bits(uint32_t h) {
    static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t v =
        vcombine_u8(vdup_n_u8(static_cast<uint8_t>(h)), vdup_n_u8(static_cast<uint8_t>(h >> 8)));
    return vandq_u8(vtstq_u8(v, vld1q_u8(kBit)), vdupq_n_u8(0x10));
  }
  // Unsigned 4- or 5-bit values of one 32-element block, in element order.
  static void unpack_q4(const uint8_t* qs, int8x16_t& lo, int8x16_t& hi) {
    const uint8x16_t q = vld1q_u8(qs);
    lo = vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0f)));
    hi = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
  }
  static void unpack_q5(const uint8_t* qs, const uint8_t* qh, int8x16_t& lo, int8x16_t& hi) {
    uint32_t h;
    std::memcpy(&h, qh, 4);
    unpack_q4(qs, lo, hi);
    lo = vorrq_s8(lo, vreinterpretq_s8_u8(fifth_bits(h & 0xffff)));
    hi = vorrq_s8(hi, vreinterpretq_s8_u8(fifth_bits(h >> 16)));
  }
  static void unpack_q5_0(const BlockQ5_0& b, int8x16_t& lo, int8x16_t& hi) {
    unpack_q5(b.qs, b.qh, lo, hi);
    lo = vsubq_s8(lo, vdupq_n_s8(16));
    hi = vsubq_s8(hi, vdupq_n_s8(16));
  }
  static void unpack_q4_1(const BlockQ4_1& b, int8x16_t& lo, int8x16_t& hi) {
    unpack_q4(b.qs, lo, hi);
  }
  static void unpack_q5_1(const BlockQ5_1& b, int8x16_t& lo, int8x16_t& hi) {
    unpack_q5(b.qs, b.qh, lo, hi);
  }
  static void dot_q5_0(int64_t n, const void* w, const void* a, size_t s, int nc, float* out) {
    dot_q8_blocks<BlockQ5_0>(n, w, a, s, nc, out, unpack_q5_0);
  }

  // Types with a minimum against Q8_1: unsigned values, plus the min times the activation
  // block sum.
  template <typename WB, void (*Unpack)(const WB&, int8x16_t&, int8x16_t&)>
  static void dot_q8_1_blocks(int64_t n, const void* w, const void* act, size_t stride, int nc,
                              float* out) {
    const auto* x = static_cast<const WB*>(w);
    float sum[kMaxDotCols] = {};
    for (int64_t i = 0; i < n / 32; ++i) {
      int8x16_t lo, hi;
      Unpack(x[i], lo, hi);
      const float dx = h2f(x[i].d), mx = h2f(x[i].m);
      for (int c = 0; c < nc; ++c) {
        const auto* y =
            reinterpret_cast<const BlockQ8_1*>(static_cast<const uint8_t*>(act) + c * stride) + i;
        const int32x4_t p =
            Dot::dot(Dot::dot(vdupq_n_s32(0), lo, vld1q_s8(y->qs)), hi, vld1q_s8(y->qs + 16));
        sum[c] += dx * h2f(y->d) * static_cast<float>(vaddvq_s32(p)) + mx * h2f(y->s);
      }
    }
    for (int c = 0; c < nc; ++c) out[c] = sum[c];
  }

  // 16 signed bytes as four vectors of exact floats.
  static void widen(int8x16_t q, float32x4_t f[4]) {
    const int16x8_t a = vmovl_s8(vget_low_s8(q)), b = vmovl_s8(vget_high_s8(q));
    const int16x4_t parts[4] = {vget_low_s16(a), vget_high_s16(a), vget_low_s16(b),
                                vget_high_s16(b)};
    for (int k = 0; k < 4; ++k) f[k] = vcvtq_f32_s32(vmovl_s16(parts[k]));
  }
  // q * d (+ m): one multiply (and one add), as the reference.
  static void store_scaled(int8x16_t q, float d, float* y) {
    float32x4_t f[4];
    widen(q, f);
    for (int k = 0; k < 4; ++k) vst1q_f32(y + 4 * k, vmulq_f32(f[k], vdupq_n_f32(d)));
  }
  static void store_affine(int8x16_t q, float d, float m, float* y) {
    float32x4_t f[4];
    widen(q, f);
    for (int k = 0; k < 4; ++k)
      vst1q_f32(y + 4 * k, vaddq_f32(vmulq_f32(f[k], vdupq_n_f32(d)), vdupq_n_f32(m)));
  }
  template <typename WB, void (*Unpack)(const WB&, int8x16_t&, int8x16_t&)>
  static void dequantize_blocks(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const WB*>(vx);
    for (int64_t i = 0; i < n / 32; ++i, y += 32) {
      int8x16_t lo, hi;
      Unpack(x[i], lo, hi);
      const float d = block_scale(x[i]);
      store_scaled(lo, d, y);
      store_scaled(hi, d, y + 16);
    }
  }
  template <typename WB, void (*Unpack)(const WB&, int8x16_t&, int8x16_t&)>
  static void dequantize_affine(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const WB*>(vx);
    for (int64_t i = 0; i < n / 32; ++i, y += 32) {
      int8x16_t lo, hi;
      Unpack(x[i], lo, hi);
      const float d = h2f(x[i].d), m = h2f(x[i].m);
      store_affine(lo, d, m, y);
      store_affine(hi, d, m, y + 16);
    }
  }
  static void unpack_q8_0(const BlockQ8_0& b, int8x16_t& lo, int8x16_t& hi) {
    lo = vld1q_s8(b.qs);
    hi = vld1q_s8(b.qs + 16);
  }
  static void unpack_iq4_nl(const BlockIQ4_NL& b, int8x16_t& lo, int8x16_t& hi) {
    lookup_nibbles(b.qs, kKvaluesIq4nl, lo, hi);
  }
  static void unpack_mxfp4(const BlockMXFP4& b, int8x16_t& lo, int8x16_t& hi) {
    lookup_nibbles(b.qs, kKvaluesMxfp4, lo, hi);
  }

  // ---- K types: the reference's super-block view (kernels/ref/superblock.hpp) with the
  // per-16 integer sums done by NEON. The decoded form is shared with the scalar path, so
  // the dequantizer stays bit-identical.
  template <typename Block, void (*Decode)(const Block&, ref::Decoded&)>
  static void dot_k(int64_t n, const void* w, const void* act, size_t stride, int nc, float* out) {
    const auto* x = static_cast<const Block*>(w);
    float sum[kMaxDotCols] = {};
    ref::Decoded dec;
    for (int64_t i = 0; i < n / kQKK; ++i) {
      Decode(x[i], dec);
      for (int c = 0; c < nc; ++c) {
        const auto* y =
            reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + c * stride) + i;
        float block = 0.0f;
        for (int s = 0; s < kQKK / 16; ++s) {
          const int32_t isum = vaddvq_s32(
              Dot::dot(vdupq_n_s32(0), vld1q_s8(dec.q + 16 * s), vld1q_s8(y->qs + 16 * s)));
          block += dec.scale[s] * static_cast<float>(isum) -
                   dec.min[s] * static_cast<float>(y->bsums[s]);
        }
        sum[c] += block * y->d;
      }
    }
    for (int c = 0; c < nc; ++c) out[c] = sum[c];
  }

  // value = scale * q - min per 16 elements, as the reference (exact ints, then one multiply
  // and one subtraction), so bit-identical to it.
  template <typename Block, void (*Decode)(const Block&, ref::Decoded&)>
  static void dequantize_k(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const Block*>(vx);
    ref::Decoded dec;
    for (int64_t i = 0; i < n / kQKK; ++i, y += kQKK) {
      Decode(x[i], dec);
      for (int s = 0; s < kQKK / 16; ++s) {
        float32x4_t f[4];
        widen(vld1q_s8(dec.q + 16 * s), f);
        const float32x4_t sv = vdupq_n_f32(dec.scale[s]), mv = vdupq_n_f32(dec.min[s]);
        for (int k = 0; k < 4; ++k)
          vst1q_f32(y + 16 * s + 4 * k, vsubq_f32(vmulq_f32(sv, f[k]), mv));
      }
    }
  }
  template <typename Block, void (*Decode)(const Block&, ref::Decoded&)>
  static constexpr TypeKernels k_kernels() {
    return with_rows<dequantize_k<Block, Decode>, dot_k<Block, Decode>>();
  }
  // A type's dequantizer and dot, with the dot's rows form: one call per piece of a matrix in
  // a one-token gemv (rows_by_dot), as on x86.
  template <DequantizeRowFn kDequantize, VecDotFn kDot>
  static constexpr TypeKernels with_rows() {
    return {kDequantize, kDot, rows_by_dot<kDot>};
  }

  // ---- attention primitives
  static float vdot_f32(const float* a, const float* b, int64_t n) {
    float out;
    dot_f32(n, a, b, 0, 1, &out);
    return out;
  }
  static float vdot_f16(const float* a, const uint16_t* b, int64_t n) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
      acc = vfmaq_f32(acc, vld1q_f32(a + i), vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(b + i))));
    float sum = vaddvq_f32(acc);
    for (; i < n; ++i) sum += a[i] * fp16_to_fp32(b[i]);
    return sum;
  }
  static void vaxpy_f32(float* y, float a, const float* x, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
    for (; i < n; ++i) y[i] += a * x[i];
  }
  static void vaxpy_f16(float* y, float a, const uint16_t* x, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i),
                                   vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(x + i))), a));
    }
    for (; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
  }

  static void fill(KernelTable& t) {
    using T = TensorType;
    t.vec.dot_f32 = vdot_f32;  // the element-wise ops keep the scalar versions
    t.vec.dot_f16 = vdot_f16;
    t.vec.axpy_f32 = vaxpy_f32;
    t.vec.axpy_f16 = vaxpy_f16;
    t.types[uint32_t(T::F32)].vec_dot = dot_f32;  // its "dequantizer" is a copy
    t.types[uint32_t(T::F32)].vec_dot_rows = rows_by_dot<dot_f32>;
    t.types[uint32_t(T::F16)] = with_rows<dequantize_half<load4_f16, f16_at>, dot_f16>();
    t.types[uint32_t(T::BF16)] = with_rows<dequantize_half<load4_bf16, bf16_at>, dot_bf16>();
    t.types[uint32_t(T::Q4_0)] = with_rows<dequantize_blocks<BlockQ4_0, unpack_q4_0>, dot_q4_0>();
    t.types[uint32_t(T::Q5_0)] = with_rows<dequantize_blocks<BlockQ5_0, unpack_q5_0>, dot_q5_0>();
    t.types[uint32_t(T::Q8_0)] = with_rows<dequantize_blocks<BlockQ8_0, unpack_q8_0>, dot_q8_0>();
    t.types[uint32_t(T::Q4_1)] = with_rows<dequantize_affine<BlockQ4_1, unpack_q4_1>,
                                           dot_q8_1_blocks<BlockQ4_1, unpack_q4_1>>();
    t.types[uint32_t(T::Q5_1)] = with_rows<dequantize_affine<BlockQ5_1, unpack_q5_1>,
                                           dot_q8_1_blocks<BlockQ5_1, unpack_q5_1>>();
    t.types[uint32_t(T::IQ4_NL)] =
        with_rows<dequantize_blocks<BlockIQ4_NL, unpack_iq4_nl>, dot_iq4_nl>();
    t.types[uint32_t(T::MXFP4)] =
        with_rows<dequantize_blocks<BlockMXFP4, unpack_mxfp4>, dot_mxfp4>();
    t.types[uint32_t(T::Q2_K)] = k_kernels<BlockQ2_K, ref::decode_q2_K>();
    t.types[uint32_t(T::Q3_K)] = k_kernels<BlockQ3_K, ref::decode_q3_K>();
    t.types[uint32_t(T::Q4_K)] = k_kernels<BlockQ4_K, ref::decode_q4_K>();
    t.types[uint32_t(T::Q5_K)] = k_kernels<BlockQ5_K, ref::decode_q5_K>();
    t.types[uint32_t(T::Q6_K)] = k_kernels<BlockQ6_K, ref::decode_q6_K>();
    t.types[uint32_t(T::IQ4_XS)] = k_kernels<BlockIQ4_XS, ref::decode_iq4_xs>();
    t.types[uint32_t(T::IQ2_XXS)] = k_kernels<BlockIQ2_XXS, ref::decode_iq2_xxs>();
    t.types[uint32_t(T::IQ2_XS)] = k_kernels<BlockIQ2_XS, ref::decode_iq2_xs>();
    t.types[uint32_t(T::IQ2_S)] = k_kernels<BlockIQ2_S, ref::decode_iq2_s>();
    t.types[uint32_t(T::IQ3_XXS)] = k_kernels<BlockIQ3_XXS, ref::decode_iq3_xxs>();
    t.types[uint32_t(T::IQ3_S)] = k_kernels<BlockIQ3_S, ref::decode_iq3_s>();
    t.types[uint32_t(T::IQ1_S)] = k_kernels<BlockIQ1_S, ref::decode_iq1_s>();
    t.types[uint32_t(T::IQ1_M)] = k_kernels<BlockIQ1_M, ref::decode_iq1_m>();
    t.types[uint32_t(T::TQ1_0)] = k_kernels<BlockTQ1_0, ref::decode_tq1_0>();
    t.types[uint32_t(T::TQ2_0)] = k_kernels<BlockTQ2_0, ref::decode_tq2_0>();
  }
};
