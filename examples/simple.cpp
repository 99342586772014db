// simple MODEL PROMPT N: prints the greedy continuation (N tokens) of PROMPT.
// Self-contained: build it against an installed qinfer with
//   g++ -std=c++20 simple.cpp $(pkg-config --cflags --libs qinfer)
#include <qinfer/qinfer.hpp>

#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " MODEL PROMPT N\n";
    return 2;
  }
  try {
    const qinfer::Model model = qinfer::Model::load(argv[1]);
    qinfer::Session session(model);
    qinfer::GenerateOptions options;
    options.max_tokens = std::atoi(argv[3]);
    options.temperature = 0.0f;  // greedy
    session.generate(argv[2], options, [](std::string_view piece) {
      std::cout << piece << std::flush;
      return true;
    });
    std::cout << "\n";
  } catch (const qinfer::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
