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

from checks import check, summary


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
    check("run --json: one object with the contract's keys (and the stop reason, milliseconds)",
          set(j) == {"prompt_tokens", "tokens", "text", "stop_reason", "timings"} and
          set(j["timings"]) == {"load_ms", "prompt_tokens_per_s", "gen_tokens_per_s", "prompt_ms", "gen_ms"}
          and j["stop_reason"] == "length", str(j)[:200])
    check("run --json: prompt tokens and greedy tokens equal llama.cpp's",
          j.get("prompt_tokens") == case["prompt_tokens"] and j.get("tokens") == case["greedy_tokens"])
    r2 = run([b("run"), "-m", model, "-p", case["prompt"], "-n", "24", "--temp", "0.9", "--seed", "7", "--json"])
    r3 = run([b("run"), "-m", model, "-p", case["prompt"], "-n", "24", "--temp", "0.9", "--seed", "7", "--json", "-t", "1"])
    check("run: the same seed gives the same text (1 and 2 threads)",
          r2.returncode == 0 and json.loads(r2.stdout)["tokens"] == json.loads(r3.stdout)["tokens"])

    # llama-cli's flags: multi-letter short flags, -s, -e, -n -1, --ignore-eos, refusals.
    base = [b("run"), "-m", model, "--temp", "0", "--json"]
    r = run(base + ["-p", case["prompt"], "-n", "4", "-ngl", "99", "-ctk", "f32", "-ctv=f32", "-s", "1", "-fa"])
    check("run: -ngl 99 -ctk f32 -ctv=f32 -s 1 -fa parse as llama-cli's (warning for -ngl)",
          r.returncode == 0 and b"-ngl" in r.stderr and json.loads(r.stdout)["tokens"] == case["greedy_tokens"][:4],
          r.stderr.decode())
    r = run(base + ["-p", "Once", "-n", "-1", "-c", "24"])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check("run -n -1: generates until the context is full, stop_reason 'context'",
          j.get("stop_reason") == "context" and len(j["prompt_tokens"]) + len(j["tokens"]) == 24 + 1, str(j)[:200])
    eos = ref.get("eos_token_id", 2)
    r = run(base + ["-p", case["prompt"], "-n", "300", "--ignore-eos", "-c", "512"])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check("run --ignore-eos: no end-of-generation stop", j.get("stop_reason") in ("length", "context")
          and eos not in j.get("tokens", [eos]), str(j)[:200])
    top = case["greedy_tokens"][0]
    r = run(base + ["-p", case["prompt"], "-n", "1", "--logit-bias", f"{top}-inf"])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check("run --logit-bias ID-inf bans the greedy token", j.get("tokens", [top]) != [top], str(j)[:200])
    r1 = run(base + ["-p", "a\\tb", "-n", "1", "-e"])
    r2 = run(base + ["-p", "a\tb", "-n", "1"])
    check("run -e: escapes processed in the prompt",
          r1.returncode == 0 and json.loads(r1.stdout)["prompt_tokens"] == json.loads(r2.stdout)["prompt_tokens"])
    for flag in (["--grammar", "root ::= x"], ["--json-schema", "{}"], ["--context-shift"], ["-cnv", "--chat-template", "nope"]):
        r = run([b("run"), "-m", model, "-p", "hi"] + flag)
        check(f"run {flag[0]}: refused with one error line", r.returncode == 1 and r.stdout == b""
              and len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith(b"error: "), r.stderr.decode())

    r = run([b("qinfer-tokenize"), "-m", model, "-p", case["prompt"], "--ids"])
    check("qinfer-tokenize --ids: llama.cpp's ids on one line",
          r.stdout.decode().split() == [str(t) for t in case["prompt_tokens"]], r.stdout.decode())
    r = run([b("qinfer-tokenize"), "-m", model, "-p", case["prompt"], "--ids", "--no-bos"])
    check("qinfer-tokenize --no-bos drops BOS", r.stdout.decode().split() == [str(t) for t in case["prompt_tokens"][1:]])

    with tempfile.TemporaryDirectory() as tmp:
        outs = []
        for isa in ("scalar", "avx2", "avx2-vnni", "avx512"):
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
    # llama-bench's lists: models x threads x tests, in md, csv, json and jsonl.
    q4 = os.path.join(data, "models/wp-llama-Q4_0.gguf")
    lists = ["-m", f"{model},{q4}", "-p", "8,16", "-n", "4", "-t", "1,2", "-r", "1", "-pg", "8,2"]
    r = run([b("qinfer-bench"), *lists, "-o", "jsonl"])
    rows = [json.loads(l) for l in r.stdout.decode().splitlines()] if r.returncode == 0 else []
    tests = [(x["model_filename"], x["n_threads"], x["test"]) for x in rows]
    want = [(m, t, test) for m in (model, q4) for t in (1, 2)
            for test in ("pp8", "pp16", "tg4", "pp8+tg2")]
    check("qinfer-bench lists: every model x threads x test, llama-bench's keys",
          tests == want and all({"avg_ts", "stddev_ts", "samples_ts", "model_size",
                                 "model_n_params", "n_prompt", "n_gen", "build",
                                 "weights_read_bytes"} <= set(x)
                                for x in rows) and all(x["avg_ts"] > 0 for x in rows),
          f"{tests} {r.stderr.decode()[-300:]}")
    r = run([b("qinfer-bench"), *lists, "-o", "json"])
    check("qinfer-bench -o json: one array of the same rows",
          r.returncode == 0 and len(json.loads(r.stdout)) == len(want))
    r = run([b("qinfer-bench"), *lists, "-o", "csv"])
    lines = r.stdout.decode().splitlines()
    check("qinfer-bench -o csv: a header and a row per test",
          r.returncode == 0 and lines[0].startswith("build,model_filename") and len(lines) == 17)
    r = run([b("qinfer-bench"), *lists])
    md = r.stdout.decode().splitlines()
    check("qinfer-bench markdown: a row per test and a build line",
          r.returncode == 0 and len([l for l in md if l.startswith("| ") and "avx" in l or
                                     l.startswith("| ") and "scalar" in l or
                                     l.startswith("| ") and "neon" in l]) == 16
          and md[-1].startswith("build: qinfer"), "\n".join(md[-4:]))
    # -ctk/-ctv as llama-bench: the cache types in the row; a bad type is an error.
    r = run([b("qinfer-bench"), "-m", q4, "-p", "0", "-n", "2", "-d", "40", "-r", "1",
             "-ctk", "q8_0", "-ctv", "q4_0", "-o", "jsonl"])
    rows = [json.loads(l) for l in r.stdout.decode().splitlines()] if r.returncode == 0 else []
    check("qinfer-bench -ctk/-ctv: the types in the row and its test name",
          len(rows) == 1 and rows[0]["type_k"] == "q8_0" and rows[0]["type_v"] == "q4_0"
          and rows[0]["test"] == "tg2 @ d40 (K q8_0, V q4_0)" and rows[0]["avg_ts"] > 0,
          f"{rows} {r.stderr.decode()[-300:]}")
    # --ceiling: a generation test gets its own pages' read ceiling (before, after) and the
    # share of it, which is tokens/s x weights_read_bytes / the higher ceiling; a prompt none.
    r = run([b("qinfer-bench"), "-m", q4, "-p", "8", "-n", "4", "-r", "1", "--ceiling", "-o", "jsonl"])
    rows = [json.loads(l) for l in r.stdout.decode().splitlines()] if r.returncode == 0 else []
    tg = [x for x in rows if x["n_gen"] > 0]
    check("qinfer-bench --ceiling: the generation's read ceiling and its share, not the prompt's",
          len(rows) == 2 and "read_ceiling_gbs" not in rows[0] and len(tg) == 1
          and len(tg[0].get("read_ceiling_gbs", [])) == 2 and min(tg[0]["read_ceiling_gbs"]) > 0
          and abs(tg[0]["share_of_ceiling"] - tg[0]["avg_ts"] * tg[0]["weights_read_bytes"]
                  / (1e9 * max(tg[0]["read_ceiling_gbs"]))) < 1e-6 * tg[0]["share_of_ceiling"],
          f"{rows} {r.stderr.decode()[-300:]}")
    r = run([b("qinfer-bench"), "-m", q4, "-n", "2", "-ctk", "q5_9"])
    check("qinfer-bench -ctk with an unknown type: one error line", r.returncode == 1
          and r.stderr.startswith(b"error: unknown cache type"), r.stderr.decode())
    r = run([b("qinfer-bench"), "-m", model, "-pg", "8"])
    check("qinfer-bench -pg without TG: one error line", r.returncode == 1
          and r.stderr.startswith(b"error: "), r.stderr.decode())

    # Every tool: --version exits 0 naming qinfer; a bad flag is one "error:" line and exit 1.
    for tool in ("run", "qinfer-gguf", "qinfer-tokenize", "qinfer-perplexity", "qinfer-bench",
                 "qinfer-chat-template", "qinfer-server", "qinfer-quantize", "qinfer-imatrix"):
        r = run([b(tool), "--version"])
        check(f"{tool} --version", r.returncode == 0 and r.stdout.startswith(b"qinfer "), r.stdout.decode())
        r = run([b(tool), "--no-such-flag"])
        lines = r.stderr.decode().strip().splitlines()
        check(f"{tool}: a bad flag is one 'error:' line, exit 1",
              r.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr.decode())

    # The qinfer driver runs the tools by subcommand.
    r1 = run([b("qinfer"), "run", "-m", model, "-p", case["prompt"], "-n", "8", "--temp", "0", "--json"])
    r2 = run([b("run"), "-m", model, "-p", case["prompt"], "-n", "8", "--temp", "0", "--json"])
    check("qinfer run: the same as run", r1.returncode == 0 and
          json.loads(r1.stdout)["tokens"] == json.loads(r2.stdout)["tokens"], r1.stderr.decode())
    r = run([b("qinfer"), "nope"])
    check("qinfer: unknown subcommand is one error line", r.returncode == 1 and r.stderr.startswith(b"error: "))

    # qinfer-chat-template prints exactly llama.cpp's formatted prompt (tests/data/chat).
    golden = json.load(open(os.path.join(data, "chat/chat_golden.json"), encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        mismatched = []
        for conv_name, conv in golden["conversations"].items():
            path = os.path.join(tmp, conv_name + ".json")
            json.dump(conv, open(path, "w", encoding="utf-8"), ensure_ascii=False)
            for name in ("chatml", "llama3", "gemma", "mistral-v7", "llama2-sys", "phi3", "deepseek3"):
                for gen in (True, False):
                    args = [b("qinfer-chat-template"), "--template", name, "-f", path]
                    r = run(args + ([] if gen else ["--no-generation-prompt"]))
                    want = golden["builtin"][name][conv_name + ("/gen" if gen else "/nogen")]
                    if r.returncode != 0 or r.stdout.decode("utf-8") != want:
                        mismatched.append(f"{name} {conv_name} gen={gen}: {r.stdout!r} {r.stderr!r}")
        check("qinfer-chat-template: llama.cpp's bytes, nothing else", not mismatched, "; ".join(mismatched[:3]))
        path = os.path.join(tmp, "system_user.json")
        r = run([b("qinfer-chat-template"), "-m", model, "-f", path])
        check("qinfer-chat-template -m: a model without a template gets chatml",
              r.returncode == 0 and r.stdout.decode() == golden["builtin"]["chatml"]["system_user/gen"], r.stderr.decode())
        r = run([b("qinfer-chat-template"), "--template", "nope", "-f", path])
        check("qinfer-chat-template: unknown template is an error naming the known ones",
              r.returncode == 1 and r.stdout == b"" and b"unknown chat template 'nope'" in r.stderr
              and b"chatml" in r.stderr, r.stderr.decode())
        bad = os.path.join(tmp, "bad.json")
        for content, why in (("[{\"role\": \"user\"", b"not valid JSON"), ("{}", b"JSON array"),
                             ("[{\"role\": \"user\", \"content\": 3}]", b"content")):
            open(bad, "w").write(content)
            r = run([b("qinfer-chat-template"), "--template", "chatml", "-f", bad])
            check(f"qinfer-chat-template: bad messages ({why.decode()}) are an error",
                  r.returncode == 1 and r.stdout == b"" and why in r.stderr, r.stderr.decode())
        r = run([b("qinfer-chat-template"), "--list"])
        check("qinfer-chat-template --list: every llama.cpp name",
              r.returncode == 0 and sorted(r.stdout.decode().split()) == sorted(golden["builtin"]))

    return summary()


if __name__ == "__main__":
    sys.exit(main())
