#include "kernels/threads.hpp"

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace qinfer::kernels {

namespace {

using Clock = std::chrono::steady_clock;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long a thread spins before it sleeps: a worker waiting for the next job long enough to
// cover the gaps between a token's steps and between tokens; a barrier or the caller's join
// less, since a member that is late by more has likely lost its core. A team larger than the
// machine does not spin at all: the member it waits for needs the core.
constexpr auto kJobSpin = std::chrono::microseconds(1000);
constexpr auto kJoinSpin = std::chrono::microseconds(200);

// Waits until ready() holds, ready() depending only on `word` and on what was written before
// `word` changed: spins for `spin`, then sleeps on `word`. The waker changes `word`, then
// notifies if `sleepers` is positive; the sleeper raises `sleepers`, then re-reads `word` in
// wait() (all sequentially consistent), so a wake-up cannot be lost.
template <typename Word, typename Ready>
void wait_until(std::atomic<Word>& word, std::atomic<int>& sleepers, const Ready& ready,
                Clock::duration spin) {
  if (spin > Clock::duration::zero()) {  // the clock is read only once a wait is not short
    Clock::time_point until{};
    for (uint32_t i = 1;; ++i) {
      if (ready()) return;
      cpu_relax();
      if (i % 256 != 0) continue;
      if (until == Clock::time_point{}) {
        until = Clock::now() + spin;
      } else if (Clock::now() > until) {
        break;
      }
    }
  }
  for (;;) {
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    const Word seen = word.load(std::memory_order_seq_cst);
    if (ready()) {
      sleepers.fetch_sub(1, std::memory_order_seq_cst);
      return;
    }
    word.wait(seen, std::memory_order_seq_cst);
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

template <typename Word>
void wake(std::atomic<Word>& word, const std::atomic<int>& sleepers) {
  if (sleepers.load(std::memory_order_seq_cst) > 0) word.notify_all();
}

struct Stopped {};  // thrown by barrier() when another member of the team failed

thread_local bool t_in_job = false;  // this thread is running a job (nested calls run alone)

}  // namespace

// What the threads of one pool share. The caller writes the job's fields, then publishes
// them by bumping `epoch`; a worker reads them after it sees the new epoch.
struct TeamState {
  // The job and the epoch that publishes it share a cache line: a worker that sees the new
  // epoch has the job's fields in the same transfer.
  alignas(64) std::atomic<uint32_t> epoch{0};
  const TeamJob* job = nullptr;
  int n_active = 1;  // members running the job; workers at or past it only report done
  Clock::duration join_spin{};
  alignas(64) std::atomic<int> epoch_sleepers{0};
  alignas(64) std::atomic<int> done{0};  // workers finished with the job
  std::atomic<int> done_sleepers{0};
  alignas(64) std::atomic<int> arrived{0};  // barrier: members waiting
  alignas(64) std::atomic<uint32_t> generation{0};
  std::atomic<int> generation_sleepers{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<bool> quit{false};

  // Runs the job as member `id`; a failure is recorded and releases the members at a barrier.
  void run(int id) {
    Team team(*this, id, n_active);
    try {
      (*job)(team);
    } catch (const Stopped&) {
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
      failed.store(true, std::memory_order_seq_cst);
      generation.fetch_add(1, std::memory_order_seq_cst);
      generation.notify_all();
    }
  }
};

void Team::barrier() {
  if (size_ == 1) return;
  TeamState& s = state_;
  const uint32_t gen = s.generation.load(std::memory_order_acquire);
  if (s.arrived.fetch_add(1, std::memory_order_acq_rel) == size_ - 1) {
    s.arrived.store(0, std::memory_order_relaxed);
    s.generation.store(gen + 1, std::memory_order_seq_cst);
    wake(s.generation, s.generation_sleepers);
    return;
  }
  wait_until(
      s.generation, s.generation_sleepers,
      [&] {  // failed: a member failed, maybe before this one arrived
        return s.generation.load(std::memory_order_acquire) != gen ||
               s.failed.load(std::memory_order_acquire);
      },
      s.join_spin);
  if (s.failed.load(std::memory_order_acquire)) throw Stopped{};
}

namespace {

class Pool {
 public:
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() {
    s_.quit.store(true, std::memory_order_seq_cst);
    s_.epoch.fetch_add(1, std::memory_order_seq_cst);
    s_.epoch.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  void run(int n_threads, const TeamJob& job) {
    while (static_cast<int>(workers_.size()) < n_threads - 1) {
      const int id = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, id, seen = s_.epoch.load()] { work(id, seen); });
    }
    const auto n_workers = static_cast<int>(workers_.size());
    // hardware_concurrency() reads /sys on each call, so once.
    static const int n_cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const bool oversubscribed = n_workers + 1 > n_cpus;
    s_.job = &job;
    s_.n_active = n_threads;
    s_.join_spin = oversubscribed ? Clock::duration::zero() : Clock::duration(kJoinSpin);
    job_spin_.store(oversubscribed ? 0 : Clock::duration(kJobSpin).count(),
                    std::memory_order_relaxed);
    s_.done.store(0, std::memory_order_relaxed);
    s_.arrived.store(0, std::memory_order_relaxed);
    s_.failed.store(false, std::memory_order_relaxed);
    s_.error = nullptr;
    s_.epoch.fetch_add(1, std::memory_order_seq_cst);  // publishes the job
    wake(s_.epoch, s_.epoch_sleepers);
    t_in_job = true;
    s_.run(0);
    wait_until(
        s_.done, s_.done_sleepers,
        [&] { return s_.done.load(std::memory_order_acquire) == n_workers; }, s_.join_spin);
    t_in_job = false;
    if (s_.error) std::rethrow_exception(s_.error);
  }

 private:
  void work(int id, uint32_t seen) {
    t_in_job = true;
    for (;;) {
      wait_until(
          s_.epoch, s_.epoch_sleepers,
          [&] { return s_.epoch.load(std::memory_order_acquire) != seen; },
          Clock::duration(job_spin_.load(std::memory_order_relaxed)));
      seen = s_.epoch.load(std::memory_order_acquire);
      if (s_.quit.load(std::memory_order_acquire)) return;
      if (id < s_.n_active) s_.run(id);
      s_.done.fetch_add(1, std::memory_order_seq_cst);
      wake(s_.done, s_.done_sleepers);
    }
  }

  TeamState s_;
  std::atomic<Clock::rep> job_spin_{0};  // how long workers spin between jobs
  std::vector<std::thread> workers_;
};

}  // namespace

void parallel(int n_threads, TeamJob job) {
  if (n_threads <= 1 || t_in_job) {
    TeamState alone;
    alone.job = &job;
    alone.run(0);
    if (alone.error) std::rethrow_exception(alone.error);
    return;
  }
  thread_local std::unique_ptr<Pool> pool;
  if (!pool) pool = std::make_unique<Pool>();
  pool->run(n_threads, job);
}

}  // namespace qinfer::kernels
