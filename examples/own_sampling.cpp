// own_sampling MODEL PROMPT N: samples by itself from the logits (here: greedy, argmax), one
// eval per token — the loop a caller writes for its own sampler or constraints.
#include <qinfer/qinfer.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " MODEL PROMPT N\n";
    return 2;
  }
  try {
    const qinfer::Model model = qinfer::Model::load(argv[1]);
    qinfer::Session session(model);
    session.eval(model.tokenize(argv[2]));
    std::vector<qinfer::Token> generated;
    for (int i = 0; i < std::atoi(argv[3]); ++i) {
      const std::span<const float> logits = session.logits();
      const auto next = static_cast<qinfer::Token>(std::max_element(logits.begin(), logits.end()) -
                                                   logits.begin());
      if (model.is_end_of_generation(next)) break;
      generated.push_back(next);
      session.eval({&next, 1});
    }
    std::cout << model.detokenize(generated) << "\n";
  } catch (const qinfer::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
