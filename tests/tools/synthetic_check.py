#!/usr/bin/env python3
"""qinfer-quantize --synthetic: random-weight llamas of real shapes.

Always (tests/data): the `small` shape with the llama-spm vocabulary has llama.cpp's tensor
names, shapes and types, the shape's hyper-parameters, the vocabulary's tokenizer keys
unchanged; its weights are N(0, 0.02²) (mean, deviation and the share within one deviation);
the same seed gives the same bytes for 1 and 2 threads, another seed other bytes; `run`
generates from it; a quantized TYPE writes the quantized file and leaves no temporary file;
bad arguments get one error line and no file.
With ../shared/tools/llama.cpp: llama-quantize reads the F16 file and its Q4_K_M is, tensor
for tensor, the file `--synthetic small OUT Q4_K_M` writes.

Usage: synthetic_check.py BIN_DIR DATA_DIR [LLAMA_CPP_BIN_DIR]
"""
import hashlib
import math
import os
import struct
import subprocess
import sys
import tempfile

import gguf_read
from checks import check, summary

SMALL = dict(dim=512, n_layer=4, n_head=8, n_head_kv=4, ffn=1408)


def expected_tensors(n_vocab, dim, n_layer, n_head, n_head_kv, ffn):
    kv = n_head_kv * (dim // n_head)
    t = {"token_embd.weight": [dim, n_vocab]}
    for i in range(n_layer):
        p = f"blk.{i}."
        t.update({p + "attn_norm.weight": [dim], p + "attn_q.weight": [dim, dim],
                  p + "attn_k.weight": [dim, kv], p + "attn_v.weight": [dim, kv],
                  p + "attn_output.weight": [dim, dim], p + "ffn_norm.weight": [dim],
                  p + "ffn_gate.weight": [dim, ffn], p + "ffn_up.weight": [dim, ffn],
                  p + "ffn_down.weight": [ffn, dim]})
    t.update({"output_norm.weight": [dim], "output.weight": [dim, n_vocab]})
    return t


def main():
    bin_dir, data = sys.argv[1], sys.argv[2]
    llama_bin = sys.argv[3] if len(sys.argv) > 3 else os.path.join(
        data, "../../../shared/tools/llama.cpp/bin")
    vocab = os.path.join(data, "vocab/ggml-vocab-llama-spm.gguf")
    q = os.path.join(bin_dir, "qinfer-quantize")

    def synth(*args, threads=2):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        return subprocess.run([q, "--synthetic", *args], capture_output=True, text=True, env=env)

    with tempfile.TemporaryDirectory() as tmp:
        f16 = os.path.join(tmp, "small-f16.gguf")
        r = synth("small", "--vocab", vocab, f16)
        check("--synthetic small writes a file", r.returncode == 0 and os.path.exists(f16),
              r.stderr[-400:])
        if r.returncode != 0:
            return summary()
        _, meta, tensors = gguf_read.read(f16)
        _, vmeta, _ = gguf_read.read(vocab)
        n_vocab = len(vmeta["tokenizer.ggml.tokens"][1])
        want = expected_tensors(n_vocab, **SMALL)
        got = {n: list(t[1]) for n, t in tensors.items()}
        check("llama.cpp's tensor names and shapes", got == want and list(tensors) == list(want),
              str(set(got) ^ set(want))[:300])
        types_ok = all(t[0] == (1 if len(t[1]) == 2 else 0) for t in tensors.values())
        check("matrices F16, norms F32", types_ok)
        hp = {k: meta[k][1] for k in meta if k.startswith("llama.")}
        check("the shape's hyper-parameters", meta["general.architecture"][1] == "llama" and
              hp["llama.embedding_length"] == 512 and hp["llama.block_count"] == 4 and
              hp["llama.attention.head_count"] == 8 and hp["llama.attention.head_count_kv"] == 4
              and hp["llama.feed_forward_length"] == 1408 and
              hp["llama.rope.dimension_count"] == 64 and meta["general.file_type"][1] == 1,
              str(hp))
        tok = lambda m: {k: v for k, v in m.items() if k.startswith("tokenizer.")}
        check("every tokenizer key of the vocabulary file, unchanged",
              tok(meta) == tok(vmeta) and len(tok(meta)) >= 5, str(set(tok(meta)) ^ set(tok(vmeta))))

        w = tensors["blk.1.ffn_up.weight"][2]
        x = struct.unpack(f"<{len(w) // 2}e", w)
        n = len(x)
        mean = sum(x) / n
        sd = math.sqrt(sum((v - mean) ** 2 for v in x) / n)
        within = sum(1 for v in x if abs(v) < 0.02) / n
        check(f"weights N(0, 0.02²): mean {mean:.2e}, sd {sd:.5f}, {within:.4f} within 1 sd",
              abs(mean) < 1e-4 and abs(sd - 0.02) < 2e-4 and abs(within - 0.6827) < 0.005)
        norm = struct.unpack("<512f", tensors["blk.2.ffn_norm.weight"][2])
        check("norm weights are 1", set(norm) == {1.0})
        rows_differ = tensors["blk.0.attn_q.weight"][2][:1024] != tensors["blk.0.attn_k.weight"][2][:1024]
        check("each tensor draws its own values", rows_differ)

        digest = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
        one = os.path.join(tmp, "one-thread.gguf")
        synth("small", "--vocab", vocab, one, threads=1)
        check("the same seed: the same bytes with 1 and 2 threads", digest(one) == digest(f16))
        other = os.path.join(tmp, "seed1.gguf")
        synth("small", "--vocab", vocab, "--seed", "1", other)
        _, _, t1 = gguf_read.read(other)
        check("another seed: other weights",
              t1["blk.0.attn_q.weight"][2] != tensors["blk.0.attn_q.weight"][2])
        os.unlink(one)
        os.unlink(other)

        g = subprocess.run([os.path.join(bin_dir, "run"), "-m", f16, "-p", "Once upon", "-n", "4",
                            "--temp", "0"], capture_output=True, text=True)
        check("run generates from it", g.returncode == 0 and g.stdout.startswith("Once upon"),
              g.stderr[-300:])

        bf = os.path.join(tmp, "small-bf16.gguf")
        r = synth("small", "--vocab", vocab, bf, "BF16")
        _, bmeta, bt = gguf_read.read(bf) if r.returncode == 0 else (None, {}, {})
        check("BF16: matrices bf16 (type 30), file type 32", r.returncode == 0 and
              bt["blk.0.ffn_up.weight"][0] == 30 and bmeta["general.file_type"][1] == 32,
              r.stderr[-300:])
        os.unlink(bf)

        q4 = os.path.join(tmp, "small-Q4_K_M.gguf")
        r = synth("small", "--vocab", vocab, q4, "Q4_K_M")
        left = sorted(f for f in os.listdir(tmp) if f.endswith(".tmp"))
        ok = r.returncode == 0 and os.path.exists(q4)
        check("a quantized TYPE: the recipe's file, no temporary file left", ok and not left,
              f"{left} {r.stderr[-300:]}")
        if ok:
            _, qmeta, qt = gguf_read.read(q4)
            check("... Q4_K_M: file type 15, attn_q q4_K, output q6_K",
                  qmeta["general.file_type"][1] == 15 and qt["blk.0.attn_q.weight"][0] == 12
                  and qt["output.weight"][0] == 14)

        bad = os.path.join(tmp, "bad.gguf")
        for args, why in ((["llama-13x", "--vocab", vocab, bad], "unknown shape"),
                          (["small", bad], "needs --vocab"),
                          (["small", "--vocab", vocab, bad, "Q9_X"], "unknown type")):
            r = synth(*args)
            check(f"refused ({why}): one error line, no file", r.returncode != 0 and
                  r.stderr.startswith("error:") and why in r.stderr and not os.path.exists(bad),
                  r.stderr[-300:])

        lq = os.path.join(llama_bin, "llama-quantize")
        if not os.path.exists(lq) or not ok:
            print(f"SKIP the llama-quantize comparison: no {lq}")
            return summary()
        ref = os.path.join(tmp, "ref-Q4_K_M.gguf")
        r = subprocess.run([lq, f16, ref, "Q4_K_M", "2"], capture_output=True, text=True,
                           env=dict(os.environ, LD_LIBRARY_PATH=llama_bin))
        check("llama-quantize reads the synthetic file", r.returncode == 0, r.stderr[-300:])
        if r.returncode == 0:
            _, _, rt = gguf_read.read(ref)
            same = [n for n in rt if n in qt and rt[n][0] == qt[n][0] and rt[n][2] == qt[n][2]]
            check("its Q4_K_M equals --synthetic small OUT Q4_K_M, tensor for tensor",
                  len(same) == len(rt) == len(qt), f"{len(same)}/{len(rt)}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
