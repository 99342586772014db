// The read ceiling's stream (kernels/read_stream.hpp): the loads it times are the bytes it
// was given, every one of them once, whatever the prefetch distance and the thread count.
#include "kernels/read_stream.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace qinfer::kernels {
namespace {

// 64-byte aligned random bytes.
struct Buffer {
  explicit Buffer(size_t bytes) : words(bytes / 8 + 8) {
    std::mt19937_64 rng(7);
    for (uint64_t& w : words) w = rng();
  }
  uint8_t* at(size_t offset) {
    auto base = reinterpret_cast<uintptr_t>(words.data());
    return reinterpret_cast<uint8_t*>((base + 63) / 64 * 64) + offset;
  }
  std::vector<uint64_t> words;
};

uint64_t word_sum(const uint8_t* p, int64_t bytes) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    sum += w;
  }
  return sum;
}

TEST(ReadStream, SumsEveryWordAtEveryDistance) {
  Buffer buf(1 << 16);
  for (const int64_t bytes : {int64_t{256}, int64_t{4096}, int64_t{256} * 37}) {
    for (const int64_t ahead : kStreamAheads) {
      EXPECT_EQ(stream_sum(buf.at(0), bytes, ahead), word_sum(buf.at(0), bytes))
          << bytes << " bytes, ahead " << ahead;
    }
  }
}

// Ranges with ragged starts and ends, split between 1-3 threads: each pass reads the whole
// 256-byte steps from each range's first 64-byte boundary, and nothing else.
TEST(ReadStream, TheTeamReadsEachWholeStepOnce) {
  Buffer buf(1 << 20);
  const std::vector<std::span<const uint8_t>> ranges = {
      {buf.at(0), 4096},          // whole
      {buf.at(8192 + 10), 1000},  // from 8256: 936 bytes, 3 steps
      {buf.at(16384), 200},       // under one step: nothing
      {buf.at(20480 + 64), 256 * 301 + 17}};
  const int64_t want_bytes = 4096 + 768 + 256 * 301;
  const uint64_t want_sum = word_sum(buf.at(0), 4096) + word_sum(buf.at(8256), 768) +
                            word_sum(buf.at(20480 + 64), 256 * 301);
  for (const int threads : {1, 2, 3}) {
    const ReadRate r = read_rate(ranges, threads, 1);
    EXPECT_EQ(r.bytes, want_bytes) << threads << " threads";
    EXPECT_EQ(r.sum, want_sum) << threads << " threads";
    EXPECT_GT(r.bytes_per_second, 0.0);
  }
  const std::vector<std::span<const uint8_t>> none = {{buf.at(1), 255}, {buf.at(4096), 0}};
  const ReadRate r = read_rate(none, 2, 1);
  EXPECT_EQ(r.bytes, 0);
  EXPECT_EQ(r.bytes_per_second, 0.0);
}

}  // namespace
}  // namespace qinfer::kernels
