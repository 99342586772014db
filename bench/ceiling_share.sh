#!/usr/bin/env bash
# Each type's gemv from memory as a share of the read-bandwidth ceiling, on a shared, noisy
# machine: the ceiling and the type's gemv_big are run back to back, ROUNDS times, and the
# median of the per-round ratios is printed (with the median GB/s of both), so that a slow
# moment of the machine moves both sides of a ratio alike.
#
#   bench/ceiling_share.sh [bench_kernels] [isa] [rounds] [types...]
#   bench/ceiling_share.sh build/release/bin/bench_kernels avx512 7 iq2_xxs iq1_s
set -euo pipefail
bin=${1:-build/release/bin/bench_kernels}
isa=${2:-avx512}
rounds=${3:-7}
shift $(( $# < 3 ? $# : 3 ))
types=("$@")
if [ ${#types[@]} -eq 0 ]; then
  types=(iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m iq4_nl iq4_xs tq1_0 tq2_0 mxfp4)
fi

gbs() {  # benchmark filter -> GB/s of its one run
  "$bin" --benchmark_filter="$1" --benchmark_min_time=0.3 2>/dev/null |
    sed -n 's/.*bytes_per_second=\([0-9.]*\)G\/s.*/\1/p' | head -1
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

printf '%-8s %9s %9s %7s   (median of %d rounds, %s, 2 threads)\n' type 'gemv GB/s' 'ceil GB/s' share "$rounds" "$isa"
for t in "${types[@]}"; do
  ratios=() gemv=() ceil=()
  for ((r = 0; r < rounds; ++r)); do
    c=$(gbs '^read_bandwidth/144MiB/2/')
    g=$(gbs "^gemv_big/$t/$isa/2/")
    ceil+=("$c") gemv+=("$g")
    ratios+=("$(awk -v g="$g" -v c="$c" 'BEGIN {print g / c}')")
  done
  printf '%-8s %9.1f %9.1f %6.0f%%\n' "$t" \
    "$(printf '%s\n' "${gemv[@]}" | median)" "$(printf '%s\n' "${ceil[@]}" | median)" \
    "$(printf '%s\n' "${ratios[@]}" | median | awk '{print 100 * $1}')"
done
