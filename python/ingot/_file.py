"""ingot.open() and the File it returns: tensors as read-only NumPy views of the mapping.

A view is an ndarray whose ``.base`` is a small owner object exposing ``__array_interface__``
(address, read-only flag, typestr, shape, strides) and holding a reference to the C handle, so
the mapping stays alive as long as any view does, after ``close()`` and after the File itself
is garbage collected. Where NumPy cannot view the stored bytes (data not mapped: a deflated
.npz member, pread mode) the tensor is read once into a new read-only array.
"""

import threading

import numpy as np

from . import _ingot
from ._errors import Error, MissingFileError, NotFoundError, UnsupportedError, UsageError

# ---- dtypes -------------------------------------------------------------------------------

_DTYPES = {name: (value, block_elems, block_bytes, quantized)
           for name, value, block_elems, block_bytes, quantized in _ingot.dtypes()}
_DTYPE_NAME = {v[0]: k for k, v in _DTYPES.items()}

# ingot dtype -> NumPy element type (without byte order). BF16 and the F8 types have no NumPy
# dtype: they come back as their raw unsigned integers (get_tensor(name, "float32") decodes).
_NP_CHAR = {
    "F64": "f8", "F32": "f4", "F16": "f2", "I64": "i8", "I32": "i4", "I16": "i2", "I8": "i1",
    "U64": "u8", "U32": "u4", "U16": "u2", "U8": "u1", "BOOL": "b1", "C64": "c8",
    "BF16": "u2", "F8_E4M3": "u1", "F8_E5M2": "u1", "F8_E8M0": "u1", "F8_E4M3FNUZ": "u1",
    "F8_E5M2FNUZ": "u1",
}
# dtypes whose NumPy view holds the values themselves (not raw bits)
_NATIVE = {"F64", "F32", "F16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL",
           "C64"}

_F_HAS_PARAM_ID = 1 << 0
_F_BIG_ENDIAN = 1 << 1
_F_FORTRAN = 1 << 2
_F_STRIDED = 1 << 3
_F_NOT_MAPPED = 1 << 4
_F_UNALIGNED = 1 << 5
_F_HAS_CHECKSUM = 1 << 6
_FLAG_NAMES = [(_F_HAS_PARAM_ID, "param_id"), (_F_BIG_ENDIAN, "big_endian"),
               (_F_FORTRAN, "fortran"), (_F_STRIDED, "strided"), (_F_NOT_MAPPED, "not_mapped"),
               (_F_UNALIGNED, "unaligned"), (_F_HAS_CHECKSUM, "checksum")]

_VERIFY = {"header": 0, "none": 1, "all": 2}
_IO = {"mmap": 0, "pread": 1, "private": 2}


def dtype_names():
    """Every dtype name of the library ("F32", "BF16", "Q4_K", ...), in table order."""
    return list(_DTYPES)


class TensorInfo:
    """What the file says of one tensor (no data is read)."""

    __slots__ = ("name", "dtype", "shape", "strides", "nelem", "nbytes", "offset", "param_id",
                 "flags", "index")

    def __init__(self, raw):
        (self.name, dt, self.shape, self.strides, self.nelem, self.nbytes, self.offset, _addr,
         pid, flags, self.index) = raw
        self.dtype = _DTYPE_NAME.get(dt, str(dt))
        self.param_id = pid if flags & _F_HAS_PARAM_ID else None
        self.flags = tuple(n for bit, n in _FLAG_NAMES if flags & bit)

    def __repr__(self):
        return (f"TensorInfo(name={self.name!r}, dtype={self.dtype!r}, shape={self.shape}, "
                f"nbytes={self.nbytes}, offset={self.offset})")

    def _asdict(self):
        return {k: getattr(self, k) for k in self.__slots__}


class _Owner:
    """Keeps the mapping alive for an ndarray viewing it (the array's .base)."""

    __slots__ = ("__array_interface__", "handle")

    def __init__(self, handle, iface):
        self.handle = handle
        self.__array_interface__ = iface


def _warm_up():
    """NumPy's first array built from an __array_interface__ in a process costs about 20 us of
    one-time setup; pay it at import rather than at the first tensor access."""
    scratch = np.zeros(1, dtype=np.uint8)
    np.asarray(_Owner(None, {"version": 3, "typestr": "|u1", "shape": (0,),
                             "data": (scratch.__array_interface__["data"][0], True)}))


_warm_up()


def _typestr(dtname, flags):
    ch = _NP_CHAR[dtname]
    if ch[1] == "1" and ch[0] != "c":
        return "|" + ch
    return (">" if flags & _F_BIG_ENDIAN else "<") + ch


def _raw_shape(dtname, shape, nbytes):
    """Shape of the raw uint8 view of a block-quantized or packed sub-byte tensor."""
    _, be, bb, quantized = _DTYPES[dtname]
    if quantized and len(shape) > 0:
        return tuple(shape[:-1]) + (shape[-1] // be * bb,)
    return (nbytes,)


def _freeze(arr):
    if isinstance(arr, np.ndarray):
        arr.flags.writeable = False
    return arr


def _numpy_refuses(name, shape, exc):
    """A valid tensor NumPy cannot represent (more than 32 dimensions in NumPy 1.x, or an empty
    shape whose dimensions overflow its size computation)."""
    return UnsupportedError("UNSUPPORTED", f"NumPy cannot represent shape {list(shape)}: {exc}",
                            tensor=name, status=19)


class File:
    """An open model file of any format ingot reads. Use as a context manager or call close().

    ``f[name]`` / ``f.get_tensor(name)`` give read-only NumPy views of the mapping (no copy);
    ``keys()``, ``metadata``, ``info(name)``, ``format``, ``verify()``, ``get_slice(name)``."""

    def __init__(self, path, verify="header", io="mmap", format=None, threads=0):
        if verify not in _VERIFY:
            raise UsageError("MISUSE", f"verify must be one of {sorted(_VERIFY)}, not {verify!r}")
        if io not in _IO:
            raise UsageError("MISUSE", f"io must be 'mmap', 'pread' or 'private', not {io!r}")
        try:
            self._h = _ingot.open(path, _VERIFY[verify], _IO[io], format, int(threads))
        except NotFoundError as e:  # the file (or a shard it names) does not exist
            raise MissingFileError(code=e.code, message=e.message, tensor=e.tensor,
                                   offset=e.offset, status=e.status) from None
        self.path = path
        self._writable = io == "private"  # copy-on-write mapping: views may be written
        (self.format, self.version, self.size, self.alignment, self._count,
         _nmeta) = self._h.format()
        self._meta = None
        self._index = None
        self._lock = threading.Lock()

    # -- lifetime --
    def close(self):
        """Drops this object's reference to the file; views already handed out stay valid (the
        mapping goes when the last of them does)."""
        self._h = None

    @property
    def closed(self):
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _handle(self):
        h = self._h
        if h is None:
            raise UsageError("MISUSE", "the file is closed")
        return h

    def __repr__(self):
        state = "closed" if self._h is None else f"{self._count} tensors"
        return f"<ingot.File {self.path!r} {self.format} {state}>"

    # -- tensors --
    def keys(self):
        """Tensor names in file order."""
        return self._handle().names()

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return self._count

    def __contains__(self, name):
        return isinstance(name, str) and self._handle().find(name) >= 0

    def _find(self, name):
        if not isinstance(name, str):
            raise TypeError(f"tensor names are str, not {type(name).__name__}")
        i = self._handle().find(name)
        if i < 0:
            raise NotFoundError("NOT_FOUND", "no such tensor", tensor=name, status=25)
        return i

    def info(self, name):
        """TensorInfo of one tensor: dtype name, shape, strides (in elements, strided views
        only), nbytes, nelem, offset, param_id, flags, index."""
        return TensorInfo(self._handle().info(self._find(name)))

    def __getitem__(self, name):
        return self.get_tensor(name)

    def get_tensor(self, name, dtype=None, *, dequantize=False):
        """The tensor as a read-only ndarray viewing the mapping.

        dtype: None gives the stored elements (BF16 as uint16, F8 as uint8 bits, GGML blocks as
        uint8 rows of blocks, packed F4/F6 as their bytes); a NumPy dtype or name ("float32")
        gives a converted copy (BF16, F8 and GGML blocks decoded bit-exactly first).
        dequantize=True: GGML blocks (and any decodable dtype) decoded to float32."""
        h = self._handle()
        raw = h.info(self._find(name))
        if dequantize or dtype is not None:
            return self._converted(h, raw, dtype)
        return self._view(h, raw)

    def _view(self, h, raw):
        name, dt, shape, strides, nelem, nbytes, _off, addr, _pid, flags, index = raw
        dtname = _DTYPE_NAME.get(dt)
        if dtname is None:
            raise Error("BAD_TYPE", f"unknown dtype {dt}", tensor=name, status=8)
        if dtname in _NP_CHAR:
            typestr = _typestr(dtname, flags)
        else:  # GGML blocks, F4/F6: raw bytes
            typestr = "|u1"
            shape = _raw_shape(dtname, shape, nbytes)
            strides = None
            flags &= ~(_F_FORTRAN | _F_STRIDED | _F_BIG_ENDIAN)
        itemsize = int(typestr[2:]) if typestr[1] != "b" else 1
        if typestr[1] == "c":
            itemsize = 8
        if addr == 0 or nbytes == 0 or flags & _F_NOT_MAPPED:
            return self._copy(h, raw, typestr, shape)
        iface = {"version": 3, "data": (addr, not self._writable), "typestr": typestr,
                 "shape": shape}
        if flags & _F_STRIDED:
            iface["strides"] = tuple(s * itemsize for s in strides)
        elif flags & _F_FORTRAN and len(shape) > 1:
            st, acc = [], itemsize
            for d in shape:
                st.append(acc)
                acc *= d
            iface["strides"] = tuple(st)
        try:
            return np.asarray(_Owner(h, iface))
        except ValueError as e:
            raise _numpy_refuses(name, shape, e) from None

    def _copy(self, h, raw, typestr, shape):
        """The one documented copy: tensors NumPy cannot view (not mapped, or empty)."""
        name, dt, _shape, strides, nelem, nbytes, _off, addr, _pid, flags, index = raw
        try:
            if nbytes == 0:
                return _freeze(np.empty(shape, dtype=np.dtype(typestr)))
            dense = np.empty(shape, dtype=np.dtype(typestr).newbyteorder("<"))
        except ValueError as e:
            raise _numpy_refuses(name, shape, e) from None
        if flags & (_F_STRIDED | _F_FORTRAN | _F_BIG_ENDIAN):
            h.copy(index, dense.__array_interface__["data"][0], dense.nbytes)
        else:
            h.read(index, 0, dense.__array_interface__["data"][0], dense.nbytes)
        return _freeze(dense)

    def _decode_f32(self, h, raw):
        name, dt, shape, strides, nelem, nbytes, _off, addr, _pid, flags, index = raw
        out = np.empty(shape, dtype=np.float32)
        if nelem == 0:
            return out
        dst = out.__array_interface__["data"][0]
        if flags & (_F_STRIDED | _F_FORTRAN):
            dense = np.empty(nbytes if not flags & _F_STRIDED else
                             nelem * _DTYPES[_DTYPE_NAME[dt]][2], dtype=np.uint8)
            h.copy(index, dense.__array_interface__["data"][0], dense.nbytes)
            _ingot.dequantize_buffer(dt, dense.__array_interface__["data"][0], dense.nbytes,
                                     dst, nelem)
        else:
            h.dequantize(index, 0, nelem, dst)
        return out

    def _converted(self, h, raw, dtype):
        dtname = _DTYPE_NAME.get(raw[1])
        target = np.dtype(np.float32 if dtype is None else dtype)
        if dtname in _NATIVE:
            out = self._view(h, raw).astype(target.newbyteorder("="))
        else:
            out = self._decode_f32(h, raw)
            if target != np.float32:
                out = out.astype(target)
        return _freeze(out)

    def get_slice(self, name):
        """A lazy slice of one tensor: ``f.get_slice(name)[0:4, :]`` touches (or, where the data
        is not mapped, reads) only the rows the index selects. get_shape(), get_dtype()."""
        return Slice(self, self._find(name))

    # -- metadata --
    def _load_meta(self):
        with self._lock:
            if self._meta is None:
                entries = self._handle().meta()
                self._meta = ({k: v for k, _t, _a, v in entries},
                              {k: (t + "[]" if a else t) for k, t, a, _v in entries})
        return self._meta

    @property
    def metadata(self):
        """Metadata as a dict with Python values (int, float, bool, str, bytes, lists of them),
        in file order. Built on first access."""
        return self._load_meta()[0]

    @property
    def metadata_types(self):
        """The stored type of each metadata key: "u32", "string", "f32[]", ..."""
        return self._load_meta()[1]

    @property
    def notices(self):
        """Parts of the file skipped at open: [(name, reason, offset or None)]."""
        return [(n, r, None if o == (1 << 64) - 1 else o) for n, r, o in self._handle().notices()]

    # -- checks --
    def verify(self, threads=1):
        """Runs every check the format allows (checksums, padding, BOOL values, readability);
        the GIL is released meanwhile. Raises ingot.ChecksumError (naming the tensor) and the
        like; returns a dict saying what was checked."""
        checks, with_ck, without, nck, nbytes = self._handle().verify(int(threads))
        return {"checked": checks, "tensors_with_checksum": with_ck,
                "tensors_without_checksum": without, "checksums": nck, "data_bytes": nbytes}

    def digest(self, name=None):
        """Content digest (hex SHA-256, format-independent) of one tensor, or of the model."""
        h = self._handle()
        return h.digest(-1 if name is None else self._find(name))

    def stats(self, name):
        """count, nan, inf, min, max, mean, std of one tensor's values (decoded)."""
        c, nan, inf, mn, mx, mean, std = self._handle().stats(self._find(name))
        return {"count": c, "nan": nan, "inf": inf, "min": mn, "max": mx, "mean": mean,
                "std": std}


class Slice:
    """A tensor not yet read; index it like an ndarray."""

    def __init__(self, f, index):
        self._f = f
        self._h = f._handle()
        self._raw = self._h.info(index)

    def get_shape(self):
        return list(self._raw[2])

    def get_dtype(self):
        return _DTYPE_NAME.get(self._raw[1])

    @property
    def shape(self):
        return tuple(self._raw[2])

    def __getitem__(self, key):
        raw = self._raw
        name, dt, shape, strides, nelem, nbytes, _off, addr, _pid, flags, index = raw
        dtname = _DTYPE_NAME.get(dt)
        if addr != 0 and not flags & _F_NOT_MAPPED:
            return self._f._view(self._h, raw)[key]
        key = key if isinstance(key, tuple) else (key,)
        plain = dtname in _NP_CHAR and not flags & (_F_FORTRAN | _F_STRIDED)
        if not plain or len(shape) == 0 or not key or nbytes == 0:
            return self._f._view(self._h, raw)[key]
        k0 = key[0]
        rows = shape[0]
        if isinstance(k0, (int, np.integer)):
            r = int(k0) + rows if k0 < 0 else int(k0)
            if not 0 <= r < rows:
                raise IndexError(f"index {k0} is out of bounds for axis 0 with size {rows}")
            start, stop, rest = r, r + 1, (0,) + key[1:]
        elif isinstance(k0, slice) and k0.step in (None, 1):
            start, stop, _ = k0.indices(rows)
            stop = max(stop, start)
            rest = (slice(None),) + key[1:]
        else:
            return self._f._view(self._h, raw)[key]
        row_bytes = nbytes // rows
        typestr = _typestr(dtname, flags)
        part = np.empty((stop - start,) + tuple(shape[1:]), dtype=np.dtype(typestr))
        if part.nbytes:
            self._h.read(index, start * row_bytes, part.__array_interface__["data"][0],
                         part.nbytes)
        return _freeze(part[rest])


def open(path, verify="header", *, io="mmap", format=None, threads=0):  # noqa: A001
    """Opens a model file of any known format (detected from content), O(header).

    verify: "header" (default: header checksums; structure is always validated), "all" (also
    every tensor checksum, padding and BOOL value before returning; `threads` share the work),
    "none" (skip checksums). io: "mmap" (default), "pread" (nothing mapped; every tensor is
    then one copy) or "private" (mapped copy-on-write: the views are writable, and what is
    written stays in this process, never in the file). format: force an adapter by name."""
    return File(path, verify=verify, io=io, format=format, threads=threads)
