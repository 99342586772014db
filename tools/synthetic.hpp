// Random-weight llama models of real shapes (TinyLlama-1.1B, Llama-2-7B, ...) for measuring
// speed at realistic matrix sizes without downloading a model. See docs/quantize.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/types.hpp"

namespace qinfer::tools {

struct SyntheticShape {
  const char* name;
  int64_t dim, n_layer, n_head, n_head_kv, ffn;
  float rope_base;
  int64_t context;
};

const std::vector<SyntheticShape>& synthetic_shapes();
// The shape called `name`, or nullptr.
const SyntheticShape* find_synthetic_shape(const std::string& name);

// Writes a llama of `shape` to `out_path`: every matrix N(0, 0.02²) drawn from `seed` (the
// same bytes for the same seed, whatever the thread count), norms 1, stored as `type` (F32,
// F16 or BF16); the tokenizer (every `tokenizer.*` key) copied from the GGUF `vocab_path`.
// Streams one tensor at a time, so a 7B model needs no more memory than its largest tensor.
void write_synthetic_model(const SyntheticShape& shape, const std::string& vocab_path,
                           uint64_t seed, TensorType type, const std::string& out_path);

}  // namespace qinfer::tools
