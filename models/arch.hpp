// Architectures as data. One ArchSpec per `general.architecture` value says which blocks the
// single forward pass (forward.cpp) runs and which tensors it binds; adding a family is one
// entry in arch.cpp plus any block it needs that the forward pass lacks (docs/models.md).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/matmul.hpp"

namespace qinfer {

struct ModelConfig;
struct ModelWeights;
struct LayerWeights;

enum class NormKind { kRms, kLayer };  // RMSNorm, or LayerNorm with bias
enum class PositionKind {
  kRopeNormal,
  kRopeNeox,
  kLearned
};                                              // RoPE pairs (2i, 2i+1) or (i, i+n/2)
enum class FfnKind { kSwiGlu, kGeGlu, kGelu };  // silu(gate)*up, gelu(gate)*up, gelu(up)
enum class SwaLayers { kNone, kAll, kEven };    // which layers use the sliding window
enum class QueryScale { kHeadDim, kGemma2 };    // 1/sqrt(head_dim), or gemma2's rule

// When a tensor must be present: always, never required, or only in dense / expert layers.
enum class Need { kRequired, kOptional, kDense, kExperts };

using Shape = std::vector<int64_t>;  // GGUF order: ne[0] (the row length) first
using ShapeFn = Shape (*)(const ModelConfig&);

// A tensor of the table: its GGUF name ("%d" is the block index), the field it binds and the
// shape the config implies. Each name is written once, in arch.cpp.
template <typename Weights>
struct TensorRow {
  const char* name;
  kernels::MatrixView Weights::*field;
  ShapeFn shape;
};
template <typename Weights>
struct TensorUse {
  const TensorRow<Weights>* row;
  Need need;
};

struct ArchSpec {
  std::string_view name;
  NormKind norm = NormKind::kRms;
  PositionKind positions = PositionKind::kRopeNormal;
  FfnKind ffn = FfnKind::kSwiGlu;
  bool fused_gate_up = false;    // ffn_up holds [gate | up] (phi3)
  bool post_norms = false;       // norms on the attention and FFN outputs (gemma2)
  bool embd_scale_sqrt = false;  // x = token_embd[id] * sqrt(n_embd) (gemma)
  bool prescale_q = false;       // q *= query scale after RoPE, before the cache (phi3, gemma2)
  QueryScale query_scale = QueryScale::kHeadDim;
  SwaLayers swa = SwaLayers::kNone;
  int64_t swa_default = 0;         // sliding window when the key is absent
  float attn_softcap_default = 0;  // 0: no cap
  float final_softcap_default = 0;
  std::span<const TensorUse<ModelWeights>> globals;
  std::span<const TensorUse<LayerWeights>> layers;
};

// The entry for `general.architecture`, or nullptr.
const ArchSpec* find_arch(std::string_view name);
// Names of every supported architecture, for error messages and docs.
std::string supported_arch_names();

}  // namespace qinfer
