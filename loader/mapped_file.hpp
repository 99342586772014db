// Read-only bytes of a file: an mmap, or an aligned heap copy when mapping is not wanted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace qinfer {

class MappedFile {
 public:
  static MappedFile map(const std::string& path);               // mmap, read-only
  static MappedFile read(const std::string& path);              // aligned heap buffer
  static MappedFile copy_of(const uint8_t* data, size_t size);  // aligned heap copy

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // Tells the OS that these bytes are no longer read: the whole pages inside [p, p + n) leave
  // the process's resident memory (madvise MADV_DONTNEED). A later read of them is still
  // correct, it faults them back in from the file. Only a mapping drops pages; a heap copy
  // keeps them.
  void drop_pages(const uint8_t* p, size_t n) const;

 private:
  void release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

// Alignment of heap buffers holding tensor data: enough for any SIMD load.
inline constexpr size_t kBufferAlignment = 64;

}  // namespace qinfer
