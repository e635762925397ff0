#!/usr/bin/python3
"""Expected zip CRC-32 of every member of the npz that tests/test_npy.c (test_npz_crc_streamed)
writes from a chunked stream: each member is the .npy file NumPy itself writes for the array
(np.lib.format.write_array, as np.savez does), its CRC-32 from zlib. The tensors and their bytes are
defined the same way as in the test: byte k of tensor i is (k * 31 + i * 17 + (k >> 8)) & 0xFF.

Usage: /usr/bin/python3 src/formats/npy/tools/chunked_crc.py   (prints the C table for the test)
"""
import io
import zlib

import numpy as np

TENSORS = [  # name, NumPy dtype, shape: keep in step with test_npz_crc_streamed
    ("a", "<f4", (1000,)),
    ("b", "|u1", (3, 5, 7)),
    ("c", "<f8", (0,)),
    ("d", "<i2", (33333,)),
    ("e", "<f4", ()),
    ("f", "<i8", (4097,)),
    ("g", "|b1", (2, 3)),
]


def main():
    for i, (name, dt, shape) in enumerate(TENSORS):
        dtype = np.dtype(dt)
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        raw = bytes(((k * 31 + i * 17 + (k >> 8)) & 0xFF) for k in range(n))
        if dtype.kind == "b":  # bool members hold 0/1 bytes
            raw = bytes(b & 1 for b in raw)
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
        buf = io.BytesIO()
        np.lib.format.write_array(buf, arr, allow_pickle=False)
        member = buf.getvalue()
        print(f'        {{"{name}", 0x{zlib.crc32(member):08x}u, {len(member)}u}},')


if __name__ == "__main__":
    main()
