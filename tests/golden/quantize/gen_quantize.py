#!/usr/bin/python3
"""Reference values for tests/test_quantize.c (ingot_quantize, include/ingot/quant.h).

llama.cpp's reference quantizers (ggml's quantize_row_*_ref: Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K
Q6_K, no importance matrix) written here in NumPy from their published description (the block
layouts of ../shared/formats/gguf.md §5 and the algorithms: absmax scales for the 32-blocks, the
weighted scale/min search "make_qkx2_quants" for Q4_K/Q5_K and the symmetric search
"make_qx_quants" for Q6_K), float32 arithmetic in the reference's order, vectorised across blocks
only. No code of llama.cpp or of ingot is used.

Writes, next to this script:
  input.bin   float32 little-endian inputs: 64 synthetic blocks of 256 (Gaussian, uniform,
              heavy-tailed, constant, zero, tiny, all-negative, one outlier), then the
              32768 values of token_embd.weight of ../shared/fixtures/models/stories260K (F32)
  golden.txt  "quant TYPE FIRST N SHA256 NMSE": the reference blocks of input[FIRST:FIRST+N]
              (their SHA-256) and the normalised mean squared error sum((x - y)^2) / sum(x^2) of
              their dequantization y (decoded with the layouts' formulas, in float32)

Run with Debian's /usr/bin/python3 (NumPy 1.24); the output is committed.
"""
import hashlib
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STORIES = os.path.join(HERE, "..", "..", "..", "..", "shared", "fixtures", "models", "stories260K",
                       "stories260K.gguf")
F = np.float32


def f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16)


def nearest_int(x):
    """Round to nearest even through the 1.5 * 2^23 trick, float32 (|x| < 2^22)."""
    v = (np.asarray(x, dtype=np.float32) + F(12582912.0)).astype(np.float32)
    return (v.view(np.int32) & 0x007FFFFF) - 0x00400000


def trunc_i(x):
    return np.trunc(np.asarray(x, dtype=np.float32)).astype(np.int64)


# --- 32-element blocks ---------------------------------------------------------------------------

def q8_0(x):
    x = x.reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    d = (amax / F(127.0)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idd = np.where(d != 0, (F(1.0) / d).astype(np.float32), F(0.0)).astype(np.float32)
    v = (x * idd[:, None]).astype(np.float32).astype(np.float64)
    q = (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int8)  # roundf: half away from zero
    return np.concatenate([f16(d).view(np.uint8).reshape(-1, 2), q.view(np.uint8)], axis=1)


def signed_max(x):
    """The value of largest magnitude, the first on ties (strict > in the scan)."""
    idx = np.abs(x).argmax(axis=1)
    return x[np.arange(x.shape[0]), idx]


def q4_0_like(x, nmax_half):  # Q4_0: 8, Q5_0: 16
    x = x.reshape(-1, 32)
    d = (signed_max(x) / F(-nmax_half)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idd = np.where(d != 0, (F(1.0) / d).astype(np.float32), F(0.0)).astype(np.float32)
    v = ((x * idd[:, None]).astype(np.float32) + F(nmax_half + 0.5)).astype(np.float32)
    q = np.minimum(trunc_i(v), 2 * nmax_half - 1)
    return d, q


def q4_1_like(x, nmax):  # Q4_1: 15, Q5_1: 31
    x = x.reshape(-1, 32)
    mn, mx = x.min(axis=1), x.max(axis=1)
    d = ((mx - mn) / F(nmax)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idd = np.where(d != 0, (F(1.0) / d).astype(np.float32), F(0.0)).astype(np.float32)
    v = (((x - mn[:, None]).astype(np.float32) * idd[:, None]).astype(np.float32) + F(0.5)).astype(np.float32)
    q = trunc_i(v)
    if nmax == 15:
        q = np.minimum(q, 15)
    return d, mn, q


def nibbles(q):
    return (q[:, :16] & 15) | ((q[:, 16:] & 15) << 4)


def high_bits(q):
    h = (q >> 4) & 1
    return (h << np.arange(32)).sum(axis=1).astype(np.uint32)


def q4_0(x):
    d, q = q4_0_like(x, 8)
    return np.concatenate([f16(d).view(np.uint8).reshape(-1, 2), nibbles(q).astype(np.uint8)], axis=1)


def q5_0(x):
    d, q = q4_0_like(x, 16)
    return np.concatenate([f16(d).view(np.uint8).reshape(-1, 2),
                           high_bits(q).astype("<u4").view(np.uint8).reshape(-1, 4),
                           nibbles(q).astype(np.uint8)], axis=1)


def q4_1(x):
    d, m, q = q4_1_like(x, 15)
    return np.concatenate([f16(d).view(np.uint8).reshape(-1, 2), f16(m).view(np.uint8).reshape(-1, 2),
                           nibbles(q).astype(np.uint8)], axis=1)


def q5_1(x):
    d, m, q = q4_1_like(x, 31)
    return np.concatenate([f16(d).view(np.uint8).reshape(-1, 2), f16(m).view(np.uint8).reshape(-1, 2),
                           high_bits(q).astype("<u4").view(np.uint8).reshape(-1, 4),
                           nibbles(q).astype(np.uint8)], axis=1)


# --- K-quants ------------------------------------------------------------------------------------

def fit_scale_min(x, w, nmax, rmin, rdelta, nstep):
    """make_qkx2_quants over rows of x (n columns), float32, sums in column order."""
    nb, n = x.shape
    mn = x[:, 0].copy()
    mx = x[:, 0].copy()
    sum_w = w[:, 0].copy()
    sum_x = (sum_w * x[:, 0]).astype(np.float32)
    for i in range(1, n):
        mn = np.minimum(mn, x[:, i])
        mx = np.maximum(mx, x[:, i])
        sum_w = (sum_w + w[:, i]).astype(np.float32)
        sum_x = (sum_x + (w[:, i] * x[:, i]).astype(np.float32)).astype(np.float32)
    mn = np.where(mn > 0, F(0.0), mn).astype(np.float32)
    flat = mx == mn
    rng = np.where(flat, F(1.0), (mx - mn).astype(np.float32)).astype(np.float32)
    iscale = (F(nmax) / rng).astype(np.float32)
    scale = (F(1.0) / iscale).astype(np.float32)
    L = np.clip(nearest_int((iscale[:, None] * (x - mn[:, None]).astype(np.float32)).astype(np.float32)), 0, nmax)
    best = np.zeros(nb, np.float32)
    for i in range(n):
        diff = ((scale * L[:, i].astype(np.float32)).astype(np.float32) + mn).astype(np.float32) - x[:, i]
        diff = diff.astype(np.float32)
        best = (best + (w[:, i] * (diff * diff).astype(np.float32)).astype(np.float32)).astype(np.float32)
    for is_ in range(nstep + 1):
        # the range uses the current min, which an accepted fit below replaces
        rng = np.where(flat, F(1.0), (mx - mn).astype(np.float32)).astype(np.float32)
        isc = ((F(rmin) + (F(rdelta) * F(is_)).astype(np.float32)).astype(np.float32) + F(nmax)).astype(np.float32)
        isc = (isc / rng).astype(np.float32)
        Laux = np.clip(nearest_int((isc[:, None] * (x - mn[:, None]).astype(np.float32)).astype(np.float32)), 0, nmax)
        sl = np.zeros(nb, np.float32)
        sl2 = np.zeros(nb, np.float32)
        sxl = np.zeros(nb, np.float32)
        for i in range(n):
            lf = Laux[:, i].astype(np.float32)
            wl = (w[:, i] * lf).astype(np.float32)
            sl = (sl + wl).astype(np.float32)
            sl2 = (sl2 + (wl * lf).astype(np.float32)).astype(np.float32)
            sxl = (sxl + (wl * x[:, i]).astype(np.float32)).astype(np.float32)
        D = ((sum_w * sl2).astype(np.float32) - (sl * sl).astype(np.float32)).astype(np.float32)
        ok = D > 0
        Ds = np.where(ok, D, F(1.0)).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            ts = (((sum_w * sxl).astype(np.float32) - (sum_x * sl).astype(np.float32)).astype(np.float32) / Ds).astype(np.float32)
            tm = (((sl2 * sum_x).astype(np.float32) - (sl * sxl).astype(np.float32)).astype(np.float32) / Ds).astype(np.float32)
            pos = tm > 0
            tm = np.where(pos, F(0.0), tm).astype(np.float32)
            ts = np.where(pos, (sxl / sl2).astype(np.float32), ts).astype(np.float32)
        cur = np.zeros(nb, np.float32)
        for i in range(n):
            diff = ((ts * Laux[:, i].astype(np.float32)).astype(np.float32) + tm).astype(np.float32) - x[:, i]
            diff = diff.astype(np.float32)
            cur = (cur + (w[:, i] * (diff * diff).astype(np.float32)).astype(np.float32)).astype(np.float32)
        better = ok & (cur < best) & ~flat
        L = np.where(better[:, None], Laux, L)
        best = np.where(better, cur, best)
        scale = np.where(better, ts, scale)
        mn = np.where(better, tm, mn)
    L = np.where(flat[:, None], 0, L)
    scale = np.where(flat, F(0.0), scale).astype(np.float32)
    return scale, (-mn).astype(np.float32), L


def k45(x, q5):
    nmax = 31 if q5 else 15
    x = x.reshape(-1, 256)
    nb = x.shape[0]
    sub = x.reshape(nb * 8, 32)
    sx2 = np.zeros(nb * 8, np.float32)
    for l in range(32):
        sx2 = (sx2 + (sub[:, l] * sub[:, l]).astype(np.float32)).astype(np.float32)
    av = np.sqrt((sx2 / F(32.0)).astype(np.float32)).astype(np.float32)
    w = (av[:, None] + np.abs(sub)).astype(np.float32)
    if q5:
        sc, mins, L = fit_scale_min(sub, w, 31, -0.5, 0.1, 15)
    else:
        sc, mins, L = fit_scale_min(sub, w, 15, -1.0, 0.1, 20)
    sc = sc.reshape(nb, 8)
    mins = mins.reshape(nb, 8)
    L = L.reshape(nb, 256)
    max_scale = np.maximum(sc.max(axis=1), F(0.0))
    max_min = np.maximum(mins.max(axis=1), F(0.0))
    with np.errstate(divide="ignore"):
        inv_s = np.where(max_scale > 0, (F(63.0) / max_scale).astype(np.float32), F(0.0)).astype(np.float32)
        inv_m = np.where(max_min > 0, (F(63.0) / max_min).astype(np.float32), F(0.0)).astype(np.float32)
    ls = np.minimum(nearest_int((inv_s[:, None] * sc).astype(np.float32)), 63)
    lm = np.minimum(nearest_int((inv_m[:, None] * mins).astype(np.float32)), 63)
    scales = np.zeros((nb, 12), np.int64)
    for j in range(8):
        if j < 4:
            scales[:, j] = ls[:, j]
            scales[:, j + 4] = lm[:, j]
        else:
            scales[:, j + 4] = (ls[:, j] & 15) | ((lm[:, j] & 15) << 4)
            scales[:, j - 4] |= (ls[:, j] >> 4) << 6
            scales[:, j] |= (lm[:, j] >> 4) << 6
    dh = f16((max_scale / F(63.0)).astype(np.float32))
    mh = f16((max_min / F(63.0)).astype(np.float32))
    dd, dm = dh.astype(np.float32), mh.astype(np.float32)
    for j in range(8):
        d = (dd * ls[:, j].astype(np.float32)).astype(np.float32)
        dmj = (dm * lm[:, j].astype(np.float32)).astype(np.float32)
        nz = d != 0
        ds = np.where(nz, d, F(1.0)).astype(np.float32)
        v = ((x[:, 32 * j:32 * j + 32] + dmj[:, None]).astype(np.float32) / ds[:, None]).astype(np.float32)
        l = np.clip(nearest_int(v), 0, nmax)
        L[:, 32 * j:32 * j + 32] = np.where(nz[:, None], l, L[:, 32 * j:32 * j + 32])
    head = [dh.view(np.uint8).reshape(-1, 2), mh.view(np.uint8).reshape(-1, 2), scales.astype(np.uint8)]
    if not q5:
        qs = [(L[:, j:j + 32] | (L[:, j + 32:j + 64] << 4)) for j in range(0, 256, 64)]
        return np.concatenate(head + [q.astype(np.uint8) for q in qs], axis=1)
    qh = np.zeros((nb, 32), np.int64)
    ql = []
    for k, j in enumerate(range(0, 256, 64)):
        l1, l2 = L[:, j:j + 32], L[:, j + 32:j + 64]
        qh |= ((l1 > 15).astype(np.int64) << (2 * k)) | ((l2 > 15).astype(np.int64) << (2 * k + 1))
        ql.append(((l1 & 15) | ((l2 & 15) << 4)).astype(np.uint8))
    return np.concatenate(head + [qh.astype(np.uint8)] + ql, axis=1)


def fit_scale_sym(x, nmax):
    """make_qx_quants with rmse_type 1 (weights x^2) over rows of x."""
    nb, n = x.shape
    idx = np.abs(x).argmax(axis=1)
    mx = x[np.arange(nb), idx]
    amax = np.abs(mx)
    zero = amax < F(1e-15)
    mxs = np.where(zero, F(1.0), mx).astype(np.float32)

    def levels(isc):
        return np.clip(nearest_int((isc[:, None] * x).astype(np.float32)), -nmax, nmax - 1)

    def sums(l):
        slx = np.zeros(nb, np.float32)
        sl2 = np.zeros(nb, np.float32)
        for i in range(n):
            wi = (x[:, i] * x[:, i]).astype(np.float32)
            lf = l[:, i].astype(np.float32)
            slx = (slx + ((wi * x[:, i]).astype(np.float32) * lf).astype(np.float32)).astype(np.float32)
            sl2 = (sl2 + ((wi * lf).astype(np.float32) * lf).astype(np.float32)).astype(np.float32)
        return slx, sl2

    isc = (F(-nmax) / mxs).astype(np.float32)
    l = levels(isc)
    L = l + nmax
    slx, sl2 = sums(l)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(sl2 != 0, (slx / np.where(sl2 != 0, sl2, F(1.0))).astype(np.float32), F(0.0)).astype(np.float32)
    best = (scale * slx).astype(np.float32)
    for is_ in range(-9, 10):
        if is_ == 0:
            continue
        isc = (-(F(nmax) + (F(0.1) * F(is_)).astype(np.float32)).astype(np.float32) / mxs).astype(np.float32)
        l = levels(isc)
        slx, sl2 = sums(l)
        better = (sl2 > 0) & ((slx * slx).astype(np.float32) > (best * sl2).astype(np.float32))
        with np.errstate(divide="ignore", invalid="ignore"):
            ns = (slx / np.where(sl2 > 0, sl2, F(1.0))).astype(np.float32)
        L = np.where(better[:, None], l + nmax, L)
        scale = np.where(better, ns, scale).astype(np.float32)
        best = np.where(better, (ns * slx).astype(np.float32), best).astype(np.float32)
    L = np.where(zero[:, None], 0, L)
    scale = np.where(zero, F(0.0), scale).astype(np.float32)
    return scale, L


def q6_k(x):
    x = x.reshape(-1, 256)
    nb = x.shape[0]
    sc, L = fit_scale_sym(x.reshape(nb * 16, 16), 32)
    sc = sc.reshape(nb, 16)
    L = L.reshape(nb, 256)
    idx = np.abs(sc).argmax(axis=1)
    max_scale = sc[np.arange(nb), idx]
    zero = np.abs(max_scale) < F(1e-15)
    ms = np.where(zero, F(1.0), max_scale).astype(np.float32)
    iscale = (F(-128.0) / ms).astype(np.float32)
    dh = f16((F(1.0) / iscale).astype(np.float32))
    scales = np.minimum(nearest_int((iscale[:, None] * sc).astype(np.float32)), 127)
    dd = dh.astype(np.float32)
    for j in range(16):
        d = (dd * scales[:, j].astype(np.float32)).astype(np.float32)
        nz = d != 0
        ds = np.where(nz, d, F(1.0)).astype(np.float32)
        l = np.clip(nearest_int((x[:, 16 * j:16 * j + 16] / ds[:, None]).astype(np.float32)), -32, 31) + 32
        L[:, 16 * j:16 * j + 16] = np.where(nz[:, None], l, L[:, 16 * j:16 * j + 16])
    ql = np.zeros((nb, 128), np.int64)
    qh = np.zeros((nb, 64), np.int64)
    for h, j in enumerate(range(0, 256, 128)):
        a, b, c, e = (L[:, j + k * 32:j + k * 32 + 32] for k in range(4))
        ql[:, 64 * h:64 * h + 32] = (a & 15) | ((c & 15) << 4)
        ql[:, 64 * h + 32:64 * h + 64] = (b & 15) | ((e & 15) << 4)
        qh[:, 32 * h:32 * h + 32] = (a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6)
    out = np.concatenate([ql.astype(np.uint8), qh.astype(np.uint8), scales.astype(np.int8).view(np.uint8),
                          dh.view(np.uint8).reshape(-1, 2)], axis=1)
    out[zero] = 0
    return out


# --- decoding (the layouts' formulas) for the error figures -------------------------------------

def dq(name, b, n):
    b = b.reshape(-1, b.shape[-1])
    h = lambda off: b[:, off:off + 2].copy().view(np.float16).astype(np.float32).reshape(-1)
    if name in ("Q8_0",):
        return (b[:, 2:].view(np.int8).astype(np.float32) * h(0)[:, None]).reshape(-1)
    if name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1"):
        off = {"Q4_0": 2, "Q4_1": 4, "Q5_0": 6, "Q5_1": 8}[name]
        qs = b[:, off:off + 16].astype(np.int64)
        q = np.concatenate([qs & 15, qs >> 4], axis=1)
        if name in ("Q5_0", "Q5_1"):
            qh = b[:, off - 4:off].copy().view("<u4").astype(np.int64).reshape(-1, 1)
            q |= ((qh >> np.arange(32)) & 1) << 4
        d = h(0)[:, None]
        if name in ("Q4_1", "Q5_1"):
            return ((d * q.astype(np.float32)).astype(np.float32) + h(2)[:, None]).reshape(-1)
        return (d * (q - (8 if name == "Q4_0" else 16)).astype(np.float32)).reshape(-1)
    raise ValueError(name)


def dq_k(name, b):
    nb = b.shape[0]
    out = np.zeros((nb, 256), np.float32)
    if name == "Q6_K":
        ql, qh = b[:, :128].astype(np.int64), b[:, 128:192].astype(np.int64)
        sc = b[:, 192:208].view(np.int8).astype(np.float32)
        d = b[:, 208:210].copy().view(np.float16).astype(np.float32)
        L = np.zeros((nb, 256), np.int64)
        for hh in range(2):
            j = 128 * hh
            l_ = ql[:, 64 * hh:64 * hh + 64]
            h_ = qh[:, 32 * hh:32 * hh + 32]
            L[:, j:j + 32] = (l_[:, :32] & 15) | ((h_ & 3) << 4)
            L[:, j + 32:j + 64] = (l_[:, 32:] & 15) | (((h_ >> 2) & 3) << 4)
            L[:, j + 64:j + 96] = (l_[:, :32] >> 4) | (((h_ >> 4) & 3) << 4)
            L[:, j + 96:j + 128] = (l_[:, 32:] >> 4) | (((h_ >> 6) & 3) << 4)
        for j in range(16):
            out[:, 16 * j:16 * j + 16] = ((d * sc[:, j:j + 1]).astype(np.float32) *
                                          (L[:, 16 * j:16 * j + 16] - 32).astype(np.float32))
        return out.reshape(-1)
    q5 = name == "Q5_K"
    d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
    dm = b[:, 2:4].copy().view(np.float16).astype(np.float32)
    s = b[:, 4:16].astype(np.int64)
    for j in range(8):
        if j < 4:
            sc, m = s[:, j] & 63, s[:, j + 4] & 63
        else:
            sc = (s[:, j + 4] & 15) | ((s[:, j - 4] >> 6) << 4)
            m = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
        k, hi = j // 2, j % 2
        if q5:
            qh = b[:, 16:48].astype(np.int64)
            ql = b[:, 48 + 32 * k:48 + 32 * k + 32].astype(np.int64)
            l = ((ql >> (4 * hi)) & 15) | (((qh >> j) & 1) << 4)
        else:
            qs = b[:, 16 + 32 * k:16 + 32 * k + 32].astype(np.int64)
            l = (qs >> (4 * hi)) & 15
        out[:, 32 * j:32 * j + 32] = ((d * sc.astype(np.float32)[:, None]).astype(np.float32) * l.astype(np.float32)
                                      - (dm * m.astype(np.float32)[:, None]).astype(np.float32))
    return out.reshape(-1)


QUANT = {"Q8_0": q8_0, "Q4_0": q4_0, "Q4_1": q4_1, "Q5_0": q5_0, "Q5_1": q5_1,
         "Q4_K": lambda x: k45(x, False), "Q5_K": lambda x: k45(x, True), "Q6_K": q6_k}


def inputs():
    rng = np.random.RandomState(20260526)
    blocks = [rng.standard_normal(256) * 0.02 for _ in range(24)]
    blocks += [rng.uniform(-1, 1, 256) for _ in range(8)]
    blocks += [rng.standard_t(2, 256) * 0.05 for _ in range(8)]
    blocks += [np.full(256, 0.37), np.zeros(256), np.full(256, -2.5), rng.standard_normal(256) * 1e-30]
    blocks += [-np.abs(rng.standard_normal(256)) - 3 for _ in range(4)]
    blocks += [np.abs(rng.standard_normal(256)) + 1 for _ in range(4)]
    for _ in range(8):
        b = rng.standard_normal(256) * 0.01
        b[rng.randint(256)] = 4.0 * rng.choice([-1, 1])
        blocks.append(b)
    syn = np.concatenate(blocks).astype(np.float32)
    raw = np.fromfile(STORIES, dtype="<f4", count=512 * 64, offset=14176)  # token_embd.weight
    assert raw.size == 32768 and np.isfinite(raw).all()
    return np.concatenate([syn, raw]).astype(np.float32)


def main():
    x = inputs()
    x.astype("<f4").tofile(os.path.join(HERE, "input.bin"))
    nsyn = 64 * 256
    lines = []
    for name, fn in QUANT.items():
        for first, n in [(0, nsyn), (nsyn, x.size - nsyn)]:
            part = x[first:first + n]
            b = fn(part)
            y = dq_k(name, b) if name.endswith("_K") else dq(name, b, n)
            nmse = float(((part.astype(np.float64) - y) ** 2).sum() / (part.astype(np.float64) ** 2).sum())
            lines.append("quant %s %d %d %s %.9e" % (name, first, n,
                                                   hashlib.sha256(b.tobytes()).hexdigest(), nmse))
    with open(os.path.join(HERE, "golden.txt"), "w") as fp:
        fp.write("# generated by gen_quantize.py; see its docstring. quant TYPE FIRST N SHA256 NMSE\n")
        fp.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
