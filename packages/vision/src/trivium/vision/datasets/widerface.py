"""WIDERFace: ``WIDER_<split>/images/`` with the ``wider_face_split/`` box lists.

Example:
    >>> WIDERFace.BASE_FOLDER, WIDERFace.ANNOTATIONS_FILE[2]
    ('widerface', 'wider_face_split.zip')
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from trivium.core.errors import DatasetError
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    download_resource,
    pil_decode,
    require_file,
    require_folder,
    verify_str_arg,
)

__all__ = ["WIDERFace"]

_FIELDS = ("blur", "expression", "illumination", "occlusion", "pose", "invalid")


class WIDERFace(ImageFileDataset):
    """WIDER FACE: ``(PIL image, annotations dict or None)``, as torchvision's ``WIDERFace``.

    ``root`` becomes ``root/widerface``, as in torchvision. For ``"train"`` / ``"val"``
    the target holds int64 tensors: ``bbox`` ``[N, 4]`` (x, y, w, h), ``blur``,
    ``expression``, ``illumination``, ``occlusion``, ``pose``, ``invalid`` ``[N]``
    (an image listed with 0 faces keeps the one all-zero line the file has, as in
    torchvision); ``"test"`` gives None. ``download=True`` fetches the image zips
    from Google Drive's direct URL (``gdrive_url``) and the annotations zip.

    Args:
        root: the folder holding ``widerface``.
        split: ``"train"``, ``"val"`` or ``"test"``.
        transform: applied to the image.
        target_transform: applied to the target.
        download: fetch the zips when the folders are not there.
        loader: reads an image file (keyword only; :func:`pil_decode`).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> WIDERFace(tempfile.mkdtemp(), "val")
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../widerface/WIDER_val: no such file or \
directory; pass download=True to fetch the dataset
    """

    BASE_FOLDER = "widerface"
    FILE_LIST: ClassVar[list[tuple[str, str, str]]] = [
        (
            "15hGDLhsx8bLgLcIRD5DhYt5iBxnjNF1M",
            "3fedf70df600953d25982bcd13d91ba2",
            "WIDER_train.zip",
        ),
        ("1GUCogbp16PMGa39thoMMeWxp7Rp5oM8Q", "dfa7d7e790efa35df3788964cf0bbaea", "WIDER_val.zip"),
        ("1HIfDbVEWKmsYKJZm4lchTBDLW5N7dY5T", "e5d8f4248ed24c334bbd12f49c29dd40", "WIDER_test.zip"),
    ]
    ANNOTATIONS_FILE = (
        "http://shuoyang1213.me/WIDERFACE/support/bbx_annotation/wider_face_split.zip",
        "0e3767bcf0e326556d407bf5bff5d27c",
        "wider_face_split.zip",
    )
    gdrive_url = "https://drive.usercontent.google.com/download?id={id}&export=download&confirm=t"

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        *,
        loader: Callable[[Any], Any] = pil_decode,
        on_error: str = "raise",
    ) -> None:
        super().__init__(
            os.path.join(root, self.BASE_FOLDER),
            transform=transform,
            target_transform=target_transform,
        )
        self.split = verify_str_arg(split, "split", ("train", "val", "test"))
        if download:
            self.download()
        require_folder(os.path.join(self.root, f"WIDER_{self.split}"))
        require_folder(os.path.join(self.root, "wider_face_split"))
        self.img_info: list[dict[str, Any]] = []
        if self.split in ("train", "val"):
            self.parse_train_val_annotations_file()
        else:
            self.parse_test_annotations_file()
        self._image_files = [info["img_path"] for info in self.img_info]
        self._ready(loader, on_error)

    def _image_path(self, line: str) -> str:
        path = os.path.join(self.root, f"WIDER_{self.split}", "images", line)
        return os.path.abspath(os.path.expanduser(path))

    def parse_train_val_annotations_file(self) -> None:
        """Read ``wider_face_<split>_bbx_gt.txt``: a file name, a count, that many box lines.

        Example:
            >>> import os, tempfile
            >>> ds = WIDERFace.__new__(WIDERFace)
            >>> ds.root, ds.split, ds.img_info = tempfile.mkdtemp(), "val", []
            >>> os.makedirs(os.path.join(ds.root, "wider_face_split"))
            >>> with open(os.path.join(ds.root, "wider_face_split", "wider_face_val_bbx_gt.txt"),
            ...           "w") as f:
            ...     _ = f.write("0--Parade/a.jpg\\n1\\n449 330 122 149 0 0 0 0 0 0 \\n")
            >>> ds.parse_train_val_annotations_file()
            >>> ds.img_info[0]["annotations"]["bbox"]
            tensor([[449, 330, 122, 149]])
        """
        name = f"wider_face_{self.split}_bbx_gt.txt"
        path = require_file(os.path.join(self.root, "wider_face_split", name))
        with open(path) as f:
            lines = [line.rstrip() for line in f]
        i = 0
        while i < len(lines):
            if not lines[i]:
                i += 1
                continue
            try:
                image_path, count = self._image_path(lines[i]), int(lines[i + 1])
                rows = lines[i + 2 : i + 2 + max(count, 1)]  # 0 faces: one line of zeros
                labels = torch.tensor([[int(v) for v in row.split(" ")] for row in rows])
                if labels.shape != (max(count, 1), 10):
                    raise ValueError(f"expected {max(count, 1)} lines of 10 values")
            except (IndexError, ValueError, RuntimeError) as e:
                raise DatasetError(
                    f"line {i + 1}: not a WIDER FACE box list: {e}", path=path
                ) from None
            annotations = {"bbox": labels[:, 0:4].clone()}
            annotations.update({field: labels[:, 4 + k].clone() for k, field in enumerate(_FIELDS)})
            self.img_info.append({"img_path": image_path, "annotations": annotations})
            i += 2 + max(count, 1)

    def parse_test_annotations_file(self) -> None:
        """Read ``wider_face_test_filelist.txt``: one image name per line.

        Example:
            >>> import os, tempfile
            >>> ds = WIDERFace.__new__(WIDERFace)
            >>> ds.root, ds.split = tempfile.mkdtemp(), "test"
            >>> os.makedirs(os.path.join(ds.root, "wider_face_split"))
            >>> with open(os.path.join(ds.root, "wider_face_split", "wider_face_test_filelist.txt"),
            ...           "w") as f:
            ...     _ = f.write("0--Parade/b.jpg\\n")
            >>> ds.parse_test_annotations_file()
            >>> ds.img_info[0]["img_path"].endswith("WIDER_test/images/0--Parade/b.jpg")
            True
        """
        path = require_file(
            os.path.join(self.root, "wider_face_split", "wider_face_test_filelist.txt")
        )
        with open(path) as f:
            self.img_info = [{"img_path": self._image_path(line.rstrip())} for line in f]

    def _target(self, index: int) -> Any:
        return None if self.split == "test" else self.img_info[index]["annotations"]

    def download(self) -> None:
        """Fetch and extract the three image zips and the annotations zip into ``widerface``.

        Example:
            >>> [name for _, _, name in WIDERFace.FILE_LIST][0]
            'WIDER_train.zip'
        """
        folders = [name[:-4] for _, _, name in [*self.FILE_LIST, self.ANNOTATIONS_FILE]]
        if all(os.path.isdir(os.path.join(self.root, f)) for f in folders):
            return
        for file_id, md5, name in self.FILE_LIST:
            url = self.gdrive_url.format(id=file_id)
            download_resource(url, self.root, name, md5, extract_to=self.root)
        url, md5, name = self.ANNOTATIONS_FILE
        download_resource(url, self.root, name, md5, extract_to=self.root)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"
