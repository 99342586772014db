#!/usr/bin/env python3
"""Writes recipes.json: for each of llama.cpp's mixtures, the type and the SHA-256 of the bytes
of every tensor of `llama-quantize --allow-requantize wp-llama-Q4_0.gguf OUT TYPE` and of the
same for wp-gpt2-Q4_0.gguf (llama.cpp c392e50, no importance matrix; the IQ mixtures that
need one are left out). quantize_check.py compares qinfer-quantize's output with it.

Usage: make_recipes.py LLAMA_CPP_BIN_DIR"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../../tools"))
import gguf_read  # noqa: E402

TYPES = ["Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K",
         "IQ3_XS", "IQ3_M", "IQ4_NL", "IQ4_XS", "Q4_1", "Q8_0", "TQ2_0"]


def main():
    bin_dir = sys.argv[1]
    env = dict(os.environ, LD_LIBRARY_PATH=bin_dir)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in ("wp-llama-Q4_0.gguf", "wp-gpt2-Q4_0.gguf"):
            for t in TYPES:
                path = os.path.join(tmp, "out.gguf")
                subprocess.run([os.path.join(bin_dir, "llama-quantize"), "--allow-requantize",
                                os.path.join(here, "../models", model), path, t, "2"], env=env,
                               check=True, capture_output=True)
                _, _, tensors = gguf_read.read(path)
                out.setdefault(model, {})[t] = {
                    name: [ty, hashlib.sha256(data).hexdigest()[:16]]
                    for name, (ty, _, data) in tensors.items()}
    json.dump(out, open(os.path.join(here, "recipes.json"), "w"), indent=0, sort_keys=True)


if __name__ == "__main__":
    main()
