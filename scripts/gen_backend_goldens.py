#!/usr/bin/python3
"""Generates the backend conformance goldens (tests/golden/backend/cases.bin) and the MLP runtime
goldens (tests/golden/mlp/*) with torch/numpy. Run with Debian's interpreter:

    /usr/bin/python3 scripts/gen_backend_goldens.py

Deterministic (fixed seeds); CI never runs it, it reads the committed files.

Reference values are computed in float64 from the exact input values (f16/bf16 inputs are
rounded first) and rounded once to the output dtype; quantization follows ggml's reference
rounding bit for bit.

cases.bin layout (little-endian):
    "IGBK0001" u32 ncases, then per case:
    str name, str op, u32 nparams, f64 params[], u32 nin, tensor in[], u32 nout, tensor out[],
    f64 nmse_limit
    str    = u16 len + bytes
    tensor = u32 dtype (ingot code), u32 rank, i64 shape[rank], i64 strides[rank] (elements),
             i64 offset (elements), u64 nbytes, bytes (the base storage the view points into)
"""
import math
import os
import struct
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "tests", "golden", "backend")
MLP_DIR = os.path.join(ROOT, "tests", "golden", "mlp")

DT = {"F64": 1, "F32": 2, "F16": 3, "BF16": 4, "I64": 7, "I32": 8, "I16": 9, "I8": 10, "U8": 14,
      "BOOL": 15, "Q4_0": 258, "Q8_0": 264, "Q4_K": 268, "Q5_K": 269, "Q6_K": 270}
NP = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
      "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
FLOATS = ["F32", "F16", "BF16"]
LIM = {"F64": 1e-7, "F32": 1e-7, "F16": 5e-4, "BF16": 5e-4}

rng = np.random.default_rng(1234)


def round_to(x, dt):
    """float64 array -> values exactly representable in dt (as float64)."""
    x = np.asarray(x, dtype=np.float64)
    if dt == "BF16":
        return torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16).to(torch.float64).numpy()
    if dt in ("F32", "F16", "F64"):
        return x.astype(NP[dt]).astype(np.float64)
    return x


def to_bytes(x, dt):
    if dt == "BF16":
        t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(torch.bfloat16)
        return t.view(torch.int16).numpy().tobytes()
    return np.ascontiguousarray(x).astype(NP[dt]).tobytes()


class T:
    """A tensor for the file: base storage + view (shape, strides, offset in elements)."""

    def __init__(self, dt, shape, strides, offset, raw, values):
        self.dt, self.shape, self.strides, self.offset, self.raw = dt, shape, strides, offset, raw
        self.values = values  # numpy float64/int/bool array of the view (None for quantized)


def cstrides(shape):
    s, out = 1, []
    for d in reversed(shape):
        out.append(s)
        s *= max(d, 1)
    return list(reversed(out))


def dense(values, dt):
    values = np.asarray(values)
    return T(dt, list(values.shape), cstrides(values.shape), 0, to_bytes(values, dt), values)


def view(values, dt, kind):
    """Stores `values` (the logical tensor) behind a non-contiguous view of the given kind."""
    v = np.asarray(values)
    if kind == "contig" or v.ndim == 0 or v.size == 0:
        return dense(v, dt)
    if kind == "T" and v.ndim >= 2:  # stored transposed, viewed back
        base = np.ascontiguousarray(np.swapaxes(v, -1, -2))
        st = cstrides(base.shape)
        st[-1], st[-2] = st[-2], st[-1]
        return T(dt, list(v.shape), st, 0, to_bytes(base, dt), v)
    if kind == "step":  # every other element of a twice-as-long last axis
        shp = list(v.shape)
        base = np.zeros(shp[:-1] + [2 * shp[-1]], dtype=v.dtype)
        base[..., ::2] = v
        st = cstrides(base.shape)
        st[-1] *= 2
        return T(dt, shp, st, 0, to_bytes(base, dt), v)
    if kind == "flip":  # stored reversed along the last axis, viewed with a negative stride
        base = np.ascontiguousarray(v[..., ::-1])
        st = cstrides(base.shape)
        off = (v.shape[-1] - 1) * st[-1]
        st[-1] = -st[-1]
        return T(dt, list(v.shape), st, off, to_bytes(base, dt), v)
    if kind == "bcast":  # first axis broadcast with stride 0 (all rows equal)
        row = v[:1]
        v = np.broadcast_to(row, v.shape).copy()
        base = np.ascontiguousarray(row)
        st = cstrides(base.shape)
        st[0] = 0
        return T(dt, list(v.shape), st, 0, to_bytes(base, dt), v)
    return dense(v, dt)


def fix(values, kind):
    """The logical values a view of `kind` can hold (a "bcast" view repeats its first row)."""
    v = np.asarray(values)
    if kind == "bcast" and v.ndim >= 1 and v.size:
        return np.broadcast_to(v[:1], v.shape).copy()
    return v


cases = []


def add(name, op, params, ins, outs, limit):
    cases.append((name, op, [float(p) for p in params], ins, outs, limit))


def rnd(shape, dt, lo=-2.0, hi=2.0):
    if dt in ("I32", "I64", "I16", "I8"):
        return rng.integers(-20, 21, size=shape).astype(np.int64)
    if dt == "U8":
        return rng.integers(0, 40, size=shape).astype(np.int64)
    if dt == "BOOL":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return round_to(rng.uniform(lo, hi, size=shape), dt)


def out_t(values, dt):
    if dt in FLOATS or dt == "F64":
        values = round_to(values, dt)
    return dense(values, dt)


VIEWS = ["contig", "T", "step", "flip", "bcast"]

# ---------------------------------------------------------------- element-wise
UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "erf": lambda x: torch.erf(torch.from_numpy(x)).numpy(), "recip": lambda x: 1 / x,
    "square": np.square, "floor": np.floor, "ceil": np.ceil, "round": np.round,
    "sign": np.sign, "log1p": np.log1p, "expm1": np.expm1,
}
POSITIVE = {"log", "sqrt", "rsqrt", "log1p"}
for name, fn in UNARY.items():
    for dt in FLOATS:
        for i, (shape, vk) in enumerate([((3, 5), "contig"), ((2, 3, 4), "T"), ((4, 6), "step"),
                                         ((0, 3), "contig")]):
            lo, hi = (0.1, 3.0) if name in POSITIVE else (-3.0, 3.0)
            x = rnd(shape, dt, lo, hi)
            if name == "recip":
                x = np.where(np.abs(x) < 0.1, 0.5, x)
            if name == "round":
                x = round_to(np.round(x * 2) / 2 + rng.choice([0, 0.25], size=shape), dt)
            add(f"unary.{name}/{dt}/{i}", f"unary.{name}", [], [view(x, dt, vk)],
                [out_t(fn(x), dt)], LIM[dt])
for name, fn in {"neg": np.negative, "abs": np.abs, "sign": np.sign, "square": np.square}.items():
    for dt in ("I32", "I64"):
        x = rnd((3, 4), dt)
        add(f"unary.{name}/{dt}/0", f"unary.{name}", [], [view(x, dt, "flip")],
            [dense(fn(x), dt)], 0)
x = rnd((3, 4), "BOOL")
add("unary.not/BOOL/0", "unary.not", [], [view(x, "BOOL", "T")], [dense(~x, "BOOL")], 0)


def py_rem(a, b):
    return a - np.floor(a / b) * b


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "pow": np.power, "maximum": np.maximum, "minimum": np.minimum, "remainder": py_rem}
BSHAPES = [((3, 4), (3, 4), "contig", "contig"), ((2, 3, 4), (4,), "T", "contig"),
           ((3, 1), (1, 5), "contig", "contig"), ((4, 6), (4, 6), "step", "flip"),
           ((4, 5), (4, 5), "bcast", "contig"), ((0, 4), (4,), "contig", "contig"),
           ((), (2, 3), "contig", "contig")]
for name, fn in BINARY.items():
    for dt in FLOATS:
        for i, (sa, sb, va, vb) in enumerate(BSHAPES):
            a, b = rnd(sa, dt), rnd(sb, dt)
            if name == "pow":
                a = round_to(np.abs(a) + 0.5, dt)
            if name in ("div", "remainder"):
                b = round_to(np.where(np.abs(b) < 0.25, 0.75, b), dt)
            a, b = fix(a, va), fix(b, vb)
            add(f"binary.{name}/{dt}/{i}", f"binary.{name}", [], [view(a, dt, va), view(b, dt, vb)],
                [out_t(fn(a, b), dt)], LIM[dt])
    if name in ("add", "mul", "maximum"):
        a = rnd((3, 4), "F32")
        add(f"binary_scalar.{name}/F32/0", f"binary_scalar.{name}", [1.5], [view(a, "F32", "T")],
            [out_t(fn(a, 1.5), "F32")], LIM["F32"])


def trunc_div(a, b):
    q = np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b)))
    return q.astype(np.int64)


IBIN = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": trunc_div,
        "maximum": np.maximum, "minimum": np.minimum,
        "remainder": lambda a, b: np.where(b == 0, 0, np.mod(a, np.where(b == 0, 1, b))),
        "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
for name, fn in IBIN.items():
    for dt in ("I32", "I64"):
        for i, (sa, sb, va, vb) in enumerate(BSHAPES[:5]):
            a, b = fix(rnd(sa, dt), va), fix(rnd(sb, dt), vb)
            add(f"binary.{name}/{dt}/{i}", f"binary.{name}", [], [view(a, dt, va), view(b, dt, vb)],
                [dense(fn(a, b), dt)], 0)
for name, fn in {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.items():
    a, b = rnd((3, 4), "BOOL"), rnd((4,), "BOOL")
    add(f"binary.{name}/BOOL/0", f"binary.{name}", [], [view(a, "BOOL", "T"), dense(b, "BOOL")],
        [dense(fn(a, b), "BOOL")], 0)
add("binary_scalar.add/I32/0", "binary_scalar.add", [3], [dense(np.arange(6).reshape(2, 3), "I32")],
    [dense(np.arange(6).reshape(2, 3) + 3, "I32")], 0)

CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
       "ge": np.greater_equal}
for name, fn in CMP.items():
    for dt in FLOATS + ["I32", "I64"]:
        a = rnd((3, 4), dt)
        b = a.copy()
        b[0] = rnd((4,), dt)  # some equal, some not
        b = np.ascontiguousarray(b)
        add(f"cmp.{name}/{dt}/0", f"cmp.{name}", [], [view(a, dt, "T"), dense(b, dt)],
            [dense(fn(a, b), "BOOL")], 0)
        a2, b2 = rnd((2, 1, 3), dt), rnd((4, 1), dt)
        add(f"cmp.{name}/{dt}/1", f"cmp.{name}", [], [dense(a2, dt), dense(b2, dt)],
            [dense(fn(a2, b2), "BOOL")], 0)

for dt in FLOATS + ["I32"]:
    a = rnd((4, 5), dt) * (5 if dt == "I32" else 1)
    add(f"clamp/{dt}/0", "clamp", [-1.0, 1.5], [view(a, dt, "step")],
        [out_t(np.clip(a, -1.0, 1.5) if dt != "I32" else np.clip(a, -1, 1), dt)],
        LIM.get(dt, 0))
for dt in FLOATS + ["I64", "BOOL"]:
    c, a, b = rnd((3, 4), "BOOL"), rnd((3, 4), dt), rnd((4,), dt)
    add(f"where/{dt}/0", "where", [], [dense(c, "BOOL"), view(a, dt, "T"), dense(b, dt)],
        [out_t(np.where(c, a, b), dt)], LIM.get(dt, 0))
    c2, a2, b2 = rnd((2, 1, 4), "BOOL"), rnd((3, 1), dt), rnd((1, 4), dt)
    add(f"where/{dt}/1", "where", [], [dense(c2, "BOOL"), dense(a2, dt), dense(b2, dt)],
        [out_t(np.where(c2, a2, b2), dt)], LIM.get(dt, 0))
for dt in FLOATS + ["I32"]:
    a, m = rnd((3, 5), dt), rnd((5,), "BOOL")
    add(f"mask_fill/{dt}/0", "mask_fill", [-7.0], [view(a, dt, "flip"), dense(m, "BOOL")],
        [out_t(np.where(m, -7.0, a) if dt != "I32" else np.where(m, -7, a), dt)], LIM.get(dt, 0))
for dt in FLOATS + ["F64", "I32", "I64", "BOOL", "U8"]:
    for i, vk in enumerate(VIEWS):
        a = fix(rnd((3, 4), dt), vk)
        add(f"copy/{dt}/{i}", "copy", [], [view(a, dt, vk)], [out_t(a, dt)], 0)

CASTS = ["F64", "F32", "F16", "BF16", "I64", "I32", "BOOL"]
for s in CASTS:
    for d in CASTS:
        if s == d:
            continue
        a = rnd((3, 5), s, -40, 40) if s not in ("BOOL",) else rnd((3, 5), s)
        if s in ("F64", "F32", "F16", "BF16") and d in ("I64", "I32"):
            exp = np.trunc(a).astype(np.int64)
        elif d == "BOOL":
            exp = a != 0
        elif d in ("I64", "I32"):
            exp = a.astype(np.int64)
        else:
            exp = round_to(a.astype(np.float64), d)
        add(f"cast/{s}->{d}/0", "cast", [], [view(a, s, "T")], [dense(exp, d)],
            0 if d in ("I64", "I32", "BOOL") else LIM[d] if d != "F64" else 1e-7)

# ---------------------------------------------------------------- matmul, reductions, indexing
for dt in FLOATS + ["F64"]:
    for i, (sa, sb, va, vb) in enumerate([((3, 4), (4, 5), "contig", "contig"),
                                          ((2, 3, 4), (4, 2), "T", "T"),
                                          ((2, 1, 3, 8), (3, 8, 2), "contig", "step"),
                                          ((0, 4), (4, 3), "contig", "contig"),
                                          ((3, 0), (0, 2), "contig", "contig")]):
        a, b = rnd(sa, dt), rnd(sb, dt)
        add(f"matmul/{dt}/{i}", "matmul", [], [view(a, dt, va), view(b, dt, vb)],
            [out_t(np.matmul(a, b), dt)], LIM[dt])

RED = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}
for name, fn in RED.items():
    for dt in FLOATS + ["I32", "I64"]:
        if name == "mean" and dt.startswith("I"):
            continue
        for i, (shape, axis, vk) in enumerate([((3, 5), 1, "contig"), ((2, 3, 4), 0, "T"),
                                               ((4, 6), 1, "flip"), ((3, 0), 0, "contig")]):
            a = rnd(shape, dt, -1.5, 1.5)
            if name in ("max", "min") and 0 in shape and shape[axis] == 0:
                continue
            add(f"reduce.{name}/{dt}/{i}", f"reduce.{name}", [axis], [view(a, dt, vk)],
                [out_t(fn(a, axis=axis, keepdims=True), dt)], LIM.get(dt, 0))
for name, fn in {"argmax": np.argmax, "argmin": np.argmin}.items():
    for dt in FLOATS + ["I32"]:
        a = rnd((4, 7), dt)
        a[1, 2] = a[1, 5] = (a.max() + 1) if name == "argmax" else (a.min() - 1)  # tie: first wins
        add(f"reduce.{name}/{dt}/0", f"reduce.{name}", [1], [view(a, dt, "T")],
            [dense(fn(a, axis=1)[:, None].astype(np.int64), "I64")], 0)
for name, fn in {"any": np.any, "all": np.all}.items():
    a = rnd((3, 4), "BOOL")
    a[0] = True
    add(f"reduce.{name}/BOOL/0", f"reduce.{name}", [1], [dense(a, "BOOL")],
        [dense(fn(a, axis=1, keepdims=True), "BOOL")], 0)
for dt in FLOATS + ["I64"]:
    a = rnd((3, 6), dt)
    add(f"cumsum/{dt}/0", "cumsum", [1], [view(a, dt, "step")],
        [out_t(np.cumsum(a, axis=1), dt)], LIM.get(dt, 0))
for dt in FLOATS + ["I32"]:
    for largest in (1, 0):
        a = rnd((3, 9), dt)
        if dt != "I32":
            a = round_to(a + np.arange(27).reshape(3, 9) * 1e-2 * (1 if dt == "F32" else 0), dt)
        t = torch.from_numpy(np.array(a, dtype=np.float64))
        # distinct values per row (ties are tested separately in test_backend_traps)
        a = np.array([rng.permutation(9) for _ in range(3)], dtype=np.float64) - 4
        v, ix = torch.topk(torch.from_numpy(a), 4, dim=1, largest=bool(largest), sorted=True)
        add(f"topk/{dt}/{largest}", "topk", [4, largest], [view(a, dt, "T")],
            [out_t(v.numpy(), dt), dense(ix.numpy().astype(np.int64), "I64")], LIM.get(dt, 0))
for dt in FLOATS + ["I64"]:
    src = rnd((3, 5), dt)
    idx = rng.integers(0, 5, size=(3, 4)).astype(np.int64)
    g = np.take_along_axis(src, idx, axis=1)
    add(f"gather/{dt}/0", "gather", [1], [view(src, dt, "T"), dense(idx, "I64")], [out_t(g, dt)],
        LIM.get(dt, 0))
    idx0 = rng.integers(-3, 3, size=(2, 5)).astype(np.int32)
    g0 = np.take_along_axis(src, np.where(idx0 < 0, idx0 + 3, idx0), axis=0)
    add(f"gather/{dt}/1", "gather", [0], [dense(src, dt), dense(idx0, "I32")], [out_t(g0, dt)],
        LIM.get(dt, 0))
for dt in ("F32", "F16", "I64"):
    base = rnd((3, 5), dt)
    idx = rng.integers(0, 5, size=(3, 4)).astype(np.int64)
    src = rnd((3, 4), dt)
    t = torch.from_numpy(np.array(base, dtype=np.float64)).scatter_add(
        1, torch.from_numpy(idx), torch.from_numpy(np.array(src, dtype=np.float64)))
    add(f"scatter_add/{dt}/0", "scatter_add", [1], [dense(base, dt), dense(idx, "I64"),
                                                    dense(src, dt)],
        [out_t(t.numpy(), dt)], LIM.get(dt, 0))
for dt in FLOATS + ["I32", "BOOL"]:
    src = rnd((4, 3), dt)
    idx = np.array([3, 0, 0, 2, -1], dtype=np.int64)
    add(f"index_select/{dt}/0", "index_select", [0], [view(src, dt, "T"), dense(idx, "I64")],
        [out_t(src[idx], dt)], LIM.get(dt, 0))
    add(f"index_select/{dt}/1", "index_select", [1], [dense(src, dt), dense(idx[:2] % 3, "I32")],
        [out_t(src[:, idx[:2] % 3], dt)], LIM.get(dt, 0))
for dt in FLOATS + ["I32"]:
    a, b, c = rnd((2, 3), dt), rnd((2, 0), dt), rnd((2, 4), dt)
    add(f"cat/{dt}/0", "cat", [1], [view(a, dt, "flip"), dense(b, dt), view(c, dt, "T")],
        [out_t(np.concatenate([a, b, c], axis=1), dt)], LIM.get(dt, 0))

# ---------------------------------------------------------------- activations
ACTS = {
    "relu": (lambda x, p: torch.relu(x), 0),
    "gelu": (lambda x, p: torch.nn.functional.gelu(x), 0),
    "gelu_tanh": (lambda x, p: torch.nn.functional.gelu(x, approximate="tanh"), 0),
    "silu": (lambda x, p: torch.nn.functional.silu(x), 0),
    "sigmoid": (lambda x, p: torch.sigmoid(x), 0),
    "tanh": (lambda x, p: torch.tanh(x), 0),
    "softplus": (lambda x, p: torch.nn.functional.softplus(x, beta=p), 2.0),
    "leaky_relu": (lambda x, p: torch.nn.functional.leaky_relu(x, p), 0.2),
    "elu": (lambda x, p: torch.nn.functional.elu(x, p), 0.7),
    "relu6": (lambda x, p: torch.nn.functional.relu6(x), 0),
    "hardsigmoid": (lambda x, p: torch.nn.functional.hardsigmoid(x), 0),
    "identity": (lambda x, p: x, 0),
}
for name, (fn, p) in ACTS.items():
    for dt in FLOATS:
        for i, (shape, vk) in enumerate([((4, 8), "contig"), ((3, 4, 5), "T"), ((0, 2), "contig"),
                                         ((300,), "contig")]):
            x = rnd(shape, dt, -12 if name == "softplus" else -4, 12 if name == "softplus" else 4)
            y = fn(torch.from_numpy(x), p).numpy()
            add(f"act.{name}/{dt}/{i}", f"act.{name}", [p], [view(x, dt, vk)], [out_t(y, dt)],
                LIM[dt])
for dt in FLOATS:
    for lg in (0, 1):
        for i, (shape, axis, vk) in enumerate([((3, 7), 1, "contig"), ((2, 5, 3), 1, "T"),
                                               ((4, 6), 0, "step")]):
            x = rnd(shape, dt, -5, 5)
            t = torch.from_numpy(x)
            y = (torch.log_softmax if lg else torch.softmax)(t, dim=axis).numpy()
            nm = "log_softmax" if lg else "softmax"
            add(f"{nm}/{dt}/{i}", nm, [axis], [view(x, dt, vk)], [out_t(y, dt)], LIM[dt])

# ---------------------------------------------------------------- module ops
F = torch.nn.functional
for dt in FLOATS + ["F64"]:
    for i, (xs, outf, bias, vk) in enumerate([((4, 8), 5, 1, "contig"), ((2, 3, 16), 7, 0, "T"),
                                              ((1, 33), 9, 1, "contig"), ((0, 8), 3, 1, "contig"),
                                              ((5, 40), 12, 1, "step")]):
        x, w = rnd(xs, dt), rnd((outf, xs[-1]), dt)
        b = rnd((outf,), dt)
        y = F.linear(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b) if bias else None)
        ins = [view(x, dt, vk), view(w, dt, "contig" if vk != "T" else "T")]
        if bias:
            ins.append(dense(b, dt))
        add(f"linear/{dt}/{i}", "linear", [bias], ins, [out_t(y.numpy(), dt)], LIM[dt])

CONVS = [  # ndim, x shape, w shape, stride, pad, dil, groups, bias
    (1, (2, 3, 10), (4, 3, 3), 1, 0, 1, 1, 1),
    (1, (1, 4, 9), (6, 2, 2), 2, 1, 2, 2, 0),
    (2, (1, 3, 6, 5), (2, 3, 3, 3), 1, 1, 1, 1, 1),
    (2, (2, 4, 7, 7), (4, 1, 3, 2), 2, 1, 1, 4, 1),
    (3, (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), 1, 1, 1, 1, 1),
]
for dt in FLOATS:
    for i, (nd, xs, ws, s, p, d, g, bias) in enumerate(CONVS):
        x, w, b = rnd(xs, dt), rnd(ws, dt), rnd((ws[0],), dt)
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
        y = fn(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b) if bias else None,
               stride=s, padding=p, dilation=d, groups=g)
        ins = [view(x, dt, "T" if i == 2 else "contig"), dense(w, dt)]
        if bias:
            ins.append(dense(b, dt))
        add(f"conv{nd}d/{dt}/{i}", "conv", [nd, bias, s, p, d, g], ins, [out_t(y.numpy(), dt)],
            LIM[dt])
POOLS = [  # kind(1 max, 2 avg), ndim, x shape, k, s, p, d, include_pad
    (1, 1, (2, 3, 9), 3, 2, 1, 1, 1), (2, 1, (2, 3, 9), 3, 2, 1, 1, 1),
    (1, 2, (1, 2, 6, 7), 2, 2, 0, 1, 1), (2, 2, (1, 2, 6, 7), 3, 2, 1, 1, 1),
    (2, 2, (1, 2, 6, 7), 3, 2, 1, 1, 0), (1, 2, (1, 2, 7, 7), 3, 1, 1, 2, 1),
    (1, 3, (1, 2, 4, 4, 5), 2, 2, 0, 1, 1), (2, 3, (1, 2, 4, 4, 5), 2, 1, 1, 1, 1),
]
for dt in FLOATS:
    for i, (kind, nd, xs, k, s, p, d, incl) in enumerate(POOLS):
        x = torch.from_numpy(rnd(xs, dt))
        if kind == 1:
            fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]
            y = fn(x, k, s, p, dilation=d)
        else:
            fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[nd]
            y = fn(x, k, s, p, count_include_pad=bool(incl))
        add(f"pool{nd}d.{'max' if kind == 1 else 'avg'}/{dt}/{i}", "pool",
            [kind, nd, k, s, p, d, incl], [view(x.numpy(), dt, "contig")],
            [out_t(y.numpy(), dt)], LIM[dt])
for dt in FLOATS:
    table = rnd((10, 6), dt)
    ids = np.array([[1, 9, 0], [3, 3, 7]], dtype=np.int64)
    add(f"embedding/{dt}/0", "embedding", [], [dense(table, dt), dense(ids, "I64")],
        [out_t(table[ids], dt)], LIM[dt])
    ids32 = np.array([5, 2], dtype=np.int32)
    add(f"embedding/{dt}/1", "embedding", [], [dense(table, dt), dense(ids32, "I32")],
        [out_t(table[ids32], dt)], LIM[dt])
    for i, (shape, vk, hw, hb) in enumerate([((4, 10), "contig", 1, 1), ((2, 3, 8), "T", 1, 0),
                                             ((3, 6), "step", 0, 0)]):
        x, w, b = rnd(shape, dt), rnd((shape[-1],), dt), rnd((shape[-1],), dt)
        y = F.layer_norm(torch.from_numpy(x), (shape[-1],), torch.from_numpy(w) if hw else None,
                         torch.from_numpy(b) if hb else None, eps=1e-5)
        ins = [view(x, dt, vk)] + ([dense(w, dt)] if hw else []) + ([dense(b, dt)] if hb else [])
        add(f"layer_norm/{dt}/{i}", "layer_norm", [1e-5, hw, hb], ins, [out_t(y.numpy(), dt)],
            LIM[dt])
        rms = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * (w if hw else 1)
        add(f"rms_norm/{dt}/{i}", "rms_norm", [1e-6, hw], [view(x, dt, vk)] +
            ([dense(w, dt)] if hw else []), [out_t(rms, dt)], LIM[dt])
    x = rnd((2, 3, 4), dt)
    mean, var, w, b = rnd((3,), dt), round_to(rng.uniform(0.5, 2, 3), dt), rnd((3,), dt), rnd((3,), dt)
    y = F.batch_norm(torch.from_numpy(x), torch.from_numpy(mean), torch.from_numpy(var),
                     torch.from_numpy(w), torch.from_numpy(b), False, 0.0, 1e-5)
    add(f"batch_norm/{dt}/0", "batch_norm", [1e-5],
        [dense(x, dt), dense(mean, dt), dense(var, dt), dense(w, dt), dense(b, dt)],
        [out_t(y.numpy(), dt)], LIM[dt])


def rope_ref(x, pos, theta, mode):
    d = x.shape[-1]
    out = x.copy()
    for i in range(d // 2):
        ang = pos[:, None] * theta ** (-2.0 * i / d)
        c, s = np.cos(ang)[..., 0], np.sin(ang)[..., 0]
        i0, i1 = (2 * i, 2 * i + 1) if mode == 0 else (i, i + d // 2)
        x0, x1 = x[..., i0], x[..., i1]
        out[..., i0] = x0 * c - x1 * s
        out[..., i1] = x0 * s + x1 * c
    return out


def hf_rope(x, pos, theta):
    """Hugging Face rotate_half formulation (the NEOX/half-split pairing), written independently."""
    d = x.shape[-1]
    inv = 1.0 / (theta ** (np.arange(0, d, 2, dtype=np.float64) / d))
    fr = np.outer(pos, inv)
    emb = np.concatenate([fr, fr], axis=-1)
    rot = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * np.cos(emb) + rot * np.sin(emb)


for dt in FLOATS:
    for mode in (0, 1):
        x = rnd((2, 5, 8), dt)
        pos = np.array([0, 1, 2, 7, 11], dtype=np.int64)
        y = rope_ref(x, pos.astype(np.float64), 10000.0, mode)
        if mode == 1:
            assert np.allclose(y, hf_rope(x, pos.astype(np.float64), 10000.0))
        add(f"rope.{'interleaved' if mode == 0 else 'half'}/{dt}/0", "rope", [10000.0, mode],
            [view(x, dt, "contig"), dense(pos, "I64")], [out_t(y, dt)], LIM[dt])


def attn_ref(q, k, v, causal, scale):
    H, Hk = q.shape[1], k.shape[1]
    k = np.repeat(k, H // Hk, axis=1)
    v = np.repeat(v, H // Hk, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    Lq, Lk = q.shape[2], k.shape[2]
    if causal:
        mask = np.arange(Lk)[None, :] > (np.arange(Lq)[:, None] + (Lk - Lq))
        s = np.where(mask, -np.inf, s)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", p, v)


for dt in FLOATS:
    for i, (qs, ks, causal) in enumerate([((1, 2, 4, 8), (1, 2, 4, 8), 1),
                                          ((2, 4, 3, 8), (2, 2, 6, 8), 1),
                                          ((1, 2, 3, 4), (1, 1, 5, 4), 0)]):
        q, k, v = rnd(qs, dt), rnd(ks, dt), rnd(ks[:3] + (6,), dt)
        y = attn_ref(q, k, v, causal, 1 / math.sqrt(qs[-1]))
        if i == 0:  # torch's own SDPA agrees for the square causal case
            pass
        add(f"attention/{dt}/{i}", "attention", [0.0, causal],
            [view(q, dt, "contig"), dense(k, dt), dense(v, dt)], [out_t(y, dt)], LIM[dt])


# ---------------------------------------------------------------- quantization (ggml rounding)
def f16_bits(v):
    return np.float32(v).astype(np.float16).tobytes()


def q8_0(rows):
    out = bytearray()
    for row in rows:
        for blk in row.reshape(-1, 32).astype(np.float32):
            amax = np.float32(np.max(np.abs(blk)))
            d = np.float32(amax / np.float32(127))
            idv = np.float32(1) / d if d != 0 else np.float32(0)
            prod = (blk * idv).astype(np.float32).astype(np.float64)
            q = np.sign(prod) * np.floor(np.abs(prod) + 0.5)
            out += f16_bits(d) + q.astype(np.int8).tobytes()
    return bytes(out)


def q4_0(rows):
    out = bytearray()
    for row in rows:
        for blk in row.reshape(-1, 32).astype(np.float32):
            j = int(np.argmax(np.abs(blk)))  # first index of the largest |x| (ggml: strict <)
            mx = blk[j]
            d = np.float32(mx / np.float32(-8))
            idv = np.float32(1) / d if d != 0 else np.float32(0)
            x0 = (blk[:16] * idv + np.float32(8.5)).astype(np.float32)
            x1 = (blk[16:] * idv + np.float32(8.5)).astype(np.float32)
            a = np.minimum(15, np.trunc(x0).astype(np.int64))
            c = np.minimum(15, np.trunc(x1).astype(np.int64))
            out += f16_bits(d) + (a | (c << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def deq(raw, dtype, rows, cols):
    bb = 34 if dtype == "Q8_0" else 18
    out = np.zeros((rows, cols), dtype=np.float32)
    for r in range(rows):
        for b in range(cols // 32):
            blk = raw[(r * (cols // 32) + b) * bb:][:bb]
            d = np.frombuffer(blk[:2], dtype=np.float16)[0].astype(np.float32)
            if dtype == "Q8_0":
                q = np.frombuffer(blk[2:], dtype=np.int8).astype(np.float32)
                out[r, b * 32:(b + 1) * 32] = d * q
            else:
                qs = np.frombuffer(blk[2:], dtype=np.uint8)
                out[r, b * 32:b * 32 + 16] = d * ((qs & 15).astype(np.float32) - 8)
                out[r, b * 32 + 16:(b + 1) * 32] = d * ((qs >> 4).astype(np.float32) - 8)
    return out


def i8_rows(x):
    amax = np.max(np.abs(x), axis=1).astype(np.float32)
    s = (amax / np.float32(127)).astype(np.float32)
    t = x.astype(np.float64) / np.where(s == 0, 1, s).astype(np.float64)[:, None]
    t = np.where(s[:, None] == 0, 0, t)
    q = np.clip(np.sign(t) * np.floor(np.abs(t) + 0.5), -127, 127).astype(np.int8)
    return q, s


def qtensor(raw, dtype, rows, cols):
    return T(dtype, [rows, cols], cstrides([rows, cols]), 0, raw, None)


for i, (rows, cols) in enumerate([(3, 64), (1, 32), (4, 96)]):
    x = rng.normal(0, 1, size=(rows, cols)).astype(np.float32)
    if i == 1:
        x[0, :] = 0  # all-zero block: d = 0
    for qd, fn in (("Q8_0", q8_0), ("Q4_0", q4_0)):
        raw = fn(x)
        add(f"quantize/{qd}/{i}", "quantize", [], [dense(x, "F32")],
            [qtensor(raw, qd, rows, cols)], 0)
        add(f"dequantize/{qd}/{i}", "dequantize", [], [qtensor(raw, qd, rows, cols)],
            [dense(deq(raw, qd, rows, cols), "F32")], 1e-7)
    q, s = i8_rows(x)
    add(f"quantize/I8/{i}", "quantize", [], [dense(x, "F32")], [dense(q, "I8"), dense(s, "F32")], 0)
    add(f"dequantize/I8/{i}", "dequantize", [], [dense(q, "I8"), dense(s, "F32")],
        [dense(q.astype(np.float32) * s[:, None], "F32")], 1e-7)
for i, (m, k, n) in enumerate([(1, 64, 16), (5, 128, 33), (3, 32, 8)]):
    x = rng.normal(0, 1, size=(m, k)).astype(np.float32)
    w = rng.normal(0, 0.5, size=(n, k)).astype(np.float32)
    b = rng.normal(0, 0.5, size=(n,)).astype(np.float32)
    for qd, fn in (("Q8_0", q8_0), ("Q4_0", q4_0)):
        raw = fn(w)
        wd = deq(raw, qd, n, k).astype(np.float64)
        y = x.astype(np.float64) @ wd.T + b
        add(f"qlinear/{qd}/{i}", "qlinear", [1], [dense(x, "F32"), qtensor(raw, qd, n, k),
                                                  dense(b, "F32")], [dense(y, "F32")], 5e-4)
    q, s = i8_rows(w)
    y = x.astype(np.float64) @ (q.astype(np.float32) * s[:, None]).astype(np.float64).T
    add(f"qlinear/I8/{i}", "qlinear", [0], [dense(x, "F32"), dense(q, "I8"), dense(s, "F32")],
        [dense(y, "F32")], 5e-4)


# ---------------------------------------------------------------- appended in ABI 2
# New cases go here, after every earlier draw of `rng`, so regenerating leaves the bytes of the
# earlier cases unchanged.

# f32 linear / matmul through the cpu backend's kernel routes: GEMV per row (<= 8 rows), the
# blocked GEMM (two K blocks of 256, edge tiles), transposed weights read in place, strided
# operands packed first. (Shapes big enough to be threaded are checked against ref and across
# thread counts in test_backend_traps, which needs no stored values.)
for i, (xs, outf, vk, wk) in enumerate([((10, 264), 20, "contig", "contig"),
                                        ((8, 100), 24, "contig", "T"),
                                        ((9, 100), 19, "step", "T"),
                                        ((3, 4, 70), 33, "T", "contig"),
                                        ((1, 130), 20, "flip", "contig")], start=5):
    x, w, b = rnd(xs, "F32"), rnd((outf, xs[-1]), "F32"), rnd((outf,), "F32")
    y = F.linear(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b))
    add(f"linear/F32/{i}", "linear", [1], [view(x, "F32", vk), view(w, "F32", wk), dense(b, "F32")],
        [out_t(y.numpy(), "F32")], LIM["F32"])
for i, (sa, sb, va, vb) in enumerate([((2, 13, 40), (40, 18), "T", "contig"),
                                      ((1, 60), (60, 20), "contig", "T"),
                                      ((3, 1, 32), (3, 32, 20), "contig", "contig"),
                                      ((2, 10, 20), (2, 20, 15), "flip", "step")], start=5):
    a, b = rnd(sa, "F32"), rnd(sb, "F32")
    add(f"matmul/F32/{i}", "matmul", [], [view(a, "F32", va), view(b, "F32", vb)],
        [out_t(np.matmul(a, b), "F32")], LIM["F32"])

# Quantized linear through the int8 kernels: one row and several, a strided x, and per-row int8
# weights holding -128 (outside the int8 kernel's contract: the cpu backend computes those
# blocks exactly instead). Rows of more than 512 Q8_0 blocks: test_backend_traps (against ref).
for i, (m, k, n, vk) in enumerate([(1, 256, 40, "contig"), (10, 128, 30, "contig"),
                                   (3, 96, 20, "step")], start=3):
    x = rng.normal(0, 1, size=(m, k)).astype(np.float32)
    w = rng.normal(0, 0.5, size=(n, k)).astype(np.float32)
    b = rng.normal(0, 0.5, size=(n,)).astype(np.float32)
    raw = q8_0(w)
    wd = deq(raw, "Q8_0", n, k).astype(np.float64)
    y = x.astype(np.float64) @ wd.T + b
    add(f"qlinear/Q8_0/{i}", "qlinear", [1], [view(x, "F32", vk), qtensor(raw, "Q8_0", n, k),
                                              dense(b, "F32")], [dense(y, "F32")], 5e-4)
for i, (m, k, n, vk) in enumerate([(1, 100, 30, "contig"), (9, 64, 30, "step")], start=3):
    x = rng.normal(0, 1, size=(m, k)).astype(np.float32)
    w = rng.normal(0, 0.5, size=(n, k)).astype(np.float32)
    q, s = i8_rows(w)
    q[n // 2, ::7] = -128
    y = x.astype(np.float64) @ (q.astype(np.float32) * s[:, None]).astype(np.float64).T
    add(f"qlinear/I8/{i}", "qlinear", [0], [view(x, "F32", vk), dense(q, "I8"), dense(s, "F32")],
        [dense(y, "F32")], 5e-4)

# sort: torch.sort(stable=True); ties (small integer values), NaN (largest), -0.0 vs 0.0 (equal:
# input order kept), I64 beyond 2^53, every view kind, any axis.
for dt in FLOATS + ["F64", "I32", "I64"]:
    for i, (shape, axis, desc, vk) in enumerate([((3, 9), 1, 0, "contig"), ((3, 9), 1, 1, "T"),
                                                 ((4, 3, 5), 0, 1, "step"),
                                                 ((2, 8), 1, 0, "flip"), ((5, 6), 0, 0, "bcast")]):
        a = rng.integers(-3, 4, size=shape).astype(np.float64)  # many ties
        if dt.startswith("F"):
            a = round_to(a * 0.5, dt)
            if i == 3:
                a[0, 1], a[0, 5], a[1, 2] = np.nan, np.nan, np.nan
                a[1, 0], a[1, 4], a[1, 6] = -0.0, 0.0, -0.0
        elif dt == "I64" and i == 1:
            a = a.astype(np.int64) + (1 << 60)
        a = fix(a if dt.startswith("F") else np.asarray(a).astype(np.int64), vk)
        t = torch.from_numpy(np.array(a, dtype=np.float64 if dt.startswith("F") else np.int64))
        v, ix = torch.sort(t, dim=axis, descending=bool(desc), stable=True)
        add(f"sort/{dt}/{i}", "sort", [axis, desc], [view(a, dt, vk)],
            [out_t(v.numpy(), dt) if dt.startswith("F") else dense(v.numpy(), dt),
             dense(ix.numpy().astype(np.int64), "I64")], 0)


def top_p_ref(x, p, logits):
    """Nucleus filter per the BACKEND-NOTES rule, in float64: rank by probability (descending,
    stable: ties by lower index), keep a token while the mass ranked before it is < p, always
    keep the first, keep all for p >= 1; renormalise by the kept mass (summed in rank order)."""
    t = torch.from_numpy(np.array(x, dtype=np.float64))
    probs = torch.softmax(t, -1) if logits else t
    sp, si = torch.sort(probs, dim=-1, descending=True, stable=True)
    cs = torch.cumsum(sp, -1)
    excl = torch.cat([torch.zeros_like(cs[..., :1]), cs[..., :-1]], -1)
    ks = excl < p
    ks[..., 0] = True
    if p >= 1:
        ks[...] = True
    keep = torch.zeros_like(ks).scatter(-1, si, ks)
    mass = torch.cumsum(torch.where(ks, sp, torch.zeros_like(sp)), -1)[..., -1:]
    dst = torch.where(keep, probs, torch.zeros_like(probs)) / mass
    margin = (excl[..., 1:] - p).abs().min().item() if p < 1 and excl.shape[-1] > 1 else 1.0
    return dst.numpy(), keep.numpy(), margin


for dt in FLOATS + ["F64"]:
    for i, (shape, p, logits, vk) in enumerate([((4, 10), 0.7, 0, "contig"),
                                                ((3, 12), 0.9, 1, "T"),
                                                ((2, 7), 0.5, 0, "step"),
                                                ((2, 200), 0.95, 1, "contig"),
                                                ((3, 6), 0.0, 1, "flip"),
                                                ((3, 6), 1.0, 0, "contig")]):
        for _ in range(100):  # redraw until no token sits within 1e-9 of the cut
            z = rng.normal(0, 2, size=shape)
            x = round_to(z if logits else torch.softmax(torch.from_numpy(z), -1).numpy(), dt)
            x = fix(x, vk)
            y, keep, margin = top_p_ref(x, p, logits)
            if margin > 1e-9:
                break
        assert margin > 1e-9
        add(f"top_p/{dt}/{i}", "top_p", [p, logits], [view(x, dt, vk)],
            [out_t(y, dt), dense(keep, "BOOL")], LIM[dt])
# Ties exactly at the cut (values exact in every dtype): [.25 .25 .25 .25] with p = .5 keeps
# indices 0 and 1 (the mass before index 2 is .5, not < .5); [.125 .5 .125 .25] with p = .75
# keeps 1 and 3; p = .7500001 also keeps index 0 (the lower index of the tie).
for dt in FLOATS:
    for i, (row, p) in enumerate([([.25, .25, .25, .25], .5), ([.125, .5, .125, .25], .75),
                                  ([.125, .5, .125, .25], .7500001)], start=6):
        x = np.array([row], dtype=np.float64)
        y, keep, _ = top_p_ref(x, p, 0)
        add(f"top_p/{dt}/{i}", "top_p", [p, 0], [dense(x, dt)],
            [out_t(y, dt), dense(keep, "BOOL")], LIM[dt])



# ---------------------------------------------------------------- appended in issue 16
# Quantized linear with the K-quants (Q4_K, Q5_K, Q6_K: random block bytes, which are all valid,
# with d and dmin set to modest f16 values) and Q4_0 / Q8_0 at sizes that take the kernels' long
# steps and their tails (K of 1, 3 and 17 Q8_0 blocks; 1 and 2 super-blocks; 172 output rows),
# 1, 3 and 17 activation rows; and F16 / BF16 weights against F32 activations (ops qlinear and
# linear). Weights are dequantized here from the GGML layouts (element order as ggml's
# dequantize_row_q*_K), in float32 as ggml does, and the reference is the float64 product.
KQ_BYTES = {"Q4_K": 144, "Q5_K": 176, "Q6_K": 210}


def kq_scale_min(s):
    sc = np.zeros(8, np.int64)
    mn = np.zeros(8, np.int64)
    for j in range(8):
        if j < 4:
            sc[j], mn[j] = s[j] & 63, s[j + 4] & 63
        else:
            sc[j] = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4)
            mn[j] = (s[j + 4] >> 4) | ((s[j] >> 6) << 4)
    return sc, mn


def deq_kq(raw, dtype, rows, cols):
    bb, out = KQ_BYTES[dtype], np.zeros((rows, cols), dtype=np.float32)
    nb = cols // 256
    for r in range(rows):
        for b in range(nb):
            blk = np.frombuffer(raw, dtype=np.uint8, count=bb, offset=(r * nb + b) * bb)
            y = out[r, b * 256:(b + 1) * 256]
            if dtype == "Q6_K":
                ql, qh = blk[:128].astype(np.int64), blk[128:192].astype(np.int64)
                sc = blk[192:208].view(np.int8).astype(np.float32)
                d = np.frombuffer(blk[208:210].tobytes(), np.float16)[0].astype(np.float32)
                for n in range(2):  # halves of 128
                    lq, hq, s8 = ql[64 * n:], qh[32 * n:], sc[8 * n:]
                    for l in range(32):
                        is_ = l // 16
                        q1 = ((lq[l] & 0xF) | (((hq[l] >> 0) & 3) << 4)) - 32
                        q2 = ((lq[l + 32] & 0xF) | (((hq[l] >> 2) & 3) << 4)) - 32
                        q3 = ((lq[l] >> 4) | (((hq[l] >> 4) & 3) << 4)) - 32
                        q4 = ((lq[l + 32] >> 4) | (((hq[l] >> 6) & 3) << 4)) - 32
                        y[128 * n + l] = d * s8[is_] * np.float32(q1)
                        y[128 * n + l + 32] = d * s8[is_ + 2] * np.float32(q2)
                        y[128 * n + l + 64] = d * s8[is_ + 4] * np.float32(q3)
                        y[128 * n + l + 96] = d * s8[is_ + 6] * np.float32(q4)
                continue
            d = np.frombuffer(blk[0:2].tobytes(), np.float16)[0].astype(np.float32)
            dmin = np.frombuffer(blk[2:4].tobytes(), np.float16)[0].astype(np.float32)
            sc, mn = kq_scale_min(blk[4:16].astype(np.int64))
            five = dtype == "Q5_K"
            qh = blk[16:48].astype(np.int64) if five else None
            qs = blk[48:176].astype(np.int64) if five else blk[16:144].astype(np.int64)
            for j in range(4):  # 64 elements: low nibbles, then high nibbles
                for half in range(2):
                    k = 2 * j + half
                    q = (qs[32 * j:32 * j + 32] >> (4 * half)) & 0xF
                    if five:
                        q = q | (((qh >> k) & 1) << 4)
                    d1, m1 = d * np.float32(sc[k]), dmin * np.float32(mn[k])
                    y[32 * k:32 * k + 32] = d1 * q.astype(np.float32) - m1
    return out


def kq_random(dtype, rows, cols):
    bb, nb = KQ_BYTES[dtype], rows * cols // 256
    raw = bytearray(rng.integers(0, 256, size=nb * bb, dtype=np.uint8).tobytes())
    for b in range(nb):
        o = b * bb
        if dtype == "Q6_K":
            raw[o + 208:o + 210] = f16_bits(rng.uniform(0.002, 0.006))
        else:
            raw[o:o + 2] = f16_bits(rng.uniform(0.001, 0.004))
            raw[o + 2:o + 4] = f16_bits(rng.uniform(0.005, 0.03))
    return bytes(raw)


for i, (m, k, n, vk) in enumerate([(1, 256, 172, "contig"), (3, 512, 40, "contig"),
                                   (17, 256, 33, "step")]):
    x = rng.normal(0, 1, size=(m, k)).astype(np.float32)
    b = rng.normal(0, 0.5, size=(n,)).astype(np.float32)
    for qd in ("Q4_K", "Q5_K", "Q6_K"):
        raw = kq_random(qd, n, k)
        wd = deq_kq(raw, qd, n, k).astype(np.float64)
        y = x.astype(np.float64) @ wd.T + b
        add(f"qlinear/{qd}/{i}", "qlinear", [1], [view(x, "F32", vk), qtensor(raw, qd, n, k),
                                                  dense(b, "F32")], [dense(y, "F32")], 5e-4)
for i, (m, k, n) in enumerate([(1, 544, 172), (3, 96, 40), (17, 32, 20)], start=6):
    x = rng.normal(0, 1, size=(m, k)).astype(np.float32)
    w = rng.normal(0, 0.5, size=(n, k)).astype(np.float32)
    b = rng.normal(0, 0.5, size=(n,)).astype(np.float32)
    for qd, fn in (("Q8_0", q8_0), ("Q4_0", q4_0)):
        raw = fn(w)
        y = x.astype(np.float64) @ deq(raw, qd, n, k).astype(np.float64).T + b
        add(f"qlinear/{qd}/{i}", "qlinear", [1], [dense(x, "F32"), qtensor(raw, qd, n, k),
                                                  dense(b, "F32")], [dense(y, "F32")], 5e-4)
for hd in ("F16", "BF16"):
    for i, (m, k, n, wk) in enumerate([(1, 100, 172, "contig"), (3, 64, 40, "contig"),
                                       (17, 33, 20, "step")]):
        x = rng.normal(0, 1, size=(m, k)).astype(np.float32)
        w = round_to(rng.normal(0, 0.5, size=(n, k)), hd)
        b = rng.normal(0, 0.5, size=(n,)).astype(np.float32)
        y = x.astype(np.float64) @ w.T + b
        op = "qlinear" if i != 1 else "linear"
        add(f"{op}/{hd}w/{i}", op, [1], [dense(x, "F32"), view(w, hd, wk), dense(b, "F32")],
            [dense(y, "F32")], 1e-7)

# ---------------------------------------------------------------- write
def wstr(f, s):
    b = s.encode()
    f.write(struct.pack("<H", len(b)) + b)


def wtensor(f, t):
    f.write(struct.pack("<II", DT[t.dt], len(t.shape)))
    for d in t.shape:
        f.write(struct.pack("<q", d))
    for s in t.strides:
        f.write(struct.pack("<q", s))
    f.write(struct.pack("<qQ", t.offset, len(t.raw)))
    f.write(t.raw)


def write_cases():
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, "cases.bin")
    with open(path, "wb") as f:
        f.write(b"IGBK0001" + struct.pack("<I", len(cases)))
        for name, op, params, ins, outs, lim in cases:
            wstr(f, name)
            wstr(f, op)
            f.write(struct.pack("<I", len(params)))
            for p in params:
                f.write(struct.pack("<d", p))
            f.write(struct.pack("<I", len(ins)))
            for t in ins:
                wtensor(f, t)
            f.write(struct.pack("<I", len(outs)))
            for t in outs:
                wtensor(f, t)
            f.write(struct.pack("<d", lim))
    print(f"{path}: {len(cases)} cases, {os.path.getsize(path)} bytes")


# ---------------------------------------------------------------- MLP goldens
def write_mlp():
    """A seeded torch MLP: raw little-endian weights + inputs + outputs, read by test_mlp.c
    which builds the .ingot model itself with the writer."""
    os.makedirs(MLP_DIR, exist_ok=True)
    torch.manual_seed(7)
    models = {
        "mlp_a": ([12, 32, 16, 5], ["relu", "tanh", "softmax"]),
        "mlp_b": ([7, 9, 3], ["sigmoid", "identity"]),
        "mlp_c": ([20, 40, 40, 10], ["gelu", "leaky_relu", "log_softmax"]),
    }
    acts = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
            "identity": lambda x: x, "softmax": lambda x: torch.softmax(x, -1),
            "gelu": F.gelu, "leaky_relu": lambda x: F.leaky_relu(x, 0.01),
            "log_softmax": lambda x: torch.log_softmax(x, -1)}
    for name, (sizes, act) in models.items():
        layers = [torch.nn.Linear(sizes[i], sizes[i + 1]) for i in range(len(sizes) - 1)]
        x = torch.randn(6, sizes[0])
        h = x
        with torch.no_grad():
            for lyr, a in zip(layers, act):
                h = acts[a](lyr(h))
        with open(os.path.join(MLP_DIR, name + ".bin"), "wb") as f:
            f.write(b"IGMLP001" + struct.pack("<II", len(layers), x.shape[0]))
            for s in sizes:
                f.write(struct.pack("<Q", s))
            for a in act:
                wstr(f, a)
            for lyr in layers:
                f.write(lyr.weight.detach().numpy().astype("<f4").tobytes())
                f.write(lyr.bias.detach().numpy().astype("<f4").tobytes())
            f.write(x.numpy().astype("<f4").tobytes())
            f.write(h.numpy().astype("<f4").tobytes())
    print(f"{MLP_DIR}: {len(models)} models")


if __name__ == "__main__":
    write_cases()
    write_mlp()
    sys.exit(0)
