#!/usr/bin/python3
"""Checks .npz/.npy files written by ingot's npy/npz writers with the real NumPy.

Usage: /usr/bin/python3 src/formats/npy/tools/numpy_check.py REFERENCE.npz FILE...

Each FILE must load with np.load(allow_pickle=False) (and zipfile.testzip must find no bad CRC),
hold exactly the arrays of REFERENCE (names, dtypes, shapes, values; converted to C order and
little-endian as ingot writes them), and the script prints the sha256 of every FILE so the test
(tests/test_npy.c, test_npy_writer_numpy_golden) can pin those exact bytes: CI has no NumPy.
Run it after `test_npy` has written the files into the build directory (npy_golden_*.npz).
"""
import hashlib
import sys
import zipfile

import numpy as np


def main():
    ref = np.load(sys.argv[1], allow_pickle=False)
    for path in sys.argv[2:]:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
            assert bad is None, f"{path}: bad CRC in {bad}"
        got = np.load(path, allow_pickle=False)
        assert sorted(got.files) == sorted(ref.files), (got.files, ref.files)
        for k in ref.files:
            a, b = ref[k], got[k]
            want = a.astype(a.dtype.newbyteorder("<"), order="C")
            assert b.dtype == want.dtype, (k, b.dtype, want.dtype)
            assert b.shape == want.shape, (k, b.shape, want.shape)
            assert np.array_equal(b, want), k
            assert b.flags.c_contiguous
        digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
        print(f"{digest}  {path}  (numpy {np.__version__}: {len(ref.files)} arrays OK)")


if __name__ == "__main__":
    main()
