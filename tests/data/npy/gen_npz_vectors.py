#!/usr/bin/python3
"""Writes the .npz test vectors of tests/test_npz_skip.c and their sidecars.

Run with Debian's python3-numpy 1.24 (/usr/bin/python3), from any directory:
    /usr/bin/python3 tests/data/npy/gen_npz_vectors.py
CI has no numpy: the outputs are committed. numpy writes zip members with the current time, so
regenerating changes a few timestamp bytes (not the content).

Files:
  scipy_csr.npz     what scipy.sparse.save_npz(f, csr_matrix) writes (scipy is not installed
                    here; save_npz is this np.savez_compressed call: indices, indptr,
                    format=matrix.format.encode('ascii'), shape, data), so 'format' is '|S3'
  savez_str.npz     np.savez(x=float32 2x3, foo="abc", bar=["ab", "cde"]): '<U3' members, stored
  bad_header_{stored,deflated}.npz
                    one member 'a.npy' whose npy header has an unknown key: refused, with the
                    byte offset of the key in the file (stored) or in the inflated member
Sidecar <file>.json: {"tensors": [{name, dtype (ingot name), shape, sha256 of the C-order
little-endian bytes}], "skipped": [{name, descr}]} or {"refuse": STATUS, "offset": file offset,
"inflated_offset": offset in the inflated member or null, "where": tensor name}.
"""
import hashlib
import io
import json
import os
import struct
import zipfile

import numpy as np

OUT = os.path.dirname(os.path.abspath(__file__))
DT = {"float64": "F64", "float32": "F32", "int64": "I64", "int32": "I32"}


def tensor(name, a):
    a = np.ascontiguousarray(a)
    return {"name": name, "dtype": DT[a.dtype.name], "shape": list(a.shape),
            "sha256": hashlib.sha256(a.astype(a.dtype.newbyteorder("<")).tobytes()).hexdigest()}


def write(name, side):
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(side, f, indent=1, sort_keys=True)
        f.write("\n")


def valid_files():
    # a 3x4 CSR matrix [[1,0,2,0],[0,0,0,3],[4,5,0,0]], as scipy stores it
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    indices = np.array([0, 2, 3, 0, 1], dtype=np.int32)
    indptr = np.array([0, 2, 3, 5], dtype=np.int32)
    shape = np.array((3, 4))
    arrays = dict(indices=indices, indptr=indptr, format="csr".encode("ascii"), shape=shape,
                  data=data)
    np.savez_compressed(os.path.join(OUT, "scipy_csr.npz"), **arrays)
    write("scipy_csr.npz", {
        "tensors": [tensor("indices", indices), tensor("indptr", indptr),
                    tensor("shape", shape), tensor("data", data)],
        "skipped": [{"name": "format", "descr": np.array(arrays["format"]).dtype.str}]})

    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    bar = np.array(["ab", "cde"])
    np.savez(os.path.join(OUT, "savez_str.npz"), x=x, foo="abc", bar=bar)
    write("savez_str.npz", {
        "tensors": [tensor("x", x)],
        "skipped": [{"name": "foo", "descr": np.array("abc").dtype.str},
                    {"name": "bar", "descr": bar.dtype.str}]})


def bad_files():
    good = io.BytesIO()
    np.save(good, np.zeros((2, 3), dtype=np.float32))
    raw = good.getvalue()
    hlen = struct.unpack("<H", raw[8:10])[0]
    head = raw[10:10 + hlen].rstrip(b" \n")
    assert head.endswith(b"}")
    head = head[:-1] + b"'bogus': 1, }"
    head = head.ljust(hlen - 1) + b"\n"
    assert len(head) == hlen
    npy = raw[:10] + head + raw[10 + hlen:]
    key_at = npy.index(b"'bogus'")
    for kind, method in (("stored", zipfile.ZIP_STORED), ("deflated", zipfile.ZIP_DEFLATED)):
        path = os.path.join(OUT, "bad_header_%s.npz" % kind)
        with zipfile.ZipFile(path, "w", compression=method) as z:
            z.writestr(zipfile.ZipInfo("a.npy", date_time=(1980, 1, 1, 0, 0, 0)), npy,
                       compress_type=method)
        blob = open(path, "rb").read()
        nlen, xlen = struct.unpack("<HH", blob[26:30])
        data_at = 30 + nlen + xlen  # the member's (compressed) bytes, local header at 0
        deflated = method == zipfile.ZIP_DEFLATED
        write(os.path.basename(path), {
            "refuse": "BAD_METADATA", "where": "a",
            "offset": data_at if deflated else data_at + key_at,
            "inflated_offset": key_at if deflated else None})


valid_files()
bad_files()
