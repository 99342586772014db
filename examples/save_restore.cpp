// save_restore MODEL PROMPT N STATE_FILE: evaluates PROMPT, saves the session to STATE_FILE,
// loads it into a new session and generates N greedy tokens there — the same text as without
// the detour (e.g. to resume a long prompt without evaluating it again).
#include <qinfer/qinfer.hpp>

#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: " << argv[0] << " MODEL PROMPT N STATE_FILE\n";
    return 2;
  }
  try {
    const qinfer::Model model = qinfer::Model::load(argv[1]);
    {
      qinfer::Session first(model);
      first.eval(model.tokenize(argv[2]));
      first.save_state(argv[4]);
    }
    qinfer::Session resumed(model);
    resumed.load_state(argv[4]);
    qinfer::GenerateOptions options;
    options.max_tokens = std::atoi(argv[3]);
    options.temperature = 0.0f;
    // An empty prompt continues from the restored logits.
    std::cout << resumed.generate("", options) << "\n";
  } catch (const qinfer::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
