#include "loader/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "qinfer/error.hpp"

namespace qinfer {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Error io_error(const std::string& path, const char* what) {
  return Error(ErrorCode::kIo, path + ": " + what + ": " + std::strerror(errno));
}

size_t file_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw io_error(path, "cannot stat");
  if (!S_ISREG(st.st_mode)) throw Error(ErrorCode::kIo, path + ": not a regular file");
  return static_cast<size_t>(st.st_size);
}

uint8_t* aligned_alloc_bytes(size_t size) {
  const size_t rounded = (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  void* p = std::aligned_alloc(kBufferAlignment, rounded == 0 ? kBufferAlignment : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<uint8_t*>(p);
}

}  // namespace

MappedFile MappedFile::map(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw io_error(path, "cannot open");
  MappedFile m;
  m.size_ = file_size(f.fd, path);
  if (m.size_ == 0) return m;
  void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (p == MAP_FAILED) throw io_error(path, "cannot mmap");
  m.data_ = static_cast<uint8_t*>(p);
  m.mapped_ = true;
  return m;
}

MappedFile MappedFile::read(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw io_error(path, "cannot open");
  MappedFile m;
  m.size_ = file_size(f.fd, path);
  m.data_ = aligned_alloc_bytes(m.size_);
  size_t done = 0;
  while (done < m.size_) {
    const ssize_t n = ::read(f.fd, m.data_ + done, m.size_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw io_error(path, "cannot read");
    done += static_cast<size_t>(n);
  }
  return m;
}

MappedFile MappedFile::copy_of(const uint8_t* data, size_t size) {
  MappedFile m;
  m.size_ = size;
  m.data_ = aligned_alloc_bytes(size);
  if (size > 0) std::memcpy(m.data_, data, size);
  return m;
}

void MappedFile::drop_pages(const uint8_t* p, size_t n) const {
  const auto at = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(data_);
  if (!mapped_ || at < base || n > size_ || at - base > size_ - n) return;  // not all inside
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (at + page - 1) / page * page;
  const uintptr_t end = (at + n) / page * page;
  // Advice only: the mapping is private and never written, so nothing can be lost.
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (data_ == nullptr) return;
  if (mapped_) {
    ::munmap(data_, size_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
}

}  // namespace qinfer
