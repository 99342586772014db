// Command-line parsing shared by the tools: CLI11 with llama.cpp's habits.
//  - Multi-letter short flags (-ngl, -cnv, -ctk) name long options, as in llama.cpp; CLI11 alone
//    would read "-ngl 99" as "-n gl 99". Each tool lists its aliases; they are rewritten to
//    the long spelling before parsing ("-ctk=q8_0" too).
//  - --help and --version print and exit 0; any parse error is one "error: ..." line on
//    stderr and exit 1.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "qinfer/qinfer.hpp"

namespace qinfer::tools {

struct FlagAlias {
  std::string_view short_form;  // "-ngl"
  std::string_view long_form;   // "--n-gpu-layers"
};

// Parses argv into `app`; returns only when the tool should go on.
inline void parse_command_line(CLI::App& app, int argc, char** argv,
                               std::initializer_list<FlagAlias> aliases = {}) {
  app.set_version_flag("--version", std::string("qinfer ") + qinfer::version());
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    for (const FlagAlias& alias : aliases) {
      if (a == alias.short_form) {
        a = alias.long_form;
      } else if (a.starts_with(std::string(alias.short_form) + "=")) {
        a = std::string(alias.long_form) + a.substr(alias.short_form.size());
      }
    }
    args.push_back(std::move(a));
  }
  std::reverse(args.begin(), args.end());  // CLI11's vector form takes them last first
  try {
    app.parse(args);
  } catch (const CLI::Success& e) {  // --help, --version
    std::exit(app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s (see --help)\n", e.what());
    std::exit(1);
  }
}

}  // namespace qinfer::tools
