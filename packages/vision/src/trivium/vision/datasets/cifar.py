"""CIFAR10 and CIFAR100 from their python pickle batches, as torchvision reads them.

Example:
    >>> CIFAR10.base_folder, CIFAR100.meta["key"]
    ('cifar-10-batches-py', 'fine_label_names')
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from PIL import Image

from trivium.core.errors import DatasetError
from trivium.vision.datasets._readers import read_pickle_batch
from trivium.vision.datasets.utils import (
    VisionDataset,
    _files_intact,
    download_resource,
    require_file,
)

__all__ = ["CIFAR10", "CIFAR100"]


class CIFAR10(VisionDataset):
    """CIFAR-10: ``(PIL RGB 32x32 image, class index)`` from ``root/cifar-10-batches-py``.

    Arguments, attributes (``data`` ``[N, 32, 32, 3]`` uint8, ``targets``,
    ``classes``, ``class_to_idx``) and samples are torchvision's. Each batch is
    checked against torchvision's MD5 at construction, as torchvision does: a
    missing one raises ``PathNotFoundError`` naming it (pass ``download=True``), a
    corrupt one ``DatasetError``. ``download=True`` fetches torchvision's archive
    (``url``, MD5 ``tgz_md5``) into ``root`` and extracts it.

    Args:
        root: the folder holding ``cifar-10-batches-py``.
        train: the five training batches, else the test batch.
        transform: applied to the PIL image.
        target_transform: applied to the class index.
        download: fetch and extract the archive when the batches are not all there.

    Example:
        >>> import tempfile
        >>> CIFAR10(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../cifar-10-batches-py/data_batch_1: no such \
file or directory; pass download=True to fetch the dataset
    """

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list: ClassVar[list[list[str]]] = [
        ["data_batch_1", "c99cafc152244af753f735de768cd75f"],
        ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
        ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
        ["data_batch_4", "634d18415352ddfa80567beed471001a"],
        ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"],
    ]
    test_list: ClassVar[list[list[str]]] = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta: ClassVar[dict[str, str]] = {
        "filename": "batches.meta",
        "key": "label_names",
        "md5": "5ff9c542aee3614f3951f8cda6e48888",
    }

    def __init__(
        self,
        root: str | os.PathLike[str],
        train: bool = True,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        for name, md5 in self.train_list + self.test_list:
            require_file(os.path.join(self.root, self.base_folder, name), md5)
        self.data, self.targets = self._load_batches(self.train_list if train else self.test_list)
        self._load_meta()

    def _load_batches(self, batches: list[list[str]]) -> tuple[np.ndarray, list[int]]:
        data, targets = [], []
        for name, _ in batches:
            path = os.path.join(self.root, self.base_folder, name)
            entry = read_pickle_batch(path, "data", "labels|fine_labels")
            labels = entry["labels"] if "labels" in entry else entry["fine_labels"]
            images = np.asarray(entry["data"])
            if images.dtype != np.uint8 or images.ndim != 2 or images.shape[1] != 3 * 32 * 32:
                raise DatasetError(
                    f"'data' must be uint8 rows of 3072 values, got {images.dtype} "
                    f"{tuple(images.shape)}",
                    path=path,
                )
            if len(labels) != len(images):
                raise DatasetError(f"{len(images)} images but {len(labels)} labels", path=path)
            data.append(images)
            targets.extend(labels)
        return np.vstack(data).reshape(-1, 3, 32, 32).transpose((0, 2, 3, 1)), targets

    def _load_meta(self) -> None:
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        require_file(path, self.meta["md5"])
        self.classes = read_pickle_batch(path, self.meta["key"])[self.meta["key"]]
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image, target = Image.fromarray(self.data[index]), self.targets[index]
        return self._transformed(image, target)

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self) -> bool:
        return _files_intact(
            os.path.join(self.root, self.base_folder), self.train_list + self.test_list
        )

    def download(self) -> None:
        """Fetch and extract the archive into ``root`` unless every batch is already there.

        Example:
            >>> CIFAR10.url
            'https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz'
        """
        if self._check_integrity():
            return
        download_resource(self.url, self.root, self.filename, self.tgz_md5, extract_to=self.root)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100: ``(PIL RGB image, fine class index)`` from ``root/cifar-100-python``.

    As :class:`CIFAR10` (torchvision's subclass too), with the ``train`` / ``test``
    pickles and the fine labels.

    Example:
        >>> CIFAR100.train_list[0][0], CIFAR100.filename
        ('train', 'cifar-100-python.tar.gz')
    """

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list: ClassVar[list[list[str]]] = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list: ClassVar[list[list[str]]] = [["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"]]
    meta: ClassVar[dict[str, str]] = {
        "filename": "meta",
        "key": "fine_label_names",
        "md5": "7973b15100ade9c7d40fb424638fde48",
    }
