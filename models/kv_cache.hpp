// The K and V of every past position, per layer, in a cache type (f32, f16, bf16, q8_0,
// q4_0, as llama.cpp's --cache-type-k/-v). Memory grows with use, by doubling, up to the
// context: a session asking for a long context pays only for the positions it fills.
//
// Layout (docs/kernels.md, "Generation attention from a cache laid out by head"): per layer,
// each KV head's positions together, head after head, so generation's attention of a head
// reads one stream. A head's V is a row of head_dim values per position; its f16 or q8_0 K
// is in tiles of positions (kernels/attention.hpp, kKeyTile), any other K type in rows.
#pragma once

#include <cstddef>
#include <cstdint>
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
  // Where a layer's K and V start; KV head g at + g * k_head_stride() (v_head_stride()),
  // position p's row of head g (k_head_bytes() each, or tiles) after that.
  const uint8_t* keys(int64_t layer) const { return k_[layer].data(); }
  const uint8_t* values(int64_t layer) const { return v_[layer].data(); }
  size_t k_head_stride() const { return static_cast<size_t>(k_rows(capacity_)) * k_head_bytes_; }
  size_t v_head_stride() const { return static_cast<size_t>(capacity_) * v_head_bytes_; }
  bool k_tiled() const { return k_tiled_; }
  // Positions [0, n) of a layer's K and V as rows of every head (n <= capacity()),
  // k_row_bytes() and v_row_bytes() each: for saving and restoring a session.
  void read_rows(int64_t layer, int64_t n, uint8_t* k_dst, uint8_t* v_dst) const;
  void write_rows(int64_t layer, int64_t n, const uint8_t* k_src, const uint8_t* v_src);
  size_t k_row_bytes() const { return k_row_bytes_; }
  size_t v_row_bytes() const { return v_row_bytes_; }
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
  // Positions a head's K holds at a capacity: whole tiles when tiled.
  int64_t k_rows(int64_t capacity) const;
  template <typename F>
  void each_head_row(int64_t n, const F& f) const;

  int64_t n_ctx_, n_layer_, n_head_kv_, capacity_ = 0;
  int64_t head_dim_k_, head_dim_v_;
  TensorType k_type_, v_type_;
  bool k_tiled_;
  size_t k_row_bytes_, v_row_bytes_, k_head_bytes_, v_head_bytes_;
  // (n_layer) of (n_head_kv, k_rows(capacity) or capacity, head bytes)
  std::vector<std::vector<uint8_t>> k_, v_;
};

}  // namespace qinfer
