// run: the prompt's continuation, streamed (or one JSON object with --json).
#include <cstdio>
#include <iostream>
#include <fstream>
#include <random>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "engine/engine.hpp"
#include "tools/cli.hpp"
#include "tools/tool_common.hpp"

int main(int argc, char** argv) {
  using namespace qinfer;
  CLI::App app{"run: generate text with a GGUF model"};
  std::string model_path, prompt, prompt_file, cache_k = "f16", cache_v = "f16";
  int n_predict = 128, n_threads = 0;
  int64_t n_ctx = 0;
  engine::SamplerParams sp;
  int64_t seed = -1;
  bool json = false, no_mmap = false, parse_special = false;
  app.add_option("-m,--model", model_path, "GGUF model file")->required()->check(CLI::ExistingFile);
  auto* p_opt = app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("-f,--file", prompt_file, "read the prompt from a file")
      ->check(CLI::ExistingFile)
      ->excludes(p_opt);
  app.add_option("-n,--n-predict", n_predict, "tokens to generate")->check(CLI::Range(0, 1 << 30));
  app.add_option("-t,--threads", n_threads, "threads (default: physical cores)")
      ->check(CLI::Range(1, 1024));
  app.add_option("-c,--ctx-size", n_ctx, "context size (default: the model's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  app.add_option("--temp", sp.temperature, "temperature (0: greedy)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-k", sp.top_k, "top-k (0: off)");
  app.add_option("--top-p", sp.top_p, "top-p (1: off)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-p", sp.min_p, "min-p (0: off)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--repeat-penalty", sp.repeat_penalty, "repetition penalty (1: off)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--repeat-last-n", sp.repeat_last_n, "tokens the penalty looks back on");
  app.add_option("--seed", seed, "RNG seed (default: random)");
  app.add_option("--cache-type-k", cache_k, "K cache type: f32, f16, bf16, q8_0, q4_0");
  app.add_option("--cache-type-v", cache_v, "V cache type: f32, f16, bf16, q8_0, q4_0");
  app.add_flag("--json", json, "print one JSON object and nothing else on stdout");
  app.add_flag("--no-mmap", no_mmap, "read the model into memory instead of mapping it");
  app.add_flag("--parse-special", parse_special, "parse special tokens written in the prompt");
  tools::parse_command_line(app, argc, argv);

  return tools::run_guarded([&] {
    if (!prompt_file.empty()) prompt = tools::read_file(prompt_file);
    sp.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
    auto model = engine::Model::load(model_path, OpenOptions{.use_mmap = !no_mmap});
    engine::Session session(model, {.n_ctx = n_ctx,
                                    .cache_k = KvCache::parse_type(cache_k),
                                    .cache_v = KvCache::parse_type(cache_v),
                                    .n_threads = n_threads});
    const auto prompt_ids = model->tokenizer->encode(prompt, true, parse_special);
    if (prompt_ids.empty()) throw Error(ErrorCode::kInvalidArgument, "the prompt is empty");
    if (static_cast<int64_t>(prompt_ids.size()) > session.n_ctx()) {
      throw Error(ErrorCode::kContextOverflow,
                  "the prompt has " + std::to_string(prompt_ids.size()) +
                      " tokens, more than the context of " + std::to_string(session.n_ctx()));
    }
    engine::GenerateOptions go;
    go.max_tokens = n_predict;
    go.sampler = sp;
    if (!json) {
      std::fputs(prompt.c_str(), stdout);
      std::fflush(stdout);
    }
    const auto result = session.generate(prompt_ids, go, [&](TokenId, const std::string& text) {
      if (!json) {
        std::fputs(text.c_str(), stdout);
        std::fflush(stdout);
      }
      return true;
    });
    const double pp = result.prompt_ms > 0 ? result.prompt_tokens * 1000.0 / result.prompt_ms : 0;
    const double tg = result.gen_ms > 0 ? result.tokens.size() * 1000.0 / result.gen_ms : 0;
    if (json) {
      nlohmann::ordered_json j;
      j["prompt_tokens"] = prompt_ids;
      j["tokens"] = result.tokens;
      j["text"] = result.text;
      j["timings"] = {
          {"load_ms", model->load_ms}, {"prompt_tokens_per_s", pp}, {"gen_tokens_per_s", tg}};
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::fputs("\n", stdout);
      std::fprintf(stderr,
                   "load %.1f ms | prompt %lld tokens, %.1f tokens/s | generated %zu tokens, %.1f "
                   "tokens/s\n",
                   model->load_ms, static_cast<long long>(result.prompt_tokens), pp,
                   result.tokens.size(), tg);
    }
    return 0;
  });
}
