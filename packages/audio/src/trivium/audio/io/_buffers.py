"""Memory reused for large decoded outputs (the waveforms of long WAV files).

A long file's samples are copied into a new array at every load. Between two loads
the allocator may give the previous array's pages back to the system (glibc trims the
top of its heap once other code has freed large blocks), and the next load then takes a
page fault on every page of its new array before the copy, with NumPy's huge-page
request sometimes a synchronous compaction as well: 0.4 to 10 ms more for a 60 s stereo
16-bit file, whose copy takes about 0.6 ms. A :class:`BufferCache` keeps the memory of
outputs that have died (a few buffers) and hands it to the next output that fits, so
that loading file after file touches no new pages.

An output's memory goes back to the cache only when the array handed out, and so every
tensor and view made from it, is gone: a buffer is never in two outputs at once.

Example:
    >>> import numpy as np
    >>> cache = BufferCache(keep=2, min_bytes=0, max_bytes=1 << 20)
    >>> first = cache.empty((4, 2), np.int16)
    >>> address = first.ctypes.data
    >>> del first  # its memory goes back to the cache...
    >>> cache.empty((8,), np.int16).ctypes.data == address  # ...and serves the next array
    True
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from typing import Any

import numpy as np

__all__ = ["BufferCache"]


class BufferCache:
    """Buffers of dead arrays, handed out again to arrays of a size they fit.

    ``keep``: how many buffers are kept at most (the oldest goes first). Arrays of
    fewer than ``min_bytes`` (the allocator keeps such memory itself) or more than
    ``max_bytes`` (not to hold much memory idle) come from ``np.empty``. A buffer
    serves arrays of half its size up to its size. A forked child starts with an empty
    cache.

    Example:
        >>> import numpy as np
        >>> cache = BufferCache(keep=1, min_bytes=1 << 20, max_bytes=1 << 25)
        >>> cache.empty((3,), np.float32).base is None  # small: a plain np.empty
        True
    """

    def __init__(self, keep: int, min_bytes: int, max_bytes: int) -> None:
        self._keep = keep
        self._min_bytes = min_bytes
        self._max_bytes = max_bytes
        self._free: list[np.ndarray] = []  # uint8 buffers, oldest first
        # Finalizers can run inside any allocation (the garbage collector), also while
        # this thread holds the lock: they never wait for it (see _give_back).
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            ref = weakref.ref(self)
            os.register_at_fork(after_in_child=lambda: _forget(ref()))

    def empty(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialised C-contiguous array; its memory comes back here when it dies.

        Keep the array itself (``torch.from_numpy`` does): views made from it with
        NumPy refer to the buffer, not to it, and do not hold its memory out of the cache.

        Example:
            >>> import numpy as np
            >>> cache = BufferCache(keep=1, min_bytes=0, max_bytes=1 << 20)
            >>> cache.empty((2, 3), np.int16).dtype
            dtype('int16')
        """
        dtype = np.dtype(dtype)
        nbytes = dtype.itemsize * math.prod(shape)
        if not self._min_bytes <= nbytes <= self._max_bytes:
            return np.empty(shape, dtype)
        buffer = self._take(nbytes)
        if buffer is None:
            buffer = np.empty(nbytes, np.uint8)
        out = buffer[:nbytes].view(dtype).reshape(shape)
        weakref.finalize(out, self._give_back, buffer).atexit = False
        return out

    def _take(self, nbytes: int) -> np.ndarray | None:
        """The smallest kept buffer of ``nbytes`` to ``2 * nbytes`` bytes, taken out."""
        with self._lock:
            fits = [i for i, b in enumerate(self._free) if nbytes <= b.size <= 2 * nbytes]
            if not fits:
                return None
            return self._free.pop(min(fits, key=lambda i: self._free[i].size))

    def _give_back(self, buffer: np.ndarray) -> None:
        if not self._lock.acquire(blocking=False):  # a finalizer run inside _take (the GC)
            return
        try:
            self._free.append(buffer)
            del self._free[: max(0, len(self._free) - self._keep)]
        finally:
            self._lock.release()


def _forget(cache: BufferCache | None) -> None:
    """In a forked child: a new lock (another thread may have held the parent's), no buffers."""
    if cache is not None:
        cache._lock = threading.Lock()
        cache._free = []
