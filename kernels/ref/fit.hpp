// ggml's level-fitting searches (ggml-quants.c's make_*_quants), byte-exact: each picks integer
// levels L for the n values x and returns the scale (and, for the qkx forms, the min).
#pragma once

#include <cstdint>

namespace qinfer::ref {

// Symmetric levels -nmax..nmax-1 (stored + nmax); rmse_type 1 weighs each element by x^2, or
// by qw[i] when qw is given (an importance matrix).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type,
                     const float* qw = nullptr);
// Q3_K's search: symmetric levels refined one at a time (stored + nmax).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L);
// A scale and a min for levels 0..nmax; weights null means x^2. *the_min receives -min.
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);
// The same with weights always given (ggml's make_qkx2_quants).
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);
// Levels 0..nmax of non-negative x under one scale, fitted to quant_weights (super-block scales).
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights);
// An imatrix quantizer's weights: w[j] = qw[j] * sqrt(sigma2 + x[j]^2).
void imatrix_weights(const float* x, const float* qw, float sigma2, int n, float* w);
// Sum of x[j]^2 in order, in float (as ggml sums).
float sum_squares(const float* x, int64_t n);

}  // namespace qinfer::ref
