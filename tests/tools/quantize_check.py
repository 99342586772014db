#!/usr/bin/env python3
"""qinfer-quantize against llama-quantize's files.

Always (tests/data): flags and refusals; llama.cpp's recipes (Q2_K .. Q6_K mixtures, IQ3_XS,
IQ3_M, IQ4 ...) re-encoding wp-llama-Q4_0 and wp-gpt2-Q4_0 give every tensor the type and bytes
llama-quantize gave (quant/recipes.json); a requantized file is one `run` loads.
With ../shared/models (skipped, and said so, when absent): every `--pure --imatrix` file there
re-made from the f32 model: every tensor's type and bytes identical, and the same metadata in
the same order (quantize.imatrix.file names the file as given). The IQ2_S/IQ2_XXS/IQ2_XS/IQ1_S
files were made with an imatrix that also covers output.weight (wp-llama-po.imatrix, not
shared): they are re-made with --leave-output-tensor and --token-embedding-type q4_K (as they
were made) and compared without output.weight. With ../shared/tools/llama.cpp as well: recipes
with an importance matrix, against llama-quantize run side by side.

Usage: quantize_check.py BIN_DIR DATA_DIR [SHARED_MODELS_DIR]
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import gguf_read
from checks import check, summary

LLAMA = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q4_K_S",
         "Q5_K_S", "Q6_K", "IQ4_NL", "IQ4_XS", "IQ3_XXS", "IQ3_S", "IQ1_M", "TQ1_0", "TQ2_0"]
LLAMA_PO = {"IQ2_XXS": "IQ2_XXS", "IQ2_XS": "IQ2_XS", "IQ1_S": "IQ1_S", "IQ2_S": "IQ2_M"}
GPT2 = ["F16", "Q8_0", "Q4_0", "Q5_1", "Q4_K_S", "Q6_K", "IQ4_NL", "Q2_K", "IQ3_S"]


def compare(ref_path, got_path, skip=()):
    _, ma, ta = gguf_read.read(ref_path)
    _, mb, tb = gguf_read.read(got_path)
    bad = [n for n in ta if n not in skip and (n not in tb or ta[n][0] != tb[n][0]
                                                or ta[n][2] != tb[n][2])]
    keys = lambda m: [k for k in m if k not in ("quantize.imatrix.file",
                                                 "quantize.imatrix.entries_count")]
    meta_ok = keys(ma) == keys(mb) and all(ma[k] == mb[k] for k in keys(ma))
    if not skip:
        meta_ok = meta_ok and ma.get("quantize.imatrix.entries_count") == mb.get(
            "quantize.imatrix.entries_count")
    return not bad and meta_ok and set(ta) == set(tb), f"tensors differing: {bad[:5]}, " \
        f"metadata equal: {meta_ok}"


def main():
    bin_dir, data = sys.argv[1], sys.argv[2]
    shared = sys.argv[3] if len(sys.argv) > 3 else os.path.join(data, "../../../shared/models")
    q = os.path.join(bin_dir, "qinfer-quantize")
    run = lambda *a: subprocess.run([q, *a], capture_output=True, text=True)
    small = os.path.join(data, "models/stories260K.gguf")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.gguf")
        # llama.cpp's recipes: every tensor's type and bytes as llama-quantize's (recipes.json).
        golden = json.load(open(os.path.join(data, "quant/recipes.json")))
        for model_file, per_type in sorted(golden.items()):
            bad = []
            for t, want in sorted(per_type.items()):
                got_path = os.path.join(tmp, "recipe.gguf")
                r = run("--allow-requantize", os.path.join(data, "models", model_file), got_path, t)
                if r.returncode != 0:
                    bad.append(f"{t}: {r.stderr[-200:]}")
                    continue
                _, _, tensors = gguf_read.read(got_path)
                got = {n: [ty, hashlib.sha256(d).hexdigest()[:16]] for n, (ty, _, d) in tensors.items()}
                if got != want:
                    bad.append(f"{t}: " + str([n for n in want if got.get(n) != want[n]][:4]))
                os.unlink(got_path)
            check(f"{model_file}: {len(per_type)} recipes (Q2_K..Q6_K, IQ3_XS/M, IQ4 ...) give "
                  "llama-quantize's tensor types and bytes", not bad, "; ".join(bad)[:600])
        r = run(small, out, "Q9_X", "--pure")
        check("an unknown type: one error line naming the types", r.returncode == 1
              and r.stderr.startswith("error: unknown type") and "IQ4_XS" in r.stderr, r.stderr)
        q4 = os.path.join(data, "models/wp-llama-Q4_0.gguf")
        r = run("--pure", "--allow-requantize", q4, out, "IQ2_XXS")
        check("IQ2_XXS without an importance matrix is refused", r.returncode == 1
              and "importance matrix" in r.stderr and not os.path.exists(out), r.stderr)
        r = run("--pure", small, out, "Q4_0")
        check("rows that do not split into the type's blocks are refused (stories260K's 172)",
              r.returncode == 1 and "do not split" in r.stderr and not os.path.exists(out),
              r.stderr[-300:])
        r = run("--pure", small, out, "Q4_K_S")
        ok = r.returncode == 0 and os.path.exists(out)
        check("... or fall back as llama.cpp does (Q4_K -> Q5_0 -> F16)", ok
              and "using f16" in r.stderr, r.stderr[-300:])
        os.unlink(out)
        r = run("--pure", q4, out, "Q8_0")
        check("requantizing needs --allow-requantize", r.returncode == 1
              and "--allow-requantize" in r.stderr, r.stderr)
        r = run("--pure", "--allow-requantize", q4, out, "Q8_0", "2")
        ok = r.returncode == 0 and os.path.exists(out)
        check("--pure --allow-requantize Q8_0 of wp-llama-Q4_0", ok, r.stderr[-500:])
        if ok:
            _, meta, tensors = gguf_read.read(out)
            types = {t[0] for n, t in tensors.items() if len(t[1]) >= 2}
            check("its 2-D weights are q8_0 and general.file_type is 7",
                  types == {8} and meta["general.file_type"][1] == 7, f"{types}")
            g = subprocess.run([os.path.join(bin_dir, "run"), "-m", out, "-p", "Once upon",
                                "-n", "8", "--temp", "0"], capture_output=True, text=True)
            check("run loads and generates from it", g.returncode == 0 and len(g.stdout) > 9,
                  g.stderr)

        if not os.path.exists(os.path.join(shared, "wp-llama-f32.gguf")):
            print(f"SKIP the byte-identity sweep: {shared} has no wp-llama-f32.gguf")
            return summary()
        for model, types, extra in (("wp-llama", LLAMA, {}), ("wp-gpt2", GPT2, {}),
                                    ("wp-llama", [], LLAMA_PO)):
            jobs = [(t, t, False) for t in types] + [(f, t, True) for f, t in extra.items()]
            for file_type, arg, po in jobs:
                got = os.path.join(tmp, f"{model}-{file_type}.gguf")
                args = ["--pure", "--imatrix", os.path.join(shared, f"{model}.imatrix")]
                if po:  # as the shared files were made: their output.weight needs -po data
                    args += ["--leave-output-tensor", "--token-embedding-type", "q4_K"]
                r = run(*args, os.path.join(shared, f"{model}-f32.gguf"), got, arg)
                if r.returncode != 0:
                    check(f"{model} {arg}: quantized", False, r.stderr[-300:])
                    continue
                ok, detail = compare(os.path.join(shared, f"{model}-{file_type}.gguf"), got,
                                     ("output.weight",) if po else ())
                what = "without output.weight" if po else "every tensor and the metadata"
                check(f"{model} {arg}: llama-quantize's bytes ({what})", ok, detail)
                os.unlink(got)

        # Recipes with an importance matrix, against llama-quantize itself when it is here.
        lq = os.path.join(shared, "../tools/llama.cpp/bin/llama-quantize")
        if not os.path.exists(lq):
            print(f"SKIP the live llama-quantize comparison: no {lq}")
            return summary()
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(lq))
        for model, types in (("wp-llama", ["Q4_K_M", "Q3_K_M", "Q2_K", "IQ3_XS", "IQ3_M",
                                           "IQ4_XS", "Q4_0", "Q5_K_M"]),
                             ("wp-gpt2", ["Q4_K_M", "Q3_K_L", "IQ2_M", "Q2_K_S"])):
            for t in types:
                args = ["--imatrix", os.path.join(shared, f"{model}.imatrix"),
                        os.path.join(shared, f"{model}-f32.gguf")]
                ref, got = os.path.join(tmp, "ref.gguf"), os.path.join(tmp, "got.gguf")
                r1 = subprocess.run([lq, *args, ref, t, "2"], env=env, capture_output=True)
                r2 = run(*args, got, t)
                ok = r1.returncode == 0 and r2.returncode == 0
                detail = r2.stderr[-300:]
                if ok:
                    ok, detail = compare(ref, got)
                check(f"{model} {t} with imatrix: llama-quantize's file, run side by side", ok,
                      detail)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
