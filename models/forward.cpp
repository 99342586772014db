// The forward pass shared by llama and gpt2; the architecture picks blocks by config.
#include <cmath>
#include <cstring>

#include "kernels/float_conv.hpp"
#include "kernels/ops.hpp"
#include "models/model.hpp"
#include "qinfer/error.hpp"

namespace qinfer {

KvCache::KvCache(const ModelConfig& c, int64_t n_ctx, bool f16)
    : n_ctx_(n_ctx), row_elems_(c.n_embd_kv()), n_layer_(c.n_layer), f16_(f16) {
  const size_t bytes = static_cast<size_t>(n_layer_ * n_ctx_ * row_elems_) * (f16 ? 2 : 4);
  k_.assign(bytes, 0);
  v_.assign(bytes, 0);
}

void* KvCache::k_row(int64_t layer, int64_t pos) {
  return k_.data() + static_cast<size_t>((layer * n_ctx_ + pos) * row_elems_) * (f16_ ? 2 : 4);
}
void* KvCache::v_row(int64_t layer, int64_t pos) {
  return v_.data() + static_cast<size_t>((layer * n_ctx_ + pos) * row_elems_) * (f16_ ? 2 : 4);
}

struct ForwardScratch {
  std::vector<float> x;      // (n, n_embd) residual stream
  std::vector<float> h;      // (n, n_embd) normalised input of a block
  std::vector<float> q;      // (n, n_embd)
  std::vector<float> k, v;   // (n, n_embd_kv)
  std::vector<float> qkv;    // (n, 3 * n_embd) gpt2's fused projection
  std::vector<float> attn;   // (n, n_embd) attention output
  std::vector<float> proj;   // (n, n_embd)
  std::vector<float> gate;   // (n, n_ff)
  std::vector<float> up;     // (n, n_ff)
  std::vector<uint8_t> act;  // quantized activations of one matmul
};

Forward::Forward(const ModelConfig& config, const ModelWeights& weights)
    : c_(config), w_(weights), s_(std::make_unique<ForwardScratch>()) {}
Forward::~Forward() = default;

namespace {

void add_bias(float* y, const float* b, int64_t n_tokens, int64_t n) {
  if (b == nullptr) return;
  for (int64_t t = 0; t < n_tokens; ++t) ops::add(y + t * n, b, n);
}

float round_f16(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }
constexpr int64_t kLanes = 16;

}  // namespace

void Forward::attention(const kernels::VectorOps& vec, KvCache& cache, int64_t layer, int64_t n,
                        int64_t pos0) {
  const int64_t hd = c_.head_dim(), n_embd = c_.n_embd;
  const int64_t group = c_.n_head / c_.n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const bool f16 = cache.is_f16();
  float* q_all = s_->q.data();
  float* out_all = s_->attn.data();
#pragma omp parallel for collapse(2) schedule(static) if (n * c_.n_head > 1)
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t h = 0; h < c_.n_head; ++h) {
      const int64_t n_past = pos0 + i + 1;  // causal: positions 0..pos0+i
      const int64_t g = h / group;
      // Per-thread scratch, reused across tokens and heads.
      thread_local std::vector<float> q, scores, lanes;
      q.resize(hd);
      scores.resize(static_cast<size_t>(n_past));
      // With an f16 cache ggml rounds q to f16 for the K product, and the probabilities to
      // f16 for the V product; doing the same keeps our logits on llama.cpp's.
      for (int64_t d = 0; d < hd; ++d) {
        q[d] = f16 ? round_f16(q_all[i * n_embd + h * hd + d]) : q_all[i * n_embd + h * hd + d];
      }
      for (int64_t t = 0; t < n_past; ++t) {
        const float dot = f16 ? vec.dot_f16(q.data(), static_cast<const uint16_t*>(cache.k_row(layer, t)) + g * hd, hd)
                              : vec.dot_f32(q.data(), static_cast<const float*>(cache.k_row(layer, t)) + g * hd, hd);
        scores[t] = dot * scale;
      }
      ops::softmax(scores.data(), n_past);
      // V weighted by the probabilities: position t goes to accumulator t % 16 and the 16 are
      // summed at the end, the order of ggml's tinyBLAS over the (padded) KV length.
      lanes.assign(static_cast<size_t>(kLanes * hd), 0.0f);
      for (int64_t t = 0; t < n_past; ++t) {
        float* acc = lanes.data() + (t % kLanes) * hd;
        if (f16) {
          vec.axpy_f16(acc, round_f16(scores[t]), static_cast<const uint16_t*>(cache.v_row(layer, t)) + g * hd, hd);
        } else {
          vec.axpy_f32(acc, scores[t], static_cast<const float*>(cache.v_row(layer, t)) + g * hd, hd);
        }
      }
      float* out = out_all + i * n_embd + h * hd;
      float column[kLanes];
      for (int64_t d = 0; d < hd; ++d) {
        for (int64_t l = 0; l < kLanes; ++l) column[l] = lanes[l * hd + d];
        out[d] = ops::sum16(column);
      }
    }
  }
}

void Forward::run(const kernels::KernelTable& k, const int32_t* tokens, int64_t n, int64_t pos0,
                  KvCache& cache, bool all_logits, std::vector<float>& logits) {
  if (n <= 0) throw Error(ErrorCode::kInvalidArgument, "no tokens to evaluate");
  if (pos0 + n > cache.n_ctx()) {
    throw Error(ErrorCode::kContextOverflow,
                "context overflow: " + std::to_string(pos0 + n) + " tokens do not fit in a context of " +
                    std::to_string(cache.n_ctx()));
  }
  const int64_t E = c_.n_embd, E_kv = c_.n_embd_kv(), F = c_.n_ff, hd = c_.head_dim();
  const bool llama = c_.arch == Arch::kLlama;
  ForwardScratch& s = *s_;
  s.x.resize(n * E);
  s.h.resize(n * E);
  s.q.resize(n * E);
  s.k.resize(n * E_kv);
  s.v.resize(n * E_kv);
  s.attn.resize(n * E);
  s.proj.resize(n * E);
  s.up.resize(n * F);
  s.gate.resize(n * F);

  std::vector<float> pos_row(E);
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c_.n_vocab) {
      throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(tokens[t]) + " is not in the vocabulary");
    }
    kernels::get_row(k, w_.token_embd, tokens[t], s.x.data() + t * E);
    if (!llama) {
      if (pos0 + t >= c_.n_ctx_train) {
        throw Error(ErrorCode::kContextOverflow, "position " + std::to_string(pos0 + t) +
                                                     " is past gpt2's learned positions (" +
                                                     std::to_string(c_.n_ctx_train) + ")");
      }
      kernels::get_row(k, w_.position_embd, pos0 + t, pos_row.data());
      ops::add(s.x.data() + t * E, pos_row.data(), E);
    }
  }

  auto norm_rows = [&](float* dst, const float* w, const float* b, int64_t rows) {
    for (int64_t t = 0; t < rows; ++t) {
      if (llama) {
        ops::rmsnorm(dst + t * E, w, E, c_.norm_eps);
      } else {
        ops::layernorm(dst + t * E, w, b, E, c_.norm_eps);
      }
    }
  };

  for (int64_t l = 0; l < c_.n_layer; ++l) {
    const LayerWeights& lw = w_.layers[l];
    std::copy(s.x.begin(), s.x.end(), s.h.begin());
    norm_rows(s.h.data(), lw.attn_norm, lw.attn_norm_b, n);
    if (llama) {
      kernels::matmul_shared(k, {{&lw.attn_q, s.q.data()}, {&lw.attn_k, s.k.data()}, {&lw.attn_v, s.v.data()}},
                             s.h.data(), n, s.act);
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t h = 0; h < c_.n_head; ++h) {
          ops::rope(s.q.data() + t * E + h * hd, hd, c_.n_rot, pos0 + t, c_.rope_freq_base, c_.rope_freq_scale, false);
        }
        for (int64_t h = 0; h < c_.n_head_kv; ++h) {
          ops::rope(s.k.data() + t * E_kv + h * hd, hd, c_.n_rot, pos0 + t, c_.rope_freq_base, c_.rope_freq_scale, false);
        }
      }
    } else {
      s.qkv.resize(n * 3 * E);
      kernels::matmul(k, lw.attn_qkv, s.h.data(), n, s.qkv.data(), s.act);
      add_bias(s.qkv.data(), lw.attn_qkv_b, n, 3 * E);
      for (int64_t t = 0; t < n; ++t) {
        const float* row = s.qkv.data() + t * 3 * E;
        std::copy(row, row + E, s.q.data() + t * E);
        std::copy(row + E, row + 2 * E, s.k.data() + t * E_kv);
        std::copy(row + 2 * E, row + 3 * E, s.v.data() + t * E_kv);
      }
    }
    for (int64_t t = 0; t < n; ++t) {  // append this batch's K and V to the cache
      void* kd = cache.k_row(l, pos0 + t);
      void* vd = cache.v_row(l, pos0 + t);
      if (cache.is_f16()) {
        for (int64_t d = 0; d < E_kv; ++d) {
          static_cast<uint16_t*>(kd)[d] = fp32_to_fp16(s.k[t * E_kv + d]);
          static_cast<uint16_t*>(vd)[d] = fp32_to_fp16(s.v[t * E_kv + d]);
        }
      } else {
        std::memcpy(kd, s.k.data() + t * E_kv, E_kv * sizeof(float));
        std::memcpy(vd, s.v.data() + t * E_kv, E_kv * sizeof(float));
      }
    }
    attention(k.vec, cache, l, n, pos0);
    kernels::matmul(k, lw.attn_out, s.attn.data(), n, s.proj.data(), s.act);
    add_bias(s.proj.data(), lw.attn_out_b, n, E);
    ops::add(s.x.data(), s.proj.data(), n * E);

    std::copy(s.x.begin(), s.x.end(), s.h.begin());
    norm_rows(s.h.data(), lw.ffn_norm, lw.ffn_norm_b, n);
    if (llama) {
      kernels::matmul_shared(k, {{&lw.ffn_up, s.up.data()}, {&lw.ffn_gate, s.gate.data()}}, s.h.data(), n, s.act);
      ops::swiglu(s.gate.data(), s.up.data(), n * F, F);
      kernels::matmul(k, lw.ffn_down, s.gate.data(), n, s.proj.data(), s.act);
    } else {
      kernels::matmul(k, lw.ffn_up, s.h.data(), n, s.up.data(), s.act);
      add_bias(s.up.data(), lw.ffn_up_b, n, F);
      ops::gelu(s.up.data(), n * F);
      kernels::matmul(k, lw.ffn_down, s.up.data(), n, s.proj.data(), s.act);
      add_bias(s.proj.data(), lw.ffn_down_b, n, E);
    }
    ops::add(s.x.data(), s.proj.data(), n * E);
  }

  const int64_t first = all_logits ? 0 : n - 1;
  const int64_t rows = n - first;
  float* last = s.x.data() + first * E;
  norm_rows(last, w_.output_norm, w_.output_norm_b, rows);
  logits.resize(rows * c_.n_vocab);
  kernels::matmul(k, w_.output, last, rows, logits.data(), s.act);
}

}  // namespace qinfer
