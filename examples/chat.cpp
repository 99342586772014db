// chat MODEL: an interactive loop. Each line you type is appended to the same session, so
// the model sees the whole conversation (its KV cache is kept between turns).
#include <qinfer/qinfer.hpp>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " MODEL [N_PER_TURN]\n";
    return 2;
  }
  try {
    const qinfer::Model model = qinfer::Model::load(argv[1]);
    qinfer::Session session(model);
    qinfer::GenerateOptions options;
    options.max_tokens = argc > 2 ? std::stoi(argv[2]) : 64;
    options.stop = {"\n"};
    std::string line;
    std::cout << "> " << std::flush;
    while (std::getline(std::cin, line)) {
      if (session.position() + 2 * options.max_tokens >= session.context_length()) {
        std::cout << "[context full: starting over]\n";
        session.reset();
      }
      session.generate(line + "\n", options, [](std::string_view piece) {
        std::cout << piece << std::flush;
        return true;
      });
      std::cout << "\n> " << std::flush;
    }
  } catch (const qinfer::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
