// ModelConfig from <arch>.* keys, checked by one table of rules before anything is sized by
// it: a hostile or broken file gets a one-line error naming the key and the values involved.
#include <cmath>
#include <string>

#include "models/model.hpp"
#include "qinfer/error.hpp"

namespace qinfer {

namespace {

// Limits that keep every buffer sized by the config sane. Real models are far inside them
// (the largest dims today: embedding 16384, 256 experts, head size 576, 10M-token context).
constexpr int64_t kMaxContext = int64_t{1} << 26;
constexpr int64_t kMaxEmbd = int64_t{1} << 17;
constexpr int64_t kMaxLayers = 2048;
constexpr int64_t kMaxHeads = 4096;
constexpr int64_t kMaxHeadDim = 4096;
constexpr int64_t kMaxExperts = 1024;

bool finite_positive(float x) { return std::isfinite(x) && x > 0.0f; }
std::string str(int64_t x) { return std::to_string(x); }
std::string str(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(x));
  return buf;
}

// One rule: the key it is about (after "<arch>."), what must hold, and the values that show
// why it does not ("16 (head size 8)").
struct Rule {
  const char* key;
  const char* requirement;
  bool (*holds)(const ModelConfig&);
  std::string (*values)(const ModelConfig&);
};

// Checked in order, so a later rule may rely on the earlier ones (no division by zero).
const Rule kRules[] = {
    {"context_length", "must be between 1 and 2^26",
     [](const ModelConfig& c) { return c.n_ctx_train >= 1 && c.n_ctx_train <= kMaxContext; },
     [](const ModelConfig& c) { return str(c.n_ctx_train); }},
    {"embedding_length", "must be between 1 and 2^17",
     [](const ModelConfig& c) { return c.n_embd >= 1 && c.n_embd <= kMaxEmbd; },
     [](const ModelConfig& c) { return str(c.n_embd); }},
    {"block_count", "must be between 1 and 2048",
     [](const ModelConfig& c) { return c.n_layer >= 1 && c.n_layer <= kMaxLayers; },
     [](const ModelConfig& c) { return str(c.n_layer); }},
    {"feed_forward_length", "must be between 1 and 2^20",
     [](const ModelConfig& c) { return c.n_ff >= 1 && c.n_ff <= (int64_t{1} << 20); },
     [](const ModelConfig& c) { return str(c.n_ff); }},
    {"attention.head_count", "must be between 1 and 4096",
     [](const ModelConfig& c) { return c.n_head >= 1 && c.n_head <= kMaxHeads; },
     [](const ModelConfig& c) { return str(c.n_head); }},
    {"attention.head_count_kv", "must be at least 1 and divide attention.head_count",
     [](const ModelConfig& c) { return c.n_head_kv >= 1 && c.n_head % c.n_head_kv == 0; },
     [](const ModelConfig& c) { return str(c.n_head_kv) + " (head_count " + str(c.n_head) + ")"; }},
    {"attention.key_length",
     "must be between 1 and 4096 (without the key: embedding_length / head_count, which must "
     "divide)",
     [](const ModelConfig& c) { return c.head_dim_k >= 1 && c.head_dim_k <= kMaxHeadDim; },
     [](const ModelConfig& c) {
       return str(c.head_dim_k) + " (embedding_length " + str(c.n_embd) + ", head_count " +
              str(c.n_head) + ")";
     }},
    {"attention.value_length", "must be between 1 and 4096",
     [](const ModelConfig& c) { return c.head_dim_v >= 1 && c.head_dim_v <= kMaxHeadDim; },
     [](const ModelConfig& c) { return str(c.head_dim_v); }},
    {"rope.dimension_count", "must be even, at least 2 and at most the head size",
     [](const ModelConfig& c) {
       return !c.uses_rope() || (c.n_rot >= 2 && c.n_rot % 2 == 0 && c.n_rot <= c.head_dim_k);
     },
     [](const ModelConfig& c) { return str(c.n_rot) + " (head size " + str(c.head_dim_k) + ")"; }},
    {"rope.freq_base", "must be finite and positive",
     [](const ModelConfig& c) { return !c.uses_rope() || finite_positive(c.rope_freq_base); },
     [](const ModelConfig& c) { return str(c.rope_freq_base); }},
    {"rope.scaling.factor", "must be finite and positive",
     [](const ModelConfig& c) { return finite_positive(c.rope_freq_scale); },
     [](const ModelConfig& c) { return str(1.0f / c.rope_freq_scale); }},
    {"rope.scaling.attn_factor", "must be finite and positive",
     [](const ModelConfig& c) { return finite_positive(c.rope_attn_factor); },
     [](const ModelConfig& c) { return str(c.rope_attn_factor); }},
    {"rope.scaling.original_context_length", "must be between 1 and 2^26",
     [](const ModelConfig& c) { return c.n_ctx_orig >= 1 && c.n_ctx_orig <= kMaxContext; },
     [](const ModelConfig& c) { return str(c.n_ctx_orig); }},
    {"attention.layer_norm_rms_epsilon / layer_norm_epsilon",
     "must be finite, positive and below 1",
     [](const ModelConfig& c) { return finite_positive(c.norm_eps) && c.norm_eps < 1.0f; },
     [](const ModelConfig& c) { return str(c.norm_eps); }},
    {"expert_count", "must be at most 1024, and at least 2 when experts are used",
     [](const ModelConfig& c) {
       return c.n_expert == 0 || (c.n_expert >= 2 && c.n_expert <= kMaxExperts);
     },
     [](const ModelConfig& c) { return str(c.n_expert); }},
    {"expert_used_count", "must be between 1 and expert_count (0 without experts)",
     [](const ModelConfig& c) {
       return c.n_expert == 0 ? c.n_expert_used == 0
                              : c.n_expert_used >= 1 && c.n_expert_used <= c.n_expert;
     },
     [](const ModelConfig& c) {
       return str(c.n_expert_used) + " (expert_count " + str(c.n_expert) + ")";
     }},
    {"attn_logit_softcapping", "must be finite and not negative",
     [](const ModelConfig& c) { return std::isfinite(c.attn_softcap) && c.attn_softcap >= 0; },
     [](const ModelConfig& c) { return str(c.attn_softcap); }},
    {"final_logit_softcapping", "must be finite and not negative",
     [](const ModelConfig& c) { return std::isfinite(c.final_softcap) && c.final_softcap >= 0; },
     [](const ModelConfig& c) { return str(c.final_softcap); }},
    {"attention.sliding_window", "must not be negative",
     [](const ModelConfig& c) { return c.sliding_window >= 0; },
     [](const ModelConfig& c) { return str(c.sliding_window); }},
};

void check_rules(const GgufFile& f, const ModelConfig& c) {
  for (const Rule& r : kRules) {
    if (!r.holds(c)) {
      throw Error(ErrorCode::kInvalidFile, f.path() + ": " + c.arch_name + "." + r.key + " = " +
                                               r.values(c) + ": " + r.requirement);
    }
  }
}

int64_t get_int_or(const GgufFile& f, const std::string& key, int64_t fallback) {
  return f.has(key) ? f.get_int(key) : fallback;
}

}  // namespace

bool ModelConfig::layer_uses_swa(int64_t layer) const {
  if (sliding_window <= 0) return false;
  switch (arch->swa) {
    case SwaLayers::kAll:
      return true;
    case SwaLayers::kEven:
      return layer % 2 == 0;
    default:
      return false;
  }
}

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
  ModelConfig c;
  c.arch_name = std::string(f.get_string("general.architecture"));
  c.arch = find_arch(c.arch_name);
  if (c.arch == nullptr) {
    throw Error(ErrorCode::kUnsupported,
                f.path() + ": architecture '" + c.arch_name +
                    "' is not supported (supported: " + supported_arch_names() + ")");
  }
  const ArchSpec& a = *c.arch;
  const std::string p = c.arch_name + ".";
  c.n_ctx_train = f.get_int(p + "context_length");
  c.n_embd = f.get_int(p + "embedding_length");
  c.n_layer = f.get_int(p + "block_count");
  c.n_ff = f.get_int(p + "feed_forward_length");
  c.n_head = f.get_int(p + "attention.head_count");
  c.n_head_kv = get_int_or(f, p + "attention.head_count_kv", c.n_head);
  const bool head_divides = c.n_head > 0 && c.n_embd % c.n_head == 0;
  c.head_dim_k = get_int_or(f, p + "attention.key_length", head_divides ? c.n_embd / c.n_head : 0);
  c.head_dim_v = get_int_or(f, p + "attention.value_length", c.head_dim_k);
  c.n_expert = get_int_or(f, p + "expert_count", 0);
  c.n_expert_used = get_int_or(f, p + "expert_used_count", 0);
  c.norm_eps = f.get_f32(p + (a.norm == NormKind::kRms ? "attention.layer_norm_rms_epsilon"
                                                       : "attention.layer_norm_epsilon"));
  if (c.uses_rope()) {
    c.n_rot = get_int_or(f, p + "rope.dimension_count", c.head_dim_k);
    c.rope_freq_base = f.get_f32_or(p + "rope.freq_base", 10000.0f);
    // As llama.cpp: without a type, a scaling factor is linear; a factor of 0 means none.
    const std::string scaling = f.get_string_or(p + "rope.scaling.type", "linear");
    float factor = f.get_f32_or(p + "rope.scaling.factor", 0.0f);
    if (factor == 0.0f) factor = 1.0f;
    if (scaling == "none" || scaling == "longrope") {
      factor = 1.0f;
    } else if (scaling == "yarn") {
      c.rope_scaling = RopeScaling::kYarn;
      c.yarn_ext_factor = 1.0f;
    } else if (scaling == "linear") {
      c.rope_scaling = factor != 1.0f ? RopeScaling::kLinear : RopeScaling::kNone;
    } else {
      throw Error(ErrorCode::kUnsupported, f.path() + ": rope scaling '" + scaling +
                                               "' is not supported (none, linear, yarn)");
    }
    c.rope_freq_scale = 1.0f / factor;
    c.rope_attn_factor = f.get_f32_or(p + "rope.scaling.attn_factor", 1.0f);
    c.n_ctx_orig = get_int_or(f, p + "rope.scaling.original_context_length", c.n_ctx_train);
  } else {
    c.n_ctx_orig = c.n_ctx_train;
  }
  c.attn_softcap = f.get_f32_or(p + "attn_logit_softcapping", a.attn_softcap_default);
  c.final_softcap = f.get_f32_or(p + "final_logit_softcapping", a.final_softcap_default);
  c.sliding_window =
      a.swa == SwaLayers::kNone ? 0 : get_int_or(f, p + "attention.sliding_window", a.swa_default);
  check_rules(f, c);

  // gemma2 scales q by 1/sqrt(head size), except the 46-layer 27B model, which uses
  // 1/sqrt(embedding / heads) (llama.cpp's rule, which aborts on other layer counts).
  const bool gemma2_27b = a.query_scale == QueryScale::kGemma2 && c.n_layer == 46;
  c.query_scale =
      1.0f / std::sqrt(static_cast<float>(gemma2_27b ? c.n_embd / c.n_head : c.head_dim_k));
  c.embd_scale = a.embd_scale_sqrt ? std::sqrt(static_cast<float>(c.n_embd)) : 1.0f;
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr)
    throw Error(ErrorCode::kMissingKey, f.path() + ": missing tensor token_embd.weight");
  c.n_vocab = embd->ne[1];
  if (embd->n_dims != 2 || c.n_vocab < 1) {
    throw Error(ErrorCode::kInvalidFile,
                f.path() + ": token_embd.weight must be a matrix with at least one row");
  }
  return c;
}

}  // namespace qinfer
