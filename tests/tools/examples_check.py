#!/usr/bin/env python3
"""Each example of docs/api.md, run against an independent result:
  simple, own_sampling, save_restore: the greedy text `run --temp 0 --json` prints;
  chat: the first reply is run's continuation of the turn formatted by qinfer-chat-template;
  embed: a text identical to the query ranks first with cosine 1.

Usage: examples_check.py BIN_DIR DATA_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

from checks import check, summary


def main():
    bin_dir, data = sys.argv[1], sys.argv[2]
    b = lambda tool: os.path.join(bin_dir, tool)
    model = os.path.join(data, "models/stories260K.gguf")
    prompt, n = "Once upon a time", "24"
    out = lambda args, **kw: subprocess.run(args, capture_output=True, **kw)

    r = out([b("run"), "-m", model, "-p", prompt, "-n", n, "--temp", "0", "--json"])
    greedy = json.loads(r.stdout)["text"]
    for args in (["simple", model, prompt, n], ["own_sampling", model, prompt, n]):
        r = out([b(args[0])] + args[1:])
        check(f"{args[0]}: run's greedy text", r.returncode == 0 and r.stdout.decode() == greedy + "\n",
              f"{r.stdout!r} vs {greedy!r} {r.stderr!r}")
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, "s.state")
        r = out([b("save_restore"), model, prompt, n, state])
        check("save_restore: the same text after saving and loading",
              r.returncode == 0 and r.stdout.decode() == greedy + "\n" and os.path.exists(state),
              f"{r.stdout!r} vs {greedy!r} {r.stderr!r}")

        msgs = [{"role": "system", "content": "Be nice"}, {"role": "user", "content": "Hello"}]
        path = os.path.join(tmp, "m.json")
        json.dump(msgs, open(path, "w"))
        formatted = out([b("qinfer-chat-template"), "-m", model, "-f", path]).stdout.decode()
        r = out([b("run"), "-m", model, "-p", formatted, "--parse-special", "-n", "64", "--temp", "0", "--json"])
        want = json.loads(r.stdout)["text"]
        r = out([b("chat"), model, "Be nice"], input=b"Hello\n\n")
        got = r.stdout.decode()
        check("chat: the first reply is the continuation of the formatted turn",
              r.returncode == 0 and got.startswith("> " + want + "\n> "), f"{got[:200]!r} vs {want!r}")

    r = out([b("embed"), model, "The dog ran", "A cat slept", "The dog ran", "Birds fly high"])
    lines = r.stdout.decode().splitlines()
    check("embed: the identical text first, cosine 1",
          r.returncode == 0 and len(lines) == 3 and lines[0] == "1.0000\tThe dog ran"
          and all(float(l.split("\t")[0]) < 1.0 for l in lines[1:]), r.stdout.decode())

    return summary()


if __name__ == "__main__":
    sys.exit(main())
