"""Stacking samples into a batch that leaves a DataLoader worker without another copy.

A tensor a worker sends to the main process must live in shared memory; torch moves
one that does not into a new shared segment, a full extra copy of the batch.
:func:`stack_batch` stacks straight into shared memory inside a worker, as torch's
``default_collate`` does, and is a plain ``torch.stack`` everywhere else.

Example:
    >>> import torch
    >>> stack_batch([torch.zeros(2), torch.ones(2)])
    tensor([[0., 0.],
            [1., 1.]])
"""

from __future__ import annotations

import math
import os
import secrets
import weakref
from collections.abc import Sequence
from typing import Any

import torch
from torch.utils.data import get_worker_info

__all__ = ["BatchSlots", "empty_batch", "lend_batch", "stack_batch"]

_FREE, _LENT = 1, 0
# Every live BatchSlots of this process, by token: where a received batch finds its flags.
_slot_tables: weakref.WeakValueDictionary[int, BatchSlots] = weakref.WeakValueDictionary()


class BatchSlots:
    """Shared-memory batch buffers that DataLoader workers reuse once the main process drops them.

    A fresh shared-memory segment per batch costs the kernel its allocation, zeroing,
    a page fault per 4 KiB page where the batch is written, and freeing; torch then
    passes its descriptor to the main process over a socket. Made in the main process
    before the workers start, ``BatchSlots`` holds a flag per worker and slot in
    shared memory. Inside worker ``w`` after :meth:`use_in_worker`,
    :func:`empty_batch` takes a buffer of row ``w`` whose flag is free and which
    nothing in the worker references; :func:`lend_batch` marks the batch leaving the
    worker, and the main process, once it holds no tensor viewing that batch any
    more, frees the flag again. Where every slot is out, :func:`empty_batch` makes a
    fresh segment, as without slots.

    The buffers: once the main process has received a lent batch, :meth:`reset`
    (before each start of workers) makes one buffer per slot of that batch's size in
    the main process. Workers started with ``fork`` inherit them: a batch in one
    crosses as its slot number (no descriptor, no new mapping) and the buffers outlive
    the workers of an epoch. Until then, and in workers started otherwise, each worker
    makes its own buffers on first use.

    Args:
        num_workers: the DataLoader's workers (a row of flags each).
        slots: buffers per worker process, at most.

    Example:
        >>> slots = BatchSlots(num_workers=2, slots=3)
        >>> slots.flags.shape, slots.free()
        (torch.Size([2, 3]), 6)
    """

    def __init__(self, num_workers: int, slots: int = 4) -> None:
        if num_workers < 1 or slots < 1:
            raise ValueError(f"num_workers and slots must be >= 1, got {num_workers}, {slots}")
        self.flags = torch.full((num_workers, slots), _FREE, dtype=torch.int32).share_memory_()
        self.token = secrets.randbits(62)
        self._held: set[tuple[int, int]] = set()  # (worker, slot) of batches the main holds
        self._nbytes = 0  # of the largest lent batch received
        # Buffers made here, inherited by forked workers, and their uint8 arrays.
        self._owned: list[list[torch.UntypedStorage]] | None = None
        self._arrays: list[list[Any]] = []
        _slot_tables[self.token] = self

    def __getstate__(self) -> dict[str, Any]:
        return {"flags": self.flags, "token": self.token}  # buffers are inherited, not sent

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.flags, self.token, self._held = state["flags"], state["token"], set()
        self._nbytes, self._owned, self._arrays = 0, None, []

    def free(self) -> int:
        """How many slots are free (not lent to the main process)."""
        return int((self.flags == _FREE).sum())

    def reset(self, fork: bool = True) -> None:
        """Free the slots of batches the main process never received (call before workers start).

        A batch still in a worker's queue when its worker stopped keeps its slot lent;
        new worker processes start from free slots, so only the slots of batches the
        main process holds stay lent. ``fork``: the workers are forked, so they inherit
        buffers made here (else each makes its own).
        """
        self.flags.fill_(_FREE)
        for worker, slot in self._held:
            self.flags[worker, slot] = _LENT
        if not fork:
            self._owned, self._arrays = None, []
        elif self._nbytes and (self._owned is None or self._owned[0][0].nbytes() < self._nbytes):
            workers, slots = self.flags.shape
            # Batches the main process holds keep their old buffers alive (their arrays).
            self._owned = [
                [torch.UntypedStorage._new_shared(self._nbytes) for _ in range(slots)]
                for _ in range(workers)
            ]
            self._arrays = [
                [torch.empty(0, dtype=torch.uint8).set_(b).numpy() for b in row]
                for row in self._owned
            ]

    def use_in_worker(self, worker: int) -> None:
        """Make :func:`empty_batch` in this worker process draw from row ``worker``."""
        global _pool
        if _pool is None or _pool.pid != os.getpid() or _pool.token != self.token:
            owned = None if self._owned is None else self._owned[worker]
            _pool = _WorkerPool(self.flags[worker], self.token, worker, owned)

    def _received(self, worker: int, slot: int, nbytes: int) -> None:
        self._held.add((worker, slot))
        self._nbytes = max(self._nbytes, nbytes)

    def _dropped(self, worker: int, slot: int) -> None:
        self._held.discard((worker, slot))
        self.flags[worker, slot] = _FREE


class _WorkerPool:
    """One worker process's buffers of a :class:`BatchSlots` row."""

    def __init__(
        self,
        flags: torch.Tensor,
        token: int,
        worker: int,
        owned: list[torch.UntypedStorage] | None,
    ) -> None:
        self.pid, self.token, self.worker = os.getpid(), token, worker
        self.flags = flags.numpy()  # a view of the shared row
        # The main process's buffers (inherited: it maps them too), else made here.
        self.owned = owned is not None
        self.buffers: list[torch.UntypedStorage | None] = (
            list(owned) if owned is not None else [None] * len(self.flags)
        )
        # References to a buffer while no tensor of this process views it.
        self.idle = [1 if b is None else _use_count(b) for b in self.buffers]

    def take(self, nbytes: int) -> torch.UntypedStorage:
        """A free buffer of at least ``nbytes`` (reused, or made), else a fresh segment."""
        for slot, buffer in enumerate(self.buffers):
            if self.flags[slot] != _FREE:
                continue
            if buffer is None or buffer.nbytes() < nbytes:
                if self.owned or (buffer is not None and self._in_use(slot)):
                    continue
                buffer = self.buffers[slot] = torch.UntypedStorage._new_shared(nbytes)
                self.idle[slot] = 1
            elif self._in_use(slot):  # a tensor of this process still views it
                continue
            return buffer
        return torch.UntypedStorage._new_shared(nbytes)

    def slot_of(self, storage: torch.UntypedStorage) -> int | None:
        ptr = storage.data_ptr()
        for slot, buffer in enumerate(self.buffers):
            if buffer is not None and buffer.data_ptr() == ptr:
                return slot
        return None

    def _in_use(self, slot: int) -> bool:
        """Whether a tensor of this process views the buffer of ``slot``."""
        return _use_count(self.buffers[slot]) > self.idle[slot]


def _use_count(buffer: torch.UntypedStorage) -> int:
    return torch._C._storage_Use_Count(buffer._cdata)


_pool: _WorkerPool | None = None  # this worker process's, once BatchSlots.use_in_worker ran


def _current_pool() -> _WorkerPool | None:
    pool = _pool
    return pool if pool is not None and pool.pid == os.getpid() else None


class _Lent:
    """A batch in a slot's buffer, leaving a worker: unpickled, a tensor that frees the slot."""

    __slots__ = ("owned", "slot", "tensor", "token", "worker")

    def __init__(
        self, tensor: torch.Tensor, token: int, worker: int, slot: int, owned: bool
    ) -> None:
        self.tensor, self.token, self.worker, self.slot = tensor, token, worker, slot
        self.owned = owned

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        t = self.tensor
        if self.owned:  # the main process maps the buffer: the slot number is enough
            layout = (t.dtype, tuple(t.shape), t.stride(), t.storage_offset())
            return _received_in_buffer, (self.token, self.worker, self.slot, layout)
        return _received, (t, self.token, self.worker, self.slot)


def _received(tensor: torch.Tensor, token: int, worker: int, slot: int) -> torch.Tensor:
    """Where a lent batch is unpickled: its slot is freed once no tensor views its storage."""
    slots = _slot_tables.get(token)
    if slots is not None:  # else its loader is gone: nobody reuses the slot
        slots._received(worker, slot, tensor.untyped_storage().nbytes())
        weakref.finalize(tensor.untyped_storage(), slots._dropped, worker, slot)
    return tensor


def _received_in_buffer(
    token: int, worker: int, slot: int, layout: tuple[torch.dtype, tuple, tuple, int]
) -> torch.Tensor:
    """A lent batch in a buffer of the main process: a view with a storage of its own.

    The view's storage (over the buffer's memory) lives as long as some tensor views
    the batch; when it goes, the slot is freed.
    """
    dtype, size, stride, offset = layout
    slots = _slot_tables[token]  # the loader is alive: its workers inherited the buffer
    array = slots._arrays[worker][slot]
    memory = torch.from_numpy(array[: len(array) // dtype.itemsize * dtype.itemsize])
    tensor = memory.view(dtype).as_strided(size, stride, offset)
    slots._received(worker, slot, 0)
    weakref.finalize(tensor.untyped_storage(), slots._dropped, worker, slot)
    return tensor


def lend_batch(tensor: torch.Tensor) -> Any:
    """``tensor``, marked to free its slot when the main process drops it, if it is in one.

    For a batch about to leave a DataLoader worker (pickled to the main process): a
    tensor viewing a buffer that :func:`empty_batch` took from this worker's
    :class:`BatchSlots` is returned wrapped (it unpickles as a plain tensor); any other
    tensor is returned as it is.

    Example:
        >>> import torch
        >>> t = torch.zeros(2)
        >>> lend_batch(t) is t  # not in a worker's slot
        True
    """
    pool = _current_pool()
    if pool is None or tensor.device.type != "cpu":
        return tensor
    slot = pool.slot_of(tensor.untyped_storage())
    if slot is None:
        return tensor
    pool.flags[slot] = _LENT
    return _Lent(tensor, pool.token, pool.worker, slot, pool.owned)


def empty_batch(shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised contiguous CPU tensor, in shared memory when made in a DataLoader worker.

    For filling a batch in place (a decoder writing each sample into its slot);
    sending it to the main process then copies nothing. In a worker where a
    :class:`BatchSlots` is in use, the memory is a reused buffer of it when one is free.

    Example:
        >>> empty_batch((2, 3), torch.uint8).shape
        torch.Size([2, 3])
    """
    if get_worker_info() is None:
        return torch.empty(tuple(shape), dtype=dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    pool = _current_pool()
    storage = torch.UntypedStorage._new_shared(nbytes) if pool is None else pool.take(nbytes)
    return torch.empty(0, dtype=dtype).set_(storage, 0, tuple(shape))


def stack_batch(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """``torch.stack(tensors)``, into shared memory when called in a DataLoader worker.

    Samples that are permuted views of dense memory (a ``[C, H, W]`` view of
    ``[H, W, C]`` pixels) are stacked in their memory order: the batch is a
    ``[N, C, H, W]`` view of ``[N, H, W, C]`` memory (channels last), the same values.

    Example:
        >>> import torch
        >>> stack_batch([torch.arange(3), torch.arange(3)]).shape
        torch.Size([2, 3])
    """
    if not tensors:
        raise ValueError("stack_batch needs at least one tensor")
    order = _memory_order(tensors[0])
    dense = [t.permute(order) for t in tensors]
    first = dense[0]
    if get_worker_info() is None or first.device.type != "cpu":
        out = torch.stack(dense)
    else:
        out = torch.stack(dense, out=empty_batch((len(dense), *first.shape), first.dtype))
    return out.permute(0, *[1 + order.index(d) for d in range(len(order))])


def _memory_order(tensor: torch.Tensor) -> list[int]:
    """The dims of ``tensor`` from outermost to innermost in memory, if it is dense that way.

    A ``[C, H, W]`` view of ``[H, W, C]`` memory (what image decoders return) gives
    ``[1, 2, 0]``: stacking in that order is a plain copy per sample, and the batch
    keeps the samples' layout (channels last) instead of being transposed into a
    new one. Anything else gives the identity order.
    """
    identity = list(range(tensor.dim()))
    order = sorted(identity, key=lambda d: -tensor.stride(d))
    return order if tensor.permute(order).is_contiguous() else identity
