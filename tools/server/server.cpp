// qinfer-server: one model served over HTTP with llama-server's and OpenAI's endpoints
// (docs/server.md). cpp-httplib answers the connections on its thread pool; the Scheduler runs
// every generation on one compute thread, a step per busy slot in turn.
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>
#include <thread>

#include <CLI/CLI.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "engine/chat_template.hpp"
#include "engine/engine.hpp"
#include "tools/cli.hpp"
#include "tools/server/scheduler.hpp"
#include "tools/tool_common.hpp"

namespace {

using namespace qinfer;
using json = nlohmann::ordered_json;

// Pending connections the kernel holds for accept(): a burst of clients must queue, not fail.
constexpr int kListenBacklog = 512;

// A request the client got wrong: 400 with this message.
struct BadRequest : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void send_error(httplib::Response& res, int status, const std::string& message) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 404 ? "not_found_error"
                     : status == 503 ? "unavailable_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  res.status = status;
  res.set_content(json{{"error", {{"code", status}, {"message", message}, {"type", type}}}}.dump(),
                  "application/json");
}

void send_json(httplib::Response& res, const json& body) {
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// --- reading a request body, with a clear message for every wrong type or value ---

json parse_body(const httplib::Request& req) {
  json j = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw BadRequest("the request body is not valid JSON");
  if (!j.is_object()) throw BadRequest("the request body must be a JSON object");
  return j;
}

bool has(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

double number(const json& j, const char* key, double def, double lo, double hi) {
  if (!has(j, key)) return def;
  if (!j[key].is_number()) throw BadRequest(std::string("'") + key + "' must be a number");
  const double v = j[key].get<double>();
  if (!(v >= lo && v <= hi)) {
    throw BadRequest(std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                     std::to_string(hi));
  }
  return v;
}

int64_t integer(const json& j, const char* key, int64_t def, int64_t lo, int64_t hi) {
  if (!has(j, key)) return def;
  if (!j[key].is_number_integer())
    throw BadRequest(std::string("'") + key + "' must be an integer");
  if (j[key].is_number_unsigned() && j[key].get<uint64_t>() > static_cast<uint64_t>(hi))
    throw BadRequest(std::string("'") + key + "' must be at most " + std::to_string(hi));
  const int64_t v = j[key].get<int64_t>();
  if (v < lo || v > hi) {
    throw BadRequest(std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                     std::to_string(hi));
  }
  return v;
}

bool boolean(const json& j, const char* key, bool def) {
  if (!has(j, key)) return def;
  if (!j[key].is_boolean()) throw BadRequest(std::string("'") + key + "' must be true or false");
  return j[key].get<bool>();
}

struct ServerConfig {
  std::string model_name;  // what /v1/models and every response call the model
  std::string template_text;
  int64_t n_ctx_slot = 0;
  int64_t n_predict = -1;  // the default max_tokens
  int n_slots = 1;
};

// Sampling and stopping options shared by /v1/completions and /v1/chat/completions, with
// llama-server's defaults. `prompt_tokens` is checked against the slot's context.
server::Job completion_job(const json& body, std::vector<TokenId> prompt, const ServerConfig& cfg,
                           const engine::Model& model) {
  for (const char* key : {"tools", "response_format", "grammar", "json_schema", "functions"}) {
    if (has(body, key)) throw BadRequest(std::string("'") + key + "' is not supported");
  }
  if (boolean(body, "logprobs", false) || integer(body, "n_probs", 0, 0, 0) != 0 ||
      has(body, "top_logprobs")) {
    throw BadRequest("log probabilities (logprobs, top_logprobs, n_probs) are not supported");
  }
  if (integer(body, "n", 1, 1, 1) != 1) throw BadRequest("'n' must be 1");
  server::Job job;
  engine::SamplerParams& sp = job.sampler;
  sp.temperature = static_cast<float>(number(body, "temperature", 0.8, 0, 100));
  sp.top_k = static_cast<int32_t>(integer(body, "top_k", 40, 0, 1 << 30));
  sp.top_p = static_cast<float>(number(body, "top_p", 0.95, 0, 1));
  sp.min_p = static_cast<float>(number(body, "min_p", 0.05, 0, 1));
  sp.repeat_penalty = static_cast<float>(number(body, "repeat_penalty", 1.0, 0, 100));
  sp.repeat_last_n = static_cast<int32_t>(integer(body, "repeat_last_n", 64, -1, 1 << 30));
  sp.frequency_penalty = static_cast<float>(number(body, "frequency_penalty", 0, -2, 2));
  sp.presence_penalty = static_cast<float>(number(body, "presence_penalty", 0, -2, 2));
  const int64_t seed = integer(body, "seed", -1, INT64_MIN, INT64_MAX);
  sp.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
  if (has(body, "logit_bias")) {
    const json& lb = body["logit_bias"];
    if (!lb.is_object()) throw BadRequest("'logit_bias' must be an object of token id: bias");
    for (const auto& [key, value] : lb.items()) {
      char* end = nullptr;
      const long id = std::strtol(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || id < 0 || id >= model.config.n_vocab)
        throw BadRequest("'logit_bias': '" + key + "' is not a token id of this model");
      if (!value.is_number()) throw BadRequest("'logit_bias' values must be numbers");
      sp.logit_bias.emplace_back(static_cast<TokenId>(id), value.get<float>());
    }
  }
  job.ignore_eos = boolean(body, "ignore_eos", false);
  if (has(body, "stop")) {
    const json& s = body["stop"];
    if (s.is_string()) {
      job.stop.push_back(s.get<std::string>());
    } else if (s.is_array() &&
               std::all_of(s.begin(), s.end(), [](auto& e) { return e.is_string(); })) {
      job.stop = s.get<std::vector<std::string>>();
    } else {
      throw BadRequest("'stop' must be a string or an array of strings");
    }
  }
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt == 0) throw BadRequest("the prompt is empty");
  if (n_prompt >= cfg.n_ctx_slot) {
    throw BadRequest("the prompt is " + std::to_string(n_prompt) + " tokens; a slot's context is " +
                     std::to_string(cfg.n_ctx_slot) + " tokens (raise -c or lower -np)");
  }
  job.max_tokens = cfg.n_predict;
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (has(body, key)) job.max_tokens = integer(body, key, 0, 1, INT32_MAX);
  if (has(body, "n_predict")) job.max_tokens = integer(body, "n_predict", 0, -1, INT32_MAX);
  if (job.max_tokens >= 0 && n_prompt + job.max_tokens > cfg.n_ctx_slot) {
    throw BadRequest("this model's context is " + std::to_string(cfg.n_ctx_slot) +
                     " tokens per slot, but " + std::to_string(n_prompt + job.max_tokens) +
                     " were requested (" + std::to_string(n_prompt) + " in the prompt, " +
                     std::to_string(job.max_tokens) + " for the completion)");
  }
  job.prompt = std::move(prompt);
  return job;
}

std::vector<TokenId> token_list(const json& a, const engine::Model& model, const char* what) {
  std::vector<TokenId> out;
  for (const json& e : a) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= model.config.n_vocab)
      throw BadRequest(std::string(what) + ": token ids must be integers below " +
                       std::to_string(model.config.n_vocab));
    out.push_back(e.get<TokenId>());
  }
  return out;
}

// A string, a list with one string, a list of token ids, or a list with one such list.
std::vector<TokenId> prompt_tokens(const json& body, const engine::Model& model) {
  if (!has(body, "prompt")) throw BadRequest("'prompt' is required");
  const json& p = body["prompt"];
  const json* one = &p;
  if (p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array())) one = &p[0];
  if (one->is_string()) return model.tokenizer->encode(one->get<std::string>(), true, true);
  if (one->is_array()) return token_list(*one, model, "'prompt'");
  throw BadRequest("'prompt' must be a string, a list of token ids, or a list with one of them");
}

std::vector<ChatMessage> chat_messages(const json& body) {
  if (!has(body, "messages") || !body["messages"].is_array() || body["messages"].empty())
    throw BadRequest("'messages' must be a non-empty array of {role, content} objects");
  std::vector<ChatMessage> out;
  for (const json& m : body["messages"]) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw BadRequest("every message needs a 'role' string");
    ChatMessage msg{m["role"].get<std::string>(), ""};
    const json content = m.value("content", json());
    if (content.is_string()) {
      msg.content = content.get<std::string>();
    } else if (content.is_array()) {  // [{"type": "text", "text": ...}, ...]
      for (const json& part : content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string())
          throw BadRequest("message content parts must be {\"type\": \"text\", \"text\": ...}");
        msg.content += part["text"].get<std::string>();
      }
    } else if (!content.is_null()) {
      throw BadRequest("a message's 'content' must be a string or an array of text parts");
    }
    out.push_back(std::move(msg));
  }
  return out;
}

// --- responses ---

std::string random_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t base = std::random_device{}();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s%016llx", prefix,
                static_cast<unsigned long long>(base ^ (counter++ * 0x9E3779B97F4A7C15ull)));
  return buf;
}

json usage_json(const server::Task::Result& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}}};
}

json timings_json(const server::Task::Result& r) {
  const int64_t evaluated = r.prompt_tokens - r.cached_tokens;
  return {{"prompt_n", evaluated},
          {"prompt_ms", r.prompt_ms},
          {"prompt_per_second", r.prompt_ms > 0 ? evaluated * 1000.0 / r.prompt_ms : 0.0},
          {"predicted_n", r.completion_tokens},
          {"predicted_ms", r.gen_ms},
          {"predicted_per_second", r.gen_ms > 0 ? r.completion_tokens * 1000.0 / r.gen_ms : 0.0}};
}

// One completion, the same for both endpoints except for the shapes of the JSON.
struct Shape {
  bool chat = false;
  std::string id, model;
  int64_t created = 0;
  json choice(const std::string& text, const json& finish_reason, bool chunk) const {
    json c{{"index", 0}};
    if (!chat) {
      c["text"] = text;
      c["logprobs"] = nullptr;
    } else if (chunk) {
      c["delta"] = text.empty() ? json::object() : json{{"content", text}};
    } else {
      c["message"] = {{"role", "assistant"}, {"content", text}};
    }
    c["finish_reason"] = finish_reason;
    return c;
  }
  json object(const json& choice, bool chunk) const {
    return {{"id", id},
            {"object",
             chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
            {"created", created},
            {"model", model},
            {"choices", json::array({choice})}};
  }
};

class Server {
 public:
  Server(std::shared_ptr<const engine::Model> model, server::Scheduler& scheduler, ServerConfig cfg)
      : model_(std::move(model)), scheduler_(scheduler), cfg_(std::move(cfg)) {}

  void routes(httplib::Server& http) {
    auto guarded = [this](auto handler) {
      return [this, handler](const httplib::Request& req, httplib::Response& res) {
        try {
          (this->*handler)(req, res);
        } catch (const BadRequest& e) {
          send_error(res, 400, e.what());
        } catch (const Error& e) {
          send_error(res, e.code() == ErrorCode::kInvalidArgument ? 400 : 500, e.what());
        }
      };
    };
    http.Get("/health", guarded(&Server::health));
    http.Get("/v1/health", guarded(&Server::health));
    http.Get("/metrics", guarded(&Server::metrics));
    for (const char* p : {"/v1/models", "/models"}) http.Get(p, guarded(&Server::models));
    for (const char* p : {"/v1/chat/completions", "/chat/completions"})
      http.Post(p, guarded(&Server::chat_completions));
    for (const char* p : {"/v1/completions", "/completions"})
      http.Post(p, guarded(&Server::completions));
    for (const char* p : {"/v1/embeddings", "/embeddings"})
      http.Post(p, guarded(&Server::embeddings));
    http.Post("/tokenize", guarded(&Server::tokenize));
    http.Post("/detokenize", guarded(&Server::detokenize));
  }

  std::atomic<int64_t> requests{0}, errors{0};

 private:
  std::shared_ptr<const engine::Model> model_;
  server::Scheduler& scheduler_;
  ServerConfig cfg_;

  void health(const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"status", "ok"}});
  }

  void models(const httplib::Request&, httplib::Response& res) {
    const auto& c = model_->config;
    send_json(res, {{"object", "list"},
                    {"data", json::array({{{"id", cfg_.model_name},
                                           {"object", "model"},
                                           {"created", static_cast<int64_t>(std::time(nullptr))},
                                           {"owned_by", "qinfer"},
                                           {"meta",
                                            {{"architecture", c.arch_name},
                                             {"n_vocab", c.n_vocab},
                                             {"n_ctx_train", c.n_ctx_train},
                                             {"n_ctx_slot", cfg_.n_ctx_slot},
                                             {"n_slots", cfg_.n_slots},
                                             {"n_embd", c.n_embd}}}}})}});
  }

  void metrics(const httplib::Request&, httplib::Response& res) {
    const server::Stats s = scheduler_.stats();
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help, double value) {
      char line[64];
      std::snprintf(line, sizeof line, "%.17g", value);
      out += std::string("# HELP qinfer_") + name + " " + help + "\n# TYPE qinfer_" + name + " " +
             type + "\nqinfer_" + name + " " + line + "\n";
    };
    metric("requests_total", "counter", "HTTP requests answered.",
           static_cast<double>(requests.load()));
    metric("requests_errors_total", "counter", "HTTP requests answered with a 4xx or 5xx status.",
           static_cast<double>(errors.load()));
    metric("tasks_done_total", "counter", "Generations and embeddings finished.",
           static_cast<double>(s.tasks_done));
    metric("tasks_cancelled_total", "counter", "Generations cancelled (client gone or shutdown).",
           static_cast<double>(s.tasks_cancelled));
    metric("prompt_tokens_total", "counter", "Prompt tokens evaluated.",
           static_cast<double>(s.prompt_tokens));
    metric("prompt_tokens_cached_total", "counter", "Prompt tokens found in a slot's cache.",
           static_cast<double>(s.cached_tokens));
    metric("tokens_predicted_total", "counter", "Tokens generated.",
           static_cast<double>(s.generated_tokens));
    metric("prompt_seconds_total", "counter", "Time spent on prompts.", s.prompt_seconds);
    metric("tokens_predicted_seconds_total", "counter", "Time spent generating.", s.gen_seconds);
    metric("prompt_tokens_seconds", "gauge", "Prompt tokens per second, over the server's life.",
           s.prompt_seconds > 0 ? s.prompt_tokens / s.prompt_seconds : 0.0);
    metric("predicted_tokens_seconds", "gauge", "Generated tokens per second, over its life.",
           s.gen_seconds > 0 ? s.generated_tokens / s.gen_seconds : 0.0);
    metric("requests_processing", "gauge", "Slots busy now.", s.busy_slots);
    metric("requests_deferred", "gauge", "Requests waiting for a slot now.", s.queued);
    metric("slots", "gauge", "Slots (-np).", s.n_slots);
    res.set_content(out, "text/plain; version=0.0.4");
  }

  void tokenize(const httplib::Request& req, httplib::Response& res) {
    const json body = parse_body(req);
    if (!has(body, "content") || !body["content"].is_string())
      throw BadRequest("'content' must be a string");
    const bool add_special = boolean(body, "add_special", false);
    const bool parse_special = boolean(body, "parse_special", true);
    const bool with_pieces = boolean(body, "with_pieces", false);
    const auto ids =
        model_->tokenizer->encode(body["content"].get<std::string>(), add_special, parse_special);
    json tokens = json::array();
    for (TokenId id : ids) {
      if (with_pieces)
        tokens.push_back({{"id", id}, {"piece", model_->tokenizer->piece(id)}});
      else
        tokens.push_back(id);
    }
    send_json(res, {{"tokens", tokens}});
  }

  void detokenize(const httplib::Request& req, httplib::Response& res) {
    const json body = parse_body(req);
    if (!has(body, "tokens") || !body["tokens"].is_array())
      throw BadRequest("'tokens' must be an array of token ids");
    const auto ids = token_list(body["tokens"], *model_, "'tokens'");
    std::string text;  // the pieces joined, as llama-server (no leading space removed)
    for (TokenId id : ids) text += model_->tokenizer->piece(id);
    send_json(res, {{"content", text}});
  }

  void embeddings(const httplib::Request& req, httplib::Response& res) {
    const json body = parse_body(req);
    if (!has(body, "input")) throw BadRequest("'input' is required");
    if (has(body, "encoding_format") && body["encoding_format"] != "float")
      throw BadRequest("only 'encoding_format': 'float' is supported");
    const json& in = body["input"];
    server::Job job;
    job.kind = server::Job::Kind::kEmbedding;
    auto add = [&](const json& e) {
      std::vector<TokenId> ids;
      if (e.is_string())
        ids = model_->tokenizer->encode(e.get<std::string>(), true, false);
      else if (e.is_array())
        ids = token_list(e, *model_, "'input'");
      else
        throw BadRequest("'input' must be a string, a list of strings, or token id lists");
      if (ids.empty()) throw BadRequest("an input of 'input' is empty");
      if (static_cast<int64_t>(ids.size()) > cfg_.n_ctx_slot)
        throw BadRequest("an input is " + std::to_string(ids.size()) +
                         " tokens; a slot's context is " + std::to_string(cfg_.n_ctx_slot));
      job.inputs.push_back(std::move(ids));
    };
    const bool one_token_list =
        in.is_array() && !in.empty() &&
        std::all_of(in.begin(), in.end(), [](const json& e) { return e.is_number_integer(); });
    if (in.is_string() || one_token_list) {
      add(in);
    } else if (in.is_array() && !in.empty()) {
      for (const json& e : in) add(e);
    } else {
      throw BadRequest("'input' must be a string, a list of strings, or token id lists");
    }
    auto task = std::make_shared<server::Task>(std::move(job));
    if (!submit(task, res)) return;
    task->wait_done();
    const server::Task::Result r = task->result();
    if (!finished_ok(r, res)) return;
    json data = json::array();
    for (size_t i = 0; i < r.embeddings.size(); ++i)
      data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", r.embeddings[i]}});
    send_json(res,
              {{"object", "list"},
               {"data", data},
               {"model", cfg_.model_name},
               {"usage", {{"prompt_tokens", r.prompt_tokens}, {"total_tokens", r.prompt_tokens}}}});
  }

  void completions(const httplib::Request& req, httplib::Response& res) {
    const json body = parse_body(req);
    serve_completion(body, completion_job(body, prompt_tokens(body, *model_), cfg_, *model_), false,
                     res);
  }

  void chat_completions(const httplib::Request& req, httplib::Response& res) {
    const json body = parse_body(req);
    const std::string prompt = chat::apply(cfg_.template_text, chat_messages(body), true);
    serve_completion(
        body, completion_job(body, model_->tokenizer->encode(prompt, true, true), cfg_, *model_),
        true, res);
  }

  bool submit(const std::shared_ptr<server::Task>& task, httplib::Response& res) {
    if (scheduler_.submit(task)) return true;
    send_error(res, 503,
               "the server is busy: every slot is in use and the queue is full; retry later");
    return false;
  }

  // False (and the error response written) when the task did not finish normally.
  static bool finished_ok(const server::Task::Result& r, httplib::Response& res) {
    if (r.finish_reason == "cancelled") {
      send_error(res, 503, "the request was cancelled: the server is shutting down");
      return false;
    }
    if (r.finish_reason == "error") {
      send_error(res, 500, r.error);
      return false;
    }
    return true;
  }

  void serve_completion(const json& body, server::Job job, bool chat, httplib::Response& res) {
    const bool stream = boolean(body, "stream", false);
    bool include_usage = false;
    if (has(body, "stream_options")) {
      if (!body["stream_options"].is_object())
        throw BadRequest("'stream_options' must be an object");
      include_usage = boolean(body["stream_options"], "include_usage", false);
    }
    Shape shape{chat, random_id(chat ? "chatcmpl-" : "cmpl-"), cfg_.model_name,
                static_cast<int64_t>(std::time(nullptr))};
    auto task = std::make_shared<server::Task>(std::move(job));
    if (!submit(task, res)) return;
    if (!stream) {
      task->wait_done();
      bool done = false;
      const std::string text = task->wait_text(0, done);
      const server::Task::Result r = task->result();
      if (!finished_ok(r, res)) return;
      json out = shape.object(shape.choice(text, r.finish_reason, false), false);
      out["usage"] = usage_json(r);
      out["timings"] = timings_json(r);
      send_json(res, out);
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    auto started = std::make_shared<bool>(false);
    res.set_chunked_content_provider(
        "text/event-stream",
        [task, shape, chat, include_usage, started](size_t, httplib::DataSink& sink) {
          auto write = [&](const json& event) {
            const std::string s =
                "data: " + event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
            return sink.write(s.data(), s.size());
          };
          if (chat && !*started) {  // OpenAI's first chunk names the role
            json first = shape.object(shape.choice("", nullptr, true), true);
            first["choices"][0]["delta"] = {{"role", "assistant"}, {"content", ""}};
            if (!write(first)) return task->cancel(), false;
          }
          *started = true;
          bool done = false;
          const std::string text = task->wait_text(500, done);
          if (!text.empty() && !write(shape.object(shape.choice(text, nullptr, true), true)))
            return task->cancel(), false;
          if (text.empty() && !done) {
            // Waiting for a slot or a long prompt: an SSE comment, which clients ignore, finds
            // out whether the client is still there (a write to a closed connection fails).
            static constexpr char keep_alive[] = ": waiting\n\n";
            if (!sink.write(keep_alive, sizeof keep_alive - 1)) return task->cancel(), false;
          }
          if (!done) return true;
          const server::Task::Result r = task->result();
          if (r.finish_reason == "cancelled" || r.finish_reason == "error") {
            const std::string msg = r.finish_reason == "error"
                                        ? r.error
                                        : "the request was cancelled: the server is stopping";
            write({{"error", {{"code", 500}, {"message", msg}, {"type", "server_error"}}}});
          } else {
            json last = shape.object(shape.choice("", r.finish_reason, true), true);
            last["timings"] = timings_json(r);
            write(last);
            if (include_usage) {
              json u = shape.object(json(), true);
              u["choices"] = json::array();
              u["usage"] = usage_json(r);
              write(u);
            }
          }
          const std::string end = "data: [DONE]\n\n";
          sink.write(end.data(), end.size());
          sink.done();
          return true;
        },
        [task](bool success) {
          if (!success) task->cancel();  // the client went away: free its slot
        });
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qinfer-server: an OpenAI-compatible HTTP server for a GGUF model"};
  std::string model_path, host = "127.0.0.1", api_key, alias, chat_template_name;
  std::string cache_k = "f16", cache_v = "f16";
  int port = 8080, n_slots = 1, n_threads = 0, n_batch = 512, max_queue = 32, n_gpu_layers = 0;
  int64_t n_ctx = 0, n_predict = -1, timeout = 600;
  size_t max_body = 8u << 20;
  bool no_cache_prompt = false, no_mmap = false, quiet = false;
  app.add_option("-m,--model", model_path, "GGUF model file")->required()->check(CLI::ExistingFile);
  app.add_option("--host", host, "address to listen on (default 127.0.0.1: this machine only)");
  app.add_option("--port", port, "port (default 8080; 0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("-c,--ctx-size", n_ctx,
                 "context size, shared by the slots (default: the model's training context)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  app.add_option("--parallel", n_slots, "slots: requests served at once (-np, default 1)")
      ->check(CLI::Range(1, 256));
  app.add_option("-t,--threads", n_threads, "threads (default: physical cores)")
      ->check(CLI::Range(1, 1024));
  app.add_option("-b,--batch-size", n_batch,
                 "the most prompt tokens evaluated in one step (default 512)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--queue", max_queue,
                 "requests that may wait for a slot; beyond them the server answers 503 "
                 "(default 32)")
      ->check(CLI::Range(0, 100000));
  app.add_option("-n,--n-predict", n_predict,
                 "default max_tokens of a request (default -1: until the end or the context)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 30));
  app.add_option("--api-key", api_key, "require 'Authorization: Bearer KEY' on every request");
  app.add_option("--timeout", timeout, "read/write timeout in seconds (-to, default 600)")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  app.add_option("--max-body", max_body, "largest request body in bytes (default 8 MiB)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  app.add_option("--alias", alias, "the model's name in responses (-a; default: the file name)");
  app.add_option("--chat-template", chat_template_name,
                 "a built-in template name or Jinja text instead of the model's");
  app.add_option("--cache-type-k", cache_k, "K cache type: f32, f16, bf16, q8_0, q4_0 (-ctk)");
  app.add_option("--cache-type-v", cache_v, "V cache type: f32, f16, bf16, q8_0, q4_0 (-ctv)");
  app.add_flag("--no-cache-prompt", no_cache_prompt,
               "always evaluate the whole prompt (default: reuse a slot's cached prefix)");
  app.add_flag("--no-mmap", no_mmap, "read the model into memory instead of mapping it");
  app.add_option("--n-gpu-layers,--gpu-layers", n_gpu_layers,
                 "accepted with a warning: qinfer runs on the CPU (-ngl)");
  app.add_flag("-q,--quiet", quiet, "no line per request on stderr");
  tools::parse_command_line(app, argc, argv,
                            {{"-np", "--parallel"},
                             {"-ctk", "--cache-type-k"},
                             {"-ctv", "--cache-type-v"},
                             {"-to", "--timeout"},
                             {"-ngl", "--n-gpu-layers"},
                             {"-a", "--alias"}});

  // SIGINT and SIGTERM are taken by one thread with sigwait (set before any thread starts, so
  // every thread inherits the mask); a closed connection must not kill the process.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  return tools::run_guarded([&] {
    if (n_gpu_layers != 0) std::fprintf(stderr, "warning: -ngl ignored: qinfer runs on the CPU\n");
    auto model = engine::Model::load(model_path, OpenOptions{.use_mmap = !no_mmap});
    ServerConfig cfg;
    cfg.n_slots = n_slots;
    cfg.n_predict = n_predict;
    cfg.model_name = !alias.empty() ? alias : std::filesystem::path(model_path).filename().string();
    const Value* tmpl = model->file.find("tokenizer.chat_template");
    cfg.template_text = !chat_template_name.empty() ? chat_template_name
                        : tmpl != nullptr && tmpl->type == ValueType::STRING
                            ? std::string(tmpl->as_string())
                            : "chatml";
    chat::apply(cfg.template_text, {}, true);  // an unknown template fails now
    // As llama-server: -c is the whole context, each slot gets an equal share.
    const int64_t total = n_ctx > 0 ? n_ctx : model->config.n_ctx_train;
    cfg.n_ctx_slot = total / n_slots;
    if (cfg.n_ctx_slot < 8)
      throw Error(ErrorCode::kInvalidArgument, "a context of " + std::to_string(total) +
                                                   " tokens over " + std::to_string(n_slots) +
                                                   " slots leaves too little per slot; raise -c");

    server::Scheduler scheduler(model, {.n_slots = n_slots,
                                        .n_ctx_slot = cfg.n_ctx_slot,
                                        .n_threads = n_threads,
                                        .n_batch = n_batch,
                                        .max_queue = max_queue,
                                        .cache_prompt = !no_cache_prompt,
                                        .cache_k = KvCache::parse_type(cache_k),
                                        .cache_v = KvCache::parse_type(cache_v)});
    Server server(model, scheduler, cfg);
    httplib::Server http;
    // Enough connection threads for every slot, the queue, and quick requests besides.
    const size_t n_http_threads = static_cast<size_t>(n_slots + max_queue + 16);
    http.new_task_queue = [n_http_threads] { return new httplib::ThreadPool(n_http_threads); };
    // SO_REUSEADDR only: cpp-httplib's default SO_REUSEPORT would let a second server share
    // the port (and its clients) instead of failing to start.
    // The listening socket is the last one cpp-httplib makes while binding (it tries each
    // address of the host in turn and keeps the one that binds); kept to widen its backlog.
    int listen_fd = -1;
    http.set_socket_options([&listen_fd](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      listen_fd = sock;
    });
    http.set_payload_max_length(max_body);
    http.set_read_timeout(timeout);
    http.set_write_timeout(timeout);
    // cpp-httplib waits this long for the first request on a new connection too: a client
    // slow to send (a loaded machine) must not find its connection closed under it.
    http.set_keep_alive_timeout(15);
    http.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
      if (api_key.empty() || req.path == "/health" || req.path == "/v1/health")
        return httplib::Server::HandlerResponse::Unhandled;
      const std::string auth = req.get_header_value("Authorization");
      if (auth == "Bearer " + api_key || req.get_header_value("X-Api-Key") == api_key)
        return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, 401, "invalid or missing API key (send 'Authorization: Bearer KEY')");
      return httplib::Server::HandlerResponse::Handled;
    });
    http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;  // a handler's own error object
      if (res.status == 404)
        send_error(res, 404, "no such endpoint: " + req.method + " " + req.path);
      else if (res.status == 413)
        send_error(res, 413, "the request body is larger than the server accepts (--max-body)");
      else
        send_error(res, res.status, "the request could not be served");
    });
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "internal error";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          send_error(res, 500, what);
        });
    http.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
      ++server.requests;
      if (res.status >= 400) ++server.errors;
      if (!quiet)
        std::fprintf(stderr, "%s %s %d\n", req.method.c_str(), req.path.c_str(), res.status);
    });
    server.routes(http);

    const int bound =
        port == 0 ? http.bind_to_any_port(host) : (http.bind_to_port(host, port) ? port : -1);
    if (bound <= 0)
      throw Error(ErrorCode::kIo, "cannot listen on " + host + ":" + std::to_string(port));
    // Debian's cpp-httplib 0.11 listens with a backlog of 5: a burst of new connections
    // overflows it, and a client whose SYN cookie then fails gets a reset. listen() again on
    // a listening socket only changes its backlog (capped by net.core.somaxconn).
    if (listen_fd < 0 || ::listen(listen_fd, kListenBacklog) != 0)
      std::fprintf(stderr, "qinfer-server: warning: the listen backlog stays cpp-httplib's 5\n");
    std::fprintf(stderr,
                 "qinfer-server: %s, %d slot(s) of %lld tokens, listening on http://%s:%d\n",
                 cfg.model_name.c_str(), n_slots, static_cast<long long>(cfg.n_ctx_slot),
                 host.c_str(), bound);

    std::atomic<bool> stopping{false};
    std::thread signals([&] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      if (stopping.exchange(true)) return;  // woken by main after listen() ended by itself
      std::fprintf(stderr, "qinfer-server: signal %d, stopping\n", sig);
      scheduler.shutdown();  // in-flight generations end as cancelled
      http.stop();
    });
    const bool ok = http.listen_after_bind();
    if (!stopping.exchange(true)) pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
    scheduler.shutdown();
    std::fprintf(stderr, "qinfer-server: stopped\n");
    return ok ? 0 : 1;
  });
}
