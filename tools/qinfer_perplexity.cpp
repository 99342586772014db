// qinfer-perplexity: llama.cpp's method. The text is cut into chunks of CTX tokens (BOS
// first when the vocabulary adds one); each chunk is evaluated from an empty cache and only
// the second half of its positions is scored. Last stdout line: PPL = <value> +/- <error>.
// --kl-divergence-base FILE saves the scored positions' log-probabilities; --kl-divergence
// with that file compares another model (a quantization) against them (docs/quantize.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <CLI/CLI.hpp>

#include "engine/engine.hpp"
#include "loader/gguf_writer.hpp"
#include "tools/cli.hpp"
#include "tools/tool_common.hpp"

namespace {

using namespace qinfer;

constexpr char kMagic[8] = {'Q', 'I', 'K', 'L', 'D', '1', 0, 0};

// The log-softmax of one row of logits.
void log_softmax(const float* l, int64_t n, std::vector<float>& out) {
  const float max = *std::max_element(l, l + n);
  double sum = 0;
  for (int64_t v = 0; v < n; ++v) sum += std::exp(double(l[v]) - max);
  const double log_sum = std::log(sum);
  out.resize(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) out[v] = static_cast<float>(double(l[v]) - max - log_sum);
}

struct KldStats {
  std::vector<double> kld;
  int64_t same_top = 0;
  double nll_base = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qinfer-perplexity: perplexity of a model on a text, and KL divergence"};
  std::string model_path, text_path, kld_base_path, cache_k = "f16", cache_v = "f16";
  int64_t n_ctx = 512;
  int n_chunks = -1, n_threads = 0, n_batch = 2048;
  bool kld = false;
  app.add_option("-m,--model", model_path, "GGUF model")->required()->check(CLI::ExistingFile);
  app.add_option("-f,--file", text_path, "text file")->check(CLI::ExistingFile);
  app.add_option("-c,--ctx-size", n_ctx, "tokens per chunk")
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 20));
  app.add_option("--chunks", n_chunks, "chunks to score (default: all)");
  app.add_option("-t,--threads", n_threads, "threads")->check(CLI::Range(1, 1024));
  app.add_option("-b,--batch-size", n_batch, "tokens evaluated per pass (default 2048)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--kl-divergence-base", kld_base_path,
                 "with -f: save the log-probabilities to FILE; with --kl-divergence: read them");
  app.add_flag("--kl-divergence", kld,
               "compare this model against --kl-divergence-base FILE (the text and chunks "
               "come from the file)");
  app.add_option("--cache-type-k", cache_k, "K cache type: f32, f16, bf16, q8_0, q4_0 (-ctk)");
  app.add_option("--cache-type-v", cache_v, "V cache type: f32, f16, bf16, q8_0, q4_0 (-ctv)");
  tools::parse_command_line(app, argc, argv,
                            {{"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"}});
  return tools::run_guarded([&] {
    if (kld && kld_base_path.empty())
      throw Error(ErrorCode::kInvalidArgument, "--kl-divergence needs --kl-divergence-base FILE");
    if (!kld && text_path.empty())
      throw Error(ErrorCode::kInvalidArgument, "give the text with -f (or --kl-divergence)");
    auto model = engine::Model::load(model_path);
    const int64_t n_vocab = model->config.n_vocab;
    std::vector<TokenId> tokens;
    int64_t chunks = 0;
    std::ifstream base;
    if (kld) {  // the base file gives the tokens
      base.open(kld_base_path, std::ios::binary);
      char magic[8];
      uint32_t head[3];
      if (!base.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 ||
          !base.read(reinterpret_cast<char*>(head), sizeof head))
        throw Error(ErrorCode::kInvalidFile, kld_base_path + ": not a --kl-divergence-base file");
      n_ctx = head[0];
      chunks = head[2];
      if (static_cast<int64_t>(head[1]) != n_vocab)
        throw Error(ErrorCode::kInvalidArgument, kld_base_path + " has a vocabulary of " +
                                                     std::to_string(head[1]) + ", this model " +
                                                     std::to_string(n_vocab));
      if (n_chunks >= 0) chunks = std::min<int64_t>(chunks, n_chunks);
      tokens.resize(static_cast<size_t>(head[2] * n_ctx));
      if (!base.read(reinterpret_cast<char*>(tokens.data()),
                     static_cast<std::streamsize>(tokens.size() * sizeof(TokenId))))
        throw Error(ErrorCode::kInvalidFile, kld_base_path + ": truncated");
    } else {
      // Like llama.cpp: the whole text is tokenized with BOS, then cut into chunks.
      tokens = model->tokenizer->encode(tools::read_file(text_path), true, false);
      const int64_t available = static_cast<int64_t>(tokens.size()) / n_ctx;
      chunks = n_chunks < 0 ? available : std::min<int64_t>(n_chunks, available);
      if (chunks < 1) {
        throw Error(ErrorCode::kInvalidArgument, "the text has " + std::to_string(tokens.size()) +
                                                     " tokens, fewer than one chunk of " +
                                                     std::to_string(n_ctx));
      }
    }
    const auto& vocab = model->tokenizer->vocab();
    const bool add_bos = vocab.add_bos && vocab.bos >= 0;
    std::vector<uint8_t> base_out;  // written at the end, atomically
    if (!kld && !kld_base_path.empty()) {
      const uint32_t head[3] = {static_cast<uint32_t>(n_ctx), static_cast<uint32_t>(n_vocab),
                                static_cast<uint32_t>(chunks)};
      base_out.insert(base_out.end(), kMagic, kMagic + 8);
      base_out.insert(base_out.end(), reinterpret_cast<const uint8_t*>(head),
                      reinterpret_cast<const uint8_t*>(head + 3));
      base_out.insert(base_out.end(), reinterpret_cast<const uint8_t*>(tokens.data()),
                      reinterpret_cast<const uint8_t*>(tokens.data() + chunks * n_ctx));
    }
    engine::Session session(model, {.n_ctx = n_ctx,
                                    .cache_k = KvCache::parse_type(cache_k),
                                    .cache_v = KvCache::parse_type(cache_v),
                                    .n_threads = n_threads});
    const int64_t first = n_ctx / 2;  // score positions first .. n_ctx-2 (predicting the next)
    double nll = 0, nll2 = 0;
    int64_t count = 0;
    KldStats ks;
    std::vector<float> lp, lp_base(static_cast<size_t>(n_vocab));
    for (int64_t c = 0; c < chunks; ++c) {
      std::vector<TokenId> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
      if (add_bos) chunk[0] = vocab.bos;  // llama.cpp replaces the first token with BOS
      session.reset();
      std::vector<float> logits;
      for (int64_t at = 0; at < n_ctx; at += n_batch) {  // -b tokens per pass
        const int64_t n = std::min<int64_t>(n_batch, n_ctx - at);
        const auto part = session.eval_all(std::span<const TokenId>(chunk.data() + at, n));
        logits.insert(logits.end(), part.begin(), part.end());
      }
      for (int64_t i = first; i < n_ctx - 1; ++i) {
        log_softmax(logits.data() + i * n_vocab, n_vocab, lp);
        const TokenId next = tokens[c * n_ctx + i + 1];
        const double x = -double(lp[next]);
        nll += x;
        nll2 += x * x;
        ++count;
        if (!base_out.empty()) {
          base_out.insert(base_out.end(), reinterpret_cast<const uint8_t*>(lp.data()),
                          reinterpret_cast<const uint8_t*>(lp.data() + n_vocab));
        }
        if (kld) {
          if (!base.read(reinterpret_cast<char*>(lp_base.data()),
                         static_cast<std::streamsize>(n_vocab * sizeof(float))))
            throw Error(ErrorCode::kInvalidFile, kld_base_path + ": truncated");
          double d = 0;
          for (int64_t v = 0; v < n_vocab; ++v) {
            const double pb = std::exp(double(lp_base[v]));
            d += pb * (double(lp_base[v]) - double(lp[v]));
          }
          ks.kld.push_back(std::max(0.0, d));
          ks.nll_base += -double(lp_base[next]);
          const auto top = [&](const std::vector<float>& v) {
            return std::max_element(v.begin(), v.end()) - v.begin();
          };
          if (top(lp) == top(lp_base)) ++ks.same_top;
        }
      }
      std::fprintf(stderr, "[%lld/%lld] ppl so far %.4f\n", static_cast<long long>(c + 1),
                   static_cast<long long>(chunks), std::exp(nll / count));
    }
    const double mean = nll / count;
    const double var = count > 1 ? std::max(0.0, (nll2 / count - mean * mean)) / (count - 1) : 0;
    const double ppl = std::exp(mean);
    if (!base_out.empty()) {
      write_file_atomically(kld_base_path, base_out.data(), base_out.size());
      std::fprintf(stderr, "saved %lld positions' log-probabilities to %s\n",
                   static_cast<long long>(count), kld_base_path.c_str());
    }
    if (kld) {
      std::vector<double>& v = ks.kld;
      double sum = 0, sum2 = 0;
      for (double x : v) sum += x, sum2 += x * x;
      const double n = static_cast<double>(v.size());
      const double kmean = sum / n;
      const double kerr = n > 1 ? std::sqrt(std::max(0.0, sum2 / n - kmean * kmean) / (n - 1)) : 0;
      std::sort(v.begin(), v.end());
      const auto pct = [&](double p) {
        return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
      };
      const double ppl_base = std::exp(ks.nll_base / n);
      std::printf("PPL(base) = %.4f\n", ppl_base);
      std::printf("PPL ratio = %.6f\n", ppl / ppl_base);
      std::printf("Mean KLD = %.6f +/- %.6f\n", kmean, kerr);
      std::printf("Max KLD = %.6f\n", v.back());
      std::printf("99.9%% KLD = %.6f\n", pct(0.999));
      std::printf("Median KLD = %.6f\n", pct(0.5));
      std::printf("Same top token = %.3f%%\n", 100.0 * static_cast<double>(ks.same_top) / n);
    }
    std::printf("PPL = %.4f +/- %.5f\n", ppl, ppl * std::sqrt(var));
    return 0;
  });
}
