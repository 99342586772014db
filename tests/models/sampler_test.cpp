// The sampler against its definition: which tokens min-p and top-p keep (exactly), and the
// distribution it draws from at temperatures 1 and 0.5 (chi-square against softmax(l / T)).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "engine/engine.hpp"

namespace qinfer {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 0.5f, 2.9f, -1.0f};

engine::SamplerParams plain(float temperature, uint64_t seed) {
  engine::SamplerParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

std::vector<int> draw(const engine::SamplerParams& p, int n) {
  engine::Sampler s(p);
  std::vector<int> counts(kLogits.size(), 0);
  for (int i = 0; i < n; ++i) ++counts[s.sample(kLogits, {})];
  return counts;
}

std::vector<double> softmax(double temperature) {
  std::vector<double> p(kLogits.size());
  double z = 0;
  for (size_t i = 0; i < p.size(); ++i) z += p[i] = std::exp(kLogits[i] / temperature);
  for (double& v : p) v /= z;
  return p;
}

// Chi-square statistic of the counts against the probabilities (5 degrees of freedom here:
// the 0.1% critical value is 20.5).
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n) {
  double chi = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

TEST(Sampler, DistributionAtTemperatureOne) {
  const int n = 40000;
  const double chi = chi_square(draw(plain(1.0f, 11), n), softmax(1.0), n);
  EXPECT_LT(chi, 20.5);
  // ... and it is not the T = 0.5 distribution.
  EXPECT_GT(chi_square(draw(plain(1.0f, 11), n), softmax(0.5), n), 200.0);
}

TEST(Sampler, DistributionAtTemperatureHalf) {
  const int n = 40000;
  EXPECT_LT(chi_square(draw(plain(0.5f, 12), n), softmax(0.5), n), 20.5);
}

std::set<int> seen(const std::vector<int>& counts) {
  std::set<int> s;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) s.insert(static_cast<int>(i));
  }
  return s;
}

TEST(Sampler, MinPKeepsExactlyTokensWithinTheRatio) {
  // min_p 0.3 keeps p_i >= 0.3 p_max, i.e. logit >= 3 + ln 0.3 = 1.796: ids 1, 4, 2.
  engine::SamplerParams p = plain(1.0f, 13);
  p.min_p = 0.3f;
  EXPECT_EQ(seen(draw(p, 5000)), (std::set<int>{1, 2, 4}));
  p.min_p = 0.95f;  // only logits >= 3 + ln 0.95 = 2.949: id 1
  EXPECT_EQ(seen(draw(p, 2000)), (std::set<int>{1}));
  p.min_p = 0.9f;  // 3 + ln 0.9 = 2.895: ids 1 and 4 (2.9)
  EXPECT_EQ(seen(draw(p, 5000)), (std::set<int>{1, 4}));
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  const auto prob = softmax(1.0);  // sorted: 1 (0.366), 4 (0.331), 2 (0.135), 0 (0.050), 3, 5
  engine::SamplerParams p = plain(1.0f, 14);
  p.top_p = static_cast<float>(prob[1] + prob[4] - 0.01);  // reached after two tokens
  EXPECT_EQ(seen(draw(p, 5000)), (std::set<int>{1, 4}));
  p.top_p = static_cast<float>(prob[1] + prob[4] + 0.01);  // needs a third
  EXPECT_EQ(seen(draw(p, 5000)), (std::set<int>{1, 2, 4}));
  p.top_p = 0.1f;  // at least one token stays
  EXPECT_EQ(seen(draw(p, 500)), (std::set<int>{1}));
}

TEST(Sampler, TopKAndGreedy) {
  engine::SamplerParams p = plain(1.0f, 15);
  p.top_k = 2;
  EXPECT_EQ(seen(draw(p, 3000)), (std::set<int>{1, 4}));
  EXPECT_EQ(seen(draw(plain(0.0f, 1), 50)), (std::set<int>{1}));
}

TEST(Sampler, FrequencyAndPresencePenaltiesFollowOpenAisDefinition) {
  // Greedy over logits 3.0 (id 1) and 2.9 (id 4): id 1 seen twice in the window loses
  // 2 * frequency + presence. 2 * 0.04 + 0.01 = 0.09 keeps it first (2.91 > 2.9); 0.2 + 0.01
  // puts id 4 first. A token outside the window (repeat_last_n) is not penalised.
  engine::SamplerParams p = plain(0.0f, 1);
  const std::vector<TokenId> history = {1, 0, 1};
  p.frequency_penalty = 0.04f;
  p.presence_penalty = 0.01f;
  EXPECT_EQ(engine::Sampler(p).sample(kLogits, history), 1);
  p.frequency_penalty = 0.1f;
  EXPECT_EQ(engine::Sampler(p).sample(kLogits, history), 4);
  p.frequency_penalty = 0.0f;
  p.presence_penalty = 0.2f;
  EXPECT_EQ(engine::Sampler(p).sample(kLogits, history), 4);
  p.repeat_last_n = 1;  // the window holds only the last 1: still penalised once
  EXPECT_EQ(engine::Sampler(p).sample(kLogits, history), 4);
  const std::vector<TokenId> old_history = {1, 0, 2};
  EXPECT_EQ(engine::Sampler(p).sample(kLogits, old_history), 1);  // id 1 is out of the window
}

}  // namespace
}  // namespace qinfer
