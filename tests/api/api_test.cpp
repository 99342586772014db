// The public API, linked against libqinfer.so as a user would: the C API survives null and
// invalid arguments, the C++ API reproduces the engine's greedy text, and one Model serves
// sessions on several threads with identical results.
#include <gtest/gtest.h>

#include <climits>
#include <thread>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "qinfer/qinfer.h"
#include "qinfer/qinfer.hpp"
#include "tests/test_util.hpp"

namespace {

const std::string kModel = qinfer::test::data_path("models/stories260K.gguf");

TEST(CApi, NullAndInvalidArgumentsAreErrors) {
  qinfer_model* model = nullptr;
  EXPECT_EQ(qinfer_model_load(nullptr, nullptr, &model), QINFER_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qinfer_last_error()).find("path"), std::string::npos);
  EXPECT_EQ(qinfer_model_load(kModel.c_str(), nullptr, nullptr), QINFER_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qinfer_model_load("/nonexistent.gguf", nullptr, &model), QINFER_ERR_IO);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(qinfer_model_load(qinfer::test::data_path("README.md").c_str(), nullptr, &model),
            QINFER_ERR_INVALID_FILE);
  EXPECT_NE(std::string(qinfer_last_error()).find("bad magic"), std::string::npos);

  qinfer_session* session = nullptr;
  EXPECT_EQ(qinfer_session_new(nullptr, nullptr, &session), QINFER_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qinfer_generate(nullptr, "x", nullptr, nullptr, nullptr), QINFER_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qinfer_eval(nullptr, nullptr, 0), QINFER_ERR_INVALID_ARGUMENT);
  const float* logits = nullptr;
  size_t n = 0;
  EXPECT_EQ(qinfer_logits(nullptr, &logits, &n), QINFER_ERR_INVALID_ARGUMENT);
  size_t count = 0;
  EXPECT_EQ(qinfer_tokenize(nullptr, "x", 1, nullptr, 0, &count), QINFER_ERR_INVALID_ARGUMENT);
  qinfer_model_free(nullptr);  // freeing NULL is a no-op
  qinfer_session_free(nullptr);

  ASSERT_EQ(qinfer_model_load(kModel.c_str(), nullptr, &model), QINFER_OK);
  EXPECT_EQ(qinfer_tokenize(model, nullptr, 1, nullptr, 0, &count), QINFER_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qinfer_tokenize(model, "Once upon a time", 1, nullptr, 0, &count),
            QINFER_ERR_BUFFER_TOO_SMALL);
  EXPECT_GT(count, 1u);
  std::vector<int32_t> ids(count);
  EXPECT_EQ(qinfer_tokenize(model, "Once upon a time", 1, ids.data(), ids.size(), &count),
            QINFER_OK);
  qinfer_session_options so = qinfer_session_options_default();
  so.n_ctx = -1;
  EXPECT_EQ(qinfer_session_new(model, &so, &session), QINFER_ERR_INVALID_ARGUMENT);
  so.n_ctx = 8;
  ASSERT_EQ(qinfer_session_new(model, &so, &session), QINFER_OK);
  EXPECT_EQ(qinfer_logits(session, &logits, &n), QINFER_ERR_INVALID_ARGUMENT);  // nothing evaluated
  const int32_t bad[1] = {1 << 20};
  EXPECT_EQ(qinfer_eval(session, bad, 1), QINFER_ERR_INVALID_ARGUMENT);
  std::vector<int32_t> too_many(9, 1);
  EXPECT_EQ(qinfer_eval(session, too_many.data(), too_many.size()), QINFER_ERR_CONTEXT_OVERFLOW);
  ASSERT_EQ(qinfer_eval(session, ids.data(), ids.size()), QINFER_OK);
  ASSERT_EQ(qinfer_logits(session, &logits, &n), QINFER_OK);
  EXPECT_EQ(static_cast<int32_t>(n), qinfer_model_vocab_size(model));
  qinfer_model_free(model);  // the session keeps the model alive
  EXPECT_EQ(qinfer_session_reset(session), QINFER_OK);
  ASSERT_EQ(qinfer_eval(session, ids.data(), ids.size()), QINFER_OK);
  qinfer_session_free(session);
  EXPECT_STREQ(qinfer_version(), qinfer::version());
}

int collect(const char* text, size_t length, void* user) {
  static_cast<std::string*>(user)->append(text, length);
  return 1;
}

TEST(CApi, GenerateMatchesCppApi) {
  qinfer_model* model = nullptr;
  qinfer_session* session = nullptr;
  ASSERT_EQ(qinfer_model_load(kModel.c_str(), nullptr, &model), QINFER_OK);
  ASSERT_EQ(qinfer_session_new(model, nullptr, &session), QINFER_OK);
  qinfer_generate_options o = qinfer_generate_options_default();
  o.temperature = 0;
  o.max_tokens = 30;
  std::string c_text;
  ASSERT_EQ(qinfer_generate(session, "Once upon a time", &o, collect, &c_text), QINFER_OK);
  qinfer_session_free(session);
  qinfer_model_free(model);

  const auto m = qinfer::Model::load(kModel);
  qinfer::Session s(m);
  const std::string cpp_text = s.generate("Once upon a time", {.max_tokens = 30, .temperature = 0});
  EXPECT_EQ(c_text, cpp_text);
  EXPECT_FALSE(cpp_text.empty());
}

TEST(CppApi, ModelInfoAndErrors) {
  const auto m = qinfer::Model::load(kModel);
  EXPECT_EQ(m.architecture(), "llama");
  EXPECT_EQ(m.vocab_size(), 512);
  EXPECT_EQ(m.embedding_length(), 64);
  EXPECT_EQ(m.layer_count(), 5);
  EXPECT_EQ(m.metadata("general.architecture").value(), "llama");
  EXPECT_FALSE(m.metadata("no.such.key").has_value());
  EXPECT_FALSE(m.tensors().empty());
  EXPECT_EQ(m.detokenize(m.tokenize("Once upon a time", false)), "Once upon a time");
  try {
    qinfer::Model::load("/nonexistent.gguf");
    FAIL();
  } catch (const qinfer::Error& e) {
    EXPECT_EQ(e.code(), qinfer::ErrorCode::kIo);
  }
}

TEST(CppApi, EvalAndLogitsForOwnSampling) {
  const auto m = qinfer::Model::load(kModel);
  qinfer::Session s(m);
  const auto ids = s.tokenize("Once upon a time");
  s.eval(ids);
  EXPECT_EQ(s.position(), static_cast<int32_t>(ids.size()));
  const auto logits = s.logits();
  ASSERT_EQ(static_cast<int32_t>(logits.size()), m.vocab_size());
  const int32_t best =
      static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  qinfer::Session g(m);
  const std::string first = g.generate("Once upon a time", {.max_tokens = 1, .temperature = 0});
  EXPECT_EQ(first, m.detokenize(std::vector<qinfer::Token>{best}).substr(0, first.size()));
}

TEST(CppApi, OneModelManySessionsOnThreads) {
  const auto m = qinfer::Model::load(kModel);
  std::string results[4];
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      qinfer::Session s(m, {.n_threads = 1});
      results[i] = s.generate("The cat", {.max_tokens = 24, .temperature = 0.7f, .seed = 42});
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 1; i < 4; ++i) EXPECT_EQ(results[i], results[0]);
  qinfer::Session again(m);
  EXPECT_EQ(again.generate("The cat", {.max_tokens = 24, .temperature = 0.7f, .seed = 42}),
            results[0]);
  qinfer::Session other(m);
  EXPECT_NE(other.generate("The cat", {.max_tokens = 24, .temperature = 0.7f, .seed = 7}),
            results[0]);
}

// Two host threads, each running a session whose matmuls run on a thread team of two, on one
// shared model: the same text as one session alone (run under ThreadSanitizer in CI).
TEST(CppApi, SessionsOnTwoThreadsWithThreadTeams) {
  const auto m = qinfer::Model::load(kModel);
  std::string results[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      qinfer::Session s(m, {.n_threads = 2});
      results[i] = s.generate("Once upon a time", {.max_tokens = 16, .temperature = 0});
    });
  }
  for (auto& t : threads) t.join();
  qinfer::Session alone(m, {.n_threads = 2});
  const std::string want = alone.generate("Once upon a time", {.max_tokens = 16, .temperature = 0});
  EXPECT_EQ(results[0], want);
  EXPECT_EQ(results[1], want);
}

// #27's findings, each of which failed before its fix.
TEST(Hardening, HugeThreadCountIsAStatusNotAnAbort) {
  qinfer_model* model = nullptr;
  ASSERT_EQ(qinfer_model_load(kModel.c_str(), nullptr, &model), QINFER_OK);
  qinfer_session_options so = qinfer_session_options_default();
  so.n_threads = INT32_MAX;
  qinfer_session* session = nullptr;
  EXPECT_EQ(qinfer_session_new(model, &so, &session), QINFER_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(session, nullptr);
  EXPECT_NE(std::string(qinfer_last_error()).find("thread count"), std::string::npos);
  qinfer_model_free(model);
}

TEST(Hardening, TokenizingEmptyTextIntoNoBuffer) {
  qinfer_model* model = nullptr;
  ASSERT_EQ(qinfer_model_load(kModel.c_str(), nullptr, &model), QINFER_OK);
  size_t n = 99;
  EXPECT_EQ(qinfer_tokenize(model, "", 0, nullptr, 0, &n), QINFER_OK);
  EXPECT_EQ(n, 0u);
  qinfer_model_free(model);
}

#if defined(_OPENMP)
TEST(Hardening, SessionThreadCountDoesNotLeakIntoTheHost) {
  const int before = omp_get_max_threads();
  const auto m = qinfer::Model::load(kModel);
  qinfer::Session s(m, {.n_threads = before == 1 ? 2 : 1});
  s.generate("Once", {.max_tokens = 2, .temperature = 0});
  EXPECT_EQ(omp_get_max_threads(), before);
}
#endif

TEST(Hardening, LongContextCostsOnlyWhatIsUsed) {
  const auto m = qinfer::Model::load(kModel);
  // 2^20 positions of this model's cache would be 640 MiB; a few tokens must not allocate it.
  qinfer::Session s(m, {.n_ctx = 1 << 20});
  s.generate("Once upon a time", {.max_tokens = 4, .temperature = 0});
  EXPECT_EQ(s.context_length(), 1 << 20);
  EXPECT_LT(s.cache_bytes(), size_t{1} << 20);
}

}  // namespace
