#include "tokenizer/tokenizer.hpp"

#include <algorithm>
#include <cctype>
#include <list>

#include "loader/gguf.hpp"
#include "qinfer/error.hpp"

namespace qinfer {

namespace {

// An id outside the vocabulary (converters write 0xFFFFFFFF for "none") counts as absent,
// as in llama.cpp.
TokenId optional_id(const GgufFile& f, std::string_view key, int32_t n_vocab) {
  if (!f.has(key)) return -1;
  const int64_t id = f.get_int(key);
  return id < 0 || id >= n_vocab ? -1 : static_cast<TokenId>(id);
}

}  // namespace

Vocab read_vocab(const GgufFile& f) {
  Vocab v;
  const auto tokens = f.get_array("tokenizer.ggml.tokens", ValueType::STRING).strings();
  const auto n = static_cast<int32_t>(tokens.size());
  if (n == 0) throw Error(ErrorCode::kInvalidFile, f.path() + ": empty tokenizer.ggml.tokens");
  v.text.assign(tokens.begin(), tokens.end());
  v.scores.assign(tokens.size(), 0.0f);
  v.types.assign(tokens.size(), TokenType::kNormal);
  if (f.has("tokenizer.ggml.scores")) {
    const ArrayView s = f.get_array("tokenizer.ggml.scores");
    if (s.size() != tokens.size()) {
      throw Error(ErrorCode::kInvalidFile, f.path() + ": tokenizer.ggml.scores has " +
                                               std::to_string(s.size()) + " entries for " +
                                               std::to_string(n) + " tokens");
    }
    v.scores = s.to_vector<float>();
  }
  if (f.has("tokenizer.ggml.token_type")) {
    const ArrayView t = f.get_array("tokenizer.ggml.token_type");
    if (t.size() != tokens.size()) {
      throw Error(ErrorCode::kInvalidFile, f.path() + ": tokenizer.ggml.token_type has " +
                                               std::to_string(t.size()) + " entries for " +
                                               std::to_string(n) + " tokens");
    }
    for (uint64_t i = 0; i < t.size(); ++i) v.types[i] = static_cast<TokenType>(t.at<int32_t>(i));
  }
  v.ids.reserve(tokens.size());
  for (int32_t i = 0; i < n; ++i) v.ids.emplace(v.text[i], i);  // first id wins on duplicates
  v.bos = optional_id(f, "tokenizer.ggml.bos_token_id", n);
  v.eos = optional_id(f, "tokenizer.ggml.eos_token_id", n);
  v.unk = optional_id(f, "tokenizer.ggml.unknown_token_id", n);
  v.pad = optional_id(f, "tokenizer.ggml.padding_token_id", n);
  v.eot = optional_id(f, "tokenizer.ggml.eot_token_id", n);
  for (int32_t i = 0; i < n; ++i) {
    const TokenType t = v.types[i];
    if (t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) {
      v.specials.push_back(i);
    }
  }
  std::stable_sort(v.specials.begin(), v.specials.end(),
                   [&](TokenId a, TokenId b) { return v.text[a].size() > v.text[b].size(); });
  v.rstrip.assign(tokens.size(), false);
  // llama.cpp sets token attributes by model name: a phi-3 model's special tokens strip the
  // white space that follows them, except these three.
  std::string name = f.get_string_or("general.name", "");
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (TokenId id : v.specials) v.rstrip[id] = true;
    if (const TokenId id = v.find("</s>"); id >= 0) v.rstrip[id] = true;
    for (const char* keep : {"<unk>", "<s>", "<|endoftext|>"}) {
      if (const TokenId id = v.find(keep); id >= 0) v.rstrip[id] = false;
    }
  }
  return v;
}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& f) {
  const std::string model(f.get_string("tokenizer.ggml.model"));
  Vocab v = read_vocab(f);
  if (model == "llama") {
    v.add_bos = f.get_bool_or("tokenizer.ggml.add_bos_token", true);
    v.add_eos = f.get_bool_or("tokenizer.ggml.add_eos_token", false);
    v.add_space_prefix = f.get_bool_or("tokenizer.ggml.add_space_prefix", true);
    if (v.unk < 0) v.unk = v.find("<unk>");
    return make_spm_tokenizer(std::move(v));
  }
  if (model == "gpt2") {
    v.add_bos = f.get_bool_or("tokenizer.ggml.add_bos_token", false);
    v.add_eos = f.get_bool_or("tokenizer.ggml.add_eos_token", false);
    v.add_space_prefix = f.get_bool_or("tokenizer.ggml.add_space_prefix", false);
    return make_bpe_tokenizer(std::move(v), f);
  }
  throw Error(ErrorCode::kUnsupported, f.path() + ": tokenizer.ggml.model '" + model +
                                           "' is not supported (supported: llama, gpt2)");
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  // Split the text at special tokens (longest first). User-defined tokens always split;
  // control and unknown tokens only when parse_special is asked for, as in llama.cpp.
  struct Fragment {
    std::string_view text;
    TokenId token;  // -1 for plain text
  };
  std::list<Fragment> fragments;
  if (!text.empty()) fragments.push_back({text, -1});
  for (TokenId id : vocab_.specials) {
    const TokenType type = vocab_.types[id];
    if (!parse_special && type != TokenType::kUserDefined) continue;
    const std::string& special = vocab_.text[id];
    if (special.empty()) continue;
    for (auto it = fragments.begin(); it != fragments.end(); ++it) {
      if (it->token >= 0) continue;
      const size_t pos = it->text.find(special);
      if (pos == std::string_view::npos) continue;
      const std::string_view before = it->text.substr(0, pos);
      std::string_view after = it->text.substr(pos + special.size());
      if (vocab_.rstrip[id]) {
        while (!after.empty() && std::isspace(static_cast<unsigned char>(after.front())))
          after.remove_prefix(1);
      }
      if (!before.empty()) fragments.insert(it, Fragment{before, -1});
      it->text = special;
      it->token = id;
      if (!after.empty()) fragments.insert(std::next(it), Fragment{after, -1});
    }
  }
  std::vector<TokenId> out;
  if (add_special && vocab_.add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  bool after_special = true;
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
    } else {
      encode_text(f.text, after_special, out);
      after_special = false;
    }
  }
  if (add_special && vocab_.add_eos && vocab_.eos >= 0) out.push_back(vocab_.eos);
  return out;
}

std::string Tokenizer::decode(std::span<const TokenId> ids) const {
  std::string out;
  bool strip_space = vocab_.add_space_prefix;
  for (TokenId id : ids) {
    std::string p = piece(id);
    if (strip_space && !p.empty() && p[0] == ' ') p.erase(0, 1);
    if (!p.empty() || vocab_.types.at(id) != TokenType::kControl) strip_space = false;
    out += p;
  }
  return out;
}

bool Tokenizer::is_end_of_generation(TokenId id) const {
  if (id < 0 || id >= n_vocab()) return false;
  if (id == vocab_.eos || id == vocab_.eot) return true;
  if (vocab_.types[id] != TokenType::kControl) return false;
  static constexpr std::string_view kEndNames[] = {
      "<|eot_id|>",    "<|im_end|>", "<|end|>",         "<end_of_turn>",
      "<|endoftext|>", "<EOT>",      "<|end_of_text|>", "<｜end▁of▁sentence｜>"};
  return std::find(std::begin(kEndNames), std::end(kEndNames), vocab_.text[id]) !=
         std::end(kEndNames);
}

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes);
  // Find the end of the last complete character.
  size_t complete = pending_.size();
  for (size_t back = 1; back <= std::min<size_t>(4, pending_.size()); ++back) {
    const auto c = static_cast<unsigned char>(pending_[pending_.size() - back]);
    if ((c & 0xc0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const size_t len = c < 0x80           ? 1
                       : (c >> 5) == 0x6  ? 2
                       : (c >> 4) == 0xe  ? 3
                       : (c >> 3) == 0x1e ? 4
                                          : 1;
    if (len > back) complete = pending_.size() - back;
    break;
  }
  std::string out = pending_.substr(0, complete);
  pending_.erase(0, complete);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace qinfer
