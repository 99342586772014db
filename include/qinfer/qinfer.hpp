// qinfer C++ API: load a GGUF model, open sessions on it, generate text.
//
//   auto model = qinfer::Model::load("model.gguf");
//   qinfer::Session session(model);
//   session.generate("Once upon a time", {.max_tokens = 64},
//                    [](std::string_view piece) { std::cout << piece; return true; });
//
// Thread safety: a Model is immutable once loaded and may be shared by any number of
// Sessions on any threads. A Session is used by one thread at a time.
// Errors: every failure throws qinfer::Error (code() and what()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qinfer/error.hpp"
#include "qinfer/export.h"

namespace qinfer {

using Token = int32_t;

// "MAJOR.MINOR.PATCH" of the library.
QINFER_API const char* version();

struct ModelOptions {
  bool use_mmap = true;  // false: read the file into memory instead of mapping it
};

struct SessionOptions {
  int32_t n_ctx = 0;                 // context length; 0 = the model's training context
  int32_t n_threads = 0;             // 0 = the machine's physical cores
  std::string cache_type_k = "f16";  // KV cache types: f32, f16 (llama.cpp's default), bf16,
  std::string cache_type_v = "f16";  // q8_0, q4_0
};

struct GenerateOptions {
  int32_t max_tokens = 128;
  float temperature = 0.8f;        // 0 = greedy
  int32_t top_k = 40;              // 0 = off
  float top_p = 0.95f;             // 1 = off
  float min_p = 0.05f;             // 0 = off
  float repeat_penalty = 1.0f;     // 1 = off
  int32_t repeat_last_n = 64;      // the penalties' window (-1: everything)
  float frequency_penalty = 0.0f;  // OpenAI's: a token seen c times in the window loses
  float presence_penalty = 0.0f;   // c * frequency_penalty + presence_penalty (0 = off)
  uint64_t seed = 0;               // the same seed and options give the same text
  std::vector<std::string> stop;   // stop when the text contains one of these
  bool add_bos = true;             // BOS before the prompt when the vocabulary adds one
  bool parse_special = false;      // special tokens written in the prompt ("<|im_start|>") parsed
  bool ignore_eos = false;         // never stop at an end-of-generation token
};

// What Session::complete returns.
struct GenerateResult {
  std::string text;
  std::vector<Token> tokens;  // the generated tokens (without the end-of-generation one)
  std::string stop_reason;    // "eos", "length", "stop" (a stop string), "context" (full),
                              // "cancelled" (cancel() or the callback returned false)
  int32_t prompt_tokens = 0;
  double prompt_ms = 0, gen_ms = 0;
};

// How embed() turns the hidden states of a text's tokens into one vector.
enum class Pooling { kMean, kLast };

struct TensorDesc {
  std::string name;
  std::string type;            // ggml's name, e.g. "q4_K"
  std::vector<int64_t> shape;  // ne[0] first (the row length)
};

// One message of a conversation; role is "system", "user", "assistant" (or another role the
// template knows, e.g. "tool").
struct ChatMessage {
  std::string role;
  std::string content;
};

// The conversation formatted as a chat model's prompt. `name_or_template` is one of
// chat_templates() ("chatml", "llama3", ...) or a model's Jinja template text, recognised by
// its markers as llama.cpp does (docs/chat.md); `add_generation_prompt` opens the assistant's
// turn. Throws Error(kInvalidArgument) for a template it does not recognise.
QINFER_API std::string apply_chat_template(std::string_view name_or_template,
                                           std::span<const ChatMessage> messages,
                                           bool add_generation_prompt = true);
// The built-in template names.
QINFER_API std::vector<std::string> chat_templates();

struct ModelImpl;
struct SessionImpl;

class QINFER_API Model {
 public:
  static Model load(const std::string& path, const ModelOptions& options = {});

  std::string architecture() const;  // "llama" or "gpt2"
  int32_t context_length() const;    // training context
  int32_t vocab_size() const;
  int32_t embedding_length() const;
  int32_t layer_count() const;
  std::vector<TensorDesc> tensors() const;
  // A metadata value rendered as text (arrays as "[type; length]"); nullopt when absent.
  std::optional<std::string> metadata(std::string_view key) const;

  std::vector<Token> tokenize(std::string_view text, bool add_special = true,
                              bool parse_special = false) const;
  std::string detokenize(std::span<const Token> tokens) const;
  bool is_end_of_generation(Token token) const;
  Token bos_token() const;  // -1 when the vocabulary has none
  Token eos_token() const;
  std::string token_piece(Token token) const;      // its text (empty for control tokens)
  bool is_special(Token token) const;              // control, user-defined or unknown
  int64_t parameter_count() const;                 // elements of every tensor
  std::vector<std::string> metadata_keys() const;  // in file order

  // The model's tokenizer.chat_template text; nullopt when the file has none.
  std::optional<std::string> chat_template() const;
  // apply_chat_template with the model's template, or chatml when it has none (as llama.cpp).
  std::string apply_chat_template(std::span<const ChatMessage> messages,
                                  bool add_generation_prompt = true) const;

 private:
  friend class Session;
  explicit Model(std::shared_ptr<const ModelImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const ModelImpl> impl_;
};

class QINFER_API Session {
 public:
  explicit Session(const Model& model, const SessionOptions& options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Appends the prompt to the session (its KV cache is kept between calls) and samples up
  // to max_tokens; on_token receives each piece of complete UTF-8 text and returns false to
  // stop. Returns the generated text.
  std::string generate(std::string_view prompt, const GenerateOptions& options = {},
                       const std::function<bool(std::string_view)>& on_token = {});
  // The same, with the token id in the callback and the stop reason and timings returned.
  GenerateResult complete(std::string_view prompt, const GenerateOptions& options = {},
                          const std::function<bool(Token, std::string_view)>& on_token = {});

  std::vector<Token> tokenize(std::string_view text, bool add_special = true,
                              bool parse_special = false) const;
  std::string detokenize(std::span<const Token> tokens) const;

  // For callers who sample themselves: evaluate tokens after the current position and read
  // the logits (vocab_size values) of the last one.
  void eval(std::span<const Token> tokens);
  std::span<const float> logits() const;
  // eval, returning the logits of every token (tokens.size() x vocab_size values).
  std::vector<float> eval_all(std::span<const Token> tokens);

  // The embedding of a text: the model's final hidden state (after its output norm) of each
  // token, pooled (mean or last) and L2-normalised when asked. Uses the session's cache as
  // scratch: the session is empty (position 0) afterwards.
  std::vector<float> embed(std::string_view text, Pooling pooling = Pooling::kMean,
                           bool normalize = true);

  void reset();              // forget everything (position 0)
  void truncate(int32_t n);  // forget the positions from n on (rewind to n <= position())
  int32_t position() const;  // tokens in the KV cache
  int32_t context_length() const;
  size_t cache_bytes() const;           // memory the KV cache holds now (it grows with use)
  void set_threads(int32_t n_threads);  // 0 = physical cores

  // From any thread: stops the generate/complete/eval in progress on this session (or, if
  // none is, the next one) between tokens or between layers of a prompt. generate and complete
  // return early ("cancelled"); eval throws Error(kCancelled). Unfinished positions are dropped.
  void cancel();

  // The session's state (positions, tokens, logits, KV cache) to a file and back; loading
  // checks the file was saved from the same model shape and cache types.
  void save_state(const std::string& path) const;
  void load_state(const std::string& path);

 private:
  std::unique_ptr<SessionImpl> impl_;
};

}  // namespace qinfer
