#!/usr/bin/env python3
"""qinfer-perplexity against llama.cpp's reference PPL (models/reference/*.json) within 0.5%,
and for the architecture files (models/arch/reference/*.json) within 1%.

Usage: ppl_check.py PERPLEXITY_BINARY DATA_DIR [SHARED_DIR]
Checks the vendored models always, and every model of SHARED_DIR/models when it exists.
"""
import json
import os
import subprocess
import sys


def main():
    binary, data = sys.argv[1], sys.argv[2]
    roots = [(os.path.join(data, "models"), 0.005), (os.path.join(data, "models", "arch"), 0.01)]
    if len(sys.argv) > 3 and os.path.isdir(os.path.join(sys.argv[3], "models")):
        roots += [(os.path.join(sys.argv[3], "models"), 0.005), (os.path.join(sys.argv[3], "models", "arch"), 0.01)]
    else:
        print("shared models not found: checking vendored models only")
    seen, failed, passed = set(), 0, 0
    for root, tolerance in roots:
        ref_dir = os.path.join(root, "reference")
        if not os.path.isdir(ref_dir):
            continue
        for name in sorted(os.listdir(ref_dir)):
            if not name.endswith(".json") or name in seen:
                continue
            ref = json.load(open(os.path.join(ref_dir, name)))
            if "ppl" not in ref:  # another tool's reference (kld.json)
                continue
            model = os.path.join(root, ref["model"])
            if not os.path.exists(model):
                continue
            seen.add(name)
            p = ref["ppl"]
            out = subprocess.run([binary, "-m", model, "-f", os.path.join(ref_dir, p["text"]),
                                  "-c", str(p["ctx"]), "--chunks", str(p["chunks"])],
                                 capture_output=True, text=True)
            last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
            if out.returncode != 0 or not last.startswith("PPL = "):
                print(f"FAIL {ref['model']}: {out.stderr.strip()}")
                failed += 1
                continue
            got = float(last.split()[2])  # "PPL = <value> +/- <error>"
            rel = abs(got - p["value"]) / p["value"]
            ok = rel <= tolerance
            print(f"{'ok  ' if ok else 'FAIL'} {ref['model']}: {got:.4f} vs {p['value']:.4f} ({rel * 100:.3f}%)")
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
