#!/usr/bin/env python3
"""qinfer-perplexity's KL divergence against llama-perplexity's on the same two models and text
(tests/data/quant/kld.json): a model against itself is 0 with the same top token
everywhere; Q4_0 against Q4_K_S matches llama.cpp's mean KLD (within 3%, where the two stores of
the base differ: llama.cpp keeps 16-bit log-probabilities), median, same-top share and PPLs.

Usage: kld_check.py BIN_DIR DATA_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

from checks import check, summary


def stats(out):
    s = {}
    for line in out.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            s[key.strip()] = float(value.split()[0].rstrip("%"))
            if "+/-" in value:
                s[key.strip() + " error"] = float(value.split()[2])
    return s


def main():
    bin_dir, data = sys.argv[1], sys.argv[2]
    ref = json.load(open(os.path.join(data, "quant/kld.json")))
    ppl = os.path.join(bin_dir, "qinfer-perplexity")
    model = lambda name: os.path.join(data, "models", name)
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base.kld")
        r = subprocess.run([ppl, "-m", model(ref["base"]), "-f",
                            os.path.join(data, "models/reference", ref["text"]), "-c",
                            str(ref["ctx"]), "--chunks", str(ref["chunks"]),
                            "--kl-divergence-base", base], capture_output=True, text=True)
        check("the base run saves its log-probabilities", r.returncode == 0
              and os.path.exists(base), r.stderr[-300:])
        kld = lambda m, *a: subprocess.run([ppl, "-m", model(m), "--kl-divergence",
                                            "--kl-divergence-base", base, *a],
                                           capture_output=True, text=True)
        r = kld(ref["base"])
        s = stats(r.stdout)
        check("a model against itself: KLD 0, the same top token, PPL ratio 1",
              r.returncode == 0 and s["Mean KLD"] == 0 and s["Max KLD"] == 0
              and s["Same top token"] == 100 and s["PPL ratio"] == 1, r.stdout + r.stderr[-300:])
        r = kld(ref["model"], "-b", "32")
        s = stats(r.stdout)
        ok = r.returncode == 0
        check("Q4_0 vs Q4_K_S: llama.cpp's mean KLD within 3%", ok
              and abs(s["Mean KLD"] - ref["mean_kld"]) <= 0.03 * ref["mean_kld"],
              f"{s.get('Mean KLD')} vs {ref['mean_kld']}")
        check("... its median within 3%, its standard error within 10%", ok
              and abs(s["Median KLD"] - ref["median_kld"]) <= 0.03 * ref["median_kld"]
              and abs(s["Mean KLD error"] - ref["mean_kld_error"]) <= 0.1 * ref["mean_kld_error"],
              f"{s}")
        check("... the same top token within 1.5 points", ok
              and abs(s["Same top token"] - ref["same_top_percent"]) <= 1.5, f"{s}")
        check("... PPL(Q) and PPL(base) within 0.5%, PPL's error within 2%", ok
              and abs(s["PPL"] - ref["ppl_q"]) <= 0.005 * ref["ppl_q"]
              and abs(s["PPL(base)"] - ref["ppl_base"]) <= 0.005 * ref["ppl_base"]
              and abs(s["PPL error"] - ref["ppl_q_error"]) <= 0.02 * ref["ppl_q_error"], f"{s}")
        r = subprocess.run([ppl, "-m", model(ref["model"]), "--kl-divergence"],
                           capture_output=True, text=True)
        check("--kl-divergence without a base file: one error line", r.returncode == 1
              and r.stderr.startswith("error: "), r.stderr)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
