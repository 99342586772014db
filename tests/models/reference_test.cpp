// Every model with a llama.cpp reference (vendored ones always, ../shared when present):
// prompt ids, the top-10 logits after the prompt, and the greedy continuation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/engine.hpp"
#include "kernels/kernels.hpp"
#include "tests/test_util.hpp"

namespace qinfer {
namespace {

namespace fs = std::filesystem;

struct RefFile {
  std::string json_path, model_path;
};

void PrintTo(const RefFile& r, std::ostream* os) { *os << r.model_path; }

std::vector<RefFile> reference_files() {
  std::map<std::string, RefFile> by_model;  // shared copies win over vendored duplicates
  for (const std::string& root : {test::data_path("models"), test::shared_path("models")}) {
    if (root.empty() || !fs::exists(root + "/reference")) continue;
    for (const auto& e : fs::directory_iterator(root + "/reference")) {
      if (e.path().extension() != ".json") continue;
      const auto j = nlohmann::json::parse(test::read_text(e.path().string()));
      const std::string model = root + "/" + j["model"].get<std::string>();
      if (fs::exists(model)) by_model[j["model"]] = {e.path().string(), model};
    }
  }
  std::vector<RefFile> out;
  for (auto& [name, r] : by_model) out.push_back(r);
  return out;
}

std::string label(const testing::TestParamInfo<RefFile>& info) {
  std::string s = fs::path(info.param.model_path).stem().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

bool is_float_model(const engine::Model& m) {
  const TensorType t = m.weights.layers[0].ffn_up.type;
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

// Float models: 1e-2. Until the second wave our AVX-512 kernels summed in ggml's order and
// met 1e-3 there; the fidelity rule no longer asks for that order (GEMM and attention sum
// their own way), so every ISA gets the tolerance the other paths always had. Observed: up
// to 2.5e-3 (BF16, whose activations round to bf16 on either side of a boundary).
double float_tolerance() { return 1e-2; }

class Reference : public testing::TestWithParam<RefFile> {};

TEST_P(Reference, TopLogitsAndGreedyContinuation) {
  const auto j = nlohmann::json::parse(test::read_text(GetParam().json_path));
  const auto model = engine::Model::load(GetParam().model_path);
  const bool random_weights = GetParam().model_path.find("random") != std::string::npos;
  const double tol = is_float_model(*model) ? float_tolerance() : 5e-2;
  for (const auto& c : j["cases"]) {
    const auto prompt = model->tokenizer->encode(c["prompt"].get<std::string>(), true, false);
    ASSERT_EQ(prompt, c["prompt_tokens"].get<std::vector<TokenId>>());
    engine::Session session(model, {.n_ctx = 256});
    const auto logits = session.eval(prompt);
    double worst = 0;
    for (const auto& pair : c["first_top10"]) {
      const int id = pair[0];
      const double want = pair[1];
      worst = std::max(worst, std::fabs(logits[id] - want));
      EXPECT_NEAR(logits[id], want, tol) << c["prompt"] << " token " << id;
    }
    std::printf("%s '%s': max top-10 logit error %.2g\n",
                fs::path(GetParam().model_path).stem().c_str(),
                c["prompt"].get<std::string>().c_str(), worst);
    const int top1 =
        static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (!random_weights) {
      // llama.cpp's first choice, or a near-tie with it (the fidelity rule: a greedy text
      // may part only where two tokens are closer than the logit tolerance).
      const int ref_top1 = c["first_top10"][0][0].get<int>();
      EXPECT_GE(logits[ref_top1], logits[top1] - tol)
          << c["prompt"] << ": first token " << top1 << " over llama.cpp's " << ref_top1;
      // Follow llama.cpp's greedy tokens one by one. Where our argmax differs, the
      // reference's token must be a near-tie with ours (within the logit tolerance): then
      // the two orders of summation legitimately part, and the comparison stops there.
      session.reset();
      const auto want = c["greedy_tokens"].get<std::vector<TokenId>>();
      std::vector<float> l = session.eval(prompt);
      // Logits may differ from llama.cpp's by up to `tol`, so two tokens closer than that
      // may legitimately swap (observed gaps at divergences: 0.0006-0.024).
      const double tie = tol;
      size_t matched = 0;
      for (; matched < want.size(); ++matched) {
        const auto best = static_cast<TokenId>(std::max_element(l.begin(), l.end()) - l.begin());
        if (best != want[matched]) {
          std::printf("%s '%s': step %zu, near-tie gap %.4f\n",
                      fs::path(GetParam().model_path).stem().c_str(),
                      c["prompt"].get<std::string>().c_str(), matched, l[best] - l[want[matched]]);
          EXPECT_GE(l[want[matched]], l[best] - tie)
              << c["prompt"] << ": step " << matched << " chose " << best << " over llama.cpp's "
              << want[matched] << " by more than a near-tie";
          break;
        }
        if (model->tokenizer->is_end_of_generation(best)) break;
        l = session.eval(std::vector<TokenId>{best});
      }
      RecordProperty("greedy_tokens_matched", static_cast<int>(matched));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Reference, testing::ValuesIn(reference_files()), label);

}  // namespace
}  // namespace qinfer
