"""Food101: ``meta/<split>.json`` over ``images/<class>/<id>.jpg``, as torchvision reads it.

Example:
    >>> Food101._URL
    'http://data.vision.ee.ethz.ch/cvl/food-101.tar.gz'
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trivium.core.errors import DatasetError
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    download_resource,
    pil_loader,
    require_file,
    require_folder,
    verify_str_arg,
)

__all__ = ["Food101"]


class Food101(ImageFileDataset):
    """Food-101: ``(PIL RGB image, class index)``, as torchvision's ``Food101``.

    ``root/food-101/meta/<split>.json`` maps each class to its images' relative paths
    (without ``.jpg``) under ``images/``; classes are sorted. ``download=True``
    fetches and extracts torchvision's archive (5 GB).

    Args:
        root: the folder holding ``food-101``.
        split: ``"train"`` or ``"test"``.
        transform: applied to the image.
        target_transform: applied to the label.
        download: fetch the archive when the folders are not there.
        loader: reads an image file (:func:`pil_loader`: decoded by ``trivium.vision.io``).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> Food101(tempfile.mkdtemp(), "test")
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../food-101/meta: no such file or directory; \
pass download=True to fetch the dataset
    """

    _URL = "http://data.vision.ee.ethz.ch/cvl/food-101.tar.gz"
    _MD5 = "85eeb15f3717b99a5da872d97d918f87"

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[Any], Any] = pil_loader,
        *,
        on_error: str = "raise",
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = Path(self.root) / "food-101"
        self._meta_folder = self._base_folder / "meta"
        self._images_folder = self._base_folder / "images"
        if download and not self._check_exists():
            download_resource(self._URL, self.root, None, self._MD5, extract_to=self.root)
        require_folder(self._meta_folder)
        require_folder(self._images_folder)
        path = require_file(self._meta_folder / f"{split}.json", can_download=False)
        try:
            with open(path, encoding="utf-8") as f:
                metadata = json.load(f)
            self.classes = sorted(metadata)
            self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
            self._labels, self._image_files = [], []
            for name, relative_paths in metadata.items():
                self._labels += [self.class_to_idx[name]] * len(relative_paths)
                self._image_files += [
                    self._images_folder.joinpath(*f"{p}.jpg".split("/")) for p in relative_paths
                ]
        except (ValueError, TypeError, AttributeError) as e:
            raise DatasetError(f"not a class -> image list mapping: {e}", path=path) from None
        self._ready(loader, on_error)

    def extra_repr(self) -> str:
        return f"split={self._split}"

    def _check_exists(self) -> bool:
        return self._meta_folder.is_dir() and self._images_folder.is_dir()
