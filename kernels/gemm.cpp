// The canonical decoders of every quantized type, the GEMM activation quantizer, and the
// scalar GEMM panel (the reference of the SIMD ones).
#include "kernels/gemm.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "qinfer/error.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/pack.hpp"
#include "kernels/ref/superblock.hpp"

namespace qinfer::kernels {

namespace {

using ref::Decoded;

// ---- 32-element blocks: one scale (and min) per block

template <typename Block, typename Values>
void decode_blocks32(const void* row, int64_t n, int8_t* q, float* scale, float* min,
                     Values values) {
  const auto* b = static_cast<const Block*>(row);
  for (int64_t i = 0; i < n / 32; ++i) values(b[i], q + 32 * i, scale[i], min[i]);
}

int q5_bit(const uint8_t* qh, int j) { return ((qh[j / 8] >> (j % 8)) & 1) << 4; }

void decode_q4_0(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
  decode_blocks32<BlockQ4_0>(row, n, q, scale, min,
                             [](const BlockQ4_0& b, int8_t* v, float& s, float& m) {
                               for (int j = 0; j < 16; ++j) {
                                 v[j] = static_cast<int8_t>((b.qs[j] & 0x0f) - 8);
                                 v[j + 16] = static_cast<int8_t>((b.qs[j] >> 4) - 8);
                               }
                               s = fp16_to_fp32(b.d);
                               m = 0.0f;
                             });
}

void decode_q4_1(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
  decode_blocks32<BlockQ4_1>(row, n, q, scale, min,
                             [](const BlockQ4_1& b, int8_t* v, float& s, float& m) {
                               for (int j = 0; j < 16; ++j) {
                                 v[j] = static_cast<int8_t>(b.qs[j] & 0x0f);
                                 v[j + 16] = static_cast<int8_t>(b.qs[j] >> 4);
                               }
                               s = fp16_to_fp32(b.d);
                               m = -fp16_to_fp32(b.m);  // x = d q + m
                             });
}

void decode_q5_0(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
  decode_blocks32<BlockQ5_0>(
      row, n, q, scale, min, [](const BlockQ5_0& b, int8_t* v, float& s, float& m) {
        for (int j = 0; j < 16; ++j) {
          v[j] = static_cast<int8_t>(((b.qs[j] & 0x0f) | q5_bit(b.qh, j)) - 16);
          v[j + 16] = static_cast<int8_t>(((b.qs[j] >> 4) | q5_bit(b.qh, j + 16)) - 16);
        }
        s = fp16_to_fp32(b.d);
        m = 0.0f;
      });
}

void decode_q5_1(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
  decode_blocks32<BlockQ5_1>(
      row, n, q, scale, min, [](const BlockQ5_1& b, int8_t* v, float& s, float& m) {
        for (int j = 0; j < 16; ++j) {
          v[j] = static_cast<int8_t>((b.qs[j] & 0x0f) | q5_bit(b.qh, j));
          v[j + 16] = static_cast<int8_t>((b.qs[j] >> 4) | q5_bit(b.qh, j + 16));
        }
        s = fp16_to_fp32(b.d);
        m = -fp16_to_fp32(b.m);
      });
}

void decode_q8_0(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
  decode_blocks32<BlockQ8_0>(row, n, q, scale, min,
                             [](const BlockQ8_0& b, int8_t* v, float& s, float& m) {
                               std::copy(b.qs, b.qs + 32, v);
                               s = fp16_to_fp32(b.d);
                               m = 0.0f;
                             });
}

template <const int8_t* kTable, typename Block>
void table_values(const Block& b, int8_t* v) {
  for (int j = 0; j < 16; ++j) {
    v[j] = kTable[b.qs[j] & 0x0f];
    v[j + 16] = kTable[b.qs[j] >> 4];
  }
}

void decode_iq4_nl(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
  decode_blocks32<BlockIQ4_NL>(row, n, q, scale, min,
                               [](const BlockIQ4_NL& b, int8_t* v, float& s, float& m) {
                                 table_values<kKvaluesIq4nl>(b, v);
                                 s = fp16_to_fp32(b.d);
                                 m = 0.0f;
                               });
}

void decode_mxfp4(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
  decode_blocks32<BlockMXFP4>(row, n, q, scale, min,
                              [](const BlockMXFP4& b, int8_t* v, float& s, float& m) {
                                table_values<kKvaluesMxfp4>(b, v);
                                s = e8m0_to_fp32_half(b.e);
                                m = 0.0f;
                              });
}

// ---- 256-element super-blocks through the reference decoders: scale and min per 16

template <typename Block, void (*Decode)(const Block&, Decoded&)>
void decode_superblocks(const void* row, int64_t n, int8_t* q, float* scale, float* min) {
  const auto* b = static_cast<const Block*>(row);
  Decoded dec;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    Decode(b[i], dec);
    std::copy(dec.q, dec.q + kQKK, q + i * kQKK);
    std::copy(dec.scale, dec.scale + kQKK / 16, scale + i * (kQKK / 16));
    std::copy(dec.min, dec.min + kQKK / 16, min + i * (kQKK / 16));
  }
}

struct Infos {
  GemmTypeInfo by_type[kTypeIdCount];
  Infos() {
    using T = TensorType;
    // max |q| of each decoder (the grids' largest magnitudes: IQ2 43, IQ3 62, IQ1 8*1+1).
    auto set = [&](T t, DecodeGroupsFn f, int group, bool has_min, bool wide, int max_abs) {
      by_type[static_cast<uint32_t>(t)] = {f, group, has_min, wide, max_abs};
    };
    set(T::Q4_0, decode_q4_0, 32, false, false, 8);
    set(T::Q4_1, decode_q4_1, 32, true, false, 15);
    set(T::Q5_0, decode_q5_0, 32, false, false, 16);
    set(T::Q5_1, decode_q5_1, 32, true, false, 31);
    set(T::Q8_0, decode_q8_0, 32, false, true, 128);
    set(T::IQ4_NL, decode_iq4_nl, 32, false, true, 127);
    set(T::MXFP4, decode_mxfp4, 32, false, false, 12);
    set(T::Q2_K, decode_superblocks<BlockQ2_K, ref::decode_q2_K>, 16, true, false, 3);
    set(T::Q3_K, decode_superblocks<BlockQ3_K, ref::decode_q3_K>, 16, false, false, 4);
    set(T::Q4_K, decode_superblocks<BlockQ4_K, ref::decode_q4_K>, 16, true, false, 15);
    set(T::Q5_K, decode_superblocks<BlockQ5_K, ref::decode_q5_K>, 16, true, false, 31);
    set(T::Q6_K, decode_superblocks<BlockQ6_K, ref::decode_q6_K>, 16, false, false, 32);
    set(T::IQ2_XXS, decode_superblocks<BlockIQ2_XXS, ref::decode_iq2_xxs>, 16, false, false, 43);
    set(T::IQ2_XS, decode_superblocks<BlockIQ2_XS, ref::decode_iq2_xs>, 16, false, false, 43);
    set(T::IQ2_S, decode_superblocks<BlockIQ2_S, ref::decode_iq2_s>, 16, false, false, 43);
    set(T::IQ3_XXS, decode_superblocks<BlockIQ3_XXS, ref::decode_iq3_xxs>, 16, false, false, 62);
    set(T::IQ3_S, decode_superblocks<BlockIQ3_S, ref::decode_iq3_s>, 16, false, false, 62);
    set(T::IQ1_S, decode_superblocks<BlockIQ1_S, ref::decode_iq1_s>, 16, false, false, 9);
    set(T::IQ1_M, decode_superblocks<BlockIQ1_M, ref::decode_iq1_m>, 16, false, false, 9);
    set(T::IQ4_XS, decode_superblocks<BlockIQ4_XS, ref::decode_iq4_xs>, 16, false, true, 127);
    set(T::TQ1_0, decode_superblocks<BlockTQ1_0, ref::decode_tq1_0>, 16, false, false, 1);
    set(T::TQ2_0, decode_superblocks<BlockTQ2_0, ref::decode_tq2_0>, 16, false, false, 2);
  }
};

}  // namespace

const GemmTypeInfo& gemm_type_info(TensorType type) {
  static const Infos infos;
  return infos.by_type[static_cast<uint32_t>(type)];
}

bool is_float_type(TensorType type) {
  return type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16;
}

void resize_gemm_activations(GemmActivationBuffer& buf, TensorType type, int64_t n_tokens,
                             int64_t n_cols) {
  buf.type = type;
  const auto n = static_cast<size_t>(n_tokens * n_cols);
  if (is_float_type(type)) {  // whole tiles, the last one padded with zeros
    const int64_t tiles = (n_tokens + kFloatTile - 1) / kFloatTile;
    buf.x.assign(static_cast<size_t>(tiles * kFloatTile * n_cols), 0.0f);
    if (type == TensorType::BF16)
      buf.xb.assign(static_cast<size_t>(tiles * kFloatTile * n_cols / 2), 0);
    return;
  }
  buf.blocks.resize(row_size_bytes(type, n_cols) * static_cast<size_t>(n_tokens));
  buf.q.resize(n);
  buf.qu.resize(n);
  buf.d.resize(static_cast<size_t>(n_tokens * (n_cols / 32)));
  buf.sum16.resize(static_cast<size_t>(n_tokens * (n_cols / 16)));
}

GemmActivations GemmActivationBuffer::view(const float* input, int64_t n_tokens,
                                           int64_t n_cols) const {
  if (is_float_type(type)) {
    GemmActivations a{n_tokens, n_cols, n_cols, x.data()};
    if (type == TensorType::BF16) a.xb = xb.data();
    return a;
  }
  return {n_tokens, n_cols, n_cols, input, q.data(), qu.data(), d.data(), sum16.data()};
}

void prepare_gemm_rows(const KernelTable& k, const float* x, int64_t n_cols, int64_t t0, int64_t t1,
                       GemmActivationBuffer& buf) {
  const QuantizeRowFn quantize = k.quantize_act[static_cast<uint32_t>(buf.type)];
  const size_t row_bytes = row_size_bytes(buf.type, n_cols);
  const int64_t n32 = n_cols / 32, n16 = n_cols / 16;
  for (int64_t t = t0; t < t1; ++t) {
    const float* xr = x + t * n_cols;
    if (buf.type == TensorType::F32) continue;  // used as given
    if (is_float_type(buf.type)) {              // rounded as the dot's type, back to float, packed
      uint16_t tmp[256];
      float* tile = buf.x.data() + (t / kFloatTile) * n_cols * kFloatTile + t % kFloatTile;
      uint32_t* pairs =
          buf.type == TensorType::BF16
              ? buf.xb.data() + (t / kFloatTile) * (n_cols / 2) * kFloatTile + t % kFloatTile
              : nullptr;
      for (int64_t i = 0; i < n_cols; i += 256) {
        const int64_t m = std::min<int64_t>(256, n_cols - i);
        quantize(xr + i, tmp, m);
        for (int64_t j = 0; j < m; ++j) {
          tile[(i + j) * kFloatTile] =
              buf.type == TensorType::F16 ? fp16_to_fp32(tmp[j]) : bf16_to_fp32(tmp[j]);
        }
        if (pairs != nullptr) {
          for (int64_t j = 0; j + 1 < m; j += 2)
            pairs[(i + j) / 2 * kFloatTile] = tmp[j] | static_cast<uint32_t>(tmp[j + 1]) << 16;
        }
      }
      continue;
    }
    uint8_t* blocks = buf.blocks.data() + t * row_bytes;
    quantize(xr, blocks, n_cols);
    int8_t* q = buf.q.data() + t * n_cols;
    uint8_t* qu = buf.qu.data() + t * n_cols;
    float* d = buf.d.data() + t * n32;
    float* s16 = buf.sum16.data() + t * n16;
    auto sum = [](const int8_t* v, int n) {
      int s = 0;
      for (int j = 0; j < n; ++j) s += v[j];
      return s;
    };
    if (buf.type == TensorType::Q8_K) {
      const auto* b = reinterpret_cast<const BlockQ8_K*>(blocks);
      for (int64_t i = 0; i < n_cols / kQKK; ++i) {
        std::copy(b[i].qs, b[i].qs + kQKK, q + i * kQKK);
        for (int g = 0; g < 8; ++g) d[i * 8 + g] = b[i].d;
        for (int g = 0; g < 16; ++g) s16[i * 16 + g] = b[i].d * static_cast<float>(b[i].bsums[g]);
      }
    } else if (buf.type == TensorType::Q8_1) {  // the min term uses the block's own s (f16)
      const auto* b = reinterpret_cast<const BlockQ8_1*>(blocks);
      for (int64_t i = 0; i < n32; ++i) {
        std::copy(b[i].qs, b[i].qs + 32, q + i * 32);
        d[i] = fp16_to_fp32(b[i].d);
        s16[2 * i] = fp16_to_fp32(b[i].s);
        s16[2 * i + 1] = 0.0f;
      }
    } else {  // Q8_0
      const auto* b = reinterpret_cast<const BlockQ8_0*>(blocks);
      for (int64_t i = 0; i < n32; ++i) {
        std::copy(b[i].qs, b[i].qs + 32, q + i * 32);
        d[i] = fp16_to_fp32(b[i].d);
        s16[2 * i] = d[i] * static_cast<float>(sum(b[i].qs, 16));
        s16[2 * i + 1] = d[i] * static_cast<float>(sum(b[i].qs + 16, 16));
      }
    }
    for (int64_t i = 0; i < n_cols; ++i) qu[i] = static_cast<uint8_t>(q[i] + 128);
  }
}

void gemm_panel_scalar(TensorType type, const uint8_t* w, size_t row_bytes, int n_rows,
                       const GemmActivations& a, float* y, int64_t y_stride, bool accumulate,
                       std::vector<uint8_t>& scratch, PanelRows rows) {
  if (rows == PanelRows::kInterleaved)
    throw Error(ErrorCode::kInternal, "the scalar GEMM reads no interleaved rows");
  const KernelTable& ref_table = table(Isa::kScalar);
  const int64_t n_cols = a.n_cols;
  auto put = [&](int64_t t, int r, float v) {
    float& dst = y[t * y_stride + r];
    dst = accumulate ? dst + v : v;
  };
  if (is_float_type(type)) {
    scratch.resize(static_cast<size_t>(n_cols) * sizeof(float));
    auto* row = reinterpret_cast<float*>(scratch.data());
    for (int r = 0; r < n_rows; ++r) {
      ref_table.types[static_cast<uint32_t>(type)].dequantize_row(w + r * row_bytes, row, n_cols);
      for (int64_t t = 0; t < a.n_tokens; ++t) {
        float sum = 0.0f;
        const float* xt = a.x + (t / kFloatTile) * a.stride * kFloatTile + t % kFloatTile;
        for (int64_t k = 0; k < n_cols; ++k) sum += row[k] * xt[k * kFloatTile];
        put(t, r, sum);
      }
    }
    return;
  }
  const GemmTypeInfo& info = gemm_type_info(type);
  const DecodeGroupsFn decode =
      rows == PanelRows::kPacked ? packed_gemm_decoder(type) : info.decode;
  if (decode == nullptr)
    throw Error(ErrorCode::kInternal, "a packed GEMM panel without its decoder");
  const int64_t n_groups = n_cols / info.group;
  std::vector<int8_t> q(static_cast<size_t>(n_cols));
  std::vector<float> scale(static_cast<size_t>(n_groups)), min(static_cast<size_t>(n_groups));
  for (int r = 0; r < n_rows; ++r) {
    decode(w + r * row_bytes, n_cols, q.data(), scale.data(), min.data());
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const int8_t* qx = a.q + t * a.stride;
      float sum = 0.0f;
      for (int64_t g = 0; g < n_groups; ++g) {
        int isum = 0;
        for (int j = 0; j < info.group; ++j) isum += q[g * info.group + j] * qx[g * info.group + j];
        const int64_t first16 = g * info.group / 16;
        float xsum = a.sum16[t * (a.stride / 16) + first16];
        if (info.group == 32) xsum += a.sum16[t * (a.stride / 16) + first16 + 1];
        sum +=
            scale[g] * a.d[t * (a.stride / 32) + g * info.group / 32] * static_cast<float>(isum) -
            min[g] * xsum;
      }
      put(t, r, sum);
    }
  }
}

}  // namespace qinfer::kernels
