// Malformed GGUF files, built here from a valid one: every case must fail with a typed error
// whose message names the file, the byte offset and the problem — never crash (this suite
// also runs under the asan preset).
#include <gtest/gtest.h>

#include "loader/gguf.hpp"
#include "loader/gguf_writer.hpp"
#include "qinfer/error.hpp"
#include "tests/test_util.hpp"

namespace qinfer {
namespace {

// A hand-assembled GGUF image where every field can be set to anything.
struct RawTensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type;
  uint64_t offset;
};
struct RawKv {
  std::string key;
  uint32_t type;
  std::vector<uint8_t> value;
};
struct RawFile {
  uint32_t version = 3;
  std::optional<uint64_t> n_tensors, n_kv;
  std::vector<RawKv> kvs;
  std::vector<RawTensor> tensors;
  uint64_t alignment = 32;
  uint64_t data_bytes = 0;

  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out;
    auto put = [&](const void* p, size_t n) {
      out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    };
    auto u32 = [&](uint32_t v) { put(&v, 4); };
    auto u64 = [&](uint64_t v) { put(&v, 8); };
    auto str = [&](const std::string& s) {
      u64(s.size());
      put(s.data(), s.size());
    };
    put("GGUF", 4);
    u32(version);
    u64(n_tensors.value_or(tensors.size()));
    u64(n_kv.value_or(kvs.size()));
    for (const RawKv& kv : kvs) {
      str(kv.key);
      u32(kv.type);
      put(kv.value.data(), kv.value.size());
    }
    for (const RawTensor& t : tensors) {
      str(t.name);
      u32(static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne) u64(d);
      u32(t.type);
      u64(t.offset);
    }
    out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
    out.resize(out.size() + data_bytes, 0);
    return out;
  }
};

template <typename T>
std::vector<uint8_t> le(T v) {
  std::vector<uint8_t> b(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}
std::vector<uint8_t> gguf_string(const std::string& s) {
  auto b = le<uint64_t>(s.size());
  b.insert(b.end(), s.begin(), s.end());
  return b;
}

// A valid file: three kinds of metadata and two F32 tensors of 64 floats each.
RawFile valid_file() {
  RawFile f;
  f.kvs.push_back({"general.architecture", 8, gguf_string("llama")});
  f.kvs.push_back({"llama.block_count", 4, le<uint32_t>(2)});
  auto arr = le<uint32_t>(8);  // array of strings
  for (auto b : le<uint64_t>(2)) arr.push_back(b);
  for (const char* s : {"a", "bc"}) {
    auto sb = gguf_string(s);
    arr.insert(arr.end(), sb.begin(), sb.end());
  }
  f.kvs.push_back({"tokenizer.ggml.tokens", 9, arr});
  f.tensors.push_back({"a.weight", {64}, 0, 0});
  f.tensors.push_back({"b.weight", {32, 2}, 0, 256});
  f.data_bytes = 512;
  return f;
}

void expect_error(const std::vector<uint8_t>& bytes, const std::string& needle,
                  ErrorCode code = ErrorCode::kInvalidFile) {
  try {
    GgufFile::from_bytes(bytes.data(), bytes.size(), "bad.gguf");
    ADD_FAILURE() << "accepted a file that should fail with: " << needle;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), code) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
    EXPECT_EQ(msg.rfind("bad.gguf: ", 0), 0u) << "message does not name the file: " << msg;
  }
}

TEST(Malformed, ValidBaseFileLoads) {
  const auto bytes = valid_file().bytes();
  const GgufFile f = GgufFile::from_bytes(bytes.data(), bytes.size(), "ok.gguf");
  EXPECT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.get_array("tokenizer.ggml.tokens").strings()[1], "bc");
}

TEST(Malformed, TruncationAtEveryByteIsAnError) {
  const auto bytes = valid_file().bytes();
  // Every prefix short of the end of the last tensor's data must fail cleanly.
  const size_t data_end = bytes.size() - 512 + 256 + 256;
  for (size_t n = 0; n < data_end; ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    try {
      GgufFile::from_bytes(cut.data(), cut.size(), "bad.gguf");
      ADD_FAILURE() << "prefix of " << n << " bytes accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << n << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("at byte"), std::string::npos) << e.what();
    }
  }
}

TEST(Malformed, Header) {
  auto bytes = valid_file().bytes();
  bytes[0] = 'X';
  expect_error(bytes, "bad magic");
  RawFile f = valid_file();
  f.version = 1;
  expect_error(f.bytes(), "re-convert", ErrorCode::kUnsupported);
  f.version = 0x03000000;
  expect_error(f.bytes(), "big-endian", ErrorCode::kUnsupported);
  f.version = 7;
  expect_error(f.bytes(), "unsupported GGUF version 7", ErrorCode::kUnsupported);
}

TEST(Malformed, AbsurdCounts) {
  RawFile f = valid_file();
  f.n_kv = uint64_t{1} << 62;
  expect_error(f.bytes(), "metadata key count");
  f = valid_file();
  f.n_tensors = ~uint64_t{0};
  expect_error(f.bytes(), "tensor count");
  f = valid_file();
  f.n_kv = 4;  // one more key than present: runs into the tensor infos
  try {
    auto b = f.bytes();
    GgufFile::from_bytes(b.data(), b.size(), "bad.gguf");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
  }
}

TEST(Malformed, HugeStringAndArrayLengths) {
  RawFile f = valid_file();
  f.kvs[0].value = le<uint64_t>(uint64_t{1} << 60);
  expect_error(f.bytes(), "exceeds the");
  f = valid_file();
  std::vector<uint8_t> arr = le<uint32_t>(6);  // f32 array with 2^61 elements
  for (auto b : le<uint64_t>(uint64_t{1} << 61)) arr.push_back(b);
  f.kvs[1] = {"x.floats", 9, arr};
  expect_error(f.bytes(), "array length");
  f = valid_file();
  arr = le<uint32_t>(8);  // string array whose count exceeds the bytes
  for (auto b : le<uint64_t>(uint64_t{1} << 40)) arr.push_back(b);
  f.kvs[1] = {"x.strings", 9, arr};
  expect_error(f.bytes(), "array length");
}

TEST(Malformed, ValueTypes) {
  RawFile f = valid_file();
  f.kvs[1].type = 13;
  expect_error(f.bytes(), "unknown value type 13");
  f = valid_file();
  std::vector<uint8_t> nested = le<uint32_t>(9);
  for (auto b : le<uint64_t>(0)) nested.push_back(b);
  f.kvs[1] = {"x.nested", 9, nested};
  expect_error(f.bytes(), "nested arrays", ErrorCode::kUnsupported);
  f = valid_file();
  f.kvs[1] = {"x.flag", 7, {2}};
  expect_error(f.bytes(), "bool value");
}

TEST(Malformed, Keys) {
  RawFile f = valid_file();
  f.kvs[1].key = "general.architecture";
  expect_error(f.bytes(), "duplicate metadata key 'general.architecture'");
  f = valid_file();
  f.kvs[1].key = "";
  expect_error(f.bytes(), "empty metadata key");
  f = valid_file();
  f.kvs[1].key = "bad\xff\xfekey";
  expect_error(f.bytes(), "not valid UTF-8");
}

TEST(Malformed, Alignment) {
  for (uint32_t a : {0u, 3u, 48u}) {
    RawFile f = valid_file();
    f.kvs.push_back({"general.alignment", 4, le<uint32_t>(a)});
    expect_error(f.bytes(), "not a non-zero power of two");
  }
  RawFile f = valid_file();
  f.kvs.push_back({"general.alignment", 10, le<uint64_t>(64)});
  expect_error(f.bytes(), "general.alignment must be u32");
}

TEST(Malformed, TensorInfos) {
  RawFile f = valid_file();
  f.tensors[1].type = 4;  // removed Q4_2
  expect_error(f.bytes(), "unknown or removed type id 4", ErrorCode::kUnsupported);
  f.tensors[1].type = 1000;
  expect_error(f.bytes(), "type id 1000", ErrorCode::kUnsupported);
  f = valid_file();
  f.tensors[1].name = "a.weight";
  expect_error(f.bytes(), "duplicate tensor name 'a.weight'");
  f = valid_file();
  f.tensors[0].ne = {1, 1, 1, 1, 1};
  expect_error(f.bytes(), "5 dimensions");
  f = valid_file();
  f.tensors[0].ne = {uint64_t{1} << 40, uint64_t{1} << 40};
  expect_error(f.bytes(), "element count overflows");
  f = valid_file();
  f.tensors[0].ne = {uint64_t{1} << 63};
  expect_error(f.bytes(), "negative dimension");
  f = valid_file();
  f.tensors[0] = {"a.weight", {48}, 2, 0};  // Q4_0 rows must be multiples of 32
  expect_error(f.bytes(), "not a multiple of the q4_0 block size 32");
}

TEST(Malformed, TensorOffsets) {
  RawFile f = valid_file();
  f.tensors[1].offset = 100;
  expect_error(f.bytes(), "not a multiple of the alignment");
  f = valid_file();
  f.tensors[1].offset = 4096;
  expect_error(f.bytes(), "lies outside the file");
  f = valid_file();
  f.tensors[1].offset = 224;  // overlaps a.weight's 256 bytes
  expect_error(f.bytes(), "overlaps tensor");
  f = valid_file();
  f.tensors[0].ne = {1u << 20};  // 4 MiB of data in a file of a few hundred bytes
  expect_error(f.bytes(), "lies outside the file");
}

TEST(Malformed, FlippedCountsInARealFile) {
  const auto real = test::read_bytes(test::data_path("models/stories260K.gguf"));
  for (int field : {8, 16}) {  // tensor count, key count
    for (uint64_t v : {uint64_t{1} << 32, uint64_t{1} << 48, ~uint64_t{0}}) {
      auto bytes = real;
      std::memcpy(bytes.data() + field, &v, 8);
      try {
        GgufFile::from_bytes(bytes.data(), bytes.size(), "bad.gguf");
        ADD_FAILURE() << "accepted count " << v;
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << e.what();
      }
    }
  }
}

TEST(Malformed, MissingFileIsAnIoError) {
  try {
    GgufFile::open("/nonexistent/model.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos);
  }
}

}  // namespace
}  // namespace qinfer
