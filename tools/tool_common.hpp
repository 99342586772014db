// Shared by the command-line tools: one error line on stderr and exit 1 for any failure.
#pragma once

#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <new>
#include <string>

#include "qinfer/error.hpp"

namespace qinfer {
class GgufFile;
}

namespace qinfer::tools {

template <typename F>
int run_guarded(F&& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 1;
}

// The whole content of a file (the caller has checked that it exists).
inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kIo, path + ": cannot open");
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Writes tensor `name` of `file` dequantized to raw float32 into `out_path` (stdout if empty).
int dequant_tensor(const GgufFile& file, const std::string& name, const std::string& out_path);

}  // namespace qinfer::tools
