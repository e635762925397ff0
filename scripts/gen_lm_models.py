#!/usr/bin/python3
"""Seeded small decoder models and their golden logits for tests/test_lm_models.c.

Run with Debian's Python (torch 1.13, numpy; no transformers, no safetensors, no gguf package):
    /usr/bin/python3 scripts/gen_lm_models.py
Writes tests/golden/lm/. Every model is stored the way its ecosystem stores it, written here from
the formats' descriptions (safetensors, GGUF v3 and torch.save are written by this script, not by
ingot), and its reference logits come from a float64 torch forward pass written from the
Hugging Face modeling code's semantics:

  llama    HF names, half-split RoPE (rotate_half), GQA (8 heads, 2 KV heads), untied lm_head;
           stored as sharded safetensors (folder with config.json and the index), as a torch
           state dict (pytorch_model.bin), and as GGUF in llama.cpp's naming with q/k rows
           permuted for the interleaved rotation (its converter's permute)
  qwen2    q/k/v biases (Qwen2), rope_theta 1e6, tied head; safetensors + GGUF arch "qwen2"
           (llama.cpp keeps NEOX order: no permutation)
  llama_ropelin, llama_rope3  the llama layout with scaled RoPE (config.json rope_scaling):
           linear (factor 4) and Llama 3's per-frequency rule; GGUF with rope.scaling.type
           "linear" + rope.scaling.factor, and with rope_freqs.weight (llama.cpp's converter)
  gpt2     GPT-2: Conv1D weights [in, out], fused c_attn with bias, learned positions, tanh GELU,
           tied head, the attn.bias / attn.masked_bias buffers present; hub-style safetensors
           (names without "transformer."), a GPT2LMHeadModel state dict (with it), and GGUF in
           llama.cpp's gpt2 naming (weights transposed to [out, in])
  moe      Mixtral-style: 4 experts, top-2, router softmax, renormalised weights; safetensors
           (block_sparse_moe.experts.E.w1/w2/w3) + GGUF with merged ffn_*_exps tensors

  llama_partial  partial rotary: head size 16, partial_rotary_factor 0.5 (the first 8 dims of
           each head rotate, half-split among them, as transformers' partial models); GGUF with
           rope.dimension_count 8 and q/k rows permuted within those 8 (ggml's n_dims, interleaved)

PEFT LoRA adapters (<m>_lora/: adapter_config.json + adapter_model.safetensors) with the logits
of the model torch merged them into at scale 0.5 (<m>_lora_logits.npy): llama (q/k/v, down),
gpt2 (c_attn, c_proj, c_fc; fan_in_fan_out, the Conv1D delta (B A)^T), moe (q, o, the router,
every expert's w1/w2/w3; routing margins checked to exceed 1e-3).

For each model: <m>_tokens.npy (int32 [T], starts with BOS), <m>_logits.npy (float32 [T, V],
teacher forcing), <m>_greedy.npy (int32 [33]: BOS + 32 greedy tokens, every top-2 logit gap on
the path checked to exceed 1e-3 so float rounding cannot flip it).
"""
import io
import json
import math
import os
import struct
import zipfile

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden", "lm")
torch.set_default_dtype(torch.float64)

# ---------------------------------------------------------------------------------------------
# writers
# ---------------------------------------------------------------------------------------------


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, np.ndarray) in file order (F32, U8)."""
    header, off, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = metadata
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        dt = {np.dtype(np.float32): "F32", np.dtype(np.uint8): "U8", np.dtype(np.bool_): "BOOL"}[a.dtype]
        b = a.tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


GGUF_U32, GGUF_F32, GGUF_STRING = 4, 6, 8
GGML_F32, GGML_Q8_0 = 0, 8


def write_gguf(path, kvs, tensors, align=32):
    """kvs: list of (key, type, value); tensors: list of (name, np.float32 array) stored F32."""
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += s(k) + struct.pack("<I", t)
        out += {GGUF_U32: lambda: struct.pack("<I", v), GGUF_F32: lambda: struct.pack("<f", v),
                GGUF_STRING: lambda: s(v)}[t]()
    off, data = 0, []
    for name, a in tensors:
        a = np.ascontiguousarray(a, dtype=np.float32)
        out += s(name) + struct.pack("<I", a.ndim) + b"".join(struct.pack("<Q", d) for d in a.shape[::-1])
        out += struct.pack("<IQ", GGML_F32, off)
        b = a.tobytes()
        b += b"\0" * ((align - len(b) % align) % align)
        data.append(b)
        off += len(b)
    out += b"\0" * ((align - len(out) % align) % align)
    with open(path, "wb") as f:
        f.write(out + b"".join(data))


def write_torch(path, tensors):
    """A torch.save zip of an OrderedDict of float32 tensors (torch's own writer)."""
    sd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tensors}
    torch.save(sd, path)


def save_npy(name, a):
    np.save(os.path.join(OUT, name), a)


# ---------------------------------------------------------------------------------------------
# reference forward passes (float64)
# ---------------------------------------------------------------------------------------------


def rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def causal_attention(q, k, v):
    """q [T, H, d], k/v [T, Hkv, d]; head h reads kv head h // (H / Hkv)."""
    T, H, d = q.shape
    rep = H // k.shape[1]
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    s = torch.einsum("thd,shd->hts", q, k) / d ** 0.5
    s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    return torch.einsum("hts,shd->thd", torch.softmax(s, -1), v).reshape(T, H * d)


def inv_freq(d, theta, scaling=None):
    """The RoPE frequencies, rescaled as transformers' _compute_linear_scaling_rope_parameters
    (positions / factor) and _compute_llama3_parameters do."""
    inv = 1.0 / theta ** (torch.arange(0, d, 2) / d)
    if not scaling:
        return inv
    factor = scaling["factor"]
    if scaling["rope_type"] == "linear":
        return inv / factor
    assert scaling["rope_type"] == "llama3"
    lo, hi = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    lo_wl, hi_wl = old / lo, old / hi
    wl = 2 * math.pi / inv
    out = torch.where(wl > lo_wl, inv / factor, inv)
    smooth = (old / wl - lo) / (hi - lo)
    mid = (1 - smooth) * out / factor + smooth * out
    return torch.where((wl >= hi_wl) & (wl <= lo_wl), mid, out)


def rope_half(x, theta, scaling=None, rot_dims=None):
    """HF rotate_half: pairs (i, i + d/2). rot_dims < head size: partial rotary as transformers'
    partial models do (Phi, StableLM, GPT-NeoX: apply_rotary_pos_emb on x[..., :rot_dims] with
    the frequencies of rot_dims, x[..., rot_dims:] passed through)."""
    if rot_dims is not None and rot_dims < x.shape[-1]:
        return torch.cat([rope_half(x[..., :rot_dims], theta, scaling), x[..., rot_dims:]], -1)
    T, H, d = x.shape
    inv = inv_freq(d, theta, scaling)
    f = torch.arange(T)[:, None] * inv[None]
    emb = torch.cat([f, f], -1)
    cos, sin = emb.cos()[:, None], emb.sin()[:, None]
    rot = torch.cat([-x[..., d // 2:], x[..., : d // 2]], -1)
    return x * cos + rot * sin


def llama_forward(c, W, tokens):
    L, H, Hk = c["layers"], c["heads"], c["kv_heads"]
    d = c["dim"] // H
    h = W["model.embed_tokens.weight"][tokens]
    T = len(tokens)
    for l in range(L):
        p = f"model.layers.{l}."
        x = rmsnorm(h, W[p + "input_layernorm.weight"], c["eps"])
        def proj(n):
            y = x @ W[p + f"self_attn.{n}_proj.weight"].T
            b = W.get(p + f"self_attn.{n}_proj.bias")
            return y if b is None else y + b
        rd = int(d * c["partial"]) if c.get("partial") else None
        q = rope_half(proj("q").reshape(T, H, d), c["theta"], c.get("rope_scaling"), rd)
        k = rope_half(proj("k").reshape(T, Hk, d), c["theta"], c.get("rope_scaling"), rd)
        v = proj("v").reshape(T, Hk, d)
        h = h + causal_attention(q, k, v) @ W[p + "self_attn.o_proj.weight"].T
        x = rmsnorm(h, W[p + "post_attention_layernorm.weight"], c["eps"])
        if c.get("experts"):
            m = p + "block_sparse_moe."
            probs = torch.softmax(x @ W[m + "gate.weight"].T, -1)
            top, idx = torch.topk(probs, c["experts_used"], -1)
            top = top / top.sum(-1, keepdim=True)
            out = torch.zeros_like(x)
            for t in range(T):
                for j in range(c["experts_used"]):
                    e = m + f"experts.{int(idx[t, j])}."
                    xt = x[t]
                    y = (torch.nn.functional.silu(xt @ W[e + "w1.weight"].T) * (xt @ W[e + "w3.weight"].T)) @ W[e + "w2.weight"].T
                    out[t] += top[t, j] * y
            h = h + out
        else:
            g = torch.nn.functional.silu(x @ W[p + "mlp.gate_proj.weight"].T)
            h = h + (g * (x @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
    h = rmsnorm(h, W["model.norm.weight"], c["eps"])
    head = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    return h @ head.T


def gpt2_forward(c, W, tokens):
    T, D, H = len(tokens), c["dim"], c["heads"]
    ln = lambda x, n: torch.nn.functional.layer_norm(x, (D,), W[n + ".weight"], W[n + ".bias"], c["eps"])
    h = W["wte.weight"][tokens] + W["wpe.weight"][torch.arange(T)]
    for l in range(c["layers"]):
        p = f"h.{l}."
        qkv = ln(h, p + "ln_1") @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]
        q, k, v = (qkv[:, i * D:(i + 1) * D].reshape(T, H, D // H) for i in range(3))
        h = h + causal_attention(q, k, v) @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        x = ln(h, p + "ln_2")
        m = torch.nn.functional.gelu(x @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"], approximate="tanh")
        h = h + m @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
    return ln(h, "ln_f") @ W["wte.weight"].T


def greedy(fwd, c, W, bos, steps=32):
    toks = [bos]
    for _ in range(steps):
        lg = fwd(c, W, torch.tensor(toks))[-1]
        top2 = torch.topk(lg, 2).values
        assert float(top2[0] - top2[1]) > 1e-3, "greedy path too close to a tie: pick another seed"
        toks.append(int(torch.argmax(lg)))
    return np.array(toks, dtype=np.int32)


# ---------------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------------


def rand(g, *shape, scale=1.0):
    return torch.randn(*shape, generator=g) * scale


def llama_weights(c, g, bias=False, tied=False):
    D, F, V, H, Hk = c["dim"], c["ffn"], c["vocab"], c["heads"], c["kv_heads"]
    d = D // H
    s = D ** -0.5
    W = {"model.embed_tokens.weight": rand(g, V, D)}
    for l in range(c["layers"]):
        p = f"model.layers.{l}."
        W[p + "input_layernorm.weight"] = 1 + 0.1 * rand(g, D)
        W[p + "self_attn.q_proj.weight"] = rand(g, H * d, D, scale=s)
        W[p + "self_attn.k_proj.weight"] = rand(g, Hk * d, D, scale=s)
        W[p + "self_attn.v_proj.weight"] = rand(g, Hk * d, D, scale=s)
        if bias:
            W[p + "self_attn.q_proj.bias"] = rand(g, H * d, scale=0.3)
            W[p + "self_attn.k_proj.bias"] = rand(g, Hk * d, scale=0.3)
            W[p + "self_attn.v_proj.bias"] = rand(g, Hk * d, scale=0.3)
        W[p + "self_attn.o_proj.weight"] = rand(g, D, H * d, scale=s)
        W[p + "post_attention_layernorm.weight"] = 1 + 0.1 * rand(g, D)
        if c.get("experts"):
            m = p + "block_sparse_moe."
            W[m + "gate.weight"] = rand(g, c["experts"], D, scale=s * 2)
            for e in range(c["experts"]):
                W[m + f"experts.{e}.w1.weight"] = rand(g, F, D, scale=s)
                W[m + f"experts.{e}.w2.weight"] = rand(g, D, F, scale=F ** -0.5)
                W[m + f"experts.{e}.w3.weight"] = rand(g, F, D, scale=s)
        else:
            W[p + "mlp.gate_proj.weight"] = rand(g, F, D, scale=s)
            W[p + "mlp.up_proj.weight"] = rand(g, F, D, scale=s)
            W[p + "mlp.down_proj.weight"] = rand(g, D, F, scale=F ** -0.5)
    W["model.norm.weight"] = 1 + 0.1 * rand(g, D)
    if not tied:
        W["lm_head.weight"] = rand(g, V, D, scale=s * 3)
    return W


def hf_llama_config(c, model_type, tied, **extra):
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": model_type,
           "hidden_size": c["dim"], "intermediate_size": c["ffn"],
           "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
           "num_key_value_heads": c["kv_heads"], "vocab_size": c["vocab"],
           "max_position_embeddings": 64, "rms_norm_eps": c["eps"], "rope_theta": c["theta"],
           "tie_word_embeddings": tied, "hidden_act": "silu", "bos_token_id": 1,
           "eos_token_id": 2, "torch_dtype": "float32", "rope_scaling": c.get("rope_scaling")}
    cfg.update(extra)
    return cfg


def permute(w, n_head, rot=None):
    """llama.cpp's converter: q/k rows reordered so interleaved pairs rotate like HF's halves.
    rot < head size (partial rotary): only each head's first rot rows, the rest stay."""
    hd = w.shape[0] // n_head
    if rot is not None and rot < hd:
        h = w.reshape(n_head, hd, *w.shape[1:]).copy()
        h[:, :rot] = permute(h[:, :rot].reshape(n_head * rot, *w.shape[1:]), n_head).reshape(
            n_head, rot, *w.shape[1:])
        return h.reshape(w.shape)
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_llama(path, c, W, arch, permute_qk, merged_experts=False):
    a = arch
    kvs = [("general.architecture", GGUF_STRING, a), ("general.name", GGUF_STRING, "ingot-test"),
           (f"{a}.block_count", GGUF_U32, c["layers"]), (f"{a}.context_length", GGUF_U32, 64),
           (f"{a}.embedding_length", GGUF_U32, c["dim"]),
           (f"{a}.feed_forward_length", GGUF_U32, c["ffn"]),
           (f"{a}.attention.head_count", GGUF_U32, c["heads"]),
           (f"{a}.attention.head_count_kv", GGUF_U32, c["kv_heads"]),
           (f"{a}.rope.freq_base", GGUF_F32, c["theta"]),
           (f"{a}.attention.layer_norm_rms_epsilon", GGUF_F32, c["eps"]),
           ("tokenizer.ggml.bos_token_id", GGUF_U32, 1), ("tokenizer.ggml.eos_token_id", GGUF_U32, 2)]
    rot = None
    if c.get("partial"):  # partial rotary: ggml rotates the first n_dims of each head
        rot = int(c["dim"] // c["heads"] * c["partial"])
        kvs.append((f"{a}.rope.dimension_count", GGUF_U32, rot))
    if c.get("experts"):
        kvs += [(f"{a}.expert_count", GGUF_U32, c["experts"]),
                (f"{a}.expert_used_count", GGUF_U32, c["experts_used"])]
    n = lambda x: x.numpy().astype(np.float32)
    T = [("token_embd.weight", n(W["model.embed_tokens.weight"]))]
    rs = c.get("rope_scaling")
    if rs and rs["rope_type"] == "linear":  # llama.cpp's converter: type and factor keys
        kvs += [(f"{a}.rope.scaling.type", GGUF_STRING, "linear"),
                (f"{a}.rope.scaling.factor", GGUF_F32, rs["factor"])]
    elif rs:  # llama3: per-frequency divisors in rope_freqs.weight, as its converter writes
        d = c["dim"] // c["heads"]
        T.append(("rope_freqs.weight", n(inv_freq(d, c["theta"]) / inv_freq(d, c["theta"], rs))))
    for l in range(c["layers"]):
        p, b = f"model.layers.{l}.", f"blk.{l}."
        q, k = n(W[p + "self_attn.q_proj.weight"]), n(W[p + "self_attn.k_proj.weight"])
        if permute_qk:
            q, k = permute(q, c["heads"], rot), permute(k, c["kv_heads"], rot)
        T += [(b + "attn_norm.weight", n(W[p + "input_layernorm.weight"])),
              (b + "attn_q.weight", q), (b + "attn_k.weight", k),
              (b + "attn_v.weight", n(W[p + "self_attn.v_proj.weight"]))]
        for x in "qkv":
            if p + f"self_attn.{x}_proj.bias" in W:
                T.append((b + f"attn_{x}.bias", n(W[p + f"self_attn.{x}_proj.bias"])))
        T += [(b + "attn_output.weight", n(W[p + "self_attn.o_proj.weight"])),
              (b + "ffn_norm.weight", n(W[p + "post_attention_layernorm.weight"]))]
        if c.get("experts"):
            m = p + "block_sparse_moe."
            T.append((b + "ffn_gate_inp.weight", n(W[m + "gate.weight"])))
            for gname, hf in (("gate", "w1"), ("down", "w2"), ("up", "w3")):
                ex = [n(W[m + f"experts.{e}.{hf}.weight"]) for e in range(c["experts"])]
                if merged_experts:
                    T.append((b + f"ffn_{gname}_exps.weight", np.stack(ex)))
                else:
                    T += [(b + f"ffn_{gname}.{e}.weight", x) for e, x in enumerate(ex)]
        else:
            T += [(b + "ffn_gate.weight", n(W[p + "mlp.gate_proj.weight"])),
                  (b + "ffn_up.weight", n(W[p + "mlp.up_proj.weight"])),
                  (b + "ffn_down.weight", n(W[p + "mlp.down_proj.weight"]))]
    T.append(("output_norm.weight", n(W["model.norm.weight"])))
    if "lm_head.weight" in W:
        T.append(("output.weight", n(W["lm_head.weight"])))
    write_gguf(path, kvs, T)


def np_items(W, names=None):
    return [(k, W[k].numpy().astype(np.float32)) for k in (names or W)]


def make_llama(name, c, seed, bias=False, tied=False, model_type="llama", arch="llama",
               permute_qk=True, sharded=False, pt=False, merged_experts=False):
    g = torch.Generator().manual_seed(seed)
    W = llama_weights(c, g, bias=bias, tied=tied)
    d = os.path.join(OUT, name + "_hf")
    os.makedirs(d, exist_ok=True)
    extra = {}
    if c.get("experts"):
        extra = {"num_local_experts": c["experts"], "num_experts_per_tok": c["experts_used"],
                 "architectures": ["MixtralForCausalLM"]}
    if model_type == "qwen2":
        extra["architectures"] = ["Qwen2ForCausalLM"]
    if c.get("partial"):
        extra["partial_rotary_factor"] = c["partial"]
    cfg = hf_llama_config(c, model_type, tied, **extra)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    items = np_items(W)
    if sharded:
        half = len(items) // 2
        shards = [items[:half], items[half:]]
        wm = {}
        for i, sh in enumerate(shards):
            fn = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            write_safetensors(os.path.join(d, fn), sh, {"format": "pt"})
            wm.update({k: fn for k, _ in sh})
        total = sum(a.nbytes for _, a in items)
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)
    else:
        write_safetensors(os.path.join(d, "model.safetensors"), items, {"format": "pt"})
    if pt:
        dp = os.path.join(OUT, name + "_pt")
        os.makedirs(dp, exist_ok=True)
        with open(os.path.join(dp, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        write_torch(os.path.join(dp, "pytorch_model.bin"), items)
    gguf_llama(os.path.join(OUT, name + ".gguf"), c, W, arch, permute_qk, merged_experts)
    finish(name, llama_forward, c, W)
    return W


def make_gpt2(name, c, seed):
    g = torch.Generator().manual_seed(seed)
    D, V, F, P = c["dim"], c["vocab"], 4 * c["dim"], c["positions"]
    s = D ** -0.5
    W = {"wte.weight": rand(g, V, D), "wpe.weight": rand(g, P, D, scale=0.5)}
    for l in range(c["layers"]):
        p = f"h.{l}."
        W.update({p + "ln_1.weight": 1 + 0.1 * rand(g, D), p + "ln_1.bias": rand(g, D, scale=0.1),
                  p + "attn.c_attn.weight": rand(g, D, 3 * D, scale=s),
                  p + "attn.c_attn.bias": rand(g, 3 * D, scale=0.1),
                  p + "attn.c_proj.weight": rand(g, D, D, scale=s),
                  p + "attn.c_proj.bias": rand(g, D, scale=0.1),
                  p + "ln_2.weight": 1 + 0.1 * rand(g, D), p + "ln_2.bias": rand(g, D, scale=0.1),
                  p + "mlp.c_fc.weight": rand(g, D, F, scale=s),
                  p + "mlp.c_fc.bias": rand(g, F, scale=0.1),
                  p + "mlp.c_proj.weight": rand(g, F, D, scale=F ** -0.5),
                  p + "mlp.c_proj.bias": rand(g, D, scale=0.1)})
    W["ln_f.weight"] = 1 + 0.1 * rand(g, D)
    W["ln_f.bias"] = rand(g, D, scale=0.1)
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": D,
           "n_layer": c["layers"], "n_head": c["heads"], "n_positions": P, "n_ctx": P,
           "n_inner": None, "vocab_size": V, "layer_norm_epsilon": c["eps"],
           "activation_function": "gelu_new", "bos_token_id": 0, "eos_token_id": 0,
           "scale_attn_weights": True}
    # hub-style safetensors: no "transformer." prefix, the causal-mask buffers included
    d = os.path.join(OUT, name + "_hf")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    items = []
    for k, v in np_items(W):
        items.append((k, v))
        if k.endswith("attn.c_attn.bias"):
            items.append((k.replace("c_attn.bias", "bias"),
                          np.tril(np.ones((P, P), dtype=np.float32))[None, None]))
            items.append((k.replace("c_attn.bias", "masked_bias"), np.array(-1e4, dtype=np.float32)))
    write_safetensors(os.path.join(d, "model.safetensors"), items, {"format": "pt"})
    # GPT2LMHeadModel state dict: "transformer." names plus the (tied) lm_head copy
    dp = os.path.join(OUT, name + "_pt")
    os.makedirs(dp, exist_ok=True)
    with open(os.path.join(dp, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_torch(os.path.join(dp, "pytorch_model.bin"),
                [("transformer." + k, v) for k, v in np_items(W)] +
                [("lm_head.weight", W["wte.weight"].numpy().astype(np.float32))])
    # GGUF, llama.cpp's gpt2 naming: Conv1D weights transposed to [out, in]
    n = lambda x: x.numpy().astype(np.float32)
    kvs = [("general.architecture", GGUF_STRING, "gpt2"),
           ("gpt2.block_count", GGUF_U32, c["layers"]), ("gpt2.context_length", GGUF_U32, P),
           ("gpt2.embedding_length", GGUF_U32, D), ("gpt2.feed_forward_length", GGUF_U32, F),
           ("gpt2.attention.head_count", GGUF_U32, c["heads"]),
           ("gpt2.attention.layer_norm_epsilon", GGUF_F32, c["eps"]),
           ("tokenizer.ggml.bos_token_id", GGUF_U32, 0), ("tokenizer.ggml.eos_token_id", GGUF_U32, 0)]
    T = [("token_embd.weight", n(W["wte.weight"])), ("position_embd.weight", n(W["wpe.weight"]))]
    for l in range(c["layers"]):
        p, b = f"h.{l}.", f"blk.{l}."
        T += [(b + "attn_norm.weight", n(W[p + "ln_1.weight"])), (b + "attn_norm.bias", n(W[p + "ln_1.bias"])),
              (b + "attn_qkv.weight", n(W[p + "attn.c_attn.weight"]).T), (b + "attn_qkv.bias", n(W[p + "attn.c_attn.bias"])),
              (b + "attn_output.weight", n(W[p + "attn.c_proj.weight"]).T), (b + "attn_output.bias", n(W[p + "attn.c_proj.bias"])),
              (b + "ffn_norm.weight", n(W[p + "ln_2.weight"])), (b + "ffn_norm.bias", n(W[p + "ln_2.bias"])),
              (b + "ffn_up.weight", n(W[p + "mlp.c_fc.weight"]).T), (b + "ffn_up.bias", n(W[p + "mlp.c_fc.bias"])),
              (b + "ffn_down.weight", n(W[p + "mlp.c_proj.weight"]).T), (b + "ffn_down.bias", n(W[p + "mlp.c_proj.bias"]))]
    T += [("output_norm.weight", n(W["ln_f.weight"])), ("output_norm.bias", n(W["ln_f.bias"]))]
    write_gguf(os.path.join(OUT, name + ".gguf"), kvs, T)
    finish(name, gpt2_forward, c, W, bos=0)
    return W


def finish(name, fwd, c, W, bos=1):
    # the models run in float32 weights: the reference sees exactly those values
    W = {k: v.float().double() for k, v in W.items()}
    g = torch.Generator().manual_seed(1234)
    toks = [bos] + torch.randint(3, c["vocab"], (19,), generator=g).tolist()
    save_npy(name + "_tokens.npy", np.array(toks, dtype=np.int32))
    save_npy(name + "_logits.npy", fwd(c, W, torch.tensor(toks)).numpy().astype(np.float32))
    save_npy(name + "_greedy.npy", greedy(fwd, c, W, bos))


def lora_pair(g, W, merged, items, mod, r, alpha, scale, name_prefix, conv1d=False):
    """Draws one module's lora_A [r, in] and lora_B [out, r] (in this order from g), appends
    them to items under PEFT's names and merges them into merged: W + scale * alpha / r * B A,
    transposed for a Conv1D weight stored [in, out] (PEFT's fan_in_fan_out)."""
    shape = W[mod + ".weight"].shape
    inp, out = shape if conv1d else (shape[1], shape[0])
    A = rand(g, r, inp, scale=inp ** -0.5).float().double()
    B = rand(g, out, r, scale=0.3).float().double()
    items += [(f"{name_prefix}{mod}.lora_A.weight", A.numpy().astype(np.float32)),
              (f"{name_prefix}{mod}.lora_B.weight", B.numpy().astype(np.float32))]
    delta = (B @ A).T if conv1d else B @ A
    merged[mod + ".weight"] = W[mod + ".weight"] + scale * alpha / r * delta


def make_lora(name, c, W, seed, scale):
    """A PEFT adapter for the llama model (r 4, alpha 8, q/k/v and down projections) and the
    logits of the merged model W + scale * alpha / r * B A (the tests pass the same scale)."""
    g = torch.Generator().manual_seed(seed)
    r, alpha = 4, 8.0
    targets = ["q_proj", "k_proj", "v_proj", "down_proj"]
    d = os.path.join(OUT, name + "_lora")
    os.makedirs(d, exist_ok=True)
    W = {k: v.float().double() for k, v in W.items()}
    merged, items = dict(W), []
    for l in range(c["layers"]):
        for t in targets:
            mod = f"model.layers.{l}." + ("mlp." if t == "down_proj" else "self_attn.") + t
            lora_pair(g, W, merged, items, mod, r, alpha, scale, "base_model.model.")
    write_safetensors(os.path.join(d, "adapter_model.safetensors"), items, {"format": "pt"})
    write_adapter_config(d, "llama_hf", r, alpha, targets, False)
    toks = np.load(os.path.join(OUT, "llama_tokens.npy"))
    save_npy(name + "_lora_logits.npy",
             llama_forward(c, merged, torch.tensor(toks.astype(np.int64))).numpy().astype(np.float32))


def write_adapter_config(d, base, r, alpha, targets, fan_in_fan_out):
    cfg = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": base,
           "r": r, "lora_alpha": alpha, "lora_dropout": 0.0, "target_modules": targets,
           "bias": "none", "fan_in_fan_out": fan_in_fan_out, "use_rslora": False,
           "use_dora": False, "rank_pattern": {}, "alpha_pattern": {}, "layers_to_transform": None,
           "modules_to_save": None, "inference_mode": True}
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def make_gpt2_lora(name, c, W, seed, scale):
    """A PEFT adapter for the gpt2 model as PEFT writes it for GPT2LMHeadModel's Conv1D layers:
    fan_in_fan_out true, targets c_attn, c_proj (attention and MLP both end in it) and c_fc,
    lora_A [r, in] and lora_B [out, r] as for Linear, names with "transformer."; the merged
    Conv1D weight (stored [in, out]) is W + scale * alpha / r * (B A)^T, as PEFT's
    get_delta_weight transposes it for fan_in_fan_out."""
    g = torch.Generator().manual_seed(seed)
    r, alpha = 4, 8.0
    targets = ["c_attn", "c_proj", "c_fc"]
    d = os.path.join(OUT, name + "_lora")
    os.makedirs(d, exist_ok=True)
    W = {k: v.float().double() for k, v in W.items()}
    merged, items = dict(W), []
    for l in range(c["layers"]):
        for mod in (f"h.{l}.attn.c_attn", f"h.{l}.attn.c_proj", f"h.{l}.mlp.c_fc",
                    f"h.{l}.mlp.c_proj"):
            lora_pair(g, W, merged, items, mod, r, alpha, scale, "base_model.model.transformer.",
                      conv1d=True)
    write_safetensors(os.path.join(d, "adapter_model.safetensors"), items, {"format": "pt"})
    write_adapter_config(d, "gpt2_hf", r, alpha, targets, True)
    toks = np.load(os.path.join(OUT, name + "_tokens.npy"))
    save_npy(name + "_lora_logits.npy",
             gpt2_forward(c, merged, torch.tensor(toks.astype(np.int64))).numpy().astype(np.float32))


def moe_route_margin(c, W, tokens):
    """The smallest gap, over layers and positions, between the k-th and (k+1)-th router
    probability: float32 rounding must not change which experts run."""
    margins = []
    orig = torch.softmax

    def spy(x, dim):
        p = orig(x, dim)
        if x.shape[-1] == c["experts"]:
            top = torch.topk(p, c["experts_used"] + 1, -1).values
            margins.append(float((top[..., -2] - top[..., -1]).min()))
        return p
    torch.softmax = spy
    try:
        llama_forward(c, W, tokens)
    finally:
        torch.softmax = orig
    return min(margins)


def make_moe_lora(name, c, W, seed, scale):
    """A PEFT adapter for the Mixtral-style moe model: attention q and o, the router ("gate":
    block_sparse_moe.gate) and every expert's w1, w2, w3 (r 4, alpha 8); golden logits of the
    merged model W + scale * alpha / r * B A."""
    g = torch.Generator().manual_seed(seed)
    r, alpha = 4, 8.0
    targets = ["q_proj", "o_proj", "gate", "w1", "w2", "w3"]
    d = os.path.join(OUT, name + "_lora")
    os.makedirs(d, exist_ok=True)
    W = {k: v.float().double() for k, v in W.items()}
    merged, items = dict(W), []
    for l in range(c["layers"]):
        p = f"model.layers.{l}."
        mods = [p + "self_attn.q_proj", p + "self_attn.o_proj", p + "block_sparse_moe.gate"]
        mods += [p + f"block_sparse_moe.experts.{e}.{w}" for e in range(c["experts"])
                 for w in ("w1", "w2", "w3")]
        for mod in mods:
            lora_pair(g, W, merged, items, mod, r, alpha, scale, "base_model.model.")
    write_safetensors(os.path.join(d, "adapter_model.safetensors"), items, {"format": "pt"})
    write_adapter_config(d, "moe_hf", r, alpha, targets, False)
    toks = torch.tensor(np.load(os.path.join(OUT, name + "_tokens.npy")).astype(np.int64))
    margin = moe_route_margin(c, merged, toks)
    assert margin > 1e-3, f"routing too close to a tie ({margin}): pick another seed"
    save_npy(name + "_lora_logits.npy", llama_forward(c, merged, toks).numpy().astype(np.float32))


def main():
    os.makedirs(OUT, exist_ok=True)
    base = {"dim": 32, "ffn": 64, "layers": 2, "heads": 4, "kv_heads": 2, "vocab": 64,
            "eps": 1e-5, "theta": 10000.0}
    W = make_llama("llama", base, seed=1, sharded=True, pt=True)
    make_lora("llama", base, W, seed=5, scale=0.5)
    make_llama("qwen2", dict(base, theta=1000000.0, eps=1e-6), seed=2, bias=True, tied=True,
               model_type="qwen2", arch="qwen2", permute_qk=False)
    moe = dict(base, experts=4, experts_used=2)
    Wm = make_llama("moe", moe, seed=3, model_type="mixtral", merged_experts=True)
    make_moe_lora("moe", moe, Wm, seed=10, scale=0.5)
    g2 = {"dim": 32, "layers": 2, "heads": 4, "vocab": 64, "positions": 32, "eps": 1e-5}
    Wg = make_gpt2("gpt2", g2, seed=4)
    make_gpt2_lora("gpt2", g2, Wg, seed=9, scale=0.5)
    # scaled RoPE: linear (positions / 4) and Llama 3's per-frequency rule, with an original
    # context small enough that head size 8's four frequencies fall in all three of its bands
    make_llama("llama_ropelin", dict(base, rope_scaling={"rope_type": "linear", "factor": 4.0}),
               seed=6)
    make_llama("llama_rope3", dict(base, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64}), seed=7)
    # partial rotary: head size 16, the first 8 dims of each head rotate (half-split among them
    # in HF, interleaved pairs in the GGUF, whose q/k rows are permuted within those 8 only)
    make_llama("llama_partial", dict(base, heads=2, kv_heads=1, partial=0.5), seed=11)


if __name__ == "__main__":
    main()
