#!/usr/bin/python3
"""Writes bool_views.pt: BOOL views over one storage holding a byte that is not 0 or 1, for the
BOOL value check of tests/test_verify.c (verify, read and copy must refuse exactly the views
that reach the bad byte).

Run with Debian's python3-torch 1.13.1 (/usr/bin/python3), from this directory:
    /usr/bin/python3 gen_bool_views.py
The storage is the six bytes 01 00 62 01 00 01 (0x62 = 'b' at storage index 2), shape (2, 3):
  odd        storage[1::2]  -> indices 1, 3, 5          strided, never reaches index 2: valid
  head       storage[0:2]   -> indices 0, 1             contiguous, valid
  transposed (2, 3).t()     -> element [2][0] is index 2 strided, BAD (C-order element 4)
  grid       (2, 3)         -> element [0][2] is index 2 contiguous, BAD (element 2)
Sidecar bool_views.pt.json: for each tensor, the storage index and C-order element of its first
bad byte (null if none), computed here from the strides.
"""
import collections
import json
import os

import torch

OUT = os.path.dirname(os.path.abspath(__file__))


def first_bad(t, raw):
    """(C-order element, storage index) of t's first element whose byte is not 0 or 1."""
    for k in range(t.numel()):
        idx, rem = [], k
        for d in reversed(t.shape):
            idx.append(rem % d)
            rem //= d
        idx.reverse()
        pos = t.storage_offset() + sum(i * s for i, s in zip(idx, t.stride()))
        if raw[pos] > 1:
            return k, pos
    return None


def main():
    raw = [1, 0, 0x62, 1, 0, 1]
    grid = torch.tensor(raw, dtype=torch.uint8).view(torch.bool).reshape(2, 3)
    flat = grid.view(-1)
    views = collections.OrderedDict(odd=flat[1::2], head=flat[0:2], transposed=grid.t(), grid=grid)
    torch.save(views, os.path.join(OUT, "bool_views.pt"))
    side = {"tensors": []}
    for name, t in views.items():
        bad = first_bad(t, raw)
        side["tensors"].append({"name": name, "shape": list(t.shape), "stride": list(t.stride()),
                                "storage_offset": t.storage_offset(),
                                "bad_element": bad[0] if bad else None,
                                "bad_storage_index": bad[1] if bad else None})
    with open(os.path.join(OUT, "bool_views.pt.json"), "w") as f:
        json.dump(side, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
