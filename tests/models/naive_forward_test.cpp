// A naive, obviously-correct forward pass in double precision (plain loops over dequantized
// weights, attention recomputed from scratch, no cache, no quantized activations) against
// the optimised path, on the vendored llama and gpt2 models. Also: logits identical for 1
// and 2 threads, and prompt-at-once equal to token-by-token.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "engine/engine.hpp"
#include "kernels/kernels.hpp"
#include "kernels/pack.hpp"
#include "qinfer/error.hpp"
#include "tests/test_util.hpp"

namespace qinfer {
namespace {

using Mat = std::vector<double>;  // row-major (rows, cols)

struct Dense {
  int64_t rows = 0, cols = 0;
  Mat w;
};

Dense dense(const kernels::MatrixView& m) {
  Dense d{m.n_rows, m.n_cols, Mat(m.n_rows * m.n_cols)};
  std::vector<float> row(m.n_cols);
  for (int64_t r = 0; r < m.n_rows; ++r) {
    // (get_row also reads a matrix the loader interleaved for the gemv)
    kernels::get_row(kernels::table(kernels::Isa::kScalar), m, r, row.data());
    for (int64_t c = 0; c < m.n_cols; ++c) d.w[r * m.n_cols + c] = row[c];
  }
  return d;
}

std::vector<double> matvec(const Dense& d, const std::vector<double>& x,
                           const float* bias = nullptr) {
  std::vector<double> y(d.rows, 0.0);
  for (int64_t r = 0; r < d.rows; ++r) {
    for (int64_t c = 0; c < d.cols; ++c) y[r] += d.w[r * d.cols + c] * x[c];
    if (bias != nullptr) y[r] += bias[r];
  }
  return y;
}

std::vector<double> norm(const std::vector<double>& x, const float* w, const float* b, double eps,
                         bool rms) {
  const double n = static_cast<double>(x.size());
  double mean = 0;
  if (!rms)
    for (double v : x) mean += v / n;
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean) / n;
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + (b ? b[i] : 0.0);
  return y;
}

std::vector<double> slice(const std::vector<double>& v, int64_t from, int64_t count) {
  return {v.begin() + from, v.begin() + from + count};
}

double gelu(double u) {
  return 0.5 * u * (1.0 + std::tanh(0.7978845608028654 * (u + 0.044715 * u * u * u)));
}
double silu(double g) { return g / (1.0 + std::exp(-g)); }

// Logits after the last of `tokens`, computed the slow way from the architecture's
// definition (every feature the shared models exercise; no YaRN).
std::vector<double> naive_logits(const engine::Model& m, const std::vector<TokenId>& tokens) {
  const ModelConfig& c = m.config;
  const ArchSpec& a = *c.arch;
  const ModelWeights& w = m.weights;
  const bool rms = a.norm == NormKind::kRms;
  const int64_t E = c.n_embd, hk = c.head_dim_k, hv = c.head_dim_v,
                T = static_cast<int64_t>(tokens.size());
  const int64_t nq = c.n_embd_q(), nk = c.n_embd_k(), nv = c.n_embd_v(), F = c.n_ff;
  const Dense embd = dense(w.token_embd);
  std::vector<std::vector<double>> x(T, std::vector<double>(E));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < E; ++i)
      x[t][i] = embd.w[tokens[t] * E + i] * (a.embd_scale_sqrt ? std::sqrt(double(E)) : 1.0);
    if (a.positions == PositionKind::kLearned) {
      const Dense pos = dense(w.position_embd);
      for (int64_t i = 0; i < E; ++i) x[t][i] += pos.w[t * E + i];
    }
  }
  const bool neox = a.positions == PositionKind::kRopeNeox;
  const float* factors = f32(w.rope_freqs);
  auto rope = [&](std::vector<double>& v, int64_t head, int64_t pos) {
    if (a.positions == PositionKind::kLearned) return;
    for (int64_t i = 0; i < c.n_rot / 2; ++i) {
      double theta = pos * std::pow(static_cast<double>(c.rope_freq_base), -2.0 * i / c.n_rot) *
                     c.rope_freq_scale;
      if (factors != nullptr) theta /= factors[i];
      double& p0 = v[head * hk + (neox ? i : 2 * i)];
      double& p1 = v[head * hk + (neox ? i + c.n_rot / 2 : 2 * i + 1)];
      const double a0 = p0, b0 = p1;
      p0 = a0 * std::cos(theta) - b0 * std::sin(theta);
      p1 = a0 * std::sin(theta) + b0 * std::cos(theta);
    }
  };
  auto bias = [](const kernels::MatrixView& b) { return f32(b); };
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights& lw = w.layers[l];
    std::vector<std::vector<double>> q(T), k(T), v(T);
    for (int64_t t = 0; t < T; ++t) {
      const auto h = norm(x[t], f32(lw.attn_norm), f32(lw.attn_norm_b), c.norm_eps, rms);
      if (lw.attn_qkv.data != nullptr) {
        const auto qkv = matvec(dense(lw.attn_qkv), h, bias(lw.attn_qkv_b));
        q[t] = slice(qkv, 0, nq);
        k[t] = slice(qkv, nq, nk);
        v[t] = slice(qkv, nq + nk, nv);
      } else {
        q[t] = matvec(dense(lw.attn_q), h, bias(lw.attn_q_b));
        k[t] = matvec(dense(lw.attn_k), h, bias(lw.attn_k_b));
        v[t] = matvec(dense(lw.attn_v), h, bias(lw.attn_v_b));
      }
      for (int64_t hh = 0; hh < c.n_head; ++hh) rope(q[t], hh, t);
      for (int64_t hh = 0; hh < c.n_head_kv; ++hh) rope(k[t], hh, t);
    }
    const int64_t window = c.layer_uses_swa(l) ? c.sliding_window : 0;
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> att(c.n_embd_attn(), 0.0);
      for (int64_t hh = 0; hh < c.n_head; ++hh) {
        const int64_t g = hh / (c.n_head / c.n_head_kv);
        const int64_t first = window > 0 ? std::max<int64_t>(0, t - window + 1) : 0;
        std::vector<double> s(t + 1, 0.0);
        double mx = -1e300, sum = 0;
        for (int64_t u = first; u <= t; ++u) {
          for (int64_t d = 0; d < hk; ++d) s[u] += q[t][hh * hk + d] * k[u][g * hk + d];
          s[u] *= c.query_scale;
          if (c.attn_softcap > 0) s[u] = c.attn_softcap * std::tanh(s[u] / c.attn_softcap);
          mx = std::max(mx, s[u]);
        }
        for (int64_t u = first; u <= t; ++u) sum += s[u] = std::exp(s[u] - mx);
        for (int64_t u = first; u <= t; ++u) {
          for (int64_t d = 0; d < hv; ++d) att[hh * hv + d] += s[u] / sum * v[u][g * hv + d];
        }
      }
      auto o = matvec(dense(lw.attn_out), att, bias(lw.attn_out_b));
      if (lw.attn_post_norm.data != nullptr)
        o = norm(o, f32(lw.attn_post_norm), nullptr, c.norm_eps, true);
      for (int64_t i = 0; i < E; ++i) x[t][i] += o[i];
      const auto h = norm(x[t], f32(lw.ffn_norm), f32(lw.ffn_norm_b), c.norm_eps, rms);
      // One dense FFN of the architecture's kind.
      auto ffn = [&](const Dense& gate, const Dense& up, const Dense& down) {
        std::vector<double> u = matvec(up, h, bias(lw.ffn_up_b)), gt;
        if (a.ffn == FfnKind::kGelu) {
          for (double& e : u) e = gelu(e);
        } else {
          if (a.fused_gate_up) {
            gt = slice(u, 0, F);
            u = slice(u, F, F);
          } else {
            gt = matvec(gate, h);
          }
          for (int64_t i = 0; i < F; ++i)
            u[i] *= a.ffn == FfnKind::kSwiGlu ? silu(gt[i]) : gelu(gt[i]);
        }
        return matvec(down, u, bias(lw.ffn_down_b));
      };
      std::vector<double> out(E, 0.0);
      if (c.n_expert == 0) {
        out = ffn(lw.ffn_gate.data ? dense(lw.ffn_gate) : Dense{}, dense(lw.ffn_up),
                  dense(lw.ffn_down));
      } else {
        auto p = matvec(dense(lw.ffn_router), h);
        const double mx = *std::max_element(p.begin(), p.end());
        double z = 0;
        for (double& e : p) z += e = std::exp(e - mx);
        std::vector<int> order(c.n_expert);
        for (int e = 0; e < c.n_expert; ++e) order[e] = e;
        std::sort(order.begin(), order.end(), [&](int i, int j) { return p[i] > p[j]; });
        double chosen = 0;
        for (int j = 0; j < c.n_expert_used; ++j) chosen += p[order[j]];
        for (int j = 0; j < c.n_expert_used; ++j) {
          const int e = order[j];
          auto part = [&](const kernels::MatrixView& mv, int64_t rows) {
            return dense(
                {mv.type, mv.data + e * rows * mv.row_bytes, rows, mv.n_cols, mv.row_bytes});
          };
          const auto y =
              ffn(part(lw.ffn_gate_exps, F), part(lw.ffn_up_exps, F), part(lw.ffn_down_exps, E));
          for (int64_t i = 0; i < E; ++i) out[i] += p[e] / chosen * y[i];
        }
      }
      if (lw.ffn_post_norm.data != nullptr)
        out = norm(out, f32(lw.ffn_post_norm), nullptr, c.norm_eps, true);
      for (int64_t i = 0; i < E; ++i) x[t][i] += out[i];
    }
  }
  const auto h = norm(x[T - 1], f32(w.output_norm), f32(w.output_norm_b), c.norm_eps, rms);
  auto logits = matvec(dense(w.output), h);
  if (c.final_softcap > 0) {
    for (double& v : logits) v = c.final_softcap * std::tanh(v / c.final_softcap);
  }
  return logits;
}

void compare(const std::string& model_file, double tolerance) {
  const auto model = engine::Model::load(test::data_path("models/" + model_file));
  const auto tokens = model->tokenizer->encode("The old count said that", true);
  const auto want = naive_logits(*model, tokens);
  engine::Session s(model, {.n_ctx = 64, .cache_k = TensorType::F32, .cache_v = TensorType::F32});
  const auto got = s.eval(tokens);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  std::printf("%s: max |logit - naive| = %.3g\n", model_file.c_str(), worst);
  EXPECT_LT(worst, tolerance) << model_file;
  const auto best = [](const auto& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
  EXPECT_EQ(best(got), best(want)) << model_file;
}

// Float weights: only float32 rounding separates the two.
TEST(NaiveForward, Stories260KFloat) { compare("stories260K.gguf", 1e-4); }
// Quantized weights: the optimised path also quantizes activations to 8 bits.
TEST(NaiveForward, LlamaQ4_0) { compare("wp-llama-Q4_0.gguf", 0.1); }
TEST(NaiveForward, LlamaQ4_K) { compare("wp-llama-Q4_K_S.gguf", 0.1); }
TEST(NaiveForward, Gpt2Q4_0) { compare("wp-gpt2-Q4_0.gguf", 0.1); }

TEST(Forward, SameLogitsForOneAndTwoThreadsAndForBatchOrTokenByToken) {
  const auto model = engine::Model::load(test::data_path("models/wp-llama-Q4_K_S.gguf"));
  const auto tokens = model->tokenizer->encode("Prince Andrew looked at the", true);
  engine::Session one(model, {.n_ctx = 64, .n_threads = 1});
  engine::Session two(model, {.n_ctx = 64, .n_threads = 2});
  const auto a = one.eval(tokens);
  const auto b = two.eval(tokens);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  engine::Session step(model, {.n_ctx = 64, .n_threads = 2});
  std::vector<float> c;
  for (TokenId t : tokens) c = step.eval(std::vector<TokenId>{t});
  EXPECT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0);
}

// Column tiles (kernels/repack.hpp) on the small models: QINFER_TILE_COLS=512 tiles their
// 768-column FFN down projections (panels of 512 and 256 columns). The optimised path then
// still agrees with the naive one, gives the same bits for 1 and 2 threads and for a prompt at
// once or token by token, and stays within float summation error of the untiled model's logits
// (a prompt of 8 or more tokens through the GEMM too).
struct TileWidth {  // QINFER_TILE_COLS for the scope's loads
  explicit TileWidth(const char* width) { setenv("QINFER_TILE_COLS", width, 1); }
  ~TileWidth() { unsetenv("QINFER_TILE_COLS"); }
  TileWidth(const TileWidth&) = delete;
  TileWidth& operator=(const TileWidth&) = delete;
};

std::shared_ptr<const engine::Model> load_tiled(const std::string& file, const char* width) {
  const TileWidth scope(width);
  return engine::Model::load(test::data_path("models/" + file));
}

TEST(Forward, ColumnTilesKeepTheLogits) {
  for (const char* bad : {"100", "-512", "2k"})  // not 0 or a multiple of 512
    EXPECT_THROW(load_tiled("wp-llama-Q4_0.gguf", bad), Error) << bad;
  for (const char* file : {"wp-llama-Q4_K_S.gguf", "wp-llama-Q4_0.gguf", "wp-gpt2-Q4_0.gguf"}) {
    const auto tiled = load_tiled(file, "512");
    if (tiled->weights.layers[0].ffn_down.tile_cols != 512)
      GTEST_SKIP() << "the active kernels keep the rows whole";
    {
      const TileWidth scope("512");
      compare(file, 0.1);
    }
    const auto whole = load_tiled(file, "0");
    EXPECT_EQ(whole->weights.layers[0].ffn_down.tile_cols, 0);
    for (const char* text : {"Prince Andrew looked at the",
                             "Prince Andrew looked at the old count, who said nothing more"}) {
      const auto tokens = tiled->tokenizer->encode(text, true);
      engine::Session one(tiled, {.n_ctx = 64, .n_threads = 1});
      engine::Session two(tiled, {.n_ctx = 64, .n_threads = 2});
      const auto a = one.eval(tokens);
      const auto b = two.eval(tokens);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << file;
      engine::Session step(tiled, {.n_ctx = 64, .n_threads = 2});
      std::vector<float> c;
      for (TokenId t : tokens) c = step.eval(std::vector<TokenId>{t});
      if (tokens.size() < 8) {  // the rows path both ways (from 8 tokens a prompt is a GEMM)
        EXPECT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0) << file;
      }
      // The untiled model the same two ways (a prompt of 8 tokens or more is a GEMM at once,
      // not token by token).
      engine::Session untiled(whole, {.n_ctx = 64, .n_threads = 2});
      const auto d = untiled.eval(tokens);
      engine::Session untiled_step(whole, {.n_ctx = 64, .n_threads = 2});
      std::vector<float> e;
      for (TokenId t : tokens) e = untiled_step.eval(std::vector<TokenId>{t});
      double worst = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, double(std::fabs(a[i] - d[i])));
        worst = std::max(worst, double(std::fabs(c[i] - e[i])));
      }
      std::printf("%s, %zu tokens: max |tiled - untiled| = %.3g\n", file, tokens.size(), worst);
      EXPECT_LT(worst, 1e-3) << file << ", " << tokens.size() << " tokens";
    }
  }
}

// engine::token_weight_bytes against the file's own listing: every matrix but the token
// embedding (which is the output when tied), at the size of the layout a token reads it in: a
// packed copy's rows where the active kernels have a packed gemv, TQ2_0 rows for TQ1_0, the
// file's blocks otherwise, and the file's blocks alone with QINFER_NO_REPACK=1. The ranges of
// engine::token_weight_ranges hold the same bytes.
TEST(Model, TokenWeightBytesCountTheLayoutATokenReads) {
  for (const char* file :
       {"wp-llama-Q4_0.gguf", "wp-llama-IQ1_S.gguf", "wp-llama-TQ1_0.gguf", "wp-gpt2-Q4_0.gguf",
        "stories260K.gguf", "arch/gemma2-tiny-Q4_K_M.gguf"}) {
    for (const bool repack : {true, false}) {
      if (!repack) setenv("QINFER_NO_REPACK", "1", 1);
      const auto model = engine::Model::load(test::data_path(std::string("models/") + file));
      unsetenv("QINFER_NO_REPACK");
      bool tied = true;
      for (const TensorInfo& t : model->file.tensors()) tied = tied && t.name != "output.weight";
      const kernels::KernelTable& k = kernels::active();
      uint64_t want = 0;
      for (const TensorInfo& t : model->file.tensors()) {
        if (t.n_dims != 2 || t.name == "position_embd.weight") continue;
        if (t.name == "token_embd.weight" && !tied) continue;
        const int64_t cols = t.ne[0], rows = t.ne[1];
        uint64_t bytes = t.size_bytes;
        if (repack && t.name != "token_embd.weight") {
          if (t.type == TensorType::TQ1_0) {
            bytes = rows * row_size_bytes(TensorType::TQ2_0, cols);
          } else if (k.types[static_cast<uint32_t>(t.type)].vec_dot_packed != nullptr &&
                     kernels::can_pack(t.type, cols)) {
            bytes = rows * kernels::packed_row_bytes(t.type, cols);
          }
        }
        want += bytes;
      }
      EXPECT_EQ(engine::token_weight_bytes(*model), want) << file << (repack ? "" : " no repack");
      // The ranges qinfer-bench --ceiling streams are those matrices' memory (no experts here).
      uint64_t range_bytes = 0;
      for (const std::span<const uint8_t> r : engine::token_weight_ranges(*model))
        range_bytes += r.size();
      EXPECT_EQ(range_bytes, want) << file << (repack ? "" : " no repack");
    }
  }
}

// A matrix the loader copied (interleaved, packed, re-coded as TQ2_0, or copied as it is) is
// read from its copy only, prompts included, so the file's pages under it leave the process:
// the model sits in memory once. Checked page by page in /proc/self/pagemap; the bytes the
// pages held still read the same (faulted back in from the file).
TEST(Model, CopiedMatricesReleaseTheirFilePages) {
  for (const char* file : {"wp-llama-Q4_0.gguf", "wp-llama-IQ1_S.gguf", "wp-llama-TQ1_0.gguf"}) {
    const std::string path = test::data_path(std::string("models/") + file);
    const auto model = engine::Model::load(path);
    ASSERT_FALSE(model->repacked.empty()) << file;
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    std::vector<const TensorInfo*> checked;
    for (const engine::Model::Repacked& r : model->repacked) {
      const TensorInfo* t = model->file.find_tensor(r.tensor);
      ASSERT_NE(t, nullptr) << r.tensor;
      const auto at = reinterpret_cast<uintptr_t>(t->data);
      if ((at + t->size_bytes) / page <= (at + page - 1) / page) continue;  // no whole page
      const int64_t present = test::resident_pages(t->data, t->size_bytes);
      if (present < 0) GTEST_SKIP() << "no /proc/self/pagemap";
      EXPECT_EQ(present, 0) << file << " " << r.tensor;
      checked.push_back(t);
    }
    EXPECT_FALSE(checked.empty()) << file;
    const std::vector<uint8_t> bytes = test::read_bytes(path);
    for (const TensorInfo* t : checked) {
      const size_t offset = model->file.data_offset(t->shard) + t->offset;
      ASSERT_LE(offset + t->size_bytes, bytes.size());
      EXPECT_EQ(std::memcmp(t->data, bytes.data() + offset, t->size_bytes), 0) << t->name;
    }
  }
}

// Generation past one chunk of keys (kernels::kAttentionChunk) on more threads than half the
// units of KV heads (stories260K's 4 on 3 threads) splits each head's keys over the threads
// (attention_all): the logits keep the bits of one thread.
TEST(Forward, SameLogitsWhenGenerationSplitsTheKeys) {
  const auto model = engine::Model::load(test::data_path("models/stories260K.gguf"));
  std::vector<TokenId> prompt;
  while (prompt.size() < kernels::kAttentionChunk + 100) {
    for (TokenId t : model->tokenizer->encode("Once upon a time there was a little girl.", false))
      prompt.push_back(t);
  }
  engine::Session one(model, {.n_ctx = 1024, .n_threads = 1});
  engine::Session three(model, {.n_ctx = 1024, .n_threads = 3});
  one.eval(prompt);
  three.eval(prompt);
  for (TokenId t : {TokenId{10}, TokenId{200}, TokenId{33}}) {
    const auto a = one.eval(std::vector<TokenId>{t});
    const auto b = three.eval(std::vector<TokenId>{t});
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "token " << t;
  }
}

// Several sessions in one pass (the server's continuous batching) give each session the logits
// it gets alone, up to the matmul path a batch's size picks (the kernels agree within their
// tolerance, not bit for bit): prompts of different lengths at different positions, then
// decoding steps of one token each, on a RoPE model and a learned-position one.
constexpr double kBatchTolerance = 0.05;  // measured: up to 0.013 (gpt2 Q4_0)
TEST(Forward, BatchOfSessionsMatchesEachAlone) {
  for (const char* file : {"wp-llama-Q4_K_S.gguf", "wp-gpt2-Q4_0.gguf"}) {
    const auto model = engine::Model::load(test::data_path(std::string("models/") + file));
    const Tokenizer& tok = *model->tokenizer;
    const std::vector<std::vector<TokenId>> prompts = {
        tok.encode("Prince Andrew looked at the", true), tok.encode("The old count", true),
        tok.encode("Natasha", true)};
    std::vector<std::unique_ptr<engine::Session>> alone, batched;
    for (size_t i = 0; i < prompts.size(); ++i) {
      alone.push_back(
          std::make_unique<engine::Session>(model, engine::SessionOptions{.n_ctx = 64}));
      batched.push_back(
          std::make_unique<engine::Session>(model, engine::SessionOptions{.n_ctx = 64}));
    }
    // The third session starts later: it has a token already when the batch runs.
    batched[2]->eval(std::vector<TokenId>{prompts[2][0]});
    alone[2]->eval(std::vector<TokenId>{prompts[2][0]});
    std::vector<std::vector<TokenId>> step = {
        prompts[0], prompts[1], {prompts[2].begin() + 1, prompts[2].end()}};
    if (step[2].empty()) step[2] = {prompts[2][0]};
    std::vector<engine::Session*> sessions;
    for (auto& s : batched) sessions.push_back(s.get());
    for (int round = 0; round < 3; ++round) {
      engine::Session::eval_batch(sessions, step);
      for (size_t i = 0; i < step.size(); ++i) {
        const auto& want = alone[i]->eval(step[i]);
        const auto& got = batched[i]->logits();
        ASSERT_EQ(got.size(), want.size());
        double worst = 0;
        for (size_t v = 0; v < want.size(); ++v)
          worst = std::max(worst, static_cast<double>(std::fabs(got[v] - want[v])));
        EXPECT_LT(worst, kBatchTolerance) << file << " session " << i << " round " << round;
        std::printf("%s session %zu round %d: max |batched - alone| = %.3g\n", file, i, round,
                    worst);
        const auto best = [](const auto& l) {
          return std::max_element(l.begin(), l.end()) - l.begin();
        };
        EXPECT_EQ(best(got), best(want)) << file << " session " << i << " round " << round;
        EXPECT_EQ(batched[i]->n_past(), alone[i]->n_past());
        // The next round: each session's greedy token.
        step[i] = {static_cast<TokenId>(std::max_element(want.begin(), want.end()) - want.begin())};
      }
    }
  }
}

TEST(Forward, BatchOfSessionsChecksItsInput) {
  const auto model = engine::Model::load(test::data_path("models/stories260K.gguf"));
  engine::Session a(model, {.n_ctx = 8}), b(model, {.n_ctx = 4});
  std::vector<engine::Session*> twice = {&a, &a};
  EXPECT_THROW(engine::Session::eval_batch(twice, std::vector<std::vector<TokenId>>{{1}, {2}}),
               Error);
  // b's context cannot take 5 tokens: nothing advances, a included.
  std::vector<engine::Session*> both = {&a, &b};
  EXPECT_THROW(
      engine::Session::eval_batch(both, std::vector<std::vector<TokenId>>{{1, 2}, {1, 2, 3, 4, 5}}),
      Error);
  EXPECT_EQ(a.n_past(), 0);
  EXPECT_EQ(b.n_past(), 0);
}

TEST(Forward, ContextOverflowIsAnError) {
  const auto model = engine::Model::load(test::data_path("models/stories260K.gguf"));
  engine::Session s(model, {.n_ctx = 4});
  const std::vector<TokenId> five = {1, 2, 3, 4, 5};
  try {
    s.eval(five);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kContextOverflow);
  }
  s.eval(std::vector<TokenId>{1, 2, 3});
  EXPECT_THROW(s.eval(std::vector<TokenId>{4, 5}), Error);
  EXPECT_EQ(s.n_past(), 3);
}

TEST(Sampler, SeedTemperatureAndTruncation) {
  std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.5f, 2.9f};
  engine::SamplerParams greedy;
  greedy.temperature = 0;
  EXPECT_EQ(engine::Sampler(greedy).sample(logits, {}), 1);
  engine::SamplerParams top1;
  top1.top_k = 1;
  top1.seed = 5;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(engine::Sampler(top1).sample(logits, {}), 1);
  engine::SamplerParams p;
  p.seed = 9;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.temperature = 1.0f;
  engine::Sampler a(p), b(p);
  std::vector<int> counts(5, 0);
  for (int i = 0; i < 2000; ++i) {
    const TokenId x = a.sample(logits, {});
    EXPECT_EQ(x, b.sample(logits, {}));  // same seed, same draws
    ++counts[x];
  }
  // Frequencies follow softmax(logits): token 1 (logit 3) about e^2 times token 0 (logit 1).
  EXPECT_GT(counts[1], 4 * counts[0]);
  EXPECT_GT(counts[0], 0);
  engine::SamplerParams minp = p;
  minp.min_p = 0.5f;  // keeps tokens with p >= 0.5 * p_max: ids 1, 4 and 2
  engine::Sampler m(minp);
  for (int i = 0; i < 200; ++i) {
    const TokenId x = m.sample(logits, {});
    EXPECT_TRUE(x == 1 || x == 4 || x == 2) << x;
  }
  engine::SamplerParams rep = greedy;
  rep.repeat_penalty = 2.0f;
  const std::vector<TokenId> history = {1};
  EXPECT_EQ(engine::Sampler(rep).sample(logits, history), 4);  // 3.0 / 2 < 2.9
}

}  // namespace
}  // namespace qinfer
