"""ingot: open neural-network weight files of any format as read-only NumPy views of the
mapping (no copy), verify them, save and convert them crash-safely, and run models.

    import ingot
    with ingot.open("model.safetensors") as f:
        w = f["fc1.weight"]            # ndarray viewing the mapping; keeps the file alive
        print(f.metadata, f.info("fc1.weight"))
    ingot.save({"w": w}, "copy.ingot", metadata={"name": "demo"})

Built on the public C API of libingot (statically linked into ingot._ingot)."""

from . import _ingot
from ._errors import (CancelledError, ChecksumError, Error, FormatError, IOError, LimitError,
                      MissingFileError, NotFoundError, OutOfMemoryError, RangeError,
                      UnsupportedError, UsageError, WrongTypeError)
from ._file import File, Slice, TensorInfo, dtype_names, open
from ._inspect import diff, hash, summary
from ._save import convert, save, typed

__version__ = _ingot.version()

__all__ = [
    "open", "File", "Slice", "TensorInfo", "save", "convert", "typed", "diff", "hash", "summary",
    "dtype_names", "Error", "FormatError", "ChecksumError", "UnsupportedError", "WrongTypeError",
    "NotFoundError", "MissingFileError", "RangeError", "UsageError", "IOError",
    "OutOfMemoryError", "LimitError", "CancelledError", "MLP", "LM", "Tokenizer",
]


def __getattr__(name):
    # The runtime (and with it nothing heavier than the extension) loads on first use.
    if name in ("MLP", "LM", "Tokenizer"):
        from . import _runtime
        return getattr(_runtime, name)
    raise AttributeError(f"module 'ingot' has no attribute {name!r}")
