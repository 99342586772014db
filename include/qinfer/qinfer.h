/* qinfer C API (C99). Opaque handles; every call returns a qinfer_status, and
 * qinfer_last_error() gives the message of the last failure on the calling thread.
 * No exception crosses this boundary; a null argument is QINFER_ERR_INVALID_ARGUMENT.
 * Thread safety: as the C++ API — a model may be shared, a session is used by one thread. */
#ifndef QINFER_H
#define QINFER_H

#include <stddef.h>
#include <stdint.h>

#include "qinfer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qinfer_status {
  QINFER_OK = 0,
  QINFER_ERR_IO = 1,
  QINFER_ERR_INVALID_FILE = 2,
  QINFER_ERR_UNSUPPORTED = 3,
  QINFER_ERR_MISSING_KEY = 4,
  QINFER_ERR_TYPE_MISMATCH = 5,
  QINFER_ERR_INVALID_ARGUMENT = 6,
  QINFER_ERR_CONTEXT_OVERFLOW = 7,
  QINFER_ERR_INTERNAL = 8,
  QINFER_ERR_BUFFER_TOO_SMALL = 9,
  QINFER_ERR_OUT_OF_MEMORY = 10,
  QINFER_ERR_CANCELLED = 11
} qinfer_status;

typedef struct qinfer_model qinfer_model;
typedef struct qinfer_session qinfer_session;

typedef struct qinfer_model_options {
  int use_mmap; /* default 1 */
} qinfer_model_options;

typedef struct qinfer_session_options {
  int32_t n_ctx;            /* default 0: the model's training context */
  int32_t n_threads;        /* default 0: physical cores */
  const char* cache_type_k; /* default "f16" (NULL too); also f32, bf16, q8_0, q4_0 */
  const char* cache_type_v; /* default "f16" (NULL too) */
} qinfer_session_options;

typedef struct qinfer_generate_options {
  int32_t max_tokens;    /* default 128 */
  float temperature;     /* default 0.8; 0 = greedy */
  int32_t top_k;         /* default 40 */
  float top_p;           /* default 0.95 */
  float min_p;           /* default 0.05 */
  float repeat_penalty;  /* default 1.0 */
  int32_t repeat_last_n; /* default 64 */
  uint64_t seed;         /* default 0 */
} qinfer_generate_options;

/* Called with each piece of complete UTF-8 text (not NUL-terminated); return 0 to stop. */
typedef int (*qinfer_token_callback)(const char* text, size_t length, void* user_data);

QINFER_API const char* qinfer_version(void);
QINFER_API const char* qinfer_last_error(void);

QINFER_API qinfer_model_options qinfer_model_options_default(void);
QINFER_API qinfer_session_options qinfer_session_options_default(void);
QINFER_API qinfer_generate_options qinfer_generate_options_default(void);

/* options may be NULL (defaults). */
QINFER_API qinfer_status qinfer_model_load(const char* path, const qinfer_model_options* options,
                                           qinfer_model** out_model);
QINFER_API void qinfer_model_free(qinfer_model* model);
QINFER_API int32_t qinfer_model_vocab_size(const qinfer_model* model);

/* The session keeps its own reference to the model: freeing the model first is allowed. */
QINFER_API qinfer_status qinfer_session_new(const qinfer_model* model,
                                            const qinfer_session_options* options,
                                            qinfer_session** out_session);
QINFER_API void qinfer_session_free(qinfer_session* session);
QINFER_API qinfer_status qinfer_session_reset(qinfer_session* session);

/* Tokenizes text; writes at most capacity ids and the needed count to *n_tokens (also
 * when the buffer is too small: QINFER_ERR_BUFFER_TOO_SMALL). */
QINFER_API qinfer_status qinfer_tokenize(const qinfer_model* model, const char* text,
                                         int add_special, int32_t* tokens, size_t capacity,
                                         size_t* n_tokens);

/* Generates after the prompt; callback may be NULL. options may be NULL (defaults). */
QINFER_API qinfer_status qinfer_generate(qinfer_session* session, const char* prompt,
                                         const qinfer_generate_options* options,
                                         qinfer_token_callback callback, void* user_data);

typedef enum qinfer_stop_reason {
  QINFER_STOP_EOS = 0,      /* an end-of-generation token */
  QINFER_STOP_LENGTH = 1,   /* max_tokens */
  QINFER_STOP_STRING = 2,   /* a stop string */
  QINFER_STOP_CONTEXT = 3,  /* the context is full */
  QINFER_STOP_CANCELLED = 4 /* qinfer_session_cancel or the callback returned 0 */
} qinfer_stop_reason;

typedef struct qinfer_generate_result {
  qinfer_stop_reason stop_reason;
  int32_t prompt_tokens;
  int32_t generated_tokens;
  double prompt_ms;
  double gen_ms;
} qinfer_generate_result;

/* Called with each token id and its piece of complete UTF-8 text; return 0 to stop. */
typedef int (*qinfer_token_id_callback)(int32_t token, const char* text, size_t length,
                                        void* user_data);

/* qinfer_generate with the token id in the callback and the stop reason and timings in
 * *result (may be NULL). parse_special: nonzero parses special tokens written in the prompt. */
QINFER_API qinfer_status qinfer_complete(qinfer_session* session, const char* prompt,
                                         const qinfer_generate_options* options, int parse_special,
                                         qinfer_token_id_callback callback, void* user_data,
                                         qinfer_generate_result* result);

/* Any thread: stops the call in progress on the session (or the next one). */
QINFER_API void qinfer_session_cancel(qinfer_session* session);
QINFER_API qinfer_status qinfer_session_set_threads(qinfer_session* session, int32_t n_threads);
QINFER_API int32_t qinfer_session_position(const qinfer_session* session);
/* Forgets the positions from n on (n <= position). */
QINFER_API qinfer_status qinfer_session_truncate(qinfer_session* session, int32_t n);
QINFER_API qinfer_status qinfer_session_save(const qinfer_session* session, const char* path);
QINFER_API qinfer_status qinfer_session_load(qinfer_session* session, const char* path);

/* The embedding of text (see qinfer.hpp's Session::embed): mean pooling when mean_pooling is
 * nonzero (else the last token's), L2-normalised when normalize is nonzero. Writes at most
 * capacity floats and the embedding length to *n. The session is empty afterwards. */
QINFER_API qinfer_status qinfer_embed(qinfer_session* session, const char* text, int mean_pooling,
                                      int normalize, float* embedding, size_t capacity, size_t* n);

QINFER_API qinfer_status qinfer_eval(qinfer_session* session, const int32_t* tokens,
                                     size_t n_tokens);
/* Model information. Strings returned as const char* live as long as the model. */
QINFER_API const char* qinfer_model_architecture(const qinfer_model* model);
QINFER_API int32_t qinfer_model_context_length(const qinfer_model* model);
QINFER_API int32_t qinfer_model_embedding_length(const qinfer_model* model);
QINFER_API int32_t qinfer_model_layer_count(const qinfer_model* model);
QINFER_API int64_t qinfer_model_parameter_count(const qinfer_model* model);
QINFER_API size_t qinfer_model_metadata_count(const qinfer_model* model);
/* The key of metadata entry i (file order); NULL when out of range. */
QINFER_API const char* qinfer_model_metadata_key(const qinfer_model* model, size_t i);
/* A metadata value as text (arrays as "[type; length]"): at most capacity bytes (no NUL) and
 * the needed size to *length; QINFER_ERR_MISSING_KEY when absent. */
QINFER_API qinfer_status qinfer_model_metadata(const qinfer_model* model, const char* key,
                                               char* buffer, size_t capacity, size_t* length);

/* Vocabulary: BOS/EOS ids (-1 when none), a token's text, whether it is special or ends
 * generation. */
QINFER_API int32_t qinfer_token_bos(const qinfer_model* model);
QINFER_API int32_t qinfer_token_eos(const qinfer_model* model);
QINFER_API int qinfer_token_is_special(const qinfer_model* model, int32_t token);
QINFER_API int qinfer_token_is_eog(const qinfer_model* model, int32_t token);
QINFER_API qinfer_status qinfer_token_piece(const qinfer_model* model, int32_t token, char* buffer,
                                            size_t capacity, size_t* length);

/* A conversation message (role "system", "user", "assistant", ...), NUL-terminated strings. */
typedef struct qinfer_chat_message {
  const char* role;
  const char* content;
} qinfer_chat_message;

/* Formats a conversation as a chat prompt (see qinfer.hpp's apply_chat_template): with the
 * template `name_or_template` (a built-in name or a Jinja text), or when it is NULL with the
 * model's own template (chatml when the model has none; model may then not be NULL). Writes
 * at most capacity bytes (no NUL) and the needed size to *length (also when the buffer is too
 * small: QINFER_ERR_BUFFER_TOO_SMALL). add_generation_prompt: nonzero opens the assistant's turn.
 */
QINFER_API qinfer_status qinfer_chat_apply_template(const qinfer_model* model,
                                                    const char* name_or_template,
                                                    const qinfer_chat_message* messages,
                                                    size_t n_messages, int add_generation_prompt,
                                                    char* buffer, size_t capacity, size_t* length);

/* The last eval's logits: *n_vocab values valid until the next call on the session. */
QINFER_API qinfer_status qinfer_logits(const qinfer_session* session, const float** logits,
                                       size_t* n_vocab);

#ifdef __cplusplus
}
#endif

#endif /* QINFER_H */
