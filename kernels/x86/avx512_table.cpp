#include "kernels/kernels.hpp"

namespace qinfer::kernels {

void fill_avx512_table(KernelTable& t) { t.isa = Isa::kAvx512; }

}  // namespace qinfer::kernels
