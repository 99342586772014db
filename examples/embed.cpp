// embed MODEL QUERY TEXT...: ranks the texts by the cosine similarity of their embeddings to
// the query's (mean-pooled, normalised final hidden states), best first: "score<TAB>text".
#include <qinfer/qinfer.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: " << argv[0] << " MODEL QUERY TEXT [TEXT...]\n";
    return 2;
  }
  try {
    const qinfer::Model model = qinfer::Model::load(argv[1]);
    qinfer::Session session(model);
    const std::vector<float> query = session.embed(argv[2]);
    std::vector<std::pair<float, std::string>> ranked;
    for (int i = 3; i < argc; ++i) {
      const std::vector<float> e = session.embed(argv[i]);
      // Both are normalised: the dot product is the cosine.
      ranked.emplace_back(std::inner_product(e.begin(), e.end(), query.begin(), 0.0f), argv[i]);
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [score, text] : ranked) std::printf("%.4f\t%s\n", score, text.c_str());
  } catch (const qinfer::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
