"""ImageNet 2012 classification from its archives (devkit, train, val), as torchvision prepares it.

The first use of a root runs torchvision's ``parse_*`` steps: the devkit's
``data/meta.mat`` and validation ground truth become ``meta.bin`` (torchvision's file,
so a root either library prepared serves both), the training archive becomes
``train/<wnid>/*.JPEG`` and the validation archive ``val/<wnid>/*.JPEG``. ImageNet
cannot be downloaded without an account: the archives are placed in ``root`` by hand.

Example:
    >>> import tempfile
    >>> ImageNet(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    trivium.core.errors.PathNotFoundError: .../ILSVRC2012_devkit_t12.tar.gz: no such file or \
directory; download it from https://image-net.org/challenges/LSVRC/2012/2012-downloads.php \
and place it in ...
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from typing import Any

import torch

from trivium.core.download import extract_archive
from trivium.core.errors import NO_SUCH_PATH, DatasetError, PathNotFoundError
from trivium.vision.datasets._readers import read_mat
from trivium.vision.datasets.folder import ImageFolder
from trivium.vision.datasets.utils import check_integrity, pil_loader, require_file, verify_str_arg

__all__ = [
    "ARCHIVE_META",
    "META_FILE",
    "ImageNet",
    "load_meta_file",
    "parse_devkit_archive",
    "parse_train_archive",
    "parse_val_archive",
]

#: torchvision's names and MD5s of the three archives.
ARCHIVE_META = {
    "train": ("ILSVRC2012_img_train.tar", "1d675b47d978889d74fa0da5fadfb00e"),
    "val": ("ILSVRC2012_img_val.tar", "29b22e2961454d5413ddabcf34fc5622"),
    "devkit": ("ILSVRC2012_devkit_t12.tar.gz", "fa75699e90414af021442c21a62c3abf"),
}
#: The file the devkit is parsed into: ``torch.save((wnid_to_classes, val_wnids))``.
META_FILE = "meta.bin"
_DOWNLOADS = "https://image-net.org/challenges/LSVRC/2012/2012-downloads.php"


def _verify_archive(root: str, file: str, md5: str) -> str:
    path = os.path.join(root, file)
    if not os.path.isfile(path):
        raise PathNotFoundError(
            f"{NO_SUCH_PATH}; download it from {_DOWNLOADS} and place it in {root}", path=path
        )
    return require_file(path, md5, can_download=False)


def load_meta_file(
    root: str | os.PathLike[str], file: str | None = None
) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """``(wnid_to_classes, val_wnids)`` from ``root/meta.bin`` (what the devkit parses into).

    Example:
        >>> import tempfile
        >>> load_meta_file(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../meta.bin: no such file or directory; \
ImageNet writes it from the devkit archive
    """
    path = os.path.join(root, file or META_FILE)
    if not os.path.isfile(path):
        raise PathNotFoundError(
            f"{NO_SUCH_PATH}; ImageNet writes it from the devkit archive", path=path
        )
    try:
        wnid_to_classes, val_wnids = torch.load(path, weights_only=True)
    except (pickle.UnpicklingError, ValueError, TypeError, RuntimeError, EOFError) as e:
        raise DatasetError(f"not ImageNet's meta file: {e}", path=path) from None
    return wnid_to_classes, val_wnids


def _parse_meta_mat(devkit_root: str) -> tuple[dict[int, str], dict[str, tuple[str, ...]]]:
    """The leaf synsets of ``data/meta.mat``: index -> wnid, and wnid -> class names."""
    path = os.path.join(devkit_root, "data", "meta.mat")
    require_file(path, can_download=False)
    try:
        synsets = read_mat(path, squeeze_me=True)["synsets"]
        leaves = [s for s in synsets if int(s[4]) == 0]  # num_children: the 1000 classes
        idx_to_wnid = {int(s[0]): str(s[1]) for s in leaves}
        wnid_to_classes = {str(s[1]): tuple(str(s[2]).split(", ")) for s in leaves}
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise DatasetError(f"not the devkit's synsets table: {e!r}", path=path) from None
    return idx_to_wnid, wnid_to_classes


def _parse_val_groundtruth(devkit_root: str) -> list[int]:
    path = os.path.join(devkit_root, "data", "ILSVRC2012_validation_ground_truth.txt")
    require_file(path, can_download=False)
    with open(path) as f:
        lines = f.read().split()
    try:
        return [int(v) for v in lines]
    except ValueError as e:
        raise DatasetError(f"not one class index per line: {e}", path=path) from None


def parse_devkit_archive(root: str | os.PathLike[str], file: str | None = None) -> None:
    """Parse the devkit archive in ``root`` into ``root/meta.bin``, as torchvision does.

    Needs scipy (``meta.mat``). The archive is checked against torchvision's MD5.

    Example:
        >>> import tempfile
        >>> parse_devkit_archive(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: ...ILSVRC2012_devkit_t12.tar.gz: no such file ...
    """
    root = os.fspath(root)
    name, md5 = ARCHIVE_META["devkit"]
    archive = _verify_archive(root, file or name, md5)
    with tempfile.TemporaryDirectory() as tmp:
        extract_archive(archive, tmp)
        devkit_root = os.path.join(tmp, "ILSVRC2012_devkit_t12")
        idx_to_wnid, wnid_to_classes = _parse_meta_mat(devkit_root)
        val_idcs = _parse_val_groundtruth(devkit_root)
        unknown = sorted(set(val_idcs) - set(idx_to_wnid))
        if unknown:
            raise DatasetError(
                f"the validation ground truth names classes the synsets lack: {unknown[:5]}",
                path=archive,
            )
        val_wnids = [idx_to_wnid[idx] for idx in val_idcs]
    torch.save((wnid_to_classes, val_wnids), os.path.join(root, META_FILE))


def parse_train_archive(
    root: str | os.PathLike[str], file: str | None = None, folder: str = "train"
) -> None:
    """Extract the training archive into ``root/<folder>/<wnid>/`` (one inner tar per class).

    Example:
        >>> import tempfile
        >>> parse_train_archive(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: ...ILSVRC2012_img_train.tar: no such file ...
    """
    root = os.fspath(root)
    name, md5 = ARCHIVE_META["train"]
    archive = _verify_archive(root, file or name, md5)
    train_root = os.path.join(root, folder)
    extract_archive(archive, train_root)
    for inner in sorted(os.listdir(train_root)):
        path = os.path.join(train_root, inner)
        if os.path.isfile(path):
            extract_archive(path, os.path.splitext(path)[0])
            os.remove(path)


def parse_val_archive(
    root: str | os.PathLike[str],
    file: str | None = None,
    wnids: list[str] | None = None,
    folder: str = "val",
) -> None:
    """Extract the validation archive into ``root/<folder>/<wnid>/``, by the devkit's ground truth.

    The images, in sorted order, go to the folders of ``wnids`` (by default
    ``meta.bin``'s ``val_wnids``); a count that differs raises ``DatasetError``.

    Example:
        >>> import tempfile
        >>> parse_val_archive(tempfile.mkdtemp(), wnids=["n01440764"])
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: ...ILSVRC2012_img_val.tar: no such file ...
    """
    root = os.fspath(root)
    name, md5 = ARCHIVE_META["val"]
    if wnids is None:
        wnids = load_meta_file(root)[1]
    archive = _verify_archive(root, file or name, md5)
    val_root = os.path.join(root, folder)
    extract_archive(archive, val_root)
    images = sorted(os.path.join(val_root, image) for image in os.listdir(val_root))
    if len(images) != len(wnids):
        shutil.rmtree(val_root)
        raise DatasetError(
            f"{len(images)} validation images but {len(wnids)} ground-truth labels", path=archive
        )
    for wnid in set(wnids):
        os.mkdir(os.path.join(val_root, wnid))
    for wnid, image in zip(wnids, images, strict=True):
        shutil.move(image, os.path.join(val_root, wnid, os.path.basename(image)))


class ImageNet(ImageFolder):
    """ImageNet 2012: ``(PIL RGB image, class index)`` from ``root/<split>/<wnid>/``.

    The first use prepares ``root`` from the archives placed there (see the module).
    Attributes are torchvision's: ``classes`` (a tuple of names per class),
    ``class_to_idx`` (every name to its index), ``wnids``, ``wnid_to_idx``, ``samples``
    / ``imgs``, ``targets``. The default ``loader`` is :func:`pil_loader` (torchvision's
    PIL images, decoded by :mod:`trivium.vision.io`); ``loader=None`` gives
    :class:`ImageFolder`'s tensors (and the fused decodes' bytes).

    Args:
        root: the folder holding the archives (and, once parsed, ``train/``, ``val/``).
        split: ``"train"`` or ``"val"``.
        **kwargs: :class:`ImageFolder`'s ``transform``, ``target_transform``,
            ``loader``, ``is_valid_file``, ``allow_empty``, ``on_error``.

    Example:
        >>> import os, tempfile, torch
        >>> from trivium.vision.io import write_png
        >>> root = tempfile.mkdtemp()
        >>> meta = ({"n01440764": ("tench", "Tinca tinca")}, ["n01440764"])
        >>> torch.save(meta, os.path.join(root, "meta.bin"))
        >>> os.makedirs(os.path.join(root, "val", "n01440764"))
        >>> image = torch.zeros(3, 4, 5, dtype=torch.uint8)
        >>> write_png(image, os.path.join(root, "val", "n01440764", "a.png"))
        >>> ds = ImageNet(root, "val")
        >>> ds.classes, ds.class_to_idx["tench"], ds[0][0].size, ds[0][1]
        ([('tench', 'Tinca tinca')], 0, (5, 4), 0)
    """

    def __init__(self, root: str | os.PathLike[str], split: str = "train", **kwargs: Any) -> None:
        root = self.root = os.path.expanduser(os.fspath(root))
        self.split = verify_str_arg(split, "split", ("train", "val"))
        self.parse_archives()
        wnid_to_classes = load_meta_file(self.root)[0]
        kwargs.setdefault("loader", pil_loader)
        super().__init__(self.split_folder, **kwargs)
        self.root = root
        self.wnids = self.classes
        self.wnid_to_idx = self.class_to_idx
        try:
            self.classes = [wnid_to_classes[wnid] for wnid in self.wnids]
        except KeyError as e:
            raise DatasetError(
                f"the folder {e.args[0]} is not a class of {META_FILE}", path=self.split_folder
            ) from None
        self.class_to_idx = {name: i for i, names in enumerate(self.classes) for name in names}

    def parse_archives(self) -> None:
        """Parse the devkit unless ``meta.bin`` is there, the split's archive unless its folder is.

        Example:
            >>> import tempfile
            >>> ds = ImageNet.__new__(ImageNet)
            >>> ds.root, ds.split = tempfile.mkdtemp(), "val"
            >>> ds.parse_archives()
            Traceback (most recent call last):
            ...
            trivium.core.errors.PathNotFoundError: ...ILSVRC2012_devkit_t12.tar.gz: no such ...
        """
        if not check_integrity(os.path.join(self.root, META_FILE)):
            parse_devkit_archive(self.root)
        if not os.path.isdir(self.split_folder):
            if self.split == "train":
                parse_train_archive(self.root)
            else:
                parse_val_archive(self.root)

    @property
    def split_folder(self) -> str:
        """``root/<split>``, the ImageFolder tree of the split.

        Example:
            >>> ds = ImageNet.__new__(ImageNet)
            >>> ds.root, ds.split = "data", "val"
            >>> ds.split_folder
            'data/val'
        """
        return os.path.join(self.root, self.split)

    def extra_repr(self) -> str:
        """``Split: <split>``, as torchvision's ``repr`` shows it.

        Example:
            >>> ds = ImageNet.__new__(ImageNet)
            >>> ds.split = "val"
            >>> ds.extra_repr()
            'Split: val'
        """
        return f"Split: {self.split}"
