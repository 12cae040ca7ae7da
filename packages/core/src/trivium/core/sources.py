"""Turn what a loader is given (a path, bytes, an array, a tensor or a file object) into a source.

Every loader in Trivium takes the same kinds of input and reports the same errors for
them (see the Errors table in the design notes). The helpers here do that once:

- :func:`source_name` / :func:`describe_source`: the name an error should carry.
- :func:`check_path`: a path that exists, is a file and is not empty, or the error
  that says which of these it is not.
- :func:`as_bytes_buffer` / :func:`as_bytes_tensor`: encoded bytes held in memory
  (``bytes``, ``bytearray``, ``memoryview``, a NumPy array or a 1-D uint8 tensor) as
  one contiguous buffer or tensor, without copying where possible.
- :func:`as_readable`: what a file-reading library opens (a path or a binary file
  object), with the name to put in errors.
- :func:`check_source`: validate a path, non-empty bytes or a file object and return it.

Example:
    >>> import torch
    >>> from trivium.core.sources import as_bytes_buffer, as_readable
    >>> bytes(as_bytes_buffer(torch.tensor([1, 2], dtype=torch.uint8), "decode"))
    b'\\x01\\x02'
    >>> stream, name = as_readable(b"RIFF", "audio")
    >>> stream.read(), name
    (b'RIFF', '<bytes>')
"""

from __future__ import annotations

import io
import os
import stat
from typing import IO, Any, TypeAlias

import numpy as np
import torch
from torch._subclasses.fake_tensor import is_fake

from trivium.core.errors import EmptyInputError, PathNotFoundError

__all__ = [
    "Buffer",
    "BytesLike",
    "PathLike",
    "Source",
    "as_bytes_buffer",
    "as_bytes_tensor",
    "as_readable",
    "check_path",
    "check_source",
    "describe_source",
    "source_name",
]

#: A filesystem path.
PathLike: TypeAlias = str | os.PathLike
#: Encoded bytes held in memory: a bytes-like object, a NumPy array or a 1-D uint8 tensor.
BytesLike: TypeAlias = bytes | bytearray | memoryview | np.ndarray | torch.Tensor
#: Anything a loader reads from: a path, encoded bytes, or a binary file object.
Source: TypeAlias = PathLike | BytesLike | IO[bytes]
#: A contiguous buffer of bytes (``bytes``, ``bytearray``, ``memoryview`` or a uint8 array).
Buffer: TypeAlias = bytes | bytearray | memoryview | np.ndarray

_MEMORY_TYPES = (bytes, bytearray, memoryview)


def source_name(src: Any) -> str | None:
    """The path to name in errors about ``src``: the path itself, a file object's ``name``, or None.

    Example:
        >>> import io
        >>> source_name("a.mp4"), source_name(b"..."), source_name(io.BytesIO())
        ('a.mp4', None, None)
    """
    if isinstance(src, str | os.PathLike):
        return os.fspath(src)
    name = getattr(src, "name", None)
    return name if isinstance(name, str) else None


def describe_source(src: Any) -> str:
    """A name for ``src`` in messages: :func:`source_name`, else a placeholder for its type.

    Example:
        >>> import io, torch
        >>> describe_source("a.wav"), describe_source(b"x"), describe_source(io.BytesIO())
        ('a.wav', '<bytes>', '<BytesIO>')
        >>> describe_source(torch.zeros(1, dtype=torch.uint8))
        '<uint8 tensor>'
    """
    name = source_name(src)
    if name is not None:
        return name
    if isinstance(src, torch.Tensor):
        return f"<{str(src.dtype).removeprefix('torch.')} tensor>"
    return f"<{type(src).__name__}>"


def _article(kind: str) -> str:
    return "an" if kind[:1].lower() in "aeiou" else "a"


def check_path(path: PathLike, kind: str) -> str:
    """``path`` as a string if it names a non-empty file; raises what the Errors table says if not.

    ``kind`` names what the file should hold (``"video"``, ``"audio"``, ``"image"``).
    Raises :class:`~trivium.core.errors.PathNotFoundError` when nothing is there,
    ``IsADirectoryError`` (``"{path}: is a directory, not a video file"``) for a directory
    and :class:`~trivium.core.errors.EmptyInputError` for a 0-byte file. One ``stat`` call;
    loaders that open files call it only after opening failed, to say why.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     check_path(d, "audio")
        Traceback (most recent call last):
        ...
        IsADirectoryError: ...: is a directory, not an audio file
        >>> check_path("missing.mp4", "video")
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: missing.mp4: no such file or directory
    """
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except (FileNotFoundError, NotADirectoryError):
        raise PathNotFoundError(path=name) from None
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{name}: is a directory, not {_article(kind)} {kind} file")
    if st.st_size == 0:
        raise EmptyInputError(path=name)
    return name


def _prefix(func: str | None) -> str:
    return f"{func}: " if func else ""


def _check_bytes_tensor(data: torch.Tensor, func: str | None, what: str) -> None:
    if data.dtype != torch.uint8 or data.dim() != 1:
        raise TypeError(
            f"{_prefix(func)}expected a 1-D uint8 tensor of {what}, "
            f"got {data.dtype} of shape {tuple(data.shape)}"
        )
    if type(data) is not torch.Tensor and is_fake(data):
        # Reaching here with a fake tensor means a custom op's fake kernel was bypassed;
        # reading its storage would crash.
        raise TypeError(f"{_prefix(func)}cannot decode a fake tensor; call it inside torch.compile")


def _nbytes(data: Buffer | torch.Tensor) -> int:
    if isinstance(data, memoryview):
        return data.nbytes
    if isinstance(data, np.ndarray | torch.Tensor):
        return data.nbytes
    return len(data)


def as_bytes_buffer(
    data: BytesLike,
    func: str | None = None,
    *,
    what: str = "encoded bytes",
    allow_empty: bool = False,
) -> Buffer:
    """A contiguous byte buffer over ``data``, without copying where possible.

    ``data`` is ``bytes``, ``bytearray``, ``memoryview`` (returned as they are), a NumPy
    array (viewed as uint8) or a 1-D uint8 tensor (its CPU memory as an array).
    ``func`` prefixes error messages (``"decode_jpeg: expected ..."``) and ``what``
    names the content in them. Raises ``TypeError`` for other types, other tensors and
    fake tensors (``torch.compile`` tracing), and
    :class:`~trivium.core.errors.EmptyInputError` for 0 bytes unless ``allow_empty``.

    Example:
        >>> import numpy as np, torch
        >>> as_bytes_buffer(np.array([1, 2], dtype=np.uint16)).tolist()
        [1, 0, 2, 0]
        >>> as_bytes_buffer(torch.zeros(2, 2), "decode_png")
        Traceback (most recent call last):
        ...
        TypeError: decode_png: expected a 1-D uint8 tensor of encoded bytes, got torch.float32 ...
        >>> as_bytes_buffer(b"")
        Traceback (most recent call last):
        ...
        trivium.core.errors.EmptyInputError: empty input (0 bytes)
    """
    buffer: Buffer
    if isinstance(data, torch.Tensor):
        _check_bytes_tensor(data, func, what)
        buffer = data.detach().cpu().contiguous().numpy()
    elif isinstance(data, _MEMORY_TYPES):
        buffer = data
    elif isinstance(data, np.ndarray):
        buffer = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    else:
        raise TypeError(
            f"{_prefix(func)}expected {what} (tensor, bytes or array), got {type(data)!r}"
        )
    if not allow_empty and _nbytes(buffer) == 0:
        raise EmptyInputError()
    return buffer


def as_bytes_tensor(
    data: BytesLike,
    func: str | None = None,
    *,
    what: str = "encoded bytes",
    allow_empty: bool = False,
) -> torch.Tensor:
    """``data`` as a contiguous 1-D uint8 CPU tensor (as native ops take it), copied only if needed.

    Accepts and rejects what :func:`as_bytes_buffer` does; read-only memory (``bytes``)
    is copied, since a tensor over it could be written to.

    Example:
        >>> as_bytes_tensor(b"\\xff\\xd8", "decode_jpeg")
        tensor([255, 216], dtype=torch.uint8)
    """
    if isinstance(data, torch.Tensor):
        _check_bytes_tensor(data, func, what)
        if not allow_empty and data.numel() == 0:
            raise EmptyInputError()
        return data.detach().cpu().contiguous()
    buffer = as_bytes_buffer(data, func, what=what, allow_empty=allow_empty)
    array = buffer if isinstance(buffer, np.ndarray) else np.frombuffer(buffer, dtype=np.uint8)
    return torch.from_numpy(array if array.flags.writeable else array.copy())


def as_readable(src: Source, kind: str, func: str | None = None) -> tuple[str | IO[bytes], str]:
    """What a file-reading library opens for ``src``, and the name errors should carry.

    A path is returned as a string without touching the filesystem (call
    :func:`check_path` after opening fails to say why). Encoded bytes in memory
    (see :func:`as_bytes_buffer`) become an ``io.BytesIO``; a binary file object with
    ``read`` and ``seek`` is returned as it is. ``kind`` names the content in messages.

    Example:
        >>> as_readable("a.wav", "audio")
        ('a.wav', 'a.wav')
        >>> as_readable(3, "audio")
        Traceback (most recent call last):
        ...
        TypeError: expected a path, a binary file-like object, or encoded bytes ... got int
    """
    if isinstance(src, str | os.PathLike):
        path = os.fspath(src)
        return path, path
    if isinstance(src, (*_MEMORY_TYPES, np.ndarray, torch.Tensor)):
        buffer = as_bytes_buffer(src, func, what=f"encoded {kind}")
        return io.BytesIO(buffer), describe_source(src)
    if hasattr(src, "read") and hasattr(src, "seek"):
        return src, describe_source(src)
    raise TypeError(
        f"{_prefix(func)}expected a path, a binary file-like object, or encoded bytes "
        f"(bytes, bytearray, memoryview, uint8 tensor), got {type(src).__name__}"
    )


def check_source(src: Source, kind: str) -> Source:
    """Validate ``src`` (an existing file, non-empty bytes or a readable file object) and return it.

    Paths go through :func:`check_path`; empty bytes raise
    :class:`~trivium.core.errors.EmptyInputError`; anything else is a ``TypeError``
    naming ``kind``.

    Example:
        >>> check_source(b"x", "video")
        b'x'
        >>> check_source(1.5, "video")
        Traceback (most recent call last):
        ...
        TypeError: expected a path, bytes or a binary file object for the video source, got float
    """
    if isinstance(src, str | os.PathLike):
        check_path(src, kind)
        return src
    if isinstance(src, _MEMORY_TYPES):
        if _nbytes(src) == 0:
            raise EmptyInputError()
        return src
    if isinstance(src, io.IOBase) or hasattr(src, "read"):
        return src
    raise TypeError(
        f"expected a path, bytes or a binary file object for the {kind} source, "
        f"got {type(src).__name__}"
    )
