// Small helpers of every x86 kernel family. Included inside an anonymous namespace by the x86
// ISA traits (isa_avx2.inl, isa_avx512.inl).

// For the super-block loaders: as a grid type's loaders grew, GCC left several out of line,
// and each call then cost a vzeroupper and a round trip of the block's registers through the
// stack.
#define QINFER_INLINE [[gnu::always_inline]] inline

// Software prefetch for the gemv kernels, which stream weights from memory once per token:
// the lines kPrefetchAhead bytes past a step's [p, p + bytes) are requested as the step
// starts, so loads stay in flight while the core computes. Hardware prefetch alone left the
// interleaved Q4_0 gemv at ~75% of the read ceiling on Zen 3; 2 KiB ahead reached ~95%. The
// distance is the ISA traits' (AVX2 2 KiB, AVX-512 8 KiB; docs/kernels.md). Any step size
// works: successive steps' lines are at most 64 bytes apart.
inline constexpr int64_t kPrefetchAhead = IsaTraits::kPrefetchAhead;
QINFER_INLINE void prefetch_ahead(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p) + kPrefetchAhead;
  for (int64_t l = 0; l < bytes; l += 64)
    __builtin_prefetch(c + l, 0, IsaTraits::kPrefetchLocality);
}

// For kernels over a group of rows that follow each other (row-major gemv, rows_in_groups):
// the start of the group whose bytes a step fetches, at the pace it reads its own. At least
// kPrefetchAhead bytes on: the next group alone was 2 KiB ahead for TQ2_0's rows of 2048
// values, too close to hide memory's latency (a 2048-column matmul ran at 29 GB/s against 45
// for 4096 columns, gemv_layers and gemv_big).
// (A single row's call may pass row_bytes 0: then the group itself, and no division by 0.)
QINFER_INLINE const char* group_ahead(const void* group, size_t group_bytes) {
  if (group_bytes == 0) return static_cast<const char*>(group);
  const size_t groups = (static_cast<size_t>(kPrefetchAhead) + group_bytes - 1) / group_bytes;
  return static_cast<const char*>(group) + (groups > 0 ? groups : 1) * group_bytes;
}

// The items of a row of an interleaved group in units (U, a MetaFirst of repack.hpp, such as
// the pairs' PairLayout<T>::Units) in memory order: f(p, meta, quants) for item p of n, with
// the addresses of its meta bytes (scales, mins, qh) and of its quant bytes. A whole unit's
// constant offsets unroll; a short last unit takes its own.
template <typename U, typename F>
QINFER_INLINE void for_each_item(const uint8_t* g, int64_t n, F&& f) {
  constexpr int64_t kUnit = U::kUnit;
  int64_t p = 0;
  for (; p + kUnit <= n; p += kUnit, g += kUnit * U::kItemBytes) {
    prefetch_ahead(g, kUnit * U::kItemBytes);
#pragma GCC unroll 8
    for (int64_t j = 0; j < kUnit; ++j)
      f(p + j, g + j * U::kMetaBytes, g + kUnit * U::kMetaBytes + j * U::kQuantBytes);
  }
  const int64_t rest = n - p;
  for (int64_t j = 0; j < rest; ++j)
    f(p + j, g + j * U::kMetaBytes, g + rest * U::kMetaBytes + j * U::kQuantBytes);
}

// A 16-entry value table (IQ4_NL's, MXFP4's) plus `shift` (128: modulo 256), in both 128-bit
// lanes: the unsigned operand of vpdpbusd or vpmaddubsw for the kernels that look values up
// by vpshufb (shift times the activations' sum comes off once later).
inline __m256i shifted_values(const int8_t* values, int shift) {
  return _mm256_add_epi8(
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values))),
      _mm256_set1_epi8(static_cast<char>(shift)));
}

// A re-laid pair's eight block scales (repack.hpp) as floats: MXFP4's E8M0 bytes as
// 2^(e - 128) (e8m0_to_fp32_half, float_conv.hpp; subnormal for e = 0, 1), the others' f16.
template <TensorType T>
QINFER_INLINE __m256 pair_scales(const uint8_t* p) {
  if constexpr (T == TensorType::MXFP4) {
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i is_tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, is_tiny));
  } else {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
}

// set_dot installs a dot with its rows form (rows_by_dot, kernels.hpp).
template <auto kDot>
void set_dot(KernelTable& t, TensorType type) {
  t.types[static_cast<uint32_t>(type)].vec_dot = kDot;
  t.types[static_cast<uint32_t>(type)].vec_dot_rows = rows_by_dot<kDot>;
}

// Runs f.template operator()<NC>() with the column count as a constant, so per-column
// accumulators live in registers.
template <typename F>
void by_cols(int nc, F&& f) {
  switch (nc) {
    case 1:
      f.template operator()<1>();
      break;
    case 2:
      f.template operator()<2>();
      break;
    case 3:
      f.template operator()<3>();
      break;
    default:
      f.template operator()<4>();
      break;
  }
}

// 32 bits -> 32 bytes, 0xFF where the bit is set (bit j -> byte j).
inline __m256i bits_to_bytes(const uint8_t* p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
  const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                        2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(x)), shuf);
  return _mm256_cmpeq_epi8(_mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)),
                           _mm256_set1_epi64x(-1));
}
