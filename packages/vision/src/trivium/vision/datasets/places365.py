"""Places365: the devkit's category and file lists over the split's image folder.

Example:
    >>> Places365._SPLITS
    ('train-standard', 'train-challenge', 'val', 'test')
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import urljoin

from trivium.core.errors import DatasetError
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    check_integrity,
    download_resource,
    pil_loader,
    require_file,
    verify_str_arg,
)

__all__ = ["Places365"]


class Places365(ImageFileDataset):
    """Places365: ``(PIL RGB image, class index or None)``, as torchvision's ``Places365``.

    ``categories_places365.txt`` and ``places365_<split>.txt`` (checked against
    torchvision's MD5) list the classes and the images; the test split has no
    labels (None). ``small`` picks the 256x256 images. ``download=True`` fetches the
    devkit (the lists) and the split's images archive from MIT.

    Args:
        root: the dataset folder.
        split: ``"train-standard"``, ``"train-challenge"``, ``"val"`` or ``"test"``.
        small: the 256x256 images instead of the large ones.
        download: fetch the lists and the images when they are not there.
        transform: applied to the image.
        target_transform: applied to the label.
        loader: reads an image file (:func:`pil_loader`: decoded by ``trivium.vision.io``).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> Places365(tempfile.mkdtemp(), "val")
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../categories_places365.txt: no such file or \
directory; pass download=True to fetch the dataset
    """

    _SPLITS = ("train-standard", "train-challenge", "val", "test")
    _BASE_URL = "http://data.csail.mit.edu/places/places365/"
    _DEVKIT_META: ClassVar[dict[str, tuple[str, str]]] = {
        "standard": ("filelist_places365-standard.tar", "35a0585fee1fa656440f3ab298f8479c"),
        "challenge": ("filelist_places365-challenge.tar", "70a8307e459c3de41690a7c76c931734"),
    }
    _CATEGORIES_META = ("categories_places365.txt", "06c963b85866bd0649f97cb43dd16673")
    _FILE_LIST_META: ClassVar[dict[str, tuple[str, str]]] = {
        "train-standard": ("places365_train_standard.txt", "30f37515461640559006b8329efbed1a"),
        "train-challenge": ("places365_train_challenge.txt", "b2931dc997b8c33c27e7329c073a6b57"),
        "val": ("places365_val.txt", "e9f2fd57bfd9d07630173f4e8708e4b1"),
        "test": ("places365_test.txt", "2fce8233fe493576d724142e45d93653"),
    }
    _IMAGES_META: ClassVar[dict[tuple[str, bool], tuple[str, str]]] = {
        ("train-standard", False): (
            "train_large_places365standard.tar",
            "67e186b496a84c929568076ed01a8aa1",
        ),
        ("train-challenge", False): (
            "train_large_places365challenge.tar",
            "605f18e68e510c82b958664ea134545f",
        ),
        ("val", False): ("val_large.tar", "9b71c4993ad89d2d8bcbdc4aef38042f"),
        ("test", False): ("test_large.tar", "41a4b6b724b1d2cd862fb3871ed59913"),
        ("train-standard", True): (
            "train_256_places365standard.tar",
            "53ca1c756c3d1e7809517cc47c5561c5",
        ),
        ("train-challenge", True): (
            "train_256_places365challenge.tar",
            "741915038a5e3471ec7332404dfb64ef",
        ),
        ("val", True): ("val_256.tar", "e27b17d8d44f4af9a78502beb927f808"),
        ("test", True): ("test_256.tar", "f532f6ad7b582262a2ec8009075e186b"),
    }

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "train-standard",
        small: bool = False,
        download: bool = False,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        loader: Callable[[Any], Any] = pil_loader,
        *,
        on_error: str = "raise",
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", self._SPLITS)
        self.small = small
        self.classes, self.class_to_idx = self.load_categories(download)
        self.imgs, self.targets = self.load_file_list(download)
        if download:
            self.download_images()
        self._image_files = [path for path, _ in self.imgs]
        self._labels = self.targets
        self._ready(loader, on_error)

    @property
    def variant(self) -> str:
        """``"challenge"`` or ``"standard"``, the split's file list family.

        Example:
            >>> ds = Places365.__new__(Places365)
            >>> ds.split = "train-challenge"
            >>> ds.variant
            'challenge'
        """
        return "challenge" if "challenge" in self.split else "standard"

    @property
    def images_dir(self) -> str:
        """The folder of the split's images (``data_<size>_<variant>`` or ``<split>_<size>``).

        Example:
            >>> ds = Places365.__new__(Places365)
            >>> ds.root, ds.split, ds.small = "data", "train-standard", True
            >>> ds.images_dir
            'data/data_256_standard'
        """
        size = "256" if self.small else "large"
        folder = (
            f"data_{size}_{self.variant}"
            if self.split.startswith("train")
            else f"{self.split}_{size}"
        )
        return os.path.join(self.root, folder)

    def _list(self, meta: tuple[str, str], download: bool) -> str:
        file, md5 = meta
        path = os.path.join(self.root, file)
        if download and not check_integrity(path, md5):
            self.download_devkit()
        return require_file(path, md5)

    def load_categories(self, download: bool = True) -> tuple[list[str], dict[str, int]]:
        """The sorted class names and ``class_to_idx`` from ``categories_places365.txt``.

        Example:
            >>> Places365._CATEGORIES_META[0]
            'categories_places365.txt'
        """
        path = self._list(self._CATEGORIES_META, download)
        with open(path) as f:
            try:
                class_to_idx = {name: int(idx) for name, idx in (line.split() for line in f)}
            except ValueError as e:
                raise DatasetError(f"expected 'name index' lines: {e}", path=path) from None
        return sorted(class_to_idx), class_to_idx

    def load_file_list(
        self, download: bool = True
    ) -> tuple[list[tuple[str, int | None]], list[int | None]]:
        """``imgs`` (``(path, label or None)``) and ``targets`` from the split's file list.

        Example:
            >>> Places365._FILE_LIST_META["val"][0]
            'places365_val.txt'
        """
        path = self._list(self._FILE_LIST_META[self.split], download)
        images = []
        with open(path) as f:
            for number, line in enumerate(f, 1):
                parts = line.split()
                if not 1 <= len(parts) <= 2:
                    raise DatasetError(
                        f"line {number}: expected 'image [label]', got {line!r}", path=path
                    )
                try:
                    label = int(parts[1]) if len(parts) == 2 else None
                except ValueError:
                    raise DatasetError(
                        f"line {number}: label {parts[1]!r} is not an int", path=path
                    ) from None
                image = os.path.join(self.images_dir, parts[0].lstrip("/").replace("/", os.sep))
                images.append((image, label))
        return images, [label for _, label in images]

    def download_devkit(self) -> None:
        """Fetch and extract the variant's file lists into ``root``.

        Example:
            >>> Places365._DEVKIT_META["standard"][0]
            'filelist_places365-standard.tar'
        """
        file, md5 = self._DEVKIT_META[self.variant]
        download_resource(urljoin(self._BASE_URL, file), self.root, file, md5, extract_to=self.root)

    def download_images(self) -> None:
        """Fetch and extract the split's images unless their folder is there.

        Example:
            >>> Places365._IMAGES_META[("val", True)][0]
            'val_256.tar'
        """
        if os.path.exists(self.images_dir):
            return
        file, md5 = self._IMAGES_META[(self.split, self.small)]
        download_resource(urljoin(self._BASE_URL, file), self.root, file, md5, extract_to=self.root)
        if self.split.startswith("train"):
            os.rename(self.images_dir.rsplit("_", 1)[0], self.images_dir)

    def extra_repr(self) -> str:
        return f"Split: {self.split}\nSmall: {self.small}"
