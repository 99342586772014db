// qinfer-gguf: inspect a GGUF file (info) and dump a tensor as float32 (dequant).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "loader/gguf.hpp"
#include "qinfer/error.hpp"
#include "tools/cli.hpp"
#include "tools/tool_common.hpp"

namespace qinfer {
namespace {

using json = nlohmann::ordered_json;
constexpr uint64_t kFullArrayMax = 16;  // arrays up to this length are printed in full
constexpr uint64_t kTextArrayPreview = 5;

json scalar_json(ValueType t, const uint8_t* p) {
  Value v;
  v.type = t;
  v.raw = p;
  switch (t) {
    case ValueType::F32:
    case ValueType::F64:
      return v.as_double();
    case ValueType::BOOL:
      return v.as_bool();
    case ValueType::U64:
      return v.as_uint();
    case ValueType::STRING:
      return std::string(v.as_string());
    default:
      return v.as_int();
  }
}

json array_elements(const ArrayView& a, uint64_t limit) {
  json out = json::array();
  if (a.elem_type() == ValueType::STRING) {
    const auto strings = a.strings();
    for (uint64_t i = 0; i < std::min<uint64_t>(limit, strings.size()); ++i) {
      out.push_back(std::string(strings[i]));
    }
    return out;
  }
  const size_t es = value_type_size(a.elem_type());
  for (uint64_t i = 0; i < std::min(limit, a.size()); ++i) {
    out.push_back(scalar_json(a.elem_type(), a.data() + i * es));
  }
  return out;
}

json value_json(const Value& v) {
  if (v.type != ValueType::ARRAY) return scalar_json(v.type, v.raw);
  if (v.array.size() <= kFullArrayMax) return array_elements(v.array, kFullArrayMax);
  return json{{"type", std::string(value_type_name(v.array.elem_type()))},
              {"length", v.array.size()}};
}

json shape_json(const TensorInfo& t) {
  json s = json::array();
  for (uint32_t d = 0; d < t.n_dims; ++d) s.push_back(t.ne[d]);
  return s;
}

void print_info_json(const GgufFile& f) {
  json j;
  j["version"] = f.version();
  j["alignment"] = f.alignment();
  j["tensor_count"] = f.tensors().size();
  j["metadata_count"] = f.metadata().size();
  j["metadata"] = json::object();
  for (const MetaEntry& e : f.metadata()) j["metadata"][e.key] = value_json(e.value);
  j["tensors"] = json::array();
  for (const TensorInfo& t : f.tensors()) {
    j["tensors"].push_back({{"name", t.name},
                            {"type", std::string(type_name(t.type))},
                            {"shape", shape_json(t)},
                            {"offset", t.offset},
                            {"size_bytes", t.size_bytes}});
  }
  std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

std::string value_text(const Value& v) {
  if (v.type != ValueType::ARRAY)
    return value_json(v).dump(-1, ' ', false, json::error_handler_t::replace);
  json head = array_elements(v.array, kTextArrayPreview);
  std::string s = head.dump(-1, ' ', false, json::error_handler_t::replace);
  if (v.array.size() > kTextArrayPreview) s.insert(s.size() - 1, ", ...");
  return s;
}

void print_info_text(const GgufFile& f) {
  std::printf("file:      %s\n", f.path().c_str());
  std::printf("version:   %u\n", f.version());
  std::printf("alignment: %llu\n", static_cast<unsigned long long>(f.alignment()));
  std::printf("shards:    %zu\n", f.n_shards());
  std::printf("metadata:  %zu keys\n", f.metadata().size());
  for (const MetaEntry& e : f.metadata()) {
    std::string type(value_type_name(e.value.type));
    if (e.value.type == ValueType::ARRAY) {
      type = "array<" + std::string(value_type_name(e.value.array.elem_type())) + ">[" +
             std::to_string(e.value.array.size()) + "]";
    }
    std::printf("  %-40s %-22s %s\n", e.key.c_str(), type.c_str(), value_text(e.value).c_str());
  }
  std::printf("tensors:   %zu\n", f.tensors().size());
  for (const TensorInfo& t : f.tensors()) {
    std::printf("  %-32s %-8s %-22s offset %-10llu size %llu\n", t.name.c_str(),
                std::string(type_name(t.type)).c_str(), shape_json(t).dump().c_str(),
                static_cast<unsigned long long>(t.offset),
                static_cast<unsigned long long>(t.size_bytes));
  }
}

}  // namespace
}  // namespace qinfer

int main(int argc, char** argv) {
  using namespace qinfer;
  CLI::App app{"qinfer-gguf: inspect GGUF files"};
  app.require_subcommand(1);

  std::string info_path;
  bool info_json = false;
  CLI::App* info = app.add_subcommand("info", "version, alignment, metadata and tensors");
  info->add_option("FILE", info_path, "GGUF file")->required();
  info->add_flag("--json", info_json, "one JSON object on stdout");

  std::string dq_path, dq_tensor, dq_out;
  CLI::App* dequant = app.add_subcommand("dequant", "a tensor as raw little-endian float32");
  dequant->add_option("FILE", dq_path, "GGUF file")->required();
  dequant->add_option("TENSOR", dq_tensor, "tensor name")->required();
  dequant->add_option("-o,--output", dq_out, "output file (default: stdout)");

  tools::parse_command_line(app, argc, argv);
  return tools::run_guarded([&] {
    if (info->parsed()) {
      const GgufFile f = GgufFile::open(info_path);
      if (info_json) {
        print_info_json(f);
      } else {
        print_info_text(f);
      }
      return 0;
    }
    const GgufFile f = GgufFile::open(dq_path);
    return tools::dequant_tensor(f, dq_tensor, dq_out);
  });
}
