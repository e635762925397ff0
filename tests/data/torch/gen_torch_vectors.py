#!/usr/bin/python3
"""Writes the small torch.save test vectors of tests/test_torch.c and their sidecars.

Run with Debian's python3-torch 1.13.1 (/usr/bin/python3), from this directory:
    /usr/bin/python3 gen_torch_vectors.py
CI has no torch: the outputs are committed. Legacy files embed memory addresses as storage keys,
so regenerating changes their bytes (not their content).

Sidecar <file>.json: {"tensors": [{name, dtype (ingot name), shape, stride, contiguous,
sha256 of the C-order little-endian element bytes}], "metadata": {key: [type, value]}} or
{"refuse": STATUS} for files ingot must refuse.
"""
import collections
import hashlib
import json
import os
import pickle
import sys

import torch

OUT = os.path.dirname(os.path.abspath(__file__))
DT = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
      torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
      torch.uint8: "U8", torch.bool: "BOOL", torch.complex64: "C64", torch.complex128: "C128"}


def cbytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def flatten(obj, path, tensors, meta):
    if isinstance(obj, torch.Tensor):
        tensors.append({"name": path or "tensor", "dtype": DT[obj.dtype], "shape": list(obj.shape),
                        "stride": list(obj.stride()), "contiguous": obj.is_contiguous(),
                        "sha256": hashlib.sha256(cbytes(obj)).hexdigest()})
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, (path + "/" if path else "") + str(k), tensors, meta)
    elif isinstance(obj, (list, tuple)):
        kinds = {type(x) for x in obj}
        if obj and len(kinds) == 1 and kinds.pop() in (int, float, bool, str):
            t = {int: "i64", float: "f64", bool: "bool", str: "string"}[type(obj[0])]
            meta[path] = [t + "[]", list(obj)]
        else:
            for i, v in enumerate(obj):
                flatten(v, (path + "/" if path else "") + str(i), tensors, meta)
    elif isinstance(obj, bool):
        meta[path] = ["bool", obj]
    elif isinstance(obj, int):
        meta[path] = ["i64", obj] if -2**63 <= obj < 2**63 else ["string", str(obj)]
    elif isinstance(obj, float):
        meta[path] = ["f64", obj]
    elif isinstance(obj, str):
        meta[path] = ["string", obj]
    elif isinstance(obj, bytes):
        meta[path] = ["bytes", obj.hex()]
    elif isinstance(obj, torch.dtype):
        meta[path] = ["string", str(obj)]
    elif isinstance(obj, torch.device):
        meta[path] = ["string", str(obj)]


def save(name, obj, **kw):
    path = os.path.join(OUT, name)
    torch.save(obj, path, **kw)
    tensors, meta = [], {}
    flatten(torch.load(path), "", tensors, meta)
    with open(path + ".json", "w") as f:
        json.dump({"tensors": tensors, "metadata": meta}, f, indent=1)


def refuse(name, obj, status, **kw):
    path = os.path.join(OUT, name)
    torch.save(obj, path, **kw)
    with open(path + ".json", "w") as f:
        json.dump({"refuse": status}, f)


def complex128():
    """complex128 (C128), zip and legacy: ComplexDoubleStorage."""
    c = {"c": torch.tensor([[1 + 2j, -3.5 - 0.25j, 1e300 + 1e-300j], [0j, -0.0 - 0.0j, 7 - 1j]],
                           dtype=torch.complex128)}
    c["t"] = c["c"].t()  # a strided view of the same storage
    save("complex128.pt", c)
    save("complex128_legacy.pt", c, _use_new_zipfile_serialization=False)


def main():
    torch.manual_seed(0)
    # Views and shared storages (spec §4).
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    e = torch.tensor([1.0, 2.0, 3.0]).expand(4, 3)
    views = collections.OrderedDict(
        base=base, row_slice=base[1:3], col_slice=base[:, 2:4], transposed=base.t(),
        flat_view=base.view(-1)[5:9], tied=base, expanded=e)
    for legacy in (False, True):
        save("views%s.pt" % ("_legacy" if legacy else ""), views,
             _use_new_zipfile_serialization=not legacy)

    # Every classic dtype, a 0-dim tensor, an empty (0, 3) tensor.
    dts = collections.OrderedDict()
    for dt in DT:
        if dt == torch.complex128:
            continue  # its own files below (dtypes*.pt predate C128)
        if dt.is_complex:
            dts[str(dt)[6:]] = torch.tensor([1 + 2j, -3.5 + 0.25j], dtype=dt)
        elif dt == torch.bool:
            dts["bool"] = torch.tensor([True, False, True])
        else:
            dts[str(dt)[6:]] = (torch.arange(6) - 2).to(dt).reshape(2, 3)
    dts["scalar"] = torch.tensor(3.25)
    dts["empty"] = torch.zeros(0, 3)
    save("dtypes.pt", dts)
    save("dtypes_legacy.pt", dts, _use_new_zipfile_serialization=False)

    # A nested training checkpoint (spec §6.1).
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    m(torch.randn(5, 4)).sum().backward()
    opt.step()
    ckpt = {"model": m.state_dict(), "optimizer": opt.state_dict(), "epoch": 7,
            "best_loss": 0.125, "arch": "mlp", "big": 2**70, "neg": -5, "flags": [True, 3],
            "blob": b"\x00\xffab", "dtype": torch.float16, "device": torch.device("cuda", 1),
            "nothing": None, "shape": torch.Size([2, 3])}
    save("checkpoint.pt", ckpt)
    save("checkpoint_legacy.pt", ckpt, _use_new_zipfile_serialization=False)
    # Protocol 4 pickles (FRAME, MEMOIZE, SHORT_BINUNICODE, STACK_GLOBAL).
    save("proto4.pt", ckpt, pickle_protocol=4)
    save("proto4_legacy.pt", views, pickle_protocol=4, _use_new_zipfile_serialization=False)
    # A root tensor and parameters (_rebuild_parameter, TUPLE3).
    save("root.pt", torch.arange(5, dtype=torch.int16))
    save("params.pt", {"w": torch.nn.Parameter(torch.ones(2, 2)),
                       "b": torch.nn.Parameter(torch.zeros(2), requires_grad=False)})

    # > 256 memo entries: LONG_BINPUT, and LONG_BINGET for a tied weight memoized past slot 255.
    many = collections.OrderedDict(("t%d" % i, torch.full((1,), float(i))) for i in range(300))
    many["tied"] = many["t290"]
    save("many.pt", many)

    # What must be refused.
    refuse("quantized.pt", {"q": torch.quantize_per_tensor(torch.ones(4), 0.1, 0, torch.qint8)},
           "UNSUPPORTED")
    refuse("sparse.pt", {"s": torch.eye(3).to_sparse()}, "UNSUPPORTED")
    # A pickled nn.Module (module.pt) now opens with placeholders: ../torch_legacy/ writes it.
    complex128()
    refuse("proto1.pt", {"a": torch.ones(2)}, "BAD_VERSION", pickle_protocol=1)
    with open(os.path.join(OUT, "plain_pickle.pt"), "wb") as f:
        pickle.dump({"a": 1}, f, protocol=2)
    with open(os.path.join(OUT, "plain_pickle.pt.json"), "w") as f:
        json.dump({"refuse": "UNKNOWN_FORMAT"}, f)


if __name__ == "__main__":
    sys.exit(main())
