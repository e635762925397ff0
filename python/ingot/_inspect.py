"""ingot.hash(), ingot.diff(), ingot.summary(): format-independent looks at a model's content
(inspect.h digests: the same tensor hashes the same in every format)."""

from ._file import File


def _open(x):
    return (x, False) if isinstance(x, File) else (File(x), True)


def hash(path):  # noqa: A001
    """{"model": hex digest, "tensors": {name: hex digest}} (SHA-256 content digests)."""
    f, own = _open(path)
    try:
        h = f._handle()
        return {"model": h.digest(-1),
                "tensors": {n: h.digest(i) for i, n in enumerate(h.names())}}
    finally:
        if own:
            f.close()


def diff(a, b):
    """Compares two files of any formats by tensor name, dtype, shape and content digest.
    Returns {"same": bool, "only_a": [...], "only_b": [...], "differ": [(name, why)]}."""
    fa, own_a = _open(a)
    fb, own_b = _open(b)
    try:
        na, nb = fa.keys(), fb.keys()
        sb = set(nb)
        sa = set(na)
        differ = []
        for n in na:
            if n not in sb:
                continue
            ia, ib = fa.info(n), fb.info(n)
            if ia.dtype != ib.dtype:
                differ.append((n, f"dtype {ia.dtype} != {ib.dtype}"))
            elif tuple(ia.shape) != tuple(ib.shape):
                differ.append((n, f"shape {list(ia.shape)} != {list(ib.shape)}"))
            elif fa.digest(n) != fb.digest(n):
                differ.append((n, "values differ"))
        out = {"only_a": [n for n in na if n not in sb], "only_b": [n for n in nb if n not in sa],
               "differ": differ}
        out["same"] = not (out["only_a"] or out["only_b"] or differ)
        return out
    finally:
        if own_a:
            fa.close()
        if own_b:
            fb.close()


def summary(path):
    """Parameters and bytes per dtype, totals, format and metadata count."""
    f, own = _open(path)
    try:
        by_dtype = {}
        params = nbytes = 0
        for n in f.keys():
            i = f.info(n)
            d = by_dtype.setdefault(i.dtype, {"tensors": 0, "params": 0, "bytes": 0})
            d["tensors"] += 1
            d["params"] += i.nelem
            d["bytes"] += i.nbytes
            params += i.nelem
            nbytes += i.nbytes
        return {"format": f.format, "version": f.version, "file_size": f.size,
                "tensors": len(f), "params": params, "bytes": nbytes, "by_dtype": by_dtype,
                "metadata": len(f.metadata)}
    finally:
        if own:
            f.close()
