"""The exceptions of ingot: one base class, ingot.Error, and a subclass per family of the C
library's status codes. Every instance carries the C error record: ``code`` (the status name,
"BAD_CHECKSUM"), ``status`` (its number), ``message``, ``tensor`` (the tensor, key or region
named, or None) and ``offset`` (the byte offset in the file, or None)."""

_NO_OFFSET = (1 << 64) - 1


class Error(Exception):
    """Base class of every error ingot raises for a file or an argument the library refused."""

    def __init__(self, code="UNKNOWN", message="", tensor=None, offset=None, status=-1):
        self.code = code
        self.status = status
        self.message = message
        self.tensor = tensor
        self.offset = offset
        super().__init__(self._text())

    def _text(self):
        s = f"{self.code}: {self.message}"
        if self.tensor:
            s += f" [where '{self.tensor}']"
        if self.offset is not None:
            s += f" [at byte {self.offset}]"
        return s

    def __str__(self):
        return self._text()

    def __reduce__(self):
        return (make, (self.status, self.code, self.message, self.tensor or "",
                       _NO_OFFSET if self.offset is None else self.offset))


class FormatError(Error, ValueError):
    """The file is malformed: truncated, inconsistent, out of range (TRUNCATED .. BAD_METADATA,
    BAD_PATH, BAD_FLAGS, BAD_VALUE)."""


class ChecksumError(FormatError):
    """A stored checksum does not match the data (BAD_CHECKSUM): the file is corrupt."""


class UnsupportedError(Error):
    """A valid feature ingot does not handle, or an unknown format (UNSUPPORTED,
    UNKNOWN_FORMAT)."""


class WrongTypeError(Error, TypeError):
    """A value has another type than the one asked for (WRONG_TYPE)."""


class NotFoundError(Error, KeyError):
    """No such tensor or key (NOT_FOUND)."""


class MissingFileError(NotFoundError, FileNotFoundError):
    """ingot.open() of a path that does not exist (NOT_FOUND at open): both an ingot.Error and
    the builtin FileNotFoundError."""

    def __init__(self, *args, **kw):
        Error.__init__(self, *args, **kw)

    def __str__(self):
        return self._text()


class RangeError(Error, IndexError):
    """An index or range out of bounds (RANGE)."""


class UsageError(Error, ValueError):
    """An invalid argument or call order (MISUSE)."""


class IOError(Error, OSError):  # noqa: A001 - ingot.IOError is both an ingot.Error and an OSError
    """Input/output failed, or a mapped file changed under us (IO, IO_FAULT)."""

    def __init__(self, *args, **kw):
        Error.__init__(self, *args, **kw)

    def __str__(self):
        return self._text()


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed (NOMEM)."""


class LimitError(Error):
    """The input exceeds a configured limit (LIMIT)."""


class CancelledError(Error):
    """The operation was cancelled (CANCELLED)."""


_BY_NAME = {
    "BAD_CHECKSUM": ChecksumError,
    "UNSUPPORTED": UnsupportedError,
    "UNKNOWN_FORMAT": UnsupportedError,
    "WRONG_TYPE": WrongTypeError,
    "NOT_FOUND": NotFoundError,
    "RANGE": RangeError,
    "MISUSE": UsageError,
    "IO": IOError,
    "IO_FAULT": IOError,
    "NOMEM": OutOfMemoryError,
    "LIMIT": LimitError,
    "CANCELLED": CancelledError,
}


def make(status, code, message, where, offset):
    """Builds the exception for one C error record (called by the extension)."""
    cls = _BY_NAME.get(code, FormatError)
    return cls(code=code, message=message, tensor=where or None,
               offset=None if offset == _NO_OFFSET else offset, status=status)
