// qinfer-perplexity: llama.cpp's method. The text is cut into chunks of CTX tokens (BOS
// first when the vocabulary adds one); each chunk is evaluated from an empty cache and only
// the second half of its positions is scored. Last stdout line: PPL = <value>.
#include <cmath>
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>

#include "engine/engine.hpp"
#include "tools/cli.hpp"
#include "tools/tool_common.hpp"

int main(int argc, char** argv) {
  using namespace qinfer;
  CLI::App app{"qinfer-perplexity: perplexity of a model on a text"};
  std::string model_path, text_path;
  int64_t n_ctx = 512;
  int n_chunks = -1, n_threads = 0;
  app.add_option("-m,--model", model_path, "GGUF model")->required()->check(CLI::ExistingFile);
  app.add_option("-f,--file", text_path, "text file")->required()->check(CLI::ExistingFile);
  app.add_option("-c,--ctx-size", n_ctx, "tokens per chunk")
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 20));
  app.add_option("--chunks", n_chunks, "chunks to score (default: all)");
  app.add_option("-t,--threads", n_threads, "threads")->check(CLI::Range(1, 1024));
  tools::parse_command_line(app, argc, argv);
  return tools::run_guarded([&] {
    const std::string text = tools::read_file(text_path);
    auto model = engine::Model::load(model_path);
    const auto& vocab = model->tokenizer->vocab();
    const bool add_bos = vocab.add_bos && vocab.bos >= 0;
    // Like llama.cpp: the whole text is tokenized with BOS, then cut into chunks.
    const auto tokens = model->tokenizer->encode(text, true, false);
    const int64_t available = static_cast<int64_t>(tokens.size()) / n_ctx;
    const int64_t chunks = n_chunks < 0 ? available : std::min<int64_t>(n_chunks, available);
    if (chunks < 1) {
      throw Error(ErrorCode::kInvalidArgument, "the text has " + std::to_string(tokens.size()) +
                                                   " tokens, fewer than one chunk of " +
                                                   std::to_string(n_ctx));
    }
    engine::Session session(model, {.n_ctx = n_ctx, .n_threads = n_threads});
    const int64_t n_vocab = model->config.n_vocab;
    const int64_t first = n_ctx / 2;  // score positions first .. n_ctx-2 (predicting the next)
    double nll = 0;
    int64_t count = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      std::vector<TokenId> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
      if (add_bos) chunk[0] = vocab.bos;  // llama.cpp replaces the first token with BOS
      session.reset();
      const auto logits = session.eval_all(chunk);
      for (int64_t i = first; i < n_ctx - 1; ++i) {
        const float* l = logits.data() + i * n_vocab;
        const float max = *std::max_element(l, l + n_vocab);
        double sum = 0;
        for (int64_t v = 0; v < n_vocab; ++v) sum += std::exp(double(l[v]) - max);
        nll += -(double(l[tokens[c * n_ctx + i + 1]]) - max - std::log(sum));
        ++count;
      }
      std::fprintf(stderr, "[%lld/%lld] ppl so far %.4f\n", static_cast<long long>(c + 1),
                   static_cast<long long>(chunks), std::exp(nll / count));
    }
    std::printf("PPL = %.4f\n", std::exp(nll / count));
    return 0;
  });
}
