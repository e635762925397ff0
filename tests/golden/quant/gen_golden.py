#!/usr/bin/python3
"""Reference values for tests/test_quant.c (ingot_dequantize, ingot_f32_encode).

Writes, next to this script:
  blocks.bin  random GGML blocks of every type gguf-py decodes (scales forced finite; the first
              blocks of each type carry edge-case scales: zero, -0, subnormal, largest, negative)
  golden.txt  one line per check, "KIND DTYPE ARGS... SHA256", where SHA256 is the digest of the
              reference output as little-endian bytes:
                block  DTYPE OFFSET NBYTES NELEM SHA   blocks.bin[OFFSET:+NBYTES] -> f32
                table  DTYPE NCODES SHA                every code 0..NCODES-1 (u8/u16 LE) -> f32
                sample DTYPE N SHA                     N inputs from sample_bits() -> f32
                encode DTYPE N SHA                     N f32 inputs from sample_f32_bits() -> DTYPE
                fixture FILE TENSOR DTYPE SHA          a quantized tensor of ../shared/fixtures/gguf
                                                       dequantized (gguf-py) then rounded to DTYPE
                                                       (F16: NumPy, BF16: torch + the NaN rule), for
                                                       `ingot convert --dequantize F16|BF16`

References (independent of ingot):
  GGML blocks  gguf-py's gguf.quants.dequantize (llama.cpp's own Python package; `pip install gguf`
               or PYTHONPATH=<llama.cpp>/gguf-py). Checked first against the GGUF fixtures'
               dequant_sha256_f32le, which the fixture authors computed with the same package.
  F16, ints    NumPy astype(float32). F64 -> F32 NumPy astype(float32).
  BF16         torch (bfloat16 -> float32); F32 -> BF16 torch .to(bfloat16) for every non-NaN value,
               and for NaN the ggml rule (sign and top payload kept, quiet bit set) that torch does
               not follow (it returns 0x7FC0 for every NaN).
  F32 -> F16   NumPy astype(float16) (round to nearest even; NaN payload kept as NumPy does).
  F8, E8M0     No library here has float8 (NumPy 1.24, torch 1.13): a bit-level NumPy decoder
               written from the OCP 8-bit float spec (E4M3 "FN", E5M2, E8M0) and the FNUZ
               definitions (bias +1, 0x80 the only NaN); E5M2 is cross-checked as the top byte of a
               binary16. NaN outputs follow quant.h's convention (0x7FC00000, with the input's
               sign for E4M3/E5M2). The safetensors fixtures' F8 statistics (written by torch)
               are a second, independent check in test_quant.c.

Run with Debian's /usr/bin/python3 (NumPy 1.24, torch 1.13) plus gguf-py; the output is
committed, so CI needs none of them.
"""
import hashlib
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "..", "..", "..", "shared", "fixtures", "gguf")


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def f32le(a):
    return np.asarray(a, dtype="<f4")


# --- deterministic inputs shared with test_quant.c ---------------------------------------------

def sample_bits(n, width):
    """Integer bit patterns: i * golden-ratio constant, wrapped to `width` bits."""
    i = np.arange(n, dtype=np.uint64)
    if width == 32:
        return (i * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
    with np.errstate(over="ignore"):
        return i * np.uint64(0x9E3779B97F4A7C15)


def sample_f32_bits(n):
    """Every other pattern keeps a random exponent; the odd ones get exponents 100..145, where
    binary16 and its subnormals live."""
    u = sample_bits(n, 32)
    odd = (np.arange(n) & 1) == 1
    e = (np.uint64(100) + ((u >> np.uint64(23)) & np.uint64(0xFF)) % np.uint64(46)) << np.uint64(23)
    u = np.where(odd, (u & np.uint64(0x807FFFFF)) | e, u)
    return u.astype(np.uint32)


def sample_f64_bits(n):
    """Exponents 863..1182 (2^-160 .. 2^159): f32 overflow, normals, subnormals and underflow."""
    u = sample_bits(n, 64)
    e = (np.uint64(863) + ((u >> np.uint64(52)) & np.uint64(0x7FF)) % np.uint64(320)) << np.uint64(52)
    return (u & np.uint64(0x800FFFFFFFFFFFFF)) | e


# --- GGML blocks -------------------------------------------------------------------------------

# name: (block elems, block bytes, offsets of f16 scale fields)
BLOCKS = {
    "Q4_0": (32, 18, [0]), "Q4_1": (32, 20, [0, 2]), "Q5_0": (32, 22, [0]),
    "Q5_1": (32, 24, [0, 2]), "Q8_0": (32, 34, [0]), "Q2_K": (256, 84, [80, 82]),
    "Q3_K": (256, 110, [108]), "Q4_K": (256, 144, [0, 2]), "Q5_K": (256, 176, [0, 2]),
    "Q6_K": (256, 210, [208]), "IQ4_NL": (32, 18, [0]), "IQ4_XS": (256, 136, [0]),
    "TQ1_0": (256, 54, [52]), "TQ2_0": (256, 66, [64]), "MXFP4": (32, 17, []),
    "NVFP4": (64, 36, []), "Q1_0": (128, 18, [0]),
}
EDGE_SCALES = [0.0, -0.0, 2.0 ** -24, 3 * 2.0 ** -20, 65504.0, -1.5, 1e-3]


def make_blocks(rng, name):
    be, bb, scales = BLOCKS[name]
    nblk = 12 if be <= 64 else 8
    b = rng.randint(0, 256, size=(nblk, bb)).astype(np.uint8)
    for k in range(nblk):
        for off in scales:
            if k < len(EDGE_SCALES):
                v = EDGE_SCALES[(k + off) % len(EDGE_SCALES)]
            else:
                v = rng.standard_normal() * 0.05
            b[k, off:off + 2] = np.array([v], dtype="<f2").view(np.uint8)
    if name == "MXFP4":  # E8M0 scales: both subnormal ones, 1, the top two (overflow to inf)
        b[:6, 0] = [0, 1, 2, 127, 254, 255]
    return b


def gguf_blocks(lines):
    from gguf.constants import GGMLQuantizationType as T
    from gguf.quants import dequantize

    check_fixtures(dequantize, T, lines)
    rng = np.random.RandomState(20240531)
    blob = bytearray()
    for name in BLOCKS:
        b = make_blocks(rng, name)
        be, bb, _ = BLOCKS[name]
        with np.errstate(over="ignore"):  # MXFP4 scale 2^127 times 12 overflows, on purpose
            out = dequantize(b.reshape(1, -1), T[name]).reshape(-1)
        assert out.dtype == np.float32 and out.size == b.shape[0] * be
        lines.append("block %s %d %d %d %s" % (name, len(blob), b.size, out.size, sha(f32le(out))))
        blob += b.tobytes()
        while len(blob) % 8:
            blob += b"\0"
    with open(os.path.join(HERE, "blocks.bin"), "wb") as fp:
        fp.write(bytes(blob))


def to_bf16(x):
    import torch
    bf = torch.from_numpy(x.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    xb = x.view(np.uint32)
    nan = (xb & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(nan, ((xb >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16), bf)


def check_fixtures(dequantize, T, lines=None):
    import glob
    import json
    n = 0
    for side in sorted(glob.glob(os.path.join(FIX, "*.expected.json"))):
        d = json.load(open(side))
        data = open(side[: -len(".expected.json")], "rb").read()
        for t in d.get("tensors", []):
            if "dequant_sha256_f32le" not in t:
                continue
            raw = np.frombuffer(data, np.uint8, count=t["nbytes"], offset=t["file_offset"])
            out = dequantize(raw.reshape(1, -1), T[t["dtype"]])
            assert sha(f32le(out)) == t["dequant_sha256_f32le"], t["name"]
            n += 1
            if lines is not None:
                base = os.path.basename(side[: -len(".expected.json")])
                x = f32le(out).reshape(-1)
                lines.append("fixture %s %s F16 %s" % (base, t["name"], sha(x.astype("<f2"))))
                lines.append("fixture %s %s BF16 %s" % (base, t["name"], sha(to_bf16(x).astype("<u2"))))
    print("gguf-py agrees with the %d fixture digests" % n, file=sys.stderr)


# --- small floats ------------------------------------------------------------------------------

QNAN = np.uint32(0x7FC00000)


def f8_decode(codes, ebits, mbits, bias, kind):
    c = codes.astype(np.int64)
    s = c >> 7
    e = (c >> mbits) & ((1 << ebits) - 1)
    m = c & ((1 << mbits) - 1)
    mag = np.where(e == 0, m * 2.0 ** (1 - bias - mbits),
                   (1.0 + m / 2.0 ** mbits) * np.exp2(e.astype(np.float64) - bias))
    val = np.where(s == 1, -mag, mag).astype(np.float32)
    bits = val.view(np.uint32).copy()
    sign = (s.astype(np.uint32) << np.uint32(31)).astype(np.uint32)
    if kind == "fn":  # E4M3: S.1111.111 is NaN, no infinities
        nan = (e == 15) & (m == 7)
        bits = np.where(nan, sign | QNAN, bits)
    elif kind == "ieee":  # E5M2: exponent all ones is Inf/NaN
        top = e == (1 << ebits) - 1
        bits = np.where(top & (m == 0), sign | np.uint32(0x7F800000), bits)
        bits = np.where(top & (m != 0), sign | QNAN, bits)
    else:  # FNUZ: 0x80 the only NaN (it would read as -0)
        bits = np.where(c == 0x80, QNAN, bits)
    return bits.astype(np.uint32).view(np.float32)


def small_floats(lines):
    codes = np.arange(256, dtype=np.uint8)
    e4m3 = f8_decode(codes, 4, 3, 7, "fn")
    e5m2 = f8_decode(codes, 5, 2, 15, "ieee")
    via_half = (codes.astype(np.uint16) << 8).view(np.float16).astype(np.float32)
    ok = np.isnan(via_half) | (via_half.view(np.uint32) == e5m2.view(np.uint32))
    assert ok.all() and (np.isnan(via_half) == np.isnan(e5m2)).all()
    assert e4m3[0x7E] == 448.0 and e4m3[0x01] == 2.0 ** -9 and np.isnan(e4m3[0xFF])
    e4m3fnuz = f8_decode(codes, 4, 3, 8, "fnuz")
    e5m2fnuz = f8_decode(codes, 5, 2, 16, "fnuz")
    assert e4m3fnuz[0x7F] == 240.0 and e5m2fnuz[0x7F] == 57344.0
    with np.errstate(over="ignore"):  # code 255 (2^128) becomes NaN below
        e8m0 = np.ldexp(np.float64(1.0), codes.astype(np.int64) - 127).astype(np.float32)
    e8m0 = np.where(codes == 255, QNAN.view(np.float32), e8m0).astype(np.float32)
    for name, v in [("F8_E4M3", e4m3), ("F8_E5M2", e5m2), ("F8_E4M3FNUZ", e4m3fnuz),
                    ("F8_E5M2FNUZ", e5m2fnuz), ("F8_E8M0", e8m0)]:
        lines.append("table %s 256 %s" % (name, sha(f32le(v))))
    u8 = codes
    lines.append("table U8 256 %s" % sha(f32le(u8.astype(np.float32))))
    lines.append("table I8 256 %s" % sha(f32le(u8.view(np.int8).astype(np.float32))))
    lines.append("table BOOL 256 %s" % sha(f32le(u8.astype(bool).astype(np.float32))))
    u16 = np.arange(65536, dtype=np.uint16)
    lines.append("table U16 65536 %s" % sha(f32le(u16.astype(np.float32))))
    lines.append("table I16 65536 %s" % sha(f32le(u16.view(np.int16).astype(np.float32))))
    lines.append("table F16 65536 %s" % sha(f32le(u16.view(np.float16).astype(np.float32))))
    import torch
    bf = torch.from_numpy(u16.view(np.int16).copy()).view(torch.bfloat16).float().numpy()
    lines.append("table BF16 65536 %s" % sha(f32le(bf)))


def samples(lines):
    n = 1 << 16
    u32 = sample_bits(n, 32)
    u64 = sample_bits(n, 64)
    lines.append("sample U32 %d %s" % (n, sha(f32le(u32.astype(np.uint32).astype(np.float32)))))
    lines.append("sample I32 %d %s" % (n, sha(f32le(u32.astype(np.uint32).view(np.int32).astype(np.float32)))))
    lines.append("sample U64 %d %s" % (n, sha(f32le(u64.astype(np.float32)))))
    lines.append("sample I64 %d %s" % (n, sha(f32le(u64.view(np.int64).astype(np.float32)))))
    with np.errstate(over="ignore", invalid="ignore"):
        f64 = sample_f64_bits(n).view(np.float64).astype(np.float32)
    lines.append("sample F64 %d %s" % (n, sha(f32le(f64))))


def encodes(lines):
    n = 1 << 20
    x = sample_f32_bits(n).view(np.float32)
    with np.errstate(over="ignore"):
        h = x.astype("<f2")
    lines.append("encode F16 %d %s" % (n, sha(h)))
    lines.append("encode BF16 %d %s" % (n, sha(to_bf16(x).astype("<u2"))))


def main():
    lines = []
    gguf_blocks(lines)
    small_floats(lines)
    samples(lines)
    encodes(lines)
    with open(os.path.join(HERE, "golden.txt"), "w") as fp:
        fp.write("# generated by gen_golden.py; see its docstring. KIND DTYPE ARGS... SHA256\n")
        fp.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
