"""A small GGUF reader for the tests: metadata as {key: (type, value)} in file order and tensors
as {name: (type id, shape, bytes)}. Independent of qinfer's loader."""
import struct

# Bytes per block and elements per block of the ggml type ids the tests meet.
_BLOCKS = {0: (4, 1), 1: (2, 1), 2: (18, 32), 3: (20, 32), 6: (22, 32), 7: (24, 32), 8: (34, 32),
           10: (84, 256), 11: (110, 256), 12: (144, 256), 13: (176, 256), 14: (210, 256),
           16: (66, 256), 17: (74, 256), 18: (98, 256), 19: (50, 256), 20: (18, 32),
           21: (110, 256), 22: (82, 256), 23: (136, 256), 29: (56, 256), 30: (2, 1),
           34: (54, 256), 35: (66, 256), 39: (17, 32)}
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}


def read(path):
    b = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, b, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        n = take("<Q")
        s = b[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            return [value(et) for _ in range(n)]
        return take(_SCALARS[t])

    assert b[:4] == b"GGUF", path
    pos = 4
    version, n_tensors, n_kv = take("<I"), take("<Q"), take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = string()
        t = take("<I")
        meta[key] = (t, value(t))
    infos = []
    for _ in range(n_tensors):
        name = string()
        nd = take("<I")
        shape = [take("<Q") for _ in range(nd)]
        t, off = take("<I"), take("<Q")
        infos.append((name, t, shape, off))
    align = meta.get("general.alignment", (4, 32))[1]
    data = (pos + align - 1) // align * align
    tensors = {}
    for name, t, shape, off in infos:
        n = 1
        for d in shape:
            n *= d
        size, block = _BLOCKS[t]
        tensors[name] = (t, shape, b[data + off:data + off + n // block * size])
    return version, meta, tensors
