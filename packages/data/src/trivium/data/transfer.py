"""How a batch crosses from a DataLoader worker to the main process.

torch sends every tensor of a batch through its own shared-memory segment, whose
file descriptor goes over a socket: a round trip between the processes per tensor
(about a millisecond of CPU on both sides together), and one more open descriptor
for the main process while the batch lives. For the small tensors of a batch
(labels, lengths, ids) that costs far more than their bytes. :func:`inline_small_tensors`
marks them so that they are pickled by value instead; the main process receives
ordinary tensors. Tensors already in shared memory (a batch made with
``trivium.core.empty_batch``) and large ones keep torch's path; a batch in a buffer
of the loader's ``trivium.core.BatchSlots`` is marked with
``trivium.core.batching.lend_batch``, so that its buffer is reused once the main
process drops it.

:func:`worker_collate` is ``default_collate`` for a worker process: a small stacked
batch in plain memory (then pickled by value), a larger one in a buffer of the
loader's ``BatchSlots``, where ``default_collate`` makes a fresh segment for each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data._utils.collate import collate, collate_tensor_fn, default_collate_fn_map

from trivium.core.batching import empty_batch, lend_batch
from trivium.core.trees import map_tensors

# Below this many bytes a copy through the worker's pipe is cheaper than a segment.
INLINE_MAX_BYTES = 64 * 1024


def _rebuild(data: bytes, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    if not data:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape)


class _ByValue:
    """A tensor that pickles as its bytes and unpickles as a plain tensor."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor

    def __reduce__(self) -> tuple[Any, tuple[bytes, torch.dtype, tuple[int, ...]]]:
        t = self.tensor
        t = t.resolve_conj().resolve_neg().contiguous()  # plain memory, lazy flags applied
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes()
        return _rebuild, (data, t.dtype, tuple(t.shape))


def _inlinable(t: torch.Tensor) -> bool:
    return (
        t.device.type == "cpu"
        and t.layout == torch.strided
        and not t.requires_grad
        and not t.is_shared()
        and t.numel() * t.element_size() <= INLINE_MAX_BYTES
        and type(t) is torch.Tensor  # subclasses keep their own pickling
    )


def inline_small_tensors(batch: Any) -> Any:
    """Mark the small CPU tensors of ``batch`` (at any nesting) to be sent by value.

    Containers are walked as :func:`trivium.core.trees.map_tensors` walks them.

    For a batch about to leave a worker: after pickling and unpickling, the marked
    tensors are plain tensors again, equal to the originals.

    Example:
        >>> import pickle, torch
        >>> batch = {"label": torch.tensor([3, 1]), "name": "a"}
        >>> pickle.loads(pickle.dumps(inline_small_tensors(batch)))
        {'label': tensor([3, 1]), 'name': 'a'}
    """
    return map_tensors(_mark, batch)


def _mark(t: torch.Tensor) -> Any:
    return _ByValue(t) if _inlinable(t) else lend_batch(t)


def _stack(batch: list[torch.Tensor], **_: Any) -> torch.Tensor:
    """``default_collate``'s stack of ``batch``, in memory that crosses to the main process
    cheaply (its ``dtype`` that of the first tensor, as torch's in a worker)."""
    elem = batch[0]
    if elem.is_nested or elem.layout != torch.strided or type(elem) is not torch.Tensor:
        return collate_tensor_fn(batch)  # torch's errors, and subclasses as torch makes them
    shape = (len(batch), *elem.shape)
    if elem.device.type == "cpu" and len(batch) * elem.nbytes > INLINE_MAX_BYTES:
        out = empty_batch(shape, elem.dtype)
    else:
        out = torch.empty(shape, dtype=elem.dtype, device=elem.device)
    return torch.stack(batch, 0, out=out)


_WORKER_COLLATE_MAP: dict[type | tuple[type, ...], Callable[..., Any]] = {
    **default_collate_fn_map,
    torch.Tensor: _stack,
}


def worker_collate(batch: list[Any]) -> Any:
    """``default_collate(batch)`` (equal values, types, shapes, dtypes), for a worker process.

    Its tensors are stacked into plain memory when small (:func:`inline_small_tensors`
    then sends them by value: no shared-memory segment, no descriptor passed) and into
    a buffer of the loader's ``BatchSlots`` when large (:func:`trivium.core.empty_batch`).

    Example:
        >>> import torch
        >>> from torch.utils.data import default_collate
        >>> batch = [{"x": torch.tensor([i, 2 * i]), "y": i} for i in range(3)]
        >>> got, want = worker_collate(batch), default_collate(batch)
        >>> all(torch.equal(got[k], want[k]) for k in want)
        True
    """
    return collate(batch, collate_fn_map=_WORKER_COLLATE_MAP)
