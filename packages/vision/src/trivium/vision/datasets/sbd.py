"""SBDataset (Semantic Boundaries Dataset): ``img/*.jpg`` and ``cls/*.mat``, as torchvision.

Example:
    >>> SBDataset.filename, SBDataset.voc_split_filename
    ('benchmark.tgz', 'train_noval.txt')
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image

from trivium.core.errors import DatasetError
from trivium.vision.datasets._readers import read_mat
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    download_resource,
    pil_loader,
    require_file,
    require_folder,
    verify_str_arg,
)

__all__ = ["SBDataset"]


class SBDataset(ImageFileDataset):
    """SBD: ``(PIL RGB image, target)``, as torchvision's ``SBDataset``.

    ``root`` holds ``img/<id>.jpg``, ``cls/<id>.mat`` and ``<image_set>.txt``.
    ``mode="segmentation"`` gives the class map as a PIL ``"L"`` image,
    ``"boundaries"`` the ``[20, H, W]`` array of the 20 classes' boundary maps
    (``GTcls.Boundaries``, sparse in the file). ``download=True`` fetches Berkeley's
    ``benchmark.tgz`` (and Cornell's ``train_noval.txt`` for that split). Needs scipy.

    Args:
        root: the dataset folder.
        image_set: ``"train"``, ``"val"`` or ``"train_noval"``.
        mode: ``"segmentation"`` or ``"boundaries"``.
        download: fetch and lay out the archive.
        transforms: applied to ``(image, target)``.
        loader: reads an image file (keyword only; :func:`pil_loader`).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> SBDataset(tempfile.mkdtemp(), mode="edges")
        Traceback (most recent call last):
        ...
        ValueError: mode must be one of 'segmentation', 'boundaries'; got 'edges'
    """

    url = (
        "https://www2.eecs.berkeley.edu/Research/Projects/CS/vision/grouping/"
        "semantic_contours/benchmark.tgz"
    )
    md5 = "82b4d87ceb2ed10f6038a1cba92111cb"
    filename = "benchmark.tgz"
    voc_train_url = "https://www.cs.cornell.edu/~bharathh/train_noval.txt"
    voc_split_filename = "train_noval.txt"
    voc_split_md5 = "79bff800c5f0b1ec6b21080a3c066722"

    def __init__(
        self,
        root: str | os.PathLike[str],
        image_set: str = "train",
        mode: str = "boundaries",
        download: bool = False,
        transforms: Callable | None = None,
        *,
        loader: Callable[[Any], Any] = pil_loader,
        on_error: str = "raise",
    ) -> None:
        super().__init__(root, transforms)
        self.image_set = verify_str_arg(image_set, "image_set", ("train", "val", "train_noval"))
        self.mode = verify_str_arg(mode, "mode", ("segmentation", "boundaries"))
        self.num_classes = 20
        sbd_root = os.fspath(self.root)
        if download:
            self._download(sbd_root)
        require_folder(sbd_root)
        split_file = require_file(os.path.join(sbd_root, image_set + ".txt"))
        with open(split_file) as f:
            names = [line.strip() for line in f if line.strip()]
        self.images = [os.path.join(sbd_root, "img", n + ".jpg") for n in names]
        self.masks = [os.path.join(sbd_root, "cls", n + ".mat") for n in names]
        self._image_files = self.images
        self._ready(loader, on_error)

    def _download(self, sbd_root: str) -> None:
        download_resource(self.url, self.root, self.filename, self.md5, extract_to=self.root)
        extracted = os.path.join(self.root, "benchmark_RELEASE", "dataset")
        for name in ["cls", "img", "inst", "train.txt", "val.txt"]:
            if not os.path.exists(os.path.join(sbd_root, name)):
                shutil.move(os.path.join(extracted, name), sbd_root)
        if self.image_set == "train_noval":
            download_resource(
                self.voc_train_url, sbd_root, self.voc_split_filename, self.voc_split_md5
            )

    def _target(self, index: int) -> Any:
        path = self.masks[index]
        try:
            gt = read_mat(path)["GTcls"][0]
            if self.mode == "segmentation":
                return Image.fromarray(gt["Segmentation"][0])
            boundaries = gt["Boundaries"][0]
            return np.concatenate(
                [boundaries[i][0].toarray()[None] for i in range(self.num_classes)], axis=0
            )
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as e:
            raise DatasetError(f"not an SBD class file (GTcls): {e!r}", path=path) from None

    def extra_repr(self) -> str:
        return f"Image set: {self.image_set}\nMode: {self.mode}"
