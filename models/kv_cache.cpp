#include "models/kv_cache.hpp"

#include <algorithm>
#include <string>

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
      n_embd_k_(c.n_embd_k()),
      n_embd_v_(c.n_embd_v()),
      k_type_(k_type),
      v_type_(v_type) {
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

void KvCache::reserve(int64_t n_pos) {
  if (n_pos <= capacity_) return;
  if (n_pos > n_ctx_) {
    throw Error(ErrorCode::kContextOverflow, "context overflow: " + std::to_string(n_pos) +
                                                 " tokens do not fit in a context of " +
                                                 std::to_string(n_ctx_));
  }
  const int64_t grown = std::min(n_ctx_, std::max({n_pos, 2 * capacity_, int64_t{64}}));
  for (int64_t l = 0; l < n_layer_; ++l) {
    k_[l].resize(static_cast<size_t>(grown) * k_row_bytes_);
    v_[l].resize(static_cast<size_t>(grown) * v_row_bytes_);
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
  cache_quantizer(kt, k_type_)(k, k_[layer].data() + static_cast<size_t>(pos) * k_row_bytes_,
                               n_embd_k_);
  cache_quantizer(kt, v_type_)(v, v_[layer].data() + static_cast<size_t>(pos) * v_row_bytes_,
                               n_embd_v_);
}

const uint8_t* KvCache::keys(int64_t layer, int64_t pos) const {
  return k_[layer].data() + static_cast<size_t>(pos) * k_row_bytes_;
}
const uint8_t* KvCache::values(int64_t layer, int64_t pos) const {
  return v_[layer].data() + static_cast<size_t>(pos) * v_row_bytes_;
}

}  // namespace qinfer
