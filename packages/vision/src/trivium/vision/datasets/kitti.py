"""Kitti 2D object detection: ``Kitti/raw/<training|testing>/image_2/*.png`` and ``label_2``.

Example:
    >>> Kitti.resources
    ['data_object_image_2.zip', 'data_object_label_2.zip']
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from typing import Any, ClassVar

from trivium.core.errors import DatasetError, PathNotFoundError
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    download_resource,
    pil_decode,
    require_folder,
)

__all__ = ["Kitti"]


class Kitti(ImageFileDataset):
    """KITTI 2D objects: ``(PIL image, list of object dicts or None)``, as torchvision's ``Kitti``.

    Each label line becomes torchvision's dict (``type``, ``truncated``, ``occluded``,
    ``alpha``, ``bbox``, ``dimensions``, ``location``, ``rotation_y``); the test
    split has no labels (None). The images are the PNGs as stored (RGB), decoded by
    ``trivium.vision.io``. Samples are in sorted file order (torchvision takes the
    folder's listing order, which differs between file systems). ``download=True``
    fetches the two zips.

    Args:
        root: the folder holding ``Kitti/raw``.
        train: the training images and labels, else the test images.
        transform: applied to the image.
        target_transform: applied to the target.
        transforms: applied to ``(image, target)``; not with the two above.
        download: fetch the zips when the folders are not there.
        loader: reads an image file (keyword only; :func:`pil_decode`).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> Kitti(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../Kitti/raw/training/image_2: no such file or \
directory; pass download=True to fetch the dataset
    """

    data_url = "https://s3.eu-central-1.amazonaws.com/avg-kitti/"
    resources: ClassVar[list[str]] = ["data_object_image_2.zip", "data_object_label_2.zip"]
    image_dir_name = "image_2"
    labels_dir_name = "label_2"

    def __init__(
        self,
        root: str | os.PathLike[str],
        train: bool = True,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        transforms: Callable | None = None,
        download: bool = False,
        *,
        loader: Callable[[Any], Any] = pil_decode,
        on_error: str = "raise",
    ) -> None:
        super().__init__(root, transforms, transform, target_transform)
        self.train = train
        self._location = "training" if train else "testing"
        if download:
            self.download()
        image_dir = require_folder(
            os.path.join(self._raw_folder, self._location, self.image_dir_name)
        )
        labels_dir = os.path.join(self._raw_folder, self._location, self.labels_dir_name)
        if train:
            require_folder(labels_dir)
        self.images = [os.path.join(image_dir, name) for name in sorted(os.listdir(image_dir))]
        self.targets = (
            [
                os.path.join(labels_dir, f"{os.path.basename(p).split('.')[0]}.txt")
                for p in self.images
            ]
            if train
            else []
        )
        self._image_files = self.images
        self._ready(loader, on_error)

    @property
    def _raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    def _target(self, index: int) -> Any:
        return self._parse_target(index) if self.train else None

    def _parse_target(self, index: int) -> list[dict[str, Any]]:
        path = self.targets[index]
        target = []
        try:
            with open(path, newline="") as f:
                for line in csv.reader(f, delimiter=" "):
                    target.append(
                        {
                            "type": line[0],
                            "truncated": float(line[1]),
                            "occluded": int(line[2]),
                            "alpha": float(line[3]),
                            "bbox": [float(x) for x in line[4:8]],
                            "dimensions": [float(x) for x in line[8:11]],
                            "location": [float(x) for x in line[11:14]],
                            "rotation_y": float(line[14]),
                        }
                    )
        except FileNotFoundError:
            raise PathNotFoundError(path=path) from None
        except (IndexError, ValueError) as e:
            raise DatasetError(f"not a KITTI label line: {e}", path=path) from None
        return target

    def download(self) -> None:
        """Fetch and extract the image and label zips into ``Kitti/raw`` unless they are there.

        Example:
            >>> Kitti.data_url
            'https://s3.eu-central-1.amazonaws.com/avg-kitti/'
        """
        folders = [self.image_dir_name] + ([self.labels_dir_name] if self.train else [])
        if all(os.path.isdir(os.path.join(self._raw_folder, self._location, f)) for f in folders):
            return
        for name in self.resources:
            download_resource(
                f"{self.data_url}{name}", self._raw_folder, name, extract_to=self._raw_folder
            )
