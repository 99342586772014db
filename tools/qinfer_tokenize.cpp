// qinfer-tokenize: the tokens of a text (`id 'piece'` per line, or --ids on one line).
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "loader/gguf.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tools/cli.hpp"
#include "tools/tool_common.hpp"

int main(int argc, char** argv) {
  using namespace qinfer;
  CLI::App app{"qinfer-tokenize: tokenize text with a GGUF file's vocabulary"};
  std::string model_path, prompt, file;
  bool ids_only = false, no_bos = false, parse_special = false;
  app.add_option("-m,--model", model_path, "GGUF file")->required()->check(CLI::ExistingFile);
  auto* p = app.add_option("-p,--prompt", prompt, "text");
  app.add_option("-f,--file", file, "read the text from a file")
      ->check(CLI::ExistingFile)
      ->excludes(p);
  app.add_flag("--ids", ids_only, "print only the ids, space-separated, on one line");
  app.add_flag("--no-bos", no_bos, "do not add BOS/EOS");
  app.add_flag("--parse-special", parse_special, "parse special tokens written in the text");
  tools::parse_command_line(app, argc, argv);
  return tools::run_guarded([&] {
    if (!file.empty()) prompt = tools::read_file(file);
    const GgufFile gguf = GgufFile::open(model_path);
    const auto tok = Tokenizer::from_gguf(gguf);
    const auto ids = tok->encode(prompt, !no_bos, parse_special);
    if (ids_only) {
      for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
      std::printf("\n");
    } else {
      for (TokenId id : ids) std::printf("%6d '%s'\n", id, tok->vocab().text[id].c_str());
    }
    return 0;
  });
}
