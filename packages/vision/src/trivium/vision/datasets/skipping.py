"""``on_error="skip"`` for vision's datasets: :mod:`trivium.core.skipping`.

``check_on_error``, ``with_path`` and the base of :class:`SkipsUnreadable` live in
:mod:`trivium.core.skipping` (shared with audio's ``AudioFolder``); build new
datasets on ``trivium.core.skipping.SkipsUnreadable`` and its public hooks.

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

import os
from typing import Any

from trivium.core import skipping
from trivium.core.skipping import check_on_error, with_path

__all__ = ["SkipsUnreadable", "check_on_error", "with_path"]


class SkipsUnreadable(skipping.SkipsUnreadable):
    """:class:`trivium.core.skipping.SkipsUnreadable` with its hooks under vision's own names.

    ``_start_skipping`` and ``_get`` are ``start_skipping`` and ``get_item``; a
    subclass defines ``_load``, ``_item_path`` and ``_item_kind`` in place of
    ``load_item``, ``item_path`` and ``item_kind``.

    Example:
        >>> from trivium.core.skipping import SkipsUnreadable as CoreSkipsUnreadable
        >>> from trivium.vision.datasets import CocoDetection, ImageFolder
        >>> issubclass(ImageFolder, CoreSkipsUnreadable), CocoDetection.item_kind
        (True, 'image')
    """

    _start_skipping = skipping.SkipsUnreadable.start_skipping
    _get = skipping.SkipsUnreadable.get_item  # no extra frame: warnings point at the caller

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_item_kind" in vars(cls):  # a subclass that sets item_kind itself keeps it
            cls.item_kind = cls._item_kind

    def load_item(self, index: int) -> Any:
        """Item ``index`` (``_load``)."""
        return self._load(index)

    def item_path(self, index: int) -> str | os.PathLike[str]:
        """The file of item ``index`` (``_item_path``)."""
        return self._item_path(index)

    def _load(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement _load()")

    def _item_path(self, index: int) -> str | os.PathLike[str]:
        raise NotImplementedError(f"{type(self).__name__} must implement _item_path()")
