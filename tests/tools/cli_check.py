#!/usr/bin/env python3
"""The command-line contracts of ARCHITECTURE.md, checked on the vendored models.

Usage: cli_check.py BIN_DIR DATA_DIR
Prints one line per check and 'N passed, N failed'.
"""
import json
import os
import subprocess
import sys
import tempfile

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    passed += bool(ok)
    failed += not ok


def run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(args, capture_output=True, env=e)


def main():
    bin_dir, data = sys.argv[1], sys.argv[2]
    model = os.path.join(data, "models/stories260K.gguf")
    q4 = os.path.join(data, "models/wp-llama-Q4_K_S.gguf")
    ref = json.load(open(os.path.join(data, "models/reference/stories260K.json")))
    b = lambda tool: os.path.join(bin_dir, tool)

    r = run([b("run"), "-m", model, "-p", "hi", "--bogus"])
    check("run: unknown flag is an error", r.returncode != 0 and r.stderr, r.stderr.decode())
    r = run([b("run"), "-m", "/nonexistent.gguf", "-p", "hi"])
    check("run: missing model is an error", r.returncode != 0 and b"nonexistent" in r.stderr)
    r = run([b("run"), "-m", model, "-p", "Once upon a time there was a little girl", "-c", "4"])
    check("run: over-long prompt is a clear error", r.returncode == 1 and b"context" in r.stderr, r.stderr.decode())
    r = run([b("run"), "-m", os.path.join(data, "README.md"), "-p", "hi", "--json"])
    check("run: bad file, one stderr line, nothing on stdout",
          r.returncode == 1 and r.stdout == b"" and len(r.stderr.strip().splitlines()) == 1, r.stderr.decode())

    case = ref["cases"][0]
    r = run([b("run"), "-m", model, "-p", case["prompt"], "-n", str(len(case["greedy_tokens"])), "--temp", "0", "--json"])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check("run --json: one object with the contract's keys",
          set(j) == {"prompt_tokens", "tokens", "text", "timings"} and
          set(j["timings"]) == {"load_ms", "prompt_tokens_per_s", "gen_tokens_per_s"}, str(j)[:200])
    check("run --json: prompt tokens and greedy tokens equal llama.cpp's",
          j.get("prompt_tokens") == case["prompt_tokens"] and j.get("tokens") == case["greedy_tokens"])
    r2 = run([b("run"), "-m", model, "-p", case["prompt"], "-n", "24", "--temp", "0.9", "--seed", "7", "--json"])
    r3 = run([b("run"), "-m", model, "-p", case["prompt"], "-n", "24", "--temp", "0.9", "--seed", "7", "--json", "-t", "1"])
    check("run: the same seed gives the same text (1 and 2 threads)",
          r2.returncode == 0 and json.loads(r2.stdout)["tokens"] == json.loads(r3.stdout)["tokens"])

    r = run([b("qinfer-tokenize"), "-m", model, "-p", case["prompt"], "--ids"])
    check("qinfer-tokenize --ids: llama.cpp's ids on one line",
          r.stdout.decode().split() == [str(t) for t in case["prompt_tokens"]], r.stdout.decode())
    r = run([b("qinfer-tokenize"), "-m", model, "-p", case["prompt"], "--ids", "--no-bos"])
    check("qinfer-tokenize --no-bos drops BOS", r.stdout.decode().split() == [str(t) for t in case["prompt_tokens"][1:]])

    with tempfile.TemporaryDirectory() as tmp:
        outs = []
        for isa in ("scalar", "avx2", "avx512"):
            out = os.path.join(tmp, isa + ".f32")
            r = run([b("qinfer-gguf"), "dequant", q4, "blk.0.ffn_down.weight", "-o", out], {"QINFER_ISA": isa})
            if r.returncode == 0:
                outs.append(open(out, "rb").read())
            elif b"not available" not in r.stderr:
                outs.append(None)
        check("qinfer-gguf dequant: 768*256 floats, bit-identical on every ISA",
              outs and outs[0] is not None and len(outs[0]) == 768 * 256 * 4 and all(o == outs[0] for o in outs))
        bad = os.path.join(tmp, "bad.f32")
        r = run([b("qinfer-gguf"), "dequant", q4, "no.such.tensor", "-o", bad])
        check("qinfer-gguf dequant: unknown tensor is an error, no output file",
              r.returncode == 1 and not os.path.exists(bad))

    r = run([b("qinfer-bench"), "-m", model, "-p", "16", "-n", "8", "-r", "2", "--json"])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check("qinfer-bench --json: the contract's keys",
          {"model", "type", "threads", "pp", "tg"} <= set(j) and
          set(j["pp"]) == {"n_tokens", "tokens_per_s", "stddev"} and j["pp"]["n_tokens"] == 16, str(j)[:200])

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
