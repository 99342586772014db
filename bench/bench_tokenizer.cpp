// Tokenizer throughput: 1 MB of a public-domain book (War and Peace, tests/data) through the
// llama (SentencePiece) and gpt-2 (byte-level BPE) vocabularies, in MB/s; and encoding time
// against the length of one long word and of a text, fitted by Google Benchmark's
// complexity report (both should come out near O(N) or O(N log N), not O(N^2)).
#include <benchmark/benchmark.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "loader/gguf.hpp"
#include "tokenizer/tokenizer.hpp"

namespace qinfer {
namespace {

std::string data(const std::string& rel) { return std::string(QINFER_TEST_DATA) + "/" + rel; }

std::string megabyte_of_text() {
  std::ifstream f(data("models/reference/heldout.txt"), std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string book = ss.str();
  std::string text;
  while (text.size() < (1u << 20)) text += book;
  text.resize(1u << 20);
  return text;
}

struct Loaded {
  GgufFile file;
  std::unique_ptr<Tokenizer> tok;
};
const Loaded& vocab(const std::string& name) {
  static std::map<std::string, Loaded> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    GgufFile f = GgufFile::open(data("vocab/" + name));
    auto t = Tokenizer::from_gguf(f);
    it = cache.emplace(name, Loaded{std::move(f), std::move(t)}).first;
  }
  return it->second;
}

void BM_Encode1MB(benchmark::State& state, const std::string& name) {
  const Tokenizer& tok = *vocab(name).tok;
  const std::string text = megabyte_of_text();
  size_t n = 0;
  for (auto _ : state) n = tok.encode(text, false).size();
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["tokens"] = static_cast<double>(n);
}

void BM_LongWord(benchmark::State& state, const std::string& name) {
  const Tokenizer& tok = *vocab(name).tok;
  std::string word;
  const char* letters = "abcdefghijklmnopqrstuvwxyz";
  for (int64_t i = 0; i < state.range(0); ++i) word += letters[(i * 7 + i / 26) % 26];
  for (auto _ : state) benchmark::DoNotOptimize(tok.encode(word, false));
  state.SetComplexityN(state.range(0));
}

void register_all() {
  for (const char* v : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"}) {
    benchmark::RegisterBenchmark((std::string("encode_1MB/") + v).c_str(), BM_Encode1MB, v)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("long_word/") + v).c_str(), BM_LongWord, v)
        ->RangeMultiplier(4)
        ->Range(1 << 8, 1 << 16)
        ->Complexity();
  }
}

}  // namespace
}  // namespace qinfer

int main(int argc, char** argv) {
  qinfer::register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
