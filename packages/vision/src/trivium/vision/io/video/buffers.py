"""Reuse of large pixel buffers once nothing holds them: decoded frames and clip batches.

A 720p RGB frame is 2.7 MB and a 16-frame clip 44 MB. The C allocator maps memory
that large fresh from the kernel for every request and unmaps it when it is freed,
so every page of every new frame or batch is faulted in and zeroed before the
decoder writes it (on the 2-core benchmark VM, `perf` put 23 % to 41 % of the CPU
time of reading clips into the new batches in the kernel's page zeroing).
:class:`BufferPool` keeps a few such buffers and hands one out again once no array,
tensor or view made from it is alive: every one of those holds a reference to the
buffer, so only the pool's own reference left means that nobody can read it any more.

New buffers come from torch's allocator (:func:`fresh_buffer`), not NumPy's: NumPy
asks the kernel for transparent huge pages on every array of 4 MB or more, and a
fresh 2 MB huge page is zeroed whole on first touch; on the benchmark VM (whose free
memory the host takes back) a batch of 320 720p frames in NumPy memory took 2.4 s of
CPU to read against 1.5 s in torch's 4 KB pages (`perf`: `clear_page_erms` under
`do_huge_pmd_anonymous_page`), the same memory torchcodec's batches use.

Example:
    >>> pool = BufferPool(max_buffers=2, max_bytes=1 << 20)
    >>> a = pool.take((4, 8, 3))
    >>> address = a.ctypes.data
    >>> b = pool.take((4, 8, 3))  # ``a`` is still held: another buffer
    >>> b.ctypes.data != address
    True
    >>> del a
    >>> pool.take((4, 8, 3)).ctypes.data == address  # released: handed out again
    True
"""

from __future__ import annotations

import math
import os
import sys
import threading

import numpy as np
import torch

__all__ = ["SHARED_POOL", "BufferPool", "fresh_buffer"]


def fresh_buffer(size: int) -> np.ndarray:
    """A new uint8 array of ``size`` bytes in torch's memory (no huge-page advice).

    The array is a view of a torch tensor's storage and keeps it alive; an array
    made from it (a reshape, a row) references it, as a view of any array does.

    Example:
        >>> a = fresh_buffer(6)
        >>> a.shape, a.dtype, a.flags.c_contiguous, a.flags.writeable
        ((6,), dtype('uint8'), True, True)
        >>> row = a.reshape(2, 3)[1]
        >>> row.base is a or row.base.base is a
        True
    """
    return torch.empty(size, dtype=torch.uint8).numpy()


class BufferPool:
    """At most ``max_buffers`` uint8 buffers of at most ``max_bytes`` in all, for reuse.

    ``take(shape)`` returns a C-contiguous uint8 array of ``shape``: a view of a kept
    buffer of exactly that size that nothing else references, else a new one (kept
    in place of the least recently used, if it fits). Thread-safe.

    Example:
        >>> pool = BufferPool(max_buffers=1, max_bytes=100)
        >>> pool.take((200,)).size, pool.nbytes()  # too large to keep
        (200, 0)
    """

    def __init__(self, max_buffers: int, max_bytes: int) -> None:
        self.max_buffers = max_buffers
        self.max_bytes = max_bytes
        self._buffers: list[np.ndarray] = []  # least recently used first
        self._lock = threading.Lock()
        # A fork while another thread holds the lock would leave it held in the child.
        os.register_at_fork(after_in_child=self._new_lock)

    def _new_lock(self) -> None:
        self._lock = threading.Lock()

    def take(self, shape: tuple[int, ...]) -> np.ndarray:
        """A uint8 array of ``shape`` whose memory nothing else uses."""
        size = math.prod(shape)
        with self._lock:
            buffers = self._buffers
            for i in range(len(buffers)):
                # references: the list's and getrefcount's argument; any array,
                # view or tensor still made from it adds its own
                if buffers[i].size == size and sys.getrefcount(buffers[i]) <= 2:
                    buffer = buffers.pop(i)
                    buffers.append(buffer)
                    return buffer.reshape(shape)
            buffer = fresh_buffer(size)
            if size <= self.max_bytes:
                buffers.append(buffer)
                while len(buffers) > self.max_buffers or self.nbytes() > self.max_bytes:
                    del buffers[0]
            return buffer.reshape(shape)

    def nbytes(self) -> int:
        """Bytes the pool keeps (in use or not)."""
        return sum(b.size for b in self._buffers)

    def clear(self) -> None:
        """Drop every kept buffer (those still in use live on with their users)."""
        with self._lock:
            self._buffers = []


#: The process's pool for decoded frames and batches: a few frames' or two 720p clips' worth.
SHARED_POOL = BufferPool(max_buffers=8, max_bytes=128 << 20)
