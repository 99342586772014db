#include "tools/synthetic.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numbers>

#include "kernels/float_conv.hpp"
#include "loader/gguf.hpp"
#include "loader/gguf_writer.hpp"
#include "qinfer/error.hpp"

namespace qinfer::tools {
namespace {

// SplitMix64: a seed per (model seed, tensor, row), so rows can be drawn in any order.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hash_name(const std::string& s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// One row of N(0, sigma²) values (Box-Muller over 53-bit uniforms).
void normal_row(uint64_t seed, float sigma, float* out, int64_t n) {
  uint64_t state = seed;
  auto uniform = [&] { return static_cast<double>(splitmix64(state) >> 11) * 0x1p-53; };
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - uniform(), u2 = uniform();  // u1 in (0, 1]
    const double r = std::sqrt(-2.0 * std::log(u1)) * sigma;
    out[i] = static_cast<float>(r * std::cos(2 * std::numbers::pi * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(2 * std::numbers::pi * u2));
  }
}

void store_row(const float* x, TensorType type, uint8_t* dst, int64_t n) {
  if (type == TensorType::F32) {
    std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  uint16_t* d = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i)
    d[i] = type == TensorType::F16 ? fp32_to_fp16(x[i]) : fp32_to_bf16(x[i]);
}

}  // namespace

const std::vector<SyntheticShape>& synthetic_shapes() {
  // dim, layers, heads, KV heads, FFN, RoPE base, context: the published configurations.
  static const std::vector<SyntheticShape> shapes = {
      {"tinyllama-1.1b", 2048, 22, 32, 4, 5632, 10000.0f, 2048},
      {"llama-7b", 4096, 32, 32, 32, 11008, 10000.0f, 4096},
      {"llama-3-8b", 4096, 32, 32, 8, 14336, 500000.0f, 8192},
      {"small", 512, 4, 8, 4, 1408, 10000.0f, 2048},
  };
  return shapes;
}

const SyntheticShape* find_synthetic_shape(const std::string& name) {
  for (const SyntheticShape& s : synthetic_shapes())
    if (name == s.name) return &s;
  return nullptr;
}

void write_synthetic_model(const SyntheticShape& shape, const std::string& vocab_path,
                           uint64_t seed, TensorType type, const std::string& out_path) {
  if (type != TensorType::F32 && type != TensorType::F16 && type != TensorType::BF16)
    throw Error(ErrorCode::kInvalidArgument, "a synthetic model is written as F32, F16 or BF16");
  const GgufFile vocab = GgufFile::open(vocab_path);
  if (!vocab.has("tokenizer.ggml.tokens"))
    throw Error(ErrorCode::kInvalidFile, vocab_path + ": no tokenizer.ggml.tokens to copy");
  const int64_t n_vocab = static_cast<int64_t>(vocab.get_array("tokenizer.ggml.tokens").size());

  GgufWriter w;
  const std::string arch = "llama", a = arch + ".";
  w.add_string("general.architecture", arch);
  w.add_string("general.name", std::string("synthetic-") + shape.name);
  w.add_u32(a + "context_length", static_cast<uint32_t>(shape.context));
  w.add_u32(a + "embedding_length", static_cast<uint32_t>(shape.dim));
  w.add_u32(a + "block_count", static_cast<uint32_t>(shape.n_layer));
  w.add_u32(a + "feed_forward_length", static_cast<uint32_t>(shape.ffn));
  w.add_u32(a + "attention.head_count", static_cast<uint32_t>(shape.n_head));
  w.add_u32(a + "attention.head_count_kv", static_cast<uint32_t>(shape.n_head_kv));
  w.add_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_u32(a + "rope.dimension_count", static_cast<uint32_t>(shape.dim / shape.n_head));
  w.add_f32(a + "rope.freq_base", shape.rope_base);
  w.add_u32("general.file_type", type == TensorType::F32 ? 0u : type == TensorType::F16 ? 1u : 32u);
  for (const MetaEntry& e : vocab.metadata())
    if (e.key.starts_with("tokenizer."))
      w.add_raw(e.key, e.value.type, e.value.raw, e.value.raw_bytes);

  // llama.cpp's converter's tensor names and order; norms stay F32, as there.
  auto norm = [&](const std::string& name, int64_t n) {
    w.add_tensor_generated(name, TensorType::F32, {n}, static_cast<size_t>(n) * sizeof(float),
                           [n](uint8_t* dst) {
                             const float one = 1.0f;
                             for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * 4, &one, 4);
                           });
  };
  const int n_matrices = static_cast<int>(shape.n_layer) * 7 + 2;
  auto written = std::make_shared<int>(0);
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    const size_t row_bytes = row_size_bytes(type, cols);
    const uint64_t tensor_seed = seed ^ hash_name(name);
    w.add_tensor_generated(
        name, type, {cols, rows}, row_bytes * static_cast<size_t>(rows), [=](uint8_t* dst) {
          std::fprintf(stderr, "[%4d/%4d] %-36s %6lld x %-6lld %s\n", ++*written, n_matrices,
                       name.c_str(), static_cast<long long>(rows), static_cast<long long>(cols),
                       std::string(type_name(type)).c_str());
#pragma omp parallel
          {
            std::vector<float> row(static_cast<size_t>(cols));
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; ++r) {
              uint64_t s = tensor_seed + static_cast<uint64_t>(r) * 0x632be59bd9b4e019ull;
              normal_row(splitmix64(s), 0.02f, row.data(), cols);
              store_row(row.data(), type, dst + static_cast<size_t>(r) * row_bytes, cols);
            }
          }
        });
  };
  const int64_t d = shape.dim, kv = shape.n_head_kv * (shape.dim / shape.n_head), f = shape.ffn;
  matrix("token_embd.weight", n_vocab, d);
  for (int64_t l = 0; l < shape.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    norm(p + "attn_norm.weight", d);
    matrix(p + "attn_q.weight", d, d);
    matrix(p + "attn_k.weight", kv, d);
    matrix(p + "attn_v.weight", kv, d);
    matrix(p + "attn_output.weight", d, d);
    norm(p + "ffn_norm.weight", d);
    matrix(p + "ffn_gate.weight", f, d);
    matrix(p + "ffn_up.weight", f, d);
    matrix(p + "ffn_down.weight", d, f);
  }
  norm("output_norm.weight", d);
  matrix("output.weight", n_vocab, d);
  w.write(out_path);
}

}  // namespace qinfer::tools
