#!/usr/bin/python3
"""Writes the high-rank test vectors of tests/test_rank64.c and their sidecars.

Run with Debian's python3-numpy 1.24 and python3-torch 1.13 (/usr/bin/python3), from any
directory:
    /usr/bin/python3 tests/data/rank/gen_rank_vectors.py
CI has neither: the outputs are committed. Files:
  rank16.npy, rank32.npy       np.save of a rank-16 float32 and a rank-32 int16 array
  rank16_fortran.npy           np.save of a Fortran-order rank-16 float64 array
  rank64.npy, rank65.npy       NumPy 1.x stops at 32 dimensions (NumPy 2 allows 64): written by
                               hand as the npy format spec (and NumPy 2's np.save) lays them out:
                               version 1.0, the dict repr padded with spaces to a multiple of 64
  rank16.pt                    torch.save of {"a": rank-16 float32, "v": a rank-20 permuted view}
  rank64.pt, rank65.pt         torch.save of a rank-64 / rank-65 float32 tensor (torch allows both)
  rank64_snapshot.mag          a magnetron snapshot (Format B, ../../../../shared/formats/mag.md
                               section 7) of one rank-64 f32 tensor, which upstream's writer
                               allows; built by hand with the spec's CRC-32C
Sidecar <file>.json: {"tensors": [{name, dtype, shape, stride (torch views), sha256 of the
C-order little-endian element bytes}]} or {"refuse": STATUS, "msg": fragment}.
"""
import hashlib
import json
import os
import struct

import numpy as np
import torch

OUT = os.path.dirname(os.path.abspath(__file__))


def shape_of(rank, twos):
    """rank dimensions of 1, with 2 at the positions in twos (and 3 at the last of them)."""
    s = [1] * rank
    for k in twos:
        s[k] = 2
    s[twos[-1]] = 3
    return tuple(s)


def cbytes(a):
    a = np.ascontiguousarray(a)
    return a.astype(a.dtype.newbyteorder("<")).tobytes()


def entry(name, dtype, shape, data, stride=None):
    e = {"name": name, "dtype": dtype, "shape": list(shape),
         "sha256": hashlib.sha256(data).hexdigest()}
    if stride is not None:
        e["stride"] = list(stride)
    return e


def side(name, obj):
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def npy_by_hand(path, dtype, shape, data):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, ", ".join(str(x) for x in shape) + ("," if len(shape) == 1 else ""))
    d += " " * (21 - len(repr(shape[0])))  # numpy.lib.format's GROWTH_AXIS_MAX_DIGITS room
    hlen = len(d) + 1
    hlen += -(10 + hlen) % 64
    head = b"\x93NUMPY\x01\x00" + struct.pack("<H", hlen) + d.encode("latin1").ljust(hlen - 1)
    with open(path, "wb") as f:
        f.write(head + b"\n" + data)


def npy_files():
    a = (np.arange(2 * 2 * 2 * 3, dtype=np.float32) / 4 - 2).reshape(shape_of(16, [0, 5, 9, 15]))
    np.save(os.path.join(OUT, "rank16.npy"), a)
    side("rank16.npy", {"tensors": [entry("rank16", "F32", a.shape, cbytes(a))]})
    b = (np.arange(24, dtype=np.int16) * 7 - 50).reshape(shape_of(32, [1, 10, 20, 30]))
    np.save(os.path.join(OUT, "rank32.npy"), b)
    side("rank32.npy", {"tensors": [entry("rank32", "I16", b.shape, cbytes(b))]})
    c = np.asfortranarray(np.arange(24, dtype=np.float64).reshape(shape_of(16, [2, 7, 11, 14])))
    np.save(os.path.join(OUT, "rank16_fortran.npy"), c)
    side("rank16_fortran.npy", {"tensors": [entry("rank16_fortran", "F64", c.shape, cbytes(c))]})
    # rank 64: the C-order bytes of a 24-element float64 array, shape 64 dims
    s64 = shape_of(64, [0, 31, 40, 63])
    v = np.arange(24, dtype=np.float64) * 1.5 - 3
    npy_by_hand(os.path.join(OUT, "rank64.npy"), "<f8", s64, cbytes(v))
    side("rank64.npy", {"tensors": [entry("rank64", "F64", s64, cbytes(v))]})
    npy_by_hand(os.path.join(OUT, "rank65.npy"), "<f8", s64 + (1,), cbytes(v))
    side("rank65.npy", {"refuse": "BAD_NDIMS", "msg": "more than 64 dimensions"})


def pt_files():
    torch.manual_seed(0)
    a = torch.arange(24, dtype=torch.float32).reshape(shape_of(16, [0, 4, 8, 15])) / 8
    base = torch.arange(2 * 3 * 2, dtype=torch.float32).reshape(shape_of(20, [2, 12, 19]))
    perm = list(range(19, -1, -1))  # reverse the axes: a strided view of base's storage
    v = base.permute(*perm)
    torch.save({"a": a, "v": v}, os.path.join(OUT, "rank16.pt"))
    side("rank16.pt", {"tensors": [
        entry("a", "F32", a.shape, cbytes(a.numpy()), a.stride()),
        entry("v", "F32", v.shape, cbytes(v.contiguous().numpy()), v.stride())]})
    t = torch.arange(24, dtype=torch.float32).reshape(shape_of(64, [3, 30, 50, 62])) - 10
    torch.save(t, os.path.join(OUT, "rank64.pt"))
    flat = t.contiguous().reshape(-1).numpy()  # numpy stops at 32 dimensions
    side("rank64.pt", {"tensors": [entry("tensor", "F32", t.shape, cbytes(flat))]})
    torch.save(t.reshape(t.shape + (1,)), os.path.join(OUT, "rank65.pt"))
    side("rank65.pt", {"refuse": "BAD_NDIMS", "msg": "65 dimensions (ingot's limit is 64"})


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def mag_snapshot():
    shape = shape_of(64, [0, 20, 40, 63])
    vals = np.arange(24, dtype=np.float32) / 2 + 1
    key = b"deep.w"
    body = struct.pack("<III", 0, 0, 1)                     # aux, metadata_map_len, tensor_count
    body += b"SRP!" + struct.pack("<I", 1) + struct.pack("<II", 0, len(key)) + key
    body += b"MDT!" + b"DSC!"
    body += struct.pack("<IIQQ", 64 | 0 << 8, 0, 24, 0)     # rank 64, dtype 0 (f32), key 0
    body += b"".join(struct.pack("<Q", d) for d in shape)
    head = b"MAG!" + struct.pack("<IQ", 100, 0)             # magic, version, timestamp 0
    blob = head + struct.pack("<I", crc32c(body)) + body + b"BUF!" + cbytes(vals)
    with open(os.path.join(OUT, "rank64_snapshot.mag"), "wb") as f:
        f.write(blob)
    side("rank64_snapshot.mag", {"tensors": [entry("deep.w", "F32", shape, cbytes(vals))]})


npy_files()
pt_files()
mag_snapshot()
