// The threads that run a matmul, an attention step or a batch's element-wise work: a team of
// the calling thread and workers kept alive between calls (docs/kernels.md, "Thread team").
// A call hands the team one job; the workers spin briefly between jobs, then sleep, so a
// token's dozens of steps cost a few cache-line handoffs each, not an OpenMP fork and join.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace qinfer::kernels {

// The team size for the next call: OpenMP's setting (`omp_set_num_threads`, OMP_NUM_THREADS),
// which a Session sets for the duration of its calls; 1 when built without OpenMP.
inline int thread_count() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

struct TeamState;

// One thread's view of the team running a job.
class Team {
 public:
  Team(TeamState& state, int id, int size) : state_(state), id_(id), size_(size) {}
  int id() const { return id_; }
  int size() const { return size_; }
  // Waits for every thread of the team. If another thread's job failed, throws instead (the
  // exception is swallowed by parallel(), which rethrows the first real one).
  void barrier();
  // This thread's contiguous share [first, second) of n items (OpenMP's static schedule).
  std::pair<int64_t, int64_t> share(int64_t n) const {
    return {n * id_ / size_, n * (id_ + 1) / size_};
  }

 private:
  TeamState& state_;
  int id_, size_;
};

// A borrowed callable `void(Team&)`, without std::function's allocation.
class TeamJob {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, TeamJob>)
      TeamJob(F&& f)  // NOLINT(google-explicit-constructor): parallel(n, lambda)
      : ctx_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* c, Team& t) { (*static_cast<std::remove_reference_t<F>*>(c))(t); }) {}
  void operator()(Team& t) const { call_(ctx_, t); }

 private:
  void* ctx_;
  void (*call_)(void*, Team&);
};

// Runs job on n_threads threads (the caller is thread 0) and returns when all have finished.
// The first exception a thread throws is rethrown here. Called from inside a job, the nested
// job runs on the calling thread alone. Each calling thread has its own workers.
void parallel(int n_threads, TeamJob job);

// The same with thread_count() threads.
inline void parallel(TeamJob job) { parallel(thread_count(), job); }

}  // namespace qinfer::kernels
