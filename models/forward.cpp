// The one forward pass: every architecture's blocks, chosen by its ArchSpec and by which
// optional tensors the file has (biases, q/k norms, experts).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/float_conv.hpp"
#include "kernels/ops.hpp"
#include "kernels/threads.hpp"
#include "models/model.hpp"
#include "qinfer/error.hpp"

namespace qinfer {

struct ForwardScratch {
  std::vector<float> x;        // (n, n_embd) residual stream
  std::vector<float> h;        // (n, n_embd) normalised input of a block
  std::vector<float> q;        // (n, n_embd_q)
  std::vector<float> k;        // (n, n_embd_k)
  std::vector<float> v;        // (n, n_embd_v)
  std::vector<float> qkv;      // (n, n_embd_q + n_embd_k + n_embd_v) fused projection
  std::vector<float> attn;     // (n, n_embd_attn) attention output
  std::vector<float> proj;     // (n, n_embd)
  std::vector<float> gate;     // (n, n_ff)
  std::vector<float> up;       // (n, n_ff), or (n, 2 n_ff) fused gate and up
  std::vector<float> rope;     // (n, n_rot) cos and sin of each token's position
  kernels::MatmulScratch act;  // buffers of the matmuls
  // Mixture of experts.
  std::vector<float> router;                            // (n, n_expert) probabilities
  std::vector<int32_t> chosen;                          // (n, n_expert_used) expert ids
  std::vector<float> chosen_w;                          // (n, n_expert_used) their weights
  std::vector<float> expert_out;                        // (n, n_expert_used, n_embd)
  std::vector<float> sub_x, sub_gate, sub_up, sub_out;  // rows routed to one expert
  kernels::AttentionBuffers attention;                  // the attention's threads
  std::vector<int32_t> expert_order;                    // (n_expert) router ranking
  std::vector<int64_t> expert_slots;                    // rows routed to one expert
  // Of a batch: each token's position and cache, a learned-position row.
  std::vector<int64_t> pos;
  std::vector<KvCache*> cache_of;
  std::vector<float> pos_row;
};

Forward::Forward(const ModelConfig& config, const ModelWeights& weights)
    : c_(config), w_(weights), s_(std::make_unique<ForwardScratch>()) {
  if (c_.uses_rope() && c_.rope_scaling == RopeScaling::kYarn) {
    ops::rope_corr_dims(c_.n_rot, c_.n_ctx_orig, c_.rope_freq_base, c_.yarn_beta_fast,
                        c_.yarn_beta_slow, rope_corr_);
  }
}
Forward::~Forward() = default;

namespace {

// The element-wise steps of a batch, token by token split over the threads: each token's
// result is the same for any thread count. Below a few tokens the fork costs more than it saves.
constexpr int64_t kParallelTokens = 8;
template <typename Step>
void each_token(int64_t n, const Step& step) {
  if (n < kParallelTokens) {
    for (int64_t t = 0; t < n; ++t) step(t);
    return;
  }
  kernels::parallel([&](kernels::Team& team) {
    const auto [t0, t1] = team.share(n);
    for (int64_t t = t0; t < t1; ++t) step(t);
  });
}

void add_bias(const kernels::KernelTable& k, float* y, const kernels::MatrixView& b,
              int64_t n_tokens, int64_t n) {
  if (b.data == nullptr) return;
  each_token(n_tokens, [&](int64_t t) { ops::add(k, y + t * n, f32(b), n); });
}

void mul(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= y[i];
}

// Rows [first, first + count) of a matrix: one expert's slice of a 3-D expert tensor.
kernels::MatrixView rows_of(const kernels::MatrixView& m, int64_t first, int64_t count) {
  return {m.type, m.data + first * m.row_bytes, count, m.n_cols, m.row_bytes};
}

}  // namespace

void Forward::attention(const kernels::KernelTable& kt, KvCache& cache, int64_t layer,
                        int64_t t_first, int64_t n, int64_t pos0) {
  ForwardScratch& s = *s_;
  kernels::AttentionArgs a;
  a.q = s.q.data() + t_first * c_.n_embd_q();
  a.q_token_stride = c_.n_embd_q();
  a.out = s.attn.data() + t_first * c_.n_embd_attn();
  a.out_token_stride = c_.n_embd_attn();
  a.n_head = c_.n_head;
  a.n_head_kv = c_.n_head_kv;
  a.head_dim_k = c_.head_dim_k;
  a.head_dim_v = c_.head_dim_v;
  a.pos0 = pos0;
  a.window = c_.layer_uses_swa(layer) ? c_.sliding_window : 0;
  a.scale = c_.arch->prescale_q ? 1.0f : c_.query_scale;
  a.softcap = c_.attn_softcap;
  a.k_type = cache.k_type();
  a.v_type = cache.v_type();
  a.k_tiled = cache.k_tiled();
  a.k_base = cache.keys(layer);
  a.v_base = cache.values(layer);
  a.k_pos_stride = cache.k_head_bytes();
  a.v_pos_stride = cache.v_head_bytes();
  a.k_head_stride = cache.k_head_stride();
  a.v_head_stride = cache.v_head_stride();
  kernels::attention_all(kt, a, n, s.attention);
}

void Forward::feed_forward(const kernels::KernelTable& k, const LayerWeights& lw, int64_t n) {
  ForwardScratch& s = *s_;
  const int64_t F = c_.n_ff;
  switch (c_.arch->ffn) {
    case FfnKind::kGelu:  // gelu(up · h + b), then down
      see(lw.ffn_up, s.h.data(), n);
      kernels::matmul(k, lw.ffn_up, s.h.data(), n, s.up.data(), s.act);
      add_bias(k, s.up.data(), lw.ffn_up_b, n, F);
      each_token(n, [&](int64_t t) { ops::gelu(k, s.up.data() + t * F, F); });
      see(lw.ffn_down, s.up.data(), n);
      kernels::matmul(k, lw.ffn_down, s.up.data(), n, s.proj.data(), s.act);
      break;
    case FfnKind::kSwiGlu:
    case FfnKind::kGeGlu:
      if (c_.arch->fused_gate_up) {  // up · h = [gate | up] per token
        see(lw.ffn_up, s.h.data(), n);
        kernels::matmul(k, lw.ffn_up, s.h.data(), n, s.qkv.data(), s.act);
        each_token(n, [&](int64_t t) {
          const float* row = s.qkv.data() + t * 2 * F;
          std::copy(row, row + F, s.gate.data() + t * F);
          std::copy(row + F, row + 2 * F, s.up.data() + t * F);
        });
      } else {
        see(lw.ffn_up, s.h.data(), n);
        see(lw.ffn_gate, s.h.data(), n);
        kernels::matmul_shared(k, {{&lw.ffn_up, s.up.data()}, {&lw.ffn_gate, s.gate.data()}},
                               s.h.data(), n, s.act);
      }
      each_token(n, [&](int64_t t) {
        float* gate = s.gate.data() + t * F;
        const float* up = s.up.data() + t * F;
        if (c_.arch->ffn == FfnKind::kSwiGlu) {
          ops::swiglu(k, gate, up, F, F);
        } else {
          ops::gelu(k, gate, F);
          mul(gate, up, F);
        }
      });
      see(lw.ffn_down, s.gate.data(), n);
      kernels::matmul(k, lw.ffn_down, s.gate.data(), n, s.proj.data(), s.act);
      break;
  }
  add_bias(k, s.proj.data(), lw.ffn_down_b, n, c_.n_embd);
}

// Mixture of experts (Mixtral): p = softmax(router · h); the top n_expert_used experts by p,
// weighted by p renormalised over them; out = sum_e w_e down_e(silu(gate_e h) * up_e h).
// Tokens are grouped by expert, so each chosen expert's matrices run once per batch.
void Forward::moe(const kernels::KernelTable& k, const LayerWeights& lw, int64_t n) {
  ForwardScratch& s = *s_;
  const int64_t E = c_.n_embd, F = c_.n_ff, n_exp = c_.n_expert, used = c_.n_expert_used;
  s.router.resize(n * n_exp);
  s.chosen.resize(n * used);
  s.chosen_w.resize(n * used);
  s.expert_out.resize(n * used * E);
  see(lw.ffn_router, s.h.data(), n);
  kernels::matmul(k, lw.ffn_router, s.h.data(), n, s.router.data(), s.act);
  std::vector<int32_t>& order = s.expert_order;
  order.resize(n_exp);
  for (int64_t t = 0; t < n; ++t) {
    float* p = s.router.data() + t * n_exp;
    ops::softmax(k, p, n_exp);
    for (int32_t e = 0; e < n_exp; ++e) order[e] = e;
    std::partial_sort(order.begin(), order.begin() + used, order.end(),
                      [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    float sum = 0.0f;
    for (int64_t j = 0; j < used; ++j) sum += p[order[j]];
    for (int64_t j = 0; j < used; ++j) {
      s.chosen[t * used + j] = order[j];
      s.chosen_w[t * used + j] = p[order[j]] / sum;
    }
  }
  std::vector<int64_t>& slots = s.expert_slots;  // (token * used + j) routed to expert e
  for (int32_t e = 0; e < n_exp; ++e) {
    slots.clear();
    for (int64_t i = 0; i < n * used; ++i) {
      if (s.chosen[i] == e) slots.push_back(i);
    }
    if (slots.empty()) continue;
    const auto m = static_cast<int64_t>(slots.size());
    s.sub_x.resize(m * E);
    s.sub_gate.resize(m * F);
    s.sub_up.resize(m * F);
    s.sub_out.resize(m * E);
    for (int64_t r = 0; r < m; ++r) {
      const int64_t t = slots[r] / used;
      std::copy(s.h.data() + t * E, s.h.data() + (t + 1) * E, s.sub_x.data() + r * E);
    }
    const kernels::MatrixView gate = rows_of(lw.ffn_gate_exps, e * F, F);
    const kernels::MatrixView up = rows_of(lw.ffn_up_exps, e * F, F);
    const kernels::MatrixView down = rows_of(lw.ffn_down_exps, e * E, E);
    kernels::matmul_shared(k, {{&up, s.sub_up.data()}, {&gate, s.sub_gate.data()}}, s.sub_x.data(),
                           m, s.act, kernels::MatmulPath::kDots);
    ops::swiglu(k, s.sub_gate.data(), s.sub_up.data(), m * F, F);
    kernels::matmul(k, down, s.sub_gate.data(), m, s.sub_out.data(), s.act,
                    kernels::MatmulPath::kDots);
    for (int64_t r = 0; r < m; ++r) {
      const float w = s.chosen_w[slots[r]];
      float* dst = s.expert_out.data() + slots[r] * E;
      for (int64_t d = 0; d < E; ++d) dst[d] = s.sub_out[r * E + d] * w;
    }
  }
  // Sum each token's experts in the order they were chosen (the largest weight first).
  for (int64_t t = 0; t < n; ++t) {
    float* dst = s.proj.data() + t * E;
    std::copy(s.expert_out.data() + t * used * E, s.expert_out.data() + (t * used + 1) * E, dst);
    for (int64_t j = 1; j < used; ++j)
      ops::add(k, dst, s.expert_out.data() + (t * used + j) * E, E);
  }
}

void Forward::run(const kernels::KernelTable& k, const int32_t* tokens, int64_t n, int64_t pos0,
                  KvCache& cache, ForwardOutput output, std::vector<float>& out,
                  const std::atomic<bool>* abort) {
  const ForwardSegment one[1] = {{&cache, pos0, n}};
  run_batch(k, tokens, one, output, out, abort);
}

void Forward::run_batch(const kernels::KernelTable& k, const int32_t* tokens,
                        std::span<const ForwardSegment> segments, ForwardOutput output,
                        std::vector<float>& logits, const std::atomic<bool>* abort) {
  const ArchSpec& a = *c_.arch;
  int64_t n = 0;
  for (const ForwardSegment& seg : segments) {
    if (seg.n <= 0) throw Error(ErrorCode::kInvalidArgument, "no tokens to evaluate");
    if (seg.pos0 < 0 || seg.pos0 + seg.n > seg.cache->n_ctx()) {
      throw Error(ErrorCode::kContextOverflow,
                  "context overflow: " + std::to_string(seg.pos0 + seg.n) +
                      " tokens do not fit in a context of " + std::to_string(seg.cache->n_ctx()));
    }
    if (a.positions == PositionKind::kLearned && seg.pos0 + seg.n > c_.n_ctx_train) {
      throw Error(ErrorCode::kContextOverflow,
                  "position " + std::to_string(seg.pos0 + seg.n - 1) + " is past " + c_.arch_name +
                      "'s learned positions (" + std::to_string(c_.n_ctx_train) + ")");
    }
    n += seg.n;
  }
  if (n <= 0) throw Error(ErrorCode::kInvalidArgument, "no tokens to evaluate");
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c_.n_vocab) {
      throw Error(ErrorCode::kInvalidArgument,
                  "token id " + std::to_string(tokens[t]) + " is not in the vocabulary");
    }
  }
  // Each token's position and cache.
  ForwardScratch& s = *s_;
  std::vector<int64_t>& pos = s.pos;
  std::vector<KvCache*>& cache_of = s.cache_of;
  pos.resize(static_cast<size_t>(n));
  cache_of.resize(static_cast<size_t>(n));
  for (int64_t t = 0; const ForwardSegment& seg : segments) {
    seg.cache->reserve(seg.pos0 + seg.n);
    for (int64_t i = 0; i < seg.n; ++i, ++t) pos[t] = seg.pos0 + i, cache_of[t] = seg.cache;
  }
  const int64_t E = c_.n_embd, F = c_.n_ff;
  const int64_t n_q = c_.n_embd_q(), n_k = c_.n_embd_k(), n_v = c_.n_embd_v();
  s.x.resize(n * E);
  s.h.resize(n * E);
  s.q.resize(n * n_q);
  s.k.resize(n * n_k);
  s.v.resize(n * n_v);
  s.qkv.resize(n * std::max(n_q + n_k + n_v, 2 * F));
  s.attn.resize(n * c_.n_embd_attn());
  s.proj.resize(n * E);
  s.up.resize(n * F);
  s.gate.resize(n * F);

  std::vector<float>& pos_row = s.pos_row;
  pos_row.resize(E);
  for (int64_t t = 0; t < n; ++t) {
    float* x = s.x.data() + t * E;
    kernels::get_row(k, w_.token_embd, tokens[t], x);
    if (c_.embd_scale != 1.0f) {
      for (int64_t i = 0; i < E; ++i) x[i] *= c_.embd_scale;
    }
    if (a.positions == PositionKind::kLearned) {
      kernels::get_row(k, w_.position_embd, pos[t], pos_row.data());
      ops::add(k, x, pos_row.data(), E);
    }
  }
  if (c_.uses_rope()) {  // one table of angles per token, shared by every layer and head
    ops::RopeParams rp;
    rp.n_rot = c_.n_rot;
    rp.neox = a.positions == PositionKind::kRopeNeox;
    rp.freq_base = c_.rope_freq_base;
    rp.freq_scale = c_.rope_freq_scale;
    rp.ext_factor = c_.yarn_ext_factor;
    rp.attn_factor = c_.rope_attn_factor;
    rp.corr_dims[0] = rope_corr_[0];
    rp.corr_dims[1] = rope_corr_[1];
    rp.freq_factors = f32(w_.rope_freqs);
    s.rope.resize(n * c_.n_rot);
    for (int64_t t = 0; t < n; ++t) {
      if (w_.rope_long.data !=
          nullptr) {  // phi3's LongRoPE: long factors past the original context
        rp.freq_factors = f32(cache_of[t]->n_ctx() > c_.n_ctx_orig ? w_.rope_long : w_.rope_short);
      }
      ops::rope_angles(rp, pos[t], s.rope.data() + t * c_.n_rot);
    }
  }

  auto norm_rows = [&](float* dst, const kernels::MatrixView& w, const kernels::MatrixView& b,
                       int64_t rows, int64_t width) {
    each_token(rows, [&](int64_t t) {
      if (a.norm == NormKind::kRms) {
        ops::rmsnorm(k, dst + t * width, f32(w), width, c_.norm_eps);
      } else {
        ops::layernorm(k, dst + t * width, f32(w), f32(b), width, c_.norm_eps);
      }
    });
  };

  for (int64_t l = 0; l < c_.n_layer; ++l) {
    if (abort != nullptr && abort->load(std::memory_order_relaxed)) {
      throw Error(ErrorCode::kCancelled, "cancelled");
    }
    const LayerWeights& lw = w_.layers[l];
    std::copy(s.x.begin(), s.x.end(), s.h.begin());
    norm_rows(s.h.data(), lw.attn_norm, lw.attn_norm_b, n, E);
    if (lw.attn_qkv.data != nullptr) {  // fused projection: rows [Q | K | V]
      see(lw.attn_qkv, s.h.data(), n);
      kernels::matmul(k, lw.attn_qkv, s.h.data(), n, s.qkv.data(), s.act);
      add_bias(k, s.qkv.data(), lw.attn_qkv_b, n, n_q + n_k + n_v);
      each_token(n, [&](int64_t t) {
        const float* row = s.qkv.data() + t * (n_q + n_k + n_v);
        std::copy(row, row + n_q, s.q.data() + t * n_q);
        std::copy(row + n_q, row + n_q + n_k, s.k.data() + t * n_k);
        std::copy(row + n_q + n_k, row + n_q + n_k + n_v, s.v.data() + t * n_v);
      });
    } else {
      for (const kernels::MatrixView* w : {&lw.attn_q, &lw.attn_k, &lw.attn_v})
        see(*w, s.h.data(), n);
      kernels::matmul_shared(
          k, {{&lw.attn_q, s.q.data()}, {&lw.attn_k, s.k.data()}, {&lw.attn_v, s.v.data()}},
          s.h.data(), n, s.act);
      add_bias(k, s.q.data(), lw.attn_q_b, n, n_q);
      add_bias(k, s.k.data(), lw.attn_k_b, n, n_k);
      add_bias(k, s.v.data(), lw.attn_v_b, n, n_v);
    }
    if (lw.attn_q_norm.data != nullptr)
      norm_rows(s.q.data(), lw.attn_q_norm, {}, n * c_.n_head, c_.head_dim_k);
    if (lw.attn_k_norm.data != nullptr)
      norm_rows(s.k.data(), lw.attn_k_norm, {}, n * c_.n_head_kv, c_.head_dim_k);
    if (c_.uses_rope()) {
      const bool neox = a.positions == PositionKind::kRopeNeox;
      each_token(n, [&](int64_t t) {
        const float* cs = s.rope.data() + t * c_.n_rot;
        ops::rope_apply(k, s.q.data() + t * n_q, c_.n_head, c_.head_dim_k, cs, c_.n_rot, neox);
        ops::rope_apply(k, s.k.data() + t * n_k, c_.n_head_kv, c_.head_dim_k, cs, c_.n_rot, neox);
      });
    }
    if (a.prescale_q) {
      for (int64_t i = 0; i < n * n_q; ++i) s.q[i] *= c_.query_scale;
    }
    each_token(n, [&](int64_t t) {
      cache_of[t]->append(k, l, pos[t], s.k.data() + t * n_k, s.v.data() + t * n_v);
    });
    for (int64_t t = 0; const ForwardSegment& seg : segments) {
      attention(k, *seg.cache, l, t, seg.n, seg.pos0);
      t += seg.n;
    }
    see(lw.attn_out, s.attn.data(), n);
    kernels::matmul(k, lw.attn_out, s.attn.data(), n, s.proj.data(), s.act);
    add_bias(k, s.proj.data(), lw.attn_out_b, n, E);
    if (lw.attn_post_norm.data != nullptr) norm_rows(s.proj.data(), lw.attn_post_norm, {}, n, E);
    each_token(n, [&](int64_t t) { ops::add(k, s.x.data() + t * E, s.proj.data() + t * E, E); });

    std::copy(s.x.begin(), s.x.end(), s.h.begin());
    norm_rows(s.h.data(), lw.ffn_norm, lw.ffn_norm_b, n, E);
    if (c_.n_expert > 0) {
      moe(k, lw, n);
    } else {
      feed_forward(k, lw, n);
    }
    if (lw.ffn_post_norm.data != nullptr) norm_rows(s.proj.data(), lw.ffn_post_norm, {}, n, E);
    each_token(n, [&](int64_t t) { ops::add(k, s.x.data() + t * E, s.proj.data() + t * E, E); });
  }

  // The rows to finish: each segment's last token, or every token.
  float* last = s.x.data();
  int64_t rows = n;
  if (output == ForwardOutput::kLastLogits) {
    rows = static_cast<int64_t>(segments.size());
    last = s.h.data();
    for (int64_t t = 0, r = 0; const ForwardSegment& seg : segments) {
      t += seg.n;
      std::copy(s.x.data() + (t - 1) * E, s.x.data() + t * E, last + r++ * E);
    }
  }
  norm_rows(last, w_.output_norm, w_.output_norm_b, rows, E);
  if (output == ForwardOutput::kHidden) {
    logits.assign(last, last + rows * E);
    return;
  }
  logits.resize(rows * c_.n_vocab);
  see(w_.output, last, rows);
  kernels::matmul(k, w_.output, last, rows, logits.data(), s.act);
  if (c_.final_softcap > 0.0f) {
    const float cap = c_.final_softcap;
    for (float& v : logits) v = cap * std::tanh(v / cap);
  }
}

}  // namespace qinfer
