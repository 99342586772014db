#!/usr/bin/env python3
"""qinfer-bench against llama-bench on the same files, interleaved, one Markdown table.

The machine is shared and noisy, so the two engines run one right after the other for each
model and each round (the order alternates between rounds), and a ratio is taken only
between numbers of one sitting. Each cell is the best of the rounds' means (the least
disturbed run of either engine).

With --ceiling BENCH_KERNELS and --gguf-info QINFER_GGUF, the read ceiling
(`read_bandwidth/2048MiB/2`) is measured right before and right after each model's runs, and
three columns follow: the higher of the two ceilings, qinfer's generation in GB/s (the file's
bytes of every tensor but token_embd, read once per token, times its best tg) and its share
of that ceiling. The machine's bandwidth moves between states, so a share is only as good as
the ceiling beside it. A last column, "share read", counts the bytes a token actually reads
(qinfer-bench's weights_read_bytes: packed copies where the loader made them, which for the
grid IQ types and IQ1 are larger than the file's blocks).

With --steady TOL as well, every engine run is bracketed by two ceilings, and a run whose
two ceilings differ by more than TOL (relative, e.g. 0.1) is thrown away and run again, up to
--retries times (the last one is kept then). The ceiling column is then the
ceiling around qinfer's best run, and a ratio whose two runs saw ceilings more than TOL apart
is marked `*` (the engines ran in different states). Runs that kept changing state are
counted in the last column.

With --own-pages, qinfer-bench runs with --ceiling: it times the threads streaming the very
pages a token reads, right before and right after its generation runs, and a column "own
pages" gives the share of that ceiling its best generation run reached. On a VM some physical
regions stream slower than others (docs/kernels.md, "The pages' own ceiling"), so this share
does not depend on where the weights landed.

  bench/side_by_side.py --llama-bench ../shared/tools/llama.cpp/bin/llama-bench \\
      --qinfer-bench build/release/bin/qinfer-bench -p 512 -n 128 -t 2 -r 2 --rounds 2 M1 M2 ...
"""
import argparse
import json
import os
import re
import subprocess
import sys


def run(cmd, own=None):
    """Each test's mean t/s, and qinfer's weight bytes a token reads (0 for llama-bench).
    own, a dict: each test's share of its own pages' ceiling (qinfer-bench --ceiling)."""
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows, read = {}, 0
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        key = ("pp", r["n_prompt"]) if r["n_gen"] == 0 else ("tg", r["n_gen"])
        rows[key] = r["avg_ts"]
        read = r.get("weights_read_bytes", read)
        if own is not None and "share_of_ceiling" in r:
            own[key] = r["share_of_ceiling"]
    return rows, read


def ceiling_gbs(bench_kernels):
    out = subprocess.run([bench_kernels, "--benchmark_filter=read_bandwidth/2048MiB/2/"],
                         check=True, capture_output=True, text=True).stdout
    # the best prefetch kind's rate, GB/s (10^9), as bench_kernels reports the ceiling
    return max((float(v) for v in re.findall(r"GB/s_(?:ahead|nta)[0-9]+=([0-9.]+)", out)),
               default=0.0)


def weight_bytes(gguf_info, model):
    """Bytes of every tensor but the token embedding (read a row per token)."""
    out = subprocess.run([gguf_info, "info", model], check=True, capture_output=True,
                         text=True).stdout
    total = 0
    for line in out.splitlines():
        f = line.split()
        if line.startswith("  ") and "size" in f and f[0] != "token_embd.weight":
            total += int(f[f.index("size") + 1])
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--qinfer-bench", required=True)
    ap.add_argument("-p", default="512")
    ap.add_argument("-n", default="128")
    ap.add_argument("-t", default="2")
    ap.add_argument("-r", default="2", help="repetitions inside one engine run")
    ap.add_argument("--rounds", type=int, default=1, help="engine runs per model, alternating")
    ap.add_argument("--ceiling", help="bench_kernels, to measure the read ceiling per model")
    ap.add_argument("--gguf-info", help="qinfer-gguf, for the weights' bytes (with --ceiling)")
    ap.add_argument("--steady", type=float, default=0.0,
                    help="with --ceiling: rerun an engine run whose bracketing ceilings differ "
                         "by more than this fraction")
    ap.add_argument("--retries", type=int, default=3, help="reruns per engine run (--steady)")
    ap.add_argument("--own-pages", action="store_true",
                    help="qinfer-bench --ceiling: the share of its own pages' read ceiling")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    common = ["-p", a.p, "-n", a.n, "-t", a.t, "-r", a.r, "-o", "jsonl"]
    tests = [("pp", int(v)) for v in a.p.split(",") if int(v) > 0] + \
            [("tg", int(v)) for v in a.n.split(",") if int(v) > 0]
    head = ["model"]
    for kind, size in tests:
        head += [f"llama.cpp {kind}{size}", f"qinfer {kind}{size}", "ratio"]
    tg = next((k for k in tests if k[0] == "tg"), None)
    shares = a.ceiling and a.gguf_info and tg
    steady = a.steady > 0 and a.ceiling
    if shares:
        head += ["ceiling GB/s", "qinfer GB/s", "share", "share read"]
    if a.own_pages and tg:
        head += ["own pages"]
    if steady:
        head += ["unsteady runs"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    sys.stdout.flush()
    for m in a.models:
        best = {"llama": {}, "qinfer": {}}
        seen = {"llama": {}, "qinfer": {}}  # the ceiling around each best value's run
        unsteady = 0
        read = 0  # qinfer's weights_read_bytes
        own, own_best = {}, {}  # qinfer's share of its own pages' ceiling: a run's, the best run's
        ceiling = ceiling_gbs(a.ceiling) if shares and not steady else 0.0
        for rnd in range(a.rounds):
            order = ["llama", "qinfer"] if rnd % 2 == 0 else ["qinfer", "llama"]
            for eng in order:
                exe = a.llama_bench if eng == "llama" else a.qinfer_bench
                for attempt in range(a.retries + 1 if steady else 1):
                    before = ceiling_gbs(a.ceiling) if steady else 0.0
                    own_pages = eng == "qinfer" and a.own_pages
                    rows, r = run([exe, "-m", m] + common + (["--ceiling"] if own_pages else []),
                                  own)
                    read = r or read
                    after = ceiling_gbs(a.ceiling) if steady else 0.0
                    if not steady or abs(before - after) <= a.steady * max(before, after):
                        break
                    unsteady += 1
                for k, v in rows.items():
                    if v > best[eng].get(k, 0.0):
                        best[eng][k] = v
                        seen[eng][k] = (before + after) / 2
                        if eng == "qinfer" and k in own:
                            own_best[k] = own[k]
        cells = [os.path.basename(m)]
        for k in tests:
            lv, qv = best["llama"].get(k), best["qinfer"].get(k)
            ratio = f"{qv / lv:.2f}×" if lv and qv else "-"
            if steady and lv and qv:
                cl, cq = seen["llama"][k], seen["qinfer"][k]
                if abs(cl - cq) > a.steady * max(cl, cq):
                    ratio += " *"
            cells += [f"{lv:.1f}" if lv else "-", f"{qv:.1f}" if qv else "-", ratio]
        if shares:
            if steady:
                ceiling = seen["qinfer"].get(tg, 0.0)
            else:
                ceiling = max(ceiling, ceiling_gbs(a.ceiling))
            gbs = weight_bytes(a.gguf_info, m) * best["qinfer"].get(tg, 0.0) / 1e9
            read_gbs = read * best["qinfer"].get(tg, 0.0) / 1e9
            cells += [f"{ceiling:.1f}", f"{gbs:.1f}",
                      f"{100 * gbs / ceiling:.0f}%" if ceiling else "-",
                      f"{100 * read_gbs / ceiling:.0f}%" if ceiling and read else "-"]
        if a.own_pages and tg:
            cells += [f"{100 * own_best[tg]:.0f}%" if tg in own_best else "-"]
        if steady:
            cells += [str(unsteady)]
        print("| " + " | ".join(cells) + " |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
