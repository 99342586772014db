// The kernel table chosen by QINFER_ISA against the scalar reference, beyond the weight types'
// dots (isa_test.cpp): the activation quantizers, attention and the vector primitives.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "kernels/blocks.hpp"
#include "kernels/float_conv.hpp"
#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/kernels.hpp"
#include "kernels/matmul.hpp"
#include "kernels/repack.hpp"
#include "qinfer/error.hpp"
#include "tests/kernels/isa_test_util.hpp"
#include "tests/test_util.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace qinfer {
namespace {

// The ISA's activation quantizers give the reference's bytes (ggml's), on random rows and on
// rows built to hit the edge cases: an all-zero block, the largest magnitude twice with both
// signs (the first one decides Q8_K's sign), values landing exactly on .5 after scaling.
TEST(ActivationQuantizers, ByteIdenticalToReference) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP() << "QINFER_ISA names an ISA this CPU lacks";
  if (k->isa == Isa::kScalar) GTEST_SKIP() << "the scalar table is the reference";
  const kernels::KernelTable& ref = kernels::table(Isa::kScalar);
  std::mt19937 rng(21);
  std::normal_distribution<float> g(0.0f, 1.0f);
  const int64_t n = 1024;
  for (int pattern = 0; pattern < 4; ++pattern) {
    std::vector<float> x(n);
    for (float& v : x) v = g(rng);
    if (pattern == 1) std::fill(x.begin(), x.begin() + 256, 0.0f);
    if (pattern == 2) {
      for (int64_t b = 0; b < n; b += 32) {
        x[b + 3] = 5.0f;
        x[b + 17] = -5.0f;
      }
    }
    if (pattern == 3) {  // 127 / 127 steps: every value an exact multiple of max/254
      for (int64_t i = 0; i < n; ++i)
        x[i] = static_cast<float>(static_cast<int>(rng() % 255) - 127) * 0.5f;
    }
    for (TensorType t : {TensorType::Q8_0, TensorType::Q8_1, TensorType::Q8_K}) {
      std::vector<uint8_t> want(row_size_bytes(t, n)), got(row_size_bytes(t, n));
      kernels::quantize_activation(ref, t, x.data(), want.data(), n);
      kernels::quantize_activation(*k, t, x.data(), got.data(), n);
      EXPECT_EQ(want, got) << type_name(t) << " pattern " << pattern;
    }
  }
  // F16 and BF16 (the float GEMM's roundings) also on the values with special roundings: halves of
  // the last place, f16 subnormals and underflow, overflow to infinity, infinities, NaNs, -0.
  std::vector<float> x(n);
  for (float& v : x) v = g(rng) * 1000.0f;
  const float special[] = {65519.0f,
                           65520.0f,
                           -65536.0f,
                           1e-5f,
                           6e-8f,
                           2.9e-8f,
                           3e-8f,
                           -1e-7f,
                           -0.0f,
                           1.0f + 0x1p-11f,
                           1.0f + 0x1p-11f + 0x1p-22f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(),
                           std::bit_cast<float>(0x7f812345u),
                           std::bit_cast<float>(0x3f808000u),
                           std::bit_cast<float>(0x3f818000u),
                           std::bit_cast<float>(0x7f7fffffu)};
  for (size_t i = 0; i < std::size(special); ++i) x[3 + 9 * i] = special[i];
  for (TensorType t : {TensorType::F16, TensorType::BF16}) {
    std::vector<uint8_t> want(row_size_bytes(t, n)), got(want.size());
    kernels::quantize_activation(ref, t, x.data(), want.data(), n);
    kernels::quantize_activation(*k, t, x.data(), got.data(), n);
    EXPECT_EQ(want, got) << type_name(t);
  }
}

// The ISA's attention kernel against the scalar reference: GQA (4 query heads on 2 KV
// heads), keys crossing the 64-key blocks, with and without a sliding window and a soft-cap,
// for every cache type. Both compute the exact softmax; their orders of summation differ, and
// an f16-rounded probability may round the other way: tolerance 2e-3 of max |v|.
TEST(Attention, KernelAgreesWithScalar) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP() << "QINFER_ISA names an ISA this CPU lacks";
  if (k->isa == Isa::kScalar) GTEST_SKIP() << "the scalar kernel is the reference";
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  // Short contexts (one chunk of keys), and one over three chunks (kAttentionChunk).
  for (const int64_t pos0 : {int64_t{57}, 2 * kernels::kAttentionChunk + 100}) {
    const int64_t n_head = 4, n_kv = 2, n = 20, n_pos = pos0 + n;
    // Head dimensions: whole batches of every ISA (64), and multiples of 8 that are not whole
    // AVX-512 batches (8 as stories260K, 24); the block types' rows need multiples of 32. An f16
    // K both as rows and in tiles (the model's cache), which takes the generation path.
    struct Case {
      int64_t hd;
      TensorType type;
      bool tiled;
    };
    for (const auto& [hd, ct, tiled] : std::vector<Case>{{64, TensorType::F16, true},
                                                         {64, TensorType::F16, false},
                                                         {64, TensorType::F32, false},
                                                         {64, TensorType::BF16, false},
                                                         {64, TensorType::Q8_0, true},
                                                         {64, TensorType::Q8_0, false},
                                                         {64, TensorType::Q4_0, true},
                                                         {64, TensorType::Q4_0, false},
                                                         {8, TensorType::F16, true},
                                                         {8, TensorType::F16, false},
                                                         {24, TensorType::F16, true},
                                                         {24, TensorType::F16, false},
                                                         {8, TensorType::F32, false}}) {
      const size_t head_bytes = row_size_bytes(ct, hd), row_bytes = head_bytes * n_kv;
      // Whole tiles, and stale bytes past the last position (a rewound cache holds old keys).
      const int64_t n_rows =
          (n_pos + kernels::kKeyTile - 1) / kernels::kKeyTile * kernels::kKeyTile;
      std::vector<uint8_t> kc(row_bytes * n_rows, 0x7c), vc(row_bytes * n_pos);
      std::vector<float> tmp(hd);
      for (int64_t p = 0; p < n_pos * n_kv; ++p) {
        for (float& v : tmp) v = g(rng);
        kernels::reference_quantizer(ct)(tmp.data(), kc.data() + p * head_bytes, hd);
        for (float& v : tmp) v = g(rng);
        kernels::reference_quantizer(ct)(tmp.data(), vc.data() + p * head_bytes, hd);
      }
      if (tiled) {  // as the model's cache: each head's tiles together (V stays position-major)
        const std::vector<uint8_t> rows = kc;
        for (int64_t p = 0; p < n_pos; ++p) {
          for (int64_t gi = 0; gi < n_kv; ++gi) {
            kernels::store_key_tiled(ct, rows.data() + p * row_bytes + gi * head_bytes, 0, hd, p,
                                     kc.data() + gi * n_rows * head_bytes, head_bytes);
          }
        }
      }
      std::vector<float> q(n * n_head * hd);
      for (float& v : q) v = g(rng);
      for (int64_t window : {int64_t{0}, int64_t{7}, int64_t{300}}) {
        for (float cap : {0.0f, 20.0f}) {
          kernels::AttentionArgs a;
          a.q = q.data();
          a.q_token_stride = n_head * hd;
          a.n_head = n_head;
          a.n_head_kv = n_kv;
          a.head_dim_k = a.head_dim_v = hd;
          a.pos0 = pos0;
          a.window = window;
          a.scale = 0.125f;
          a.softcap = cap;
          a.k_type = a.v_type = ct;
          a.k_tiled = tiled;
          a.k_base = kc.data();
          a.v_base = vc.data();
          a.k_pos_stride = tiled ? head_bytes : row_bytes;
          a.k_head_stride = tiled ? n_rows * head_bytes : head_bytes;
          a.v_pos_stride = row_bytes;
          a.v_head_stride = head_bytes;
          a.out_token_stride = n_head * hd;
          std::vector<float> got(n * n_head * hd), want(n * n_head * hd);
          kernels::AttentionScratch s;
          for (int64_t gi = 0; gi < n_kv; ++gi) {
            for (int64_t t0 : {int64_t{0}, int64_t{16}}) {
              a.out = got.data();
              k->attention(a, gi, t0, std::min(n, t0 + 16), s);
              a.out = want.data();
              kernels::attention_scalar(a, gi, t0, std::min(n, t0 + 16), s);
            }
          }
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 2e-3 * 4.0)
                << type_name(ct) << (tiled ? " tiled" : "") << " head " << hd << " window "
                << window << " cap " << cap << " pos0 " << pos0 << " at " << i;
          }
        }
      }
    }
  }
}

// Attention of the last 16 of n_pos positions on a tiled K (the model's cache), queries q
// (16 tokens of n_head heads of hd), without the cache's types and addresses.
kernels::AttentionArgs last_16_tokens(const float* q, int64_t n_head, int64_t n_kv, int64_t hd,
                                      int64_t n_pos, int64_t window) {
  kernels::AttentionArgs a;
  a.q = q;
  a.q_token_stride = a.out_token_stride = n_head * hd;
  a.n_head = n_head;
  a.n_head_kv = n_kv;
  a.head_dim_k = a.head_dim_v = hd;
  a.pos0 = n_pos - 16;
  a.window = window;
  a.scale = 0.125f;
  a.k_tiled = true;
  return a;
}

// A token's attention output has the same bits whether it comes in a prompt's block of tokens
// (the block path) or alone (generation's direct path), on the model's tiled K (f16, q8_0 and q4_0
// caches): a session rewound and fed again reproduces its logits. Past one chunk of keys, also
// when each chunk is a call of its own and attention_combine adds them up (generation split
// over threads), so the logits do not depend on the number of threads.
TEST(Attention, BitsDoNotDependOnTheBatch) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP() << "QINFER_ISA names an ISA this CPU lacks";
  std::mt19937 rng(12);
  std::normal_distribution<float> g(0.0f, 1.0f);
  const int64_t n_kv = 2, C = kernels::kAttentionChunk;
  struct Case {
    int64_t hd;
    TensorType type;
    int64_t n_pos, window;
    int64_t n_head = 8;  // 12 query heads on a KV head: more than a token's direct path takes
  };
  for (const auto& [hd, ct, n_pos, window, n_head] :
       std::vector<Case>{{64, TensorType::F16, 150, 0},
                         {64, TensorType::Q8_0, 150, 7},
                         {64, TensorType::Q8_0, 2 * C + 8, 0, 24},
                         {64, TensorType::F16, 150, 40},
                         {64, TensorType::F16, 150, 0, 16},  // 8 queries a KV head, as TinyLlama
                         {8, TensorType::F16, 150, 0},
                         {24, TensorType::F16, 150, 40},
                         {64, TensorType::Q8_0, 150, 0},
                         {64, TensorType::F16, 2 * C + 8, 0},
                         {64, TensorType::F16, 3 * C, 300},
                         {24, TensorType::F16, 2 * C + 8, 0},
                         {64, TensorType::Q8_0, 2 * C + 8, 0},
                         {64, TensorType::Q4_0, 150, 7},
                         {64, TensorType::Q4_0, 2 * C + 8, 0, 16},
                         {64, TensorType::Q4_0, 2 * C + 8, 0, 24}}) {
    // Head-major, as the model's cache: whole tiles per head.
    const int64_t n_rows = (n_pos + kernels::kKeyTile - 1) / kernels::kKeyTile * kernels::kKeyTile;
    const size_t head_bytes = row_size_bytes(ct, hd), head_stride = n_rows * head_bytes;
    std::vector<uint8_t> kc(head_stride * n_kv), vc(head_stride * n_kv), row(head_bytes);
    std::vector<float> x(static_cast<size_t>(hd));
    for (int64_t p = 0; p < n_pos; ++p) {
      for (int64_t gi = 0; gi < n_kv; ++gi) {
        for (float& v : x) v = g(rng);
        kernels::reference_quantizer(ct)(x.data(), row.data(), hd);
        kernels::store_key_tiled(ct, row.data(), 0, hd, p, kc.data() + gi * head_stride,
                                 head_bytes);
        for (float& v : x) v = g(rng);
        kernels::reference_quantizer(ct)(x.data(), vc.data() + gi * head_stride + p * head_bytes,
                                         hd);
      }
    }
    std::vector<float> q(16 * n_head * hd);
    for (float& v : q) v = g(rng);
    kernels::AttentionArgs a = last_16_tokens(q.data(), n_head, n_kv, hd, n_pos, window);
    a.k_type = a.v_type = ct;
    a.k_base = kc.data();
    a.v_base = vc.data();
    a.k_pos_stride = a.v_pos_stride = head_bytes;
    a.k_head_stride = a.v_head_stride = head_stride;
    std::vector<float> block(q.size()), alone(q.size()), split(q.size(), NAN);
    kernels::AttentionScratch s;
    for (int64_t gi = 0; gi < n_kv; ++gi) {
      a.out = block.data();
      k->attention(a, gi, 0, 16, s);
      a.out = alone.data();
      for (int64_t t = 0; t < 16; ++t) k->attention(a, gi, t, t + 1, s);
    }
    const std::string what = std::string(type_name(ct)) + " head " + std::to_string(hd) + " keys " +
                             std::to_string(n_pos) + " window " + std::to_string(window) +
                             " query heads " + std::to_string(n_head);
    for (size_t i = 0; i < block.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(block[i]), std::bit_cast<uint32_t>(alone[i]))
          << what << " at " << i;
    }
    if (n_pos <= C || k->attention_combine == nullptr) continue;
    // Each chunk of each KV head a call of its own (for the 16 tokens, or each token alone),
    // in any order, then the combination.
    for (const int64_t per_call : {int64_t{16}, int64_t{1}}) {
      kernels::AttentionArgs p = a;
      p.out = split.data();
      p.n_chunks = (n_pos + C - 1) / C;
      std::vector<float> part_o(static_cast<size_t>(16 * n_head * p.n_chunks * hd), NAN);
      std::vector<kernels::ChunkStats> part_stats(static_cast<size_t>(16 * n_head * p.n_chunks));
      p.part_o = part_o.data();
      p.part_stats = part_stats.data();
      for (int64_t gi = 0; gi < n_kv; ++gi) {
        for (int64_t c = p.n_chunks - 1; c >= 0; --c) {
          p.chunk0 = c;
          p.chunk1 = c + 1;
          for (int64_t t = 0; t < 16; t += per_call) k->attention(p, gi, t, t + per_call, s);
        }
      }
      std::fill(split.begin(), split.end(), NAN);
      k->attention_combine(p, 0, n_head, 0, 16, s);
      for (size_t i = 0; i < block.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(block[i]), std::bit_cast<uint32_t>(split[i]))
            << what << " split in chunks, " << per_call << " tokens a call, at " << i;
      }
    }
  }
}

// The avx2-vnni table sums a q8_0 or q4_0 cache in integers, the avx2 one in float FMAs, with
// the rest of the code the same; for a token alone (the direct path) and a block of 16 (the
// prompt's path), a sliding window, and 1 to 12 query heads on a KV head:
// - a tiled q8_0 or q4_0 K's scores (vpdpbusd) have the float FMAs' bits
//   (kernels/attention.hpp), so with an f16 V the two tables' outputs are equal bit for bit;
// - a q8_0 (q4_0) V's P.V (vpdpwssd on int16 weights, attention_pv_q8.inl) rounds each weight to
//   1/32767 of the block's largest scale: within 1e-3 of the float sums here. Against the
//   scalar reference the largest difference was 7e-4 (the AVX-512 table's too), and the
//   f16 V's, from its f16 probabilities as ggml's, up to 1.3e-3 (outputs up to 3).
TEST(Attention, IntegerDotsAgreeWithTheFloatPath) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr || k->isa != Isa::kAvx2Vnni)
    GTEST_SKIP() << "compares the avx2-vnni table with the avx2 one";
  const kernels::KernelTable& plain = kernels::table(Isa::kAvx2);
  std::mt19937 rng(13);
  std::normal_distribution<float> g(0.0f, 1.0f);
  const int64_t hd = 64, n_kv = 2, n_pos = 2 * kernels::kAttentionChunk + 40;
  const int64_t n_rows = (n_pos + kernels::kKeyTile - 1) / kernels::kKeyTile * kernels::kKeyTile;
  for (const auto& [kt, vt] :
       std::vector<std::pair<TensorType, TensorType>>{{TensorType::Q8_0, TensorType::F16},
                                                      {TensorType::Q8_0, TensorType::Q8_0},
                                                      {TensorType::Q4_0, TensorType::F16},
                                                      {TensorType::Q4_0, TensorType::Q4_0}}) {
    const size_t k_bytes = row_size_bytes(kt, hd), v_bytes = row_size_bytes(vt, hd);
    std::vector<uint8_t> kc(n_rows * k_bytes * n_kv), vc(n_rows * v_bytes * n_kv), row(k_bytes);
    std::vector<float> x(static_cast<size_t>(hd));
    for (int64_t p = 0; p < n_pos; ++p) {
      for (int64_t gi = 0; gi < n_kv; ++gi) {
        for (float& v : x) v = 3.0f * g(rng);
        kernels::reference_quantizer(kt)(x.data(), row.data(), hd);
        kernels::store_key_tiled(kt, row.data(), 0, hd, p, kc.data() + gi * n_rows * k_bytes,
                                 k_bytes);
        for (float& v : x) v = g(rng);
        kernels::reference_quantizer(vt)(x.data(), vc.data() + (gi * n_rows + p) * v_bytes, hd);
      }
    }
    for (int64_t n_head : {2, 6, 16, 24}) {
      for (int64_t window : {0, 100}) {
        std::vector<float> q(16 * n_head * hd);
        for (float& v : q) v = g(rng);
        kernels::AttentionArgs a = last_16_tokens(q.data(), n_head, n_kv, hd, n_pos, window);
        a.k_type = kt;
        a.v_type = vt;
        a.k_base = kc.data();
        a.v_base = vc.data();
        a.k_pos_stride = k_bytes;
        a.v_pos_stride = v_bytes;
        a.k_head_stride = n_rows * k_bytes;
        a.v_head_stride = n_rows * v_bytes;
        for (int64_t per_call : {16, 1}) {
          std::vector<float> got(q.size()), want(q.size());
          kernels::AttentionScratch s;
          for (int64_t gi = 0; gi < n_kv; ++gi) {
            for (int64_t t = 0; t < 16; t += per_call) {
              a.out = got.data();
              k->attention(a, gi, t, t + per_call, s);
              a.out = want.data();
              plain.attention(a, gi, t, t + per_call, s);
            }
          }
          const std::string what = "K " + std::string(type_name(kt)) + ", V " +
                                   std::string(type_name(vt)) + ", " + std::to_string(n_head) +
                                   " query heads, window " + std::to_string(window) + ", " +
                                   std::to_string(per_call) + " tokens a call, at ";
          for (size_t i = 0; i < got.size(); ++i) {
            if (vt == TensorType::F16) {
              ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
                  << what << i;
            } else {
              ASSERT_NEAR(got[i], want[i], 1e-3) << what << i;
            }
          }
        }
      }
    }
  }
}

// The attention primitives of the ISA under test against the scalar ones, for lengths that
// exercise the vector body and the tail.
TEST(VectorOps, AgreeWithScalar) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP();
  const kernels::VectorOps& ref = kernels::table(Isa::kScalar).vec;
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (int64_t n : {1, 7, 8, 16, 33, 64, 128, 255}) {
    std::vector<float> a(n), b(n), y1(n), y2(n);
    std::vector<uint16_t> h(n);
    double abs_sum = 0, abs_sum_h = 0;
    for (int64_t i = 0; i < n; ++i) {
      a[i] = g(rng);
      b[i] = g(rng);
      h[i] = fp32_to_fp16(g(rng));
      y1[i] = y2[i] = g(rng);
      abs_sum += std::fabs(a[i] * b[i]);
      abs_sum_h += std::fabs(a[i] * fp16_to_fp32(h[i]));
    }
    EXPECT_NEAR(k->vec.dot_f32(a.data(), b.data(), n), ref.dot_f32(a.data(), b.data(), n),
                1e-5 * abs_sum)
        << n;
    EXPECT_NEAR(k->vec.dot_f16(a.data(), h.data(), n), ref.dot_f16(a.data(), h.data(), n),
                1e-5 * abs_sum_h)
        << n;
    k->vec.axpy_f32(y1.data(), 0.75f, b.data(), n);
    ref.axpy_f32(y2.data(), 0.75f, b.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y1[i], y2[i], 1e-6f * (1 + std::fabs(y2[i])));
    k->vec.axpy_f16(y1.data(), -1.5f, h.data(), n);
    ref.axpy_f16(y2.data(), -1.5f, h.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y1[i], y2[i], 1e-6f * (1 + std::fabs(y2[i])));
  }
}

// The element-wise ops give the scalar table's bits: same IEEE operations per element. The
// exponential is fed arguments from deep in the subnormal range to overflow.
TEST(VectorOps, ElementwiseBitIdenticalToScalar) {
  const kernels::KernelTable* k = isa_under_test();
  if (k == nullptr) GTEST_SKIP();
  const kernels::VectorOps& ref = kernels::table(Isa::kScalar).vec;
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 3.0f);
  std::uniform_real_distribution<float> wide(-140.0f, 100.0f);
  auto same = [](const std::vector<float>& a, const std::vector<float>& b, const char* what) {
    size_t i = 0;
    while (i < a.size() && std::memcmp(&a[i], &b[i], sizeof(float)) == 0) ++i;
    ASSERT_EQ(i, a.size()) << what << " n=" << a.size() << ": " << a[i] << " vs " << b[i];
  };
  for (int64_t n : {1, 7, 8, 16, 33, 64, 255, 4096}) {
    std::vector<float> x(n), y(n), w(n), e(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = g(rng);
      y[i] = g(rng);
      w[i] = g(rng);
      e[i] = wide(rng);
    }
    e[0] = -103.9f;  // subnormal result
    if (n > 2) e[1] = 89.0f, e[2] = -0.0f;
    if (n > 4) e[3] = -INFINITY, e[4] = INFINITY;  // a masked score; an overflow
    auto a = x, b = x;
    k->vec.add(a.data(), y.data(), n);
    ref.add(b.data(), y.data(), n);
    same(a, b, "add");
    a = b = x;
    k->vec.scale_mul(a.data(), 0.3f, w.data(), n);
    ref.scale_mul(b.data(), 0.3f, w.data(), n);
    same(a, b, "scale_mul");
    a = b = e;
    k->vec.exp_shift(a.data(), 0.25f, n);
    ref.exp_shift(b.data(), 0.25f, n);
    same(a, b, "exp_shift");
    a = b = x;
    k->vec.silu_mul(a.data(), y.data(), n);
    ref.silu_mul(b.data(), y.data(), n);
    same(a, b, "silu_mul");
  }
  // RoPE, both orderings: whole rotations of heads of 64 and 128, a partial one (32 of 64
  // dimensions rotated), and one whose pairs end in the scalar tail (24 of 40).
  for (bool neox : {false, true}) {
    for (auto [head_dim, n_rot] :
         {std::pair<int64_t, int64_t>{64, 64}, {128, 128}, {64, 32}, {40, 24}}) {
      const int64_t n_heads = 5;
      std::vector<float> x(n_heads * head_dim), cs(n_rot);
      for (float& v : x) v = g(rng);
      for (int64_t i = 0; i < n_rot / 2; ++i) {
        const float theta = 3.7f * std::pow(10000.0f, -2.0f * i / n_rot);
        cs[2 * i] = std::cos(theta);
        cs[2 * i + 1] = std::sin(theta);
      }
      auto a = x, b = x;
      k->vec.rope(a.data(), n_heads, head_dim, cs.data(), n_rot, neox);
      ref.rope(b.data(), n_heads, head_dim, cs.data(), n_rot, neox);
      same(a, b, neox ? "rope neox" : "rope");
      EXPECT_NE(a, x);
    }
  }
}

}  // namespace
}  // namespace qinfer
