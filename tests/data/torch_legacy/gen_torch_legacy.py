#!/usr/bin/python3
"""Writes the legacy-checkpoint test vectors of tests/test_torch.c (issue 18 section 5) and their
sidecars: torch.save files that pickle objects outside ingot's allow-list (argparse.Namespace,
torchtext-style Vocab, an OpenNMT-style Optim holding a torch.optim.SGD, collections.Counter /
defaultdict, an OrderedDict subclass, a numpy scalar, whole nn.Modules) and storages tagged with
GPU locations.

Run with Debian's python3-torch 1.13.1 (/usr/bin/python3), from this directory:
    /usr/bin/python3 gen_torch_legacy.py
CI has no torch: the outputs are committed. Legacy files embed memory addresses as storage keys,
so regenerating changes their bytes (not their content).

Sidecar <file>.json, the schema of tests/data/torch plus "placeholders": computed from
torch.load(path, map_location='cpu') (the full unpickler, with the classes importable here), never
from ingot. Objects outside the allow-list are described through Python's own pickling protocol
(obj.__reduce_ex__(2), what the pickler wrote): name = module.qualname of the class (NEWOBJ) or of
the callable (REDUCE); their contents are flattened under their path: the dict/list items if any,
else the state, else the constructor arguments (a 1-tuple's item in place). "placeholders" lists
[path, class] in the order of first reach, each object once.
"""
import argparse
import collections
import copyreg
import hashlib
import io
import json
import os
import pickle
import struct
import sys
import tarfile
import types

import numpy
import torch
import torch.serialization

OUT = os.path.dirname(os.path.abspath(__file__))
DT = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
      torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
      torch.uint8: "U8", torch.bool: "BOOL", torch.complex64: "C64",
      torch.complex128: "C128"}
PLAIN = (dict, collections.OrderedDict)
SEQ = (list, tuple, set, frozenset, torch.Size)


def cbytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


class Flat:
    def __init__(self):
        self.tensors, self.meta, self.places, self.seen, self.walking = [], {}, [], set(), set()

    def place(self, obj, path, name):
        if id(obj) not in self.seen:
            self.seen.add(id(obj))
            self.places.append([path or "(root)", name])

    def walk(self, obj, path, depth=0):
        join = lambda k: (path + "/" if path else "") + str(k)
        if isinstance(obj, torch.storage.TypedStorage):
            obj = torch.empty(0, dtype=obj.dtype).set_(obj)
        if isinstance(obj, torch.Tensor):
            self.tensors.append({"name": path or "tensor", "dtype": DT[obj.dtype],
                                 "shape": list(obj.shape), "stride": list(obj.stride()),
                                 "contiguous": obj.is_contiguous(),
                                 "sha256": hashlib.sha256(cbytes(obj)).hexdigest()})
        elif type(obj) in PLAIN:
            for k, v in obj.items():
                self.walk(v, join(k), depth + 1)
        elif type(obj) in SEQ:
            kinds = {type(x) for x in obj}
            if depth > 0 and obj and len(kinds) == 1 and list(kinds)[0] in (int, float, bool, str):
                t = {int: "i64", float: "f64", bool: "bool", str: "string"}[type(list(obj)[0])]
                self.meta[path] = [t + "[]", list(obj)]
            else:
                for i, v in enumerate(obj):
                    self.walk(v, join(i), depth + 1)
        elif type(obj) is bool:
            self.meta[path or "value"] = ["bool", obj]
        elif type(obj) is int:
            self.meta[path or "value"] = (["i64", obj] if -2**63 <= obj < 2**63
                                          else ["string", str(obj)])
        elif type(obj) is float:
            self.meta[path or "value"] = ["f64", obj]
        elif type(obj) is str:
            self.meta[path or "value"] = ["string", obj]
        elif type(obj) is bytes:
            self.meta[path or "value"] = ["bytes", obj.hex()]
        elif isinstance(obj, (torch.dtype, torch.device)):
            self.meta[path or "value"] = ["string", str(obj)]
        elif obj is None:
            pass
        elif isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            self.place(obj, path, obj.__module__ + "." + obj.__qualname__)
        else:
            self.placeholder(obj, path, depth)

    def placeholder(self, obj, path, depth):
        rv = obj.__reduce_ex__(2) + (None,) * 3
        func, args, state, listitems, dictitems = rv[:5]
        if func is copyreg.__newobj__:
            cls, args = args[0], args[1:]
        else:
            cls = func
        self.place(obj, path, cls.__module__ + "." + cls.__qualname__)
        if id(obj) in self.walking:
            return
        self.walking.add(id(obj))
        items = (list(listitems) if listitems is not None else []), \
                (list(dictitems) if dictitems is not None else [])
        if items[0] or items[1]:
            for i, v in enumerate(items[0]):
                self.walk(v, (path + "/" if path else "") + str(i), depth + 1)
            for k, v in items[1]:
                self.walk(v, (path + "/" if path else "") + str(k), depth + 1)
        else:
            content = state if state is not None else (
                args[0] if len(args) == 1 else args if len(args) > 1 else None)
            if content is not None:
                root = not path and not isinstance(content, PLAIN + SEQ) and \
                    isinstance(content, (torch.Tensor, int, float, str, bytes))
                self.walk(content, path, 0 if root else depth + 1)
        self.walking.discard(id(obj))


def save(name, obj, location=None, **kw):
    path = os.path.join(OUT, name)
    saved = torch.serialization.location_tag
    if location:
        torch.serialization.location_tag = location
    try:
        torch.save(obj, path, **kw)
    finally:
        torch.serialization.location_tag = saved
    fl = Flat()
    fl.walk(torch.load(path, map_location="cpu"), "")
    with open(path + ".json", "w") as f:
        json.dump({"tensors": fl.tensors, "metadata": fl.meta, "placeholders": fl.places}, f,
                  indent=1)


def write_tar(path, obj):
    """torch.save as torch <= 0.1.9 wrote it: a pax tar of sys_info, pickle, tensors, storages,
    laid out as torch.serialization's legacy tar loader (1.13) reads it. Tensor and storage keys
    are ints (the writer's id()s); the object pickle names them by their decimal str."""
    tensors, storages = {}, {}

    def storage_key(st):
        key = st.data_ptr()
        storages.setdefault(key, st)
        return key

    class Pickler(pickle.Pickler):
        def persistent_id(self, o):
            if isinstance(o, torch.Tensor):
                tensors.setdefault(id(o), o)
                storage_key(o.storage())
                return str(id(o))
            if isinstance(o, torch.storage.TypedStorage):
                return str(storage_key(o))
            return None

    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(obj)
    members = [("sys_info", pickle.dumps({"protocol_version": 1000, "little_endian": True,
                                          "type_sizes": {"short": 2, "int": 4, "long": 8}},
                                         protocol=2)),
               ("pickle", buf.getvalue())]
    t = pickle.dumps(len(tensors), protocol=2)
    for key, x in tensors.items():
        t += pickle.dumps((key, x.storage().data_ptr(), getattr(torch, x.type()[6:])), protocol=2)
        t += struct.pack("<i", x.dim()) + b"\0" * 4
        t += struct.pack("<%dq" % x.dim(), *x.shape) + struct.pack("<%dq" % x.dim(), *x.stride())
        t += struct.pack("<q", x.storage_offset())
    members.append(("tensors", t))
    d = pickle.dumps(len(storages), protocol=2)
    for key, st in storages.items():
        whole = torch.empty(0, dtype=st.dtype).set_(st)
        d += pickle.dumps((key, "cpu", type(st) if type(st) is not torch.storage.TypedStorage
                           else getattr(torch, st.pickle_storage_type())), protocol=2)
        d += struct.pack("<q", whole.numel()) + cbytes(whole)
    d += pickle.dumps([], protocol=2)
    members.append(("storages", d))
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def save_tar(name, obj):
    path = os.path.join(OUT, name)
    write_tar(path, obj)
    fl = Flat()
    fl.walk(torch.load(path), "")
    with open(path + ".json", "w") as f:
        json.dump({"tensors": fl.tensors, "metadata": fl.meta, "placeholders": fl.places}, f,
                  indent=1)


# Modules the pickles name, made importable here so torch.load (the oracle) can rebuild them.
def module(name, **attrs):
    m = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(m, k, v)
        if isinstance(v, type) or isinstance(v, types.FunctionType):
            v.__module__ = name
    sys.modules[name] = m
    return m


def _default_unk_index():
    return 0


class Vocab:
    """The attributes of torchtext 0.2's Vocab (2017)."""

    def __init__(self, counter, specials):
        self.freqs = counter
        self.itos = list(specials) + sorted(counter)
        self.stoi = collections.defaultdict(_default_unk_index)
        self.stoi.update({tok: i for i, tok in enumerate(self.itos)})
        self.vectors = None


class Optim:
    """OpenNMT-py 2017's onmt.Optim: hyperparameters plus the torch optimizer."""

    def __init__(self, params):
        self.method, self.lr, self.max_grad_norm = "sgd", 1.0, 5
        self.lr_decay, self.start_decay_at, self.last_ppl = 0.5, 8, None
        self.optimizer = torch.optim.SGD(params, lr=self.lr)


class StateDict(collections.OrderedDict):
    pass


module("torchtext")
module("torchtext.vocab", Vocab=Vocab, _default_unk_index=_default_unk_index)
module("onmt")
module("onmt.Optim", Optim=Optim)
module("mylib", StateDict=StateDict)


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 2)


def main():
    torch.manual_seed(0)
    # An OpenNMT-py 2017-style checkpoint (legacy format, as torch 0.2/0.3 wrote it).
    enc = torch.nn.LSTM(4, 3)
    gen = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.LogSoftmax(dim=-1))
    src = Vocab(collections.Counter({"the": 4, "cat": 2}), ["<unk>", "<blank>"])
    tgt = Vocab(collections.Counter({"le": 3, "chat": 1}), ["<unk>", "<blank>", "<s>", "</s>"])
    opt = argparse.Namespace(layers=2, rnn_size=3, word_vec_size=4, dropout=0.3, brnn=True,
                             model_type="text", gpuid=[0, 1], data="data/demo", seed=-1)
    ckpt = {"model": enc.state_dict(), "generator": gen.state_dict(),
            "vocab": [("src", src), ("tgt", tgt)], "opt": opt, "epoch": 13,
            "optim": Optim(list(enc.parameters())), "best_ppl": numpy.float64(12.5)}
    save("onmt_legacy.pt", ckpt, _use_new_zipfile_serialization=False)
    # An OrderedDict subclass as the root state dict, storages tagged with GPU locations (the
    # bytes are host bytes whatever the tag); the same in the zip format.
    sd = StateDict(w=torch.arange(6, dtype=torch.float32).reshape(2, 3),
                   b=torch.tensor([1.5, -2.0], dtype=torch.float64),
                   steps=torch.tensor([7], dtype=torch.int64))
    tags = iter(["cuda:0", "cuda:1", "mps"] * 10)
    locs = {}

    def location(storage):
        key = storage.data_ptr()
        if key not in locs:
            locs[key] = next(tags)
        return locs[key]

    save("gpu_legacy.pt", sd, location=location, _use_new_zipfile_serialization=False)
    save("gpu.pt", sd, location=location)
    # Whole modules: legacy (the class travels as a ('module', class, file, source) persistent
    # id) and zip.
    save("module_legacy.pt", Tiny(), _use_new_zipfile_serialization=False)
    save("module.pt", Tiny())
    # torch <= 0.1.9 tar checkpoints (torch 1.13 still reads them: the oracle).
    w = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    sd = collections.OrderedDict([("fc.weight", w), ("fc.bias", torch.tensor([0.5, -1.0]))])
    save_tar("tar_legacy.pt", {"state_dict": sd, "tied": w, "view": w.t(), "row": w[1],
                               "half": torch.arange(4, dtype=torch.float16),
                               "steps": torch.tensor([3, 4], dtype=torch.int64),
                               "mask": torch.tensor([1, 0, 1], dtype=torch.uint8),
                               "storage": torch.tensor([7, 8, 9], dtype=torch.int32).storage(),
                               "epoch": 3, "opt": argparse.Namespace(lr=0.1, model="mlp")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
