"""CelebA: aligned JPEGs with the attribute, identity, box, landmark and partition lists.

Example:
    >>> [name for _, _, name in CelebA.file_list][:2]
    ['img_align_celeba.zip', 'list_attr_celeba.txt']
"""

from __future__ import annotations

import csv
import os
from collections import namedtuple
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from trivium.core.errors import DatasetError
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    download_resource,
    extract,
    pil_decode,
    require_file,
    require_folder,
    verify_str_arg,
)

__all__ = ["CSV", "CelebA"]

#: One of CelebA's lists: its column names, the image names and the int64 values.
CSV = namedtuple("CSV", ["header", "index", "data"])
_SPLITS = {"train": 0, "valid": 1, "test": 2, "all": None}


class CelebA(ImageFileDataset):
    """CelebA: ``(PIL RGB image, target)``, as torchvision's ``CelebA``.

    Reads ``root/celeba/``: ``img_align_celeba/*.jpg`` and the five lists
    (``list_eval_partition.txt``, ``identity_CelebA.txt``, ``list_bbox_celeba.txt``,
    ``list_landmarks_align_celeba.txt``, ``list_attr_celeba.txt``), each checked
    against torchvision's MD5. ``target_type``: ``"attr"`` (40 values of 0/1),
    ``"identity"``, ``"bbox"``, ``"landmarks"`` (int64 tensors), a list of them a
    tuple, an empty list None. ``download=True`` fetches the files from Google Drive
    (torchvision uses gdown; here the direct download URL, ``gdrive_url``).

    Args:
        root: the folder holding ``celeba``.
        split: ``"train"``, ``"valid"``, ``"test"`` or ``"all"``.
        target_type: what the target holds (see above).
        transform: applied to the image.
        target_transform: applied to the target (not with an empty ``target_type``).
        download: fetch the files when they are not there.
        loader: reads an image file (keyword only; :func:`pil_decode`).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> CelebA(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../celeba/list_attr_celeba.txt: no such file \
or directory; pass download=True to fetch the dataset
    """

    base_folder = "celeba"
    gdrive_url = "https://drive.usercontent.google.com/download?id={id}&export=download&confirm=t"
    file_list: ClassVar[list[tuple[str, str, str]]] = [
        (
            "0B7EVK8r0v71pZjFTYXZWM3FlRnM",
            "00d2c5bc6d35e252742224ab0c1e8fcb",
            "img_align_celeba.zip",
        ),
        (
            "0B7EVK8r0v71pblRyaVFSWGxPY0U",
            "75e246fa4810816ffd6ee81facbd244c",
            "list_attr_celeba.txt",
        ),
        (
            "1_ee_0u7vcNLOfNLegJRHmolfH5ICW-XS",
            "32bd1bd63d3c78cd57e08160ec5ed1e2",
            "identity_CelebA.txt",
        ),
        (
            "0B7EVK8r0v71pbThiMVRxWXZ4dU0",
            "00566efa6fedff7a56946cd1c10f1c16",
            "list_bbox_celeba.txt",
        ),
        (
            "0B7EVK8r0v71pd0FJY3Blby1HUTQ",
            "cc24ecafdb5b50baae59b03474781f8c",
            "list_landmarks_align_celeba.txt",
        ),
        (
            "0B7EVK8r0v71pY0NSMzRuSXJEVkk",
            "d32c9cbf5e040fd4025c592c306e6668",
            "list_eval_partition.txt",
        ),
    ]

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "train",
        target_type: list[str] | str = "attr",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        *,
        loader: Callable[[Any], Any] = pil_decode,
        on_error: str = "raise",
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = split
        self.target_type = list(target_type) if isinstance(target_type, list) else [target_type]
        for t in self.target_type:
            verify_str_arg(t, "target_type", ("attr", "identity", "bbox", "landmarks"))
        if not self.target_type and self.target_transform is not None:
            raise ValueError("target_transform is specified but target_type is empty")
        split_ = _SPLITS[
            verify_str_arg(
                split.lower() if isinstance(split, str) else split, "split", tuple(_SPLITS)
            )
        ]
        if download:
            self.download()
        for _, md5, filename in self.file_list:
            if not filename.endswith(".zip"):
                require_file(os.path.join(self.root, self.base_folder, filename), md5)
        images = require_folder(os.path.join(self.root, self.base_folder, "img_align_celeba"))
        splits = self._load_csv("list_eval_partition.txt")
        identity = self._load_csv("identity_CelebA.txt")
        bbox = self._load_csv("list_bbox_celeba.txt", header=1)
        landmarks_align = self._load_csv("list_landmarks_align_celeba.txt", header=1)
        attr = self._load_csv("list_attr_celeba.txt", header=1)
        if split_ is None:
            mask: Any = slice(None)
            self.filename = splits.index
        else:
            mask = (splits.data == split_).squeeze(-1)
            self.filename = [splits.index[i] for i in torch.nonzero(mask).flatten().tolist()]
        self.identity = identity.data[mask]
        self.bbox = bbox.data[mask]
        self.landmarks_align = landmarks_align.data[mask]
        self.attr = torch.div(attr.data[mask] + 1, 2, rounding_mode="floor")
        self.attr_names = attr.header
        self._image_files = [os.path.join(images, name) for name in self.filename]
        self._ready(loader, on_error)

    def _load_csv(self, filename: str, header: int | None = None) -> CSV:
        path = os.path.join(self.root, self.base_folder, filename)
        with open(path) as f:
            rows = list(csv.reader(f, delimiter=" ", skipinitialspace=True))
        headers: list[str] = []
        if header is not None:
            headers, rows = rows[header], rows[header + 1 :]
        try:
            data = torch.tensor([[int(v) for v in row[1:]] for row in rows])
        except (ValueError, TypeError) as e:
            raise DatasetError(
                f"expected a name and integers on each line: {e}", path=path
            ) from None
        return CSV(headers, [row[0] for row in rows], data)

    def _target(self, index: int) -> Any:
        values = {
            "attr": lambda: self.attr[index, :],
            "identity": lambda: self.identity[index, 0],
            "bbox": lambda: self.bbox[index, :],
            "landmarks": lambda: self.landmarks_align[index, :],
        }
        target = [values[t]() for t in self.target_type]
        if not target:
            return None
        return tuple(target) if len(target) > 1 else target[0]

    def download(self) -> None:
        """Fetch each file of ``file_list`` into ``root/celeba`` and extract the images' zip.

        Files already there with the right MD5 are not fetched again.

        Example:
            >>> CelebA.gdrive_url.format(id="X").split("?")[1]
            'id=X&export=download&confirm=t'
        """
        folder = os.path.join(self.root, self.base_folder)
        for file_id, md5, filename in self.file_list:
            download_resource(self.gdrive_url.format(id=file_id), folder, filename, md5)
        if not os.path.isdir(os.path.join(folder, "img_align_celeba")):
            extract(os.path.join(folder, "img_align_celeba.zip"), folder)

    def extra_repr(self) -> str:
        return f"Target type: {self.target_type}\nSplit: {self.split}"
