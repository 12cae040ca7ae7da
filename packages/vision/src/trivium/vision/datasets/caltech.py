"""Caltech101: ``101_ObjectCategories/<class>/image_NNNN.jpg`` and ``Annotations/*.mat``.

Example:
    >>> Caltech101._URL.rsplit("/", 1)[1]
    'caltech-101.zip'
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any

from trivium.core.errors import DatasetError
from trivium.vision.datasets._readers import read_mat
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    download_resource,
    extract,
    pil_decode,
    require_folder,
    verify_str_arg,
)

__all__ = ["Caltech101"]

# The annotation folders named differently from their image folders.
_ANNOTATION_NAMES = {
    "Faces": "Faces_2",
    "Faces_easy": "Faces_3",
    "Motorbikes": "Motorbikes_16",
    "airplanes": "Airplanes_Side_2",
}


class Caltech101(ImageFileDataset):
    """Caltech 101: ``(PIL image, target)``, as torchvision's ``Caltech101``.

    ``root/caltech101/101_ObjectCategories/<class>/image_NNNN.jpg`` (the
    ``BACKGROUND_Google`` folder is not a class); ``root`` becomes
    ``root/caltech101``, as in torchvision. The image is in its file's mode (a few
    are gray, ``"L"``), as torchvision's ``Image.open`` gives it, decoded by
    ``trivium.vision.io``. ``target_type`` ``"category"`` gives the class index,
    ``"annotation"`` the ``obj_contour`` array of ``Annotations/<class>/annotation_NNNN.mat``
    (scipy), a list of both a tuple. ``download=True`` fetches Caltech's zip and
    extracts the archives in it (the annotations too, which torchvision leaves packed).

    Args:
        root: the folder holding ``caltech101``.
        target_type: ``"category"``, ``"annotation"`` or a list of them.
        transform: applied to the image.
        target_transform: applied to the target.
        download: fetch the zip when the images are not there.
        loader: reads an image file (keyword only; :func:`pil_decode`).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> Caltech101(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../caltech101/101_ObjectCategories: no such \
file or directory; pass download=True to fetch the dataset
    """

    _URL = "https://data.caltech.edu/records/mzrjq-6wc02/files/caltech-101.zip"
    _MD5 = "3138e1922a9193bfa496528edbbc45d0"

    def __init__(
        self,
        root: str | os.PathLike[str],
        target_type: list[str] | str = "category",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        *,
        loader: Callable[[Any], Any] = pil_decode,
        on_error: str = "raise",
    ) -> None:
        super().__init__(
            os.path.join(root, "caltech101"),
            transform=transform,
            target_transform=target_transform,
        )
        if isinstance(target_type, str):
            target_type = [target_type]
        self.target_type = [
            verify_str_arg(t, "target_type", ("category", "annotation")) for t in target_type
        ]
        images = os.path.join(self.root, "101_ObjectCategories")
        if download and not os.path.isdir(images):
            self.download()
        require_folder(images)
        self.categories = sorted(os.listdir(images))
        if "BACKGROUND_Google" in self.categories:
            self.categories.remove("BACKGROUND_Google")
        self.annotation_categories = [_ANNOTATION_NAMES.get(c, c) for c in self.categories]
        self.index: list[int] = []
        self.y: list[int] = []
        for i, category in enumerate(self.categories):
            n = len(os.listdir(os.path.join(images, category)))
            self.index.extend(range(1, n + 1))
            self.y.extend(n * [i])
        self._image_files = [
            os.path.join(images, self.categories[y], f"image_{i:04d}.jpg")
            for y, i in zip(self.y, self.index, strict=True)
        ]
        self._ready(loader, on_error)

    def _annotation(self, index: int) -> Any:
        path = os.path.join(
            self.root,
            "Annotations",
            self.annotation_categories[self.y[index]],
            f"annotation_{self.index[index]:04d}.mat",
        )
        data = read_mat(path)
        if "obj_contour" not in data:
            raise DatasetError("the annotation has no 'obj_contour'", path=path)
        return data["obj_contour"]

    def _target(self, index: int) -> Any:
        target = [
            self.y[index] if t == "category" else self._annotation(index) for t in self.target_type
        ]
        return tuple(target) if len(target) > 1 else target[0]

    def download(self) -> None:
        """Fetch Caltech's zip into ``root`` and extract the archives it holds.

        Example:
            >>> Caltech101._MD5
            '3138e1922a9193bfa496528edbbc45d0'
        """
        zip_path = download_resource(
            self._URL, self.root, "caltech-101.zip", self._MD5, extract_to=self.root
        )
        inner = os.path.join(self.root, "caltech-101")
        for name in sorted(os.listdir(inner)):
            if name.endswith((".tar.gz", ".tar")):
                extract(os.path.join(inner, name), self.root)
        shutil.rmtree(inner)
        os.remove(zip_path)

    def extra_repr(self) -> str:
        return f"Target type: {self.target_type}"
