// The tensor type table: one row per GGUF/ggml type id. Adding a type is one row here plus
// one block struct in blocks.hpp (docs/kernels.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace qinfer {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

inline constexpr uint32_t kTypeIdCount = 40;  // ids 0..39; holes are removed types
inline constexpr int64_t kQK = 256;           // super-block size of the K, IQ and TQ types

struct TypeTraits {
  std::string_view name;  // ggml's lower-case name ("q4_K")
  int64_t block_size;     // elements per block
  size_t type_size;       // bytes per block
  bool quantized;
  TensorType vec_dot_type;  // the activation type the dot product consumes
  bool valid;               // false for removed/unknown ids
};

namespace detail {
using T = TensorType;
constexpr TypeTraits row(std::string_view n, int64_t bs, size_t ts, bool q, T vd) {
  return TypeTraits{n, bs, ts, q, vd, true};
}
constexpr std::array<TypeTraits, kTypeIdCount> make_type_table() {
  std::array<TypeTraits, kTypeIdCount> t{};
  t[0] = row("f32", 1, 4, false, T::F32);
  t[1] = row("f16", 1, 2, false, T::F16);
  t[2] = row("q4_0", 32, 18, true, T::Q8_0);
  t[3] = row("q4_1", 32, 20, true, T::Q8_1);
  t[6] = row("q5_0", 32, 22, true, T::Q8_0);
  t[7] = row("q5_1", 32, 24, true, T::Q8_1);
  t[8] = row("q8_0", 32, 34, true, T::Q8_0);
  t[9] = row("q8_1", 32, 36, true, T::Q8_1);
  t[10] = row("q2_K", 256, 84, true, T::Q8_K);
  t[11] = row("q3_K", 256, 110, true, T::Q8_K);
  t[12] = row("q4_K", 256, 144, true, T::Q8_K);
  t[13] = row("q5_K", 256, 176, true, T::Q8_K);
  t[14] = row("q6_K", 256, 210, true, T::Q8_K);
  t[15] = row("q8_K", 256, 292, true, T::Q8_K);
  t[16] = row("iq2_xxs", 256, 66, true, T::Q8_K);
  t[17] = row("iq2_xs", 256, 74, true, T::Q8_K);
  t[18] = row("iq3_xxs", 256, 98, true, T::Q8_K);
  t[19] = row("iq1_s", 256, 50, true, T::Q8_K);
  t[20] = row("iq4_nl", 32, 18, true, T::Q8_0);
  t[21] = row("iq3_s", 256, 110, true, T::Q8_K);
  t[22] = row("iq2_s", 256, 82, true, T::Q8_K);
  t[23] = row("iq4_xs", 256, 136, true, T::Q8_K);
  t[24] = row("i8", 1, 1, false, T::I8);
  t[25] = row("i16", 1, 2, false, T::I16);
  t[26] = row("i32", 1, 4, false, T::I32);
  t[27] = row("i64", 1, 8, false, T::I64);
  t[28] = row("f64", 1, 8, false, T::F64);
  t[29] = row("iq1_m", 256, 56, true, T::Q8_K);
  t[30] = row("bf16", 1, 2, false, T::BF16);
  t[34] = row("tq1_0", 256, 54, true, T::Q8_K);
  t[35] = row("tq2_0", 256, 66, true, T::Q8_K);
  t[39] = row("mxfp4", 32, 17, true, T::Q8_0);
  return t;
}
}  // namespace detail

inline constexpr std::array<TypeTraits, kTypeIdCount> kTypeTable = detail::make_type_table();

// The traits of a type id, or nullopt for an unknown or removed id.
constexpr std::optional<TypeTraits> find_type(uint32_t id) {
  if (id >= kTypeIdCount || !kTypeTable[id].valid) return std::nullopt;
  return kTypeTable[id];
}

// The traits of a known type (throws qinfer::Error for an id that is not one).
const TypeTraits& type_traits(TensorType type);
std::string_view type_name(TensorType type);
// Type by ggml name, case-insensitive ("Q4_K", "q4_k"); nullopt if none.
std::optional<TensorType> type_from_name(std::string_view name);

// Bytes of a row of n elements; n must be a multiple of the block size.
inline size_t row_size_bytes(TensorType type, int64_t n) {
  const TypeTraits& t = type_traits(type);
  return static_cast<size_t>(n / t.block_size) * t.type_size;
}

}  // namespace qinfer
