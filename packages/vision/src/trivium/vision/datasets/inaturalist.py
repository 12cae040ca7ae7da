"""INaturalist (2017-2021): one folder per category (2021: ``NNNNN_kingdom_..._species``).

Example:
    >>> sorted(DATASET_URLS)[:2], CATEGORIES_2021[0]
    (['2017', '2018'], 'kingdom')
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from trivium.core.errors import DatasetError
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    download_resource,
    pil_decode,
    require_folder,
    verify_str_arg,
)

__all__ = ["CATEGORIES_2021", "DATASET_MD5", "DATASET_URLS", "INaturalist"]

#: The taxonomy levels a 2021 category folder names, after its index.
CATEGORIES_2021 = ["kingdom", "phylum", "class", "order", "family", "genus"]
_S3 = "https://ml-inat-competition-datasets.s3.amazonaws.com/"
#: torchvision's archive of each version.
DATASET_URLS = {
    "2017": _S3 + "2017/train_val_images.tar.gz",
    "2018": _S3 + "2018/train_val2018.tar.gz",
    "2019": _S3 + "2019/train_val2019.tar.gz",
    "2021_train": _S3 + "2021/train.tar.gz",
    "2021_train_mini": _S3 + "2021/train_mini.tar.gz",
    "2021_valid": _S3 + "2021/val.tar.gz",
}
#: torchvision's MD5 of each version's archive.
DATASET_MD5 = {
    "2017": "7c784ea5e424efaec655bd392f87301f",
    "2018": "b1c6952ce38f31868cc50ea72d066cc3",
    "2019": "c60a6e2962c9b8ccbd458d12c8582644",
    "2021_train": "e0526d53c7f7b2e3167b2b43bb2690ed",
    "2021_train_mini": "db6ed8330e634445efc8fec83ae81442",
    "2021_valid": "f6f6e0e242e3d4c9569ba56400938afc",
}


class INaturalist(ImageFileDataset):
    """iNaturalist: ``(PIL image, target)``, as torchvision's ``INaturalist``.

    ``root`` becomes ``root/<version>``. 2021 versions have one folder per species,
    ``NNNNN_<kingdom>_<phylum>_<class>_<order>_<family>_<genus>_<species>``;
    earlier ones ``<super category>/<category>``. ``target_type`` ``"full"`` gives
    the category index, a level name (2021) or ``"super"`` (earlier) that level's
    index, a list of them a tuple. A folder name that breaks these rules raises
    ``DatasetError`` naming it. Images are in their file's mode (torchvision's
    ``Image.open`` without a loader), in sorted file order (torchvision takes the
    folders' listing order).

    Args:
        root: the folder holding ``<version>``.
        version: one of :data:`DATASET_URLS`.
        target_type: what the target holds (see above).
        transform: applied to the image.
        target_transform: applied to the target.
        download: fetch and extract the version's archive when its folder is empty.
        loader: reads an image file (None: :func:`pil_decode`).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> INaturalist(tempfile.mkdtemp(), "2021_valid")
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../2021_valid: no such file or directory; \
pass download=True to fetch the dataset
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        version: str = "2021_train",
        target_type: list[str] | str = "full",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[Any], Any] | None = None,
        *,
        on_error: str = "raise",
    ) -> None:
        self.version = verify_str_arg(version, "version", tuple(DATASET_URLS))
        super().__init__(
            os.path.join(root, version), transform=transform, target_transform=target_transform
        )
        if download and not (os.path.isdir(self.root) and os.listdir(self.root)):
            self.download()
        require_folder(self.root)
        self.all_categories: list[str] = []
        self.categories_index: dict[str, dict[str, int]] = {}
        self.categories_map: list[dict[str, int]] = []
        target_type = target_type if isinstance(target_type, list) else [target_type]
        if self.version[:4] == "2021":
            levels = ("full", *CATEGORIES_2021)
            self.target_type = [verify_str_arg(t, "target_type", levels) for t in target_type]
            self._init_2021()
        else:
            self.target_type = [
                verify_str_arg(t, "target_type", ("full", "super")) for t in target_type
            ]
            self._init_pre2021()
        self.index: list[tuple[int, str]] = []
        for dir_index, dir_name in enumerate(self.all_categories):
            for name in sorted(os.listdir(os.path.join(self.root, dir_name))):
                self.index.append((dir_index, name))
        self._image_files = [
            os.path.join(self.root, self.all_categories[c], n) for c, n in self.index
        ]
        self._ready(loader if loader is not None else pil_decode, on_error)

    def _init_2021(self) -> None:
        self.all_categories = sorted(os.listdir(self.root))
        self.categories_index = {k: {} for k in CATEGORIES_2021}
        for dir_index, dir_name in enumerate(self.all_categories):
            pieces = dir_name.split("_")
            if len(pieces) != 8 or pieces[0] != f"{dir_index:05d}":
                raise DatasetError(
                    f"expected the category folder {dir_index:05d}_<6 levels>_<species>, "
                    f"got {dir_name!r}",
                    path=os.path.join(self.root, dir_name),
                )
            cat_map = {}
            for cat, name in zip(CATEGORIES_2021, pieces[1:7], strict=True):
                index = self.categories_index[cat].setdefault(name, len(self.categories_index[cat]))
                cat_map[cat] = index
            self.categories_map.append(cat_map)

    def _init_pre2021(self) -> None:
        self.categories_index = {"super": {}}
        cat_index = 0
        for sindex, scat in enumerate(sorted(os.listdir(self.root))):
            self.categories_index["super"][scat] = sindex
            for subcat in sorted(os.listdir(os.path.join(self.root, scat))):
                where = os.path.join(self.root, scat, subcat)
                if self.version == "2017":
                    subcat_i, cat_index = cat_index, cat_index + 1
                elif subcat.isdigit():
                    subcat_i = int(subcat)
                else:
                    raise DatasetError("expected a numeric category folder", path=where)
                if subcat_i >= len(self.categories_map):
                    grow = subcat_i - len(self.categories_map) + 1
                    self.categories_map.extend({} for _ in range(grow))
                    self.all_categories.extend([""] * grow)
                if self.categories_map[subcat_i]:
                    raise DatasetError(f"duplicate category {subcat}", path=where)
                self.categories_map[subcat_i] = {"super": sindex}
                self.all_categories[subcat_i] = os.path.join(scat, subcat)
        for cindex, c in enumerate(self.categories_map):
            if not c:
                raise DatasetError(f"no folder for category {cindex}", path=self.root)

    def _target(self, index: int) -> Any:
        cat_id = self.index[index][0]
        target = [
            cat_id if t == "full" else self.categories_map[cat_id][t] for t in self.target_type
        ]
        return tuple(target) if len(target) > 1 else target[0]

    def category_name(self, category_type: str, category_id: int) -> str:
        """The name of category ``category_id`` of ``category_type`` (``"full"``, a level).

        Example:
            >>> ds = INaturalist.__new__(INaturalist)
            >>> ds.all_categories = ["Aves/0"]
            >>> ds.categories_index = {"super": {"Aves": 0}}
            >>> ds.category_name("full", 0), ds.category_name("super", 0)
            ('Aves/0', 'Aves')
        """
        if category_type == "full":
            return self.all_categories[category_id]
        if category_type not in self.categories_index:
            raise ValueError(f"Invalid category type '{category_type}'")
        for name, index in self.categories_index[category_type].items():
            if index == category_id:
                return name
        raise ValueError(f"Invalid category id {category_id} for {category_type}")

    def download(self) -> None:
        """Fetch and extract the version's archive next to ``root``, then name its folder ``root``.

        Example:
            >>> DATASET_URLS["2021_valid"].rsplit("/", 1)[1]
            'val.tar.gz'
        """
        base_root = os.path.dirname(self.root)
        url = DATASET_URLS[self.version]
        download_resource(
            url, base_root, f"{self.version}.tgz", DATASET_MD5[self.version], extract_to=base_root
        )
        extracted = os.path.join(base_root, os.path.basename(url).removesuffix(".tar.gz"))
        if not os.path.isdir(extracted):
            raise DatasetError(
                f"the archive did not hold {os.path.basename(extracted)}/", path=extracted
            )
        if os.path.isdir(self.root):
            os.rmdir(self.root)  # an empty folder a first try left
        os.rename(extracted, self.root)
