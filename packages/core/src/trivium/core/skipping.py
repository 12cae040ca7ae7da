"""``on_error="skip"`` for map-style datasets, and the path of a data error.

A map-style dataset cannot drop an index (the sampler has fixed the length), so
:class:`SkipsUnreadable` returns the next readable item in its place. Unreadable
items found are flagged in shared memory, so the findings of fork DataLoader
workers reach the parent; each is reported once with a
:class:`~trivium.core.errors.SkippedSamplesWarning`. vision's ``ImageFolder``,
``DatasetFolder`` and ``CocoDetection`` and audio's ``AudioFolder`` are built on it.

Example:
    >>> import warnings
    >>> from trivium.core.errors import DecodeError
    >>> class Files(SkipsUnreadable):
    ...     def __init__(self, names, on_error="raise"):
    ...         self.names = names
    ...         self.start_skipping(on_error, len(names))
    ...     def __len__(self):
    ...         return len(self.names)
    ...     def load_item(self, index):
    ...         if self.names[index].startswith("bad"):
    ...             raise DecodeError("damaged", path=self.names[index])
    ...         return self.names[index]
    ...     def item_path(self, index):
    ...         return self.names[index]
    ...     def __getitem__(self, index):
    ...         return self.get_item(index)
    >>> ds = Files(["a.png", "bad.png", "c.png"], on_error="skip")
    >>> with warnings.catch_warnings(record=True):
    ...     ds[1], ds.skipped, ds.skipped_files  # c.png takes bad.png's place
    ('c.png', 1, ['bad.png'])
"""

from __future__ import annotations

import operator
import os
import warnings
from typing import Any

import torch

from trivium.core.errors import DatasetError, PathNotFoundError, SkippedSamplesWarning, TriviumError

__all__ = ["SkipsUnreadable", "check_on_error", "with_path"]


def check_on_error(on_error: str) -> None:
    """``ValueError`` unless ``on_error`` is ``"raise"`` or ``"skip"``.

    Example:
        >>> check_on_error("ignore")
        Traceback (most recent call last):
        ...
        ValueError: on_error must be 'raise' or 'skip', got 'ignore'
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")


def with_path(error: TriviumError | OSError, path: str | os.PathLike[str]) -> TriviumError:
    """``error`` as a ``trivium.core`` error naming ``path`` (kept if it names one already).

    Example:
        >>> str(with_path(FileNotFoundError(2, "gone"), "a/1.jpg"))
        'a/1.jpg: no such file or directory'
    """
    if isinstance(error, TriviumError):
        if error.path is not None:
            return error
        try:
            return type(error)(error.reason, path=path)
        except TypeError:  # a subclass with its own constructor
            return DatasetError(error.reason, path=path)
    if isinstance(error, FileNotFoundError):
        return PathNotFoundError(path=path)
    return DatasetError(f"cannot load the file: {error.strerror or error}", path=path)


class SkipsUnreadable:
    """``on_error`` for a map-style dataset: ``"raise"``, or ``"skip"`` to the next readable item.

    A subclass calls :meth:`start_skipping` in ``__init__``, defines ``__len__``,
    :meth:`load_item` (raising a ``trivium.core`` error for an unreadable item; wrap
    the loader's errors with :func:`with_path`) and :meth:`item_path`, returns
    :meth:`get_item` from ``__getitem__``, and may set ``item_kind`` (the word the
    messages use, ``"sample"`` by default). ``skipped_files`` holds the paths as
    :meth:`item_path` gives them.

    Example:
        >>> from trivium.core.errors import DecodeError
        >>> class Evens(SkipsUnreadable):
        ...     item_kind = "image"
        ...     def __init__(self):
        ...         self.start_skipping("skip", 4)
        ...     def __len__(self):
        ...         return 4
        ...     def load_item(self, index):
        ...         if index % 2:
        ...             raise DecodeError("odd", path=f"{index}.jpg")
        ...         return index
        ...     def item_path(self, index):
        ...         return f"{index}.jpg"
        ...     def __getitem__(self, index):
        ...         return self.get_item(index)
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ds = Evens()
        ...     [ds[i] for i in range(4)], ds.skipped, ds.skipped_files
        ([0, 2, 2, 0], 2, ['1.jpg', '3.jpg'])
    """

    item_kind = "sample"
    on_error: str
    root: Any

    def start_skipping(self, on_error: str, count: int) -> None:
        """Check ``on_error`` and make the flags of ``count`` items (shared memory for ``"skip"``).

        Example:
            >>> ds = SkipsUnreadable()
            >>> ds.start_skipping("skip", 3)
            >>> ds.on_error, ds.skipped
            ('skip', 0)
        """
        check_on_error(on_error)
        self.on_error = on_error
        # One flag per item in shared memory: workers' findings reach the parent.
        self._bad = torch.zeros(count, dtype=torch.uint8)
        if on_error == "skip":
            self._bad.share_memory_()

    def __len__(self) -> int:
        raise NotImplementedError

    def load_item(self, index: int) -> Any:
        """Item ``index``, or a ``trivium.core`` error naming its file (subclasses implement it).

        Example:
            >>> SkipsUnreadable().load_item(0)
            Traceback (most recent call last):
            ...
            NotImplementedError: SkipsUnreadable must implement load_item()
        """
        raise NotImplementedError(f"{type(self).__name__} must implement load_item()")

    def item_path(self, index: int) -> str | os.PathLike[str]:
        """The file of item ``index`` (subclasses implement it).

        Example:
            >>> SkipsUnreadable().item_path(0)
            Traceback (most recent call last):
            ...
            NotImplementedError: SkipsUnreadable must implement item_path()
        """
        raise NotImplementedError(f"{type(self).__name__} must implement item_path()")

    def get_item(self, index: int) -> Any:
        """Item ``index``, or with ``on_error="skip"`` the next readable one (wrapping around).

        Example:
            >>> class One(SkipsUnreadable):
            ...     def __len__(self):
            ...         return 1
            ...     def load_item(self, index):
            ...         return "item"
            >>> ds = One()
            >>> ds.start_skipping("skip", 1)
            >>> ds.get_item(-1)
            'item'
        """
        if self.on_error == "raise":
            return self.load_item(index)
        count = len(self)
        index = operator.index(index)
        if not -count <= index < count:
            raise IndexError(f"index {index} is out of range for {count} {self.item_kind}s")
        first_bad = None
        for step in range(count):
            j = (index + step) % count
            try:
                return self.load_item(j)
            except TriviumError as e:
                self._note_bad(j, e)
                first_bad = e if first_bad is None else first_bad
        raise DatasetError(
            f"on_error='skip': none of the {count} {self.item_kind}s could be read "
            f"(the first: {first_bad})",
            path=getattr(self, "root", None),
        )

    def _note_bad(self, index: int, error: TriviumError) -> None:
        if len(self._bad) != len(self):  # items replaced after construction
            self._bad = torch.zeros(len(self), dtype=torch.uint8)
        if self._bad[index]:
            return
        self._bad[index] = 1
        warnings.warn(
            f"{error} (on_error='skip': the next readable {self.item_kind} takes its place)",
            SkippedSamplesWarning,
            stacklevel=4,  # the caller of __getitem__
        )

    @property
    def skipped(self) -> int:
        """How many distinct unreadable items ``on_error="skip"`` has found (in any worker).

        Example:
            >>> ds = SkipsUnreadable()
            >>> ds.start_skipping("skip", 2)
            >>> ds.skipped
            0
        """
        return int(self._bad.sum())

    @property
    def skipped_files(self) -> list[Any]:
        """The unreadable files ``on_error="skip"`` has found (in any worker), in item order.

        Each as :meth:`item_path` gives it (``str`` for vision's datasets, ``Path`` for
        audio's ``AudioFolder``, as their ``samples`` hold them).

        Example:
            >>> ds = SkipsUnreadable()
            >>> ds.start_skipping("skip", 2)
            >>> ds.skipped_files
            []
        """
        return [self.item_path(i) for i in self._bad.nonzero().flatten().tolist()]
