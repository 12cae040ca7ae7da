"""What ``load``, ``info`` and ``stream`` are given: paths, file objects and bytes.

The first bytes of a source (to sniff its format), bytes at an offset, encoded bytes
held in memory as an array, a file object rewound to where its audio starts, and the
source as another process may open it (fork-safe reopening, pickling).

Example:
    >>> head(b"RIFF\\x24\\x00\\x00\\x00WAVE", 4)
    b'RIFF'
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import IO, Any

import numpy as np
import torch
from torch import Tensor

from trivium.core.forking import own_file

__all__ = [
    "OPEN_FLAGS",
    "AudioSource",
    "check_range",
    "head",
    "memory_source",
    "own_source",
    "portable_source",
    "position",
    "read_at",
    "reopenable",
    "rewinder",
]

AudioSource = str | os.PathLike | IO[bytes] | bytes | bytearray | memoryview | Tensor
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def check_range(frame_offset: int, num_frames: int) -> None:
    for arg, value in (("frame_offset", frame_offset), ("num_frames", num_frames)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{arg} must be an int, got {type(value).__name__}")
    if frame_offset < 0:
        raise ValueError(f"frame_offset must be >= 0, got {frame_offset}")
    if num_frames < -1:
        raise ValueError(f"num_frames must be -1 (all) or >= 0, got {num_frames}")


def position(src: AudioSource) -> int:
    """Where a file object stands (the audio starts there); 0 for other sources."""
    try:
        return int(src.tell()) if hasattr(src, "read") else 0  # type: ignore[union-attr]
    except (OSError, AttributeError, ValueError):
        return 0


def read_at(obj: Any, offset: int, size: int) -> bytes:
    """``size`` bytes at ``offset`` of a path or file object, leaving its position alone."""
    if isinstance(obj, str):
        with open(obj, "rb") as file:
            file.seek(offset)
            return file.read(size)
    position = obj.tell()
    try:
        obj.seek(offset)
        return obj.read(size)
    finally:
        obj.seek(position)


def memory_source(uri: AudioSource) -> np.ndarray | None:
    """Encoded bytes held in memory as a 1-D ``uint8`` array (no copy), or None."""
    if isinstance(uri, Tensor):
        if uri.dtype != torch.uint8 or uri.dim() != 1 or uri.device.type != "cpu":
            return None
        return uri.detach().contiguous().numpy()
    if isinstance(uri, (bytes, bytearray, memoryview)):
        try:
            return np.frombuffer(uri, np.uint8)
        except (ValueError, TypeError):  # a non-contiguous or multi-dimensional view
            return None
    return None


def head(uri: AudioSource, size: int) -> bytes:
    """The first ``size`` bytes of ``uri`` (to sniff its format); empty where unreadable.

    A file object is left where it stood. Errors are left for the decoder to report.
    """
    memory = memory_source(uri)
    if memory is not None:
        return memory[:size].tobytes()
    if isinstance(uri, (str, os.PathLike)):
        try:
            # Only regular files: opening a named pipe, even without blocking, lets
            # its writer start, and what is read here never reaches libsndfile.
            if not stat.S_ISREG(os.stat(uri).st_mode):
                return b""
            fd = os.open(uri, OPEN_FLAGS)
        except OSError:
            return b""
        try:
            return os.read(fd, size)
        except OSError:
            return b""
        finally:
            os.close(fd)
    try:
        position = uri.tell()  # type: ignore[union-attr]
        head = uri.read(size)  # type: ignore[union-attr]
        uri.seek(position)  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError):
        return b""
    return head if isinstance(head, bytes) else b""


def rewinder(obj: str | IO[bytes]) -> Callable[[], str | IO[bytes]]:
    """A function giving ``obj`` again from where its audio starts (for a second open)."""
    if isinstance(obj, str):
        return lambda: obj
    origin = position(obj)

    def rewound() -> IO[bytes]:
        obj.seek(origin)
        return obj

    return rewound


def reopenable(uri: AudioSource) -> bool:
    return isinstance(uri, (str, os.PathLike, bytes, bytearray, memoryview))


def own_source(src: AudioSource, origin: int) -> AudioSource:
    """``src`` as this process can open it without moving another process's file offset.

    ``origin`` is where the audio starts in a file object (see
    :func:`trivium.core.forking.own_file`).
    """
    return own_file(src, origin) if hasattr(src, "read") else src


def portable_source(src: AudioSource | None, origin: int) -> AudioSource | None:
    """``src`` as something that pickles (a path, bytes or a tensor), in this process."""
    if src is None or isinstance(src, (str, os.PathLike, bytes, bytearray, Tensor)):
        return src
    if isinstance(src, memoryview):
        return src.tobytes()
    name = getattr(src, "name", None)
    if origin == 0 and isinstance(name, str) and os.path.isfile(name):
        return name
    position = src.tell()
    src.seek(origin)
    try:
        return src.read()
    finally:
        src.seek(position)
