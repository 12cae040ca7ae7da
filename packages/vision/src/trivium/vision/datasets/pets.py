"""OxfordIIITPet: ``annotations/<split>.txt`` over ``images/*.jpg`` and ``annotations/trimaps``.

Example:
    >>> OxfordIIITPet._VALID_TARGET_TYPES
    ('category', 'binary-category', 'segmentation')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trivium.core.errors import DatasetError
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    download_resource,
    pil_loader,
    pil_open,
    require_file,
    require_folder,
    verify_str_arg,
)

__all__ = ["OxfordIIITPet"]


class OxfordIIITPet(ImageFileDataset):
    """Oxford-IIIT Pet: ``(PIL RGB image, target)``, as torchvision's ``OxfordIIITPet``.

    ``target_types`` picks the target, or a tuple of several: ``"category"`` (the
    breed, 0-36), ``"binary-category"`` (0 cat, 1 dog), ``"segmentation"`` (the
    trimap PNG as stored, opened by Pillow as torchvision opens it); none gives None.
    ``download=True`` fetches and extracts the images and annotations archives.

    Args:
        root: the folder holding ``oxford-iiit-pet``.
        split: ``"trainval"`` or ``"test"``.
        target_types: one of the types above, or a sequence of them.
        transforms: applied to ``(image, target)``; not with the two below.
        transform: applied to the image.
        target_transform: applied to the target.
        download: fetch the archives when the folders are not there.
        loader: reads an image file (keyword only; :func:`pil_loader`).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> OxfordIIITPet(tempfile.mkdtemp(), target_types="breed")
        Traceback (most recent call last):
        ...
        ValueError: target_types must be one of 'category', 'binary-category', \
'segmentation'; got 'breed'
    """

    _RESOURCES = (
        (
            "https://www.robots.ox.ac.uk/~vgg/data/pets/data/images.tar.gz",
            "5c4f3ee8e5d25df40f4fd59a7f44e54c",
        ),
        (
            "https://www.robots.ox.ac.uk/~vgg/data/pets/data/annotations.tar.gz",
            "95a8c909bbe2e81eed6a22bccdf3f68f",
        ),
    )
    _VALID_TARGET_TYPES = ("category", "binary-category", "segmentation")

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "trainval",
        target_types: Sequence[str] | str = "category",
        transforms: Callable | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        *,
        loader: Callable[[Any], Any] = pil_loader,
        on_error: str = "raise",
    ) -> None:
        self._split = verify_str_arg(split, "split", ("trainval", "test"))
        if isinstance(target_types, str):
            target_types = [target_types]
        self._target_types = [
            verify_str_arg(t, "target_types", self._VALID_TARGET_TYPES) for t in target_types
        ]
        super().__init__(root, transforms, transform, target_transform)
        self._base_folder = Path(self.root) / "oxford-iiit-pet"
        self._images_folder = self._base_folder / "images"
        self._anns_folder = self._base_folder / "annotations"
        self._segs_folder = self._anns_folder / "trimaps"
        if download and not (self._images_folder.is_dir() and self._anns_folder.is_dir()):
            for url, md5 in self._RESOURCES:
                download_resource(url, self._base_folder, None, md5, extract_to=self._base_folder)
        require_folder(self._images_folder)
        require_folder(self._anns_folder)
        image_ids = self._read_split(require_file(self._anns_folder / f"{self._split}.txt"))
        self.bin_classes = ["Cat", "Dog"]
        breeds = sorted(
            {
                (image_id.rsplit("_", 1)[0], label)
                for image_id, label in zip(image_ids, self._labels, strict=True)
            },
            key=lambda pair: pair[1],
        )
        self.classes = [" ".join(part.title() for part in raw.split("_")) for raw, _ in breeds]
        self.bin_class_to_idx = {name: i for i, name in enumerate(self.bin_classes)}
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self._images = [self._images_folder / f"{image_id}.jpg" for image_id in image_ids]
        self._segs = [self._segs_folder / f"{image_id}.png" for image_id in image_ids]
        self._image_files = self._images
        self._ready(loader, on_error)

    def _read_split(self, path: str) -> list[str]:
        image_ids: list[str] = []
        self._labels, self._bin_labels = [], []
        with open(path) as f:
            for number, line in enumerate(f, 1):
                try:
                    image_id, label, bin_label, _ = line.strip().split()
                    self._labels.append(int(label) - 1)
                    self._bin_labels.append(int(bin_label) - 1)
                except ValueError:
                    raise DatasetError(
                        f"line {number}: expected 'image_id class species breed', got {line!r}",
                        path=path,
                    ) from None
                image_ids.append(image_id)
        return image_ids

    def _target(self, index: int) -> Any:
        target: list[Any] = []
        for target_type in self._target_types:
            if target_type == "category":
                target.append(self._labels[index])
            elif target_type == "binary-category":
                target.append(self._bin_labels[index])
            else:
                target.append(pil_open(self._segs[index]))
        if not target:
            return None
        return target[0] if len(target) == 1 else tuple(target)
