// The thread team (kernels/threads.hpp): every member runs the job once, barriers order the
// members' writes, a failure anywhere is rethrown to the caller without a hang, a nested call
// runs alone, and workers that fell asleep between jobs wake for the next one.
#include "kernels/threads.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace qinfer::kernels {
namespace {

TEST(ThreadTeam, EveryMemberRunsTheJobOnce) {
  for (int n : {1, 2, 3, 5}) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
    std::atomic<int> wrong_size{0};
    parallel(n, [&](Team& team) {
      runs[static_cast<size_t>(team.id())].fetch_add(1);
      if (team.size() != n) wrong_size.fetch_add(1);
    });
    for (int i = 0; i < n; ++i) EXPECT_EQ(runs[static_cast<size_t>(i)].load(), 1) << n << " " << i;
    EXPECT_EQ(wrong_size.load(), 0);
  }
}

TEST(ThreadTeam, SharesCoverTheRangeOnce) {
  for (int64_t items : {0, 1, 7, 1000}) {
    std::vector<int> seen(static_cast<size_t>(items), 0);
    parallel(3, [&](Team& team) {
      const auto [a, b] = team.share(items);
      for (int64_t i = a; i < b; ++i) ++seen[static_cast<size_t>(i)];  // shares are disjoint
    });
    for (int v : seen) EXPECT_EQ(v, 1);
  }
}

// Each round, every member writes its slot, waits, then reads every slot: a barrier that let a
// member through early would show a stale value from the round before.
TEST(ThreadTeam, BarrierOrdersTheMembersWrites) {
  constexpr int kMembers = 3, kRounds = 2000;
  std::vector<int64_t> slots(kMembers, -1);
  std::atomic<int> stale{0};
  parallel(kMembers, [&](Team& team) {
    for (int r = 0; r < kRounds; ++r) {
      slots[static_cast<size_t>(team.id())] = int64_t{r} * kMembers + team.id();
      team.barrier();
      for (int i = 0; i < kMembers; ++i) {
        if (slots[static_cast<size_t>(i)] != int64_t{r} * kMembers + i) stale.fetch_add(1);
      }
      team.barrier();
    }
  });
  EXPECT_EQ(stale.load(), 0);
}

TEST(ThreadTeam, AFailureIsRethrownAndReleasesTheBarrier) {
  for (int failing : {0, 1}) {
    std::atomic<int> past_barrier{0};
    EXPECT_THROW(parallel(2,
                          [&](Team& team) {
                            if (team.id() == failing) throw std::runtime_error("member failed");
                            team.barrier();  // the other member must not wait here forever
                            past_barrier.fetch_add(1);
                          }),
                 std::runtime_error);
    EXPECT_EQ(past_barrier.load(), 0);
  }
  std::atomic<int> runs{0};  // the team still works afterwards
  parallel(2, [&](Team&) { runs.fetch_add(1); });
  EXPECT_EQ(runs.load(), 2);
}

TEST(ThreadTeam, NestedCallRunsOnTheCallingThreadAlone) {
  std::atomic<int> inner_runs{0}, inner_size_sum{0};
  parallel(2, [&](Team&) {
    parallel(2, [&](Team& inner) {
      inner_runs.fetch_add(1);
      inner_size_sum.fetch_add(inner.size());
    });
  });
  EXPECT_EQ(inner_runs.load(), 2);
  EXPECT_EQ(inner_size_sum.load(), 2);
}

TEST(ThreadTeam, WorkersWakeAfterSleepingBetweenJobs) {
  for (int round = 0; round < 3; ++round) {
    std::atomic<int> runs{0};
    parallel(2, [&](Team& team) {
      runs.fetch_add(1);
      team.barrier();
    });
    EXPECT_EQ(runs.load(), 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin: they sleep
  }
}

// Two host threads each with a team of their own, at once.
TEST(ThreadTeam, EachCallingThreadHasItsOwnTeam) {
  std::atomic<int64_t> total{0};
  std::vector<std::thread> hosts;
  for (int h = 0; h < 2; ++h) {
    hosts.emplace_back([&] {
      for (int r = 0; r < 200; ++r) {
        parallel(2, [&](Team& team) {
          total.fetch_add(1);
          team.barrier();
        });
      }
    });
  }
  for (auto& t : hosts) t.join();
  EXPECT_EQ(total.load(), 2 * 200 * 2);
}

}  // namespace
}  // namespace qinfer::kernels
