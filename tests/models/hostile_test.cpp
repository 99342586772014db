// Hostile metadata (#27): every numeric metadata key of a real model of each family set to
// 0, 1, -1, a huge value and (floats) NaN and infinities; loading the file and generating
// three tokens must give a clean qinfer::Error or a normal run, never a crash or a
// sanitizer report (the suite runs under ASan+UBSan in CI).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/engine.hpp"
#include "loader/gguf_writer.hpp"
#include "qinfer/error.hpp"
#include "tests/test_util.hpp"

namespace qinfer {
namespace {

// One mutated copy of `f`: key set to the value in `type`.
template <typename T>
std::vector<uint8_t> with_value(const GgufFile& f, const std::string& key, ValueType type, T v) {
  GgufWriter w = GgufWriter::copy_of(f);
  std::vector<uint8_t> raw(sizeof v);
  std::memcpy(raw.data(), &v, sizeof v);
  w.add_raw(key, type, raw.data(), raw.size());
  return w.to_bytes();
}

enum class Outcome { kRan, kError };

Outcome load_and_generate(const std::vector<uint8_t>& bytes) {
  try {
    const auto model =
        engine::Model::from_file(GgufFile::from_bytes(bytes.data(), bytes.size(), "hostile.gguf"));
    engine::Session s(model, {.n_threads = 1});
    const auto prompt = model->tokenizer->encode("Once upon a time", true, false);
    engine::GenerateOptions o;
    o.max_tokens = 3;
    o.sampler.temperature = 0;
    if (prompt.empty()) return Outcome::kRan;
    s.generate(prompt, o);
    return Outcome::kRan;
  } catch (const Error&) {
    return Outcome::kError;
  }
}

bool is_numeric_scalar(ValueType t) {
  return t != ValueType::STRING && t != ValueType::ARRAY && t != ValueType::BOOL;
}

void hostile_sweep(const std::string& path) {
  const GgufFile f = GgufFile::open(path);
  int ran = 0, errors = 0;
  for (const MetaEntry& e : f.metadata()) {
    const ValueType t = e.value.type;
    if (!is_numeric_scalar(t)) continue;
    std::vector<std::vector<uint8_t>> variants;
    if (t == ValueType::F32 || t == ValueType::F64) {
      for (float v :
           {0.0f, 1.0f, -1.0f, 1e30f, std::numeric_limits<float>::quiet_NaN(),
            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
        variants.push_back(with_value(f, e.key, ValueType::F32, v));
      }
    } else {
      for (uint32_t v : {0u, 1u, 0xffffffffu, 0x7fffffffu, 65536u})
        variants.push_back(with_value(f, e.key, ValueType::U32, v));
      variants.push_back(with_value(f, e.key, ValueType::I32, int32_t{-1}));
      variants.push_back(with_value(f, e.key, ValueType::I64, std::numeric_limits<int64_t>::min()));
      variants.push_back(
          with_value(f, e.key, ValueType::U64, std::numeric_limits<uint64_t>::max()));
    }
    for (const auto& bytes : variants) (load_and_generate(bytes) == Outcome::kRan ? ran : errors)++;
  }
  std::printf("%s: %d hostile variants ran normally, %d were refused with an error\n", path.c_str(),
              ran, errors);
  EXPECT_GT(ran + errors, 20);
  EXPECT_GT(errors, 0);
}

TEST(HostileMetadata, Llama) { hostile_sweep(test::data_path("models/stories260K.gguf")); }
TEST(HostileMetadata, Gpt2) { hostile_sweep(test::data_path("models/wp-gpt2-Q4_0.gguf")); }
TEST(HostileMetadata, Gemma2) {
  hostile_sweep(test::data_path("models/arch/gemma2-tiny-Q4_K_M.gguf"));
}

// #27 finding 1: rope.dimension_count larger than the head size overflowed the heap in
// ops::rope; now the rules table names the key and both values.
TEST(HostileMetadata, RopeDimensionsBeyondTheHeadAreRefused) {
  const GgufFile f = GgufFile::open(test::data_path("models/stories260K.gguf"));
  const auto bytes = with_value(f, "llama.rope.dimension_count", ValueType::U32, uint32_t{16});
  try {
    engine::Model::from_file(GgufFile::from_bytes(bytes.data(), bytes.size(), "rope.gguf"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama.rope.dimension_count = 16 (head size 8)"),
              std::string::npos)
        << e.what();
  }
}

// #27 finding 5: gpt2 with a context past its learned positions started and then failed
// mid-stream; now the session refuses it before any work.
TEST(HostileMetadata, Gpt2ContextPastLearnedPositionsIsRefusedUpFront) {
  const auto model = engine::Model::load(test::data_path("models/wp-gpt2-Q4_0.gguf"));
  EXPECT_THROW(engine::Session(model, {.n_ctx = model->config.n_ctx_train + 1}), Error);
  engine::Session ok(model, {.n_ctx = model->config.n_ctx_train});
  EXPECT_EQ(ok.n_ctx(), model->config.n_ctx_train);
}

}  // namespace
}  // namespace qinfer
