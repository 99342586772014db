// Chat templates against llama.cpp's own llama_chat_apply_template (c392e50): every built-in
// template on conversations that exercise each rule (system first, late, twice, missing; an
// assistant first; other roles; whitespace to trim; an empty conversation), with and without
// the generation prompt, byte for byte; and the family recognised from template texts shaped
// like real models' Jinja templates. The expected strings come from
// tests/data/chat/make_golden.py, which calls llama.cpp's library.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "qinfer/qinfer.h"
#include "qinfer/qinfer.hpp"
#include "tests/test_util.hpp"

namespace {

using nlohmann::json;

const json& golden() {
  static const json j =
      json::parse(qinfer::test::read_text(qinfer::test::data_path("chat/chat_golden.json")));
  return j;
}

std::vector<qinfer::ChatMessage> conversation(const std::string& name) {
  std::vector<qinfer::ChatMessage> out;
  for (const json& m : golden()["conversations"][name])
    out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  return out;
}

TEST(ChatTemplate, BuiltinNamesAreLlamaCpps) {
  std::vector<std::string> expected;
  for (const auto& [name, cases] : golden()["builtin"].items()) expected.push_back(name);
  std::vector<std::string> ours = qinfer::chat_templates();
  std::sort(ours.begin(), ours.end());
  EXPECT_EQ(ours, expected);
}

TEST(ChatTemplate, EveryBuiltinMatchesLlamaCppByteForByte) {
  int checked = 0;
  for (const auto& [name, cases] : golden()["builtin"].items()) {
    for (const auto& [key, expected] : cases.items()) {
      const std::string conv = key.substr(0, key.find('/'));
      const bool gen = key.ends_with("/gen");
      ASSERT_FALSE(expected.is_null()) << name << " " << key;
      EXPECT_EQ(qinfer::apply_chat_template(name, conversation(conv), gen),
                expected.get<std::string>())
          << "template " << name << ", conversation " << key;
      ++checked;
    }
  }
  EXPECT_GE(checked, 33 * 9 * 2);
}

TEST(ChatTemplate, FamilyRecognisedFromTemplateText) {
  const auto conv = conversation("multi_turn");
  for (const auto& [label, c] : golden()["detect"].items()) {
    const std::string text = c["template"].get<std::string>();
    if (c["output"].is_null()) {
      EXPECT_THROW(qinfer::apply_chat_template(text, conv, true), qinfer::Error) << label;
    } else {
      EXPECT_EQ(qinfer::apply_chat_template(text, conv, true), c["output"].get<std::string>())
          << label;
    }
  }
}

TEST(ChatTemplate, UnknownNameIsAClearError) {
  try {
    qinfer::apply_chat_template("no-such-template", conversation("system_user"), true);
    FAIL() << "no error";
  } catch (const qinfer::Error& e) {
    EXPECT_EQ(e.code(), qinfer::ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("unknown chat template 'no-such-template'"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("chatml"), std::string::npos);
  }
}

// A model without tokenizer.chat_template gets chatml, as in llama.cpp.
TEST(ChatTemplate, ModelWithoutTemplateUsesChatml) {
  const auto model = qinfer::Model::load(qinfer::test::data_path("models/stories260K.gguf"));
  EXPECT_FALSE(model.chat_template().has_value());
  const auto conv = conversation("system_user");
  EXPECT_EQ(model.apply_chat_template(conv, true),
            golden()["builtin"]["chatml"]["system_user/gen"].get<std::string>());
}

TEST(ChatTemplate, ModelsOwnTemplate) {
  const std::string path = qinfer::test::shared_path("models/arch/phi3-tiny.gguf");
  if (path.empty()) GTEST_SKIP() << "../shared is absent (phi3-tiny.gguf has a chat template)";
  const auto model = qinfer::Model::load(path);
  ASSERT_TRUE(model.chat_template().has_value());
  EXPECT_EQ(*model.chat_template(),
            golden()["detect"]["model:phi3-tiny.gguf"]["template"].get<std::string>());
  EXPECT_EQ(model.apply_chat_template(conversation("multi_turn"), true),
            golden()["detect"]["model:phi3-tiny.gguf"]["output"].get<std::string>());
}

TEST(ChatTemplate, CApi) {
  const qinfer_chat_message messages[] = {{"system", "You are a helpful assistant"},
                                          {"user", "Hello"}};
  size_t length = 0;
  EXPECT_EQ(qinfer_chat_apply_template(nullptr, "llama3", messages, 2, 1, nullptr, 0, &length),
            QINFER_ERR_BUFFER_TOO_SMALL);
  const std::string expected = golden()["builtin"]["llama3"]["system_user/gen"];
  ASSERT_EQ(length, expected.size());
  std::string buffer(length, '\0');
  ASSERT_EQ(qinfer_chat_apply_template(nullptr, "llama3", messages, 2, 1, buffer.data(),
                                       buffer.size(), &length),
            QINFER_OK);
  EXPECT_EQ(buffer, expected);
  EXPECT_EQ(qinfer_chat_apply_template(nullptr, "nope", messages, 2, 1, nullptr, 0, &length),
            QINFER_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qinfer_last_error()).find("unknown chat template"), std::string::npos);
  EXPECT_EQ(qinfer_chat_apply_template(nullptr, nullptr, messages, 2, 1, nullptr, 0, &length),
            QINFER_ERR_INVALID_ARGUMENT);
  const qinfer_chat_message bad[] = {{nullptr, "x"}};
  EXPECT_EQ(qinfer_chat_apply_template(nullptr, "chatml", bad, 1, 1, nullptr, 0, &length),
            QINFER_ERR_INVALID_ARGUMENT);

  qinfer_model* model = nullptr;
  ASSERT_EQ(qinfer_model_load(qinfer::test::data_path("models/stories260K.gguf").c_str(), nullptr,
                              &model),
            QINFER_OK);
  buffer.assign(4096, '\0');
  ASSERT_EQ(qinfer_chat_apply_template(model, nullptr, messages, 2, 0, buffer.data(), buffer.size(),
                                       &length),
            QINFER_OK);
  EXPECT_EQ(buffer.substr(0, length),
            golden()["builtin"]["chatml"]["system_user/nogen"].get<std::string>());
  qinfer_model_free(model);
}

}  // namespace
