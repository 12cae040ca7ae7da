"""DTD (Describable Textures): ``labels/<split><partition>.txt`` over ``images/<class>/*.jpg``.

Example:
    >>> DTD._URL
    'https://www.robots.ox.ac.uk/~vgg/data/dtd/download/dtd-r1.0.1.tar.gz'
"""

from __future__ import annotations

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

__all__ = ["DTD"]


class DTD(ImageFileDataset):
    """Describable Textures: ``(PIL RGB image, class index)``, as torchvision's ``DTD``.

    Reads ``root/dtd/dtd/labels/<split><partition>.txt`` (lines ``class/name.jpg``)
    over ``root/dtd/dtd/images``; classes are the sorted class names of the file.
    ``download=True`` fetches and extracts torchvision's archive.

    Args:
        root: the folder holding ``dtd``.
        split: ``"train"``, ``"val"`` or ``"test"``.
        partition: which of the 10 official splits, 1 to 10.
        transform: applied to the image.
        target_transform: applied to the label.
        download: fetch the archive when the folder is not there.
        loader: reads an image file (:func:`pil_loader`: decoded by ``trivium.vision.io``).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> DTD(tempfile.mkdtemp(), partition=11)
        Traceback (most recent call last):
        ...
        ValueError: partition must be an int from 1 to 10, got 11
    """

    _URL = "https://www.robots.ox.ac.uk/~vgg/data/dtd/download/dtd-r1.0.1.tar.gz"
    _MD5 = "fff73e5086ae6bdbea199a49dfb8a4c1"

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "train",
        partition: int = 1,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[Any], Any] = pil_loader,
        *,
        on_error: str = "raise",
    ) -> None:
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        if isinstance(partition, bool) or partition not in range(1, 11):
            raise ValueError(f"partition must be an int from 1 to 10, got {partition!r}")
        self._partition = partition
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._base_folder = Path(self.root) / type(self).__name__.lower()
        self._data_folder = self._base_folder / "dtd"
        self._meta_folder = self._data_folder / "labels"
        self._images_folder = self._data_folder / "images"
        if download and not self._data_folder.is_dir():
            download_resource(
                self._URL, self._base_folder, None, self._MD5, extract_to=self._base_folder
            )
        require_folder(self._data_folder)
        path = require_file(
            self._meta_folder / f"{self._split}{self._partition}.txt", can_download=False
        )
        self._image_files, classes = [], []
        with open(path) as f:
            for number, line in enumerate(f, 1):
                try:
                    cls, name = line.strip().split("/")
                except ValueError:
                    raise DatasetError(
                        f"line {number}: expected 'class/name.jpg', got {line!r}", path=path
                    ) from None
                self._image_files.append(self._images_folder.joinpath(cls, name))
                classes.append(cls)
        self.classes = sorted(set(classes))
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self._labels = [self.class_to_idx[cls] for cls in classes]
        self._ready(loader, on_error)

    def extra_repr(self) -> str:
        return f"split={self._split}, partition={self._partition}"
