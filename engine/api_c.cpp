// The C API (include/qinfer/qinfer.h): handles over the C++ API; every exception is caught
// here and turned into a status, with the message kept per thread.
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "qinfer/qinfer.h"
#include "qinfer/qinfer.hpp"

struct qinfer_model {
  qinfer::Model model;
  std::string architecture = model.architecture();
  std::vector<std::string> keys = model.metadata_keys();
};
struct qinfer_session {
  qinfer::Session session;
};

namespace {

thread_local std::string g_last_error;

qinfer_status fail(qinfer_status status, const std::string& message) {
  g_last_error = message;
  return status;
}

template <typename F>
qinfer_status guarded(F&& body) {
  try {
    g_last_error.clear();
    return body();
  } catch (const qinfer::Error& e) {
    return fail(static_cast<qinfer_status>(static_cast<int>(e.code())), e.what());
  } catch (const std::bad_alloc&) {
    return fail(QINFER_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(QINFER_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(QINFER_ERR_INTERNAL, "unknown error");
  }
}

qinfer_status null_argument(const char* name) {
  return fail(QINFER_ERR_INVALID_ARGUMENT, std::string("argument '") + name + "' is NULL");
}

// Copies text into a caller's buffer: at most capacity bytes, the needed size to *length.
qinfer_status copy_out(const std::string& text, char* buffer, size_t capacity, size_t* length) {
  *length = text.size();
  if (text.size() > capacity) {
    return fail(QINFER_ERR_BUFFER_TOO_SMALL,
                std::to_string(text.size()) + " bytes do not fit in " + std::to_string(capacity));
  }
  if (!text.empty()) std::memcpy(buffer, text.data(), text.size());
  return QINFER_OK;
}

qinfer::GenerateOptions from_c(const qinfer_generate_options* options) {
  const qinfer_generate_options o = options ? *options : qinfer_generate_options_default();
  qinfer::GenerateOptions g;
  g.max_tokens = o.max_tokens;
  g.temperature = o.temperature;
  g.top_k = o.top_k;
  g.top_p = o.top_p;
  g.min_p = o.min_p;
  g.repeat_penalty = o.repeat_penalty;
  g.repeat_last_n = o.repeat_last_n;
  g.seed = o.seed;
  return g;
}

qinfer_stop_reason stop_reason_of(const std::string& why) {
  if (why == "eos") return QINFER_STOP_EOS;
  if (why == "stop") return QINFER_STOP_STRING;
  if (why == "context") return QINFER_STOP_CONTEXT;
  if (why == "cancelled") return QINFER_STOP_CANCELLED;
  return QINFER_STOP_LENGTH;
}

}  // namespace

extern "C" {

const char* qinfer_version(void) { return qinfer::version(); }
const char* qinfer_last_error(void) { return g_last_error.c_str(); }

qinfer_model_options qinfer_model_options_default(void) { return {1}; }
qinfer_session_options qinfer_session_options_default(void) { return {0, 0, "f16", "f16"}; }
qinfer_generate_options qinfer_generate_options_default(void) {
  const qinfer::GenerateOptions d;
  return {d.max_tokens, d.temperature,    d.top_k,         d.top_p,
          d.min_p,      d.repeat_penalty, d.repeat_last_n, d.seed};
}

qinfer_status qinfer_model_load(const char* path, const qinfer_model_options* options,
                                qinfer_model** out) {
  if (out == nullptr) return null_argument("out_model");
  *out = nullptr;
  if (path == nullptr) return null_argument("path");
  return guarded([&] {
    const qinfer_model_options o = options ? *options : qinfer_model_options_default();
    *out = new qinfer_model{qinfer::Model::load(path, {.use_mmap = o.use_mmap != 0})};
    return QINFER_OK;
  });
}

void qinfer_model_free(qinfer_model* model) { delete model; }

int32_t qinfer_model_vocab_size(const qinfer_model* model) {
  return model == nullptr ? 0 : model->model.vocab_size();
}

const char* qinfer_model_architecture(const qinfer_model* model) {
  return model == nullptr ? nullptr : model->architecture.c_str();
}
int32_t qinfer_model_context_length(const qinfer_model* model) {
  return model == nullptr ? 0 : model->model.context_length();
}
int32_t qinfer_model_embedding_length(const qinfer_model* model) {
  return model == nullptr ? 0 : model->model.embedding_length();
}
int32_t qinfer_model_layer_count(const qinfer_model* model) {
  return model == nullptr ? 0 : model->model.layer_count();
}
int64_t qinfer_model_parameter_count(const qinfer_model* model) {
  return model == nullptr ? 0 : model->model.parameter_count();
}
size_t qinfer_model_metadata_count(const qinfer_model* model) {
  return model == nullptr ? 0 : model->keys.size();
}
const char* qinfer_model_metadata_key(const qinfer_model* model, size_t i) {
  return model == nullptr || i >= model->keys.size() ? nullptr : model->keys[i].c_str();
}

qinfer_status qinfer_model_metadata(const qinfer_model* model, const char* key, char* buffer,
                                    size_t capacity, size_t* length) {
  if (model == nullptr) return null_argument("model");
  if (key == nullptr) return null_argument("key");
  if (length == nullptr) return null_argument("length");
  if (buffer == nullptr && capacity > 0) return null_argument("buffer");
  return guarded([&] {
    const auto value = model->model.metadata(key);
    if (!value) return fail(QINFER_ERR_MISSING_KEY, std::string("no metadata key '") + key + "'");
    return copy_out(*value, buffer, capacity, length);
  });
}

int32_t qinfer_token_bos(const qinfer_model* model) {
  return model == nullptr ? -1 : model->model.bos_token();
}
int32_t qinfer_token_eos(const qinfer_model* model) {
  return model == nullptr ? -1 : model->model.eos_token();
}
int qinfer_token_is_special(const qinfer_model* model, int32_t token) {
  if (model == nullptr || token < 0 || token >= model->model.vocab_size()) return 0;
  return model->model.is_special(token) ? 1 : 0;
}
int qinfer_token_is_eog(const qinfer_model* model, int32_t token) {
  if (model == nullptr || token < 0 || token >= model->model.vocab_size()) return 0;
  return model->model.is_end_of_generation(token) ? 1 : 0;
}

qinfer_status qinfer_token_piece(const qinfer_model* model, int32_t token, char* buffer,
                                 size_t capacity, size_t* length) {
  if (model == nullptr) return null_argument("model");
  if (length == nullptr) return null_argument("length");
  if (buffer == nullptr && capacity > 0) return null_argument("buffer");
  return guarded(
      [&] { return copy_out(model->model.token_piece(token), buffer, capacity, length); });
}

qinfer_status qinfer_session_new(const qinfer_model* model, const qinfer_session_options* options,
                                 qinfer_session** out) {
  if (out == nullptr) return null_argument("out_session");
  *out = nullptr;
  if (model == nullptr) return null_argument("model");
  return guarded([&] {
    const qinfer_session_options o = options ? *options : qinfer_session_options_default();
    if (o.n_ctx < 0 || o.n_threads < 0)
      return fail(QINFER_ERR_INVALID_ARGUMENT, "negative n_ctx or n_threads");
    // (the engine refuses more threads than 4x the logical cores with a status, too)
    qinfer::SessionOptions so;
    so.n_ctx = o.n_ctx;
    so.n_threads = o.n_threads;
    if (o.cache_type_k != nullptr) so.cache_type_k = o.cache_type_k;
    if (o.cache_type_v != nullptr) so.cache_type_v = o.cache_type_v;
    *out = new qinfer_session{qinfer::Session(model->model, so)};
    return QINFER_OK;
  });
}

void qinfer_session_free(qinfer_session* session) { delete session; }

qinfer_status qinfer_session_reset(qinfer_session* session) {
  if (session == nullptr) return null_argument("session");
  return guarded([&] {
    session->session.reset();
    return QINFER_OK;
  });
}

qinfer_status qinfer_tokenize(const qinfer_model* model, const char* text, int add_special,
                              int32_t* tokens, size_t capacity, size_t* n_tokens) {
  if (model == nullptr) return null_argument("model");
  if (text == nullptr) return null_argument("text");
  if (n_tokens == nullptr) return null_argument("n_tokens");
  if (tokens == nullptr && capacity > 0) return null_argument("tokens");
  return guarded([&] {
    const auto ids = model->model.tokenize(text, add_special != 0);
    *n_tokens = ids.size();
    if (ids.size() > capacity) {
      return fail(QINFER_ERR_BUFFER_TOO_SMALL,
                  std::to_string(ids.size()) + " tokens do not fit in " + std::to_string(capacity));
    }
    if (!ids.empty()) std::memcpy(tokens, ids.data(), ids.size() * sizeof(int32_t));
    return QINFER_OK;
  });
}

qinfer_status qinfer_chat_apply_template(const qinfer_model* model, const char* name_or_template,
                                         const qinfer_chat_message* messages, size_t n_messages,
                                         int add_generation_prompt, char* buffer, size_t capacity,
                                         size_t* length) {
  if (model == nullptr && name_or_template == nullptr) return null_argument("model");
  if (messages == nullptr && n_messages > 0) return null_argument("messages");
  if (buffer == nullptr && capacity > 0) return null_argument("buffer");
  if (length == nullptr) return null_argument("length");
  for (size_t i = 0; i < n_messages; ++i) {
    if (messages[i].role == nullptr) return null_argument("messages[].role");
    if (messages[i].content == nullptr) return null_argument("messages[].content");
  }
  return guarded([&] {
    std::vector<qinfer::ChatMessage> chat;
    for (size_t i = 0; i < n_messages; ++i) chat.push_back({messages[i].role, messages[i].content});
    const std::string text =
        name_or_template != nullptr
            ? qinfer::apply_chat_template(name_or_template, chat, add_generation_prompt != 0)
            : model->model.apply_chat_template(chat, add_generation_prompt != 0);
    return copy_out(text, buffer, capacity, length);
  });
}

qinfer_status qinfer_generate(qinfer_session* session, const char* prompt,
                              const qinfer_generate_options* options,
                              qinfer_token_callback callback, void* user_data) {
  if (session == nullptr) return null_argument("session");
  if (prompt == nullptr) return null_argument("prompt");
  return guarded([&] {
    std::function<bool(std::string_view)> cb;
    if (callback != nullptr) {
      cb = [&](std::string_view piece) {
        return callback(piece.data(), piece.size(), user_data) != 0;
      };
    }
    session->session.generate(prompt, from_c(options), cb);
    return QINFER_OK;
  });
}

qinfer_status qinfer_complete(qinfer_session* session, const char* prompt,
                              const qinfer_generate_options* options, int parse_special,
                              qinfer_token_id_callback callback, void* user_data,
                              qinfer_generate_result* result) {
  if (session == nullptr) return null_argument("session");
  if (prompt == nullptr) return null_argument("prompt");
  return guarded([&] {
    qinfer::GenerateOptions g = from_c(options);
    g.parse_special = parse_special != 0;
    std::function<bool(qinfer::Token, std::string_view)> cb;
    if (callback != nullptr) {
      cb = [&](qinfer::Token id, std::string_view piece) {
        return callback(id, piece.data(), piece.size(), user_data) != 0;
      };
    }
    const qinfer::GenerateResult r = session->session.complete(prompt, g, cb);
    if (result != nullptr) {
      *result = {stop_reason_of(r.stop_reason), r.prompt_tokens,
                 static_cast<int32_t>(r.tokens.size()), r.prompt_ms, r.gen_ms};
    }
    return QINFER_OK;
  });
}

void qinfer_session_cancel(qinfer_session* session) {
  if (session != nullptr) session->session.cancel();
}

qinfer_status qinfer_session_set_threads(qinfer_session* session, int32_t n_threads) {
  if (session == nullptr) return null_argument("session");
  return guarded([&] {
    session->session.set_threads(n_threads);
    return QINFER_OK;
  });
}

int32_t qinfer_session_position(const qinfer_session* session) {
  return session == nullptr ? 0 : session->session.position();
}

qinfer_status qinfer_session_truncate(qinfer_session* session, int32_t n) {
  if (session == nullptr) return null_argument("session");
  return guarded([&] {
    session->session.truncate(n);
    return QINFER_OK;
  });
}

qinfer_status qinfer_session_save(const qinfer_session* session, const char* path) {
  if (session == nullptr) return null_argument("session");
  if (path == nullptr) return null_argument("path");
  return guarded([&] {
    session->session.save_state(path);
    return QINFER_OK;
  });
}

qinfer_status qinfer_session_load(qinfer_session* session, const char* path) {
  if (session == nullptr) return null_argument("session");
  if (path == nullptr) return null_argument("path");
  return guarded([&] {
    session->session.load_state(path);
    return QINFER_OK;
  });
}

qinfer_status qinfer_embed(qinfer_session* session, const char* text, int mean_pooling,
                           int normalize, float* embedding, size_t capacity, size_t* n) {
  if (session == nullptr) return null_argument("session");
  if (text == nullptr) return null_argument("text");
  if (n == nullptr) return null_argument("n");
  if (embedding == nullptr && capacity > 0) return null_argument("embedding");
  return guarded([&] {
    const auto e = session->session.embed(
        text, mean_pooling ? qinfer::Pooling::kMean : qinfer::Pooling::kLast, normalize != 0);
    *n = e.size();
    if (e.size() > capacity) {
      return fail(QINFER_ERR_BUFFER_TOO_SMALL,
                  std::to_string(e.size()) + " floats do not fit in " + std::to_string(capacity));
    }
    std::memcpy(embedding, e.data(), e.size() * sizeof(float));
    return QINFER_OK;
  });
}

qinfer_status qinfer_eval(qinfer_session* session, const int32_t* tokens, size_t n_tokens) {
  if (session == nullptr) return null_argument("session");
  if (tokens == nullptr && n_tokens > 0) return null_argument("tokens");
  if (n_tokens == 0) return fail(QINFER_ERR_INVALID_ARGUMENT, "no tokens to evaluate");
  return guarded([&] {
    session->session.eval(std::span<const int32_t>(tokens, n_tokens));
    return QINFER_OK;
  });
}

qinfer_status qinfer_logits(const qinfer_session* session, const float** logits, size_t* n_vocab) {
  if (session == nullptr) return null_argument("session");
  if (logits == nullptr) return null_argument("logits");
  if (n_vocab == nullptr) return null_argument("n_vocab");
  const auto l = session->session.logits();
  if (l.empty()) return fail(QINFER_ERR_INVALID_ARGUMENT, "no logits yet: call qinfer_eval first");
  *logits = l.data();
  *n_vocab = l.size();
  return QINFER_OK;
}

}  // extern "C"
