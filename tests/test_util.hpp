// Helpers shared by the test suites: test-data paths and file reading.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace qinfer::test {

// Vendored data (always present in a clone).
inline std::string data_path(const std::string& rel) {
  return std::string(QINFER_TEST_DATA) + "/" + rel;
}
// ../shared, for the larger sweeps; empty string when it is not there.
inline std::string shared_path(const std::string& rel) {
  const std::string root = QINFER_SHARED_DIR;
  if (!std::filesystem::exists(root)) return {};
  return root + "/" + rel;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open test file " + path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open test file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::vector<float> read_floats(const std::string& path) {
  const auto b = read_bytes(path);
  std::vector<float> out(b.size() / 4);
  std::memcpy(out.data(), b.data(), out.size() * 4);
  return out;
}

}  // namespace qinfer::test
