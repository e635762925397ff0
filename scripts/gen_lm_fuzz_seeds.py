#!/usr/bin/python3
"""Seeds for fuzz/corpus/fuzz_llama2c (tiny llama2.c checkpoints in the legacy, version 1 and
version 2 layouts, written from llama2.c's export.py description) and fuzz/corpus/fuzz_lm_config
(config.json files of each model type the runtime reads, plus edge cases).
Run from the repository root: /usr/bin/python3 scripts/gen_lm_fuzz_seeds.py"""
import json
import os
import struct

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
L2C = os.path.join(ROOT, "fuzz/corpus/fuzz_llama2c")
CFG = os.path.join(ROOT, "fuzz/corpus/fuzz_lm_config")


def arrays(dim, hidden, L, heads, kv, vocab, seq, rng):
    kvd = dim // heads * kv
    hs = dim // heads
    r = lambda *s: rng.standard_normal(s).astype(np.float32)
    return {
        "embd": r(vocab, dim), "attn_norm": r(L, dim), "wq": r(L, dim, dim), "wk": r(L, kvd, dim),
        "wv": r(L, kvd, dim), "wo": r(L, dim, dim), "ffn_norm": r(L, dim), "w1": r(L, hidden, dim),
        "w2": r(L, dim, hidden), "w3": r(L, hidden, dim), "norm": r(dim), "fre": r(seq, hs // 2),
        "fim": r(seq, hs // 2), "cls": r(vocab, dim),
    }


def legacy(c, a, shared):
    dim, hidden, L, heads, kv, vocab, seq = c
    out = struct.pack("7i", dim, hidden, L, heads, kv, vocab if shared else -vocab, seq)
    for k in ["embd", "attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3", "norm",
              "fre", "fim"] + ([] if shared else ["cls"]):
        out += a[k].tobytes()
    return out


def header(c, version, shared, gs=None):
    out = struct.pack("<Ii", 0x616B3432, version) + struct.pack("7i", *c) + struct.pack("B", shared)
    if version == 2:
        out += struct.pack("i", gs)
    return out + b"\0" * (256 - len(out))


ORDER = ["embd", "wq", "wk", "wv", "wo", "w1", "w2", "w3"]


def v1(c, a, shared):
    out = header(c, 1, shared)
    for k in ["attn_norm", "ffn_norm", "norm"] + ORDER + ([] if shared else ["cls"]):
        out += a[k].tobytes()
    return out


def v2(c, a, shared, gs):
    out = header(c, 2, shared, gs)
    for k in ["attn_norm", "ffn_norm", "norm"]:
        out += a[k].tobytes()
    for k in ORDER + ([] if shared else ["cls"]):
        ws = a[k] if k in ("embd", "cls") else list(a[k])
        for w in ([ws] if k in ("embd", "cls") else ws):
            g = w.reshape(-1, gs)
            scale = np.abs(g).max(axis=1) / np.float32(127.0)
            q = np.round(g / scale[:, None]).astype(np.int8)
            out += q.tobytes() + scale.astype(np.float32).tobytes()
    return out


def main():
    os.makedirs(L2C, exist_ok=True)
    os.makedirs(CFG, exist_ok=True)
    rng = np.random.default_rng(15)
    c = (8, 12, 1, 2, 1, 6, 2)
    a = arrays(*c, rng)
    seeds = {
        "legacy_shared.bin": legacy(c, a, True),
        "legacy_untied.bin": legacy(c, a, False),
        "v1_shared.bin": v1(c, a, 1),
        "v1_untied.bin": v1(c, a, 0),
        "v2_gs4.bin": v2(c, a, 1, 4),
        "v2_untied_gs8.bin": v2(c, a, 0, 8),
    }
    c2 = (4, 6, 2, 2, 2, 3, 1)
    seeds["legacy_two_layers.bin"] = legacy(c2, arrays(*c2, rng), True)
    for name, data in seeds.items():
        with open(os.path.join(L2C, name), "wb") as f:
            f.write(data)
    base = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172,
            "num_hidden_layers": 5, "num_attention_heads": 8, "num_key_value_heads": 4,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": 512,
            "max_position_embeddings": 512, "tie_word_embeddings": True, "bos_token_id": 1,
            "eos_token_id": 2, "hidden_act": "silu", "architectures": ["LlamaForCausalLM"],
            "torch_dtype": "float32", "rope_scaling": None}
    cfgs = {
        "llama.json": base,
        "mistral.json": dict(base, model_type="mistral", sliding_window=None, eos_token_id=[2, 3]),
        "mixtral.json": dict(base, model_type="mixtral", num_local_experts=4,
                             num_experts_per_tok=2),
        "qwen2.json": dict(base, model_type="qwen2", attention_bias=True, head_dim=8),
        "gpt2.json": {"model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4,
                      "n_positions": 64, "n_inner": None, "vocab_size": 50,
                      "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
                      "bos_token_id": 0, "eos_token_id": 0, "task_specific_params": {"x": [1]}},
        "rope_scaling.json": dict(base, rope_scaling={"type": "linear", "factor": 2.0}),
        "rope_scaling_llama3.json": dict(base, rope_scaling={
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192}),
        "rope_scaling_yarn.json": dict(base, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                           "beta_fast": 32, "beta_slow": 1}),
    }
    for name, cfg in cfgs.items():
        with open(os.path.join(CFG, name), "w") as f:
            json.dump(cfg, f, indent=2)
    with open(os.path.join(CFG, "duplicate_key.json"), "w") as f:
        f.write('{"model_type": "llama", "hidden_size": 64, "hidden_size": 65}')


if __name__ == "__main__":
    main()
