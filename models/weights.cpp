// Binds the tensors an architecture lists (models/arch.cpp) to ModelWeights, checking each
// one's presence, shape and type against the config.
#include <cstdlib>
#include <string>

#include "kernels/kernels.hpp"
#include "models/model.hpp"
#include "qinfer/error.hpp"

namespace qinfer {

namespace {

std::string shape_str(const Shape& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

std::string layer_name(const char* tmpl, int64_t layer) {
  std::string s(tmpl);
  const size_t at = s.find("%d");
  if (at != std::string::npos) s.replace(at, 2, std::to_string(layer));
  return s;
}

bool needed(Need need, const ModelConfig& c) {
  switch (need) {
    case Need::kRequired:
      return true;
    case Need::kDense:
      return c.n_expert == 0;
    case Need::kExperts:
      return c.n_expert > 0;
    default:
      return false;
  }
}

bool allowed(Need need, const ModelConfig& c) { return need == Need::kOptional || needed(need, c); }

class Binder {
 public:
  Binder(const GgufFile& f, const ModelConfig& c) : f_(f), c_(c) {}

  kernels::MatrixView bind(const std::string& name, Need need, ShapeFn shape_fn) const {
    const TensorInfo* t = allowed(need, c_) ? f_.find_tensor(name) : nullptr;
    if (t == nullptr) {
      if (needed(need, c_))
        throw Error(ErrorCode::kMissingKey, f_.path() + ": missing tensor " + name);
      return {TensorType::F32, nullptr, 0, 0, 0};
    }
    const Shape want = shape_fn(c_);
    const Shape got(t->ne, t->ne + t->n_dims);
    if (got != want) {
      throw Error(ErrorCode::kInvalidFile, f_.path() + ": tensor " + name + " has shape " +
                                               shape_str(got) + ", expected " + shape_str(want));
    }
    if (want.size() == 1) {
      if (t->type != TensorType::F32) {
        throw Error(ErrorCode::kUnsupported, f_.path() + ": tensor " + name + " is " +
                                                 std::string(type_name(t->type)) +
                                                 ", expected f32");
      }
    } else {
      const kernels::TypeKernels& k =
          kernels::table(kernels::Isa::kScalar).types[static_cast<uint32_t>(t->type)];
      if (k.vec_dot == nullptr || k.dequantize_row == nullptr) {
        throw Error(ErrorCode::kUnsupported, f_.path() + ": tensor " + name + " is " +
                                                 std::string(type_name(t->type)) +
                                                 ", which cannot be a weight");
      }
    }
    return {t->type, t->data, t->n_rows(), t->ne[0], t->row_bytes()};
  }

 private:
  const GgufFile& f_;
  const ModelConfig& c_;
};

// Tensors of blocks the config does not have mean block_count is wrong (or the file is).
void check_no_stray_blocks(const GgufFile& f, const ModelConfig& c) {
  for (const TensorInfo& t : f.tensors()) {
    if (t.name.rfind("blk.", 0) != 0) continue;
    const int64_t index = std::strtoll(t.name.c_str() + 4, nullptr, 10);
    if (index >= c.n_layer) {
      throw Error(ErrorCode::kInvalidFile, f.path() + ": tensor " + t.name + " belongs to block " +
                                               std::to_string(index) + ", but " + c.arch_name +
                                               ".block_count = " + std::to_string(c.n_layer));
    }
  }
}

}  // namespace

ModelWeights bind_weights(const GgufFile& f, const ModelConfig& c) {
  check_no_stray_blocks(f, c);
  const Binder b(f, c);
  ModelWeights w;
  for (const TensorUse<ModelWeights>& u : c.arch->globals) {
    w.*(u.row->field) = b.bind(u.row->name, u.need, u.row->shape);
  }
  if (w.output.data == nullptr) w.output = w.token_embd;  // tied
  w.layers.resize(static_cast<size_t>(c.n_layer));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    for (const TensorUse<LayerWeights>& u : c.arch->layers) {
      w.layers[l].*(u.row->field) = b.bind(layer_name(u.row->name, l), u.need, u.row->shape);
    }
  }
  return w;
}

}  // namespace qinfer
