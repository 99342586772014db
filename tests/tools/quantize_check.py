#!/usr/bin/env python3
"""qinfer-quantize against llama-quantize's files.

Always (tests/data): flags and refusals; a --pure Q4_0 of stories260K is a model `run` loads.
With ../shared/models (skipped, and said so, when absent): every `--pure --imatrix` file there
re-made from the f32 model: every tensor's type and bytes identical, and the same metadata in
the same order (quantize.imatrix.file names the file as given). The IQ2_S/IQ2_XXS/IQ2_XS/IQ1_S
files were made with an imatrix that also covers output.weight (wp-llama-po.imatrix, not
shared): they are re-made with --leave-output-tensor and compared without output.weight.

Usage: quantize_check.py BIN_DIR DATA_DIR [SHARED_MODELS_DIR]
"""
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
        r = run(small, out, "Q4_K_M")
        check("a recipe without --pure is refused with a reason", r.returncode == 1
              and "recipe" in r.stderr and "--pure" in r.stderr and not os.path.exists(out),
              r.stderr)
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
                if po:
                    args.append("--leave-output-tensor")
                r = run(*args, os.path.join(shared, f"{model}-f32.gguf"), got, arg)
                if r.returncode != 0:
                    check(f"{model} {arg}: quantized", False, r.stderr[-300:])
                    continue
                ok, detail = compare(os.path.join(shared, f"{model}-{file_type}.gguf"), got,
                                     ("output.weight",) if po else ())
                what = "without output.weight" if po else "every tensor and the metadata"
                check(f"{model} {arg}: llama-quantize's bytes ({what})", ok, detail)
                os.unlink(got)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
