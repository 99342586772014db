// The C++ API (include/qinfer/qinfer.hpp) over the engine.
#include <cmath>
#include <sstream>

#include "engine/chat_template.hpp"
#include "engine/engine.hpp"
#include "qinfer/qinfer.hpp"

namespace qinfer {

struct ModelImpl {
  std::shared_ptr<const engine::Model> model;
};

struct SessionImpl {
  SessionImpl(std::shared_ptr<const ModelImpl> m, const SessionOptions& o)
      : model(std::move(m)),
        session(model->model, {.n_ctx = o.n_ctx,
                               .cache_k = KvCache::parse_type(o.cache_type_k),
                               .cache_v = KvCache::parse_type(o.cache_type_v),
                               .n_threads = o.n_threads}) {}
  std::shared_ptr<const ModelImpl> model;
  engine::Session session;
};

const char* version() { return QINFER_VERSION_STRING; }

std::string apply_chat_template(std::string_view name_or_template,
                                std::span<const ChatMessage> messages, bool add_generation_prompt) {
  return chat::apply(name_or_template, messages, add_generation_prompt);
}

std::vector<std::string> chat_templates() {
  std::vector<std::string> out;
  for (std::string_view n : chat::template_names()) out.emplace_back(n);
  return out;
}

Model Model::load(const std::string& path, const ModelOptions& options) {
  auto impl = std::make_shared<ModelImpl>();
  impl->model = engine::Model::load(path, OpenOptions{.use_mmap = options.use_mmap});
  return Model(std::move(impl));
}

std::string Model::architecture() const { return impl_->model->config.arch_name; }
int32_t Model::context_length() const {
  return static_cast<int32_t>(impl_->model->config.n_ctx_train);
}
int32_t Model::vocab_size() const { return static_cast<int32_t>(impl_->model->config.n_vocab); }
int32_t Model::embedding_length() const {
  return static_cast<int32_t>(impl_->model->config.n_embd);
}
int32_t Model::layer_count() const { return static_cast<int32_t>(impl_->model->config.n_layer); }

std::vector<TensorDesc> Model::tensors() const {
  std::vector<TensorDesc> out;
  for (const TensorInfo& t : impl_->model->file.tensors()) {
    out.push_back(
        {t.name, std::string(type_name(t.type)), std::vector<int64_t>(t.ne, t.ne + t.n_dims)});
  }
  return out;
}

std::optional<std::string> Model::metadata(std::string_view key) const {
  const Value* v = impl_->model->file.find(key);
  if (v == nullptr) return std::nullopt;
  std::ostringstream s;
  switch (v->type) {
    case ValueType::STRING:
      return std::string(v->as_string());
    case ValueType::ARRAY:
      s << "[" << value_type_name(v->array.elem_type()) << "; " << v->array.size() << "]";
      return s.str();
    case ValueType::BOOL:
      return v->as_bool() ? "true" : "false";
    case ValueType::F32:
    case ValueType::F64:
      s << v->as_double();
      return s.str();
    case ValueType::U64:
      return std::to_string(v->as_uint());
    default:
      return std::to_string(v->as_int());
  }
}

std::optional<std::string> Model::chat_template() const {
  const Value* v = impl_->model->file.find("tokenizer.chat_template");
  if (v == nullptr || v->type != ValueType::STRING) return std::nullopt;
  return std::string(v->as_string());
}

std::string Model::apply_chat_template(std::span<const ChatMessage> messages,
                                       bool add_generation_prompt) const {
  return chat::apply(chat_template().value_or("chatml"), messages, add_generation_prompt);
}

std::vector<Token> Model::tokenize(std::string_view text, bool add_special,
                                   bool parse_special) const {
  return impl_->model->tokenizer->encode(text, add_special, parse_special);
}

std::string Model::detokenize(std::span<const Token> tokens) const {
  for (Token t : tokens) {
    if (t < 0 || t >= vocab_size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "token " + std::to_string(t) + " is not in the vocabulary");
    }
  }
  return impl_->model->tokenizer->decode(tokens);
}

bool Model::is_end_of_generation(Token token) const {
  return impl_->model->tokenizer->is_end_of_generation(token);
}

namespace {
void check_token(const engine::Model& m, Token t) {
  if (t < 0 || t >= m.config.n_vocab) {
    throw Error(ErrorCode::kInvalidArgument,
                "token " + std::to_string(t) + " is not in the vocabulary");
  }
}
}  // namespace

Token Model::bos_token() const { return impl_->model->tokenizer->vocab().bos; }
Token Model::eos_token() const { return impl_->model->tokenizer->vocab().eos; }

std::string Model::token_piece(Token token) const {
  check_token(*impl_->model, token);
  return impl_->model->tokenizer->piece(token);
}

bool Model::is_special(Token token) const {
  check_token(*impl_->model, token);
  const TokenType t = impl_->model->tokenizer->vocab().types[token];
  return t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
}

int64_t Model::parameter_count() const {
  int64_t n = 0;
  for (const TensorInfo& t : impl_->model->file.tensors()) n += t.n_elements();
  return n;
}

std::vector<std::string> Model::metadata_keys() const {
  std::vector<std::string> keys;
  for (const auto& kv : impl_->model->file.metadata()) keys.emplace_back(kv.key);
  return keys;
}

Session::Session(const Model& model, const SessionOptions& o)
    : impl_(std::make_unique<SessionImpl>(model.impl_, o)) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

GenerateResult Session::complete(std::string_view prompt, const GenerateOptions& o,
                                 const std::function<bool(Token, std::string_view)>& on_token) {
  engine::Session& s = impl_->session;
  const bool first = s.n_past() == 0;
  const auto tokens = s.model().tokenizer->encode(prompt, o.add_bos && first, o.parse_special);
  engine::GenerateOptions go;
  go.max_tokens = o.max_tokens;
  go.stop_strings = o.stop;
  go.ignore_eos = o.ignore_eos;
  go.sampler = {.temperature = o.temperature,
                .top_k = o.top_k,
                .top_p = o.top_p,
                .min_p = o.min_p,
                .repeat_penalty = o.repeat_penalty,
                .repeat_last_n = o.repeat_last_n,
                .frequency_penalty = o.frequency_penalty,
                .presence_penalty = o.presence_penalty,
                .seed = o.seed};
  engine::TokenCallback cb;
  if (on_token) cb = [&](TokenId id, const std::string& text) { return on_token(id, text); };
  engine::GenerateResult r = s.generate(tokens, go, cb);
  const std::string& why = r.stop_reason;
  return {std::move(r.text),
          std::move(r.tokens),
          why == "stop_string" ? "stop"
          : why == "callback"  ? "cancelled"
                               : why,
          static_cast<int32_t>(r.prompt_tokens),
          r.prompt_ms,
          r.gen_ms};
}

std::string Session::generate(std::string_view prompt, const GenerateOptions& o,
                              const std::function<bool(std::string_view)>& on_token) {
  std::function<bool(Token, std::string_view)> cb;
  if (on_token) cb = [&](Token, std::string_view text) { return on_token(text); };
  return complete(prompt, o, cb).text;
}

std::vector<Token> Session::tokenize(std::string_view text, bool add_special,
                                     bool parse_special) const {
  return impl_->session.model().tokenizer->encode(text, add_special, parse_special);
}

std::string Session::detokenize(std::span<const Token> tokens) const {
  return Model(impl_->model).detokenize(tokens);
}

void Session::eval(std::span<const Token> tokens) {
  for (Token t : tokens) {
    if (t < 0 || t >= impl_->session.model().config.n_vocab) {
      throw Error(ErrorCode::kInvalidArgument,
                  "token " + std::to_string(t) + " is not in the vocabulary");
    }
  }
  impl_->session.eval(tokens);
}

std::span<const float> Session::logits() const { return impl_->session.logits(); }

std::vector<float> Session::eval_all(std::span<const Token> tokens) {
  for (Token t : tokens) check_token(impl_->session.model(), t);
  return impl_->session.eval_all(tokens);
}

std::vector<float> Session::embed(std::string_view text, Pooling pooling, bool normalize) {
  engine::Session& s = impl_->session;
  return s.embed(s.model().tokenizer->encode(text, true, false), pooling, normalize);
}

void Session::reset() { impl_->session.reset(); }
void Session::truncate(int32_t n) { impl_->session.truncate(n); }
void Session::set_threads(int32_t n) { impl_->session.set_threads(n); }
void Session::cancel() { impl_->session.cancel(); }
void Session::save_state(const std::string& path) const { impl_->session.save_state(path); }
void Session::load_state(const std::string& path) { impl_->session.load_state(path); }
int32_t Session::position() const { return static_cast<int32_t>(impl_->session.n_past()); }
size_t Session::cache_bytes() const { return impl_->session.cache().bytes(); }
int32_t Session::context_length() const { return static_cast<int32_t>(impl_->session.n_ctx()); }

}  // namespace qinfer
