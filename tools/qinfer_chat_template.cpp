// qinfer-chat-template: a conversation (JSON array of {"role", "content"}) formatted with a
// chat template, printed exactly (no newline added) — the command-line face of the template
// table. The template is the model's own (-m; chatml when it has none) or a built-in one
// (--template NAME, also a Jinja template text); --list prints the built-in names.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "qinfer/qinfer.hpp"
#include "tools/cli.hpp"
#include "tools/tool_common.hpp"

namespace {

std::vector<qinfer::ChatMessage> read_messages(const std::string& path) {
  const std::string text = path == "-" ? std::string(std::istreambuf_iterator<char>(std::cin), {})
                                       : qinfer::tools::read_file(path);
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& why) {
    return qinfer::Error(qinfer::ErrorCode::kInvalidArgument, path + ": " + why);
  };
  if (j.is_discarded()) throw bad("not valid JSON");
  if (!j.is_array()) throw bad("expected a JSON array of {\"role\", \"content\"} messages");
  std::vector<qinfer::ChatMessage> messages;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    const std::string where = "message " + std::to_string(i);
    if (!m.is_object()) throw bad(where + " is not an object");
    if (!m.contains("role") || !m["role"].is_string())
      throw bad(where + ": \"role\" must be a string");
    if (!m.contains("content") || !m["content"].is_string())
      throw bad(where + ": \"content\" must be a string");
    messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return messages;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qinfer;
  CLI::App app{"qinfer-chat-template: print a conversation formatted with a chat template"};
  std::string model_path, template_name, messages_path;
  bool no_generation_prompt = false, list = false;
  auto* m = app.add_option("-m,--model", model_path, "use this GGUF model's chat template")
                ->check(CLI::ExistingFile);
  auto* t = app.add_option("--template,--chat-template", template_name,
                           "a built-in template name (see --list) or a Jinja template text");
  m->excludes(t);
  app.add_option("-f,--file", messages_path, "JSON array of {\"role\", \"content\"}; - for stdin");
  app.add_flag("--no-generation-prompt", no_generation_prompt,
               "do not open the assistant's turn at the end");
  app.add_flag("--list", list, "print the built-in template names");
  tools::parse_command_line(app, argc, argv);
  return tools::run_guarded([&] {
    if (list) {
      for (const std::string& name : chat_templates()) std::printf("%s\n", name.c_str());
      return 0;
    }
    if (model_path.empty() && template_name.empty())
      throw Error(ErrorCode::kInvalidArgument, "give -m MODEL or --template NAME");
    if (messages_path.empty()) throw Error(ErrorCode::kInvalidArgument, "give -f MESSAGES.json");
    const auto messages = read_messages(messages_path);
    const std::string prompt =
        model_path.empty()
            ? apply_chat_template(template_name, messages, !no_generation_prompt)
            : Model::load(model_path).apply_chat_template(messages, !no_generation_prompt);
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  });
}
