// qinfer-imatrix: the importance matrix of a model on a text, in llama-imatrix's legacy file
// format (readable by qinfer-quantize --imatrix and by llama-quantize). Per weight matrix, the
// mean square of each input column over every token of every chunk. See docs/quantize.md.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/engine.hpp"
#include "loader/gguf_writer.hpp"
#include "tools/cli.hpp"
#include "tools/tool_common.hpp"

namespace {

using namespace qinfer;

struct Stats {
  std::vector<double> sum_squares;  // per input column
  int64_t rows = 0;                 // input rows seen
  int32_t calls = 0;                // matmul calls (one per chunk)
};

template <typename T>
void put(std::vector<uint8_t>& out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put(out, static_cast<int32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qinfer-imatrix: the importance matrix of a model on a text (llama-imatrix)"};
  std::string model_path, text_path, out_path = "imatrix.dat";
  int64_t n_ctx = 512;
  int n_chunks = -1, n_threads = 0;
  bool process_output = false;
  app.add_option("-m,--model", model_path, "GGUF model")->required()->check(CLI::ExistingFile);
  app.add_option("-f,--file", text_path, "text file")->required()->check(CLI::ExistingFile);
  app.add_option("-o,--output-file", out_path, "where to write it (default imatrix.dat)");
  app.add_option("-c,--ctx-size", n_ctx, "tokens per chunk (default 512)")
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 20));
  app.add_option("--chunks", n_chunks, "chunks to process (default: all)");
  app.add_option("-t,--threads", n_threads, "threads")->check(CLI::Range(1, 1024));
  app.add_flag("--process-output", process_output, "include output.weight");
  tools::parse_command_line(app, argc, argv);
  return tools::run_guarded([&] {
    auto model = engine::Model::load(model_path);
    // Which tensor a weight view is: by its data pointer.
    std::unordered_map<const uint8_t*, std::string> names;
    for (const TensorInfo& t : model->file.tensors()) names[t.data] = t.name;
    for (const engine::Model::Repacked& r : model->repacked) names[r.data] = r.tensor;
    const auto tokens = model->tokenizer->encode(tools::read_file(text_path), true, false);
    const int64_t available = static_cast<int64_t>(tokens.size()) / n_ctx;
    const int64_t chunks = n_chunks < 0 ? available : std::min<int64_t>(n_chunks, available);
    if (chunks < 1) {
      throw Error(ErrorCode::kInvalidArgument, "the text has " + std::to_string(tokens.size()) +
                                                   " tokens, fewer than one chunk of " +
                                                   std::to_string(n_ctx));
    }
    std::map<std::string, Stats> stats;
    engine::Session session(model, {.n_ctx = n_ctx, .n_threads = n_threads});
    session.set_matmul_observer([&](const kernels::MatrixView& w, const float* x, int64_t n) {
      const auto it = names.find(w.data);
      if (it == names.end()) return;  // a slice (an expert), not a whole tensor
      if (!process_output && it->second == "output.weight") return;
      Stats& s = stats[it->second];
      s.sum_squares.resize(static_cast<size_t>(w.n_cols), 0.0);
      for (int64_t r = 0; r < n; ++r) {
        const float* row = x + r * w.n_cols;
        for (int64_t j = 0; j < w.n_cols; ++j) s.sum_squares[j] += double(row[j]) * row[j];
      }
      s.rows += n;
      ++s.calls;
    });
    const auto& vocab = model->tokenizer->vocab();
    const bool add_bos = vocab.add_bos && vocab.bos >= 0;
    const int64_t n_vocab = model->config.n_vocab;
    double nll = 0;
    int64_t count = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      std::vector<TokenId> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
      if (add_bos) chunk[0] = vocab.bos;  // as llama-imatrix and llama-perplexity
      session.reset();
      const auto logits = session.eval_all(chunk);
      for (int64_t i = n_ctx / 2; i < n_ctx - 1; ++i) {  // the PPL it prints, as llama-imatrix
        const float* l = logits.data() + i * n_vocab;
        const float max = *std::max_element(l, l + n_vocab);
        double sum = 0;
        for (int64_t v = 0; v < n_vocab; ++v) sum += std::exp(double(l[v]) - max);
        nll += -(double(l[tokens[c * n_ctx + i + 1]]) - max - std::log(sum));
        ++count;
      }
      std::fprintf(stderr, "[%lld/%lld] ppl %.4f\n", static_cast<long long>(c + 1),
                   static_cast<long long>(chunks), std::exp(nll / count));
    }
    // The legacy file: per entry the name, the call count and per column the mean square
    // times the call count (llama-quantize divides by the calls); then the chunk count and the
    // text's name.
    std::vector<uint8_t> out;
    put(out, static_cast<int32_t>(stats.size()));
    for (const auto& [name, s] : stats) {
      put_string(out, name);
      put(out, s.calls);
      put(out, static_cast<int32_t>(s.sum_squares.size()));
      for (double v : s.sum_squares)
        put(out, static_cast<float>(v / static_cast<double>(s.rows) * s.calls));
    }
    put(out, static_cast<int32_t>(chunks));
    put_string(out, text_path);
    write_file_atomically(out_path, out.data(), out.size());
    std::fprintf(stderr, "%zu matrices, %lld chunks of %lld tokens -> %s\n", stats.size(),
                 static_cast<long long>(chunks), static_cast<long long>(n_ctx), out_path.c_str());
    std::printf("PPL = %.4f\n", std::exp(nll / count));
    return 0;
  });
}
