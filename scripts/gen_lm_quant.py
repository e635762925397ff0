#!/usr/bin/python3
"""Quantized GGUF models and their torch goldens for tests/test_lm_models.c.

Run with Debian's Python (torch 1.13, numpy): /usr/bin/python3 scripts/gen_lm_quant.py
Writes tests/golden/lm/:

  quant.gguf      a seeded Llama (dim 256, 2 layers, GQA) whose tensors mix the GGML block types
                  per tensor as real quantized files do: Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, Q4_1,
                  Q5_0, Q5_1, F16 and BF16, norms F32
  stories_q8.gguf the real stories260K (read from its llama2.c checkpoint) with every matrix whose
                  rows allow it in Q8_0 and the others (ffn_down: rows of 172) in F16, as
                  llama.cpp's quantizer falls back

Blocks are encoded here from ggml's block layouts (a simple, valid encoder, not ggml's optimising
one) and decoded again by an independent decoder written from ggml's dequantize_row_* (the two
must agree exactly, which checks the packing); the reference logits come from a float64 torch
forward pass over the decoded weights. Goldens: <m>_tokens.npy, <m>_logits.npy, <m>_greedy.npy
(BOS + 32 greedy tokens; every top-2 gap on the path > 0.05, so the 8-bit activations of the
quantized matmuls cannot flip a token), and <m>_logits_act8.npy: the same forward pass with each
matmul's activations quantized to 8 bits as ingot's cpu backend does (act_ingot), the error that
alone causes printed tensor by tensor beside what llama.cpp's scheme gives (act_ggml).
"""
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_lm_models as G  # noqa: E402  (writers, reference forward)

OUT = G.OUT
torch.set_default_dtype(torch.float64)

T_F32, T_F16, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0 = 0, 1, 2, 3, 6, 7, 8
T_Q4_K, T_Q5_K, T_Q6_K, T_BF16 = 12, 13, 14, 30

f16 = lambda x: np.asarray(x, dtype=np.float16)


def rnd(x):
    return np.floor(np.abs(x) + 0.5) * np.sign(x)  # half away from zero, as ggml's roundf


# ---- encoders (per row of whole blocks; return raw bytes) ------------------------------------

def enc_q8_0(x):
    out = b""
    for b in x.reshape(-1, 32):
        d = np.abs(b).max() / 127
        q = rnd(b / d) if d else np.zeros(32)
        out += f16(d).tobytes() + q.astype(np.int8).tobytes()
    return out


def enc_q4_0(x):
    out = b""
    for b in x.reshape(-1, 32):
        mx = b[np.argmax(np.abs(b))]
        d = mx / -8
        q = np.clip(np.floor(b / d + 8.5), 0, 15).astype(np.uint8) if d else np.full(32, 8, np.uint8)
        out += f16(d).tobytes() + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
    return out


def enc_q4_1(x):
    out = b""
    for b in x.reshape(-1, 32):
        mn, mx = b.min(), b.max()
        d = (mx - mn) / 15
        q = np.clip(np.floor((b - mn) / d + 0.5), 0, 15).astype(np.uint8) if d else np.zeros(32, np.uint8)
        out += f16(d).tobytes() + f16(mn).tobytes() + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
    return out


def enc_q5(x, with_min):
    out = b""
    for b in x.reshape(-1, 32):
        if with_min:
            mn = b.min()
            d = (b.max() - mn) / 31
            q = np.clip(np.floor((b - mn) / d + 0.5), 0, 31) if d else np.zeros(32)
        else:
            mx = b[np.argmax(np.abs(b))]
            d = mx / -16
            q = np.clip(np.floor(b / d + 16.5), 0, 31) if d else np.full(32, 16)
        q = q.astype(np.uint32)
        qh = 0
        for j in range(16):
            qh |= int((q[j] >> 4) & 1) << j
            qh |= int((q[j + 16] >> 4) & 1) << (j + 16)
        lo = ((q[:16] & 15) | ((q[16:] & 15) << 4)).astype(np.uint8)
        out += f16(d).tobytes() + (f16(mn).tobytes() if with_min else b"") + struct.pack("<I", qh) + lo.tobytes()
    return out


def pack_scales(sc, mm):
    s = np.zeros(12, np.uint8)
    for j in range(4):
        s[j] = (sc[j] & 63) | ((sc[j + 4] >> 4) << 6)
        s[j + 4] = (mm[j] & 63) | ((mm[j + 4] >> 4) << 6)
        s[j + 8] = (sc[j + 4] & 15) | ((mm[j + 4] & 15) << 4)
    return s


def enc_qk(x, bits):
    """Q4_K (bits 4) / Q5_K (bits 5): x = d * sc_j * q - dmin * m_j, 8 sub-blocks of 32."""
    qmax = (1 << bits) - 1
    out = b""
    for b in x.reshape(-1, 256):
        sub = b.reshape(8, 32)
        mn = np.minimum(sub.min(1), 0)
        scl = (sub.max(1) - mn) / qmax
        d = f16(scl.max() / 63).astype(np.float64)
        dmin = f16((-mn).max() / 63).astype(np.float64)
        sc = np.clip(rnd(scl / d), 0, 63).astype(np.int64) if d else np.zeros(8, np.int64)
        mm = np.clip(rnd(-mn / dmin), 0, 63).astype(np.int64) if dmin else np.zeros(8, np.int64)
        q = np.zeros((8, 32), np.int64)
        for j in range(8):
            if sc[j]:
                q[j] = np.clip(rnd((sub[j] + dmin * mm[j]) / (d * sc[j])), 0, qmax)
        qs = np.zeros(128, np.uint8)
        qh = np.zeros(32, np.uint8)
        for c in range(4):
            qs[32 * c:32 * c + 32] = (q[2 * c] & 15) | ((q[2 * c + 1] & 15) << 4)
            if bits == 5:
                qh |= (((q[2 * c] >> 4) & 1) << (2 * c)).astype(np.uint8)
                qh |= (((q[2 * c + 1] >> 4) & 1) << (2 * c + 1)).astype(np.uint8)
        out += f16(d).tobytes() + f16(dmin).tobytes() + pack_scales(sc, mm).tobytes()
        out += (qh.tobytes() if bits == 5 else b"") + qs.tobytes()
    return out


def enc_q6_k(x):
    out = b""
    for b in x.reshape(-1, 256):
        sub = b.reshape(16, 16)
        sj = np.abs(sub).max(1) / 31
        d = f16(sj.max() / 127).astype(np.float64)
        sc = np.clip(rnd(sj / d), -128, 127).astype(np.int64) if d else np.zeros(16, np.int64)
        q = np.full((16, 16), 32, np.int64)
        for j in range(16):
            if sc[j]:
                q[j] = np.clip(rnd(sub[j] / (d * sc[j])) + 32, 0, 63)
        q = q.reshape(256)
        ql = np.zeros(128, np.uint8)
        qh = np.zeros(64, np.uint8)
        for n in range(2):
            h = q[128 * n:128 * n + 128]
            for l in range(32):
                q1, q2, q3, q4 = h[l], h[l + 32], h[l + 64], h[l + 96]
                ql[64 * n + l] = (q1 & 15) | ((q3 & 15) << 4)
                ql[64 * n + l + 32] = (q2 & 15) | ((q4 & 15) << 4)
                qh[32 * n + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
        out += ql.tobytes() + qh.tobytes() + sc.astype(np.int8).tobytes() + f16(d).tobytes()
    return out


def enc_bf16(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes()  # nearest even


ENC = {T_Q8_0: enc_q8_0, T_Q4_0: enc_q4_0, T_Q4_1: enc_q4_1, T_Q5_0: lambda x: enc_q5(x, False),
       T_Q5_1: lambda x: enc_q5(x, True), T_Q4_K: lambda x: enc_qk(x, 4),
       T_Q5_K: lambda x: enc_qk(x, 5), T_Q6_K: enc_q6_k,
       T_F16: lambda x: f16(x).tobytes(), T_BF16: enc_bf16,
       T_F32: lambda x: np.asarray(x, np.float32).tobytes()}

# ---- decoders, written from ggml's dequantize_row_* -----------------------------------------

def h16(b, o):
    return float(np.frombuffer(b[o:o + 2], np.float16)[0])


def dec(t, b, n):
    y = []
    if t == T_F32:
        return np.frombuffer(b, np.float32).astype(np.float64)
    if t == T_F16:
        return np.frombuffer(b, np.float16).astype(np.float64)
    if t == T_BF16:
        return (np.frombuffer(b, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if t == T_Q8_0:
        for o in range(0, len(b), 34):
            y += list(h16(b, o) * np.frombuffer(b[o + 2:o + 34], np.int8))
    elif t in (T_Q4_0, T_Q4_1):
        sz = 18 if t == T_Q4_0 else 20
        for o in range(0, len(b), sz):
            d = h16(b, o)
            m = h16(b, o + 2) if t == T_Q4_1 else 0.0
            qs = np.frombuffer(b[o + sz - 16:o + sz], np.uint8)
            lo, hi = (qs & 15).astype(np.float64), (qs >> 4).astype(np.float64)
            if t == T_Q4_0:
                y += list(d * (lo - 8)) + list(d * (hi - 8))
            else:
                y += list(d * lo + m) + list(d * hi + m)
    elif t in (T_Q5_0, T_Q5_1):
        sz = 22 if t == T_Q5_0 else 24
        for o in range(0, len(b), sz):
            d = h16(b, o)
            m = h16(b, o + 2) if t == T_Q5_1 else 0.0
            p = o + (2 if t == T_Q5_0 else 4)
            qh = struct.unpack("<I", b[p:p + 4])[0]
            qs = np.frombuffer(b[p + 4:p + 20], np.uint8)
            lo = [((qs[j] & 15) | (((qh >> j) << 4) & 0x10)) for j in range(16)]
            hi = [((qs[j] >> 4) | ((qh >> (j + 12)) & 0x10)) for j in range(16)]
            if t == T_Q5_0:
                y += [d * (v - 16) for v in lo] + [d * (v - 16) for v in hi]
            else:
                y += [d * v + m for v in lo] + [d * v + m for v in hi]
    elif t in (T_Q4_K, T_Q5_K):
        sz = 144 if t == T_Q4_K else 176
        for o in range(0, len(b), sz):
            d, dmin = h16(b, o), h16(b, o + 2)
            s = b[o + 4:o + 16]
            def smk(j):
                if j < 4:
                    return s[j] & 63, s[j + 4] & 63
                return (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)
            qh = b[o + 16:o + 48] if t == T_Q5_K else None
            qs = b[o + sz - 128:o + sz]
            for c in range(4):
                sc1, m1 = smk(2 * c)
                sc2, m2 = smk(2 * c + 1)
                q = qs[32 * c:32 * c + 32]
                for l in range(32):
                    v = (q[l] & 15) + ((16 if qh[l] & (1 << (2 * c)) else 0) if qh else 0)
                    y.append(d * sc1 * v - dmin * m1)
                for l in range(32):
                    v = (q[l] >> 4) + ((16 if qh[l] & (2 << (2 * c)) else 0) if qh else 0)
                    y.append(d * sc2 * v - dmin * m2)
    elif t == T_Q6_K:
        for o in range(0, len(b), 210):
            ql, qh = b[o:o + 128], b[o + 128:o + 192]
            sc = np.frombuffer(b[o + 192:o + 208], np.int8)
            d = h16(b, o + 208)
            blk = [0.0] * 256
            for hf in range(2):
                for l in range(32):
                    i = l // 16
                    q1 = ((ql[64 * hf + l] & 15) | (((qh[32 * hf + l] >> 0) & 3) << 4)) - 32
                    q2 = ((ql[64 * hf + l + 32] & 15) | (((qh[32 * hf + l] >> 2) & 3) << 4)) - 32
                    q3 = ((ql[64 * hf + l] >> 4) | (((qh[32 * hf + l] >> 4) & 3) << 4)) - 32
                    q4 = ((ql[64 * hf + l + 32] >> 4) | (((qh[32 * hf + l] >> 6) & 3) << 4)) - 32
                    blk[128 * hf + l] = d * sc[8 * hf + i] * q1
                    blk[128 * hf + l + 32] = d * sc[8 * hf + i + 2] * q2
                    blk[128 * hf + l + 64] = d * sc[8 * hf + i + 4] * q3
                    blk[128 * hf + l + 96] = d * sc[8 * hf + i + 6] * q4
            y += blk
    out = np.array(y, np.float64)
    assert out.size == n
    return out


def quantize(w, t):
    """(raw bytes, decoded float64 values) of tensor w (row-major) as GGML type t."""
    w = np.asarray(w, np.float64)
    raw = ENC[t](w.reshape(-1) if t in (T_F16, T_BF16, T_F32) else w.reshape(-1))
    back = dec(t, raw, w.size).reshape(w.shape)
    if t not in (T_F32, T_F16, T_BF16):
        err = np.abs(back - w).max() / (np.abs(w).max() + 1e-30)
        assert err < 0.25, f"type {t}: encoder/decoder disagree (relative error {err})"
    return raw, back


# ---- GGUF with per-tensor types ---------------------------------------------------------------

def write_gguf_typed(path, kvs, tensors, align=32):
    """tensors: (name, numpy shape, ggml type, raw bytes)."""
    s = lambda x: struct.pack("<Q", len(x.encode())) + x.encode()
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += s(k) + struct.pack("<I", t)
        out += struct.pack("<I", v) if t == G.GGUF_U32 else struct.pack("<f", v) if t == G.GGUF_F32 else s(v)
    off, data = 0, []
    for name, shape, t, raw in tensors:
        out += s(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape[::-1])
        out += struct.pack("<IQ", t, off)
        raw += b"\0" * ((align - len(raw) % align) % align)
        data.append(raw)
        off += len(raw)
    out += b"\0" * ((align - len(out) % align) % align)
    with open(path, "wb") as f:
        f.write(out + b"".join(data))


def llama_kvs(c):
    return [("general.architecture", G.GGUF_STRING, "llama"),
            ("llama.block_count", G.GGUF_U32, c["layers"]), ("llama.context_length", G.GGUF_U32, c.get("ctx", 64)),
            ("llama.embedding_length", G.GGUF_U32, c["dim"]), ("llama.feed_forward_length", G.GGUF_U32, c["ffn"]),
            ("llama.attention.head_count", G.GGUF_U32, c["heads"]),
            ("llama.attention.head_count_kv", G.GGUF_U32, c["kv_heads"]),
            ("llama.rope.freq_base", G.GGUF_F32, c["theta"]),
            ("llama.attention.layer_norm_rms_epsilon", G.GGUF_F32, c["eps"]),
            ("tokenizer.ggml.bos_token_id", G.GGUF_U32, 1), ("tokenizer.ggml.eos_token_id", G.GGUF_U32, 2)]


def rope_interleaved(x, theta):
    T, H, d = x.shape
    inv = 1.0 / theta ** (torch.arange(0, d, 2) / d)
    f = torch.arange(T)[:, None] * inv[None]
    cos, sin = f.cos()[:, None], f.sin()[:, None]
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


# ---- activation quantization, as the integer-dot matmuls do it ------------------------------
# Each simulates what happens to the activation row x before the dot with a weight of type t;
# the dot itself is then exact (float64), which is what the integer kernels compute.

def act_ingot(x, t):
    """ingot's cpu backend (src/backend/cpu/kernels/qdot.c, ingot__qx_quantize): for the types it
    runs natively with 8-bit activations, per block of 32 (Q8_0, Q4_0) or 256 (Q4_K, Q5_K, Q6_K)
    in float32: d = amax / 127, q = round-half-away(x / d) in [-127, 127], x -> q d. Every other
    type (F16, BF16: f32 activations; Q4_1, Q5_0, Q5_1: converted to F32 at load) keeps x."""
    B = {T_Q8_0: 32, T_Q4_0: 32, T_Q4_K: 256, T_Q5_K: 256, T_Q6_K: 256}.get(t)
    if B is None:
        return x
    xb = x.numpy().astype(np.float32).reshape(x.shape[0], -1, B)
    d = (np.abs(xb).max(-1, keepdims=True) / np.float32(127)).astype(np.float32)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0).astype(np.float32)
    q = np.clip(rnd((xb * inv).astype(np.float32)), -127, 127)
    return torch.from_numpy((q * d.astype(np.float64)).reshape(x.shape))


def act_ggml(x, t):
    """llama.cpp's CPU backend (ggml-cpu's vec_dot_type per weight type, ggml-quants.c's
    quantize_row_q8_0/q8_1/q8_K): Q8_0 for Q8_0/Q4_0/Q5_0 and Q8_1 for Q4_1/Q5_1 (blocks of 32,
    d = amax / 127 stored as f16, q = roundf(x / d)); Q8_K for the K-quants (blocks of 256,
    iscale = -127 / the signed value of largest magnitude, q = nearest_int (half to even),
    d = 1 / iscale in f32); F16 and BF16 weights take F16 / BF16 activations."""
    x32 = x.numpy().astype(np.float32)
    if t == T_F16:
        return torch.from_numpy(x32.astype(np.float16).astype(np.float64))
    if t == T_BF16:
        u = x32.view(np.uint32).astype(np.uint64)
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        return torch.from_numpy(u.astype(np.uint32).view(np.float32).astype(np.float64))
    if t in (T_Q8_0, T_Q4_0, T_Q5_0, T_Q4_1, T_Q5_1):
        xb = x32.reshape(x.shape[0], -1, 32)
        d = (np.abs(xb).max(-1, keepdims=True) / np.float32(127)).astype(np.float32)
        inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0).astype(np.float32)
        q = rnd((xb * inv).astype(np.float32))
        return torch.from_numpy((q * f16(d).astype(np.float64)).reshape(x.shape))
    if t in (T_Q4_K, T_Q5_K, T_Q6_K):
        xb = x32.reshape(x.shape[0], -1, 256)
        i = np.abs(xb).argmax(-1)[..., None]
        mx = np.take_along_axis(xb, i, -1)
        isc = np.divide(np.float32(-127), mx, out=np.zeros_like(mx), where=mx != 0).astype(np.float32)
        q = np.minimum(np.rint((isc * xb).astype(np.float32)), 127)
        d = np.divide(np.float32(1), isc, out=np.zeros_like(isc), where=isc != 0).astype(np.float32)
        return torch.from_numpy((q * d.astype(np.float64)).reshape(x.shape))
    return x


def gguf_llama_forward(c, W, tokens, act=None, types=None):
    """Llama over GGUF-named weights with the interleaved rotation (the q/k rows as stored).
    act(x, type): what the matmul against a weight of that type does to its activations."""
    L, H, Hk = c["layers"], c["heads"], c["kv_heads"]
    d = c["dim"] // H
    T = len(tokens)

    def mm(x, name):
        return (act(x, types[name]) if act else x) @ W[name].T
    h = W["token_embd.weight"][tokens]
    for l in range(L):
        p = f"blk.{l}."
        x = G.rmsnorm(h, W[p + "attn_norm.weight"], c["eps"])
        q = rope_interleaved(mm(x, p + "attn_q.weight").reshape(T, H, d), c["theta"])
        k = rope_interleaved(mm(x, p + "attn_k.weight").reshape(T, Hk, d), c["theta"])
        v = mm(x, p + "attn_v.weight").reshape(T, Hk, d)
        h = h + mm(G.causal_attention(q, k, v), p + "attn_output.weight")
        x = G.rmsnorm(h, W[p + "ffn_norm.weight"], c["eps"])
        g = torch.nn.functional.silu(mm(x, p + "ffn_gate.weight"))
        h = h + mm(g * mm(x, p + "ffn_up.weight"), p + "ffn_down.weight")
    h = G.rmsnorm(h, W["output_norm.weight"], c["eps"])
    return mm(h, "output.weight" if "output.weight" in W else "token_embd.weight")


def rel(a, b):
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b))


def act_report(name, c, W, types, toks, exact):
    """<name>_logits_act8.npy: the logits with every matmul's activations quantized as ingot's
    cpu backend does (exact weights, exact dots otherwise): what its integer kernels compute.
    Prints the error this alone causes, tensor by tensor, and what llama.cpp's scheme gives."""
    t = torch.tensor(toks)
    ours = gguf_llama_forward(c, W, t, act_ingot, types)
    G.save_npy(name + "_logits_act8.npy", ours.numpy().astype(np.float32))
    print(f"{name}: 8-bit activations as ingot quantizes them: {rel(ours, exact):.4g} from the "
          f"f32-activation logits; as llama.cpp does (Q8_0/Q8_1/Q8_K, F16/BF16): "
          f"{rel(gguf_llama_forward(c, W, t, act_ggml, types), exact):.4g}")
    for n in [k for k in types if types[k] != T_F32]:
        sel = {k: (types[k] if k == n else T_F32) for k in types}
        e = rel(gguf_llama_forward(c, W, t, act_ingot, sel), exact)
        if e:
            print(f"  only {n} ({TYPE_NAMES[types[n]]}): {e:.4g}")


TYPE_NAMES = {T_F32: "F32", T_F16: "F16", T_Q4_0: "Q4_0", T_Q4_1: "Q4_1", T_Q5_0: "Q5_0",
              T_Q5_1: "Q5_1", T_Q8_0: "Q8_0", T_Q4_K: "Q4_K", T_Q5_K: "Q5_K", T_Q6_K: "Q6_K",
              T_BF16: "BF16"}


def finish(name, c, W, min_gap, types=None):
    fwd = gguf_llama_forward
    g = torch.Generator().manual_seed(4321)
    toks = [1] + torch.randint(3, c["vocab"], (23,), generator=g).tolist()
    G.save_npy(name + "_tokens.npy", np.array(toks, dtype=np.int32))
    exact = fwd(c, W, torch.tensor(toks))
    G.save_npy(name + "_logits.npy", exact.numpy().astype(np.float32))
    out = [1]
    for _ in range(32):
        lg = fwd(c, W, torch.tensor(out))[-1]
        top2 = torch.topk(lg, 2).values
        if float(top2[0] - top2[1]) <= min_gap:
            return False
        out.append(int(torch.argmax(lg)))
    G.save_npy(name + "_greedy.npy", np.array(out, dtype=np.int32))
    if types:
        act_report(name, c, W, types, toks, exact)
    return True


def make_quant(seed):
    c = {"dim": 256, "ffn": 256, "layers": 2, "heads": 4, "kv_heads": 2, "vocab": 64,
         "eps": 1e-5, "theta": 10000.0}
    g = torch.Generator().manual_seed(seed)
    D, F, V, H, Hk = c["dim"], c["ffn"], c["vocab"], c["heads"], c["kv_heads"]
    hd = D // H
    r = lambda *s, scale=1.0: (torch.randn(*s, generator=g) * scale).numpy()
    s = D ** -0.5
    plan = {  # per layer: the type of each matrix
        0: {"attn_q": T_Q4_K, "attn_k": T_Q5_K, "attn_v": T_Q6_K, "attn_output": T_Q8_0,
            "ffn_gate": T_Q4_0, "ffn_up": T_Q4_1, "ffn_down": T_Q5_0},
        1: {"attn_q": T_Q5_1, "attn_k": T_F16, "attn_v": T_BF16, "attn_output": T_Q4_K,
            "ffn_gate": T_Q5_K, "ffn_up": T_Q6_K, "ffn_down": T_Q8_0},
    }
    shapes = {"attn_q": (H * hd, D), "attn_k": (Hk * hd, D), "attn_v": (Hk * hd, D),
              "attn_output": (D, H * hd), "ffn_gate": (F, D), "ffn_up": (F, D), "ffn_down": (D, F)}
    tensors, W, types = [], {}, {}

    def add(name, arr, t):
        raw, back = quantize(arr, t)
        tensors.append((name, arr.shape, t, raw))
        W[name] = torch.from_numpy(back)
        types[name] = t

    add("token_embd.weight", r(V, D), T_Q8_0)
    for l in range(c["layers"]):
        add(f"blk.{l}.attn_norm.weight", 1 + 0.1 * r(D), T_F32)
        for k, (o, i) in shapes.items():
            add(f"blk.{l}.{k}.weight", r(o, i, scale=i ** -0.5), plan[l][k])
            if k == "attn_output":
                add(f"blk.{l}.ffn_norm.weight", 1 + 0.1 * r(D), T_F32)
    add("output_norm.weight", 1 + 0.1 * r(D), T_F32)
    add("output.weight", r(V, D, scale=s * 4), T_Q6_K)
    write_gguf_typed(os.path.join(OUT, "quant.gguf"), llama_kvs(c), tensors)
    return finish("quant", c, W, 0.05, types)


def make_stories_q8():
    path = os.path.join(os.path.dirname(OUT), "..", "..", "..", "shared", "fixtures", "models",
                        "stories260K", "stories260K.bin")
    b = open(path, "rb").read()
    dim, hid, L, H, Hk, V, seq = struct.unpack("7i", b[:28])
    assert V > 0
    kv = dim // H * Hk
    a = np.frombuffer(b[28:], np.float32)
    o = 0
    def take(*shape):
        nonlocal o
        n = int(np.prod(shape))
        x = a[o:o + n].reshape(shape)
        o += n
        return x
    embd = take(V, dim)
    arrs = {"attn_norm": take(L, dim), "attn_q": take(L, dim, dim), "attn_k": take(L, kv, dim),
            "attn_v": take(L, kv, dim), "attn_output": take(L, dim, dim), "ffn_norm": take(L, dim),
            "ffn_gate": take(L, hid, dim), "ffn_down": take(L, dim, hid), "ffn_up": take(L, hid, dim)}
    norm = take(dim)
    c = {"dim": dim, "ffn": hid, "layers": L, "heads": H, "kv_heads": Hk, "vocab": V, "eps": 1e-5,
         "theta": 10000.0, "ctx": seq}
    tensors, W, types = [], {}, {}

    def add(name, arr, t):
        raw, back = quantize(arr, t)
        tensors.append((name, arr.shape, t, raw))
        W[name] = torch.from_numpy(back)
        types[name] = t

    add("token_embd.weight", embd, T_Q8_0)
    for l in range(L):
        for k in ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
                  "ffn_down", "ffn_up"]:
            x = arrs[k][l]
            t = T_F32 if x.ndim == 1 else (T_Q8_0 if x.shape[1] % 32 == 0 else T_F16)
            add(f"blk.{l}.{k}.weight", x, t)
    add("output_norm.weight", norm, T_F32)
    write_gguf_typed(os.path.join(OUT, "stories_q8.gguf"), llama_kvs(c), tensors)
    assert finish("stories_q8", c, W, 0.05, types), "stories_q8: a greedy gap below 0.05"


def main():
    os.makedirs(OUT, exist_ok=True)
    seed = 11  # the first seed whose greedy path keeps every top-2 gap above 0.05
    while not make_quant(seed):
        seed += 1
    print("quant.gguf: seed", seed)
    make_stories_q8()


if __name__ == "__main__":
    main()
