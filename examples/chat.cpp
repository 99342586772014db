// chat MODEL [SYSTEM]: a chat in the terminal with the model's own chat template (chatml when
// the file has none). Each turn evaluates only the text the template adds: the session keeps
// the conversation in its KV cache. An empty line or EOF ends.
#include <qinfer/qinfer.hpp>

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " MODEL [SYSTEM_PROMPT]\n";
    return 2;
  }
  try {
    const qinfer::Model model = qinfer::Model::load(argv[1]);
    qinfer::Session session(model);
    qinfer::GenerateOptions options;
    options.max_tokens = 64;
    options.temperature = 0.0f;
    options.parse_special = true;  // the template's markers are special tokens
    std::vector<qinfer::ChatMessage> messages;
    if (argc > 2) messages.push_back({"system", argv[2]});
    std::string before;  // the conversation as the template formatted it so far
    std::string line;
    while (std::cout << "> " << std::flush, std::getline(std::cin, line) && !line.empty()) {
      messages.push_back({"user", line});
      const std::string now = model.apply_chat_template(messages, true);
      options.add_bos = before.empty();
      const qinfer::GenerateResult reply = session.complete(
          now.substr(before.size()), options, [](qinfer::Token, std::string_view piece) {
            std::cout << piece << std::flush;
            return true;
          });
      std::cout << "\n";
      messages.push_back({"assistant", reply.text});
      before = model.apply_chat_template(messages, false);
      if (reply.stop_reason == "context") {
        std::cerr << "[the context is full]\n";
        break;
      }
    }
  } catch (const qinfer::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
