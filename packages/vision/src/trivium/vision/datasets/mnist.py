"""MNIST, FashionMNIST, KMNIST, EMNIST and QMNIST from their IDX files, as torchvision reads them.

Each reads ``root/<ClassName>/raw/<file>`` (the IDX file as distributed, or still
compressed as ``<file>.gz`` / ``.xz``), or, as torchvision does for old roots,
``root/<ClassName>/processed/<training>.pt`` and ``<test>.pt`` when both are there.

Example:
    >>> import tempfile
    >>> MNIST(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    trivium.core.errors.PathNotFoundError: .../MNIST/raw/train-images-idx3-ubyte: no such file \
or directory; pass download=True to fetch the dataset
"""

from __future__ import annotations

import os
import pickle
import shutil
import string
from collections.abc import Callable
from typing import Any, ClassVar

import torch
from PIL import Image

from trivium.core.errors import NO_SUCH_PATH, DatasetError, PathNotFoundError
from trivium.vision.datasets._readers import read_idx, read_idx_as
from trivium.vision.datasets.utils import (
    VisionDataset,
    check_integrity,
    download_resource,
    extract,
    verify_str_arg,
)

__all__ = [
    "EMNIST",
    "KMNIST",
    "MNIST",
    "QMNIST",
    "FashionMNIST",
    "read_image_file",
    "read_label_file",
    "read_sn3_pascalvincent_tensor",
]

_COMPRESSED_SUFFIXES = ("", ".gz", ".xz")


def read_sn3_pascalvincent_tensor(
    path: str | os.PathLike[str], strict: bool = True
) -> torch.Tensor:
    """An IDX file (LeCun's MNIST format; raw, ``.gz`` or ``.xz``) as a tensor, as torchvision's.

    A header or size that does not match raises ``DatasetError`` naming the file.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "labels-idx1-ubyte")
        >>> _ = open(path, "wb").write(bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 2, 1]))
        >>> read_sn3_pascalvincent_tensor(path)
        tensor([7, 2, 1], dtype=torch.uint8)
    """
    return read_idx(path, strict)


def read_label_file(path: str | os.PathLike[str]) -> torch.Tensor:
    """A 1-D uint8 IDX label file as int64, as torchvision's (``DatasetError`` otherwise).

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "labels-idx1-ubyte")
        >>> _ = open(path, "wb").write(bytes([0, 0, 8, 1, 0, 0, 0, 2, 5, 9]))
        >>> read_label_file(path)
        tensor([5, 9])
    """
    return read_idx_as(path, 1).long()


def read_image_file(path: str | os.PathLike[str]) -> torch.Tensor:
    """A 3-D uint8 IDX image file ``[N, H, W]``, as torchvision's (``DatasetError`` otherwise).

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "images-idx3-ubyte")
        >>> header = bytes([0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2])
        >>> _ = open(path, "wb").write(header + bytes([4, 5]))
        >>> read_image_file(path)
        tensor([[[4, 5]]], dtype=torch.uint8)
    """
    return read_idx_as(path, 3)


def _idx_path(path: str) -> str:
    """``path``, or its ``.gz`` / ``.xz`` copy where only that is there; else the rule's error."""
    for suffix in _COMPRESSED_SUFFIXES:
        if os.path.isfile(path + suffix):
            return path + suffix
    raise PathNotFoundError(f"{NO_SUCH_PATH}; pass download=True to fetch the dataset", path=path)


def _idx_exists(path: str) -> bool:
    return any(check_integrity(path + suffix) for suffix in _COMPRESSED_SUFFIXES)


class MNIST(VisionDataset):
    """MNIST: ``(PIL "L" 28x28 image, digit)`` from ``root/MNIST/raw``, as torchvision's.

    Arguments, attributes (``data`` uint8 ``[N, 28, 28]``, ``targets`` int64,
    ``classes``, ``class_to_idx``, ``raw_folder``, ``processed_folder``) and
    samples are torchvision's. The IDX files may be there as distributed
    (``train-images-idx3-ubyte``) or still compressed (``.gz``). When
    ``processed/training.pt`` and ``processed/test.pt`` are both there (roots made by
    old torchvision releases), they are loaded instead (``weights_only``), as
    torchvision 0.28 does. ``download=True`` fetches torchvision's ``resources``
    from each of ``mirrors`` in turn (MD5-checked) and decompresses them into ``raw``.

    Args:
        root: the folder holding ``MNIST/raw`` (the class's name for the subclasses).
        train: the training files, else the ``t10k`` test files.
        transform: applied to the PIL image.
        target_transform: applied to the digit.
        download: fetch the files when they are not there.

    Example:
        >>> MNIST.resources[0]
        ('train-images-idx3-ubyte.gz', 'f68b3c2dcbeaaa9fbdd348bbdeb94873')
    """

    mirrors: ClassVar[list[str]] = [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ]
    resources: ClassVar[Any] = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    training_file = "training.pt"
    test_file = "test.pt"
    classes: ClassVar[list[str]] = [
        "0 - zero",
        "1 - one",
        "2 - two",
        "3 - three",
        "4 - four",
        "5 - five",
        "6 - six",
        "7 - seven",
        "8 - eight",
        "9 - nine",
    ]

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
        if self._check_legacy_exist():
            self.data, self.targets = self._load_legacy_data()
            return
        if download:
            self.download()
        self.data, self.targets = self._load_data()

    @property
    def raw_folder(self) -> str:
        """``root/<ClassName>/raw``, where the IDX files are.

        Example:
            >>> ds = FashionMNIST.__new__(FashionMNIST)
            >>> ds.root = "data"
            >>> ds.raw_folder
            'data/FashionMNIST/raw'
        """
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def processed_folder(self) -> str:
        """``root/<ClassName>/processed``, where old torchvision releases saved tensors.

        Example:
            >>> ds = MNIST.__new__(MNIST)
            >>> ds.root = "data"
            >>> ds.processed_folder
            'data/MNIST/processed'
        """
        return os.path.join(self.root, type(self).__name__, "processed")

    @property
    def class_to_idx(self) -> dict[str, int]:
        """Each class name's index.

        Example:
            >>> MNIST.__new__(MNIST).class_to_idx["3 - three"]
            3
        """
        return {name: i for i, name in enumerate(self.classes)}

    def _check_legacy_exist(self) -> bool:
        return all(
            check_integrity(os.path.join(self.processed_folder, name))
            for name in (self.training_file, self.test_file)
        )

    def _load_legacy_data(self) -> tuple[torch.Tensor, torch.Tensor]:
        path = os.path.join(
            self.processed_folder, self.training_file if self.train else self.test_file
        )
        try:
            data, targets = torch.load(path, weights_only=True)
        except (pickle.UnpicklingError, ValueError, TypeError, RuntimeError, EOFError) as e:
            raise DatasetError(f"not a saved (data, targets) pair: {e}", path=path) from None
        return data, targets

    @property
    def _prefix(self) -> str:
        return "train" if self.train else "t10k"

    def _files(self) -> tuple[str, str]:
        """The images' and the labels' IDX files (uncompressed names)."""
        return (
            os.path.join(self.raw_folder, f"{self._prefix}-images-idx3-ubyte"),
            os.path.join(self.raw_folder, f"{self._prefix}-labels-idx1-ubyte"),
        )

    def _load_data(self) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = (_idx_path(p) for p in self._files())
        data, targets = read_image_file(images), read_label_file(labels)
        if len(data) != len(targets):
            raise DatasetError(
                f"{len(data)} images but {len(targets)} labels in {labels}", path=images
            )
        return data, targets

    def _check_exists(self) -> bool:
        return all(_idx_exists(p) for p in self._files())

    def _image(self, index: int) -> Image.Image:
        return Image.fromarray(self.data[index].numpy(), "L")

    def _target(self, index: int) -> Any:
        return int(self.targets[index])

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image, target = self._image(index), self._target(index)
        return self._transformed(image, target)

    def __len__(self) -> int:
        return len(self.data)

    def download(self) -> None:
        """Fetch every file of ``resources`` (each mirror in turn) and decompress it into ``raw``.

        Nothing is fetched when this split's files are there.

        Example:
            >>> FashionMNIST.mirrors
            ['http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/']
        """
        if self._check_exists():
            return
        for filename, md5 in self.resources:
            urls = [f"{mirror}{filename}" for mirror in self.mirrors]
            download_resource(urls, self.raw_folder, filename, md5, extract_to=self.raw_folder)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class FashionMNIST(MNIST):
    """Fashion-MNIST: ``(PIL "L" 28x28 image, class)`` from ``root/FashionMNIST/raw``.

    As :class:`MNIST`, with Zalando's files and classes.

    Example:
        >>> FashionMNIST.classes[:3]
        ['T-shirt/top', 'Trouser', 'Pullover']
    """

    mirrors: ClassVar[list[str]] = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources: ClassVar[Any] = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes: ClassVar[list[str]] = [
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    ]


class KMNIST(MNIST):
    """Kuzushiji-MNIST: ``(PIL "L" 28x28 image, class)`` from ``root/KMNIST/raw``.

    As :class:`MNIST`, with ROIS-CODH's files and classes.

    Example:
        >>> KMNIST.classes[:3]
        ['o', 'ki', 'su']
    """

    mirrors: ClassVar[list[str]] = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources: ClassVar[Any] = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes: ClassVar[list[str]] = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


class EMNIST(MNIST):
    """EMNIST: ``(PIL "L" 28x28 image, class)`` of one ``split``, from ``root/EMNIST/raw``.

    As :class:`MNIST`, reading ``emnist-<split>-<train|test>-{images-idx3,labels-idx1}-ubyte``
    (as the NIST archive holds them: the images transposed, as torchvision leaves
    them); the processed files are ``training_<split>.pt`` / ``test_<split>.pt``.
    ``download=True`` fetches NIST's ``gzip.zip`` and decompresses every split.

    Args:
        root: the folder holding ``EMNIST/raw``.
        split: ``"byclass"``, ``"bymerge"``, ``"balanced"``, ``"letters"``,
            ``"digits"`` or ``"mnist"``.
        **kwargs: :class:`MNIST`'s ``train``, ``transform``, ``target_transform``,
            ``download``.

    Example:
        >>> EMNIST.classes_split_dict["letters"][:3]
        ['N/A', 'a', 'b']
    """

    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    _merged_classes: ClassVar[set[str]] = set("cijklmopsuvwxyz")
    _all_classes: ClassVar[set[str]] = set(string.digits + string.ascii_letters)
    classes_split_dict: ClassVar[dict[str, list[str]]] = {
        "byclass": sorted(_all_classes),
        "bymerge": sorted(_all_classes - _merged_classes),
        "balanced": sorted(_all_classes - _merged_classes),
        "letters": ["N/A", *string.ascii_lowercase],
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root: str | os.PathLike[str], split: str, **kwargs: Any) -> None:
        self.split = verify_str_arg(split, "split", self.splits)
        self.training_file = f"training_{split}.pt"
        self.test_file = f"test_{split}.pt"
        super().__init__(root, **kwargs)
        self.classes = self.classes_split_dict[self.split]

    def _files(self) -> tuple[str, str]:
        prefix = f"emnist-{self.split}-{'train' if self.train else 'test'}"
        return (
            os.path.join(self.raw_folder, f"{prefix}-images-idx3-ubyte"),
            os.path.join(self.raw_folder, f"{prefix}-labels-idx1-ubyte"),
        )

    def download(self) -> None:
        """Fetch NIST's ``gzip.zip`` and decompress each split's files into ``raw``.

        Example:
            >>> EMNIST.url
            'https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip'
        """
        if self._check_exists():
            return
        download_resource(self.url, self.raw_folder, None, self.md5, extract_to=self.raw_folder)
        gzip_folder = os.path.join(self.raw_folder, "gzip")
        for name in sorted(os.listdir(gzip_folder)):
            if name.endswith(".gz"):
                extract(os.path.join(gzip_folder, name), self.raw_folder)
        shutil.rmtree(gzip_folder)


class QMNIST(MNIST):
    """QMNIST: ``(PIL "L" 28x28 image, target)`` from ``root/QMNIST/raw``, as torchvision's.

    ``what`` picks the files (``"train"``, ``"test"`` (60k), ``"test10k"`` /
    ``"test50k"`` (its first 10k / the other 50k), ``"nist"``); the target is the
    digit (``compat=True``) or the row of 8 int64 values QMNIST gives each image
    (class, NIST writer, ...). The processed file is ``<what>.pt``.

    Args:
        root: the folder holding ``QMNIST/raw``.
        what: the subset; by default ``"train"`` or ``"test"`` following ``train``.
        compat: the digit alone as the target, else the whole row.
        train: which subset when ``what`` is None.
        **kwargs: :class:`MNIST`'s ``transform``, ``target_transform``, ``download``.

    Example:
        >>> sorted(QMNIST.subsets)
        ['nist', 'test', 'test10k', 'test50k', 'train']
    """

    subsets: ClassVar[dict[str, str]] = {
        "train": "train",
        "test": "test",
        "test10k": "test",
        "test50k": "test",
        "nist": "nist",
    }
    _github = "https://raw.githubusercontent.com/facebookresearch/qmnist/master/"
    resources: ClassVar[Any] = {
        "train": [
            (_github + "qmnist-train-images-idx3-ubyte.gz", "ed72d4157d28c017586c42bc6afe6370"),
            (_github + "qmnist-train-labels-idx2-int.gz", "0058f8dd561b90ffdd0f734c6a30e5e4"),
        ],
        "test": [
            (_github + "qmnist-test-images-idx3-ubyte.gz", "1394631089c404de565df7b7aeaf9412"),
            (_github + "qmnist-test-labels-idx2-int.gz", "5b5b05890a5e13444e108efe57b788aa"),
        ],
        "nist": [
            (_github + "xnist-images-idx3-ubyte.xz", "7f124b3b8ab81486c9d8c2749c17f834"),
            (_github + "xnist-labels-idx2-int.xz", "5ed0e788978e45d4a8bd4b7caec3d79d"),
        ],
    }

    def __init__(
        self,
        root: str | os.PathLike[str],
        what: str | None = None,
        compat: bool = True,
        train: bool = True,
        **kwargs: Any,
    ) -> None:
        if what is None:
            what = "train" if train else "test"
        self.what = verify_str_arg(what, "what", tuple(self.subsets))
        self.compat = compat
        self.data_file = what + ".pt"
        self.training_file = self.data_file
        self.test_file = self.data_file
        super().__init__(root, train, **kwargs)

    def _files(self) -> tuple[str, str]:
        return tuple(  # type: ignore[return-value]
            os.path.join(self.raw_folder, os.path.splitext(os.path.basename(url))[0])
            for url, _ in self.resources[self.subsets[self.what]]
        )

    @property
    def images_file(self) -> str:
        """The IDX file of the images (its uncompressed name).

        Example:
            >>> ds = QMNIST.__new__(QMNIST)
            >>> ds.root, ds.what = "data", "test50k"
            >>> ds.images_file
            'data/QMNIST/raw/qmnist-test-images-idx3-ubyte'
        """
        return self._files()[0]

    @property
    def labels_file(self) -> str:
        """The IDX file of the label rows (its uncompressed name).

        Example:
            >>> ds = QMNIST.__new__(QMNIST)
            >>> ds.root, ds.what = "data", "nist"
            >>> ds.labels_file
            'data/QMNIST/raw/xnist-labels-idx2-int'
        """
        return self._files()[1]

    def _load_data(self) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = (_idx_path(p) for p in self._files())
        data = read_idx_as(images, 3)
        targets = read_idx(labels)
        if targets.dim() != 2:
            raise DatasetError(
                f"expected 2 dimensions, the file holds {targets.dim()}", path=labels
            )
        targets = targets.long()
        if self.what == "test10k":
            data, targets = data[:10000].clone(), targets[:10000].clone()
        elif self.what == "test50k":
            data, targets = data[10000:].clone(), targets[10000:].clone()
        return data, targets

    def _target(self, index: int) -> Any:
        target = self.targets[index]
        return int(target[0]) if self.compat else target

    def download(self) -> None:
        """Fetch this subset's two files and decompress them into ``raw``.

        Example:
            >>> QMNIST.resources["nist"][0][0].rsplit("/", 1)[1]
            'xnist-images-idx3-ubyte.xz'
        """
        if self._check_exists():
            return
        for url, md5 in self.resources[self.subsets[self.what]]:
            download_resource(url, self.raw_folder, None, md5, extract_to=self.raw_folder)

    def extra_repr(self) -> str:
        return f"Split: {self.what}"
