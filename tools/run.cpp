// run: the prompt's continuation, streamed (or one JSON object with --json); with -cnv a chat
// in the terminal (the model's chat template applied per turn, the KV cache kept between
// turns); with -i an interactive continuation without a template. Flags follow llama-cli's.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <random>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "engine/chat_template.hpp"
#include "engine/engine.hpp"
#include "tools/cli.hpp"
#include "tools/tool_common.hpp"

namespace {

using namespace qinfer;

// Ctrl-C: stops the answer being generated; at the input prompt it ends the program.
std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted = true; }

void install_sigint() {
  struct sigaction sa = {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a read at the prompt returns instead of resuming
  sigaction(SIGINT, &sa, nullptr);
}

// llama.cpp's -e: \n \r \t \\ \' \" \? \a \b \f \v \0 and \xHH.
std::string process_escapes(const std::string& in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\' || i + 1 == in.size()) {
      out += in[i];
      continue;
    }
    const char c = in[++i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '0':
        out += '\0';
        break;
      case '\\':
      case '\'':
      case '"':
      case '?':
        out += c;
        break;
      case 'x':
        if (i + 2 < in.size() && std::isxdigit(static_cast<unsigned char>(in[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
          out += static_cast<char>(std::stoi(in.substr(i + 1, 2), nullptr, 16));
          i += 2;
          break;
        }
        [[fallthrough]];
      default:
        out += '\\';
        out += c;
    }
  }
  return out;
}

// --logit-bias TOKEN_ID(+|-)BIAS, e.g. 15043+1 or 15043-inf (llama.cpp's syntax).
std::pair<TokenId, float> parse_logit_bias(const std::string& s) {
  const size_t at = s.find_first_of("+-", 1);
  try {
    if (at == std::string::npos) throw std::invalid_argument("");
    size_t used = 0;
    const int id = std::stoi(s.substr(0, at), &used);
    if (used != at) throw std::invalid_argument("");
    const float bias = std::stof(s.substr(at));
    return {id, bias};
  } catch (const std::exception&) {
    throw Error(ErrorCode::kInvalidArgument,
                "--logit-bias '" + s + "': expected TOKEN_ID+BIAS or TOKEN_ID-BIAS, e.g. 15043+1");
  }
}

struct Totals {
  int64_t prompt_tokens = 0, gen_tokens = 0;
  double prompt_ms = 0, gen_ms = 0;
  void add(const engine::GenerateResult& r) {
    prompt_tokens += r.prompt_tokens;
    gen_tokens += static_cast<int64_t>(r.tokens.size());
    prompt_ms += r.prompt_ms;
    gen_ms += r.gen_ms;
  }
  void print(double load_ms) const {
    std::fprintf(stderr,
                 "load %.1f ms | prompt %lld tokens, %.1f tokens/s | generated %lld tokens, %.1f "
                 "tokens/s\n",
                 load_ms, static_cast<long long>(prompt_tokens),
                 prompt_ms > 0 ? prompt_tokens * 1000.0 / prompt_ms : 0.0,
                 static_cast<long long>(gen_tokens),
                 gen_ms > 0 ? gen_tokens * 1000.0 / gen_ms : 0.0);
  }
};

const char* context_full_message = "context full: generation stopped (raise -c for more)";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"run: generate text with a GGUF model (llama-cli's flags)"};
  std::string model_path, prompt, prompt_file, cache_k = "f16", cache_v = "f16";
  std::string system_prompt, chat_template_name;
  std::vector<std::string> reverse_prompts, logit_bias;
  int n_predict = -2, n_threads = 0, n_gpu_layers = 0, batch = 2048, ubatch = 512, keep = 0;
  int64_t n_ctx = 0;
  engine::SamplerParams sp;
  int64_t seed = -1;
  bool json = false, no_mmap = false, parse_special = false, escape = false, conversation = false,
       no_conversation = false, interactive = false, ignore_eos = false, verbose_prompt = false,
       mlock = false, no_warmup = false, context_shift = false, flash_attn = false;
  std::string grammar, json_schema;
  app.add_option("-m,--model", model_path, "GGUF model file")->required()->check(CLI::ExistingFile);
  auto* p_opt =
      app.add_option("-p,--prompt", prompt, "prompt text (with -cnv: the first user message)");
  app.add_option("-f,--file", prompt_file, "read the prompt from a file")
      ->check(CLI::ExistingFile)
      ->excludes(p_opt);
  app.add_option("-n,--n-predict", n_predict,
                 "tokens to generate (default 128; -1: until the context is full)")
      ->check(CLI::Range(-1, 1 << 30));
  app.add_option("-t,--threads", n_threads, "threads (default: physical cores)")
      ->check(CLI::Range(1, 1024));
  app.add_option("-c,--ctx-size", n_ctx, "context size (default: the model's)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  app.add_option("-b,--batch-size", batch,
                 "accepted for llama-cli compatibility (the whole prompt is one batch)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--ubatch-size", ubatch, "accepted for llama-cli compatibility")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--temp", sp.temperature, "temperature (0: greedy)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-k", sp.top_k, "top-k (0: off)");
  app.add_option("--top-p", sp.top_p, "top-p (1: off)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-p", sp.min_p, "min-p (0: off)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--repeat-penalty", sp.repeat_penalty, "repetition penalty (1: off)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--repeat-last-n", sp.repeat_last_n, "tokens the penalty looks back on");
  app.add_option("-s,--seed", seed, "RNG seed (default: random)");
  app.add_option("--logit-bias", logit_bias, "TOKEN_ID(+|-)BIAS, e.g. 15043+1 or 15043-inf");
  app.add_flag("--ignore-eos", ignore_eos, "never stop at an end-of-generation token");
  app.add_option("-r,--reverse-prompt", reverse_prompts,
                 "stop when this text is generated (with -cnv/-i: hand the turn back)");
  app.add_option("--cache-type-k", cache_k, "K cache type: f32, f16, bf16, q8_0, q4_0 (-ctk)");
  app.add_option("--cache-type-v", cache_v, "V cache type: f32, f16, bf16, q8_0, q4_0 (-ctv)");
  app.add_flag("--conversation", conversation,
               "chat with the model's chat template (-cnv; the default when the model has one "
               "and no prompt is given)");
  app.add_flag("--no-conversation", no_conversation, "never start a chat (-no-cnv)");
  app.add_flag("-i,--interactive", interactive, "continue the text with your input, no template");
  app.add_option("--system-prompt", system_prompt, "system message of the chat (-sys)");
  app.add_option("--chat-template", chat_template_name,
                 "a built-in template name or Jinja text instead of the model's");
  app.add_flag("-e,--escape", escape, "process escapes (\\n, \\t, \\xHH ...) in the prompt");
  app.add_flag("--verbose-prompt", verbose_prompt, "print the prompt's tokens on stderr");
  app.add_flag("--mlock", mlock, "keep the model in RAM (mlock)");
  app.add_flag("--no-warmup", no_warmup, "accepted (qinfer does no warm-up run)");
  app.add_option("--keep", keep, "accepted (only meaningful with a context shift)");
  app.add_flag("--context-shift", context_shift, "refused: qinfer stops when the context is full");
  app.add_option("--n-gpu-layers,--gpu-layers", n_gpu_layers,
                 "accepted with a warning: qinfer runs on the CPU (-ngl)");
  app.add_flag("--flash-attn", flash_attn, "accepted: attention is always tiled (-fa)");
  app.add_option("--grammar,--grammar-file", grammar, "refused: grammars are not supported");
  app.add_option("--json-schema", json_schema, "refused: grammars are not supported");
  app.add_flag("--json", json, "print one JSON object and nothing else on stdout");
  app.add_flag("--no-mmap", no_mmap, "read the model into memory instead of mapping it");
  app.add_flag("--parse-special", parse_special, "parse special tokens written in the prompt");
  tools::parse_command_line(app, argc, argv,
                            {{"-cnv", "--conversation"},
                             {"-no-cnv", "--no-conversation"},
                             {"-sys", "--system-prompt"},
                             {"-ctk", "--cache-type-k"},
                             {"-ctv", "--cache-type-v"},
                             {"-ngl", "--n-gpu-layers"},
                             {"-fa", "--flash-attn"},
                             {"-ub", "--ubatch-size"}});

  return tools::run_guarded([&] {
    if (!grammar.empty() || !json_schema.empty())
      throw Error(ErrorCode::kUnsupported, "grammars (--grammar, --json-schema) are not supported");
    if (context_shift)
      throw Error(ErrorCode::kUnsupported,
                  "--context-shift is not supported: generation stops when the context is full");
    if (n_gpu_layers != 0) std::fprintf(stderr, "warning: -ngl ignored: qinfer runs on the CPU\n");
    if (!prompt_file.empty()) prompt = tools::read_file(prompt_file);
    if (escape) prompt = process_escapes(prompt), system_prompt = process_escapes(system_prompt);
    for (const std::string& b : logit_bias) sp.logit_bias.push_back(parse_logit_bias(b));
    sp.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();

    auto model = engine::Model::load(model_path, OpenOptions{.use_mmap = !no_mmap});
    if (mlock && mlockall(MCL_CURRENT) != 0)
      std::fprintf(stderr, "warning: --mlock failed (raise 'ulimit -l'); going on unlocked\n");
    const Value* tmpl_value = model->file.find("tokenizer.chat_template");
    const bool has_template = tmpl_value != nullptr && tmpl_value->type == ValueType::STRING;
    // llama-cli: a model with a chat template and no prompt starts a conversation.
    if (!no_conversation && !interactive && !json && prompt.empty() && has_template)
      conversation = true;
    if (no_conversation) conversation = false;
    if ((conversation || interactive) && json)
      throw Error(ErrorCode::kInvalidArgument, "--json is for one generation, not -cnv/-i");
    if (!conversation && !interactive && prompt.empty())
      throw Error(ErrorCode::kInvalidArgument,
                  "the prompt is empty (give -p or -f, or -cnv to chat)");
    const std::string template_text = !chat_template_name.empty() ? chat_template_name
                                      : has_template ? std::string(tmpl_value->as_string())
                                                     : "chatml";
    if (conversation) chat::apply(template_text, {}, true);  // an unknown template fails now

    engine::Session session(model, {.n_ctx = n_ctx,
                                    .cache_k = KvCache::parse_type(cache_k),
                                    .cache_v = KvCache::parse_type(cache_v),
                                    .n_threads = n_threads});
    engine::GenerateOptions go;
    go.max_tokens = n_predict == -2 ? (conversation ? -1 : 128) : n_predict;
    go.sampler = sp;
    go.stop_strings = reverse_prompts;
    go.ignore_eos = ignore_eos;
    const Tokenizer& tok = *model->tokenizer;
    Totals totals;

    auto check_fits = [&](size_t n_tokens) {
      if (session.n_past() + static_cast<int64_t>(n_tokens) > session.n_ctx()) {
        throw Error(ErrorCode::kContextOverflow,
                    "the prompt has " + std::to_string(n_tokens) + " tokens, more than the " +
                        std::to_string(session.n_ctx() - session.n_past()) +
                        " left in the context of " + std::to_string(session.n_ctx()));
      }
    };
    auto show_prompt = [&](const std::vector<TokenId>& ids) {
      if (!verbose_prompt) return;
      std::fprintf(stderr, "prompt: %zu tokens\n", ids.size());
      for (TokenId id : ids)
        std::fprintf(stderr, "%6d -> '%s'\n", id, tok.vocab().text[id].c_str());
    };
    auto stream = [&](TokenId, const std::string& text) {
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
      return !g_interrupted.load();
    };

    if (!conversation && !interactive) {
      const auto prompt_ids = tok.encode(prompt, true, parse_special);
      if (prompt_ids.empty()) throw Error(ErrorCode::kInvalidArgument, "the prompt is empty");
      check_fits(prompt_ids.size());
      show_prompt(prompt_ids);
      if (!json) {
        std::fputs(prompt.c_str(), stdout);
        std::fflush(stdout);
        install_sigint();
      }
      const auto result = session.generate(
          prompt_ids, go,
          [&](TokenId id, const std::string& text) { return json ? true : stream(id, text); });
      totals.add(result);
      const std::string stop_reason = result.stop_reason == "callback"      ? "cancelled"
                                      : result.stop_reason == "stop_string" ? "stop"
                                                                            : result.stop_reason;
      if (json) {
        nlohmann::ordered_json j;
        j["prompt_tokens"] = prompt_ids;
        j["tokens"] = result.tokens;
        j["text"] = result.text;
        j["stop_reason"] = stop_reason;
        j["timings"] = {
            {"load_ms", model->load_ms},
            {"prompt_tokens_per_s",
             result.prompt_ms > 0 ? result.prompt_tokens * 1000.0 / result.prompt_ms : 0},
            {"gen_tokens_per_s",
             result.gen_ms > 0 ? result.tokens.size() * 1000.0 / result.gen_ms : 0},
            {"prompt_ms", result.prompt_ms},
            {"gen_ms", result.gen_ms}};
        std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      } else {
        std::fputs("\n", stdout);
        if (stop_reason == "context") std::fprintf(stderr, "%s\n", context_full_message);
        if (stop_reason == "cancelled") std::fprintf(stderr, "interrupted\n");
        totals.print(model->load_ms);
      }
      return 0;
    }

    // Conversation (-cnv) and interactive (-i) modes: turns until /exit, EOF or Ctrl-C at the
    // prompt. A chat turn evaluates only what the template adds after the text already in the
    // KV cache (llama-cli's way): the last sampled token, then the new turn's text.
    install_sigint();
    std::vector<chat::Message> messages;
    if (conversation && !system_prompt.empty()) messages.push_back({"system", system_prompt});
    std::string formatted;  // the conversation as formatted so far (without generation prompt)
    TokenId pending = -1;
    bool first = true;
    std::string user = prompt;
    if (interactive && !prompt.empty()) {
      std::fputs(prompt.c_str(), stdout);
    }
    for (;;) {
      if (!first || user.empty()) {
        std::fputs("\n> ", stdout);
        std::fflush(stdout);
        g_interrupted = false;
        if (!std::getline(std::cin, user) || g_interrupted || user == "/exit") break;
        if (user.empty()) continue;
      }
      std::string text;
      if (conversation) {
        messages.push_back({"user", user});
        const std::string full = chat::apply(template_text, messages, true);
        text = full.starts_with(formatted) ? full.substr(formatted.size()) : full;
      } else {
        text = first ? user : user + "\n";
      }
      std::vector<TokenId> ids =
          tok.encode(text, first, /*parse_special=*/conversation || parse_special);
      if (pending >= 0) ids.insert(ids.begin(), pending);
      if (session.n_past() + static_cast<int64_t>(ids.size()) >= session.n_ctx()) {
        std::fprintf(stderr, "\n%s\n", context_full_message);
        break;
      }
      show_prompt(ids);
      first = false;
      g_interrupted = false;
      const auto result = session.generate(ids, go, stream);
      totals.add(result);
      pending = result.last_sampled;
      if (result.stop_reason == "callback") std::fputs("\n[interrupted]", stdout);
      if (conversation) {
        messages.push_back({"assistant", result.text});
        formatted = chat::apply(template_text, messages, false);
      }
      if (result.stop_reason == "context") {
        std::fprintf(stderr, "\n%s\n", context_full_message);
        break;
      }
    }
    std::fputs("\n", stdout);
    totals.print(model->load_ms);
    return 0;
  });
}
