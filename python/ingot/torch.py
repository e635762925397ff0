"""ingot.torch: drop-ins for safetensors.torch's load_file/save_file over every format ingot
reads and writes. Importing it imports torch; the rest of ingot never does.

load_file() is zero-copy: each tensor is torch.from_numpy() over a NumPy view of the file mapped
copy-on-write (io="private"; bf16 and the float8 types re-typed with Tensor.view, no copy), and
keeps the file mapped while it lives. torch has no read-only tensors, so the mapping is writable:
an in-place write (t.add_(...), t[0] = 1) copies the pages it touches into this process, and the
file and every other reader keep the original bytes. copy=True gives ordinary tensors up
front."""

import warnings

import numpy as np
import torch

from ._errors import UnsupportedError
from ._file import File
from ._save import save as _save

# ingot dtype -> (NumPy view dtype torch.from_numpy accepts, torch dtype to .view() as)
_TORCH = {
    "F64": (np.float64, torch.float64), "F32": (np.float32, torch.float32),
    "F16": (np.float16, torch.float16), "BF16": (np.int16, torch.bfloat16),
    "I64": (np.int64, torch.int64), "I32": (np.int32, torch.int32),
    "I16": (np.int16, torch.int16), "I8": (np.int8, torch.int8), "U8": (np.uint8, torch.uint8),
    "BOOL": (np.bool_, torch.bool), "C64": (np.complex64, torch.complex64),
}
for _name, _attr in (("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2"),
                     ("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64")):
    if hasattr(torch, _attr):
        _TORCH[_name] = ({"U16": np.int16, "U32": np.int32, "U64": np.int64}.get(_name, np.int8),
                         getattr(torch, _attr))
_FROM_TORCH = {t: n for n, (_np, t) in _TORCH.items()}
_NUMPY_NATIVE = {"F64", "F32", "F16", "I64", "I32", "I16", "I8", "U8", "BOOL", "C64"}


def _to_torch(arr, dtname, copy):
    if dtname not in _TORCH:
        raise UnsupportedError("UNSUPPORTED", f"torch {torch.__version__} has no dtype for "
                               f"{dtname}", status=19)
    npt, tt = _TORCH[dtname]
    if arr.dtype.byteorder == ">" or any(s < 0 for s in arr.strides):
        arr = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("=")))  # the one copy
    arr = arr.view(npt)
    if copy:
        t = torch.from_numpy(np.array(arr))
    else:
        with warnings.catch_warnings():       # "non-writable": the few copies (_freeze)
            warnings.simplefilter("ignore", UserWarning)
            t = torch.from_numpy(arr)
    return t.view(tt) if t.dtype != tt else t


def load_file(filename, device="cpu", *, copy=False):
    """{name: torch.Tensor} of every tensor in filename (any format ingot reads), zero-copy on
    the CPU unless copy=True; device other than "cpu" moves them (a copy)."""
    out = {}
    with File(filename, io="mmap" if copy else "private") as f:
        for name in f.keys():
            t = _to_torch(f[name], f.info(name).dtype, copy)
            out[name] = t if str(device) == "cpu" else t.to(device)
    return out


def load(filename, device="cpu", *, copy=False):
    """Alias of load_file."""
    return load_file(filename, device, copy=copy)


def save_file(tensors, filename, metadata=None, *, format=None):
    """Writes {name: torch.Tensor} to filename atomically, in the format its extension names
    (safetensors when it names none); metadata: {str: str} as safetensors takes it."""
    arrays = {}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name!r}: expected a torch.Tensor, got {type(t).__name__}")
        t = t.detach().to("cpu").contiguous()
        if t.dtype not in _FROM_TORCH:
            raise UnsupportedError("UNSUPPORTED", f"no ingot dtype for {t.dtype}", tensor=name,
                                   status=19)
        dtname = _FROM_TORCH[t.dtype]
        if dtname in _NUMPY_NATIVE:
            arrays[name] = t.numpy()
        else:  # bits NumPy has no type for: stored raw under their ingot dtype
            raw = {"BF16": torch.int16, "U16": torch.int16, "U32": torch.int32,
                   "U64": torch.int64}.get(dtname, torch.int8)
            arrays[name] = (t.view(raw).numpy(), dtname, tuple(t.shape))
    if format is None:
        from . import _ingot
        format = _ingot.format_for_path(filename) or "safetensors"
    return _save(arrays, filename, metadata=metadata, format=format)
