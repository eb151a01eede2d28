#!/usr/bin/env python3
"""Quantizes potion-base-8M's embedding table to int8 with one scale per row.

Usage: quantize_model.py IN.safetensors OUT.safetensors

The output holds `embeddings` (I8, rows x dims) and `weights` (F32, one per row): model2vec-rs
multiplies each token's row by its weight when it pools, so row * weight is the row of the
f32 table to within half a quantization step. Plain Python (no numpy), deterministic: the
same input gives the same bytes on any machine, so the output's SHA-256 is pinned beside the
input's in src-tauri/engine/model.sha256.
"""
import array
import json
import math
import struct
import sys


def main(src, dst):
    data = open(src, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    t = header["embeddings"]
    if t["dtype"] != "F32" or len(t["shape"]) != 2:
        sys.exit(f"{src}: expected an F32 2-D 'embeddings' tensor, found {t['dtype']} {t['shape']}")
    if set(header) - {"embeddings", "__metadata__"}:
        sys.exit(f"{src}: unexpected tensors {sorted(set(header) - {'embeddings', '__metadata__'})}")
    rows, dims = t["shape"]
    start, end = t["data_offsets"]
    table = array.array("f")
    table.frombytes(data[8 + n + start : 8 + n + end])
    if sys.byteorder != "little":
        table.byteswap()
    q = bytearray(rows * dims)
    scales = array.array("f", bytes(4 * rows))
    for r in range(rows):
        row = table[r * dims : (r + 1) * dims]
        top = max(abs(v) for v in row)
        scale = float(array.array("f", [top / 127.0])[0])  # rounded to f32, as stored
        scales[r] = scale
        if scale > 0.0:
            for i, v in enumerate(row):
                x = v / scale
                x = math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)
                q[r * dims + i] = max(-127, min(127, int(x))) & 0xFF
    if sys.byteorder != "little":
        scales.byteswap()
    meta = {
        "embeddings": {"dtype": "I8", "shape": [rows, dims], "data_offsets": [0, rows * dims]},
        "weights": {"dtype": "F32", "shape": [rows], "data_offsets": [rows * dims, rows * dims + 4 * rows]},
    }
    head = json.dumps(meta, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + bytes(q) + scales.tobytes())


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
