// The K and V of every past position, per layer, in a cache type (f32, f16, bf16, q8_0,
// q4_0, as llama.cpp's --cache-type-k/-v). Memory grows with use, by doubling, up to the
// context: a session asking for a long context pays only for the positions it fills.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/types.hpp"

namespace qinfer {

struct ModelConfig;

class KvCache {
 public:
  // Throws qinfer::Error when a type is not a cache type or a quantized type's block does
  // not divide the head size.
  KvCache(const ModelConfig& config, int64_t n_ctx, TensorType k_type, TensorType v_type);

  int64_t n_ctx() const { return n_ctx_; }
  TensorType k_type() const { return k_type_; }
  TensorType v_type() const { return v_type_; }
  // Positions with storage; grows on reserve().
  int64_t capacity() const { return capacity_; }
  // Makes room for positions [0, n_pos) (n_pos <= n_ctx); previous rows are kept.
  void reserve(int64_t n_pos);
  // Stores the K (n_embd_k floats) and V (n_embd_v floats) of position pos in a layer, the
  // float cache types converted by the table's vectors.
  void append(const kernels::KernelTable& kt, int64_t layer, int64_t pos, const float* k,
              const float* v);
  // Row of position pos: n_head_kv heads of head_dim values in the cache type; head h of
  // it starts at h * k_head_bytes() (or v_head_bytes()).
  const uint8_t* keys(int64_t layer, int64_t pos) const;
  const uint8_t* values(int64_t layer, int64_t pos) const;
  // Rows [0, n) of a layer as stored (n <= capacity()): for saving and restoring a session.
  std::span<const uint8_t> key_rows(int64_t layer, int64_t n) const {
    return {k_[layer].data(), static_cast<size_t>(n) * k_row_bytes_};
  }
  std::span<const uint8_t> value_rows(int64_t layer, int64_t n) const {
    return {v_[layer].data(), static_cast<size_t>(n) * v_row_bytes_};
  }
  std::span<uint8_t> key_rows(int64_t layer, int64_t n) {
    return {k_[layer].data(), static_cast<size_t>(n) * k_row_bytes_};
  }
  std::span<uint8_t> value_rows(int64_t layer, int64_t n) {
    return {v_[layer].data(), static_cast<size_t>(n) * v_row_bytes_};
  }
  int64_t n_layer() const { return n_layer_; }
  size_t k_head_bytes() const { return k_head_bytes_; }
  size_t v_head_bytes() const { return v_head_bytes_; }
  // Bytes held now.
  size_t bytes() const { return bytes_for(capacity_); }
  // Bytes the cache holds for n_pos positions (every layer, K and V).
  size_t bytes_for(int64_t n_pos) const {
    return static_cast<size_t>(n_pos) * (k_row_bytes_ + v_row_bytes_) * n_layer_;
  }

  // The cache type named like llama.cpp's (f32, f16, bf16, q8_0, q4_0); throws otherwise.
  static TensorType parse_type(const std::string& name);

 private:
  int64_t n_ctx_, n_layer_, capacity_ = 0;
  int64_t n_embd_k_, n_embd_v_;
  TensorType k_type_, v_type_;
  size_t k_row_bytes_, v_row_bytes_, k_head_bytes_, v_head_bytes_;
  std::vector<std::vector<uint8_t>> k_, v_;  // (n_layer) of (capacity, row bytes)
};

}  // namespace qinfer
