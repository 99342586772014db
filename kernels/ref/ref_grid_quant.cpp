// Quantizers of the grid types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S): ggml's
// searches, step for step and in the same float order, so that the bytes equal llama.cpp's
// (the golden .q files). IQ2/IQ3, per group (32 values, 16 for IQ2_XS and IQ2_S): |x| with
// the signs apart, a scan of candidate scales, each value rounded to one of the grid's odd
// levels (1, 3, 5 for IQ2; 1..15 for IQ3), every row of values (8 for IQ2, 4 for IQ3) that is
// not a grid row replaced by the best fit among the grid rows nearest to it (the neighbour
// lists below); then the scale refitted and coded as a 4-bit sub-scale under one f16 d. IQ1
// (at the end): an exact search over the sorted values instead of the scale scan.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/grid_codes.hpp"
#include "kernels/iq_tables.hpp"
#include "kernels/ref/ref.hpp"

namespace qinfer::ref {
namespace {

// A grid of rows of kPer levels (kBits bits each) and, for every code of kPer levels, its row
// or, when it is not a row, the rows at the n_distances smallest squared distances, nearest
// first and by row number among equals (ggml's init, whose distances between the odd values
// 2l + 1 are 4 times these).
template <int kPer, int kBits>
struct GridSearch {
  static constexpr int kCodes = 1 << (kPer * kBits);
  std::vector<std::array<int8_t, kPer>> rows;  // levels
  std::vector<int> row_of;                     // code -> row, or -1
  std::vector<std::vector<uint16_t>> near;     // code -> neighbour rows (codes off the grid)

  template <int N>
  GridSearch(const GridCodes<N>& c, int n_distances) : GridSearch(c.code, N, c.bits, n_distances) {}
  // n rows of codes of kPer levels of `bits` bits each.
  GridSearch(const uint16_t* code, int n, int bits, int n_distances)
      : rows(n), row_of(kCodes, -1), near(kCodes) {
    if (bits != kBits) throw std::logic_error("grid codes of the wrong width");
    for (int r = 0; r < n; ++r) {
      for (int i = 0; i < kPer; ++i) rows[r][i] = static_cast<int8_t>(level(code[r], i));
      row_of[code[r]] = r;
    }
    std::vector<int> d2(n);
    std::vector<int> smallest;  // the n_distances smallest distinct squared distances, ascending
    for (int c = 0; c < kCodes; ++c) {
      if (row_of[c] >= 0 || !valid(c)) continue;
      smallest.clear();
      for (int r = 0; r < n; ++r) {
        d2[r] = 0;
        for (int i = 0; i < kPer; ++i) {
          const int diff = rows[r][i] - level(c, i);
          d2[r] += diff * diff;
        }
        const auto at = std::lower_bound(smallest.begin(), smallest.end(), d2[r]);
        if (at != smallest.end() && *at == d2[r]) continue;
        if (static_cast<int>(at - smallest.begin()) >= n_distances) continue;
        smallest.insert(at, d2[r]);
        if (static_cast<int>(smallest.size()) > n_distances) smallest.pop_back();
      }
      for (const int d : smallest) {  // nearest first, by row among equals
        for (int r = 0; r < n; ++r) {
          if (d2[r] == d) near[c].push_back(static_cast<uint16_t>(r));
        }
      }
    }
  }
  static int level(int code, int i) { return (code >> (kBits * i)) & ((1 << kBits) - 1); }
  // IQ2 levels are 0..2: codes holding a 3 never occur.
  static bool valid(int code) {
    for (int i = 0; i < kPer; ++i) {
      if (kBits == 2 && level(code, i) == 3) return false;
    }
    return true;
  }
  static int code_of(const int8_t* L) {
    int code = 0;
    for (int i = 0; i < kPer; ++i) code |= L[i] << (kBits * i);
    return code;
  }
  // kPer values at inverse scale id -> levels, clamped to 0..max_level.
  static void round_levels(const float* x, float id, int max_level, int8_t* L) {
    for (int i = 0; i < kPer; ++i)
      L[i] = static_cast<int8_t>(
          std::max(0, std::min(max_level, nearest_int(0.5f * (id * x[i] - 1)))));
  }
  // The neighbour of an off-grid code that fits x (weights w) best at this scale, level l
  // standing for scale * value[l]; its levels to L. (The first neighbour if no distance
  // compares, as with a NaN input.)
  int best_neighbour(int code, const float* x, const float* w, float scale, const float* value,
                     int8_t* L) const {
    float best_d2 = FLT_MAX;
    int best = near[code].front();
    for (const uint16_t r : near[code]) {
      float d2 = 0;
      for (int i = 0; i < kPer; ++i) {
        const float diff = scale * value[rows[r][i]] - x[i];
        d2 += w[i] * diff * diff;
      }
      if (d2 < best_d2) best_d2 = d2, best = r;
    }
    std::copy(rows[best].begin(), rows[best].end(), L);
    return best;
  }
  // The row of levels L (kPer of them), which must be on the grid.
  int row(const int8_t* L) const {
    const int r = row_of[code_of(L)];
    if (r < 0) throw std::logic_error("grid quantizer left a row off the grid");
    return r;
  }
  // Levels L for x at inverse scale id, moved to the best-fitting grid row at `scale` when
  // off the grid (true: it was on).
  bool snap(const float* x, const float* w, float id, float scale, int max_level, int8_t* L) const {
    round_levels(x, id, max_level, L);
    const int code = code_of(L);
    if (row_of[code] >= 0) return true;
    static constexpr float kOdd[8] = {1, 3, 5, 7, 9, 11, 13, 15};  // level l stands for 2l + 1
    best_neighbour(code, x, w, scale, kOdd, L);
    return false;
  }
};
using Iq3Grid = GridSearch<4, 3>;
using Iq2Grid = GridSearch<8, 2>;

// A grid's search tables, built on first use; n_distances: how many of the smallest squared
// distances an off-grid code's neighbours span (ggml's nwant).
template <typename Grid, const auto& kCodes, int kDistances>
const Grid& grid() {
  static const Grid g(kCodes, kDistances);
  return g;
}

// Where ggml's five searches differ.
struct Variant {
  int group;         // values per scale: 32, or 16 (IQ2_XS, IQ2_S)
  bool even_signs;   // 7 sign bits stored per 8, the 8th by parity (flip the cheapest)
  float zero_below;  // a group whose largest |x| is below this is all zero (0: exactly zero)
  bool qp_start;     // IQ2_XXS: the candidates centre on make_qp_quants' scale, not on max
  int steps;         // candidate inverse scales (2 max_level + 1 + step is) / max, |is| <= steps
  float step;
  enum Refit { kOffGrid, kAllIfOffGrid, kAll } refit;  // which rows are redone at the best scale
  float sigma2_factor;  // the weights' spread term sigma2: factor * mean(x^2)
  float plain_spread;   // without an importance matrix: weight x^2 + plain_spread * sigma2
};

// ggml's make_qp_quants for n values x (|x|, except where the sign parity negated one; not
// all zero), levels 0..nmax, weights w: the best of 9 scales, then up to 5 passes moving
// single levels.
float qp_scale(int n, int nmax, const float* x, const float* w) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  float iscale = static_cast<float>(nmax) / max;
  uint8_t L[32];
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
  const float scale = 1 / iscale;
  float best_mse = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - scale * L[i];
    best_mse += w[i] * diff * diff;
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * static_cast<float>(is) + static_cast<float>(nmax)) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
      const float diff = x[i] - scale_is * static_cast<float>(l);
      mse += w[i] * diff * diff;
    }
    if (mse < best_mse) best_mse = mse, iscale = iscale_is;
  }
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    // A value made negative by the sign parity gives a negative level: the sums take it as
    // it is, the stored byte wraps (ggml keeps both so).
    const int l = std::min(nmax, nearest_int(iscale * x[i]));
    L[i] = static_cast<uint8_t>(l);
    sumlx += w[i] * x[i] * static_cast<float>(l);
    suml2 += w[i] * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      float slx = sumlx - w[i] * x[i] * L[i];
      float sl2 = suml2 - w[i] * L[i] * L[i];
      if (slx > 0 && sl2 > 0) {
        const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
        if (new_l != L[i]) {
          slx += w[i] * x[i] * static_cast<float>(new_l);
          sl2 += w[i] * static_cast<float>(new_l) * static_cast<float>(new_l);
          if (slx * slx * suml2 > sumlx * sumlx * sl2)
            L[i] = static_cast<uint8_t>(new_l), sumlx = slx, suml2 = sl2, ++n_changed;
        }
      }
    }
    if (!n_changed) break;
  }
  return sumlx / suml2;
}

// One group of v.group values: sign bits per 8 (signs), a grid row per kPer values (rows);
// returns the group's scale (0: all zero, and nothing stored).
template <int kPer, int kBits>
float quantize_group(const GridSearch<kPer, kBits>& g, const Variant& v, const float* xb,
                     const float* weight, uint8_t* signs, uint16_t* rows) {
  const int n = v.group, n_rows = n / kPer, max_level = (1 << kBits) - 1 - (kBits == 2 ? 1 : 0);
  const float top = static_cast<float>(2 * max_level + 1);  // the largest odd level
  float xval[32], waux[32];
  int8_t L[32] = {}, Laux[32];
  bool on_grid[8], on_grid_aux[8];
  for (int i = 0; i < n; ++i) waux[i] = std::sqrt(weight[i]);
  for (int k = 0; k < n / 8; ++k) {
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
  for (int i = 1; i < n; ++i) max = std::max(max, xval[i]);
  auto zero = [&] {  // as ggml leaves it: row 0, no signs
    std::fill(rows, rows + n_rows, 0);
    std::fill(signs, signs + n / 8, 0);
    return 0.0f;
  };
  if (max < v.zero_below || max == 0) return zero();
  const int n_levels = max_level + 1;  // ggml's kMaxQ
  float scale = max / top, ref = max;
  if (v.qp_start) {
    scale = qp_scale(n, n_levels + 1, xval, weight);
    ref = scale * static_cast<float>(n_levels);
    if (ref <= 0) return zero();
  }
  auto fit = [&](const int8_t* levels, float& sumqx, float& sumq2) {
    sumqx = 0, sumq2 = 0;
    for (int i = 0; i < n; ++i) {
      const float q = static_cast<float>(2 * levels[i] + 1);
      sumqx += weight[i] * xval[i] * q;
      sumq2 += weight[i] * q * q;
    }
  };
  float best = 0;
  std::fill(on_grid, on_grid + n_rows, v.refit != Variant::kAllIfOffGrid);
  for (int is = -v.steps; is <= v.steps; ++is) {
    const float id = (top + static_cast<float>(is) * v.step) / ref;
    const float this_scale = 1 / id;
    for (int k = 0; k < n_rows; ++k) {
      on_grid_aux[k] =
          g.snap(xval + kPer * k, waux + kPer * k, id, this_scale, max_level, Laux + kPer * k);
    }
    float sumqx, sumq2;
    fit(Laux, sumqx, sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      scale = sumqx / sumq2, best = scale * sumqx;
      std::copy(Laux, Laux + n, L);
      std::copy(on_grid_aux, on_grid_aux + n_rows, on_grid);
    }
  }
  const bool any_off = std::count(on_grid, on_grid + n_rows, false) > 0;
  if ((v.refit == Variant::kAll || any_off) && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < n_rows; ++k) {
      if (v.refit == Variant::kOffGrid && on_grid[k]) continue;
      g.snap(xval + kPer * k, waux + kPer * k, id, scale, max_level, L + kPer * k);
    }
    float sumqx, sumq2;
    fit(L, sumqx, sumq2);
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  if (scale < 0) {  // ggml's guard (not expected): a positive scale, the signs flipped
    scale = -scale;
    for (int k = 0; k < n / 8; ++k)
      signs[k] = static_cast<uint8_t>(~signs[k] & (v.even_signs ? 127 : 255));
  }
  for (int k = 0; k < n_rows; ++k) rows[k] = static_cast<uint16_t>(g.row(L + kPer * k));
  return scale;
}

// A group's sub-scale code under the block's d (2l + 1 steps of d), clamped to 0..max.
uint8_t scale_code(float id, float scale, int max) {
  return static_cast<uint8_t>(std::max(0, std::min(max, nearest_int(0.5f * (id * scale - 1)))));
}

// ggml's spread term sigma2 of a super-block: factor * sum(x^2) / 256.
float spread(const float* xbl, float factor) {
  float sumx2 = 0;
  for (int i = 0; i < kQKK; ++i) sumx2 += xbl[i] * xbl[i];
  return factor * sumx2 / kQKK;
}

// The weights of n values: the importance matrix qw times sqrt(sigma2 + x^2) or, without one,
// x^2 + plain_spread * sigma2.
void group_weights(const float* xb, int n, const float* qw, float sigma2, float plain_spread,
                   float* weight) {
  for (int i = 0; i < n; ++i) {
    if (qw != nullptr) {
      weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
    } else {
      weight[i] = plain_spread == 0 ? xb[i] * xb[i] : plain_spread * sigma2 + xb[i] * xb[i];
    }
  }
}

// A super-block's groups: weights, then quantize_group; store(group, scale, signs, rows)
// packs each. Returns the largest scale.
template <int kPer, int kBits, typename Store>
float quantize_superblock(const GridSearch<kPer, kBits>& g, const Variant& v, const float* xbl,
                          const float* imatrix, float* scales, Store store) {
  const float sigma2 = spread(xbl, v.sigma2_factor);
  float max_scale = 0, weight[32];
  for (int ib = 0; ib < kQKK / v.group; ++ib) {
    const float* xb = xbl + v.group * ib;
    group_weights(xb, v.group, imatrix ? imatrix + v.group * ib : nullptr, sigma2, v.plain_spread,
                  weight);
    uint8_t signs[4];
    uint16_t rows[8];
    scales[ib] = quantize_group(g, v, xb, weight, signs, rows);
    store(ib, signs, rows);
    max_scale = std::max(max_scale, scales[ib]);
  }
  return max_scale;
}

// A row of super-blocks: each zeroed, its groups quantized and packed (store(b, group,
// signs, rows); an all-zero super-block stays zero), then d = max scale / 31 stored as f16
// times ggml's per-type fudge, and each group's 4-bit scale packed (put_scale(b, group, l)).
template <typename Block, typename Grid, typename Store, typename PutScale>
void quantize_blocks(const Grid& g, const Variant& v, float fudge, const float* x, void* vy,
                     int64_t n, const float* imatrix, Store store, PutScale put_scale) {
  auto* y = static_cast<Block*>(vy);
  for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
    Block& b = y[ibl];
    std::memset(&b, 0, sizeof b);
    float scales[16];
    const float max_scale = quantize_superblock(
        g, v, x + kQKK * ibl, imatrix ? imatrix + kQKK * ibl : nullptr, scales,
        [&](int ib, const uint8_t* s, const uint16_t* rows) { store(b, ib, s, rows); });
    if (max_scale == 0) continue;
    const float d = max_scale / 31;
    b.d = fp32_to_fp16(d * fudge);
    const float id = 1 / d;
    for (int ib = 0; ib < kQKK / v.group; ++ib) put_scale(b, ib, scale_code(id, scales[ib], 15));
  }
}

// The little-endian 32-bit word at p |= v (the IQ2_XXS and IQ3_XXS sign/scale words).
void or32(uint8_t* p, uint32_t v) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  w |= v;
  std::memcpy(p, &w, 4);
}
// Two 4-bit scales a byte, the even group's low (IQ2_XS, IQ2_S, IQ3_S).
void put_nibble(uint8_t* scales, int ib, uint8_t l) {
  scales[ib / 2] = static_cast<uint8_t>(scales[ib / 2] | l << (4 * (ib % 2)));
}

// IQ1_S and IQ1_M: rows of 8 values at three levels, -1, 0 and +1, all shifted by +delta or
// all by -delta (a shift bit per 32 values in IQ1_S, per 8 in IQ1_M). Per group an exact
// search: with the values sorted, every split into a low, middle and high run and every
// choice of shifts is scored; then each row off the 2048-row grid moves to its best-fitting
// neighbour and the scale is refitted.
constexpr float kIq1Plus[3] = {-1 + kIq1sDelta, kIq1sDelta, 1 + kIq1sDelta};
constexpr float kIq1Minus[3] = {-1 - kIq1sDelta, -kIq1sDelta, 1 - kIq1sDelta};

const Iq2Grid& iq1_grid() {  // level = value + 1; neighbours at the 3 nearest distances
  static const Iq2Grid g = [] {
    std::vector<uint16_t> code(2048);
    for (int r = 0; r < 2048; ++r) {
      for (int i = 0; i < 8; ++i)
        code[r] = static_cast<uint16_t>(code[r] | (static_cast<int8_t>(kIq1sGrid[r] >> (8 * i)) + 1)
                                                      << (2 * i));
    }
    return Iq2Grid(code.data(), 2048, 2, 3);
  }();
  return g;
}

// A group of n values in `halves` (1: IQ1_S, 2: IQ1_M) that each take a shift. shift bit
// (halves - 1 - h) set: half h uses -delta (IQ1_M's order: bit 1 the first half).
struct Iq1Group {
  float scale = 0;  // 0: the group is zero, row 0, shift +
  int shift = 0;
  int8_t L[32] = {};
  uint16_t rows[4] = {};
};

const float* iq1_values(int shift, int halves, int half) {
  return (shift >> (halves - 1 - half)) & 1 ? kIq1Minus : kIq1Plus;
}

// ggml's search in its float order. IQ1_S scores a split from prefix sums over the sorted
// values (prefix_sums), IQ1_M sums each split's products afresh; the bits differ, so both are
// kept.
Iq1Group quantize_iq1_group(int n, int halves, bool prefix_sums, float zero_below, const float* xb,
                            const float* weight) {
  Iq1Group out;
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, std::fabs(xb[i]));
  if (!(max >= zero_below)) return out;
  int order[32];
  for (int i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order, order + n,
                   [&](int a, int b) {  // ascending, a NaN last (a strict weak order)
                     return !std::isnan(xb[a]) && (std::isnan(xb[b]) || xb[a] < xb[b]);
                   });
  float sumx[33] = {}, sumw[33] = {};
  for (int j = 0; j < n; ++j) {
    sumx[j + 1] = sumx[j] + weight[order[j]] * xb[order[j]];
    sumw[j + 1] = sumw[j] + weight[order[j]];
  }
  const int n_shifts = 1 << halves;
  float best = -FLT_MAX, scale = max;
  int best1 = -1, best2 = -1, best_shift = -1;
  for (int i1 = 0; i1 <= n; ++i1) {
    for (int i2 = i1; i2 <= n; ++i2) {
      for (int k = 0; k < n_shifts; ++k) {
        float sumqx = 0, sumq2 = 0;
        if (prefix_sums) {
          const float* v = iq1_values(k, halves, 0);
          sumqx = (sumx[i1] - sumx[0]) * v[0] + (sumx[i2] - sumx[i1]) * v[1] +
                  (sumx[n] - sumx[i2]) * v[2];
          sumq2 = (sumw[i1] - sumw[0]) * v[0] * v[0] + (sumw[i2] - sumw[i1]) * v[1] * v[1] +
                  (sumw[n] - sumw[i2]) * v[2] * v[2];
        } else {
          for (int j = 0; j < n; ++j) {
            const int i = order[j];
            const float q = iq1_values(k, halves, i * halves / n)[j < i1 ? 0 : j < i2 ? 1 : 2];
            sumqx += weight[i] * q * xb[i];
            sumq2 += weight[i] * q * q;
          }
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2)
          scale = sumqx / sumq2, best = scale * sumqx, best1 = i1, best2 = i2, best_shift = k;
      }
    }
  }
  if (best_shift < 0) return out;  // nothing scored (all weights zero)
  for (int j = 0; j < n; ++j)
    out.L[order[j]] = static_cast<int8_t>(j < best1 ? 0 : j < best2 ? 1 : 2);
  if (scale < 0) {  // the mirror split: levels and shifts flipped
    for (int i = 0; i < n; ++i) out.L[i] = static_cast<int8_t>(2 - out.L[i]);
    scale = -scale, best_shift ^= n_shifts - 1;
  }
  const Iq2Grid& g = iq1_grid();
  bool all_on_grid = true;
  for (int k = 0; k < n / 8; ++k) {
    int8_t* L = out.L + 8 * k;
    const int code = Iq2Grid::code_of(L);
    if (g.row_of[code] >= 0) {
      out.rows[k] = static_cast<uint16_t>(g.row_of[code]);
    } else {
      all_on_grid = false;
      out.rows[k] = static_cast<uint16_t>(
          g.best_neighbour(code, xb + 8 * k, weight + 8 * k, scale,
                           iq1_values(best_shift, halves, 8 * k * halves / n), L));
    }
  }
  if (!all_on_grid) {
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < n; ++i) {
      const float q = iq1_values(best_shift, halves, i * halves / n)[out.L[i]];
      sumqx += weight[i] * q * xb[i];
      sumq2 += weight[i] * q * q;
    }
    if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
  }
  out.scale = scale, out.shift = best_shift;
  return out;
}

// A super-block's IQ1 groups of kGroup values (32: IQ1_S, one shift a group, scored from
// prefix sums; 16: IQ1_M, a shift per 8); their weights to weight[256]. Returns the largest
// scale.
template <int kGroup>
float iq1_superblock(const float* xbl, const float* imatrix, float zero_below, Iq1Group* groups,
                     float* weight) {
  const float sigma2 = spread(xbl, 2.0f);
  float max_scale = 0;
  for (int ib = 0; ib < kQKK / kGroup; ++ib) {
    float* w = weight + kGroup * ib;
    group_weights(xbl + kGroup * ib, kGroup, imatrix ? imatrix + kGroup * ib : nullptr, sigma2,
                  0.0f, w);
    groups[ib] = quantize_iq1_group(kGroup, kGroup == 32 ? 1 : 2, kGroup == 32, zero_below,
                                    xbl + kGroup * ib, w);
    max_scale = std::max(max_scale, groups[ib].scale);
  }
  return max_scale;
}

}  // namespace

void quantize_iq3_xxs(const float* x, void* vy, int64_t n, const float* imatrix) {
  static constexpr Variant kV{32, true, 1e-8f, false, 15, 0.2f, Variant::kOffGrid, 2.0f, 0.0f};
  // qs: 8 grid bytes a group, then a word per group: four 7-bit sign fields, the scale on top
  quantize_blocks<BlockIQ3_XXS>(
      grid<Iq3Grid, kIq3xxsCodes, 2>(), kV, 1.0125f, x, vy, n, imatrix,
      [](BlockIQ3_XXS& b, int ib, const uint8_t* s, const uint16_t* rows) {
        for (int k = 0; k < 8; ++k) b.qs[8 * ib + k] = static_cast<uint8_t>(rows[k]);
        or32(b.qs + 64 + 4 * ib, s[0] | s[1] << 7 | s[2] << 14 | static_cast<uint32_t>(s[3]) << 21);
      },
      [](BlockIQ3_XXS& b, int ib, uint8_t l) {
        or32(b.qs + 64 + 4 * ib, static_cast<uint32_t>(l) << 28);
      });
}

void quantize_iq3_s(const float* x, void* vy, int64_t n, const float* imatrix) {
  static constexpr Variant kV{32, false, 0.0f, false, 9, 0.2f, Variant::kAllIfOffGrid, 2.0f, 0.0f};
  quantize_blocks<BlockIQ3_S>(
      grid<Iq3Grid, kIq3sCodes, 3>(), kV, 1.033f, x, vy, n, imatrix,
      [](BlockIQ3_S& b, int ib, const uint8_t* s, const uint16_t* rows) {
        std::memcpy(b.signs + 4 * ib, s, 4);
        for (int k = 0; k < 8; ++k) {
          b.qs[8 * ib + k] = static_cast<uint8_t>(rows[k]);
          b.qh[ib] = static_cast<uint8_t>(b.qh[ib] | (rows[k] >> 8) << k);
        }
      },
      [](BlockIQ3_S& b, int ib, uint8_t l) { put_nibble(b.scales, ib, l); });
}

void quantize_iq2_xxs(const float* x, void* vy, int64_t n, const float* imatrix) {
  static constexpr Variant kV{32, true, 1e-15f, true, 6, 0.1f, Variant::kAll, 1.0f, 0.0f};
  if (imatrix == nullptr) throw std::invalid_argument("IQ2_XXS needs an importance matrix");
  // per group two words: 4 grid bytes; four 7-bit sign fields and the scale on top
  quantize_blocks<BlockIQ2_XXS>(
      grid<Iq2Grid, kIq2xxsCodes, 2>(), kV, 1.0f, x, vy, n, imatrix,
      [](BlockIQ2_XXS& b, int ib, const uint8_t* s, const uint16_t* rows) {
        auto* q = reinterpret_cast<uint8_t*>(b.qs) + 8 * ib;
        for (int k = 0; k < 4; ++k) q[k] = static_cast<uint8_t>(rows[k]);
        or32(q + 4, s[0] | s[1] << 7 | s[2] << 14 | static_cast<uint32_t>(s[3]) << 21);
      },
      [](BlockIQ2_XXS& b, int ib, uint8_t l) {
        or32(reinterpret_cast<uint8_t*>(b.qs) + 8 * ib + 4, static_cast<uint32_t>(l) << 28);
      });
}

void quantize_iq2_xs(const float* x, void* vy, int64_t n, const float* imatrix) {
  static constexpr Variant kV{16, true, 1e-15f, false, 9, 0.1f, Variant::kOffGrid, 1.0f, 0.0f};
  if (imatrix == nullptr) throw std::invalid_argument("IQ2_XS needs an importance matrix");
  quantize_blocks<BlockIQ2_XS>(
      grid<Iq2Grid, kIq2xsCodes, 2>(), kV, 1.0f, x, vy, n, imatrix,
      [](BlockIQ2_XS& b, int ib, const uint8_t* s,
         const uint16_t* rows) {  // 9-bit row, 7 sign bits
        for (int k = 0; k < 2; ++k) b.qs[2 * ib + k] = static_cast<uint16_t>(rows[k] | s[k] << 9);
      },
      [](BlockIQ2_XS& b, int ib, uint8_t l) { put_nibble(b.scales, ib, l); });
}

void quantize_iq2_s(const float* x, void* vy, int64_t n, const float* imatrix) {
  static constexpr Variant kV{16, false, 1e-8f, false, 9, 0.1f, Variant::kOffGrid, 2.0f, 0.25f};
  quantize_blocks<BlockIQ2_S>(
      grid<Iq2Grid, kIq2sCodes, 1>(), kV, 0.9875f, x, vy, n, imatrix,
      [](BlockIQ2_S& b, int ib, const uint8_t* s, const uint16_t* rows) {
        for (int k = 0; k < 2; ++k) {
          const int r = 2 * ib + k;  // grid bytes, then sign bytes
          b.qs[r] = static_cast<uint8_t>(rows[k]);
          b.qh[r / 4] = static_cast<uint8_t>(b.qh[r / 4] | (rows[k] >> 8) << (2 * (r % 4)));
          b.qs[32 + r] = s[k];
        }
      },
      [](BlockIQ2_S& b, int ib, uint8_t l) { put_nibble(b.scales, ib, l); });
}

void quantize_iq1_s(const float* x, void* vy, int64_t n, const float* imatrix) {
  if (imatrix == nullptr) throw std::invalid_argument("IQ1_S needs an importance matrix");
  auto* y = static_cast<BlockIQ1_S*>(vy);
  for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
    BlockIQ1_S& b = y[ibl];
    std::memset(&b, 0, sizeof b);
    Iq1Group groups[8];
    float weight[kQKK];
    const float max_scale =
        iq1_superblock<32>(x + kQKK * ibl, imatrix + kQKK * ibl, 1e-12f, groups, weight);
    if (max_scale == 0) continue;  // all groups zero
    const float d = max_scale / 15;
    b.d = fp32_to_fp16(d * 1.125f);  // ggml's fudge factor
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib) {
      const Iq1Group& q = groups[ib];
      for (int k = 0; k < 4; ++k) {  // 8 low row bits in qs, 3 high ones a row in qh
        b.qs[4 * ib + k] = static_cast<uint8_t>(q.rows[k]);
        b.qh[ib] = static_cast<uint16_t>(b.qh[ib] | (q.rows[k] >> 8) << (3 * k));
      }
      const int l =
          scale_code(id, q.scale, 7) | (q.shift ? 8 : 0);  // 3-bit scale, the shift on top
      b.qh[ib] = static_cast<uint16_t>(b.qh[ib] | l << 12);
    }
  }
}

void quantize_iq1_m(const float* x, void* vy, int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockIQ1_M*>(vy);
  for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
    const float* xbl = x + kQKK * ibl;
    BlockIQ1_M& b = y[ibl];
    std::memset(&b, 0, sizeof b);
    Iq1Group groups[16];
    float weight[kQKK];
    const float max_scale =
        iq1_superblock<16>(xbl, imatrix ? imatrix + kQKK * ibl : nullptr, 1e-7f, groups, weight);
    if (max_scale == 0) continue;
    // 3-bit scales against d = max / 15, then d refitted over the whole super-block
    float d = max_scale / 15;
    const float id = 1 / d;
    uint16_t sc[4] = {};
    float sumqx = 0, sumq2 = 0;
    for (int ib = 0; ib < 16; ++ib) {
      const Iq1Group& q = groups[ib];
      const int l = scale_code(id, q.scale, 7);
      sc[ib / 4] = static_cast<uint16_t>(sc[ib / 4] | l << (3 * (ib % 4)));
      for (int k = 0; k < 2;
           ++k) {  // per row: 8 low row bits, 3 high ones and the shift in a nibble
        b.qs[2 * ib + k] = static_cast<uint8_t>(q.rows[k]);
        const int minus = (q.shift >> (1 - k)) & 1;
        b.qh[ib] = static_cast<uint8_t>(b.qh[ib] | ((q.rows[k] >> 8) | minus << 3) << (4 * k));
      }
      for (int i = 0; i < 16; ++i) {
        const float v = iq1_values(q.shift, 2, i / 8)[q.L[i]] * static_cast<float>(2 * l + 1);
        sumqx += weight[16 * ib + i] * v * xbl[16 * ib + i];
        sumq2 += weight[16 * ib + i] * v * v;
      }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    const uint16_t d16 = fp32_to_fp16(d * 1.1125f);  // ggml's fudge factor
    for (int k = 0; k < 4; ++k)
      sc[k] = static_cast<uint16_t>(sc[k] | ((d16 >> (4 * k)) & 15) << 12);
    std::memcpy(b.scales, sc, sizeof sc);
  }
}

void quantize_row_iq1_m(const float* x, void* y, int64_t n) { quantize_iq1_m(x, y, n, nullptr); }
void quantize_row_iq2_s(const float* x, void* y, int64_t n) { quantize_iq2_s(x, y, n, nullptr); }
void quantize_row_iq3_xxs(const float* x, void* y, int64_t n) {
  quantize_iq3_xxs(x, y, n, nullptr);
}
void quantize_row_iq3_s(const float* x, void* y, int64_t n) { quantize_iq3_s(x, y, n, nullptr); }

}  // namespace qinfer::ref
