"""GTSRB (German Traffic Sign Recognition): PPM images in class folders, or a test CSV.

Example:
    >>> GTSRB._URLS["test"][1][0].rsplit("/", 1)[1]
    'GTSRB_Final_Test_GT.zip'
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from trivium.core.errors import DatasetError
from trivium.vision.datasets.folder import make_dataset
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    download_resource,
    pil_loader,
    require_file,
    require_folder,
    verify_str_arg,
)

__all__ = ["GTSRB"]

_BASE_URL = "https://sid.erda.dk/public/archives/daaeac0d7ce1152aea9b61d9f1e19370/"


class GTSRB(ImageFileDataset):
    """GTSRB: ``(PIL RGB image, class id)``, as torchvision's ``GTSRB``.

    ``"train"`` lists ``root/gtsrb/GTSRB/Training/<class>/*.ppm`` (classes in sorted
    folder order); ``"test"`` reads ``root/gtsrb/GT-final_test.csv`` (``;``-separated,
    ``Filename`` and ``ClassId``) over ``GTSRB/Final_Test/Images``. ``download=True``
    fetches and extracts the split's zip files.

    Args:
        root: the folder holding ``gtsrb``.
        split: ``"train"`` or ``"test"``.
        transform: applied to the image.
        target_transform: applied to the class id.
        download: fetch the split's archives when its folder is not there.
        loader: reads an image file (keyword only; :func:`pil_loader`).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> GTSRB(tempfile.mkdtemp(), "test")
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../gtsrb/GTSRB/Final_Test/Images: no such \
file or directory; pass download=True to fetch the dataset
    """

    _URLS: ClassVar[dict[str, list[tuple[str, str]]]] = {
        "train": [(_BASE_URL + "GTSRB-Training_fixed.zip", "513f3c79a4c5141765e10e952eaa2478")],
        "test": [
            (_BASE_URL + "GTSRB_Final_Test_Images.zip", "c7e4e6327067d32654124b0fe9e82185"),
            (_BASE_URL + "GTSRB_Final_Test_GT.zip", "fe31e9c9270bbcd7b84b7f21a9d9d9e5"),
        ],
    }

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        *,
        loader: Callable[[Any], Any] = pil_loader,
        on_error: str = "raise",
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = Path(root) / "gtsrb"
        self._target_folder = (
            self._base_folder
            / "GTSRB"
            / ("Training" if self._split == "train" else "Final_Test/Images")
        )
        if download:
            self.download()
        require_folder(self._target_folder)
        if self._split == "train":
            samples = make_dataset(str(self._target_folder), extensions=(".ppm",))
        else:
            samples = self._read_csv(require_file(self._base_folder / "GT-final_test.csv"))
        self._samples = samples
        self._image_files = [path for path, _ in samples]
        self._labels = [target for _, target in samples]
        self._ready(loader, on_error)

    def _read_csv(self, path: str) -> list[tuple[str, int]]:
        with open(path, newline="") as f:
            try:
                return [
                    (str(self._target_folder / row["Filename"]), int(row["ClassId"]))
                    for row in csv.DictReader(f, delimiter=";", skipinitialspace=True)
                ]
            except (KeyError, ValueError, TypeError) as e:
                raise DatasetError(
                    f"expected ';'-separated Filename and ClassId: {e!r}", path=path
                ) from None

    def download(self) -> None:
        """Fetch and extract the split's zip files into ``gtsrb`` unless its folder is there.

        Example:
            >>> len(GTSRB._URLS["train"])
            1
        """
        if self._target_folder.is_dir():
            return
        for url, md5 in self._URLS[self._split]:
            download_resource(url, self._base_folder, None, md5, extract_to=self._base_folder)
