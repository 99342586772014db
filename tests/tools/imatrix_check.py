#!/usr/bin/env python3
"""qinfer-imatrix against llama-imatrix.

Always: tests/data/quant/wp-llama-Q4_0.imatrix is llama-imatrix's (c392e50) file for
`-m wp-llama-Q4_0.gguf -f heldout.txt -c 128 --chunks 8 --process-output`; qinfer-imatrix with
the same arguments must give the same matrices, call and chunk counts, and every value within 2%
(the activations come from different kernels). An IQ2_XXS re-encoding made with it must be
within 2% of the PPL of one made with llama-imatrix's.
With ../shared/models: the acceptance check of the issue: an imatrix of wp-llama-f32 on the
held-out text gives an IQ2_XXS file whose PPL is within 2% of the shared wp-llama-IQ2_XXS.gguf's.

Usage: imatrix_check.py BIN_DIR DATA_DIR [SHARED_MODELS_DIR]
"""
import os
import struct
import subprocess
import sys
import tempfile

from checks import check, summary


def read_imatrix(path):
    b = open(path, "rb").read()
    o, entries = 4, {}
    for _ in range(struct.unpack_from("<i", b, 0)[0]):
        n = struct.unpack_from("<i", b, o)[0]
        name = b[o + 4:o + 4 + n].decode()
        o += 4 + n
        ncall, nval = struct.unpack_from("<ii", b, o)
        entries[name] = (ncall, struct.unpack_from(f"<{nval}f", b, o + 8))
        o += 8 + 4 * nval
    return entries, struct.unpack_from("<i", b, o)[0]


def ppl(bin_dir, model, text):
    r = subprocess.run([os.path.join(bin_dir, "qinfer-perplexity"), "-m", model, "-f", text,
                        "-c", "128"], capture_output=True, text=True)
    return float(r.stdout.split()[-3]) if r.returncode == 0 else None


def main():
    bin_dir, data = sys.argv[1], sys.argv[2]
    shared = sys.argv[3] if len(sys.argv) > 3 else os.path.join(data, "../../../shared/models")
    b = lambda tool: os.path.join(bin_dir, tool)
    text = os.path.join(data, "models/reference/heldout.txt")
    model = os.path.join(data, "models/wp-llama-Q4_0.gguf")
    golden = os.path.join(data, "quant/wp-llama-Q4_0.imatrix")
    with tempfile.TemporaryDirectory() as tmp:
        ours = os.path.join(tmp, "ours.imatrix")
        r = subprocess.run([b("qinfer-imatrix"), "-m", model, "-f", text, "-c", "128",
                            "--chunks", "8", "--process-output", "-o", ours],
                           capture_output=True, text=True)
        check("qinfer-imatrix runs", r.returncode == 0, r.stderr[-300:])
        want, want_chunks = read_imatrix(golden)
        got, got_chunks = read_imatrix(ours)
        check("the same matrices, calls and chunks as llama-imatrix",
              set(got) == set(want) and got_chunks == want_chunks
              and all(got[k][0] == want[k][0] for k in want), f"{sorted(set(got) ^ set(want))}")
        worst = max(abs(x - y) / max(abs(y), 1e-6) for k in want if k in got
                    for x, y in zip(got[k][1], want[k][1]))
        check(f"every value within 2% of llama-imatrix's (worst {worst * 100:.2f}%)",
              worst < 0.02, f"{worst}")
        out = {}
        for name, im in (("ours", ours), ("llama", golden)):
            out[name] = os.path.join(tmp, f"{name}.gguf")
            r = subprocess.run([b("qinfer-quantize"), "--pure", "--allow-requantize",
                                "--token-embedding-type", "q4_K", "--imatrix", im, model,
                                out[name], "IQ2_XXS"],
                               capture_output=True, text=True)
            check(f"IQ2_XXS with {name} imatrix", r.returncode == 0, r.stderr[-300:])
        p_ours, p_llama = ppl(bin_dir, out["ours"], text), ppl(bin_dir, out["llama"], text)
        check(f"its PPL {p_ours} within 2% of the one made with llama-imatrix's ({p_llama})",
              p_ours and p_llama and abs(p_ours - p_llama) <= 0.02 * p_llama)

        f32 = os.path.join(shared, "wp-llama-f32.gguf")
        if not os.path.exists(f32):
            print(f"SKIP the shared IQ2_XXS check: {shared} has no wp-llama-f32.gguf")
            return summary()
        im = os.path.join(tmp, "f32.imatrix")
        r = subprocess.run([b("qinfer-imatrix"), "-m", f32, "-f", text, "-c", "128",
                            "--process-output", "-o", im], capture_output=True, text=True)
        q = os.path.join(tmp, "iq2_xxs.gguf")
        r2 = subprocess.run([b("qinfer-quantize"), "--pure", "--token-embedding-type", "q4_K",
                             "--imatrix", im, f32, q, "IQ2_XXS"],
                            capture_output=True, text=True)
        check("shared f32 model: imatrix and IQ2_XXS", r.returncode == 0 and r2.returncode == 0,
              r.stderr[-300:] + r2.stderr[-300:])
        p_ours = ppl(bin_dir, q, text)
        p_shared = ppl(bin_dir, os.path.join(shared, "wp-llama-IQ2_XXS.gguf"), text)
        check(f"its PPL {p_ours} within 2% of the shared IQ2_XXS file's ({p_shared})",
              p_ours and p_shared and abs(p_ours - p_shared) <= 0.02 * p_shared)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
