// qinfer-bench: prompt processing (one batch of p tokens) and generation (n tokens one at a
// time) throughput, mean and standard deviation over r runs, as a llama-bench style table
// or one JSON object.
#include <algorithm>
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
#include "kernels/read_stream.hpp"
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

// Passes of each prefetch distance over the token's pages for one --ceiling reading: a
// TinyLlama Q4_0 token's 560 MB, 8 passes, about 0.1 s.
constexpr int kCeilingPasses = 2;

// One measured test of one model at one thread count.
struct Result {
  std::string model, model_path, type, isa;
  uint64_t bytes = 0, params = 0;
  uint64_t weights_read = 0;  // engine::token_weight_bytes: a generated token's weight bytes
  int threads = 0, n_prompt = 0, n_gen = 0, n_depth = 0;
  std::string type_k = "f16", type_v = "f16";
  std::vector<double> samples;  // tokens per second of each repetition
  // --ceiling: the read rate of the token's own weight pages (bytes/s) just before and just
  // after the repetitions (0: not measured), and the share of it a generated token reached.
  double ceiling_before = 0, ceiling_after = 0;
  bool has_ceiling() const { return ceiling_before > 0 && ceiling_after > 0; }
  // Against the higher of the two, so a slow spell in one does not flatter the share.
  double ceiling() const { return std::max(ceiling_before, ceiling_after); }
  double share() const {
    return stats(samples).mean * static_cast<double>(weights_read) / ceiling();
  }
  std::string test() const {
    std::string t;
    if (n_prompt > 0 && n_gen > 0) {
      t = "pp" + std::to_string(n_prompt) + "+tg" + std::to_string(n_gen);
    } else {
      t = n_prompt > 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen);
    }
    if (n_depth > 0) t += " @ d" + std::to_string(n_depth);  // as later llama-bench
    // llama-bench adds type_k/type_v columns when they are not f16; here the test says so.
    if (type_k != "f16" || type_v != "f16") t += " (K " + type_k + ", V " + type_v + ")";
    return t;
  }
};

std::string build_info() {
  return std::string("qinfer ") + qinfer::version() + ", " +
#if defined(__clang__)
         "clang " __clang_version__;
#else
         "gcc " __VERSION__;
#endif
}

// --ceiling's fields, where the test measured them: both readings (GB/s) and the share.
void add_ceiling(nlohmann::ordered_json& j, const Result& r) {
  if (!r.has_ceiling()) return;
  j["read_ceiling_gbs"] = {r.ceiling_before / 1e9, r.ceiling_after / 1e9};
  j["share_of_ceiling"] = r.share();
}

nlohmann::ordered_json to_json(const Result& r) {
  const Stat s = stats(r.samples);
  // llama-bench's field names where it has them.
  nlohmann::ordered_json j = {{"build", build_info()},
                              {"model_filename", r.model_path},
                              {"model_type", r.type},
                              {"model_size", r.bytes},
                              {"model_n_params", r.params},
                              {"backends", "CPU"},
                              {"isa", r.isa},
                              {"n_threads", r.threads},
                              {"n_prompt", r.n_prompt},
                              {"n_gen", r.n_gen},
                              {"n_depth", r.n_depth},
                              {"type_k", r.type_k},
                              {"type_v", r.type_v},
                              {"test", r.test()},
                              {"avg_ts", s.mean},
                              {"stddev_ts", s.stddev},
                              {"samples_ts", r.samples}};
  j["weights_read_bytes"] = r.weights_read;  // qinfer's own
  add_ceiling(j, r);
  return j;
}

void print_markdown(const std::vector<Result>& results) {
  // With --ceiling, two more columns: the own pages' read ceiling and the share of it.
  const bool ceiling =
      std::any_of(results.begin(), results.end(), [](const Result& r) { return r.has_ceiling(); });
  std::printf("| %-28s | %10s | %8s | %-8s | %-12s | %7s | %12s | %20s |%s\n", "model", "size",
              "params", "type", "backend", "threads", "test", "t/s",
              ceiling ? " ceiling GB/s | share |" : "");
  std::printf("| %.28s | %.10s | %.8s | %.8s | %.12s | %.7s | %.12s | %.20s |%s\n",
              "------------------------------", "----------", "--------", "--------",
              "------------", "-------", "------------", "--------------------",
              ceiling ? " ------------ | ----- |" : "");
  for (const Result& r : results) {
    const Stat s = stats(r.samples);
    char ts[40];
    std::snprintf(ts, sizeof ts, "%.2f ± %.2f", s.mean, s.stddev);
    std::string extra;
    if (ceiling) {
      char cells[64] = "            - |     - |";
      if (r.has_ceiling())
        std::snprintf(cells, sizeof cells, " %12.1f | %4.0f%% |", r.ceiling() / 1e9,
                      100 * r.share());
      extra = cells;
    }
    std::printf("| %-28s | %6.2f MiB | %6.2f M | %-8s | %-12s | %7d | %12s | %20s |%s\n",
                r.model.c_str(), r.bytes / 1048576.0, r.params / 1e6, r.type.c_str(),
                ("CPU " + r.isa).c_str(), r.threads, r.test().c_str(), ts, extra.c_str());
  }
  std::printf("\nbuild: %s\n", build_info().c_str());
}

void print_csv(const std::vector<Result>& results) {
  std::printf(
      "build,model_filename,model_type,model_size,model_n_params,backends,isa,n_threads,"
      "n_prompt,n_gen,test,avg_ts,stddev_ts\n");
  for (const Result& r : results) {
    const Stat s = stats(r.samples);
    std::printf("\"%s\",\"%s\",%s,%llu,%llu,CPU,%s,%d,%d,%d,%s,%.6f,%.6f\n", build_info().c_str(),
                r.model_path.c_str(), r.type.c_str(), static_cast<unsigned long long>(r.bytes),
                static_cast<unsigned long long>(r.params), r.isa.c_str(), r.threads, r.n_prompt,
                r.n_gen, r.test().c_str(), s.mean, s.stddev);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qinfer;
  using Clock = std::chrono::steady_clock;
  CLI::App app{"qinfer-bench: prompt and generation throughput (llama-bench's flags)"};
  std::vector<std::string> model_paths, pg_pairs;
  std::vector<int> n_prompts = {512}, n_gens = {128}, thread_counts, depths = {0};
  int reps = 5;
  bool json = false;
  std::string output = "md";
  app.add_option("-m,--model", model_paths, "GGUF model(s): repeat the flag or separate by commas")
      ->required()
      ->delimiter(',')
      ->check(CLI::ExistingFile);
  app.add_option("-p,--n-prompt", n_prompts, "prompt tokens, a comma list (0: skip)")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("-n,--n-gen", n_gens, "generated tokens, a comma list (0: skip)")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--pg", pg_pairs, "a prompt then a generation, PP,TG (-pg; repeatable)");
  app.add_option("-d,--n-depth", depths,
                 "tokens already in the KV cache before each test, a comma list (filled once, "
                 "not timed; llama-bench's later -d)")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("-t,--threads", thread_counts, "threads, a comma list (default: physical cores)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  app.add_option("-r,--repetitions", reps, "runs to average")->check(CLI::Range(1, 1000));
  app.add_option("-o,--output", output, "md (default), csv, json or jsonl")
      ->check(CLI::IsMember({"md", "csv", "json", "jsonl"}));
  app.add_flag("--json", json, "one model, one -p, -n and -t: one JSON object on stdout");
  bool ceiling = false;
  app.add_flag("--ceiling", ceiling,
               "around each generation test, time the threads streaming the token's own weight "
               "pages, and report that read ceiling and the share of it a token reached");
  std::string cache_k = "f16", cache_v = "f16";
  app.add_option("--cache-type-k", cache_k, "K cache type: f32, f16, bf16, q8_0, q4_0 (-ctk)");
  app.add_option("--cache-type-v", cache_v, "V cache type: f32, f16, bf16, q8_0, q4_0 (-ctv)");
  // -pg takes "PP,TG" as one value: CLI11 must not split it at the comma.
  tools::parse_command_line(
      app, argc, argv, {{"-pg", "--pg"}, {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"}});
  return tools::run_guarded([&] {
    const TensorType type_k = KvCache::parse_type(cache_k), type_v = KvCache::parse_type(cache_v);
    if (thread_counts.empty()) thread_counts = {engine::physical_cores()};
    std::vector<std::pair<int, int>> tests;  // (prompt, gen) pairs measured in that order
    for (int p : n_prompts)
      if (p > 0) tests.emplace_back(p, 0);
    for (int n : n_gens)
      if (n > 0) tests.emplace_back(0, n);
    for (const std::string& pg : pg_pairs) {
      int p = 0, n = 0;
      char extra = 0;
      if (std::sscanf(pg.c_str(), "%d,%d%c", &p, &n, &extra) != 2 || p < 1 || n < 1)
        throw Error(ErrorCode::kInvalidArgument, "-pg '" + pg + "': expected PP,TG, e.g. 512,128");
      tests.emplace_back(p, n);
    }
    if (json && (model_paths.size() != 1 || n_prompts.size() != 1 || n_gens.size() != 1 ||
                 thread_counts.size() != 1 || !pg_pairs.empty()))
      throw Error(ErrorCode::kInvalidArgument,
                  "--json is one object for one model, -p, -n and -t; use -o json for lists");
    std::vector<Result> results;
    for (const std::string& model_path : model_paths) {
      auto model = engine::Model::load(model_path);
      Result base;
      base.model_path = model_path;
      base.model = std::filesystem::path(model_path).filename().string();
      base.type = main_type(model->file, base.bytes, base.params);
      base.weights_read = engine::token_weight_bytes(*model);
      const std::vector<std::span<const uint8_t>> ranges = engine::token_weight_ranges(*model);
      base.isa = std::string(kernels::isa_name(kernels::active().isa));
      base.type_k = cache_k;
      base.type_v = cache_v;
      std::mt19937 rng(1);
      std::uniform_int_distribution<TokenId> any(0,
                                                 static_cast<TokenId>(model->config.n_vocab - 1));
      for (int threads : thread_counts) {
        for (int depth : depths) {
          for (const auto& [n_prompt, n_gen] : tests) {
            engine::Session session(model, {.n_ctx = std::max(1, depth + n_prompt + n_gen),
                                            .cache_k = type_k,
                                            .cache_v = type_v,
                                            .n_threads = threads});
            std::vector<TokenId> prompt(static_cast<size_t>(n_prompt));
            for (TokenId& t : prompt) t = any(rng);
            if (depth > 0) {  // the context the test starts from, kept by truncating back to it
              std::vector<TokenId> fill(static_cast<size_t>(depth));
              for (TokenId& t : fill) t = any(rng);
              session.eval(fill);
            }
            auto run_once = [&] {
              session.truncate(depth);
              const auto t0 = Clock::now();
              TokenId t = model->tokenizer->vocab().bos >= 0 ? model->tokenizer->vocab().bos : 0;
              if (n_prompt > 0) {
                const auto& logits = session.eval(prompt);
                t = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) -
                                         logits.begin());
              }
              for (int i = 0; i < n_gen; ++i) {
                const TokenId one[1] = {t};
                const auto& logits = session.eval(one);
                t = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) -
                                         logits.begin());
              }
              return (n_prompt + n_gen) / std::chrono::duration<double>(Clock::now() - t0).count();
            };
            // Warm-up, as llama-bench: the whole run for a prompt, one token for a generation
            // (the first pass faults the mapped weights in).
            if (n_prompt > 0) {
              run_once();
            } else {
              session.truncate(depth);
              const TokenId one[1] = {0};
              session.eval(one);
            }
            Result r = base;
            r.threads = threads;
            r.n_prompt = n_prompt;
            r.n_gen = n_gen;
            r.n_depth = depth;
            // The pages' read rate on either side of the runs (a generation reads each
            // weight byte once a token; a prompt reuses them, so it has no such ceiling).
            const bool bracket = ceiling && n_prompt == 0;
            auto own_pages = [&] {
              return kernels::read_rate(ranges, threads, kCeilingPasses).bytes_per_second;
            };
            if (bracket) r.ceiling_before = own_pages();
            for (int i = 0; i < reps; ++i) r.samples.push_back(run_once());
            if (bracket) r.ceiling_after = own_pages();
            results.push_back(std::move(r));
          }
        }
      }
    }
    if (json) {  // the single-object contract of the first version
      nlohmann::ordered_json j;
      const Result& first = results.front();
      j["model"] = first.model;
      j["type"] = first.type;
      j["threads"] = first.threads;
      j["isa"] = first.isa;
      j["weights_read_bytes"] = first.weights_read;
      for (const Result& r : results) {
        const Stat s = stats(r.samples);
        const char* key = r.n_prompt > 0 ? "pp" : "tg";
        j[key] = {{"n_tokens", r.n_prompt > 0 ? r.n_prompt : r.n_gen},
                  {"tokens_per_s", s.mean},
                  {"stddev", s.stddev}};
        add_ceiling(j[key], r);
      }
      std::cout << j.dump() << "\n";
    } else if (output == "json") {
      nlohmann::ordered_json all = nlohmann::ordered_json::array();
      for (const Result& r : results) all.push_back(to_json(r));
      std::cout << all.dump(2) << "\n";
    } else if (output == "jsonl") {
      for (const Result& r : results) std::cout << to_json(r).dump() << "\n";
    } else if (output == "csv") {
      print_csv(results);
    } else {
      print_markdown(results);
    }
    return 0;
  });
}
