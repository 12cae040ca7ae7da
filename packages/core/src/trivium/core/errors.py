"""Error classes shared by every Trivium package.

Each error is a :class:`TriviumError` and also the builtin exception a caller
would naturally catch (``ValueError`` for bad data, ``OSError`` for I/O).

Example:
    >>> from trivium.core.errors import DecodeError
    >>> try:
    ...     raise DecodeError("truncated JPEG", path="cat.jpg")
    ... except ValueError as e:
    ...     print(e)
    cat.jpg: truncated JPEG
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
from collections.abc import Callable

#: The reason :class:`PathNotFoundError` gives (``os.strerror(ENOENT)``, lower-cased).
NO_SUCH_PATH = "no such file or directory"
#: The reason :class:`EmptyInputError` gives.
EMPTY_INPUT = "empty input (0 bytes)"


class TriviumError(Exception):
    """Base class of every error raised by Trivium.

    ``path`` (optional) names the file the error is about; it is prefixed to the
    message so that a failing sample in a large dataset can be found.

    Example:
        >>> str(TriviumError("bad header", path="a.png"))
        'a.png: bad header'
    """

    def __init__(self, reason: str, *, path: str | os.PathLike[str] | None = None) -> None:
        self.reason = reason
        self.path = None if path is None else os.fspath(path)
        self.message = reason if self.path is None else f"{self.path}: {reason}"
        super().__init__(self.message)

    def __str__(self) -> str:  # OSError's own str() would reformat from errno and filename
        return self.message

    def __reduce__(self):  # keep `path` across pickling (DataLoader workers)
        return (_rebuild, (type(self), self.reason, self.path))


def _rebuild(cls: type[TriviumError], reason: str, path: str | None) -> TriviumError:
    return cls(reason, path=path)


class DecodeError(TriviumError, ValueError):
    """Encoded data (an image, audio file, ...) is corrupt, truncated or not what it claims.

    Example:
        >>> isinstance(DecodeError("empty input"), ValueError)
        True
    """


class EncodeError(TriviumError, ValueError):
    """Data cannot be encoded (wrong shape, dtype or an encoder failure).

    Example:
        >>> try:
        ...     raise EncodeError("expected 1 or 3 channels, got 5")
        ... except ValueError as e:
        ...     print(e)
        expected 1 or 3 channels, got 5
    """


class UnsupportedFormatError(DecodeError):
    """The data is valid but uses a format or feature Trivium does not decode.

    Example:
        >>> isinstance(UnsupportedFormatError("GIF"), DecodeError)
        True
    """


class DatasetError(TriviumError, OSError):
    """A dataset root is missing, incomplete or laid out differently than expected.

    Example:
        >>> isinstance(DatasetError("no such split"), OSError)
        True
    """


class PathNotFoundError(DatasetError, FileNotFoundError):
    """A path given to a loader or dataset does not exist.

    A ``FileNotFoundError`` as ``open()`` raises it (``errno`` is ENOENT, ``filename``
    the path) and a :class:`DatasetError`, which the data package raised before.
    The message is ``"{path}: no such file or directory"``, optionally followed by
    ``"; "`` and what to do (for example, how to download a dataset).

    Example:
        >>> import errno
        >>> e = PathNotFoundError(path="data/train.parquet")
        >>> str(e), e.errno == errno.ENOENT, e.filename
        ('data/train.parquet: no such file or directory', True, 'data/train.parquet')
        >>> isinstance(e, FileNotFoundError) and isinstance(e, DatasetError)
        True
    """

    def __init__(
        self,
        reason: str = NO_SUCH_PATH,
        *,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(reason, path=path)
        self.errno = errno.ENOENT
        self.strerror = os.strerror(errno.ENOENT)
        self.filename = self.path


class EmptyInputError(DecodeError):
    """The input holds no bytes at all: an empty file, or empty ``bytes``.

    The message is ``"{path}: empty input (0 bytes)"`` for a file and
    ``"empty input (0 bytes)"`` for in-memory data, whichever loader reads it.

    Example:
        >>> str(EmptyInputError(path="a.wav")), str(EmptyInputError())
        ('a.wav: empty input (0 bytes)', 'empty input (0 bytes)')
    """

    def __init__(
        self, reason: str = EMPTY_INPUT, *, path: str | os.PathLike[str] | None = None
    ) -> None:
        super().__init__(reason, path=path)


class SkippedSamplesWarning(UserWarning):
    """A sample could not be read and was skipped (a dataset's ``on_error="skip"``).

    Example:
        >>> issubclass(SkippedSamplesWarning, UserWarning)
        True
    """


class DecodeWarning(UserWarning):
    """Data was damaged but partly decodable, and the caller asked for what could be read.

    The message starts with the file's path where the decoder knows it
    (``"{path}: {what was lost}"``). Every ``DecodeWarning`` made while a
    :func:`watch_decode_warnings` block is open in the same thread is passed to that
    block's sink, whatever the warning filters do with it (even ``"ignore"``, or a
    repeat that the ``"default"`` filter shows once): datasets and loaders count the
    files they recovered that way.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warnings.warn("premature end of JPEG file", DecodeWarning)
        >>> caught[0].category.__name__
        'DecodeWarning'
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        # warnings.warn makes the instance before it consults the filters, in the
        # thread that warns: the sinks of that thread's open watch blocks see each one.
        for sink in _decode_sinks.get():
            sink(str(self))


# The sinks of the watch_decode_warnings blocks open in this thread (a context variable:
# each thread has its own, and trivium.core.threads.parallel_map copies the caller's).
_decode_sinks: contextvars.ContextVar[tuple[Callable[[str], None], ...]] = contextvars.ContextVar(
    "trivium_decode_warning_sinks", default=()
)


class _Watch:
    """The block :func:`watch_decode_warnings` opens (a class: entered once per sample)."""

    __slots__ = ("sink", "token")

    def __init__(self, sink: Callable[[str], None]) -> None:
        self.sink = sink

    def __enter__(self) -> None:
        self.token = _decode_sinks.set((*_decode_sinks.get(), self.sink))

    def __exit__(self, *exc: object) -> None:
        _decode_sinks.reset(self.token)


def watch_decode_warnings(sink: Callable[[str], None]) -> contextlib.AbstractContextManager[None]:
    """Pass the message of every :class:`DecodeWarning` made in the block to ``sink``.

    Thread-safe: the block covers the calling thread only (and the work it hands to
    :func:`trivium.core.threads.parallel_map`, which runs in a copy of its context),
    never what other threads decode meanwhile. ``warnings.catch_warnings`` cannot do
    this: it swaps the process-wide filters. Blocks nest; each open one gets the
    message. The warning itself is still issued as the filters say. Do not keep a
    block open across a ``yield``: the code the generator yields to would be watched.

    Example:
        >>> import warnings
        >>> seen = []
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with watch_decode_warnings(seen.append):
        ...         warnings.warn("a.jpg: returned a partial image", DecodeWarning)
        >>> seen
        ['a.jpg: returned a partial image']
    """
    return _Watch(sink)


__all__ = [
    "EMPTY_INPUT",
    "NO_SUCH_PATH",
    "DatasetError",
    "DecodeError",
    "DecodeWarning",
    "EmptyInputError",
    "EncodeError",
    "PathNotFoundError",
    "SkippedSamplesWarning",
    "TriviumError",
    "UnsupportedFormatError",
    "watch_decode_warnings",
]
