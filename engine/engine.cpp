#include "engine/engine.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <limits>
#include <fstream>
#include <numeric>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include <unistd.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "kernels/huge_pages.hpp"
#include "kernels/pack.hpp"
#include "kernels/repack.hpp"
#include "kernels/threads.hpp"
#include "qinfer/error.hpp"
#include "qinfer/qinfer.hpp"

namespace qinfer::engine {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
}  // namespace

int physical_cores() {
  std::ifstream f("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, physical = "0";
  while (std::getline(f, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "physical id") physical = value;
    if (key == "core id") cores.emplace(physical, value);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  return std::max(1u, std::thread::hardware_concurrency());
}

int max_threads() {
  return 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                               : UINT64_MAX;
}

namespace {
// A layer's dense projections (absent ones have data == nullptr), for a const or a mutable
// layer: the matrices the loader may re-lay, and most of what a token reads.
template <typename Layer>
auto projections(Layer& l) {
  return std::array{&l.attn_q,   &l.attn_k,   &l.attn_v, &l.attn_qkv,
                    &l.attn_out, &l.ffn_gate, &l.ffn_up, &l.ffn_down};
}

// f(bytes, share) for each weight matrix a generated token reads, in the layout the loader
// chose (a packed matrix's copy): its bytes, and the share of them a token reads (an MoE
// layer's experts n_expert_used / n_expert, every other matrix 1).
template <typename F>
void each_token_weight(const Model& m, F&& f) {
  auto visit = [&](const kernels::MatrixView& v, double share) {
    if (v.data == nullptr) return;
    const bool packed = v.packed != nullptr;
    const size_t row = packed ? v.packed_row_bytes : v.row_bytes;
    f(std::span<const uint8_t>(packed ? v.packed : v.data, row * static_cast<size_t>(v.n_rows)),
      share);
  };
  const ModelConfig& c = m.config;
  const double used = c.n_expert > 0 ? static_cast<double>(c.n_expert_used) / c.n_expert : 0.0;
  visit(m.weights.output, 1.0);
  for (const LayerWeights& l : m.weights.layers) {
    for (const kernels::MatrixView* v : projections(l)) visit(*v, 1.0);
    visit(l.ffn_router, 1.0);
    for (const kernels::MatrixView* v : {&l.ffn_gate_exps, &l.ffn_up_exps, &l.ffn_down_exps})
      visit(*v, used);
  }
}
}  // namespace

uint64_t token_weight_bytes(const Model& m) {
  double total = 0.0;
  each_token_weight(m, [&](std::span<const uint8_t> bytes, double share) {
    total += share * static_cast<double>(bytes.size());
  });
  return static_cast<uint64_t>(std::llround(total));
}

std::vector<std::span<const uint8_t>> token_weight_ranges(const Model& m) {
  std::vector<std::span<const uint8_t>> ranges;
  each_token_weight(m, [&](std::span<const uint8_t> bytes, double) { ranges.push_back(bytes); });
  return ranges;
}

namespace {

// The width of the column tiles for long rows (kernels/repack.hpp): kernels::kTileCols, or
// QINFER_TILE_COLS (a multiple of 512; 0 keeps every row whole), which the tests use to tile
// the small models' matrices.
int64_t tile_width() {
  const char* env = std::getenv("QINFER_TILE_COLS");
  if (env == nullptr || *env == '\0') return kernels::kTileCols;
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  if (*end != '\0' || v < 0 || v % 512 != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("QINFER_TILE_COLS: not 0 or a multiple of 512: ") + env);
  }
  return v;
}

// Re-codes TQ1_0 matrices as TQ2_0 (kernels/pack.hpp), then interleaves every matrix the
// active kernels have an interleaved gemv for (kernels/repack.hpp) and packs a copy of those
// they have a packed gemv for (kernels/pack.hpp), except matrices also read a row at a time
// (the token embedding, and the output when tied to it) and slices of a larger tensor
// (experts). Every other matrix is copied as it is, for the huge pages alone (within a memory
// budget, below). The copies are planned first, so that one buffer holds them all.
void repack_weights(Model& m) {
  const char* off = std::getenv("QINFER_NO_REPACK");
  if (off != nullptr && *off != '\0' && *off != '0') return;
  const kernels::KernelTable& k = kernels::active();
  const int64_t tile_cols = tile_width();
  std::vector<kernels::MatrixView*> views;
  if (m.weights.output.data != m.weights.token_embd.data) views.push_back(&m.weights.output);
  for (LayerWeights& l : m.weights.layers) {
    for (kernels::MatrixView* v : projections(l)) views.push_back(v);
  }
  enum class How { kTq2, kPack, kInterleave, kCopy };
  struct Plan {
    kernels::MatrixView* v;
    const TensorInfo* tensor;  // the file's
    How how;
    size_t out_row, offset = 0;
    int64_t tile_cols = 0;  // kInterleave and kCopy: in column tiles this wide (0: not)
    size_t bytes() const { return (out_row * static_cast<size_t>(v->n_rows) + 63) / 64 * 64; }
  };
  std::vector<Plan> plans;
  for (kernels::MatrixView* v : views) {
    if (v->data == nullptr || v->interleaved || v->packed != nullptr) continue;
    const size_t size = v->row_bytes * static_cast<size_t>(v->n_rows);
    const TensorInfo* tensor = nullptr;
    for (const TensorInfo& t : m.file.tensors())
      if (t.data == v->data && t.size_bytes == size) tensor = &t;
    if (tensor == nullptr) continue;     // a slice of a larger tensor: keep its layout
    if (v->type == TensorType::TQ1_0) {  // TQ2_0's kernels read 2-bit codes faster (docs)
      plans.push_back({v, tensor, How::kTq2, row_size_bytes(TensorType::TQ2_0, v->n_cols)});
      continue;
    }
    const kernels::TypeKernels& tk = k.types[static_cast<uint32_t>(v->type)];
    // An interleaved matrix needs the gemv's kernel and the GEMM's in-place decoder.
    const bool interleave = tk.vec_dot_interleaved != nullptr &&
                            k.gemm_decode_interleaved[static_cast<uint32_t>(v->type)] != nullptr &&
                            kernels::can_interleave(v->type, v->n_rows, v->n_cols);
    if (tk.vec_dot_packed != nullptr && kernels::can_pack(v->type, v->n_cols)) {
      plans.push_back({v, tensor, How::kPack, kernels::packed_row_bytes(v->type, v->n_cols)});
    } else {
      // Long rows in column tiles (kernels/repack.hpp).
      const bool tiled =
          kernels::tiles_for(k, v->type, v->n_rows, v->n_cols, interleave, tile_cols);
      plans.push_back({v, tensor, interleave ? How::kInterleave : How::kCopy, v->row_bytes, 0,
                       tiled ? tile_cols : 0});
    }
  }
  // The plain copies (kCopy) only buy the huge pages, and the packed ones (kPack) are larger
  // than the file's blocks. They are dropped, plain copies first, each kind largest first,
  // while all the copies would take more than half the machine's memory: the file's mapped
  // pages can be paged out under pressure, a copy cannot.
  auto droppable = [](const Plan& p) {
    return p.how == How::kCopy ? 2 : p.how == How::kPack ? 1 : 0;
  };
  size_t total = 0;
  for (const Plan& p : plans) total += p.bytes();
  std::stable_sort(plans.begin(), plans.end(), [&](const Plan& a, const Plan& b) {
    return std::pair(droppable(a), a.bytes()) > std::pair(droppable(b), b.bytes());
  });
  const uint64_t budget = physical_memory_bytes() / 2;
  size_t first = 0;
  while (first < plans.size() && droppable(plans[first]) > 0 && total > budget)
    total -= plans[first++].bytes();
  plans.erase(plans.begin(), plans.begin() + static_cast<std::ptrdiff_t>(first));
  if (plans.empty()) return;
  size_t offset = 0;
  for (Plan& p : plans) {  // each on its own 64-byte line, where the gemvs' units align
    p.offset = offset;
    offset += (p.bytes() + 63) / 64 * 64;
  }
  m.repack_buffer = kernels::huge_buffer(offset);  // one buffer, on huge pages
  for (const Plan& p : plans) {
    kernels::MatrixView* v = p.v;
    uint8_t* out = m.repack_buffer.get() + p.offset;
    switch (p.how) {
      case How::kTq2:
        kernels::tq1_0_to_tq2_0(v->data, v->row_bytes, v->n_rows, v->n_cols, out);
        *v = {TensorType::TQ2_0, out, v->n_rows, v->n_cols, p.out_row};
        break;
      case How::kPack:
        kernels::pack(v->type, v->data, v->row_bytes, v->n_rows, v->n_cols, out);
        v->packed = out;
        v->packed_row_bytes = p.out_row;
        break;
      case How::kInterleave:
      case How::kCopy: {
        const bool inter = p.how == How::kInterleave;
        if (p.tile_cols > 0) {
          kernels::tile(v->type, v->data, v->row_bytes, v->n_rows, v->n_cols, p.tile_cols, inter,
                        out);
        } else if (inter) {
          kernels::interleave(v->type, v->data, v->row_bytes, v->n_rows, v->n_cols, out);
        } else {
          const uint8_t* from = v->data;
          const size_t row_bytes = v->row_bytes;
          kernels::parallel([&](kernels::Team& team) {  // the page faults split too
            const auto [r0, r1] = team.share(v->n_rows);
            std::memcpy(out + r0 * row_bytes, from + r0 * row_bytes,
                        static_cast<size_t>(r1 - r0) * row_bytes);
          });
        }
        v->data = out;
        v->interleaved = inter;
        v->tile_cols = p.tile_cols;
        break;
      }
    }
    m.repacked.push_back({p.tensor->name, out});
    // Nothing reads the file's blocks of a copied matrix any more (a packed one's GEMM reads
    // the packed rows too), so its pages leave the process as soon as it is copied: the model
    // sits in memory once, not twice (docs/kernels.md, "The file's pages after a copy").
    m.file.drop_pages(*p.tensor);
  }
  // Once more at the end: a read fault maps the cached pages around it too (fault-around), so
  // the next matrices' copies had mapped some of the dropped pages again.
  for (const Plan& p : plans) m.file.drop_pages(*p.tensor);
}

}  // namespace

std::shared_ptr<const Model> Model::load(const std::string& path, const OpenOptions& options) {
  const auto t0 = Clock::now();
  auto m = from_file(GgufFile::open(path, options));
  m->load_ms = ms_since(t0);
  return m;
}

std::shared_ptr<Model> Model::from_file(GgufFile file) {
  const auto t0 = Clock::now();
  const std::string path = file.path();
  auto m = std::make_shared<Model>(Model{std::move(file), {}, {}, nullptr, 0, {}});
  m->config = ModelConfig::from_gguf(m->file);
  m->weights = bind_weights(m->file, m->config);
  repack_weights(*m);
  m->tokenizer = Tokenizer::from_gguf(m->file);
  if (m->tokenizer->n_vocab() != m->config.n_vocab) {
    throw Error(ErrorCode::kInvalidFile,
                path + ": the vocabulary has " + std::to_string(m->tokenizer->n_vocab()) +
                    " tokens but token_embd has " + std::to_string(m->config.n_vocab) + " rows");
  }
  m->load_ms = ms_since(t0);
  return m;
}

TokenId Sampler::sample(std::span<const float> logits, std::span<const TokenId> history) {
  const auto n = static_cast<int32_t>(logits.size());
  const bool penalties =
      p_.repeat_penalty != 1.0f || p_.frequency_penalty != 0.0f || p_.presence_penalty != 0.0f;
  if (p_.temperature <= 0.0f && p_.logit_bias.empty() && (!penalties || p_.repeat_last_n == 0))
    return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<float>& l = logits_;
  l.assign(logits.begin(), logits.end());
  for (const auto& [id, bias] : p_.logit_bias) {
    if (id >= 0 && id < n) l[id] += bias;
  }
  if (penalties && p_.repeat_last_n != 0) {
    const size_t window =
        p_.repeat_last_n < 0 ? history.size() : std::min<size_t>(history.size(), p_.repeat_last_n);
    std::map<TokenId, int> seen;
    for (auto it = history.end() - static_cast<std::ptrdiff_t>(window); it != history.end(); ++it)
      ++seen[*it];
    for (const auto& [id, count] : seen) {
      if (id < 0 || id >= n) continue;
      l[id] = l[id] > 0 ? l[id] / p_.repeat_penalty : l[id] * p_.repeat_penalty;
      l[id] -= static_cast<float>(count) * p_.frequency_penalty + p_.presence_penalty;
    }
  }
  if (p_.temperature <= 0.0f) {
    return static_cast<TokenId>(std::max_element(l.begin(), l.end()) - l.begin());
  }
  // Candidates sorted by logit, highest first (ties: lower id first); top-k by a partial sort.
  std::vector<TokenId>& cand = cand_;
  cand.resize(static_cast<size_t>(n));
  std::iota(cand.begin(), cand.end(), 0);
  auto by_logit = [&](TokenId a, TokenId b) { return l[a] > l[b] || (l[a] == l[b] && a < b); };
  size_t keep = cand.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < keep) keep = p_.top_k;
  std::partial_sort(cand.begin(), cand.begin() + keep, cand.end(), by_logit);
  cand.resize(keep);
  std::vector<double>& p = prob_;
  auto softmax = [&](float temp) {
    p.resize(cand.size());
    double sum = 0;
    for (size_t i = 0; i < cand.size(); ++i)
      sum += p[i] = std::exp((l[cand[i]] - l[cand[0]]) / temp);
    for (double& x : p) x /= sum;
  };
  softmax(1.0f);
  if (p_.top_p < 1.0f) {
    double cum = 0;
    size_t i = 0;
    for (; i < p.size(); ++i) {
      cum += p[i];
      if (cum >= p_.top_p) break;
    }
    cand.resize(std::min(p.size(), i + 1));
    p.resize(cand.size());
  }
  if (p_.min_p > 0.0f) {
    size_t i = 1;
    while (i < p.size() && p[i] >= p_.min_p * p[0]) ++i;
    cand.resize(i);
  }
  softmax(p_.temperature);
  const double r = std::generate_canonical<double, 53>(rng_);
  double cum = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    cum += p[i];
    if (r < cum) return cand[i];
  }
  return cand.back();
}

namespace {

int checked_threads(int n) {
  if (n < 0 || n > max_threads()) {
    throw Error(ErrorCode::kInvalidArgument,
                "thread count " + std::to_string(n) + " is outside 0.." +
                    std::to_string(max_threads()) + " (4x this machine's " +
                    std::to_string(max_threads() / 4) + " logical cores)");
  }
  return n > 0 ? n : physical_cores();
}

int64_t checked_context(const ModelConfig& c, int64_t n_ctx) {
  if (n_ctx < 0)
    throw Error(ErrorCode::kInvalidArgument, "negative context size " + std::to_string(n_ctx));
  if (n_ctx == 0) return c.n_ctx_train;
  if (!c.uses_rope() && n_ctx > c.n_ctx_train) {
    throw Error(ErrorCode::kContextOverflow,
                "context " + std::to_string(n_ctx) + " is longer than " + c.arch_name + "'s " +
                    std::to_string(c.n_ctx_train) + " learned positions");
  }
  return n_ctx;
}

// OpenMP's thread count for the duration of one call, restored afterwards so that a
// session's setting never leaks into the host's own OpenMP code.
class ThreadScope {
 public:
  explicit ThreadScope(int n) {
#if defined(_OPENMP)
    previous_ = omp_get_max_threads();
    omp_set_num_threads(n);
#else
    (void)n;
#endif
  }
  ~ThreadScope() {
#if defined(_OPENMP)
    omp_set_num_threads(previous_);
#endif
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int previous_ = 1;
};

}  // namespace

Session::Session(std::shared_ptr<const Model> model, const SessionOptions& options)
    : model_(std::move(model)),
      cache_(model_->config, checked_context(model_->config, options.n_ctx), options.cache_k,
             options.cache_v),
      forward_(model_->config, model_->weights),
      kernels_(kernels::active()),
      n_threads_(checked_threads(options.n_threads)) {}

void Session::forward(std::span<const TokenId> tokens, ForwardOutput output,
                      std::vector<float>& out) {
  ThreadScope threads(n_threads_);
  try {
    forward_.run(kernels_, tokens.data(), static_cast<int64_t>(tokens.size()), n_past_, cache_,
                 output, out, &cancel_);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kCancelled) cancel_.store(false);
    throw;
  }
  n_past_ += static_cast<int64_t>(tokens.size());
  history_.insert(history_.end(), tokens.begin(), tokens.end());
}

const std::vector<float>& Session::eval(std::span<const TokenId> tokens) {
  forward(tokens, ForwardOutput::kLastLogits, logits_);
  return logits_;
}

void Session::eval_batch(std::span<Session* const> sessions,
                         std::span<const std::vector<TokenId>> tokens) {
  if (sessions.empty() || sessions.size() != tokens.size())
    throw Error(ErrorCode::kInvalidArgument, "eval_batch needs one token list per session");
  Session& lead = *sessions[0];
  std::vector<TokenId> all;
  std::vector<ForwardSegment> segments;
  for (size_t i = 0; i < sessions.size(); ++i) {
    Session& s = *sessions[i];
    if (s.model_ != lead.model_)
      throw Error(ErrorCode::kInvalidArgument, "eval_batch: the sessions are on different models");
    if (std::find(sessions.begin(), sessions.begin() + i, &s) != sessions.begin() + i)
      throw Error(ErrorCode::kInvalidArgument, "eval_batch: a session is listed twice");
    segments.push_back({&s.cache_, s.n_past_, static_cast<int64_t>(tokens[i].size())});
    all.insert(all.end(), tokens[i].begin(), tokens[i].end());
  }
  std::vector<float> out;
  {
    ThreadScope threads(lead.n_threads_);
    lead.forward_.run_batch(lead.kernels_, all.data(), segments, ForwardOutput::kLastLogits, out);
  }
  const auto n_vocab = static_cast<size_t>(lead.model_->config.n_vocab);
  for (size_t i = 0; i < sessions.size(); ++i) {
    Session& s = *sessions[i];
    s.n_past_ += static_cast<int64_t>(tokens[i].size());
    s.history_.insert(s.history_.end(), tokens[i].begin(), tokens[i].end());
    s.logits_.assign(out.begin() + static_cast<std::ptrdiff_t>(i * n_vocab),
                     out.begin() + static_cast<std::ptrdiff_t>((i + 1) * n_vocab));
  }
}

std::vector<float> Session::eval_all(std::span<const TokenId> tokens) {
  std::vector<float> all;
  forward(tokens, ForwardOutput::kAllLogits, all);
  const auto n_vocab = static_cast<size_t>(model_->config.n_vocab);
  logits_.assign(all.end() - n_vocab, all.end());
  return all;
}

std::vector<float> Session::eval_hidden(std::span<const TokenId> tokens) {
  std::vector<float> hidden;
  forward(tokens, ForwardOutput::kHidden, hidden);
  logits_.clear();
  return hidden;
}

std::vector<float> Session::embed(std::span<const TokenId> tokens, Pooling pooling,
                                  bool normalize) {
  if (tokens.empty()) throw Error(ErrorCode::kInvalidArgument, "no tokens to embed");
  reset();
  std::vector<float> hidden;
  try {
    hidden = eval_hidden(tokens);
  } catch (...) {
    reset();
    throw;
  }
  reset();
  const auto E = static_cast<size_t>(model_->config.n_embd);
  const size_t n = tokens.size();
  std::vector<float> out(E, 0.0f);
  if (pooling == Pooling::kLast) {
    std::copy(hidden.end() - static_cast<std::ptrdiff_t>(E), hidden.end(), out.begin());
  } else {
    for (size_t t = 0; t < n; ++t)
      for (size_t i = 0; i < E; ++i) out[i] += hidden[t * E + i];
    for (float& v : out) v /= static_cast<float>(n);
  }
  if (normalize) {
    double sum = 0;
    for (float v : out) sum += static_cast<double>(v) * v;
    const float inv = sum > 0 ? static_cast<float>(1.0 / std::sqrt(sum)) : 0.0f;
    for (float& v : out) v *= inv;
  }
  return out;
}

void Session::reset() {
  n_past_ = 0;
  history_.clear();
  logits_.clear();
}

void Session::truncate(int64_t n) {
  if (n < 0 || n > n_past_) {
    throw Error(ErrorCode::kInvalidArgument, "cannot truncate to " + std::to_string(n) +
                                                 " positions: the session holds " +
                                                 std::to_string(n_past_));
  }
  n_past_ = n;
  history_.resize(static_cast<size_t>(n));
  logits_.clear();
}

void Session::set_threads(int n_threads) { n_threads_ = checked_threads(n_threads); }

GenerateResult Session::generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                                 const TokenCallback& on_token) {
  GenerateResult r;
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  if (prompt.empty() && logits_.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "generate needs a prompt of at least one token");
  }
  if (n_past_ + static_cast<int64_t>(prompt.size()) > cache_.n_ctx()) {
    throw Error(ErrorCode::kContextOverflow, "the prompt (" + std::to_string(prompt.size()) +
                                                 " tokens) does not fit in the context of " +
                                                 std::to_string(cache_.n_ctx()) + " tokens (" +
                                                 std::to_string(n_past_) + " in use)");
  }
  // The cache grows with use; say before any work whether what this call may need fits.
  const int64_t may_need = std::min<int64_t>(
      cache_.n_ctx(), n_past_ + static_cast<int64_t>(prompt.size()) +
                          (options.max_tokens < 0 ? cache_.n_ctx() : options.max_tokens));
  if (cache_.bytes_for(may_need) > physical_memory_bytes()) {
    throw Error(ErrorCode::kInvalidArgument,
                "a context of " + std::to_string(may_need) + " tokens needs " +
                    std::to_string(cache_.bytes_for(may_need) >> 20) +
                    " MiB of KV cache, more than this machine's " +
                    std::to_string(physical_memory_bytes() >> 20) + " MiB");
  }
  auto t0 = Clock::now();
  if (!prompt.empty()) {
    try {
      eval(prompt);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kCancelled) throw;
      r.stop_reason = "cancelled";
      r.prompt_ms = ms_since(t0);
      return r;
    }
  }
  r.prompt_ms = ms_since(t0);
  t0 = Clock::now();
  const Tokenizer& tok = *model_->tokenizer;
  SamplerParams sp = options.sampler;
  if (options.ignore_eos) {
    for (TokenId id = 0; id < static_cast<TokenId>(logits_.size()); ++id)
      if (tok.is_end_of_generation(id)) sp.logit_bias.emplace_back(id, -INFINITY);
  }
  Sampler sampler(sp);
  Utf8Stream stream;
  r.stop_reason = "length";
  // max_tokens < 0: until the context is full (the loop's context check ends it).
  const int64_t max_tokens =
      options.max_tokens < 0 ? std::numeric_limits<int64_t>::max() : options.max_tokens;
  for (int64_t i = 0; i < max_tokens; ++i) {
    const TokenId id = sampler.sample(logits_, history_);
    r.last_sampled = id;
    if (tok.is_end_of_generation(id)) {
      r.stop_reason = "eos";
      break;
    }
    r.tokens.push_back(id);
    const std::string piece = stream.push(tok.piece(id));
    r.text += piece;
    bool stop = false;
    for (const std::string& s : options.stop_strings) {
      const size_t at = s.empty() ? std::string::npos : r.text.find(s);
      if (at != std::string::npos) {
        r.text.resize(at);
        r.stop_reason = "stop_string";
        stop = true;
      }
    }
    if (!stop && on_token && !piece.empty() && !on_token(id, piece)) {
      r.stop_reason = "callback";
      stop = true;
    }
    if (stop) break;
    if (i + 1 == max_tokens) break;
    if (cancel_.exchange(false)) {
      r.stop_reason = "cancelled";
      break;
    }
    if (n_past_ + 1 > cache_.n_ctx()) {
      r.stop_reason = "context";
      break;
    }
    const TokenId next[1] = {id};
    eval(next);
  }
  const std::string rest = stream.flush();
  if (!rest.empty() && r.stop_reason != "stop_string") {
    r.text += rest;
    if (on_token) on_token(-1, rest);
  }
  r.gen_ms = ms_since(t0);
  return r;
}

}  // namespace qinfer::engine
