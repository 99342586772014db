// Included inside an anonymous namespace by the x86 ISA traits (isa_avx2.inl, isa_avx512.inl).

// Runs f.template operator()<NC>() with the column count as a constant, so per-column
// accumulators live in registers.
template <typename F>
void by_cols(int nc, F&& f) {
  switch (nc) {
    case 1: f.template operator()<1>(); break;
    case 2: f.template operator()<2>(); break;
    case 3: f.template operator()<3>(); break;
    default: f.template operator()<4>(); break;
  }
}
