#include <cstdio>
#include <fstream>
#include <vector>

#include "kernels/kernels.hpp"
#include "loader/gguf.hpp"
#include "tools/tool_common.hpp"

namespace qinfer::tools {

int dequant_tensor(const GgufFile& file, const std::string& name, const std::string& out_path) {
  const TensorInfo* t = file.find_tensor(name);
  if (t == nullptr) throw Error(ErrorCode::kMissingKey, file.path() + ": no tensor '" + name + "'");
  const kernels::KernelTable& k = kernels::active();
  if (k.types[static_cast<uint32_t>(t->type)].dequantize_row == nullptr) {
    throw Error(ErrorCode::kUnsupported,
                "no dequantizer for type " + std::string(type_name(t->type)));
  }
  // Convert everything first: a failure must not leave a partial output file.
  std::vector<float> values(static_cast<size_t>(t->n_elements()));
  const size_t row_bytes = t->row_bytes();
  for (int64_t r = 0; r < t->n_rows(); ++r) {
    kernels::dequantize_row(k, t->type, t->data + r * row_bytes, values.data() + r * t->ne[0],
                            t->ne[0]);
  }
  const auto* bytes = reinterpret_cast<const char*>(values.data());
  const auto n = static_cast<std::streamsize>(values.size() * sizeof(float));
  if (out_path.empty()) {
    std::fwrite(bytes, 1, static_cast<size_t>(n), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  const std::string tmp = out_path + ".tmp";
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(ErrorCode::kIo, tmp + ": cannot create");
  f.write(bytes, n);
  f.close();
  if (!f || std::rename(tmp.c_str(), out_path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kIo, out_path + ": write failed");
  }
  return 0;
}

}  // namespace qinfer::tools
