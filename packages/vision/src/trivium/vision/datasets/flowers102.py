"""Flowers102 (Oxford 102 Category Flower): ``.mat`` split and label files over JPEGs.

Example:
    >>> Flowers102.classes[:2]
    ['pink primrose', 'hard-leaved pocket orchid']
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from trivium.core.errors import DatasetError
from trivium.vision.datasets._readers import read_mat
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    check_integrity,
    download_resource,
    pil_loader,
    require_file,
    require_folder,
    verify_str_arg,
)

__all__ = ["Flowers102"]


class Flowers102(ImageFileDataset):
    """Oxford 102 Flowers: ``(PIL RGB image, class index 0-101)``, as torchvision's ``Flowers102``.

    Reads ``root/flowers-102/``: ``jpg/image_<id>.jpg``, ``setid.mat`` (the ids of
    each split) and ``imagelabels.mat`` (1-based labels), the two ``.mat`` files
    checked against torchvision's MD5 (scipy reads them). ``download=True`` fetches
    the three files from the VGG site.

    Args:
        root: the folder holding ``flowers-102``.
        split: ``"train"``, ``"val"`` or ``"test"``.
        transform: applied to the image.
        target_transform: applied to the label.
        download: fetch the files when they are not there.
        loader: reads an image file (:func:`pil_loader`: decoded by ``trivium.vision.io``).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import tempfile
        >>> Flowers102(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        trivium.core.errors.PathNotFoundError: .../flowers-102/jpg: no such file or \
directory; pass download=True to fetch the dataset
    """

    _download_url_prefix = "https://www.robots.ox.ac.uk/~vgg/data/flowers/102/"
    _file_dict: ClassVar[dict[str, tuple[str, str]]] = {
        "image": ("102flowers.tgz", "52808999861908f626f3c1f4e79d11fa"),
        "label": ("imagelabels.mat", "e0620be6f572b9609742df49c70aed4d"),
        "setid": ("setid.mat", "a5357ecc9cb78c4bef273ce3793fc85c"),
    }
    _splits_map: ClassVar[dict[str, str]] = {"train": "trnid", "val": "valid", "test": "tstid"}

    def __init__(
        self,
        root: str | os.PathLike[str],
        split: str = "train",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
        loader: Callable[[Any], Any] = pil_loader,
        *,
        on_error: str = "raise",
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        self._base_folder = Path(self.root) / "flowers-102"
        self._images_folder = self._base_folder / "jpg"
        if download:
            self.download()
        require_folder(self._images_folder)
        paths = {}
        for key in ("label", "setid"):
            filename, md5 = self._file_dict[key]
            paths[key] = require_file(self._base_folder / filename, md5)
        setid, labels = (
            read_mat(paths["setid"], squeeze_me=True),
            read_mat(paths["label"], squeeze_me=True),
        )
        try:
            image_ids = setid[self._splits_map[self._split]].tolist()
            id_to_label = dict(enumerate((labels["labels"] - 1).tolist(), 1))
            self._labels = [id_to_label[i] for i in image_ids]
        except (KeyError, TypeError, AttributeError) as e:
            raise DatasetError(
                f"the split ids and labels do not match: {e!r}", path=paths["setid"]
            ) from None
        self._image_files = [self._images_folder / f"image_{i:05d}.jpg" for i in image_ids]
        self._ready(loader, on_error)

    def extra_repr(self) -> str:
        return f"split={self._split}"

    def _check_integrity(self) -> bool:
        return self._images_folder.is_dir() and all(
            check_integrity(self._base_folder / self._file_dict[key][0], self._file_dict[key][1])
            for key in ("label", "setid")
        )

    def download(self) -> None:
        """Fetch the images archive (extracted) and the two ``.mat`` files into ``flowers-102``.

        Example:
            >>> Flowers102._file_dict["image"][0]
            '102flowers.tgz'
        """
        if self._check_integrity():
            return
        name, md5 = self._file_dict["image"]
        url = self._download_url_prefix + name
        download_resource(url, self._base_folder, name, md5, extract_to=self._base_folder)
        for key in ("label", "setid"):
            name, md5 = self._file_dict[key]
            download_resource(self._download_url_prefix + name, self._base_folder, name, md5)

    classes: ClassVar[list[str]] = [
        "pink primrose",
        "hard-leaved pocket orchid",
        "canterbury bells",
        "sweet pea",
        "english marigold",
        "tiger lily",
        "moon orchid",
        "bird of paradise",
        "monkshood",
        "globe thistle",
        "snapdragon",
        "colt's foot",
        "king protea",
        "spear thistle",
        "yellow iris",
        "globe-flower",
        "purple coneflower",
        "peruvian lily",
        "balloon flower",
        "giant white arum lily",
        "fire lily",
        "pincushion flower",
        "fritillary",
        "red ginger",
        "grape hyacinth",
        "corn poppy",
        "prince of wales feathers",
        "stemless gentian",
        "artichoke",
        "sweet william",
        "carnation",
        "garden phlox",
        "love in the mist",
        "mexican aster",
        "alpine sea holly",
        "ruby-lipped cattleya",
        "cape flower",
        "great masterwort",
        "siam tulip",
        "lenten rose",
        "barbeton daisy",
        "daffodil",
        "sword lily",
        "poinsettia",
        "bolero deep blue",
        "wallflower",
        "marigold",
        "buttercup",
        "oxeye daisy",
        "common dandelion",
        "petunia",
        "wild pansy",
        "primula",
        "sunflower",
        "pelargonium",
        "bishop of llandaff",
        "gaura",
        "geranium",
        "orange dahlia",
        "pink-yellow dahlia?",
        "cautleya spicata",
        "japanese anemone",
        "black-eyed susan",
        "silverbush",
        "californian poppy",
        "osteospermum",
        "spring crocus",
        "bearded iris",
        "windflower",
        "tree poppy",
        "gazania",
        "azalea",
        "water lily",
        "rose",
        "thorn apple",
        "morning glory",
        "passion flower",
        "lotus",
        "toad lily",
        "anthurium",
        "frangipani",
        "clematis",
        "hibiscus",
        "columbine",
        "desert-rose",
        "tree mallow",
        "magnolia",
        "cyclamen",
        "watercress",
        "canna lily",
        "hippeastrum",
        "bee balm",
        "ball moss",
        "foxglove",
        "bougainvillea",
        "camellia",
        "mallow",
        "mexican petunia",
        "bromelia",
        "blanket flower",
        "trumpet creeper",
        "blackberry lily",
    ]
