#!/usr/bin/env python3
"""Regenerates this folder from ../shared/models (llama.cpp's own files): 4 rows of
blk.0.ffn_down.weight of wp-llama-f32.gguf, its importance weights from wp-llama.imatrix
(sum / ncall in float32, as llama-quantize reads them), and those rows as llama-quantize
--pure --imatrix encoded them in each wp-llama-<TYPE>.gguf.

Usage: make_golden.py SHARED_MODELS_DIR"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../tools"))
import gguf_read  # noqa: E402

TENSOR, ROWS = "blk.0.ffn_down.weight", 4
TYPES = {"q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1", "q2_K": "Q2_K",
         "q3_K": "Q3_K_S", "q4_K": "Q4_K_S", "q5_K": "Q5_K_S", "q6_K": "Q6_K",
         "iq4_nl": "IQ4_NL", "iq4_xs": "IQ4_XS", "iq3_xxs": "IQ3_XXS", "iq3_s": "IQ3_S",
         "iq2_s": "IQ2_S", "iq2_xxs": "IQ2_XXS", "iq2_xs": "IQ2_XS", "iq1_s": "IQ1_S",
         "iq1_m": "IQ1_M"}


def imatrix_entry(path, name):
    b = open(path, "rb").read()
    o = 4
    for _ in range(struct.unpack_from("<i", b, 0)[0]):
        n = struct.unpack_from("<i", b, o)[0]
        key = b[o + 4:o + 4 + n].decode()
        o += 4 + n
        ncall, nval = struct.unpack_from("<ii", b, o)
        vals = np.frombuffer(b, np.float32, nval, o + 8)
        o += 8 + 4 * nval
        if key == name:
            return vals / np.float32(ncall)
    raise KeyError(name)


def main():
    shared, here = sys.argv[1], os.path.dirname(os.path.abspath(__file__))
    _, _, f32 = gguf_read.read(os.path.join(shared, "wp-llama-f32.gguf"))
    _, shape, data = f32[TENSOR]
    n = shape[0]
    x = np.frombuffer(data, np.float32, ROWS * n)
    x.tofile(os.path.join(here, "x.f32"))
    imatrix_entry(os.path.join(shared, "wp-llama.imatrix"), TENSOR).astype(np.float32).tofile(
        os.path.join(here, "imatrix.f32"))
    with open(os.path.join(here, "manifest.tsv"), "w") as m:
        for type_name, file_type in TYPES.items():
            _, _, q = gguf_read.read(os.path.join(shared, f"wp-llama-{file_type}.gguf"))
            t, _, qdata = q[TENSOR]
            row_bytes = len(qdata) // shape[1]
            open(os.path.join(here, f"{type_name}.q"), "wb").write(qdata[:ROWS * row_bytes])
            m.write(f"{type_name}\t{ROWS}\t{n}\twp-llama-{file_type}.gguf\n")


if __name__ == "__main__":
    main()
