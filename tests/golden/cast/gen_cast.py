#!/usr/bin/python3
"""Reference values for tests/test_cast.c (ingot_cast, include/ingot/quant.h).

golden.txt, next to this script: one line "cast SRC DST N SHA256" per pair, SHA256 the digest of
the DST little-endian bytes of N inputs of SRC:
  F64  sample_f64_bits(65536) then SPECIAL64     F32  sample_f32_bits(65536) then SPECIAL32
  F16, BF16  every code 0..65535                  F8_*  every code 0..255
(sample_* as in ../quant/gen_golden.py: i * 2654435761 or i * 0x9E3779B97F4A7C15 with shaped
exponents; SPECIAL* below: zeros, infinities, NaN payloads, ties and overflow thresholds.)

References (independent of ingot):
  -> F64, F32, F16   NumPy astype (F64 -> F16 rounds once: npy_double_to_half). NaN outputs of
                     F64 get the quiet bit (ingot converts through the hardware, which quiets a
                     signalling NaN; NumPy's half -> double keeps it signalling).
  -> BF16            torch .to(torch.bfloat16) from the F32 value (F64 is rounded to F32 first,
                     as torch converts through float), NaN by the ggml rule (sign and top 7
                     payload bits, quiet bit set; torch writes 0x7FC0).
  -> F8_E4M3/E5M2    torch 1.13 has no float8: a brute-force search over every code's value
                     (decoded from the OCP definition) for the nearest to the F32 value, ties to
                     the even code, with one code past the largest finite value standing for
                     overflow (E4M3: 480 -> NaN 0x7F, E5M2: 65536 -> infinity 0x7C); NaN -> 0x7F,
                     sign kept (torch's float8_e4m3fn / float8_e5m2 conversions).
  F8 sources         decoded as ../quant/gen_golden.py's f8_decode does (OCP definitions).

Run with Debian's /usr/bin/python3 (NumPy 1.24, torch 1.13); the output is committed.
"""
import hashlib
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "quant"))
from gen_golden import f8_decode, sample_f32_bits, sample_f64_bits, to_bf16  # noqa: E402

SPECIAL32 = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC00001,
             0x7FA00000, 0x477FE000, 0x477FF000, 0x477FEFFF, 0x477FF001, 0x43E00000, 0x43E80000,
             0x43E80001, 0x43F00000, 0x47600000, 0x47700000, 0x476FFFFF, 0x47800000, 0x33800000,
             0x33000000, 0x33000001, 0x32FFFFFF, 0x3B000000, 0x3A800000, 0x3A800001, 0x37800000,
             0x3F800000, 0xBF800000, 0x3F801000, 0x3F803000, 0x3F808000, 0x3F818000, 0x3F810000,
             0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0x3F7FFFFF, 0x3F900000, 0x3F880000]
SPECIAL64 = [0x0000000000000000, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000,
             0x7FF8000000000000, 0x7FF0000000000001, 0xFFF4000000000000, 0x7FF0040000000000,
             0x40EFFE0000000000, 0x40EFFDFFFFFFFFFF, 0x40EFFC0000000000, 0x3E70000000000000,
             0x3E70000000000001, 0x3F70020000000000, 0x3FF0020000100000, 0x3FF0020000000000,
             0x3FF0060000000000, 0x3FF0010000000001, 0x3FF0030000000000, 0x0000000000000001,
             0x47EFFFFFE0000000, 0x47EFFFFFF0000000, 0x36A0000000000000, 0x369FFFFFFFFFFFFF]

OUT = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "F8_E4M3": "u1", "F8_E5M2": "u1"}


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def inputs(src):
    """(values as float64 where exact, as float32 for the F32 path, raw codes)."""
    if src == "F64":
        u = np.concatenate([sample_f64_bits(1 << 16), np.array(SPECIAL64, np.uint64)])
        return u.view(np.float64)
    if src == "F32":
        u = np.concatenate([sample_f32_bits(1 << 16), np.array(SPECIAL32, np.uint32)])
        return u.astype(np.uint32).view(np.float32)
    if src == "F16":
        return np.arange(65536, dtype=np.uint16).view(np.float16)
    if src == "BF16":
        c = np.arange(65536, dtype=np.uint16)
        return torch.from_numpy(c.view(np.int16).copy()).view(torch.bfloat16).float().numpy()
    codes = np.arange(256, dtype=np.uint8)
    return {"F8_E4M3": lambda: f8_decode(codes, 4, 3, 7, "fn"),
            "F8_E5M2": lambda: f8_decode(codes, 5, 2, 15, "ieee"),
            "F8_E4M3FNUZ": lambda: f8_decode(codes, 4, 3, 8, "fnuz"),
            "F8_E5M2FNUZ": lambda: f8_decode(codes, 5, 2, 16, "fnuz"),
            "F8_E8M0": e8m0}[src]()


def e8m0():
    codes = np.arange(256)
    with np.errstate(over="ignore"):
        v = np.ldexp(np.float64(1.0), codes - 127).astype(np.float32)
    return np.where(codes == 255, np.uint32(0x7FC00000).view(np.float32), v).astype(np.float32)


def f8_encode(x32, ebits, mbits, bias, over):
    """Nearest code by brute force; `over` is the value of the one code past the largest finite
    one (NaN for E4M3, infinity for E5M2)."""
    n_fin = 0x7E if ebits == 4 else 0x7B
    codes = np.arange(n_fin + 2)
    e = codes >> mbits
    m = codes & ((1 << mbits) - 1)
    val = np.where(e == 0, m * 2.0 ** (1 - bias - mbits), (1 + m / 2.0 ** mbits) * 2.0 ** (e - bias))
    val[n_fin + 1] = over
    x = x32.astype(np.float64)
    sign = np.signbit(x).astype(np.uint8) << 7
    a = np.abs(x)
    out = np.zeros(x.size, np.uint8)
    for k in range(0, x.size, 4096):
        d = np.abs(a[k:k + 4096, None] - val[None, :])
        best = d.min(axis=1, keepdims=True)
        cand = d == best
        # ties: the even code
        pick = np.where(cand & (codes[None, :] % 2 == 0), codes[None, :], 1 << 20).min(axis=1)
        only = np.where(cand, codes[None, :], 1 << 20).min(axis=1)
        out[k:k + 4096] = np.where(cand.sum(axis=1) > 1, pick, only)
    # beyond the overflow code's value the nearest code is that one (the distances above lose
    # their precision in float64 for huge inputs)
    out = np.where(a >= over, n_fin + 1, out)
    nan_code = 0x7F
    out = np.where(np.isinf(a), 0x7F if ebits == 4 else 0x7C, out)
    out = np.where(np.isnan(a), nan_code, out)
    return (out | sign).astype(np.uint8)


def cast(src, dst):
    x = inputs(src)
    if dst == "F64":
        y = x.astype(np.float64)
        u = y.view(np.uint64).copy()
        nan = np.isnan(y)
        u[nan] |= np.uint64(0x0008000000000000)
        return u
    if dst == "F32":
        return x.astype(np.float32)
    if dst == "F16":
        with np.errstate(over="ignore", invalid="ignore"):
            return x.astype(np.float16)
    x32 = x.astype(np.float32) if src != "F64" else _f64_to_f32(x)
    if dst == "BF16":
        return to_bf16(x32)
    if dst == "F8_E4M3":
        return f8_encode(x32, 4, 3, 7, 480.0)
    return f8_encode(x32, 5, 2, 15, 65536.0)


def _f64_to_f32(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(np.float32)


def main():
    srcs = ["F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
            "F8_E8M0"]
    lines = []
    for s in srcs:
        n = inputs(s).size
        for d in OUT:
            if d == s:
                continue
            y = np.asarray(cast(s, d))
            y = y.astype(OUT[d]) if y.dtype.kind == "f" else y.astype(OUT[d].replace("f", "u"))
            assert y.size == n
            lines.append("cast %s %s %d %s" % (s, d, n, sha(y)))
    # torch agrees with the F64 -> F32 -> BF16 path (it converts through float)
    x = inputs("F64")
    fin = np.isfinite(x)
    via = to_bf16(_f64_to_f32(x))[fin]
    direct = torch.from_numpy(x[fin].copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert (via == direct).all(), "torch rounds F64 -> BF16 another way"
    with open(os.path.join(HERE, "golden.txt"), "w") as fp:
        fp.write("# generated by gen_cast.py; see its docstring. cast SRC DST N SHA256\n")
        fp.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
