// qinfer-quantize: llama-quantize's interface and bytes: every weight matrix in the type's
// recipe (llama.cpp's per-tensor choices) or, with --pure, in one type, by the same
// (ggml-exact) quantizers, with an importance matrix where given. See docs/quantize.md.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "kernels/kernels.hpp"
#include "loader/gguf_writer.hpp"
#include "models/model.hpp"
#include "tools/cli.hpp"
#include "tools/synthetic.hpp"
#include "tools/tool_common.hpp"

namespace {

using namespace qinfer;

// llama.cpp's file types (general.file_type) by the names llama-quantize takes, and the type
// of their tensors.
struct FileType {
  const char* name;
  uint32_t ftype;
  TensorType type;  // the default type of its recipe, and every tensor's with --pure
};

constexpr FileType kFileTypes[] = {
    {"F32", 0, TensorType::F32},        {"F16", 1, TensorType::F16},
    {"BF16", 32, TensorType::BF16},     {"Q4_0", 2, TensorType::Q4_0},
    {"Q4_1", 3, TensorType::Q4_1},      {"Q5_0", 8, TensorType::Q5_0},
    {"Q5_1", 9, TensorType::Q5_1},      {"Q8_0", 7, TensorType::Q8_0},
    {"Q2_K", 10, TensorType::Q2_K},     {"Q2_K_S", 21, TensorType::Q2_K},
    {"Q3_K_S", 11, TensorType::Q3_K},   {"Q3_K_M", 12, TensorType::Q3_K},
    {"Q3_K", 12, TensorType::Q3_K},     {"Q3_K_L", 13, TensorType::Q3_K},
    {"Q4_K_S", 14, TensorType::Q4_K},   {"Q4_K_M", 15, TensorType::Q4_K},
    {"Q4_K", 15, TensorType::Q4_K},     {"Q5_K_S", 16, TensorType::Q5_K},
    {"Q5_K_M", 17, TensorType::Q5_K},   {"Q5_K", 17, TensorType::Q5_K},
    {"Q6_K", 18, TensorType::Q6_K},     {"IQ2_XXS", 19, TensorType::IQ2_XXS},
    {"IQ2_XS", 20, TensorType::IQ2_XS}, {"IQ2_S", 28, TensorType::IQ2_XS},
    {"IQ2_M", 29, TensorType::IQ2_S},   {"IQ3_XXS", 23, TensorType::IQ3_XXS},
    {"IQ3_XS", 22, TensorType::IQ3_S},  {"IQ3_S", 26, TensorType::IQ3_S},
    {"IQ3_M", 27, TensorType::IQ3_S},   {"IQ1_S", 24, TensorType::IQ1_S},
    {"IQ1_M", 31, TensorType::IQ1_M},   {"IQ4_NL", 25, TensorType::IQ4_NL},
    {"IQ4_XS", 30, TensorType::IQ4_XS}, {"TQ1_0", 36, TensorType::TQ1_0},
    {"TQ2_0", 37, TensorType::TQ2_0},
};

const FileType* find_file_type(std::string name) {
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const FileType& f : kFileTypes)
    if (name == f.name) return &f;
  return nullptr;
}

// llama-imatrix's legacy file: per tensor the sum of squared activations of each input column
// and the number of calls; llama-quantize uses their mean. Then the chunk count and dataset.
struct Imatrix {
  std::map<std::string, std::vector<float>> means;
  int32_t chunks = -1;
  std::string dataset;
};

Imatrix read_imatrix(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kIo, path + ": cannot open the importance matrix");
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidFile, path + ": not an importance matrix (" + why + ")");
  };
  auto read_i32 = [&](const char* what) {
    int32_t v = 0;
    if (!f.read(reinterpret_cast<char*>(&v), sizeof v)) throw bad(std::string("no ") + what);
    return v;
  };
  auto read_string = [&](int32_t len, const char* what) {
    if (len < 0 || len > (1 << 20))
      throw bad(std::string("a ") + what + " of length " + std::to_string(len));
    std::string s(static_cast<size_t>(len), '\0');
    if (!f.read(s.data(), len)) throw bad(std::string("a truncated ") + what);
    return s;
  };
  Imatrix m;
  const int32_t n = read_i32("entry count");
  if (n <= 0 || n > (1 << 20)) throw bad(std::to_string(n) + " entries");
  for (int32_t i = 0; i < n; ++i) {
    std::string name = read_string(read_i32("name length"), "name");
    const int32_t ncall = read_i32("call count");
    const int32_t nval = read_i32("value count");
    if (nval <= 0 || nval > (1 << 26)) throw bad(name + " has " + std::to_string(nval) + " values");
    std::vector<float> v(static_cast<size_t>(nval));
    if (!f.read(reinterpret_cast<char*>(v.data()),
                static_cast<std::streamsize>(nval * sizeof(float))))
      throw bad("truncated values of " + name);
    if (ncall > 0)
      for (float& x : v) x /= static_cast<float>(ncall);
    m.means[name] = std::move(v);
  }
  int32_t chunks = 0;
  if (f.read(reinterpret_cast<char*>(&chunks), sizeof chunks)) {
    m.chunks = chunks;
    int32_t len = 0;
    if (f.read(reinterpret_cast<char*>(&len), sizeof len))
      m.dataset = read_string(len, "dataset name");
  }
  return m;
}

// llama.cpp's choice when rows do not split into the type's blocks: a 32-element type for the
// 256-element ones, then F16 if that does not split either; nullopt (refused) for the others.
std::optional<TensorType> fallback_type(TensorType t, int64_t n_cols) {
  TensorType fb;
  switch (t) {
    case TensorType::TQ1_0:
    case TensorType::TQ2_0:
      fb = TensorType::Q4_0;
      break;
    case TensorType::Q4_K:
      fb = TensorType::Q5_0;
      break;
    case TensorType::Q5_K:
      fb = TensorType::Q5_1;
      break;
    case TensorType::Q6_K:
      fb = TensorType::Q8_0;
      break;
    case TensorType::IQ2_XXS:
    case TensorType::IQ2_XS:
    case TensorType::IQ2_S:
    case TensorType::IQ3_XXS:
    case TensorType::IQ3_S:
    case TensorType::IQ1_S:
    case TensorType::IQ1_M:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::IQ4_XS:
      fb = TensorType::IQ4_NL;
      break;
    default:
      return std::nullopt;
  }
  return n_cols % type_traits(fb).block_size == 0 ? fb : TensorType::F16;
}

// llama.cpp's file types by number, for the recipe's rules.
enum Ftype : uint32_t {
  kQ4_0 = 2,
  kQ5_0 = 8,
  kQ2_K = 10,
  kQ3_K_S = 11,
  kQ3_K_M = 12,
  kQ3_K_L = 13,
  kQ4_K_S = 14,
  kQ4_K_M = 15,
  kQ5_K_S = 16,
  kQ5_K_M = 17,
  kIQ2_XXS = 19,
  kIQ2_XS = 20,
  kQ2_K_S = 21,
  kIQ3_XS = 22,
  kIQ3_XXS = 23,
  kIQ1_S = 24,
  kIQ4_NL = 25,
  kIQ3_S = 26,
  kIQ3_M = 27,
  kIQ2_S = 28,
  kIQ2_M = 29,
  kIQ4_XS = 30,
  kIQ1_M = 31,
  kTQ1_0 = 36,
  kTQ2_0 = 37,
};

// The state of a recipe over one model: what it counts before and while it walks the tensors
// (in llama.cpp's order, layer by layer).
struct Recipe {
  uint32_t ftype = 0;
  bool has_imatrix = false, has_output = false;
  int64_t n_layer = 0, n_gqa = 1, n_expert = 0;
  bool is_70b = false;
  int n_attention_wv = 0, i_attention_wv = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
};

bool any_of(uint32_t f, std::initializer_list<uint32_t> set) {
  return std::find(set.begin(), set.end(), f) != set.end();
}

// llama.cpp's per-tensor choice for a mixture (llama_tensor_get_type, c392e50): more bits
// where quantization hurts most (output, attn_v, the first and last ffn_down ...). `t` is the
// file type's default tensor type. Counters advance as llama.cpp's do.
TensorType recipe_type(Recipe& q, const std::string& name, TensorType t, int64_t n_cols) {
  using T = TensorType;
  const uint32_t f = q.ftype;
  auto use_more_bits = [](int64_t i, int64_t n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
  };
  auto layer_of = [&](int counter) -> int64_t {
    if (q.n_expert > 1) {  // experts' tensors are not consecutive: read the layer in the name
      int layer = 0;
      if (std::sscanf(name.c_str(), "blk.%d.", &layer) == 1) return layer;
    }
    return counter;
  };
  const bool low_iq = any_of(f, {kIQ2_XXS, kIQ2_XS, kIQ1_S, kIQ2_S, kIQ2_M, kIQ1_M});
  if (name == "output.weight" || (!q.has_output && name == "token_embd.weight")) {
    if (n_cols % type_traits(t).block_size != 0) {
      t = T::Q8_0;
    } else if (any_of(f, {kIQ2_XXS, kIQ2_XS, kIQ3_XXS, kIQ1_S, kIQ2_S, kIQ2_M, kIQ1_M})) {
      t = T::Q5_K;
    } else if (t != T::Q8_0) {
      t = T::Q6_K;
    }
  } else if (name == "token_embd.weight") {
    if (any_of(f, {kIQ2_XXS, kIQ2_XS, kIQ1_S, kIQ1_M}))
      t = T::Q2_K;
    else if (any_of(f, {kIQ2_S, kIQ2_M, kIQ3_XXS}))
      t = T::IQ3_S;
    else if (any_of(f, {kTQ1_0, kTQ2_0}))
      t = T::Q4_K;
  } else if (low_iq) {
    const bool s_or_m = f == kIQ2_S || f == kIQ2_M;
    if (name.find("attn_v.weight") != std::string::npos) {
      t = q.n_gqa >= 4 || q.n_expert >= 4 ? T::Q4_K : s_or_m ? T::IQ3_S : T::Q2_K;
      ++q.i_attention_wv;
    } else if (q.n_expert == 8 && name.find("attn_k.weight") != std::string::npos) {
      t = T::Q4_K;
    } else if (name.find("ffn_down") != std::string::npos) {
      if (q.i_ffn_down < q.n_layer / 8) t = s_or_m ? T::IQ3_S : T::Q2_K;
      ++q.i_ffn_down;
    } else if (name.find("attn_output.weight") != std::string::npos) {
      if (q.n_expert == 8)
        t = T::Q5_K;
      else if (f == kIQ1_S || f == kIQ1_M)
        t = T::IQ2_XXS;
      else if (s_or_m)
        t = T::IQ3_S;
    }
  } else if (name.find("attn_v.weight") != std::string::npos) {
    if (f == kQ2_K)
      t = q.n_gqa >= 4 ? T::Q4_K : T::Q3_K;
    else if (f == kQ2_K_S && q.n_gqa >= 4)
      t = T::Q4_K;
    else if (f == kIQ3_XXS)
      t = q.n_gqa >= 4 ? T::Q4_K : !q.has_imatrix ? T::IQ3_S : T::IQ3_XXS;
    else if ((f == kIQ3_XS || f == kIQ3_S) && q.n_gqa >= 4)
      t = T::Q4_K;
    else if (f == kIQ3_M)
      t = T::Q4_K;
    else if (f == kQ3_K_M)
      t = q.i_attention_wv < 2 ? T::Q5_K : T::Q4_K;
    else if (f == kQ3_K_L)
      t = T::Q5_K;
    else if ((f == kIQ4_NL || f == kIQ4_XS) && q.n_gqa >= 4)
      t = T::Q5_K;
    else if ((f == kQ4_K_M || f == kQ5_K_M) && use_more_bits(q.i_attention_wv, q.n_attention_wv))
      t = T::Q6_K;
    else if (f == kQ4_K_S && q.i_attention_wv < 4)
      t = T::Q5_K;
    if (q.is_70b && (t == T::Q3_K || t == T::Q4_K)) t = T::Q5_K;
    if (q.n_expert == 8) t = T::Q8_0;
    ++q.i_attention_wv;
  } else if (name.find("attn_k.weight") != std::string::npos) {
    if (q.n_expert == 8)
      t = T::Q8_0;
    else if (f == kIQ3_XS)
      t = T::IQ3_XXS;
    else if (f == kIQ3_XXS)
      t = T::IQ2_S;
  } else if (name.find("attn_q.weight") != std::string::npos) {
    if (f == kIQ3_XS)
      t = T::IQ3_XXS;
    else if (f == kIQ3_XXS)
      t = T::IQ2_S;
  } else if (name.find("ffn_down") != std::string::npos) {
    const int64_t i = layer_of(q.i_ffn_down), n = q.n_layer;
    if (f == kQ2_K)
      t = T::Q3_K;
    else if (f == kQ2_K_S) {
      if (i < n / 8) t = T::Q4_K;
    } else if (f == kIQ3_XXS && !q.has_imatrix)
      t = i < n / 8 ? T::Q4_K : T::Q3_K;
    else if (f == kQ3_K_M)
      t = i < n / 16 ? T::Q5_K : T::Q4_K;  // (Falcon's Q3_K branch: not an architecture here)
    else if (f == kIQ3_M && (i < n / 8 || (q.n_expert == 8 && use_more_bits(i, n))))
      t = T::Q4_K;
    else if (f == kQ3_K_L)
      t = T::Q5_K;
    else if (f == kQ4_K_M) {
      if (use_more_bits(i, n)) t = T::Q6_K;
    } else if (i < n / 8 && (f == kIQ4_NL || f == kIQ4_XS) && !q.has_imatrix)
      t = T::Q5_K;
    else if (f == kQ5_K_M && use_more_bits(i, n))
      t = T::Q6_K;
    else if (f == kQ4_K_S && i < n / 8)
      t = T::Q5_K;
    else if ((f == kQ4_0 || f == kQ5_0) && q.has_imatrix && i < n / 8)
      t = f == kQ4_0 ? T::Q4_1 : T::Q5_1;
    ++q.i_ffn_down;
  } else if (name.find("attn_output.weight") != std::string::npos) {
    if (q.n_expert == 8) {
      if (any_of(f, {kQ2_K, kIQ3_XS, kIQ3_XXS, kQ3_K_S, kQ3_K_M, kIQ4_NL, kQ4_K_S, kQ4_K_M, kIQ3_S,
                     kIQ3_M, kIQ4_XS}))
        t = T::Q5_K;
    } else if (f == kQ2_K)
      t = T::Q3_K;
    else if (f == kIQ3_XXS)
      t = T::IQ3_S;
    else if (f == kQ3_K_M || f == kIQ3_M)
      t = T::Q4_K;
    else if (f == kQ3_K_L)
      t = T::Q5_K;
  } else if (name.find("attn_qkv.weight") != std::string::npos) {
    if (f == kQ3_K_M || f == kQ3_K_L || f == kIQ3_M)
      t = T::Q4_K;
    else if (f == kQ4_K_M)
      t = T::Q5_K;
    else if (f == kQ5_K_M)
      t = T::Q6_K;
  } else if (name.find("ffn_gate") != std::string::npos) {
    const int64_t i = layer_of(q.i_ffn_gate);
    if (f == kIQ3_XS && i >= q.n_layer / 8 && i < 7 * q.n_layer / 8) t = T::IQ3_XXS;
    ++q.i_ffn_gate;
  } else if (name.find("ffn_up") != std::string::npos) {
    const int64_t i = layer_of(q.i_ffn_up);
    if (f == kIQ3_XS && i >= q.n_layer / 8 && i < 7 * q.n_layer / 8) t = T::IQ3_XXS;
    ++q.i_ffn_up;
  }
  return t;
}

// llama.cpp's tensor order: the tensors outside the blocks by name, then block by block
// (numerically), by name within a block.
bool llama_order(const TensorInfo* a, const TensorInfo* b) {
  auto layer = [](const std::string& n) {
    int l = -1;
    return std::sscanf(n.c_str(), "blk.%d.", &l) == 1 ? l : -1;
  };
  const int la = layer(a->name), lb = layer(b->name);
  return la != lb ? la < lb : a->name < b->name;
}

bool is_float(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

// Quantizes every row of `t` to `target` into `dst`, on all threads: ggml's weighted
// quantizer with the tensor's importance weights (one slice per matrix of a 3-D expert tensor)
// when it has one, else the reference quantizer.
void quantize_tensor(const kernels::KernelTable& k, const TensorInfo& t, TensorType target,
                     kernels::QuantizeImatrixFn weighted, kernels::QuantizeRowFn plain,
                     const std::vector<float>* weights, uint8_t* dst) {
  const int64_t n_cols = t.ne[0], n_rows = t.n_rows(), rows_per_matrix = t.ne[1];
  const size_t out_row = row_size_bytes(target, n_cols);
  std::string failure;
#pragma omp parallel
  {
    std::vector<float> row(static_cast<size_t>(n_cols));
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < n_rows; ++r) {
      try {
        kernels::dequantize_row(k, t.type, t.data + static_cast<size_t>(r) * t.row_bytes(),
                                row.data(), n_cols);
        const float* qw = weights ? weights->data() + (r / rows_per_matrix) * n_cols : nullptr;
        uint8_t* out = dst + static_cast<size_t>(r) * out_row;
        if (weighted != nullptr)
          weighted(row.data(), out, n_cols, qw);
        else
          plain(row.data(), out, n_cols);
      } catch (const std::exception& e) {
#pragma omp critical
        failure = e.what();
      }
    }
  }
  if (!failure.empty()) throw Error(ErrorCode::kInvalidArgument, t.name + ": " + failure);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qinfer-quantize: re-encode a GGUF model's weights (llama-quantize's interface)"};
  std::string imatrix_path, output_type, embd_type, synthetic, vocab_path;
  std::vector<std::string> args;
  uint64_t seed = 0;
  bool pure = false, allow_requantize = false, leave_output = false;
  app.add_option("args", args,
                 "INPUT OUTPUT TYPE [THREADS]; with --synthetic: OUTPUT [TYPE] (default F16).\n"
                 "TYPE: Q4_0, Q8_0, Q4_K_S, Q4_K_M, IQ4_XS, F16 ... (a recipe or one type)")
      ->required()
      ->expected(1, 4);
  app.add_flag("--pure", pure, "every 2-D weight in TYPE (no per-tensor recipe)");
  app.add_option("--imatrix", imatrix_path, "importance matrix (llama-imatrix's .dat format)")
      ->check(CLI::ExistingFile);
  app.add_flag("--allow-requantize", allow_requantize, "accept already quantized weights");
  app.add_flag("--leave-output-tensor", leave_output, "keep output.weight as it is");
  app.add_option("--output-tensor-type", output_type, "type of output.weight");
  app.add_option("--token-embedding-type", embd_type, "type of token_embd.weight");
  std::string shape_names;
  for (const tools::SyntheticShape& sh : tools::synthetic_shapes())
    shape_names += std::string(shape_names.empty() ? "" : ", ") + sh.name;
  app.add_option("--synthetic", synthetic,
                 "write a random-weight llama of this shape instead (" + shape_names + ")");
  app.add_option("--vocab", vocab_path, "with --synthetic: the GGUF whose tokenizer is copied")
      ->check(CLI::ExistingFile);
  app.add_option("--seed", seed, "with --synthetic: the random seed (default 0)");
  tools::parse_command_line(app, argc, argv);

  return tools::run_guarded([&] {
    auto usage = [](const std::string& why) { return Error(ErrorCode::kInvalidArgument, why); };
    std::string in_path, out_path, type_name_arg = "F16";
    int n_threads = 0;
    // A synthetic model is written first; a quantized TYPE then quantizes it from a temporary
    // file, removed at the end whatever happens.
    struct TempFile {
      std::string path;
      ~TempFile() {
        if (!path.empty()) std::remove(path.c_str());
      }
    } synthetic_f16;
    if (!synthetic.empty()) {
      const tools::SyntheticShape* shape = tools::find_synthetic_shape(synthetic);
      if (shape == nullptr)
        throw usage("unknown shape '" + synthetic + "' for --synthetic (" + shape_names + ")");
      if (vocab_path.empty())
        throw usage("--synthetic needs --vocab FILE (a GGUF with a tokenizer)");
      if (args.size() > 2) throw usage("--synthetic takes OUTPUT [TYPE]");
      out_path = args[0];
      if (args.size() == 2) type_name_arg = args[1];
      const FileType* ft = find_file_type(type_name_arg);
      if (ft == nullptr) throw usage("unknown type '" + type_name_arg + "'");
      if (is_float(ft->type)) {
        tools::write_synthetic_model(*shape, vocab_path, seed, ft->type, out_path);
        return 0;
      }
      synthetic_f16.path = out_path + ".f16.tmp";
      tools::write_synthetic_model(*shape, vocab_path, seed, TensorType::F16, synthetic_f16.path);
      in_path = synthetic_f16.path;
    } else {
      if (args.size() < 3) throw usage("expected INPUT OUTPUT TYPE [THREADS] (see --help)");
      in_path = args[0];
      out_path = args[1];
      type_name_arg = args[2];
      if (!std::filesystem::exists(in_path)) throw usage(in_path + ": no such file");
      if (args.size() == 4) {
        try {
          n_threads = std::stoi(args[3]);
        } catch (const std::exception&) {
          n_threads = 0;
        }
        if (n_threads < 1 || n_threads > 1024) throw usage("THREADS must be 1..1024");
      }
    }
    const FileType* ft = find_file_type(type_name_arg);
    if (ft == nullptr) {
      std::string names;
      for (const FileType& f : kFileTypes) names += std::string(names.empty() ? "" : ", ") + f.name;
      throw Error(ErrorCode::kInvalidArgument,
                  "unknown type '" + type_name_arg + "' (" + names + ")");
    }
    auto tensor_type_option = [](const std::string& s) -> std::optional<TensorType> {
      if (s.empty()) return std::nullopt;
      const auto t = type_from_name(s);
      if (!t) throw Error(ErrorCode::kInvalidArgument, "unknown tensor type '" + s + "'");
      return t;
    };
    const auto output_t = tensor_type_option(output_type);
    const auto embd_t = tensor_type_option(embd_type);
    const GgufFile in = GgufFile::open(in_path);
    Imatrix imatrix;
    if (!imatrix_path.empty()) imatrix = read_imatrix(imatrix_path);
#if defined(_OPENMP)
    if (n_threads > 0) omp_set_num_threads(n_threads);
#endif

    GgufWriter out(in.version());
    for (const MetaEntry& e : in.metadata()) {
      if (e.key == "general.file_type") continue;  // set again below, after the version
      out.add_raw(e.key, e.value.type, e.value.raw, e.value.raw_bytes);
    }
    // The alignment is kept (its key, when present, stays where it was).
    if (in.has("general.alignment")) out.set_alignment(static_cast<uint32_t>(in.alignment()));
    out.add_u32("general.quantization_version", 2);
    out.add_u32("general.file_type", ft->ftype);
    if (!imatrix_path.empty()) {
      out.add_string("quantize.imatrix.file", imatrix_path);
      if (!imatrix.dataset.empty()) out.add_string("quantize.imatrix.dataset", imatrix.dataset);
      out.add_i32("quantize.imatrix.entries_count", static_cast<int32_t>(imatrix.means.size()));
      if (imatrix.chunks >= 0) out.add_i32("quantize.imatrix.chunks_count", imatrix.chunks);
    }

    const kernels::KernelTable& k = kernels::active();
    std::vector<const TensorInfo*> tensors;
    for (const TensorInfo& t : in.tensors()) tensors.push_back(&t);
    std::stable_sort(tensors.begin(), tensors.end(), llama_order);
    // Without --pure, a quantized type means llama.cpp's recipe for it (llama_tensor_get_type).
    const bool use_recipe = !pure && type_traits(ft->type).quantized;
    Recipe recipe;
    if (use_recipe) {
      const ModelConfig c = ModelConfig::from_gguf(in);
      recipe.ftype = ft->ftype;
      recipe.has_imatrix = !imatrix_path.empty();
      recipe.n_layer = c.n_layer;
      recipe.n_gqa = c.n_head_kv > 0 ? c.n_head / c.n_head_kv : 1;
      recipe.n_expert = c.n_expert;
      recipe.is_70b = c.arch_name == "llama" && c.n_layer == 80;
      for (const TensorInfo* t : tensors) {
        const std::string& n = t->name;
        if (n.find("attn_v.weight") != std::string::npos ||
            n.find("attn_qkv.weight") != std::string::npos ||
            n.find("attn_kv_b.weight") != std::string::npos)
          ++recipe.n_attention_wv;
        if (n == "output.weight") recipe.has_output = true;
      }
    }
    double bytes_in = 0, bytes_out = 0;
    for (size_t ti = 0; ti < tensors.size(); ++ti) {
      const TensorInfo& t = *tensors[ti];
      const std::string& name = t.name;
      bool quantize = name.ends_with("weight") && t.n_dims >= 2 && name != "position_embd.weight" &&
                      name != "token_types.weight" &&
                      name.find("ffn_gate_inp.weight") == std::string::npos;
      if (leave_output && name == "output.weight") quantize = false;
      TensorType target = ft->type;
      if (quantize && use_recipe) target = recipe_type(recipe, name, target, t.ne[0]);
      const std::vector<float>* weights = nullptr;
      if (auto it = imatrix.means.find(name); it != imatrix.means.end()) {
        if (static_cast<int64_t>(it->second.size()) != t.ne[0] * t.ne[2])
          throw Error(ErrorCode::kInvalidFile,
                      imatrix_path + ": " + name + " has " + std::to_string(it->second.size()) +
                          " values, the tensor " + std::to_string(t.ne[0] * t.ne[2]) + " columns");
        weights = &it->second;
      }
      if (quantize && t.ne[0] % type_traits(target).block_size != 0) {
        const auto fb = fallback_type(target, t.ne[0]);
        const std::string why = name + ": rows of " + std::to_string(t.ne[0]) +
                                " do not split into " + std::string(type_name(target)) + " blocks";
        if (!fb) throw Error(ErrorCode::kUnsupported, why);
        std::fprintf(stderr, "%s: using %s\n", why.c_str(), std::string(type_name(*fb)).c_str());
        target = *fb;
      }
      if (output_t && name == "output.weight") target = *output_t;
      if (embd_t && name == "token_embd.weight") target = *embd_t;
      if (quantize && target == t.type) quantize = false;
      // Every check is made here, before anything is written; the data is made (copied or
      // quantized) while the file is written, one tensor at a time, with its progress line.
      const std::string progress = [&] {
        char line[96];
        std::snprintf(line, sizeof line, "[%4zu/%4zu] %-36s %-8s", ti + 1, tensors.size(),
                      name.c_str(), std::string(type_name(t.type)).c_str());
        return std::string(line);
      }();
      bytes_in += static_cast<double>(t.size_bytes);
      if (!quantize) {
        out.add_tensor_generated(name, t.type, {t.ne, t.ne + t.n_dims}, t.size_bytes,
                                 [&t, progress](uint8_t* dst) {
                                   std::memcpy(dst, t.data, t.size_bytes);
                                   std::fprintf(stderr, "%s kept, %.2f MiB\n", progress.c_str(),
                                                static_cast<double>(t.size_bytes) / (1 << 20));
                                 });
        bytes_out += static_cast<double>(t.size_bytes);
        continue;
      }
      if (!is_float(t.type) && !allow_requantize)
        throw Error(ErrorCode::kUnsupported,
                    name + " is already " + std::string(type_name(t.type)) +
                        ": requantizing loses quality (--allow-requantize)");
      const kernels::QuantizeImatrixFn weighted = kernels::imatrix_quantizer(target);
      const kernels::QuantizeRowFn plain = kernels::reference_quantizer(target);
      if (weighted == nullptr && plain == nullptr)
        throw Error(ErrorCode::kUnsupported, "no quantizer for " + std::string(type_name(target)));
      // The very low-bit types need importance data, as llama-quantize requires.
      const bool embd_or_output = name == "token_embd.weight" || name == "output.weight";
      const bool needs_imatrix =
          target == TensorType::IQ1_S || target == TensorType::IQ2_XXS ||
          target == TensorType::IQ2_XS || target == TensorType::IQ2_S ||
          (target == TensorType::IQ1_M && !embd_or_output) ||
          (target == TensorType::Q2_K && ft->ftype == kQ2_K_S && name != "token_embd.weight");
      if (needs_imatrix && weights == nullptr)
        throw Error(ErrorCode::kUnsupported,
                    name + ": " + std::string(type_name(target)) +
                        " needs an importance matrix entry for this tensor (--imatrix; or "
                        "choose its type with --token-embedding-type / --output-tensor-type)");
      const size_t out_bytes = row_size_bytes(target, t.ne[0]) * static_cast<size_t>(t.n_rows());
      bytes_out += static_cast<double>(out_bytes);
      out.add_tensor_generated(name, target, {t.ne, t.ne + t.n_dims}, out_bytes,
                               [&t, &k, target, weighted, plain, weights, progress](uint8_t* dst) {
                                 quantize_tensor(k, t, target, weighted, plain, weights, dst);
                                 std::fprintf(stderr, "%s -> %-8s %.2f MiB -> %.2f MiB%s\n",
                                              progress.c_str(),
                                              std::string(type_name(target)).c_str(),
                                              static_cast<double>(t.size_bytes) / (1 << 20),
                                              static_cast<double>(row_size_bytes(target, t.ne[0]) *
                                                                  static_cast<size_t>(t.n_rows())) /
                                                  (1 << 20),
                                              weights ? " (imatrix)" : "");
                               });
    }
    out.write(out_path);
    std::fprintf(stderr, "model size %.2f MiB -> %.2f MiB (%s)\n", bytes_in / (1 << 20),
                 bytes_out / (1 << 20), ft->name);
    return 0;
  });
}
