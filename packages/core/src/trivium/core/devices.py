"""Device selection and moving (nested) batches between devices.

``resolve_device`` turns ``"auto"`` into the best available device, ``move_to``
and ``pin_memory`` walk nested containers of tensors, and ``CUDAPrefetcher``
overlaps the host-to-device copy of the next batch with compute on the current one.

Example:
    >>> import torch
    >>> from trivium.core.devices import move_to, resolve_device
    >>> device = resolve_device("cpu")
    >>> batch = {"image": torch.zeros(2, 3), "label": [1, 2]}
    >>> move_to(batch, device)["image"].device
    device(type='cpu')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import torch

from trivium.core.trees import map_tensors

__all__ = ["CUDAPrefetcher", "move_to", "pin_memory", "resolve_device"]

T = TypeVar("T")
DeviceLike = str | torch.device

# Copies to these devices are synchronous anyway; non_blocking=True towards the CPU
# would return before the data has arrived.
_BLOCKING_DEVICE_TYPES = ("cpu", "mps")


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return mps is not None and mps.is_available()


def resolve_device(device: DeviceLike = "auto") -> torch.device:
    """Return a validated :class:`torch.device`; ``"auto"`` picks cuda > mps > cpu.

    Raises ``ValueError`` for strings that are not devices, and for CUDA or MPS
    devices that are not available on this machine.

    Example:
        >>> resolve_device("cpu")
        device(type='cpu')
        >>> resolve_device("auto").type in {"cuda", "mps", "cpu"}
        True
    """
    if isinstance(device, str) and device.strip().lower() == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps") if _mps_available() else torch.device("cpu")
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}")
    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise ValueError(f"invalid device {device!r}: {e}") from None
    _check_available(dev)
    return dev


def _check_available(dev: torch.device) -> None:
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {str(dev)!r} requested but CUDA is not available")
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise ValueError(f"device {str(dev)!r} requested but only {count} CUDA device(s)")
    elif dev.type == "mps" and not _mps_available():
        raise ValueError(f"device {str(dev)!r} requested but MPS is not available")


def move_to(obj: T, device: DeviceLike, non_blocking: bool = True) -> T:
    """Move every tensor inside ``obj`` to ``device``; other values are returned as they are.

    Walks dicts (``OrderedDict``, ``defaultdict``, ... keep their type), lists,
    tuples, namedtuples and dataclass instances (a new instance of the same type).
    ``non_blocking`` is used for copies to accelerators only: a non-blocking copy to
    the CPU could be read before it has finished.

    Example:
        >>> import torch
        >>> out = move_to({"x": torch.ones(2), "name": "a"}, "cpu")
        >>> out["x"].device, out["name"]
        (device(type='cpu'), 'a')
    """
    dev = resolve_device(device)
    blocking = not non_blocking or dev.type in _BLOCKING_DEVICE_TYPES
    return map_tensors(lambda t: t.to(dev, non_blocking=not blocking), obj)


def _pin(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.device.type != "cpu" or tensor.is_pinned():
        return tensor
    return tensor.pin_memory()


def pin_memory(obj: T) -> T:
    """Copy every CPU tensor inside ``obj`` into page-locked memory (for fast async copies).

    Pinning needs CUDA: without it ``obj`` is returned unchanged. Containers are
    walked as in :func:`move_to`.

    Example:
        >>> import torch
        >>> batch = pin_memory({"x": torch.ones(2)})
        >>> batch["x"].is_pinned() == torch.cuda.is_available()
        True
    """
    if not torch.cuda.is_available():
        return obj
    return map_tensors(_pin, obj)


def _record_stream(obj: Any, stream: torch.cuda.Stream) -> None:
    def record(tensor: torch.Tensor) -> torch.Tensor:
        if tensor.device.type == "cuda":
            tensor.record_stream(stream)
        return tensor

    map_tensors(record, obj)


class CUDAPrefetcher:
    """Iterate ``iterable`` with each batch already on ``device``.

    On CUDA the next batch is pinned and copied on a side stream while the current
    one is being used, so the copy overlaps with compute. On any other device each
    batch is simply moved with :func:`move_to`. Every ``iter()`` starts over, and
    ``len()`` works when ``iterable`` has a length.

    Args:
        iterable: the source of batches, usually a ``DataLoader``.
        device: target device; ``None`` means ``resolve_device("auto")``.
        non_blocking: use asynchronous copies on CUDA.
        pin_memory: pin CPU tensors before the copy (needed for a truly async copy).

    Example:
        >>> import torch
        >>> loader = [{"x": torch.ones(2)}, {"x": torch.zeros(2)}]
        >>> batches = list(CUDAPrefetcher(loader, device="cpu"))
        >>> len(batches), batches[0]["x"].device
        (2, device(type='cpu'))
    """

    def __init__(
        self,
        iterable: Iterable[Any],
        device: DeviceLike | None = None,
        *,
        non_blocking: bool = True,
        pin_memory: bool = True,
    ) -> None:
        self.iterable = iterable
        self.device = resolve_device("auto" if device is None else device)
        self.non_blocking = non_blocking
        self.pin_memory = pin_memory

    def __len__(self) -> int:
        return len(self.iterable)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        if self.device.type != "cuda":
            return (move_to(batch, self.device, self.non_blocking) for batch in self.iterable)
        return self._iter_cuda()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(device={str(self.device)!r})"

    def _iter_cuda(self) -> Iterator[Any]:
        stream = torch.cuda.Stream(device=self.device)
        source = iter(self.iterable)
        ready, batch = self._preload(source, stream)
        while ready:
            consumer = torch.cuda.current_stream(self.device)
            consumer.wait_stream(stream)  # the copy must finish before compute reads it
            # The memory was allocated on the side stream: tell the caching allocator
            # that the consumer stream uses it too, so it is not reused too early.
            _record_stream(batch, consumer)
            current = batch
            ready, batch = self._preload(source, stream)
            yield current

    def _preload(self, source: Iterator[Any], stream: torch.cuda.Stream) -> tuple[bool, Any]:
        try:
            batch = next(source)
        except StopIteration:
            return False, None
        if self.pin_memory:
            batch = map_tensors(_pin, batch)
        with torch.cuda.stream(stream):
            batch = move_to(batch, self.device, self.non_blocking)
        return True, batch
