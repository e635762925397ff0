#!/usr/bin/python3
"""Writes c128.npy (complex128, '<c16') with NumPy, and its sidecar for tests/test_torch_c128.c.

Run with Debian's python3-numpy (/usr/bin/python3), from this directory. The sidecar holds what
NumPy reads back: descr, shape, the sha256 of the element bytes and every element as [re, im]
(float.hex, exact), plus the text `ingot dump` must print for each element: each part with
'%.17g', the imaginary part's sign (a negative zero's too) between them, then 'j'.
"""
import hashlib
import json

import numpy as np

a = np.array([[1 + 2j, -3.5 - 0.25j, 1e300 + 1e-300j],
              [0j, complex(-0.0, -0.0), 7 - 1j]], dtype=np.complex128)
np.save("c128.npy", a)
b = np.load("c128.npy")
assert b.dtype == np.dtype("<c16") and (b == a).all()


def text(z):
    im = z.imag
    sign = "-" if im < 0 or (im == 0 and np.signbit(im)) else "+"
    return "%.17g%s%.17gj" % (z.real, sign, abs(im))


with open("c128.npy.json", "w") as f:
    json.dump({"descr": b.dtype.str, "shape": list(b.shape),
               "sha256": hashlib.sha256(b.tobytes()).hexdigest(),
               "values": [[float(z.real).hex(), float(z.imag).hex()] for z in b.ravel()],
               "dump": [text(z) for z in b.ravel()]}, f, indent=1)
