// The OpenMP team as the kernels and the forward pass see it: its size and this thread's
// place in it (1 and 0 when built without OpenMP).
#pragma once

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace qinfer::kernels {

inline int thread_count() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

inline int thread_id() {
#if defined(_OPENMP)
  return omp_get_thread_num();
#else
  return 0;
#endif
}

}  // namespace qinfer::kernels
