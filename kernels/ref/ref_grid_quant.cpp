// Quantizers of the IQ3 grid types (IQ3_XXS, IQ3_S): ggml's search, step for step and in the
// same float order, so that the bytes equal llama.cpp's (the golden .q files). Per 32 values:
// |x| with the signs apart, a scan of 31 (IQ3_XXS) or 19 (IQ3_S) candidate scales, each value
// rounded to one of 8 odd levels 1..15, and each group of 4 that is not a grid row replaced by
// the nearest grid rows' best fit (the neighbour lists below); then the scale refitted.
#include <algorithm>
#include <array>
#include <cfloat>
#include <stdexcept>
#include <vector>

#include "kernels/grid_codes.hpp"
#include "kernels/ref/ref.hpp"

namespace qinfer::ref {
namespace {

// A grid of rows of 4 levels (0..7, value 2l + 1) and, for every 12-bit code of 4 levels,
// its row or, when it is not a row, the rows at the nearest few squared distances.
struct Iq3Search {
  std::vector<std::array<int8_t, 4>> rows;  // odd values 2l + 1
  std::vector<int> row_of;                  // code -> row, or -1
  std::vector<std::vector<uint16_t>> near;  // code -> neighbour rows (codes off the grid)

  template <int N>
  Iq3Search(const GridCodes<N>& c, int n_distances) : rows(N), row_of(4096, -1), near(4096) {
    if (c.bits != 3) throw std::logic_error("IQ3 grid codes must have 3-bit levels");
    for (int r = 0; r < N; ++r) {
      const int code = c.code[r];
      for (int i = 0; i < 4; ++i) rows[r][i] = static_cast<int8_t>(2 * ((code >> (3 * i)) & 7) + 1);
      row_of[code] = r;
    }
    std::vector<std::pair<int, int>> dist(N);  // (squared distance, row)
    for (int code = 0; code < 4096; ++code) {
      if (row_of[code] >= 0) continue;
      for (int r = 0; r < N; ++r) {
        int d2 = 0;
        for (int i = 0; i < 4; ++i) {
          const int diff = rows[r][i] - (2 * ((code >> (3 * i)) & 7) + 1);
          d2 += diff * diff;
        }
        dist[r] = {d2, r};
      }
      std::sort(dist.begin(), dist.end());
      // every row within the n_distances smallest distinct distances, nearest first
      for (int r = 0, distinct = 1; r < N; ++r) {
        if (r > 0 && dist[r].first > dist[r - 1].first && ++distinct > n_distances) break;
        near[code].push_back(static_cast<uint16_t>(dist[r].second));
      }
    }
  }

  // The neighbour of an off-grid code that fits x (weights w) best at this scale; its levels
  // to L.
  int best_neighbour(int code, const float* x, const float* w, float scale, int8_t* L) const {
    float best_d2 = FLT_MAX;
    int best = -1;
    for (const uint16_t r : near[code]) {
      float d2 = 0;
      for (int i = 0; i < 4; ++i) {
        const float diff = scale * static_cast<float>(rows[r][i]) - x[i];
        d2 += w[i] * diff * diff;
      }
      if (d2 < best_d2) best_d2 = d2, best = r;
    }
    for (int i = 0; i < 4; ++i) L[i] = static_cast<int8_t>((rows[best][i] - 1) / 2);
    return best;
  }
  static int code_of(const int8_t* L) { return L[0] | L[1] << 3 | L[2] << 6 | L[3] << 9; }
  // 4 values at inverse scale id -> levels, clamped to 0..7.
  static void round_levels(const float* x, float id, int8_t* L) {
    for (int i = 0; i < 4; ++i) L[i] = static_cast<int8_t>(std::max(0, std::min(7, nearest_int(0.5f * (id * x[i] - 1)))));
  }
};

const Iq3Search& iq3xxs_search() {
  static const Iq3Search s(kIq3xxsCodes, 2);
  return s;
}
const Iq3Search& iq3s_search() {
  static const Iq3Search s(kIq3sCodes, 3);
  return s;
}

// Where ggml's IQ3_XXS and IQ3_S searches differ.
struct Iq3Variant {
  bool even_signs;       // IQ3_XXS: 7 sign bits stored, the 8th by parity (flip the cheapest)
  int steps;             // candidate scales (15 + 0.2 is) / max, is = -steps..steps
  bool refit_all;        // IQ3_S redoes every group at the best scale, IQ3_XXS only off-grid ones
  float zero_below;      // a 32-group whose largest |x| is below this is all zero
};

// One 32-group: levels L (0..7) per value, sign bits per 8, grid rows; returns the scale.
float quantize_group32(const Iq3Search& g, const Iq3Variant& v, const float* xb, const float* weight,
                       uint8_t* signs, uint16_t* grid_rows) {
  float xval[32], waux[32];
  int8_t L[32] = {}, Laux[32];
  bool on_grid[8], on_grid_aux[8];
  for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
  for (int k = 0; k < 4; ++k) {
    int nflip = 0;
    uint8_t s = 0;
    for (int i = 0; i < 8; ++i) {
      const float x = xb[8 * k + i];
      xval[8 * k + i] = x >= 0 ? x : -x;
      if (x < 0) ++nflip, s = static_cast<uint8_t>(s | 1 << i);
    }
    if (v.even_signs && nflip % 2) {  // keep the sign of the element cheapest to get wrong
      int imin = 0;
      float min = weight[8 * k] * xb[8 * k] * xb[8 * k];
      for (int i = 1; i < 8; ++i) {
        const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
        if (ax < min) min = ax, imin = i;
      }
      xval[8 * k + imin] = -xval[8 * k + imin];
      s = static_cast<uint8_t>(s ^ 1 << imin);
    }
    signs[k] = v.even_signs ? static_cast<uint8_t>(s & 127) : s;
  }
  float max = xval[0];
  for (int i = 1; i < 32; ++i) max = std::max(max, xval[i]);
  if (max < v.zero_below || max == 0) {  // as ggml leaves it: row 0, no signs, scale 0
    std::fill(grid_rows, grid_rows + 8, 0);
    std::fill(signs, signs + 4, 0);
    return 0;
  }
  auto fit = [&](const int8_t* levels, float& sumqx, float& sumq2) {
    sumqx = 0, sumq2 = 0;
    for (int i = 0; i < 32; ++i) {
      const float q = static_cast<float>(2 * levels[i] + 1);
      sumqx += weight[i] * xval[i] * q;
      sumq2 += weight[i] * q * q;
    }
  };
  float best = 0, scale = max / 15;
  for (int k = 0; k < 8; ++k) on_grid[k] = !v.refit_all;
  for (int is = -v.steps; is <= v.steps; ++is) {
    const float id = (15 + static_cast<float>(is) * 0.2f) / max;
    const float this_scale = 1 / id;
    for (int k = 0; k < 8; ++k) {
      Iq3Search::round_levels(xval + 4 * k, id, Laux + 4 * k);
      const int code = Iq3Search::code_of(Laux + 4 * k);
      on_grid_aux[k] = g.row_of[code] >= 0;
      if (!on_grid_aux[k]) g.best_neighbour(code, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k);
    }
    float sumqx, sumq2;
    fit(Laux, sumqx, sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      scale = sumqx / sumq2, best = scale * sumqx;
      std::copy(Laux, Laux + 32, L);
      std::copy(on_grid_aux, on_grid_aux + 8, on_grid);
    }
  }
  if (std::count(on_grid, on_grid + 8, false) > 0 && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < 8; ++k) {
      if (on_grid[k] && !v.refit_all) continue;
      int8_t levels[4];
      Iq3Search::round_levels(xval + 4 * k, id, levels);
      int row = g.row_of[Iq3Search::code_of(levels)];
      if (row < 0) row = g.best_neighbour(Iq3Search::code_of(levels), xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
      for (int i = 0; i < 4; ++i) L[4 * k + i] = static_cast<int8_t>((g.rows[row][i] - 1) / 2);
    }
    float sumqx, sumq2;
    fit(L, sumqx, sumq2);
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  if (scale < 0) {  // ggml's guard (not expected): a positive scale, the signs flipped
    scale = -scale;
    for (int k = 0; k < 4; ++k) signs[k] = static_cast<uint8_t>(~signs[k] & (v.even_signs ? 127 : 255));
  }
  for (int k = 0; k < 8; ++k) {
    const int row = g.row_of[Iq3Search::code_of(L + 4 * k)];
    if (row < 0) throw std::logic_error("IQ3 quantizer left a group off the grid");
    grid_rows[k] = static_cast<uint16_t>(row);
  }
  return scale;
}

// 4-bit sub-scale of a 32-group under the block's d = max_scale / 31.
uint8_t scale_nibble(float id, float scale) {
  return static_cast<uint8_t>(std::max(0, std::min(15, nearest_int(0.5f * (id * scale - 1)))));
}

// Per-32 weights: the importance matrix scaled by the block's spread, or x^2 without one.
void group_weights(const float* xbl, const float* xb, const float* imatrix, float* weight) {
  if (imatrix == nullptr) {
    for (int i = 0; i < 32; ++i) weight[i] = xb[i] * xb[i];
    return;
  }
  float sumx2 = 0;
  for (int i = 0; i < kQKK; ++i) sumx2 += xbl[i] * xbl[i];
  const float sigma2 = 2 * sumx2 / kQKK;
  for (int i = 0; i < 32; ++i) weight[i] = imatrix[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
}

}  // namespace

void quantize_iq3_xxs(const float* x, void* vy, int64_t n, const float* imatrix) {
  static constexpr Iq3Variant kVariant{true, 15, false, 1e-8f};
  const Iq3Search& g = iq3xxs_search();
  auto* y = static_cast<BlockIQ3_XXS*>(vy);
  for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
    const float* xbl = x + kQKK * ibl;
    BlockIQ3_XXS& b = y[ibl];
    std::memset(&b, 0, sizeof b);
    float scales[8], weight[32], max_scale = 0;
    uint32_t signs_scale[8];
    for (int ib = 0; ib < 8; ++ib) {
      group_weights(xbl, xbl + 32 * ib, imatrix == nullptr ? nullptr : imatrix + kQKK * ibl + 32 * ib, weight);
      uint8_t signs[4];
      uint16_t rows[8];
      scales[ib] = quantize_group32(g, kVariant, xbl + 32 * ib, weight, signs, rows);
      for (int k = 0; k < 8; ++k) b.qs[8 * ib + k] = static_cast<uint8_t>(rows[k]);
      signs_scale[ib] = signs[0] | signs[1] << 7 | signs[2] << 14 | static_cast<uint32_t>(signs[3]) << 21;
      max_scale = std::max(max_scale, scales[ib]);
    }
    if (max_scale == 0) {
      std::memset(&b, 0, sizeof b);
      continue;
    }
    const float d = max_scale / 31;
    b.d = fp32_to_fp16(d * 1.0125f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib) signs_scale[ib] |= static_cast<uint32_t>(scale_nibble(id, scales[ib])) << 28;
    std::memcpy(b.qs + 64, signs_scale, sizeof signs_scale);
  }
}

void quantize_iq3_s(const float* x, void* vy, int64_t n, const float* imatrix) {
  static constexpr Iq3Variant kVariant{false, 9, true, 0.0f};
  const Iq3Search& g = iq3s_search();
  auto* y = static_cast<BlockIQ3_S*>(vy);
  for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
    const float* xbl = x + kQKK * ibl;
    BlockIQ3_S& b = y[ibl];
    std::memset(&b, 0, sizeof b);
    float scales[8], weight[32], max_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
      group_weights(xbl, xbl + 32 * ib, imatrix == nullptr ? nullptr : imatrix + kQKK * ibl + 32 * ib, weight);
      uint16_t rows[8];
      scales[ib] = quantize_group32(g, kVariant, xbl + 32 * ib, weight, b.signs + 4 * ib, rows);
      for (int k = 0; k < 8; ++k) {
        b.qs[8 * ib + k] = static_cast<uint8_t>(rows[k]);
        b.qh[ib] = static_cast<uint8_t>(b.qh[ib] | (rows[k] >> 8) << k);
      }
      max_scale = std::max(max_scale, scales[ib]);
    }
    if (max_scale == 0) continue;
    const float d = max_scale / 31;
    b.d = fp32_to_fp16(d * 1.033f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ib += 2) {
      b.scales[ib / 2] = static_cast<uint8_t>(scale_nibble(id, scales[ib]) | scale_nibble(id, scales[ib + 1]) << 4);
    }
  }
}

void quantize_row_iq3_xxs(const float* x, void* y, int64_t n) { quantize_iq3_xxs(x, y, n, nullptr); }
void quantize_row_iq3_s(const float* x, void* y, int64_t n) { quantize_iq3_s(x, y, n, nullptr); }

}  // namespace qinfer::ref
