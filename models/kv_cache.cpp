#include "models/kv_cache.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/attention.hpp"
#include "kernels/kernels.hpp"
#include "models/model.hpp"
#include "qinfer/error.hpp"

namespace qinfer {

namespace {

bool is_cache_type(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16 ||
         t == TensorType::Q8_0 || t == TensorType::Q4_0;
}

size_t head_bytes(TensorType t, int64_t head_dim, const char* which) {
  const int64_t block = type_traits(t).block_size;
  if (head_dim % block != 0) {
    throw Error(ErrorCode::kUnsupported,
                std::string("cache type ") + std::string(type_name(t)) + " for " + which +
                    " needs a head size that is a multiple of " + std::to_string(block) +
                    "; this model's is " + std::to_string(head_dim));
  }
  return row_size_bytes(t, head_dim);
}

}  // namespace

TensorType KvCache::parse_type(const std::string& name) {
  for (TensorType t :
       {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0}) {
    if (name == type_name(t)) return t;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unknown cache type '" + name + "' (supported: f32, f16, bf16, q8_0, q4_0)");
}

KvCache::KvCache(const ModelConfig& c, int64_t n_ctx, TensorType k_type, TensorType v_type)
    : n_ctx_(n_ctx),
      n_layer_(c.n_layer),
      n_head_kv_(c.n_head_kv),
      head_dim_k_(c.head_dim_k),
      head_dim_v_(c.head_dim_v),
      k_type_(k_type),
      v_type_(v_type),
      k_tiled_(kernels::tiled_key_type(k_type)) {
  if (!is_cache_type(k_type) || !is_cache_type(v_type)) {
    throw Error(ErrorCode::kUnsupported, "cache types are f32, f16, bf16, q8_0 and q4_0");
  }
  if (n_ctx <= 0)
    throw Error(ErrorCode::kInvalidArgument, "the context must hold at least one token");
  k_head_bytes_ = head_bytes(k_type, c.head_dim_k, "K");
  v_head_bytes_ = head_bytes(v_type, c.head_dim_v, "V");
  k_row_bytes_ = k_head_bytes_ * static_cast<size_t>(c.n_head_kv);
  v_row_bytes_ = v_head_bytes_ * static_cast<size_t>(c.n_head_kv);
  k_.resize(static_cast<size_t>(n_layer_));
  v_.resize(static_cast<size_t>(n_layer_));
}

int64_t KvCache::k_rows(int64_t capacity) const {
  return k_tiled_ ? (capacity + kernels::kKeyTile - 1) / kernels::kKeyTile * kernels::kKeyTile
                  : capacity;
}

void KvCache::reserve(int64_t n_pos) {
  if (n_pos <= capacity_) return;
  if (n_pos > n_ctx_) {
    throw Error(ErrorCode::kContextOverflow, "context overflow: " + std::to_string(n_pos) +
                                                 " tokens do not fit in a context of " +
                                                 std::to_string(n_ctx_));
  }
  const int64_t grown = std::min(n_ctx_, std::max({n_pos, 2 * capacity_, int64_t{64}}));
  // Each head's positions move to the start of its new, longer stretch.
  auto regrow = [&](std::vector<uint8_t>& data, size_t head_bytes, int64_t old_rows, int64_t rows) {
    std::vector<uint8_t> next(static_cast<size_t>(n_head_kv_ * rows) * head_bytes);
    for (int64_t g = 0; g < n_head_kv_ && old_rows > 0; ++g) {
      std::memcpy(next.data() + g * rows * head_bytes, data.data() + g * old_rows * head_bytes,
                  old_rows * head_bytes);
    }
    data = std::move(next);
  };
  for (int64_t l = 0; l < n_layer_; ++l) {
    regrow(k_[l], k_head_bytes_, k_rows(capacity_), k_rows(grown));
    regrow(v_[l], v_head_bytes_, capacity_, grown);
  }
  capacity_ = grown;
}

namespace {
// The float types' conversions round once, so the ISA's vectors give the reference's bits;
// the block types keep the reference quantizers (their bits are the format's definition).
kernels::QuantizeRowFn cache_quantizer(const kernels::KernelTable& kt, TensorType type) {
  if (type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16)
    return kt.quantize_act[static_cast<uint32_t>(type)];
  return kernels::reference_quantizer(type);
}
}  // namespace

void KvCache::append(const kernels::KernelTable& kt, int64_t layer, int64_t pos, const float* k,
                     const float* v) {
  const auto quantize_v = cache_quantizer(kt, v_type_);
  const auto quantize_k = cache_quantizer(kt, k_type_);
  for (int64_t g = 0; g < n_head_kv_; ++g) {
    uint8_t* k_head = k_[layer].data() + g * k_head_stride();
    const float* k_src = k + g * head_dim_k_;
    if (k_tiled_) {
      // Converted a piece at a time (256 values: whole q8_0 blocks), then scattered into the
      // tile's columns.
      constexpr int64_t kPiece = 256;
      uint8_t piece[2 * kPiece];
      for (int64_t d = 0; d < head_dim_k_; d += kPiece) {
        const int64_t n = std::min(kPiece, head_dim_k_ - d);
        quantize_k(k_src + d, piece, n);
        kernels::store_key_tiled(k_type_, piece, d, n, pos, k_head, k_head_bytes_);
      }
    } else {
      quantize_k(k_src, k_head + pos * k_head_bytes_, head_dim_k_);
    }
    quantize_v(v + g * head_dim_v_, v_[layer].data() + g * v_head_stride() + pos * v_head_bytes_,
               head_dim_v_);
  }
}

// Calls f(p, g, k_at, v_at) for every position p below n and head g, with the byte offsets
// of head g of position p in rows of every head: the walk saving and restoring share.
template <typename F>
void KvCache::each_head_row(int64_t n, const F& f) const {
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t g = 0; g < n_head_kv_; ++g)
      f(p, g, p * k_row_bytes_ + g * k_head_bytes_, p * v_row_bytes_ + g * v_head_bytes_);
  }
}

void KvCache::read_rows(int64_t layer, int64_t n, uint8_t* k_dst, uint8_t* v_dst) const {
  each_head_row(n, [&](int64_t p, int64_t g, size_t k_at, size_t v_at) {
    const uint8_t* k_head = k_[layer].data() + g * k_head_stride();
    if (k_tiled_) {
      kernels::load_key_tiled(k_type_, k_head, k_head_bytes_, p, 0, head_dim_k_, k_dst + k_at);
    } else {
      std::memcpy(k_dst + k_at, k_head + p * k_head_bytes_, k_head_bytes_);
    }
    std::memcpy(v_dst + v_at, v_[layer].data() + g * v_head_stride() + p * v_head_bytes_,
                v_head_bytes_);
  });
}

void KvCache::write_rows(int64_t layer, int64_t n, const uint8_t* k_src, const uint8_t* v_src) {
  each_head_row(n, [&](int64_t p, int64_t g, size_t k_at, size_t v_at) {
    uint8_t* k_head = k_[layer].data() + g * k_head_stride();
    if (k_tiled_) {
      kernels::store_key_tiled(k_type_, k_src + k_at, 0, head_dim_k_, p, k_head, k_head_bytes_);
    } else {
      std::memcpy(k_head + p * k_head_bytes_, k_src + k_at, k_head_bytes_);
    }
    std::memcpy(v_[layer].data() + g * v_head_stride() + p * v_head_bytes_, v_src + v_at,
                v_head_bytes_);
  });
}

}  // namespace qinfer
