// avx2_kquants.cpp built with -mavxvnni (kernels/CMakeLists.txt): the Avx2 traits take
// vpdpbusd for the integer dots, and the fill function is the Isa::kAvx2Vnni one.
#if !defined(__AVXVNNI__)
#error "avx2vnni_kquants.cpp must be compiled with -mavxvnni"
#endif
#include "kernels/x86/avx2_kquants.cpp"
