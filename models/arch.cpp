// The architecture table: every tensor name written once (with the field it binds and the
// shape the config implies), then one entry per family listing the tensors it uses.
#include "models/arch.hpp"

#include "models/model.hpp"

namespace qinfer {

namespace {

using G = ModelWeights;
using L = LayerWeights;

// Shapes in GGUF order: {row length (input features), rows (output features), experts}.
Shape embd(const ModelConfig& c) { return {c.n_embd}; }
Shape embd_vocab(const ModelConfig& c) { return {c.n_embd, c.n_vocab}; }
Shape embd_positions(const ModelConfig& c) { return {c.n_embd, c.n_ctx_train}; }
Shape rope_pairs(const ModelConfig& c) { return {c.n_rot / 2}; }
Shape q_rows(const ModelConfig& c) { return {c.n_embd, c.n_embd_q()}; }
Shape k_rows(const ModelConfig& c) { return {c.n_embd, c.n_embd_k()}; }
Shape v_rows(const ModelConfig& c) { return {c.n_embd, c.n_embd_v()}; }
Shape q_vec(const ModelConfig& c) { return {c.n_embd_q()}; }
Shape k_vec(const ModelConfig& c) { return {c.n_embd_k()}; }
Shape v_vec(const ModelConfig& c) { return {c.n_embd_v()}; }
Shape qkv_rows(const ModelConfig& c) {
  return {c.n_embd, c.n_embd_q() + c.n_embd_k() + c.n_embd_v()};
}
Shape qkv_vec(const ModelConfig& c) { return {c.n_embd_q() + c.n_embd_k() + c.n_embd_v()}; }
Shape head_k(const ModelConfig& c) { return {c.head_dim_k}; }
Shape out_rows(const ModelConfig& c) { return {c.n_embd_attn(), c.n_embd}; }
Shape ff_rows(const ModelConfig& c) { return {c.n_embd, c.n_ff}; }
Shape ff2_rows(const ModelConfig& c) { return {c.n_embd, 2 * c.n_ff}; }
Shape ff_vec(const ModelConfig& c) { return {c.n_ff}; }
Shape down_rows(const ModelConfig& c) { return {c.n_ff, c.n_embd}; }
Shape router_rows(const ModelConfig& c) { return {c.n_embd, c.n_expert}; }
Shape ff_exps(const ModelConfig& c) { return {c.n_embd, c.n_ff, c.n_expert}; }
Shape down_exps(const ModelConfig& c) { return {c.n_ff, c.n_embd, c.n_expert}; }

// Global tensors.
constexpr TensorRow<G> kTokenEmbd{"token_embd.weight", &G::token_embd, embd_vocab};
constexpr TensorRow<G> kPositionEmbd{"position_embd.weight", &G::position_embd, embd_positions};
constexpr TensorRow<G> kOutputNorm{"output_norm.weight", &G::output_norm, embd};
constexpr TensorRow<G> kOutputNormB{"output_norm.bias", &G::output_norm_b, embd};
constexpr TensorRow<G> kOutput{"output.weight", &G::output, embd_vocab};
constexpr TensorRow<G> kRopeFreqs{"rope_freqs.weight", &G::rope_freqs, rope_pairs};
constexpr TensorRow<G> kRopeLong{"rope_factors_long.weight", &G::rope_long, rope_pairs};
constexpr TensorRow<G> kRopeShort{"rope_factors_short.weight", &G::rope_short, rope_pairs};

// Per-block tensors ("%d" is the block index).
constexpr TensorRow<L> kAttnNorm{"blk.%d.attn_norm.weight", &L::attn_norm, embd};
constexpr TensorRow<L> kAttnNormB{"blk.%d.attn_norm.bias", &L::attn_norm_b, embd};
constexpr TensorRow<L> kAttnQ{"blk.%d.attn_q.weight", &L::attn_q, q_rows};
constexpr TensorRow<L> kAttnK{"blk.%d.attn_k.weight", &L::attn_k, k_rows};
constexpr TensorRow<L> kAttnV{"blk.%d.attn_v.weight", &L::attn_v, v_rows};
constexpr TensorRow<L> kAttnQB{"blk.%d.attn_q.bias", &L::attn_q_b, q_vec};
constexpr TensorRow<L> kAttnKB{"blk.%d.attn_k.bias", &L::attn_k_b, k_vec};
constexpr TensorRow<L> kAttnVB{"blk.%d.attn_v.bias", &L::attn_v_b, v_vec};
constexpr TensorRow<L> kAttnQkv{"blk.%d.attn_qkv.weight", &L::attn_qkv, qkv_rows};
constexpr TensorRow<L> kAttnQkvB{"blk.%d.attn_qkv.bias", &L::attn_qkv_b, qkv_vec};
constexpr TensorRow<L> kAttnQNorm{"blk.%d.attn_q_norm.weight", &L::attn_q_norm, head_k};
constexpr TensorRow<L> kAttnKNorm{"blk.%d.attn_k_norm.weight", &L::attn_k_norm, head_k};
constexpr TensorRow<L> kAttnOut{"blk.%d.attn_output.weight", &L::attn_out, out_rows};
constexpr TensorRow<L> kAttnOutB{"blk.%d.attn_output.bias", &L::attn_out_b, embd};
constexpr TensorRow<L> kAttnPostNorm{"blk.%d.post_attention_norm.weight", &L::attn_post_norm, embd};
constexpr TensorRow<L> kFfnNorm{"blk.%d.ffn_norm.weight", &L::ffn_norm, embd};
constexpr TensorRow<L> kFfnNormB{"blk.%d.ffn_norm.bias", &L::ffn_norm_b, embd};
constexpr TensorRow<L> kFfnGate{"blk.%d.ffn_gate.weight", &L::ffn_gate, ff_rows};
constexpr TensorRow<L> kFfnUp{"blk.%d.ffn_up.weight", &L::ffn_up, ff_rows};
constexpr TensorRow<L> kFfnGateUp{"blk.%d.ffn_up.weight", &L::ffn_up, ff2_rows};  // [gate | up]
constexpr TensorRow<L> kFfnUpB{"blk.%d.ffn_up.bias", &L::ffn_up_b, ff_vec};
constexpr TensorRow<L> kFfnDown{"blk.%d.ffn_down.weight", &L::ffn_down, down_rows};
constexpr TensorRow<L> kFfnDownB{"blk.%d.ffn_down.bias", &L::ffn_down_b, embd};
constexpr TensorRow<L> kFfnPostNorm{"blk.%d.post_ffw_norm.weight", &L::ffn_post_norm, embd};
constexpr TensorRow<L> kFfnRouter{"blk.%d.ffn_gate_inp.weight", &L::ffn_router, router_rows};
constexpr TensorRow<L> kFfnGateExps{"blk.%d.ffn_gate_exps.weight", &L::ffn_gate_exps, ff_exps};
constexpr TensorRow<L> kFfnUpExps{"blk.%d.ffn_up_exps.weight", &L::ffn_up_exps, ff_exps};
constexpr TensorRow<L> kFfnDownExps{"blk.%d.ffn_down_exps.weight", &L::ffn_down_exps, down_exps};

constexpr Need R = Need::kRequired, O = Need::kOptional;

// llama (and Mixtral-style experts, and mistral's files, which say "llama").
constexpr TensorUse<G> kLlamaGlobals[] = {
    {&kTokenEmbd, R}, {&kOutputNorm, R}, {&kOutput, O}, {&kRopeFreqs, O}};
constexpr TensorUse<L> kLlamaLayers[] = {
    {&kAttnNorm, R},
    {&kAttnQ, R},
    {&kAttnK, R},
    {&kAttnV, R},
    {&kAttnQB, O},
    {&kAttnKB, O},
    {&kAttnVB, O},
    {&kAttnOut, R},
    {&kAttnOutB, O},
    {&kFfnNorm, R},
    {&kFfnGate, Need::kDense},
    {&kFfnUp, Need::kDense},
    {&kFfnDown, Need::kDense},
    {&kFfnRouter, Need::kExperts},
    {&kFfnGateExps, Need::kExperts},
    {&kFfnUpExps, Need::kExperts},
    {&kFfnDownExps, Need::kExperts},
};

constexpr TensorUse<G> kGpt2Globals[] = {
    {&kTokenEmbd, R}, {&kPositionEmbd, R}, {&kOutputNorm, R}, {&kOutputNormB, R}, {&kOutput, O}};
constexpr TensorUse<L> kGpt2Layers[] = {
    {&kAttnNorm, R}, {&kAttnNormB, R}, {&kAttnQkv, R}, {&kAttnQkvB, R},
    {&kAttnOut, R},  {&kAttnOutB, R},  {&kFfnNorm, R}, {&kFfnNormB, R},
    {&kFfnUp, R},    {&kFfnUpB, R},    {&kFfnDown, R}, {&kFfnDownB, R},
};

constexpr TensorUse<G> kQwen2Globals[] = {{&kTokenEmbd, R}, {&kOutputNorm, R}, {&kOutput, O}};
constexpr TensorUse<L> kQwen2Layers[] = {
    {&kAttnNorm, R}, {&kAttnQ, R},   {&kAttnK, R},   {&kAttnV, R},   {&kAttnQB, R}, {&kAttnKB, R},
    {&kAttnVB, R},   {&kAttnOut, R}, {&kFfnNorm, R}, {&kFfnGate, R}, {&kFfnUp, R},  {&kFfnDown, R},
};

constexpr TensorUse<G> kPhi3Globals[] = {
    {&kTokenEmbd, R}, {&kOutputNorm, R}, {&kOutput, R}, {&kRopeLong, O}, {&kRopeShort, O}};
constexpr TensorUse<L> kPhi3Layers[] = {
    {&kAttnNorm, R}, {&kAttnQkv, R},   {&kAttnOut, R},
    {&kFfnNorm, R},  {&kFfnGateUp, R}, {&kFfnDown, R},
};

// gemma2's output is always the token embedding, so output.weight is not listed.
constexpr TensorUse<G> kGemmaGlobals[] = {{&kTokenEmbd, R}, {&kOutputNorm, R}};
constexpr TensorUse<L> kGemma2Layers[] = {
    {&kAttnNorm, R}, {&kAttnQ, R},        {&kAttnK, R},       {&kAttnV, R},
    {&kAttnOut, R},  {&kAttnPostNorm, R}, {&kFfnNorm, R},     {&kFfnGate, R},
    {&kFfnUp, R},    {&kFfnDown, R},      {&kFfnPostNorm, R},
};
constexpr TensorUse<L> kGemmaLayers[] = {
    {&kAttnNorm, R}, {&kAttnQ, R},   {&kAttnK, R}, {&kAttnV, R},   {&kAttnOut, R},
    {&kFfnNorm, R},  {&kFfnGate, R}, {&kFfnUp, R}, {&kFfnDown, R},
};

const ArchSpec kArchs[] = {
    {.name = "llama", .globals = kLlamaGlobals, .layers = kLlamaLayers},
    {.name = "gpt2",
     .norm = NormKind::kLayer,
     .positions = PositionKind::kLearned,
     .ffn = FfnKind::kGelu,
     .globals = kGpt2Globals,
     .layers = kGpt2Layers},
    {.name = "qwen2",
     .positions = PositionKind::kRopeNeox,
     .globals = kQwen2Globals,
     .layers = kQwen2Layers},
    {.name = "phi3",
     .positions = PositionKind::kRopeNeox,
     .fused_gate_up = true,
     .prescale_q = true,
     .swa = SwaLayers::kAll,
     .globals = kPhi3Globals,
     .layers = kPhi3Layers},
    {.name = "gemma",
     .positions = PositionKind::kRopeNeox,
     .ffn = FfnKind::kGeGlu,
     .embd_scale_sqrt = true,
     .prescale_q = true,
     .globals = kGemmaGlobals,
     .layers = kGemmaLayers},
    {.name = "gemma2",
     .positions = PositionKind::kRopeNeox,
     .ffn = FfnKind::kGeGlu,
     .post_norms = true,
     .embd_scale_sqrt = true,
     .prescale_q = true,
     .query_scale = QueryScale::kGemma2,
     .swa = SwaLayers::kEven,
     .swa_default = 4096,
     .attn_softcap_default = 50.0f,
     .final_softcap_default = 30.0f,
     .globals = kGemmaGlobals,
     .layers = kGemma2Layers},
};

}  // namespace

const ArchSpec* find_arch(std::string_view name) {
  for (const ArchSpec& a : kArchs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::string supported_arch_names() {
  std::string out;
  for (const ArchSpec& a : kArchs) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

}  // namespace qinfer
