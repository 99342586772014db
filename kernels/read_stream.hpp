// The read ceiling: how fast the threads can stream a set of bytes from memory with nothing
// else to do. bench_kernels measures it over a buffer of its own; qinfer-bench measures it over
// the very pages a generated token reads, because on a VM the same code streams some physical
// regions about 25% slower than others (docs/kernels.md, "The pages' own ceiling").
#pragma once

#include <cstdint>
#include <span>

namespace qinfer::kernels {

// The sum of the 64-bit words of [p, p + bytes) in the widest vectors this CPU has (AVX-512,
// AVX2, else 128-bit), in four independent chains, prefetching `ahead` bytes on (0: the
// hardware prefetcher alone; negative: non-temporal, -ahead on). bytes: a multiple of 256;
// p: 64-byte aligned. The sum is what keeps the loads; its value is the words' sum mod 2^64.
uint64_t stream_sum(const uint8_t* p, int64_t bytes, int64_t ahead);

// The prefetch distances a ceiling tries (stream_sum's `ahead`); the ceiling is the best.
inline constexpr int64_t kStreamAheads[] = {0, 2048, 8192, -8192};

// The fastest rate at which n_threads threads (the team) read the bytes of `ranges` once, over
// `passes` passes of each prefetch distance in `aheads`. Each thread streams its contiguous
// share of the bytes. A range is read from its first 64-byte boundary, in whole 256-byte steps (its
// ragged start and end are left out). bytes_per_second is 0 when the ranges hold no step.
struct ReadRate {
  double bytes_per_second = 0;
  int64_t bytes = 0;  // the bytes read in each pass
  uint64_t sum = 0;   // their 64-bit words' sum (stream_sum's), the same in every pass
};
ReadRate read_rate(std::span<const std::span<const uint8_t>> ranges, int n_threads, int passes,
                   std::span<const int64_t> aheads = kStreamAheads);

}  // namespace qinfer::kernels
