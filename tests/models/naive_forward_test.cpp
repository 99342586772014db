// A naive, obviously-correct forward pass in double precision (plain loops over dequantized
// weights, attention recomputed from scratch, no cache, no quantized activations) against
// the optimised path, on the vendored llama and gpt2 models. Also: logits identical for 1
// and 2 threads, and prompt-at-once equal to token-by-token.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/engine.hpp"
#include "kernels/kernels.hpp"
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
    kernels::dequantize_row(kernels::table(kernels::Isa::kScalar), m.type, m.data + r * m.row_bytes, row.data(), m.n_cols);
    for (int64_t c = 0; c < m.n_cols; ++c) d.w[r * m.n_cols + c] = row[c];
  }
  return d;
}

std::vector<double> matvec(const Dense& d, const std::vector<double>& x, const float* bias = nullptr) {
  std::vector<double> y(d.rows, 0.0);
  for (int64_t r = 0; r < d.rows; ++r) {
    for (int64_t c = 0; c < d.cols; ++c) y[r] += d.w[r * d.cols + c] * x[c];
    if (bias != nullptr) y[r] += bias[r];
  }
  return y;
}

std::vector<double> norm(const std::vector<double>& x, const float* w, const float* b, double eps, bool rms) {
  const double n = static_cast<double>(x.size());
  double mean = 0;
  if (!rms) for (double v : x) mean += v / n;
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean) / n;
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + (b ? b[i] : 0.0);
  return y;
}

// Logits after the last of `tokens`, computed the slow way.
std::vector<double> naive_logits(const engine::Model& m, const std::vector<TokenId>& tokens) {
  const ModelConfig& c = m.config;
  const ModelWeights& w = m.weights;
  const bool llama = c.arch == Arch::kLlama;
  const int64_t E = c.n_embd, hd = c.head_dim(), T = static_cast<int64_t>(tokens.size());
  const Dense embd = dense(w.token_embd);
  std::vector<std::vector<double>> x(T, std::vector<double>(E));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < E; ++i) x[t][i] = embd.w[tokens[t] * E + i];
    if (!llama) {
      const Dense pos = dense(w.position_embd);
      for (int64_t i = 0; i < E; ++i) x[t][i] += pos.w[t * E + i];
    }
  }
  auto rope = [&](std::vector<double>& v, int64_t head, int64_t pos) {
    for (int64_t i = 0; i < c.n_rot / 2; ++i) {
      const double theta = pos * std::pow(static_cast<double>(c.rope_freq_base), -2.0 * i / c.n_rot);
      double& a = v[head * hd + 2 * i];
      double& b = v[head * hd + 2 * i + 1];
      const double a0 = a, b0 = b;
      a = a0 * std::cos(theta) - b0 * std::sin(theta);
      b = a0 * std::sin(theta) + b0 * std::cos(theta);
    }
  };
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights& lw = w.layers[l];
    std::vector<std::vector<double>> q(T), k(T), v(T);
    for (int64_t t = 0; t < T; ++t) {
      const auto h = norm(x[t], lw.attn_norm, lw.attn_norm_b, c.norm_eps, llama);
      if (llama) {
        q[t] = matvec(dense(lw.attn_q), h);
        k[t] = matvec(dense(lw.attn_k), h);
        v[t] = matvec(dense(lw.attn_v), h);
        for (int64_t hh = 0; hh < c.n_head; ++hh) rope(q[t], hh, t);
        for (int64_t hh = 0; hh < c.n_head_kv; ++hh) rope(k[t], hh, t);
      } else {
        const auto qkv = matvec(dense(lw.attn_qkv), h, lw.attn_qkv_b);
        q[t].assign(qkv.begin(), qkv.begin() + E);
        k[t].assign(qkv.begin() + E, qkv.begin() + 2 * E);
        v[t].assign(qkv.begin() + 2 * E, qkv.end());
      }
    }
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> att(E, 0.0);
      for (int64_t hh = 0; hh < c.n_head; ++hh) {
        const int64_t g = hh / (c.n_head / c.n_head_kv);
        std::vector<double> s(t + 1);
        double mx = -1e300, sum = 0;
        for (int64_t u = 0; u <= t; ++u) {
          s[u] = 0;
          for (int64_t d = 0; d < hd; ++d) s[u] += q[t][hh * hd + d] * k[u][g * hd + d];
          s[u] /= std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[u]);
        }
        for (double& e : s) sum += e = std::exp(e - mx);
        for (int64_t u = 0; u <= t; ++u) {
          for (int64_t d = 0; d < hd; ++d) att[hh * hd + d] += s[u] / sum * v[u][g * hd + d];
        }
      }
      const auto o = matvec(dense(lw.attn_out), att, lw.attn_out_b);
      for (int64_t i = 0; i < E; ++i) x[t][i] += o[i];
      const auto h = norm(x[t], lw.ffn_norm, lw.ffn_norm_b, c.norm_eps, llama);
      auto up = matvec(dense(lw.ffn_up), h, lw.ffn_up_b);
      if (llama) {
        const auto gate = matvec(dense(lw.ffn_gate), h);
        for (size_t i = 0; i < up.size(); ++i) up[i] *= gate[i] / (1.0 + std::exp(-gate[i]));
      } else {
        for (double& u : up) u = 0.5 * u * (1.0 + std::tanh(0.7978845608028654 * (u + 0.044715 * u * u * u)));
      }
      const auto down = matvec(dense(lw.ffn_down), up, lw.ffn_down_b);
      for (int64_t i = 0; i < E; ++i) x[t][i] += down[i];
    }
  }
  const auto h = norm(x[T - 1], w.output_norm, w.output_norm_b, c.norm_eps, llama);
  return matvec(dense(w.output), h);
}

void compare(const std::string& model_file, double tolerance) {
  const auto model = engine::Model::load(test::data_path("models/" + model_file));
  const auto tokens = model->tokenizer->encode("The old count said that", true);
  const auto want = naive_logits(*model, tokens);
  engine::Session s(model, {.n_ctx = 64, .f16_cache = false});
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
