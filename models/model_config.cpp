// ModelConfig from <arch>.* keys, and the tensor table each architecture binds.
#include <functional>

#include "models/model.hpp"
#include "qinfer/error.hpp"

namespace qinfer {

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
  ModelConfig c;
  c.arch_name = std::string(f.get_string("general.architecture"));
  if (c.arch_name == "llama") {
    c.arch = Arch::kLlama;
  } else if (c.arch_name == "gpt2") {
    c.arch = Arch::kGpt2;
  } else {
    throw Error(ErrorCode::kUnsupported, f.path() + ": architecture '" + c.arch_name +
                                             "' is not supported (supported: llama, gpt2)");
  }
  const std::string a = c.arch_name + ".";
  c.n_ctx_train = f.get_u32(a + "context_length");
  c.n_embd = f.get_u32(a + "embedding_length");
  c.n_layer = f.get_u32(a + "block_count");
  c.n_ff = f.get_u32(a + "feed_forward_length");
  c.n_head = f.get_u32(a + "attention.head_count");
  c.n_head_kv = f.get_u32_or(a + "attention.head_count_kv", static_cast<uint32_t>(c.n_head));
  if (c.n_head <= 0 || c.n_embd % c.n_head != 0 || c.n_head_kv <= 0 || c.n_head % c.n_head_kv != 0) {
    throw Error(ErrorCode::kInvalidFile, f.path() + ": head counts " + std::to_string(c.n_head) +
                                             "/" + std::to_string(c.n_head_kv) +
                                             " do not divide embedding length " +
                                             std::to_string(c.n_embd));
  }
  if (c.arch == Arch::kLlama) {
    c.norm_eps = f.get_f32(a + "attention.layer_norm_rms_epsilon");
    c.n_rot = f.get_u32_or(a + "rope.dimension_count", static_cast<uint32_t>(c.head_dim()));
    c.rope_freq_base = f.get_f32_or(a + "rope.freq_base", 10000.0f);
    const std::string scaling = f.get_string_or(a + "rope.scaling.type", "none");
    if (scaling == "linear") {
      c.rope_freq_scale = 1.0f / f.get_f32(a + "rope.scaling.factor");
    } else if (scaling != "none") {
      throw Error(ErrorCode::kUnsupported,
                  f.path() + ": rope scaling '" + scaling + "' is not supported (none, linear)");
    }
  } else {
    c.norm_eps = f.get_f32(a + "attention.layer_norm_epsilon");
  }
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) throw Error(ErrorCode::kMissingKey, f.path() + ": missing tensor token_embd.weight");
  c.n_vocab = embd->ne[1];
  return c;
}

namespace {

// One row of the tensor table: GGUF name template, whether an architecture needs it, and
// the shape it must have. "%d" stands for the block index.
enum Need { kRequired, kOptional };
struct TensorSpec {
  const char* name;
  Need need;
  std::function<std::vector<int64_t>(const ModelConfig&)> shape;
};

using Shape = std::vector<int64_t>;
std::vector<TensorSpec> global_tensors(Arch arch) {
  std::vector<TensorSpec> t = {
      {"token_embd.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd, c.n_vocab}; }},
      {"output_norm.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd}; }},
      {"output.weight", kOptional, [](const ModelConfig& c) { return Shape{c.n_embd, c.n_vocab}; }},
  };
  if (arch == Arch::kGpt2) {
    t.push_back({"output_norm.bias", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd}; }});
    t.push_back({"position_embd.weight", kRequired,
                 [](const ModelConfig& c) { return Shape{c.n_embd, c.n_ctx_train}; }});
  }
  return t;
}

std::vector<TensorSpec> layer_tensors(Arch arch) {
  auto vec = [](int64_t ModelConfig::*m) {
    return [m](const ModelConfig& c) { return Shape{c.*m}; };
  };
  if (arch == Arch::kLlama) {
    return {
        {"blk.%d.attn_norm.weight", kRequired, vec(&ModelConfig::n_embd)},
        {"blk.%d.attn_q.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd, c.n_embd}; }},
        {"blk.%d.attn_k.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd, c.n_embd_kv()}; }},
        {"blk.%d.attn_v.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd, c.n_embd_kv()}; }},
        {"blk.%d.attn_output.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd, c.n_embd}; }},
        {"blk.%d.ffn_norm.weight", kRequired, vec(&ModelConfig::n_embd)},
        {"blk.%d.ffn_gate.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd, c.n_ff}; }},
        {"blk.%d.ffn_up.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd, c.n_ff}; }},
        {"blk.%d.ffn_down.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_ff, c.n_embd}; }},
    };
  }
  return {
      {"blk.%d.attn_norm.weight", kRequired, vec(&ModelConfig::n_embd)},
      {"blk.%d.attn_norm.bias", kRequired, vec(&ModelConfig::n_embd)},
      {"blk.%d.attn_qkv.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd, 3 * c.n_embd}; }},
      {"blk.%d.attn_qkv.bias", kRequired, [](const ModelConfig& c) { return Shape{3 * c.n_embd}; }},
      {"blk.%d.attn_output.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd, c.n_embd}; }},
      {"blk.%d.attn_output.bias", kRequired, vec(&ModelConfig::n_embd)},
      {"blk.%d.ffn_norm.weight", kRequired, vec(&ModelConfig::n_embd)},
      {"blk.%d.ffn_norm.bias", kRequired, vec(&ModelConfig::n_embd)},
      {"blk.%d.ffn_up.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_embd, c.n_ff}; }},
      {"blk.%d.ffn_up.bias", kRequired, vec(&ModelConfig::n_ff)},
      {"blk.%d.ffn_down.weight", kRequired, [](const ModelConfig& c) { return Shape{c.n_ff, c.n_embd}; }},
      {"blk.%d.ffn_down.bias", kRequired, vec(&ModelConfig::n_embd)},
  };
}

std::string layer_name(const char* tmpl, int64_t layer) {
  std::string s(tmpl);
  s.replace(s.find("%d"), 2, std::to_string(layer));
  return s;
}

class Binder {
 public:
  Binder(const GgufFile& f, const ModelConfig& c) : f_(f), c_(c) {}

  const TensorInfo* find(const std::string& name, const TensorSpec& spec) const {
    const TensorInfo* t = f_.find_tensor(name);
    if (t == nullptr) {
      if (spec.need == kRequired) {
        throw Error(ErrorCode::kMissingKey, f_.path() + ": missing tensor " + name);
      }
      return nullptr;
    }
    const Shape want = spec.shape(c_);
    Shape got(t->ne, t->ne + t->n_dims);
    if (got != want) {
      auto str = [](const Shape& s) {
        std::string o = "[";
        for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
        return o + "]";
      };
      throw Error(ErrorCode::kInvalidFile, f_.path() + ": tensor " + name + " has shape " + str(got) +
                                               ", expected " + str(want));
    }
    if (want.size() == 1 && t->type != TensorType::F32) {
      throw Error(ErrorCode::kUnsupported, f_.path() + ": tensor " + name + " is " +
                                               std::string(type_name(t->type)) + ", expected f32");
    }
    return t;
  }

  const TensorSpec& spec(const std::vector<TensorSpec>& table, std::string_view name) const {
    for (const TensorSpec& s : table) {
      if (name == s.name) return s;
    }
    throw Error(ErrorCode::kInternal, "no tensor spec " + std::string(name));
  }

  static kernels::MatrixView matrix(const TensorInfo* t) {
    if (t == nullptr) return {TensorType::F32, nullptr, 0, 0, 0};
    return {t->type, t->data, t->ne[1], t->ne[0], t->row_bytes()};
  }
  static const float* vector(const TensorInfo* t) {
    return t == nullptr ? nullptr : reinterpret_cast<const float*>(t->data);
  }

 private:
  const GgufFile& f_;
  const ModelConfig& c_;
};

}  // namespace

ModelWeights bind_weights(const GgufFile& f, const ModelConfig& c) {
  Binder b(f, c);
  ModelWeights w;
  const auto globals = global_tensors(c.arch);
  auto global = [&](const char* name) { return b.find(name, b.spec(globals, name)); };
  w.token_embd = Binder::matrix(global("token_embd.weight"));
  w.output_norm = Binder::vector(global("output_norm.weight"));
  const TensorInfo* out = global("output.weight");
  w.output = out != nullptr ? Binder::matrix(out) : w.token_embd;  // tied when absent
  if (c.arch == Arch::kGpt2) {
    w.output_norm_b = Binder::vector(global("output_norm.bias"));
    w.position_embd = Binder::matrix(global("position_embd.weight"));
  }
  const auto per_layer = layer_tensors(c.arch);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    LayerWeights lw;
    auto get = [&](const char* tmpl) { return b.find(layer_name(tmpl, l), b.spec(per_layer, tmpl)); };
    lw.attn_norm = Binder::vector(get("blk.%d.attn_norm.weight"));
    lw.ffn_norm = Binder::vector(get("blk.%d.ffn_norm.weight"));
    lw.attn_out = Binder::matrix(get("blk.%d.attn_output.weight"));
    lw.ffn_up = Binder::matrix(get("blk.%d.ffn_up.weight"));
    lw.ffn_down = Binder::matrix(get("blk.%d.ffn_down.weight"));
    if (c.arch == Arch::kLlama) {
      lw.attn_q = Binder::matrix(get("blk.%d.attn_q.weight"));
      lw.attn_k = Binder::matrix(get("blk.%d.attn_k.weight"));
      lw.attn_v = Binder::matrix(get("blk.%d.attn_v.weight"));
      lw.ffn_gate = Binder::matrix(get("blk.%d.ffn_gate.weight"));
    } else {
      lw.attn_norm_b = Binder::vector(get("blk.%d.attn_norm.bias"));
      lw.ffn_norm_b = Binder::vector(get("blk.%d.ffn_norm.bias"));
      lw.attn_qkv = Binder::matrix(get("blk.%d.attn_qkv.weight"));
      lw.attn_qkv_b = Binder::vector(get("blk.%d.attn_qkv.bias"));
      lw.attn_out_b = Binder::vector(get("blk.%d.attn_output.bias"));
      lw.ffn_up_b = Binder::vector(get("blk.%d.ffn_up.bias"));
      lw.ffn_down_b = Binder::vector(get("blk.%d.ffn_down.bias"));
    }
    w.layers.push_back(lw);
  }
  return w;
}

}  // namespace qinfer
