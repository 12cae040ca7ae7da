"""SVHN from its MATLAB ``.mat`` files and STL10 from its binary files, as torchvision reads them.

Example:
    >>> sorted(SVHN.split_list), STL10.splits
    (['extra', 'test', 'train'], ('train', 'train+unlabeled', 'unlabeled', 'test'))
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from PIL import Image

from trivium.core.errors import DatasetError
from trivium.vision.datasets._readers import read_mat
from trivium.vision.datasets.utils import (
    VisionDataset,
    _files_intact,
    check_integrity,
    download_resource,
    require_file,
    verify_str_arg,
)

__all__ = ["STL10", "SVHN"]


class _ArrayImages(VisionDataset):
    """``(PIL image of data[i] (CHW uint8), int(labels[i]))``, transformed: SVHN's and STL10's."""

    data: np.ndarray
    labels: np.ndarray | None

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image = Image.fromarray(np.transpose(self.data[index], (1, 2, 0)))
        target = None if self.labels is None else int(self.labels[index])
        return self._transformed(image, target)

    def __len__(self) -> int:
        return len(self.data)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"


class SVHN(_ArrayImages):
    """SVHN: ``(PIL RGB 32x32 image, digit)`` from ``root/<split>_32x32.mat``, as torchvision's.

    The digit 0 is labelled 0 (the files say 10), as torchvision does. The file is
    checked against torchvision's MD5 at construction; ``download=True`` fetches it.
    Reading ``.mat`` files needs scipy.

    Args:
        root: the folder holding the ``.mat`` files.
        split: ``"train"``, ``"test"`` or ``"extra"``.
        transform: applied to the PIL image.
        target_transform: applied to the digit.
        download: fetch the split's file when it is not there.

    Example:
        >>> import tempfile
        >>> SVHN(tempfile.mkdtemp(), "test")
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../test_32x32.mat: no such file or directory; \
pass download=True to fetch the dataset
    """

    split_list: ClassVar[dict[str, list[str]]] = {
        "train": [
            "http://ufldl.stanford.edu/housenumbers/train_32x32.mat",
            "train_32x32.mat",
            "e26dedcc434d2e4c54c9b2d4a06d8373",
        ],
        "test": [
            "http://ufldl.stanford.edu/housenumbers/test_32x32.mat",
            "test_32x32.mat",
            "eb5a983be6a315427106f1b164d9cef3",
        ],
        "extra": [
            "http://ufldl.stanford.edu/housenumbers/extra_32x32.mat",
            "extra_32x32.mat",
            "a93ce644f1a588dc4d68dda5feec44a7",
        ],
    }

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", tuple(self.split_list))
        self.url, self.filename, self.file_md5 = self.split_list[split]
        if download:
            self.download()
        path = require_file(os.path.join(self.root, self.filename), self.file_md5)
        mat = read_mat(path)
        if "X" not in mat or "y" not in mat:
            raise DatasetError("the .mat file has no 'X' and 'y' arrays", path=path)
        images, labels = mat["X"], mat["y"].astype(np.int64).reshape(-1)
        if images.ndim != 4 or images.shape[2] != 3 or images.dtype != np.uint8:
            raise DatasetError(
                f"'X' must be uint8 [H, W, 3, N], got {images.dtype} {images.shape}", path=path
            )
        if labels.shape != (images.shape[3],):
            raise DatasetError(
                f"'y' must hold one label per image ({images.shape[3]}), got {labels.shape}",
                path=path,
            )
        np.place(labels, labels == 10, 0)
        self.data, self.labels = np.transpose(images, (3, 2, 0, 1)), labels

    def _check_integrity(self) -> bool:
        return check_integrity(os.path.join(self.root, self.filename), self.file_md5)

    def download(self) -> None:
        """Fetch the split's ``.mat`` file into ``root`` (MD5-checked) unless it is there.

        Example:
            >>> SVHN.split_list["extra"][1]
            'extra_32x32.mat'
        """
        download_resource(self.url, self.root, self.filename, self.file_md5)


class STL10(_ArrayImages):
    """STL-10: ``(PIL RGB 96x96 image, class or -1)`` from ``root/stl10_binary``, as torchvision's.

    ``split`` ``"train"`` / ``"test"`` read ``<split>_X.bin`` and ``<split>_y.bin``;
    ``"unlabeled"`` gives ``unlabeled_X.bin`` with the target -1, and
    ``"train+unlabeled"`` both. ``folds`` (0-9) keeps the training samples of that line
    of ``fold_indices.txt``. The files this split reads are checked against
    torchvision's MD5 at construction (torchvision checks all five, the 2.6 GB
    unlabeled file too); ``download=True`` fetches and extracts the archive.

    Args:
        root: the folder holding ``stl10_binary``.
        split: ``"train"``, ``"train+unlabeled"``, ``"unlabeled"`` or ``"test"``.
        folds: one of the 10 predefined training folds, or None for all 5000.
        transform: applied to the PIL image.
        target_transform: applied to the target.
        download: fetch and extract the archive when the files are not all there.

    Example:
        >>> import tempfile
        >>> STL10(tempfile.mkdtemp(), folds=10)
        Traceback (most recent call last):
        ...
        ValueError: folds must be None or an int in [0, 10), got 10
    """

    base_folder = "stl10_binary"
    url = "http://ai.stanford.edu/~acoates/stl10/stl10_binary.tar.gz"
    filename = "stl10_binary.tar.gz"
    tgz_md5 = "91f7769df0f17e558f3565bffb0c7dfb"
    class_names_file = "class_names.txt"
    folds_list_file = "fold_indices.txt"
    train_list: ClassVar[list[list[str]]] = [
        ["train_X.bin", "918c2871b30a85fa023e0c44e0bee87f"],
        ["train_y.bin", "5a34089d4802c674881badbb80307741"],
        ["unlabeled_X.bin", "5242ba1fed5e4be9e1e742405eb56ca4"],
    ]
    test_list: ClassVar[list[list[str]]] = [
        ["test_X.bin", "7f263ba9f9e0b06b93213547f721ac82"],
        ["test_y.bin", "36f9794fa4beb8a2c72628de14fa638e"],
    ]
    splits = ("train", "train+unlabeled", "unlabeled", "test")

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "train",
        folds: int | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", self.splits)
        if folds is not None and (isinstance(folds, bool) or folds not in range(10)):
            raise ValueError(f"folds must be None or an int in [0, 10), got {folds!r}")
        self.folds = folds
        if download:
            self.download()
        (train_x, _), (train_y, _), (unlabeled_x, _) = self.train_list
        (test_x, _), (test_y, _) = self.test_list
        self.labels: np.ndarray | None
        if split == "test":
            self.data, self.labels = self._load(test_x, test_y)
        elif split == "unlabeled":
            self.data, _ = self._load(unlabeled_x)
            self.labels = np.asarray([-1] * self.data.shape[0])
        else:
            self.data, self.labels = self._load(train_x, train_y)
            self._load_folds(folds)
            if split == "train+unlabeled":
                unlabeled, _ = self._load(unlabeled_x)
                self.data = np.concatenate((self.data, unlabeled))
                self.labels = np.concatenate((self.labels, np.asarray([-1] * unlabeled.shape[0])))
        class_file = os.path.join(self.root, self.base_folder, self.class_names_file)
        if os.path.isfile(class_file):
            with open(class_file) as f:
                self.classes = f.read().splitlines()

    def _path(self, name: str) -> str:
        md5 = dict(self.train_list + self.test_list)[name]
        return require_file(os.path.join(self.root, self.base_folder, name), md5)

    def _load(self, data_file: str, labels_file: str | None = None) -> tuple[np.ndarray, Any]:
        labels = None
        if labels_file is not None:
            labels = np.fromfile(self._path(labels_file), dtype=np.uint8) - 1  # 1-based
        path = self._path(data_file)
        everything = np.fromfile(path, dtype=np.uint8)
        if everything.size % (3 * 96 * 96):
            raise DatasetError(
                f"{everything.size:,} bytes are not a whole number of 3x96x96 images", path=path
            )
        images = everything.reshape(-1, 3, 96, 96).transpose(0, 1, 3, 2)  # stored column-major
        if labels is not None and len(labels) != len(images):
            raise DatasetError(f"{len(images)} images but {len(labels)} labels", path=path)
        return images, labels

    def _load_folds(self, folds: int | None) -> None:
        if folds is None:
            return
        path = require_file(os.path.join(self.root, self.base_folder, self.folds_list_file))
        with open(path) as f:
            lines = f.read().splitlines()
        try:
            indices = np.asarray(lines[folds].split(), dtype=np.int64)
        except (IndexError, ValueError) as e:
            raise DatasetError(
                f"no fold {folds} of whitespace-separated indices: {e}", path=path
            ) from None
        if indices.size and (indices.min() < 0 or indices.max() >= len(self.data)):
            raise DatasetError(f"fold {folds} has indices outside [0, {len(self.data)})", path=path)
        self.data = self.data[indices]
        if self.labels is not None:
            self.labels = self.labels[indices]

    def _check_integrity(self) -> bool:
        return _files_intact(
            os.path.join(self.root, self.base_folder), self.train_list + self.test_list
        )

    def download(self) -> None:
        """Fetch and extract the archive into ``root`` unless every file is already there.

        Example:
            >>> STL10.filename
            'stl10_binary.tar.gz'
        """
        if self._check_integrity():
            return
        download_resource(self.url, self.root, self.filename, self.tgz_md5, extract_to=self.root)
