// Session::save_state / load_state: a session's positions, tokens, logits and KV cache rows in
// a file. Layout (little-endian): "QINFSTAT", u32 version, the model shape it belongs to
// (architecture name, layers, embedding, vocabulary, K/V widths, cache types), n_past, the
// n_past tokens, the logits, then per layer the K rows and V rows [0, n_past) as stored.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/engine.hpp"
#include "loader/gguf_writer.hpp"
#include "qinfer/error.hpp"

namespace qinfer::engine {
namespace {

constexpr char kMagic[8] = {'Q', 'I', 'N', 'F', 'S', 'T', 'A', 'T'};
constexpr uint32_t kVersion = 1;

struct Header {
  int64_t n_layer, n_embd, n_vocab, n_embd_k, n_embd_v;
  uint32_t k_type, v_type;
  bool operator==(const Header&) const = default;
};

Header header_of(const ModelConfig& c, const KvCache& cache) {
  return {c.n_layer,
          c.n_embd,
          c.n_vocab,
          c.n_embd_k(),
          c.n_embd_v(),
          static_cast<uint32_t>(cache.k_type()),
          static_cast<uint32_t>(cache.v_type())};
}

template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

class Reader {
 public:
  Reader(const std::string& data, const std::string& path) : d_(data), path_(path) {}
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  const char* take(size_t n) {
    if (n > d_.size() - at_)
      throw Error(ErrorCode::kInvalidFile, path_ + ": truncated session state");
    const char* p = d_.data() + at_;
    at_ += n;
    return p;
  }
  size_t left() const { return d_.size() - at_; }

 private:
  const std::string& d_;
  const std::string& path_;
  size_t at_ = 0;
};

}  // namespace

void Session::save_state(const std::string& path) const {
  const ModelConfig& c = model_->config;
  std::string out(kMagic, sizeof(kMagic));
  put(out, kVersion);
  put(out, static_cast<uint32_t>(c.arch_name.size()));
  out += c.arch_name;
  put(out, header_of(c, cache_));
  put(out, n_past_);
  out.append(reinterpret_cast<const char*>(history_.data()), history_.size() * sizeof(TokenId));
  put(out, static_cast<uint64_t>(logits_.size()));
  out.append(reinterpret_cast<const char*>(logits_.data()), logits_.size() * sizeof(float));
  const size_t k_bytes = static_cast<size_t>(n_past_) * cache_.k_row_bytes();
  const size_t v_bytes = static_cast<size_t>(n_past_) * cache_.v_row_bytes();
  for (int64_t l = 0; l < cache_.n_layer(); ++l) {
    const size_t at = out.size();
    out.resize(at + k_bytes + v_bytes);
    auto* dst = reinterpret_cast<uint8_t*>(out.data() + at);
    cache_.read_rows(l, n_past_, dst, dst + k_bytes);
  }
  write_file_atomically(path, out.data(), out.size());
}

void Session::load_state(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorCode::kIo, path + ": cannot open: " + ec.message());
  const ModelConfig& c = model_->config;
  // The largest state this session can hold: refuse bigger files before reading them.
  const size_t limit =
      4096 + c.arch_name.size() + static_cast<size_t>(cache_.n_ctx()) * sizeof(TokenId) +
      static_cast<size_t>(c.n_vocab) * sizeof(float) + cache_.bytes_for(cache_.n_ctx());
  if (size > limit)
    throw Error(ErrorCode::kInvalidFile, path + ": not a state of this session (too large)");
  std::string data(size, '\0');
  {
    std::ifstream f(path, std::ios::binary);
    if (!f || !f.read(data.data(), static_cast<std::streamsize>(size)))
      throw Error(ErrorCode::kIo, path + ": cannot read");
  }
  Reader r(data, path);
  if (std::memcmp(r.take(sizeof(kMagic)), kMagic, sizeof(kMagic)) != 0)
    throw Error(ErrorCode::kInvalidFile, path + ": not a qinfer session state");
  if (const auto v = r.get<uint32_t>(); v != kVersion)
    throw Error(ErrorCode::kUnsupported, path + ": session state version " + std::to_string(v));
  const auto arch_len = r.get<uint32_t>();
  const std::string arch(r.take(arch_len), arch_len);
  const auto h = r.get<Header>();
  if (arch != c.arch_name || !(h == header_of(c, cache_))) {
    throw Error(ErrorCode::kInvalidArgument, path + ": saved from another model or cache type (" +
                                                 arch + ", " + std::to_string(h.n_layer) +
                                                 " layers, vocabulary " +
                                                 std::to_string(h.n_vocab) + ")");
  }
  const auto n_past = r.get<int64_t>();
  if (n_past < 0 || n_past > cache_.n_ctx()) {
    throw Error(ErrorCode::kContextOverflow,
                path + ": " + std::to_string(n_past) +
                    " positions do not fit in this session's context of " +
                    std::to_string(cache_.n_ctx()));
  }
  std::vector<TokenId> history(static_cast<size_t>(n_past));
  std::memcpy(history.data(), r.take(history.size() * sizeof(TokenId)),
              history.size() * sizeof(TokenId));
  const auto n_logits = r.get<uint64_t>();
  if (n_logits != 0 && n_logits != static_cast<uint64_t>(c.n_vocab))
    throw Error(ErrorCode::kInvalidFile, path + ": bad logits count");
  std::vector<float> logits(n_logits);
  std::memcpy(logits.data(), r.take(n_logits * sizeof(float)), n_logits * sizeof(float));
  if (r.left() != cache_.bytes_for(n_past))
    throw Error(ErrorCode::kInvalidFile, path + ": truncated session state");
  // Everything checked: now change the session.
  cache_.reserve(n_past);
  const size_t k_bytes = static_cast<size_t>(n_past) * cache_.k_row_bytes();
  const size_t v_bytes = static_cast<size_t>(n_past) * cache_.v_row_bytes();
  for (int64_t l = 0; l < cache_.n_layer(); ++l) {
    const auto* k = reinterpret_cast<const uint8_t*>(r.take(k_bytes));
    const auto* v = reinterpret_cast<const uint8_t*>(r.take(v_bytes));
    cache_.write_rows(l, n_past, k, v);
  }
  n_past_ = n_past;
  history_ = std::move(history);
  logits_ = std::move(logits);
}

}  // namespace qinfer::engine
