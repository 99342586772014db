// Kernel tables and runtime ISA dispatch (docs/kernels.md).
//
// Every ISA provides one KernelTable: per tensor type a row dequantizer and a dot product that
// takes 1..kMaxDotCols activation rows at once (so gemm decodes each weight block once for
// several tokens), plus the activation quantizers. The scalar table is the reference.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/types.hpp"

namespace qinfer::kernels {

// An ISA and its variants: kAvx512NoVbmi is AVX-512 without the VBMI/BITALG and BF16 kernels,
// kNeonPlain NEON without dotprod, kAvx2Vnni AVX2 with AVX-VNNI's 256-bit vpdpbusd (Intel
// client cores from Alder Lake, which have no AVX-512). Each has its own table, so one process
// can run (and test) every variant the CPU supports.
enum class Isa { kScalar, kAvx2, kAvx512, kNeon, kAvx512NoVbmi, kNeonPlain, kAvx2Vnni };
std::string_view isa_name(Isa isa);

inline constexpr int kMaxDotCols = 4;
inline constexpr int kMaxDotRows = 4;

// y[0..n) = dequantized row at src (n a multiple of the block size).
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n);
// out[c] = dot(weight row w, activation row c) for c < n_cols; activation row c starts at
// act + c * act_stride bytes and is already in the type's vec_dot_type.
using VecDotFn = void (*)(int64_t n, const void* w, const void* act, size_t act_stride, int n_cols,
                          float* out);
// out[r] = dot(weight row w + r * row_bytes, activation row act) for r < n_rows: gemv of
// several rows at once, for a dot whose speed limit is its FMA chain. A kernel works on
// kMaxDotRows rows at a time; the table's entries take any n_rows (rows_in_groups), so that
// matmul runs a thread's whole piece of a matrix in one call. Each out[r] has vec_dot's bits.
using VecDotRowsFn = void (*)(int64_t n, const void* w, size_t row_bytes, int n_rows,
                              const void* act, float* out);
// A table entry from a kernel of at most kMaxDotRows rows: the rows in groups of that many
// (an interleaved group's bytes start at its first row's offset, so this serves them too).
// The group kernel is inlined, its set-up hoisted out of the loop where the compiler can.
template <VecDotRowsFn kGroup>
[[gnu::flatten]] void rows_in_groups(int64_t n, const void* w, size_t row_bytes, int n_rows,
                                     const void* act, float* out) {
  const auto* rows = static_cast<const uint8_t*>(w);
  for (int r = 0; r < n_rows; r += kMaxDotRows) {
    kGroup(n, rows + static_cast<size_t>(r) * row_bytes, row_bytes,
           n_rows - r < kMaxDotRows ? n_rows - r : kMaxDotRows, act, out + r);
  }
}
// A table entry from a dot of one row (every ISA's types without a rows kernel): the dot's
// one-column form inlined in a loop, so a gemv makes one call per piece of a matrix instead
// of one per row (the call and its return were a sixth of a TQ2_0 token on AVX-512). Each row
// is summed exactly as the dot sums it.
template <VecDotFn kDot>
[[gnu::flatten]] void rows_by_dot(int64_t n, const void* w, size_t row_bytes, int n_rows,
                                  const void* act, float* out) {
  const auto* wr = static_cast<const uint8_t*>(w);
  for (int r = 0; r < n_rows; ++r)
    kDot(n, wr + static_cast<size_t>(r) * row_bytes, act, 0, 1, out + r);
}
// dst = src quantized to the type (n a multiple of the block size).
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n);

// Rearranges activation rows of n elements, already quantized to the type's vec_dot_type, in
// place into the layout this ISA's vec_dot reads (kernels/lane_layout.hpp).
using PrepareActFn = void (*)(void* act, int64_t n);

struct TypeKernels {
  DequantizeRowFn dequantize_row = nullptr;
  VecDotFn vec_dot = nullptr;
  VecDotRowsFn vec_dot_rows = nullptr;  // optional; matmul uses it for one token
  // Optional: whole groups of kInterleaveRows rows of an interleaved matrix
  // (kernels/repack.hpp) against one activation row (the last group may be short); with it,
  // the loader may interleave matrices of the type.
  VecDotRowsFn vec_dot_interleaved = nullptr;
  // Optional: rows of a packed copy (kernels/pack.hpp) against one activation row prepared
  // by prepare_packed_activation; with it, the loader may pack matrices of the type.
  VecDotRowsFn vec_dot_packed = nullptr;
  PrepareActFn prepare_act = nullptr;  // nullptr: vec_dot reads the plain layout
  // The activations' layout vec_dot_interleaved reads (nullptr: the plain layout).
  PrepareActFn prepare_act_interleaved = nullptr;
  // Optional, with prepare_act_interleaved: the bytes of a row of n elements in that layout
  // when it is larger than the quantized row, which it then expands in place (nullptr: the
  // quantized row's size).
  size_t (*act_interleaved_bytes)(int64_t n) = nullptr;
};

// Vector primitives: attention over the KV cache (rows in f32 or f16 bits) and the
// element-wise float ops of the forward pass. Every ISA's version gives the scalar one's bits
// for the element-wise ops (no reassociation, no contraction; ggml_expf from expf.hpp).
struct VectorOps {
  float (*dot_f32)(const float* a, const float* b, int64_t n) = nullptr;
  float (*dot_f16)(const float* a, const uint16_t* b, int64_t n) = nullptr;
  void (*axpy_f32)(float* y, float a, const float* x, int64_t n) = nullptr;  // y += a * x
  void (*axpy_f16)(float* y, float a, const uint16_t* x, int64_t n) = nullptr;
  void (*add)(float* x, const float* y, int64_t n) = nullptr;                 // x += y
  void (*scale_mul)(float* x, float s, const float* w, int64_t n) = nullptr;  // x = (x * s) * w
  void (*exp_shift)(float* x, float shift, int64_t n) = nullptr;  // x = ggml_expf(x - shift)
  void (*silu_mul)(float* gate, const float* up,
                   int64_t n) = nullptr;  // g = g / (1 + ggml_expf(0 - g)) * up
  // RoPE on n_heads heads of head_dim (the first n_rot dimensions), cs = (cos, sin) pairs;
  // ggml's rounding: x0' = fma(x0, c, -(x1 s)), x1' = fma(x0, s, x1 c).
  void (*rope)(float* x, int64_t n_heads, int64_t head_dim, const float* cs, int64_t n_rot,
               bool neox) = nullptr;
};

struct KernelTable {
  Isa isa = Isa::kScalar;
  VectorOps vec;
  std::array<TypeKernels, kTypeIdCount> types{};
  // Quantizers of the activation types (F32 copies, F16, BF16, Q8_0, Q8_1, Q8_K).
  std::array<QuantizeRowFn, kTypeIdCount> quantize_act{};
  // The GEMM of a panel of weight rows with a batch of tokens (kernels/gemm.hpp).
  GemmPanelFn gemm_panel = nullptr;
  // The GEMM's canonical decoders of this ISA, per type (nullptr: the scalar one of
  // gemm_type_info); each gives the scalar decoder's bytes and floats exactly.
  std::array<DecodeGroupsFn, kTypeIdCount> gemm_decode{};
  // The same from an interleaved group in place (nullptr: matmul hands gemm_panel a copy of
  // the panel's rows in the file's layout).
  std::array<DecodeInterleavedFn, kTypeIdCount> gemm_decode_interleaved{};
  // Whether gemm_panel takes the whole reduction dimension at once (its tiles keep their sums
  // in registers over every column); otherwise matmul hands it slices that fit the L2 cache
  // and it adds each slice's result into the output.
  bool gemm_full_k = false;
  // BF16 weights in the GEMM multiplied as bf16 pairs (vdpbf16ps, AVX512_BF16).
  bool gemm_bf16_pairs = false;
  // Attention of a block of tokens over the KV cache (kernels/attention.hpp).
  AttentionFn attention = nullptr;
  // Combines the per-chunk results of attention calls that covered a range of key chunks
  // (nullptr: the kernel takes no ranges, and the caller gives each call every chunk).
  AttentionCombineFn attention_combine = nullptr;
  // Benchmark probes of the core's peak rate: run `iters` steps of independent multiply-add
  // chains in registers and return the multiply-adds done (int8 products by the GEMM's
  // instruction, f32 FMAs). nullptr on the scalar table.
  int64_t (*peak_int8_macs)(int64_t iters) = nullptr;
  int64_t (*peak_f32_macs)(int64_t iters) = nullptr;
};

// The table of one ISA; throws qinfer::Error if it is not compiled in or the CPU lacks it.
const KernelTable& table(Isa isa);
// The ISAs this build has and this CPU runs, best last.
std::vector<Isa> available_isas();
// The table in use: chosen once, the best available, or QINFER_ISA=scalar|avx2|avx512|neon
// (an ISA the CPU lacks or an unknown name throws qinfer::Error with a clear message).
const KernelTable& active();

// The scalar reference quantizer of any type that has one (legacy, K, activation and some IQ
// types); nullptr otherwise. These are the bit-exact ggml "_ref" quantizers.
QuantizeRowFn reference_quantizer(TensorType type);
// The quantizer of one row that takes an importance matrix (n weights, one per column), as
// ggml's quantize_<type>: for the seven grid types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S; a null imatrix means x^2, which IQ1_S, IQ2_XXS and IQ2_XS refuse) and for
// Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS (a null imatrix: the reference quantizer).
// nullptr for the types whose quantizer takes no imatrix (Q8_0, TQ1_0, TQ2_0, MXFP4, floats).
// Byte-exact with ggml's (docs/kernels.md).
using QuantizeImatrixFn = void (*)(const float* src, void* dst, int64_t n, const float* imatrix);
QuantizeImatrixFn imatrix_quantizer(TensorType type);

// Convenience wrappers that check the type has the kernel.
void dequantize_row(const KernelTable& k, TensorType type, const void* src, float* dst, int64_t n);
// One dot of a plain activation row (prepared on a copy where the ISA's dot wants it).
float vec_dot(const KernelTable& k, TensorType type, int64_t n, const void* w, const void* act);
// Activation rows in the layout the dot of weight_type reads: no change for most types.
void prepare_activation(const KernelTable& k, TensorType weight_type, void* act, int64_t n);
void quantize_activation(const KernelTable& k, TensorType act_type, const float* src, void* dst,
                         int64_t n);

// Per-ISA table builders (each defined in that ISA's sources; scalar always present).
void fill_scalar_table(KernelTable& t);
// vnni: the AVX-VNNI build of the same kernels (the CPU must have it).
void fill_avx2_table(KernelTable& t, bool vnni);
// extensions: VBMI/BITALG and BF16 kernels (each where the CPU has it).
void fill_avx512_table(KernelTable& t, bool extensions);
// dotprod: the vdotq_s32 kernels (the CPU must have them: neon_has_dotprod).
void fill_neon_table(KernelTable& t, bool dotprod);
bool neon_has_dotprod();

}  // namespace qinfer::kernels
