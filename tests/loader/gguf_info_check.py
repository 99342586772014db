#!/usr/bin/env python3
"""Checks `qinfer-gguf info --json` against an independent GGUF parser written here.

Usage: gguf_info_check.py QINFER_GGUF FILE_OR_DIR...
Every field is compared: version, alignment, each metadata key's value (arrays of up to 16
elements in full, longer ones as {"type", "length"}), each tensor's name, type, shape,
offset and byte size. Prints one line per file and 'N passed, N failed'.
"""
import json
import math
import os
import struct
import subprocess
import sys

TYPES = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20),
         6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24), 8: ("q8_0", 32, 34), 9: ("q8_1", 32, 36),
         10: ("q2_K", 256, 84), 11: ("q3_K", 256, 110), 12: ("q4_K", 256, 144),
         13: ("q5_K", 256, 176), 14: ("q6_K", 256, 210), 15: ("q8_K", 256, 292),
         16: ("iq2_xxs", 256, 66), 17: ("iq2_xs", 256, 74), 18: ("iq3_xxs", 256, 98),
         19: ("iq1_s", 256, 50), 20: ("iq4_nl", 32, 18), 21: ("iq3_s", 256, 110),
         22: ("iq2_s", 256, 82), 23: ("iq4_xs", 256, 136), 24: ("i8", 1, 1), 25: ("i16", 1, 2),
         26: ("i32", 1, 4), 27: ("i64", 1, 8), 28: ("f64", 1, 8), 29: ("iq1_m", 256, 56),
         30: ("bf16", 1, 2), 34: ("tq1_0", 256, 54), 35: ("tq2_0", 256, 66), 39: ("mxfp4", 32, 17)}
SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
          11: "<q", 12: "<d"}
NAMES = ["u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"]


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.p)[0]
        self.p += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.d[self.p:self.p + n]
        self.p += n
        return s.decode("utf-8", errors="replace")

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            items = [self.value(et) for _ in range(n)]
            return items if n <= 16 else {"type": NAMES[et], "length": n}
        return self.take(SCALAR[t])


def parse(path):
    r = Reader(open(path, "rb").read())
    assert r.take("<I") == 0x46554747
    out = {"version": r.take("<I")}
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        k = r.string()
        meta[k] = r.value(r.take("<I"))
    out["alignment"] = meta.get("general.alignment", 32)
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        t, off = r.take("<I"), r.take("<Q")
        tname, bs, ts = TYPES[t]
        size = math.prod(dims) // bs * ts
        tensors.append({"name": name, "type": tname, "shape": dims, "offset": off, "size_bytes": size})
    out["metadata"], out["tensors"] = meta, tensors
    return out


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float)) and
                          abs(a - b) <= 1e-6 * max(1.0, abs(a)))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def check(tool, path):
    got = json.loads(subprocess.run([tool, "info", path, "--json"], capture_output=True, check=True,
                                    text=True).stdout)
    want = parse(path)
    problems = [k for k in ("version", "alignment") if got[k] != want[k]]
    if got["metadata"].keys() != want["metadata"].keys():
        problems.append("metadata keys")
    problems += [k for k in want["metadata"] if k in got["metadata"] and not same(got["metadata"][k], want["metadata"][k])]
    if not same(got["tensors"], want["tensors"]):
        problems.append("tensors")
    return problems


def main():
    tool, files = sys.argv[1], []
    for arg in sys.argv[2:]:
        if os.path.isdir(arg):
            files += [os.path.join(arg, f) for f in sorted(os.listdir(arg)) if f.endswith(".gguf")]
        elif os.path.exists(arg):
            files.append(arg)
        else:
            print(f"skip {arg}: not present")
    passed = failed = 0
    for f in files:
        problems = check(tool, f)
        print(("ok   " if not problems else "FAIL ") + f + ("" if not problems else ": " + ", ".join(problems)))
        passed += not problems
        failed += bool(problems)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
