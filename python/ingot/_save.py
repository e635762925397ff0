"""ingot.save() (the crash-safe C writer, every writable format) and ingot.convert() (the
library's conversion plans: cast, quantize, select, rename, metadata edits)."""

import numpy as np

from . import _ingot
from ._errors import UsageError
from ._file import _DTYPES, File

_META_TYPES = {"u8": 1, "u16": 2, "u32": 3, "u64": 4, "i8": 5, "i16": 6, "i32": 7, "i64": 8,
               "f32": 9, "f64": 10, "bool": 11, "string": 12, "bytes": 13}
_NP_META = {"u1": "u8", "u2": "u16", "u4": "u32", "u8": "u64", "i1": "i8", "i2": "i16",
            "i4": "i32", "i8": "i64", "f4": "f32", "f8": "f64", "b1": "bool"}
_NP_INGOT = {"f8": "F64", "f4": "F32", "f2": "F16", "i8": "I64", "i4": "I32", "i2": "I16",
             "i1": "I8", "u8": "U64", "u4": "U32", "u2": "U16", "u1": "U8", "b1": "BOOL",
             "c8": "C64"}
_I64_MAX = (1 << 63) - 1


class typed(tuple):
    """A metadata value with an explicit type: ``ingot.typed(8, "u32")``,
    ``ingot.typed([1, 2], "i16[]")``. Types as File.metadata_types spells them."""

    def __new__(cls, value, type):  # noqa: A002
        return super().__new__(cls, (value, type))


def _np_meta_type(dt):
    return _NP_META.get(dt.kind + str(dt.itemsize))


def _infer(value):
    """(type name, is_array) for a plain Python or NumPy value."""
    if isinstance(value, (bool, np.bool_)):
        return "bool", False
    if isinstance(value, np.generic):
        t = _np_meta_type(value.dtype)
        if t is None:
            raise TypeError(f"no metadata type for NumPy {value.dtype}")
        return t, False
    if isinstance(value, int):
        return ("u64" if value > _I64_MAX else "i64"), False
    if isinstance(value, float):
        return "f64", False
    if isinstance(value, str):
        return "string", False
    if isinstance(value, (bytes, bytearray)):
        return "bytes", False
    if isinstance(value, np.ndarray):
        t = _np_meta_type(value.dtype)
        if t is None or value.ndim != 1:
            raise TypeError(f"metadata arrays are 1-D numbers or bools, not {value.dtype}")
        return t, True
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (bool, np.bool_)) for v in value) and value:
            return "bool", True
        if all(isinstance(v, str) for v in value):
            return "string", True
        if all(isinstance(v, (bytes, bytearray)) for v in value) and value:
            return "bytes", True
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return ("u64" if any(v > _I64_MAX for v in value) else "i64"), True
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return "f64", True
    raise TypeError(f"no metadata type for {type(value).__name__}: use ingot.typed(value, type)")


def _meta_entry(key, value, keep):
    if isinstance(value, typed):
        value, tname = value
        is_array = tname.endswith("[]")
        tname = tname[:-2] if is_array else tname
    else:
        tname, is_array = _infer(value)
    if tname not in _META_TYPES:
        raise TypeError(f"unknown metadata type {tname!r}")
    t = _META_TYPES[tname]
    kb = key.encode("utf-8")
    if tname in ("string", "bytes"):
        enc = (lambda v: v.encode("utf-8")) if tname == "string" else bytes
        if is_array:
            return (kb, t, True, [enc(v) for v in value])
        return (kb, t, False, enc(value))
    if is_array:
        np_t = {v: k for k, v in _NP_META.items()}[tname]
        arr = np.ascontiguousarray(np.asarray(value, dtype=np.dtype(np_t[0] + np_t[1:])))
        if arr.ndim != 1:
            raise TypeError(f"metadata array {key!r} must be 1-D")
        keep.append(arr)
        return (kb, t, True, (arr.__array_interface__["data"][0], arr.size))
    return (kb, t, False, value.item() if isinstance(value, np.generic) else value)


def _tensor_entry(name, value, keep):
    """(name, dtype code, shape, address, param id) for one tensor; the array goes to keep."""
    dtname = shape = None
    if isinstance(value, tuple):
        if len(value) == 2:
            value, dtname = value
        elif len(value) == 3:
            value, dtname, shape = value
        else:
            raise TypeError(f"tensor {name!r}: give an array, (array, dtype) or "
                            "(array, dtype, shape)")
    arr = np.asarray(value)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    if dtname is None:
        dtname = _NP_INGOT.get(arr.dtype.kind + str(arr.dtype.itemsize))
        if dtname is None:
            raise TypeError(f"tensor {name!r}: NumPy dtype {arr.dtype} has no ingot dtype")
        shape = arr.shape
    else:
        if dtname not in _DTYPES:
            raise TypeError(f"tensor {name!r}: unknown dtype {dtname!r}")
        _, be, bb, quantized = _DTYPES[dtname]
        if shape is None:
            if quantized and arr.ndim >= 1:
                row = arr.shape[-1] * arr.dtype.itemsize
                if row % bb:
                    raise ValueError(f"tensor {name!r}: rows of {row} bytes are not whole "
                                     f"{dtname} blocks of {bb} bytes")
                shape = arr.shape[:-1] + (row // bb * be,)
            elif be == 1 and arr.dtype.itemsize == bb:
                shape = arr.shape
            else:
                raise ValueError(f"tensor {name!r}: give the shape of {dtname} data: "
                                 "(array, dtype, shape)")
    keep.append(arr)
    return (name.encode("utf-8"), _DTYPES[dtname][0], tuple(int(d) for d in shape),
            arr.__array_interface__["data"][0], None)


def save(tensors, path, metadata=None, format=None, align=None, *, options=None,
         fsync=True):
    """Writes tensors (a dict name -> ndarray, or (raw array, ingot dtype[, shape]) for dtypes
    NumPy lacks: BF16, F8, GGML blocks) and metadata (dict key -> value; see ingot.typed) to
    path, atomically: a temporary beside it, fsync, rename. format: "ingot", "safetensors",
    "gguf", "npz", ... (default: from the extension, else .ingot); align: data alignment;
    options: writer options {KEY: VALUE} (docs/COMPAT.md). The GIL is released while writing.
    Returns the writer's lossy notices (metadata the format cannot hold as typed)."""
    keep = []
    meta = [_meta_entry(k, v, keep) for k, v in (metadata or {}).items()]
    tens = [_tensor_entry(k, v, keep) for k, v in tensors.items()]
    if format is None:
        format = _ingot.format_for_path(path)
    opts = [(str(k), str(v)) for k, v in (options or {}).items()]
    return _ingot.save(path, format, int(align or 0), not fsync, meta, tens, opts)


_LOSSY_KINDS = {1: "skipped", 2: "metadata", 3: "dequantized", 4: "cast", 5: "quantized"}


def _dtype_code(name):
    if name is None:
        return 0
    if name not in _DTYPES:
        raise UsageError("MISUSE", f"unknown dtype {name!r}")
    return _DTYPES[name][0]


def convert(src, dst, *, format=None, align=None, dtype=None, quantize=None, include=None,
            exclude=None, rename=None, set=None, delete=None, dequantize=None, options=None,
            fsync=True):
    """Converts src (a path or an open ingot.File) to dst, streamed and atomic, as
    `ingot convert` does. dtype: "F16" (cast every float tensor) or {"F32": "BF16"};
    quantize: "Q4_K_M", ...; include/exclude: globs (first match decides); rename: a list of
    (regex, replacement); set: {KEY: value} or ["KEY:TYPE=VALUE"]; delete: keys; dequantize:
    "F32"/"F16"/"BF16" for tensors the target cannot hold; options: writer options.
    Returns {"format", "tensors", "dropped", ..., "lossy": [records]}."""
    f = src if isinstance(src, File) else File(src)
    steps = []
    rules = [(g, True) for g in (include or [])] + [(g, False) for g in (exclude or [])]
    if rules:
        steps.append(("select", rules))
    for rx, repl in (rename.items() if isinstance(rename, dict) else rename or []):
        steps.append(("rename", rx, repl))
    if isinstance(dtype, dict):
        for a, b in dtype.items():
            steps.append(("cast", _dtype_code(a), _dtype_code(b)))
    elif dtype is not None:
        steps.append(("cast", 0, _dtype_code(dtype)))
    if quantize:
        steps.append(("quantize", quantize))
    for k in delete or []:
        steps.append(("delete", k))
    if isinstance(set, dict):
        for k, v in set.items():
            if isinstance(v, typed):
                v, t = v
                if isinstance(v, (list, tuple)):
                    v = ",".join(str(x) for x in v)
                steps.append(("set", f"{k}:{t}={v}"))
            else:
                t, arr = _infer(v)
                if arr:
                    steps.append(("set", f"{k}:{t}[]=" + ",".join(str(x) for x in v)))
                elif t == "bytes":
                    steps.append(("set", f"{k}:bytes={bytes(v).hex()}"))
                elif t == "bool":
                    steps.append(("set", f"{k}:bool={'true' if v else 'false'}"))
                else:
                    steps.append(("set", f"{k}:{t}={v}"))
    else:
        for s in set or []:
            steps.append(("set", s))
    opts = [f"{k}={v}".encode("utf-8") for k, v in (options or {}).items()]
    try:
        summary, lossy = _ingot.convert(f._handle(), dst, format, int(align or 0),
                                        _dtype_code(dequantize), not fsync, opts, steps)
    finally:
        if f is not src:
            f.close()
    keys = ("format", "alignment", "tensors", "dropped", "metadata_lossy", "dequantized", "cast",
            "quantized", "skipped")
    out = dict(zip(keys, summary))
    out["lossy"] = [{"kind": _LOSSY_KINDS.get(k, str(k)), "message": m, "name": n,
                     "from": _dtype_name(a), "to": _dtype_name(b), "count": c}
                    for k, m, n, a, b, c in lossy]
    return out


def _dtype_name(code):
    for k, v in _DTYPES.items():
        if v[0] == code:
            return k
    return None
