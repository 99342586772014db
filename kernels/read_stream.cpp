#include "kernels/read_stream.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "kernels/threads.hpp"

namespace qinfer::kernels {

namespace {

// Four chains of V-sized words, a line prefetched per 64 bytes read.
template <typename V>
__attribute__((always_inline)) inline uint64_t sum_words(const V* p, int64_t n, int64_t ahead) {
  V a0{}, a1{}, a2{}, a3{};
  const bool nta = ahead < 0;
  ahead = nta ? -ahead : ahead;
  for (int64_t i = 0; i + 4 <= n; i += 4) {
    if (ahead != 0) {
      for (size_t line = 0; line < 4 * sizeof(V); line += 64) {
        const char* at = reinterpret_cast<const char*>(p + i) + ahead + line;
        if (nta) {
          __builtin_prefetch(at, 0, 0);
        } else {
          __builtin_prefetch(at);
        }
      }
    }
    a0 += p[i];
    a1 += p[i + 1];
    a2 += p[i + 2];
    a3 += p[i + 3];
  }
  const V a = a0 + a1 + a2 + a3;
  uint64_t sum = 0;
  for (size_t k = 0; k < sizeof(V) / sizeof(uint64_t); ++k) sum += a[k];
  return sum;
}

uint64_t sum_plain(const uint8_t* p, int64_t bytes, int64_t ahead) {
  using V = uint64_t __attribute__((vector_size(16)));
  return sum_words(reinterpret_cast<const V*>(p), bytes / 16, ahead);
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t sum_avx2(const uint8_t* p, int64_t bytes, int64_t ahead) {
  using V = uint64_t __attribute__((vector_size(32)));
  return sum_words(reinterpret_cast<const V*>(p), bytes / 32, ahead);
}
__attribute__((target("avx512f"))) uint64_t sum_avx512(const uint8_t* p, int64_t bytes,
                                                       int64_t ahead) {
  using V = uint64_t __attribute__((vector_size(64)));
  return sum_words(reinterpret_cast<const V*>(p), bytes / 64, ahead);
}
#endif

constexpr int64_t kStep = 256;  // four chains of the widest words

}  // namespace

uint64_t stream_sum(const uint8_t* p, int64_t bytes, int64_t ahead) {
#if defined(__x86_64__)
  static const auto fn = __builtin_cpu_supports("avx512f") ? sum_avx512
                         : __builtin_cpu_supports("avx2")  ? sum_avx2
                                                           : sum_plain;
  return fn(p, bytes, ahead);
#else
  return sum_plain(p, bytes, ahead);
#endif
}

ReadRate read_rate(std::span<const std::span<const uint8_t>> ranges, int n_threads, int passes,
                   std::span<const int64_t> aheads) {
  struct Piece {
    const uint8_t* p;
    int64_t bytes, first;  // first: the bytes of the pieces before it
  };
  std::vector<Piece> pieces;
  int64_t total = 0;
  for (std::span<const uint8_t> r : ranges) {
    const auto begin = reinterpret_cast<uintptr_t>(r.data());
    const auto end = begin + r.size();
    const uintptr_t first = (begin + 63) / 64 * 64;
    if (end <= first) continue;
    const auto bytes = static_cast<int64_t>((end - first) / kStep * kStep);
    if (bytes == 0) continue;
    pieces.push_back({reinterpret_cast<const uint8_t*>(first), bytes, total});
    total += bytes;
  }
  ReadRate rate;
  rate.bytes = total;
  if (total == 0) return rate;
  n_threads = std::max(1, n_threads);
  std::vector<uint64_t> sums(static_cast<size_t>(n_threads));
  double best = 1e300;
  for (int pass = 0; pass < passes; ++pass) {
    for (const int64_t ahead : aheads) {
      const auto t0 = std::chrono::steady_clock::now();
      parallel(n_threads, [&](Team& team) {
        // This thread's share of the bytes, [lo, hi), in whole steps.
        const int64_t steps = total / kStep;
        const int64_t lo = steps * team.id() / team.size() * kStep;
        const int64_t hi = steps * (team.id() + 1) / team.size() * kStep;
        uint64_t sum = 0;
        for (const Piece& piece : pieces) {
          const int64_t a = std::max(lo, piece.first), b = std::min(hi, piece.first + piece.bytes);
          if (a < b) sum += stream_sum(piece.p + (a - piece.first), b - a, ahead);
        }
        sums[static_cast<size_t>(team.id())] = sum;
      });
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::min(best, secs);
      rate.sum = 0;
      for (uint64_t s : sums) rate.sum += s;
    }
  }
  rate.bytes_per_second = static_cast<double>(total) / best;
  return rate;
}

}  // namespace qinfer::kernels
