"""``MapPipe``: a map-style dataset composed by chaining.

Example:
    >>> from trivium.data import MapPipe
    >>> MapPipe([1, 2]).map(str)[1]
    '2'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from torch.utils.data import Dataset

from trivium.core.skipping import Origin, SkipReport, item_origin
from trivium.data.pipes.base import IterPipe

__all__ = ["MapPipe"]


class MapPipe(Dataset):
    """A map-style dataset composed by chaining: ``ds[i]``, ``len(ds)``, ``map``, ``to_iter_pipe``.

    Wraps any sequence (or object with ``__getitem__`` and ``__len__``); works with
    any sampler, and :class:`trivium.data.DataLoader` reads it in its global order.

    Example:
        >>> ds = MapPipe([1, 2, 3]).map(lambda x: x * 2)
        >>> len(ds), ds[2], list(ds.to_iter_pipe())
        (3, 6, [2, 4, 6])
    """

    def __init__(self, data: Sequence[Any] | Dataset) -> None:
        if not hasattr(data, "__getitem__") or not hasattr(data, "__len__"):
            raise TypeError(f"MapPipe needs __getitem__ and __len__, got {type(data).__name__}")
        self.data = data

    def __len__(self) -> int:
        return len(self.data)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> Any:
        return self.data[index]

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        """Several items at once (torch's DataLoader uses this for whole batches)."""
        getitems = getattr(self.data, "__getitems__", None)
        if getitems is not None:
            return list(getitems(list(indices)))
        return [self.data[i] for i in indices]

    def item_origin(self, index: int) -> Origin | None:
        """Where item ``index`` comes from, as the wrapped dataset says (errors name it).

        Example:
            >>> MapPipe([1]).item_origin(0) is None
            True
        """
        return item_origin(self.data, index)

    @property
    def skip_report(self) -> SkipReport | None:
        """The wrapped dataset's report of skipped and recovered files, if it keeps one."""
        report = getattr(self.data, "skip_report", None)
        return report if isinstance(report, SkipReport) else None

    def map(self, fn: Callable[[Any], Any]) -> MapPipe:
        """A MapPipe whose item ``i`` is ``fn(self[i])``.

        Example:
            >>> MapPipe(["a"]).map(str.upper)[0]
            'A'
        """
        return _MappedMapPipe(self, fn)

    def to_iter_pipe(self) -> IterPipe:
        """An IterPipe over the items in index order (the loader reads it in its own order).

        Example:
            >>> list(MapPipe([5, 6]).to_iter_pipe())
            [5, 6]
        """
        return _MapToIter(self)


class _MappedMapPipe(MapPipe):
    def __init__(self, data: MapPipe, fn: Callable[[Any], Any]) -> None:
        super().__init__(data)
        self.fn = fn

    def __getitem__(self, index: int) -> Any:
        return self.fn(self.data[index])

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        return [self.fn(x) for x in self.data.__getitems__(indices)]  # type: ignore[union-attr]


class _MapToIter(IterPipe):
    """A map-style dataset read in index order (DataLoader reads ``dataset`` in its own)."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self.dataset)):
            yield self.dataset[i]

    def random_access(self) -> Any:
        return self.dataset
