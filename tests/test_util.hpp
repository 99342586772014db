// Helpers shared by the test suites: test-data paths and file reading.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

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

// How many of the whole pages inside [p, p + n) are mapped into this process now (Linux's
// /proc/self/pagemap, bit 63 of each page's entry); -1 where that file cannot be read.
inline int64_t resident_pages(const void* p, size_t n) {
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page;
  int64_t present = 0;
  for (uintptr_t i = begin; i < end && present >= 0; ++i) {
    uint64_t entry = 0;
    if (::pread(fd, &entry, 8, static_cast<off_t>(i * 8)) != 8) {
      present = -1;
    } else {
      present += static_cast<int64_t>(entry >> 63);
    }
  }
  ::close(fd);
  return present;
}

inline std::vector<float> read_floats(const std::string& path) {
  const auto b = read_bytes(path);
  std::vector<float> out(b.size() / 4);
  std::memcpy(out.data(), b.data(), out.size() * 4);
  return out;
}

}  // namespace qinfer::test
