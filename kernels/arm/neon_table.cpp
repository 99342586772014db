#include "kernels/kernels.hpp"

namespace qinfer::kernels {

void fill_neon_table(KernelTable& t) { t.isa = Isa::kNeon; }

}  // namespace qinfer::kernels
