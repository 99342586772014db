// The library features an application builds on, each against a property that must hold:
// cancellation from another thread, rewinding, saving and restoring a session, logits of
// every position, embeddings, stop reasons and token ids, the vocabulary, model information.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "qinfer/qinfer.h"
#include "qinfer/qinfer.hpp"
#include "tests/test_util.hpp"

namespace {

const std::string kModel = qinfer::test::data_path("models/stories260K.gguf");
const std::string kOtherModel = qinfer::test::data_path("models/wp-llama-Q4_0.gguf");

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "-" + std::to_string(::getpid()) + ".state"))
      .string();
}

TEST(Library, CancelFromAnotherThreadStopsGeneration) {
  const auto model = qinfer::Model::load(kModel);
  qinfer::Session session(model, {.n_ctx = 512});
  std::atomic<bool> started{false}, cancelled{false};
  std::thread canceller([&] {
    while (!started) std::this_thread::yield();
    session.cancel();
    cancelled = true;
  });
  int pieces = 0;
  const auto r =
      session.complete("Once upon a time", {.max_tokens = -1, .temperature = 0, .ignore_eos = true},
                       [&](qinfer::Token, std::string_view) {
                         if (!started.exchange(true)) {
                           while (!cancelled)
                             std::this_thread::yield();  // cancel() has been called by now
                         }
                         ++pieces;
                         return true;
                       });
  canceller.join();
  EXPECT_EQ(r.stop_reason, "cancelled");
  EXPECT_LE(r.tokens.size(), 3u);  // stopped at the next token, far before the context's end
  // The flag is spent: the session goes on.
  const auto again = session.complete(" and", {.max_tokens = 4, .temperature = 0});
  EXPECT_EQ(again.stop_reason, "length");
  EXPECT_EQ(again.tokens.size(), 4u);
}

TEST(Library, CancelBeforeEvalThrowsAndKeepsThePosition) {
  const auto model = qinfer::Model::load(kModel);
  qinfer::Session session(model);
  const auto tokens = model.tokenize("Once upon a time");
  session.eval(tokens);
  const auto logits = copy(session.logits());
  session.cancel();
  try {
    session.eval(model.tokenize(" there", false));
    FAIL() << "no error";
  } catch (const qinfer::Error& e) {
    EXPECT_EQ(e.code(), qinfer::ErrorCode::kCancelled);
  }
  EXPECT_EQ(session.position(), static_cast<int32_t>(tokens.size()));
  // The next eval runs, and gives what an uninterrupted session gives.
  session.eval(model.tokenize(" there", false));
  qinfer::Session fresh(model);
  fresh.eval(tokens);
  EXPECT_EQ(copy(fresh.logits()), logits);
  fresh.eval(model.tokenize(" there", false));
  EXPECT_EQ(copy(session.logits()), copy(fresh.logits()));
}

TEST(Library, TruncateRewindsToAnEarlierPosition) {
  const auto model = qinfer::Model::load(kModel);
  qinfer::Session session(model);
  const auto tokens = model.tokenize("Once upon a time there was");
  session.eval(tokens);
  const auto full = copy(session.logits());
  session.truncate(3);
  EXPECT_EQ(session.position(), 3);
  session.eval(std::span(tokens).subspan(3));
  EXPECT_EQ(copy(session.logits()), full);
  EXPECT_THROW(session.truncate(100), qinfer::Error);
}

TEST(Library, SaveThenLoadGivesTheSameNextLogits) {
  const auto model = qinfer::Model::load(kModel);
  const std::string path = temp_path("qinfer-save");
  qinfer::Session a(model, {.cache_type_k = "f32"}), b(model, {.cache_type_k = "f32"});
  a.eval(model.tokenize("Lily and Ben went to the park"));
  a.save_state(path);
  b.eval(model.tokenize("something else entirely"));
  b.load_state(path);
  EXPECT_EQ(b.position(), a.position());
  EXPECT_EQ(copy(b.logits()), copy(a.logits()));
  const auto next = model.tokenize(" to play", false);
  a.eval(next);
  b.eval(next);
  EXPECT_EQ(copy(b.logits()), copy(a.logits()));

  // The same through a K cache kept in tiles (q4_0; files keep rows), on a model whose heads
  // are whole q4_0 blocks.
  {
    const auto wide = qinfer::Model::load(kOtherModel);
    qinfer::Session c(wide, {.cache_type_k = "q4_0", .cache_type_v = "q4_0"});
    qinfer::Session d(wide, {.cache_type_k = "q4_0", .cache_type_v = "q4_0"});
    c.eval(wide.tokenize("Lily and Ben went to the park"));
    c.save_state(path);
    d.eval(wide.tokenize("something else entirely"));
    d.load_state(path);
    EXPECT_EQ(copy(d.logits()), copy(c.logits()));
    const auto more = wide.tokenize(" to play", false);
    c.eval(more);
    d.eval(more);
    EXPECT_EQ(copy(d.logits()), copy(c.logits()));
  }
  a.save_state(path);

  // A state of another model or cache type is refused and leaves the session as it was.
  qinfer::Session f16(model);
  EXPECT_THROW(f16.load_state(path), qinfer::Error);
  EXPECT_EQ(f16.position(), 0);
  qinfer::Session other(qinfer::Model::load(kOtherModel));
  EXPECT_THROW(other.load_state(path), qinfer::Error);
  // A truncated file too.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  const int32_t before = b.position();
  const auto logits_before = copy(b.logits());
  EXPECT_THROW(b.load_state(path), qinfer::Error);
  EXPECT_EQ(b.position(), before);
  EXPECT_EQ(copy(b.logits()), logits_before);
  std::filesystem::remove(path);
}

TEST(Library, EvalAllGivesEveryPositionsLogits) {
  const auto model = qinfer::Model::load(kModel);
  const auto tokens = model.tokenize("The cat sat on the mat");
  qinfer::Session session(model);
  const auto all = session.eval_all(tokens);
  const size_t V = model.vocab_size();
  ASSERT_EQ(all.size(), tokens.size() * V);
  EXPECT_EQ(std::vector<float>(all.end() - V, all.end()), copy(session.logits()));
  for (size_t i = 0; i < tokens.size(); ++i) {  // row i = the last logits of prefix i+1
    qinfer::Session prefix(model);
    prefix.eval(std::span(tokens).first(i + 1));
    const auto got = std::vector<float>(all.begin() + i * V, all.begin() + (i + 1) * V);
    const auto want = copy(prefix.logits());
    for (size_t j = 0; j < V; ++j) ASSERT_NEAR(got[j], want[j], 1e-4f) << "position " << i;
  }
}

TEST(Library, Embeddings) {
  const auto model = qinfer::Model::load(kModel);
  qinfer::Session session(model);
  const auto e1 = session.embed("The dog ran in the park.");
  ASSERT_EQ(e1.size(), static_cast<size_t>(model.embedding_length()));
  double norm = 0;
  for (float v : e1) norm += v * v;
  EXPECT_NEAR(norm, 1.0, 1e-5);
  EXPECT_EQ(session.position(), 0);
  EXPECT_EQ(session.embed("The dog ran in the park."), e1);  // no state carried over
  const auto e2 = session.embed("A bird sang a song.");
  EXPECT_NE(e1, e2);
  // Mean over one token is that token's (last) state; unnormalised keeps the scale.
  const auto one_mean = session.embed("", qinfer::Pooling::kMean, false);
  const auto one_last = session.embed("", qinfer::Pooling::kLast, false);
  EXPECT_EQ(one_mean, one_last);
  // Mean pooling is the mean of the per-prefix last states.
  const auto tokens = model.tokenize("Hi there");
  std::vector<double> mean(e1.size(), 0.0);
  for (size_t i = 1; i <= tokens.size(); ++i) {
    const auto last = session.embed(model.detokenize(std::span(tokens).subspan(1, i - 1)),
                                    qinfer::Pooling::kLast, false);
    for (size_t j = 0; j < mean.size(); ++j) mean[j] += last[j] / tokens.size();
  }
  const auto pooled = session.embed("Hi there", qinfer::Pooling::kMean, false);
  for (size_t j = 0; j < mean.size(); ++j) EXPECT_NEAR(pooled[j], mean[j], 1e-4) << j;
}

TEST(Library, StopReasonsAndTokenIds) {
  const auto model = qinfer::Model::load(kModel);
  qinfer::Session session(model);
  std::vector<qinfer::Token> seen;
  std::string text;
  auto r = session.complete("Once upon a time", {.max_tokens = 6, .temperature = 0},
                            [&](qinfer::Token id, std::string_view piece) {
                              seen.push_back(id);
                              text += piece;
                              return true;
                            });
  EXPECT_EQ(r.stop_reason, "length");
  EXPECT_EQ(seen, r.tokens);
  EXPECT_EQ(text, r.text);
  EXPECT_EQ(r.text,
            model.detokenize(r.tokens).substr(model.detokenize(r.tokens).size() - r.text.size()));
  EXPECT_GT(r.prompt_tokens, 0);
  EXPECT_GE(r.prompt_ms, 0);
  session.reset();
  const std::string stop = r.text.substr(0, 3);
  r = session.complete("Once upon a time", {.max_tokens = 6, .temperature = 0, .stop = {stop}});
  EXPECT_EQ(r.stop_reason, "stop");
  session.reset();
  r = session.complete("Once upon a time", {.max_tokens = 6, .temperature = 0},
                       [](qinfer::Token, std::string_view) { return false; });
  EXPECT_EQ(r.stop_reason, "cancelled");
  qinfer::Session small(model, {.n_ctx = 8});
  r = small.complete("Once upon a time", {.max_tokens = 100, .temperature = 0, .ignore_eos = true});
  EXPECT_EQ(r.stop_reason, "context");
}

TEST(Library, VocabularyAndModelInfo) {
  const auto model = qinfer::Model::load(kModel);
  EXPECT_EQ(model.bos_token(), 1);  // stories260K: <s> = 1, </s> = 2
  EXPECT_EQ(model.eos_token(), 2);
  EXPECT_TRUE(model.is_special(1));
  EXPECT_TRUE(model.is_end_of_generation(2));
  const auto ids = model.tokenize("Once upon a time", false);  // SentencePiece adds the space
  std::string pieces;
  for (qinfer::Token id : ids) {
    EXPECT_FALSE(model.is_special(id));
    pieces += model.token_piece(id);
  }
  EXPECT_EQ(pieces, " Once upon a time");
  EXPECT_THROW(model.token_piece(-1), qinfer::Error);
  int64_t params = 0;
  for (const auto& t : model.tensors()) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    params += n;
  }
  EXPECT_EQ(model.parameter_count(), params);
  const auto keys = model.metadata_keys();
  ASSERT_FALSE(keys.empty());
  for (const auto& k : keys) EXPECT_TRUE(model.metadata(k).has_value()) << k;

  qinfer_model* m = nullptr;
  ASSERT_EQ(qinfer_model_load(kModel.c_str(), nullptr, &m), QINFER_OK);
  EXPECT_STREQ(qinfer_model_architecture(m), "llama");
  EXPECT_EQ(qinfer_model_context_length(m), model.context_length());
  EXPECT_EQ(qinfer_model_embedding_length(m), model.embedding_length());
  EXPECT_EQ(qinfer_model_layer_count(m), model.layer_count());
  EXPECT_EQ(qinfer_model_parameter_count(m), params);
  ASSERT_EQ(qinfer_model_metadata_count(m), keys.size());
  EXPECT_EQ(std::string(qinfer_model_metadata_key(m, 0)), keys[0]);
  EXPECT_EQ(qinfer_model_metadata_key(m, keys.size()), nullptr);
  char buf[64];
  size_t len = 0;
  ASSERT_EQ(qinfer_model_metadata(m, "general.architecture", buf, sizeof buf, &len), QINFER_OK);
  EXPECT_EQ(std::string(buf, len), "llama");
  EXPECT_EQ(qinfer_model_metadata(m, "no.such.key", buf, sizeof buf, &len), QINFER_ERR_MISSING_KEY);
  EXPECT_EQ(qinfer_token_bos(m), 1);
  EXPECT_EQ(qinfer_token_eos(m), 2);
  EXPECT_EQ(qinfer_token_is_special(m, 1), 1);
  EXPECT_EQ(qinfer_token_is_eog(m, 2), 1);
  ASSERT_EQ(qinfer_token_piece(m, ids[0], buf, sizeof buf, &len), QINFER_OK);
  EXPECT_EQ(std::string(buf, len), model.token_piece(ids[0]));
  qinfer_model_free(m);
}

TEST(Library, CApiCompleteCancelTruncateSaveLoadEmbed) {
  qinfer_model* m = nullptr;
  ASSERT_EQ(qinfer_model_load(kModel.c_str(), nullptr, &m), QINFER_OK);
  qinfer_session *s = nullptr, *t = nullptr;
  ASSERT_EQ(qinfer_session_new(m, nullptr, &s), QINFER_OK);
  ASSERT_EQ(qinfer_session_new(m, nullptr, &t), QINFER_OK);
  qinfer_generate_options o = qinfer_generate_options_default();
  o.temperature = 0;
  o.max_tokens = 5;
  struct Seen {
    std::vector<int32_t> ids;
  } seen;
  auto cb = [](int32_t id, const char*, size_t, void* user) {
    static_cast<Seen*>(user)->ids.push_back(id);
    return 1;
  };
  qinfer_generate_result r{};
  ASSERT_EQ(qinfer_complete(s, "Once upon a time", &o, 0, cb, &seen, &r), QINFER_OK);
  EXPECT_EQ(r.stop_reason, QINFER_STOP_LENGTH);
  EXPECT_EQ(r.generated_tokens, 5);
  EXPECT_EQ(seen.ids.size(), 5u);
  EXPECT_GT(r.prompt_tokens, 0);

  const int32_t pos = qinfer_session_position(s);
  const std::string path = temp_path("qinfer-c-save");
  ASSERT_EQ(qinfer_session_save(s, path.c_str()), QINFER_OK);
  ASSERT_EQ(qinfer_session_load(t, path.c_str()), QINFER_OK);
  EXPECT_EQ(qinfer_session_position(t), pos);
  const float *ls = nullptr, *lt = nullptr;
  size_t n1 = 0, n2 = 0;
  ASSERT_EQ(qinfer_logits(s, &ls, &n1), QINFER_OK);
  ASSERT_EQ(qinfer_logits(t, &lt, &n2), QINFER_OK);
  EXPECT_EQ(std::vector<float>(ls, ls + n1), std::vector<float>(lt, lt + n2));
  EXPECT_EQ(qinfer_session_load(t, "/nonexistent.state"), QINFER_ERR_IO);
  std::filesystem::remove(path);

  ASSERT_EQ(qinfer_session_truncate(s, 2), QINFER_OK);
  EXPECT_EQ(qinfer_session_position(s), 2);
  EXPECT_EQ(qinfer_session_truncate(s, 10), QINFER_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qinfer_session_set_threads(s, 1), QINFER_OK);
  EXPECT_EQ(qinfer_session_set_threads(s, -1), QINFER_ERR_INVALID_ARGUMENT);

  qinfer_session_cancel(s);
  const int32_t tok[1] = {100};
  EXPECT_EQ(qinfer_eval(s, tok, 1), QINFER_ERR_CANCELLED);
  EXPECT_EQ(qinfer_eval(s, tok, 1), QINFER_OK);

  size_t n = 0;
  EXPECT_EQ(qinfer_embed(s, "hello", 1, 1, nullptr, 0, &n), QINFER_ERR_BUFFER_TOO_SMALL);
  std::vector<float> e(n);
  ASSERT_EQ(qinfer_embed(s, "hello", 1, 1, e.data(), e.size(), &n), QINFER_OK);
  qinfer::Session cpp(qinfer::Model::load(kModel));
  EXPECT_EQ(e, cpp.embed("hello"));
  qinfer_session_free(s);
  qinfer_session_free(t);
  qinfer_model_free(m);
}

TEST(Library, ThreadCountChangesNothingButSpeed) {
  const auto model = qinfer::Model::load(kModel);
  qinfer::Session session(model, {.n_threads = 1});
  const auto tokens = model.tokenize("Once upon a time there was a little girl");
  session.eval(tokens);
  const auto one = copy(session.logits());
  session.reset();
  session.set_threads(2);
  session.eval(tokens);
  EXPECT_EQ(copy(session.logits()), one);
}

}  // namespace
