// qinfer: one command for the tools — `qinfer SUBCOMMAND [ARGS...]` runs the sibling program
// (run, qinfer-gguf, ...) with ARGS, so an installed qinfer is used as `qinfer run -m M -p P`
// or `qinfer chat -m M`.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "qinfer/qinfer.hpp"

namespace {

struct Subcommand {
  std::string_view name, program, extra, help;
};

constexpr Subcommand kSubcommands[] = {
    {"run", "run", "", "generate text (llama-cli's flags)"},
    {"chat", "run", "-cnv", "chat with the model's template (run -cnv)"},
    {"chat-template", "qinfer-chat-template", "", "print a conversation formatted for a model"},
    {"gguf", "qinfer-gguf", "", "inspect a GGUF file, dequantize a tensor"},
    {"tokenize", "qinfer-tokenize", "", "the tokens of a text"},
    {"perplexity", "qinfer-perplexity", "", "perplexity of a model on a text"},
    {"bench", "qinfer-bench", "", "prompt and generation speed"},
    {"server", "qinfer-server", "", "an OpenAI-compatible HTTP server"},
    {"quantize", "qinfer-quantize", "", "re-encode a model's weights (llama-quantize)"},
    {"imatrix", "qinfer-imatrix", "", "the importance matrix of a model on a text"},
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: qinfer SUBCOMMAND [ARGS...]   (qinfer SUBCOMMAND --help for its flags)\n\n");
  for (const Subcommand& s : kSubcommands)
    std::fprintf(out, "  %-14s %.*s\n", std::string(s.name).c_str(),
                 static_cast<int>(s.help.size()), s.help.data());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("qinfer %s\n", qinfer::version());
    return 0;
  }
  for (const Subcommand& s : kSubcommands) {
    if (s.name != argv[1]) continue;
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::string program =
        (ec ? std::filesystem::path(argv[0]).parent_path() : self.parent_path()) / s.program;
    std::vector<char*> args{const_cast<char*>(program.c_str())};
    std::string extra(s.extra);
    if (!extra.empty()) args.push_back(extra.data());
    for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    execv(program.c_str(), args.data());
    std::fprintf(stderr, "error: cannot run %s: %s\n", program.c_str(), std::strerror(errno));
    return 1;
  }
  std::fprintf(stderr, "error: unknown subcommand '%s' (see qinfer --help)\n", argv[1]);
  return 1;
}
