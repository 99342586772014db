// Real GGUF files made by llama.cpp's tools: they load, their tensors are what
// ../shared/models/README.md documents, and the writer reproduces them byte for byte.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "loader/gguf.hpp"
#include "loader/gguf_writer.hpp"
#include "loader/mapped_file.hpp"
#include "qinfer/error.hpp"
#include "tests/test_util.hpp"

namespace qinfer {
namespace {

namespace fs = std::filesystem;

// Vendored files always; every file of ../shared/models and ../shared/vocab when present.
std::vector<std::string> all_gguf_files() {
  std::set<std::string> seen;
  std::vector<std::string> out;
  auto scan = [&](const std::string& dir) {
    if (dir.empty() || !fs::exists(dir)) return;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".gguf") continue;
      if (seen.insert(e.path().filename().string()).second) out.push_back(e.path().string());
    }
  };
  scan(test::data_path("models"));
  scan(test::data_path("vocab"));
  scan(test::shared_path("models"));
  scan(test::shared_path("vocab"));
  std::sort(out.begin(), out.end());
  return out;
}

std::string file_label(const testing::TestParamInfo<std::string>& info) {
  std::string s = fs::path(info.param).stem().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

struct Expected {
  std::vector<int64_t> shape;
};

// The tensor list of the trained models, from ../shared/models/README.md: dim 256, 4 layers,
// 8 heads (4 KV heads for llama, head dim 32), ffn 768 (llama) / 1024 (gpt2), vocab 2048,
// ctx 256, untied output.
std::map<std::string, Expected> expected_tensors(const std::string& arch) {
  std::map<std::string, Expected> t;
  t["token_embd.weight"] = {{256, 2048}};
  t["output.weight"] = {{256, 2048}};
  t["output_norm.weight"] = {{256}};
  for (int i = 0; i < 4; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    if (arch == "llama") {
      t[b + "attn_norm.weight"] = {{256}};
      t[b + "attn_q.weight"] = {{256, 256}};
      t[b + "attn_k.weight"] = {{256, 128}};
      t[b + "attn_v.weight"] = {{256, 128}};
      t[b + "attn_output.weight"] = {{256, 256}};
      t[b + "ffn_norm.weight"] = {{256}};
      t[b + "ffn_gate.weight"] = {{256, 768}};
      t[b + "ffn_up.weight"] = {{256, 768}};
      t[b + "ffn_down.weight"] = {{768, 256}};
    } else {
      for (const char* n : {"attn_norm", "ffn_norm"}) {
        t[b + n + ".weight"] = {{256}};
        t[b + n + ".bias"] = {{256}};
      }
      t[b + "attn_qkv.weight"] = {{256, 768}};
      t[b + "attn_qkv.bias"] = {{768}};
      t[b + "attn_output.weight"] = {{256, 256}};
      t[b + "attn_output.bias"] = {{256}};
      t[b + "ffn_up.weight"] = {{256, 1024}};
      t[b + "ffn_up.bias"] = {{1024}};
      t[b + "ffn_down.weight"] = {{1024, 256}};
      t[b + "ffn_down.bias"] = {{256}};
    }
  }
  if (arch == "gpt2") {
    t["output_norm.bias"] = {{256}};
    t["position_embd.weight"] = {{256, 256}};
  }
  return t;
}

class RealFile : public testing::TestWithParam<std::string> {};

TEST_P(RealFile, LoadsWithDocumentedTensors) {
  const GgufFile f = GgufFile::open(GetParam());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  const std::string stem = fs::path(GetParam()).stem().string();
  if (stem.rfind("wp-", 0) != 0) return;  // only the trained models have a documented layout
  const std::string arch(f.get_string("general.architecture"));
  const auto expected = expected_tensors(arch);
  ASSERT_EQ(f.tensors().size(), expected.size()) << stem;
  // The quant type is in the file name: wp-llama-Q4_K_S -> q4_K (the _S/_M suffix dropped).
  std::string type_part = stem.substr(stem.find('-', 3) + 1);
  if (type_part.size() > 4 && (type_part.ends_with("_S") || type_part.ends_with("_M")) &&
      type_part.find("_K") != std::string::npos) {
    type_part.resize(type_part.size() - 2);
  }
  const auto file_type = type_from_name(type_part);
  ASSERT_TRUE(file_type.has_value()) << type_part;
  for (const TensorInfo& t : f.tensors()) {
    const auto it = expected.find(t.name);
    ASSERT_NE(it, expected.end()) << "unexpected tensor " << t.name;
    ASSERT_EQ(t.n_dims, it->second.shape.size()) << t.name;
    for (uint32_t d = 0; d < t.n_dims; ++d) EXPECT_EQ(t.ne[d], it->second.shape[d]) << t.name;
    if (t.n_dims == 1 || t.name == "position_embd.weight") {
      EXPECT_EQ(t.type, TensorType::F32) << t.name;  // norms and biases stay F32
    } else if (t.name == "token_embd.weight" &&
               (*file_type == TensorType::IQ2_XXS || *file_type == TensorType::IQ2_XS ||
                *file_type == TensorType::IQ2_S || *file_type == TensorType::IQ1_S)) {
      EXPECT_EQ(t.type, TensorType::Q4_K) << t.name;  // the README's documented exception
    } else {
      EXPECT_EQ(t.type, *file_type) << t.name;
    }
  }
}

TEST_P(RealFile, WriterRoundTripIsByteIdentical) {
  const GgufFile f = GgufFile::open(GetParam());
  const auto original = test::read_bytes(GetParam());
  const auto written = GgufWriter::copy_of(f).to_bytes();
  ASSERT_EQ(written.size(), original.size());
  EXPECT_TRUE(written == original);
}

TEST_P(RealFile, HeapBufferMatchesMapping) {
  const GgufFile mapped = GgufFile::open(GetParam());
  const GgufFile read = GgufFile::open(GetParam(), OpenOptions{.use_mmap = false});
  ASSERT_EQ(mapped.tensors().size(), read.tensors().size());
  for (size_t i = 0; i < mapped.tensors().size(); ++i) {
    const TensorInfo& a = mapped.tensors()[i];
    const TensorInfo& b = read.tensors()[i];
    ASSERT_EQ(a.size_bytes, b.size_bytes);
    EXPECT_EQ(std::memcmp(a.data, b.data, a.size_bytes), 0) << a.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % 32, 0u) << "tensor data not aligned";
  }
}

INSTANTIATE_TEST_SUITE_P(Files, RealFile, testing::ValuesIn(all_gguf_files()), file_label);

TEST(Gguf, VocabularyArrayIsLazyAndComplete) {
  const GgufFile f = GgufFile::open(test::data_path("vocab/ggml-vocab-llama-spm.gguf"));
  const ArrayView tokens = f.get_array("tokenizer.ggml.tokens", ValueType::STRING);
  EXPECT_EQ(tokens.size(), 32000u);
  const auto strings = tokens.strings();
  ASSERT_EQ(strings.size(), 32000u);
  EXPECT_EQ(strings[1], "<s>");
  EXPECT_EQ(strings[2], "</s>");
  EXPECT_EQ(f.get_array("tokenizer.ggml.scores", ValueType::F32).size(), 32000u);
}

TEST(Gguf, TypedGettersNameKeyAndTypes) {
  const GgufFile f = GgufFile::open(test::data_path("models/stories260K.gguf"));
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_u32("llama.embedding_length"), 64u);
  try {
    f.get_string("llama.embedding_length");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTypeMismatch);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("llama.embedding_length"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected string"), std::string::npos) << msg;
    EXPECT_NE(msg.find("found u32"), std::string::npos) << msg;
  }
  try {
    f.get_u32("llama.no_such_key");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kMissingKey);
    EXPECT_NE(std::string(e.what()).find("llama.no_such_key"), std::string::npos);
  }
  EXPECT_EQ(f.get_u32_or("llama.no_such_key", 7), 7u);
}

// A model written as 3 shards with llama.cpp's split keys opens as one tensor set, and a
// missing shard is named.
TEST(Gguf, SplitModelOpensAllShards) {
  const GgufFile src = GgufFile::open(test::data_path("models/stories260K.gguf"));
  const auto dir = fs::temp_directory_path() / ("qinfer-split-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string prefix = (dir / "model").string();
  const auto& tensors = src.tensors();
  const int n_shards = 3;
  for (int s = 0; s < n_shards; ++s) {
    GgufWriter w;
    if (s == 0) {
      for (const MetaEntry& e : src.metadata())
        w.add_raw(e.key, e.value.type, e.value.raw, e.value.raw_bytes);
    }
    w.add_u16("split.no", static_cast<uint16_t>(s));
    w.add_u16("split.count", n_shards);
    w.add_i32("split.tensors.count", static_cast<int32_t>(tensors.size()));
    for (size_t i = s; i < tensors.size(); i += n_shards) {
      const TensorInfo& t = tensors[i];
      w.add_tensor(t.name, t.type, {t.ne, t.ne + t.n_dims}, t.data, t.size_bytes);
    }
    w.write(make_split_name(prefix, s + 1, n_shards));
  }
  const GgufFile f = GgufFile::open(make_split_name(prefix, 1, n_shards));
  EXPECT_EQ(f.n_shards(), 3u);
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (const TensorInfo& t : tensors) {
    const TensorInfo* got = f.find_tensor(t.name);
    ASSERT_NE(got, nullptr) << t.name;
    EXPECT_EQ(std::memcmp(got->data, t.data, t.size_bytes), 0) << t.name;
  }
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  fs::remove(make_split_name(prefix, 3, n_shards));
  try {
    GgufFile::open(make_split_name(prefix, 1, n_shards));
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard 3 of 3 is missing"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Gguf, NonDefaultAlignmentRoundTrips) {
  const GgufFile src = GgufFile::open(test::data_path("models/stories260K.gguf"));
  GgufWriter w = GgufWriter::copy_of(src);
  w.set_alignment(256);
  const auto bytes = w.to_bytes();
  const GgufFile f = GgufFile::from_bytes(bytes.data(), bytes.size(), "aligned.gguf");
  EXPECT_EQ(f.alignment(), 256u);
  EXPECT_EQ(f.data_offset() % 256, 0u);
  for (const TensorInfo& t : f.tensors()) {
    EXPECT_EQ(t.offset % 256, 0u);
    const TensorInfo* o = src.find_tensor(t.name);
    EXPECT_EQ(std::memcmp(o->data, t.data, t.size_bytes), 0);
  }
  EXPECT_EQ(GgufWriter::copy_of(f).to_bytes(), bytes);
}

// MappedFile::drop_pages: the whole pages inside the range leave the process, the pages it only
// touches stay, and the bytes read the same afterwards (faulted back in from the file). A heap
// copy and a range outside the mapping are left alone.
TEST(MappedFile, DropPagesReleasesWholePagesAndKeepsTheBytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const fs::path path =
      fs::temp_directory_path() / ("qinfer_drop_pages_" + std::to_string(::getpid()) + ".bin");
  std::vector<uint8_t> want(5 * page);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 7 + i / page);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(want.data()),
              static_cast<std::streamsize>(want.size()));
  }
  const MappedFile m = MappedFile::map(path.string());
  ASSERT_EQ(m.size(), want.size());
  ASSERT_EQ(std::memcmp(m.data(), want.data(), want.size()), 0);  // every page touched
  const int64_t before = test::resident_pages(m.data(), m.size());
  if (before < 0) GTEST_SKIP() << "no /proc/self/pagemap";
  EXPECT_EQ(before, 5);
  m.drop_pages(m.data() + page / 2, 4 * page);  // pages 1-3 whole, 0 and 4 in part
  EXPECT_EQ(test::resident_pages(m.data(), page), 1);
  EXPECT_EQ(test::resident_pages(m.data() + page, 3 * page), 0);
  EXPECT_EQ(test::resident_pages(m.data() + 4 * page, page), 1);
  m.drop_pages(m.data() + 4 * page, 2 * page);  // past the end: ignored
  EXPECT_EQ(test::resident_pages(m.data() + 4 * page, page), 1);
  EXPECT_EQ(std::memcmp(m.data(), want.data(), want.size()), 0);

  const MappedFile heap = MappedFile::read(path.string());
  heap.drop_pages(heap.data(), heap.size());
  EXPECT_EQ(std::memcmp(heap.data(), want.data(), want.size()), 0);
  fs::remove(path);
}

}  // namespace
}  // namespace qinfer

namespace qinfer {
namespace {
TEST(SplitName, ParsesFiveDigitShardNames) {
  const auto s = parse_split_name("dir/model-00002-of-00013.gguf");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->prefix, "dir/model");
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 13);
  EXPECT_EQ(make_split_name(s->prefix, s->index, s->count), "dir/model-00002-of-00013.gguf");
  EXPECT_FALSE(parse_split_name("model.gguf").has_value());
  EXPECT_FALSE(parse_split_name("model-0002-of-00013.gguf").has_value());
  EXPECT_FALSE(parse_split_name("model-00002-of-0001x.gguf").has_value());
  EXPECT_FALSE(parse_split_name("model-00002_of-00013.gguf").has_value());
}
}  // namespace
}  // namespace qinfer
