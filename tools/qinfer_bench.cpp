// qinfer-bench: prompt processing (one batch of p tokens) and generation (n tokens one at a
// time) throughput, mean and standard deviation over r runs, as a llama-bench style table
// or one JSON object.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "engine/engine.hpp"
#include "tools/cli.hpp"
#include "tools/tool_common.hpp"

namespace {

struct Stat {
  double mean = 0, stddev = 0;
};

Stat stats(const std::vector<double>& v) {
  Stat s;
  for (double x : v) s.mean += x / v.size();
  for (double x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(s.stddev / (v.size() - 1)) : 0.0;
  return s;
}

// The type holding most of the weight bytes ("q4_0", ...).
std::string main_type(const qinfer::GgufFile& f, uint64_t& total_bytes, uint64_t& params) {
  std::map<std::string, uint64_t> bytes;
  total_bytes = params = 0;
  for (const qinfer::TensorInfo& t : f.tensors()) {
    bytes[std::string(qinfer::type_name(t.type))] += t.size_bytes;
    total_bytes += t.size_bytes;
    params += static_cast<uint64_t>(t.n_elements());
  }
  return std::max_element(bytes.begin(), bytes.end(),
                          [](auto& a, auto& b) { return a.second < b.second; })
      ->first;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qinfer;
  using Clock = std::chrono::steady_clock;
  CLI::App app{"qinfer-bench: prompt and generation throughput"};
  std::string model_path;
  int n_prompt = 512, n_gen = 128, n_threads = 0, reps = 5;
  bool json = false;
  app.add_option("-m,--model", model_path, "GGUF model")->required()->check(CLI::ExistingFile);
  app.add_option("-p,--n-prompt", n_prompt, "prompt tokens (0: skip)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("-n,--n-gen", n_gen, "generated tokens (0: skip)")->check(CLI::Range(0, 1 << 20));
  app.add_option("-t,--threads", n_threads, "threads (default: physical cores)")
      ->check(CLI::Range(1, 1024));
  app.add_option("-r,--repetitions", reps, "runs to average")->check(CLI::Range(1, 1000));
  app.add_flag("--json", json, "one JSON object on stdout");
  tools::parse_command_line(app, argc, argv);
  return tools::run_guarded([&] {
    auto model = engine::Model::load(model_path);
    const int threads = n_threads > 0 ? n_threads : engine::physical_cores();
    engine::Session session(model, {.n_ctx = std::max(1, n_prompt + n_gen), .n_threads = threads});
    std::mt19937 rng(1);
    std::uniform_int_distribution<TokenId> any(0, static_cast<TokenId>(model->config.n_vocab - 1));
    std::vector<TokenId> prompt(n_prompt);
    for (TokenId& t : prompt) t = any(rng);
    auto time_pp = [&] {
      session.reset();
      const auto t0 = Clock::now();
      session.eval(prompt);
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    auto time_tg = [&] {
      session.reset();
      TokenId t = model->tokenizer->vocab().bos >= 0 ? model->tokenizer->vocab().bos : 0;
      const auto t0 = Clock::now();
      for (int i = 0; i < n_gen; ++i) {
        const TokenId one[1] = {t};
        const auto& logits = session.eval(one);
        t = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      }
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    if (n_prompt > 0) time_pp();  // warm-up
    std::vector<double> pp, tg;
    for (int r = 0; r < reps; ++r) {
      if (n_prompt > 0) pp.push_back(n_prompt / time_pp());
      if (n_gen > 0) tg.push_back(n_gen / time_tg());
    }
    uint64_t bytes = 0, params = 0;
    const std::string type = main_type(model->file, bytes, params);
    const std::string name = std::filesystem::path(model_path).filename().string();
    const Stat p = stats(pp), g = stats(tg);
    if (json) {
      nlohmann::ordered_json j;
      j["model"] = name;
      j["type"] = type;
      j["threads"] = threads;
      j["isa"] = std::string(kernels::isa_name(kernels::active().isa));
      if (n_prompt > 0)
        j["pp"] = {{"n_tokens", n_prompt}, {"tokens_per_s", p.mean}, {"stddev", p.stddev}};
      if (n_gen > 0)
        j["tg"] = {{"n_tokens", n_gen}, {"tokens_per_s", g.mean}, {"stddev", g.stddev}};
      std::cout << j.dump() << "\n";
      return 0;
    }
    std::printf("| %-28s | %10s | %8s | %-12s | %7s | %6s | %20s |\n", "model", "size", "params",
                "backend", "threads", "test", "t/s");
    std::printf("| %.28s | %.10s | %.8s | %.12s | %.7s | %.6s | %.20s |\n",
                "------------------------------", "----------", "--------", "------------",
                "-------", "------", "--------------------");
    const std::string backend = "CPU " + std::string(kernels::isa_name(kernels::active().isa));
    auto row = [&](const char* kind, int n, const Stat& s) {
      char test[16], ts[40];
      std::snprintf(test, sizeof test, "%s%d", kind, n);
      std::snprintf(ts, sizeof ts, "%.2f ± %.2f", s.mean, s.stddev);
      std::printf("| %-28s | %6.2f MiB | %6.2f M | %-12s | %7d | %6s | %20s |\n", name.c_str(),
                  bytes / 1048576.0, params / 1e6, backend.c_str(), threads, test, ts);
    };
    if (n_prompt > 0) row("pp", n_prompt, p);
    if (n_gen > 0) row("tg", n_gen, g);
    return 0;
  });
}
