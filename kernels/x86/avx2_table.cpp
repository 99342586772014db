#include "kernels/kernels.hpp"

namespace qinfer::kernels {

// AVX2 kernels are added type by type; until a type has one, the scalar kernel stays.
void fill_avx2_table(KernelTable& t) { t.isa = Isa::kAvx2; }

}  // namespace qinfer::kernels
