// Buffers on 2 MiB boundaries that ask the kernel for transparent huge pages (Linux's
// madvise(MADV_HUGEPAGE); elsewhere, or where it declines, ordinary pages): for the weights
// the kernels re-lay or copy, streamed once per token, so that a stream meets fewer TLB
// misses and the hardware prefetchers do not stop at every 4 KiB page (docs/kernels.md,
// "Huge pages for the re-laid weights"). The KV cache was tried too: tg at depth 4096 did not
// move (its attention is bound by arithmetic).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace qinfer::kernels {

inline constexpr size_t kHugePage = size_t{2} << 20;

struct FreeHuge {
  void operator()(uint8_t* p) const { std::free(p); }
};
using HugeBuffer = std::unique_ptr<uint8_t, FreeHuge>;

// At least `bytes` bytes (rounded up to whole huge pages), uninitialised; throws
// std::bad_alloc.
inline HugeBuffer huge_buffer(size_t bytes) {
  const size_t size = bytes == 0 ? kHugePage : (bytes + kHugePage - 1) / kHugePage * kHugePage;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kHugePage, size));
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, size, MADV_HUGEPAGE);  // advice only
#endif
  return HugeBuffer(p);
}

}  // namespace qinfer::kernels
