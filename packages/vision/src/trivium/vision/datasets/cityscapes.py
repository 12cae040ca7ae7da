"""Cityscapes: ``leftImg8bit/<split>/<city>/`` with ``gtFine`` / ``gtCoarse`` targets.

Example:
    >>> Cityscapes.classes[7].name, Cityscapes.classes[7].train_id
    ('road', 0)
"""

from __future__ import annotations

import json
import os
from collections import namedtuple
from collections.abc import Callable
from typing import Any, ClassVar

from trivium.core.download import extract_archive
from trivium.core.errors import NO_SUCH_PATH, DatasetError, PathNotFoundError
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    pil_loader,
    pil_open,
    verify_str_arg,
)

__all__ = ["Cityscapes"]

_SUFFIXES = {
    "instance": "instanceIds.png",
    "semantic": "labelIds.png",
    "color": "color.png",
    "polygon": "polygons.json",
}


class Cityscapes(ImageFileDataset):
    """Cityscapes: ``(PIL RGB image, target)``, as torchvision's ``Cityscapes``.

    ``target_type``: ``"instance"``, ``"semantic"``, ``"color"`` (the PNGs as
    stored, opened by Pillow as torchvision opens them), ``"polygon"`` (the JSON
    dict), a list of them a tuple. When the split's folders are missing but
    ``leftImg8bit_trainvaltest.zip`` (``leftImg8bit_trainextra.zip``) and
    ``gtFine_trainvaltest.zip`` (``gtCoarse.zip``) are in ``root``, they are
    extracted, as torchvision does; Cityscapes cannot be downloaded without an
    account. Samples are in sorted city and file order (torchvision takes the
    folders' listing order, which differs between file systems).

    Args:
        root: the folder holding ``leftImg8bit`` and ``gtFine`` / ``gtCoarse``.
        split: ``"train"``, ``"test"``, ``"val"`` (fine) or ``"train"``,
            ``"train_extra"``, ``"val"`` (coarse).
        mode: ``"fine"`` or ``"coarse"``.
        target_type: what the target holds (see above).
        transform: applied to the image.
        target_transform: applied to the target.
        transforms: applied to ``(image, target)``; not with the two above.
        loader: reads an image file (keyword only; :func:`pil_loader`).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> Cityscapes(tempfile.mkdtemp(), split="train_extra")
        Traceback (most recent call last):
        ...
        ValueError: split must be one of 'train', 'test', 'val'; got 'train_extra'
    """

    CityscapesClass = namedtuple(
        "CityscapesClass",
        [
            "name",
            "id",
            "train_id",
            "category",
            "category_id",
            "has_instances",
            "ignore_in_eval",
            "color",
        ],
    )
    classes: ClassVar[list[Any]] = [
        CityscapesClass("unlabeled", 0, 255, "void", 0, False, True, (0, 0, 0)),
        CityscapesClass("ego vehicle", 1, 255, "void", 0, False, True, (0, 0, 0)),
        CityscapesClass("rectification border", 2, 255, "void", 0, False, True, (0, 0, 0)),
        CityscapesClass("out of roi", 3, 255, "void", 0, False, True, (0, 0, 0)),
        CityscapesClass("static", 4, 255, "void", 0, False, True, (0, 0, 0)),
        CityscapesClass("dynamic", 5, 255, "void", 0, False, True, (111, 74, 0)),
        CityscapesClass("ground", 6, 255, "void", 0, False, True, (81, 0, 81)),
        CityscapesClass("road", 7, 0, "flat", 1, False, False, (128, 64, 128)),
        CityscapesClass("sidewalk", 8, 1, "flat", 1, False, False, (244, 35, 232)),
        CityscapesClass("parking", 9, 255, "flat", 1, False, True, (250, 170, 160)),
        CityscapesClass("rail track", 10, 255, "flat", 1, False, True, (230, 150, 140)),
        CityscapesClass("building", 11, 2, "construction", 2, False, False, (70, 70, 70)),
        CityscapesClass("wall", 12, 3, "construction", 2, False, False, (102, 102, 156)),
        CityscapesClass("fence", 13, 4, "construction", 2, False, False, (190, 153, 153)),
        CityscapesClass("guard rail", 14, 255, "construction", 2, False, True, (180, 165, 180)),
        CityscapesClass("bridge", 15, 255, "construction", 2, False, True, (150, 100, 100)),
        CityscapesClass("tunnel", 16, 255, "construction", 2, False, True, (150, 120, 90)),
        CityscapesClass("pole", 17, 5, "object", 3, False, False, (153, 153, 153)),
        CityscapesClass("polegroup", 18, 255, "object", 3, False, True, (153, 153, 153)),
        CityscapesClass("traffic light", 19, 6, "object", 3, False, False, (250, 170, 30)),
        CityscapesClass("traffic sign", 20, 7, "object", 3, False, False, (220, 220, 0)),
        CityscapesClass("vegetation", 21, 8, "nature", 4, False, False, (107, 142, 35)),
        CityscapesClass("terrain", 22, 9, "nature", 4, False, False, (152, 251, 152)),
        CityscapesClass("sky", 23, 10, "sky", 5, False, False, (70, 130, 180)),
        CityscapesClass("person", 24, 11, "human", 6, True, False, (220, 20, 60)),
        CityscapesClass("rider", 25, 12, "human", 6, True, False, (255, 0, 0)),
        CityscapesClass("car", 26, 13, "vehicle", 7, True, False, (0, 0, 142)),
        CityscapesClass("truck", 27, 14, "vehicle", 7, True, False, (0, 0, 70)),
        CityscapesClass("bus", 28, 15, "vehicle", 7, True, False, (0, 60, 100)),
        CityscapesClass("caravan", 29, 255, "vehicle", 7, True, True, (0, 0, 90)),
        CityscapesClass("trailer", 30, 255, "vehicle", 7, True, True, (0, 0, 110)),
        CityscapesClass("train", 31, 16, "vehicle", 7, True, False, (0, 80, 100)),
        CityscapesClass("motorcycle", 32, 17, "vehicle", 7, True, False, (0, 0, 230)),
        CityscapesClass("bicycle", 33, 18, "vehicle", 7, True, False, (119, 11, 32)),
        CityscapesClass("license plate", -1, -1, "vehicle", 7, False, True, (0, 0, 142)),
    ]

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "train",
        mode: str = "fine",
        target_type: list[str] | str = "instance",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        transforms: Callable | None = None,
        *,
        loader: Callable[[Any], Any] = pil_loader,
        on_error: str = "raise",
    ) -> None:
        super().__init__(root, transforms, transform, target_transform)
        verify_str_arg(mode, "mode", ("fine", "coarse"))
        self.mode = "gtFine" if mode == "fine" else "gtCoarse"
        splits = ("train", "test", "val") if mode == "fine" else ("train", "train_extra", "val")
        self.split = verify_str_arg(split, "split", splits)
        self.target_type = target_type if isinstance(target_type, list) else [target_type]
        for t in self.target_type:
            verify_str_arg(t, "target_type", tuple(_SUFFIXES))
        self.images_dir = os.path.join(self.root, "leftImg8bit", split)
        self.targets_dir = os.path.join(self.root, self.mode, split)
        if not (os.path.isdir(self.images_dir) and os.path.isdir(self.targets_dir)):
            self._extract_zips()
        self.images: list[str] = []
        self.targets: list[list[str]] = []
        for city in sorted(os.listdir(self.images_dir)):
            for name in sorted(os.listdir(os.path.join(self.images_dir, city))):
                stem = name.split("_leftImg8bit")[0]
                self.images.append(os.path.join(self.images_dir, city, name))
                self.targets.append(
                    [
                        os.path.join(self.targets_dir, city, f"{stem}_{self.mode}_{_SUFFIXES[t]}")
                        for t in self.target_type
                    ]
                )
        self._image_files = self.images
        self._ready(loader, on_error)

    def _extract_zips(self) -> None:
        images = (
            "leftImg8bit_trainextra.zip"
            if self.split == "train_extra"
            else "leftImg8bit_trainvaltest.zip"
        )
        targets = "gtFine_trainvaltest.zip" if self.mode == "gtFine" else "gtCoarse.zip"
        for name in (images, targets):
            path = os.path.join(self.root, name)
            if not os.path.isfile(path):
                missing = (
                    self.images_dir if not os.path.isdir(self.images_dir) else self.targets_dir
                )
                raise PathNotFoundError(
                    f"{NO_SUCH_PATH}; place the split's folders, or {images} and {targets}, in "
                    f"{self.root} (Cityscapes needs an account to download)",
                    path=missing,
                )
        for name in (images, targets):
            extract_archive(os.path.join(self.root, name), self.root)

    def _target(self, index: int) -> Any:
        targets = []
        for t, path in zip(self.target_type, self.targets[index], strict=True):
            targets.append(self._load_json(path) if t == "polygon" else pil_open(path))
        return tuple(targets) if len(targets) > 1 else targets[0]

    def _load_json(self, path: str) -> dict[str, Any]:
        try:
            with open(path) as f:
                return json.load(f)
        except FileNotFoundError:
            raise PathNotFoundError(path=path) from None
        except ValueError as e:
            raise DatasetError(f"not a polygons JSON file: {e}", path=path) from None

    def extra_repr(self) -> str:
        return f"Split: {self.split}\nMode: {self.mode}\nType: {self.target_type}"
