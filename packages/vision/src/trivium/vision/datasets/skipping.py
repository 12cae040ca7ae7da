"""What the vision datasets with ``on_error="skip"`` share, and the path of a data error.

A map-style dataset cannot drop an index (the sampler has fixed the length), so
:class:`SkipsUnreadable` returns the next readable item in its place. Unreadable
items found are flagged in shared memory, so workers' findings reach the parent;
each is reported once with a :class:`~trivium.core.errors.SkippedSamplesWarning`.

Example:
    >>> import pathlib, tempfile, warnings, torch
    >>> from trivium.vision.datasets import ImageFolder
    >>> from trivium.vision.io import write_png
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "a").mkdir()
    >>> _ = (root / "a" / "bad.jpg").write_bytes(b"not a JPEG")
    >>> write_png(torch.zeros(3, 2, 2, dtype=torch.uint8), str(root / "a" / "good.png"))
    >>> ds = ImageFolder(root, on_error="skip")
    >>> with warnings.catch_warnings(record=True):
    ...     image, label = ds[0]  # bad.jpg: good.png takes its place
    >>> image.shape, ds.skipped, [pathlib.Path(p).name for p in ds.skipped_files]
    (torch.Size([3, 2, 2]), 1, ['bad.jpg'])
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

    A subclass calls :meth:`_start_skipping` in ``__init__``, defines ``__len__``,
    ``_load(index)`` (raising a ``trivium.core`` error for an unreadable item) and
    ``_item_path(index)``, returns :meth:`_get` from ``__getitem__``, and sets
    ``_item_kind`` (``"sample"``, ``"image"``).

    Example:
        >>> from trivium.core.errors import DecodeError
        >>> class Evens(SkipsUnreadable):
        ...     def __init__(self):
        ...         self._start_skipping("skip", 4)
        ...     def __len__(self):
        ...         return 4
        ...     def _load(self, index):
        ...         if index % 2:
        ...             raise DecodeError("odd", path=f"{index}.jpg")
        ...         return index
        ...     def _item_path(self, index):
        ...         return f"{index}.jpg"
        ...     def __getitem__(self, index):
        ...         return self._get(index)
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ds = Evens()
        ...     [ds[i] for i in range(4)], ds.skipped, ds.skipped_files
        ([0, 2, 2, 0], 2, ['1.jpg', '3.jpg'])
    """

    _item_kind = "sample"
    on_error: str
    root: Any

    def _start_skipping(self, on_error: str, count: int) -> None:
        check_on_error(on_error)
        self.on_error = on_error
        # One flag per item in shared memory: workers' findings reach the parent.
        self._bad = torch.zeros(count, dtype=torch.uint8)
        if on_error == "skip":
            self._bad.share_memory_()

    def __len__(self) -> int:
        raise NotImplementedError

    def _load(self, index: int) -> Any:
        raise NotImplementedError

    def _item_path(self, index: int) -> str:
        raise NotImplementedError

    def _get(self, index: int) -> Any:
        """Item ``index``, or with ``on_error="skip"`` the next readable one."""
        if self.on_error == "raise":
            return self._load(index)
        count = len(self)
        index = operator.index(index)
        if not -count <= index < count:
            raise IndexError(f"index {index} is out of range for {count} {self._item_kind}s")
        first_bad = None
        for step in range(count):
            j = (index + step) % count
            try:
                return self._load(j)
            except TriviumError as e:
                self._note_bad(j, e)
                first_bad = e if first_bad is None else first_bad
        raise DatasetError(
            f"on_error='skip': none of the {count} {self._item_kind}s could be read "
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
            f"{error} (on_error='skip': the next readable {self._item_kind} takes its place)",
            SkippedSamplesWarning,
            stacklevel=4,
        )

    @property
    def skipped(self) -> int:
        """How many distinct unreadable items ``on_error="skip"`` has found (in any worker).

        Example:
            >>> import pathlib, tempfile
            >>> from trivium.vision.datasets import ImageFolder
            >>> root = pathlib.Path(tempfile.mkdtemp())
            >>> (root / "a").mkdir()
            >>> ImageFolder(root, allow_empty=True, on_error="skip").skipped
            0
        """
        return int(self._bad.sum())

    @property
    def skipped_files(self) -> list[str]:
        """The unreadable files ``on_error="skip"`` has found (in any worker), in item order.

        Example:
            >>> import pathlib, tempfile
            >>> from trivium.vision.datasets import ImageFolder
            >>> root = pathlib.Path(tempfile.mkdtemp())
            >>> (root / "a").mkdir()
            >>> ImageFolder(root, allow_empty=True, on_error="skip").skipped_files
            []
        """
        return [self._item_path(i) for i in self._bad.nonzero().flatten().tolist()]
