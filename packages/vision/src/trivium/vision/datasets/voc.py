"""Pascal VOC (2007-2012) detection and segmentation from ``VOCdevkit/VOC<year>``, as torchvision.

Example:
    >>> import tempfile
    >>> VOCSegmentation(tempfile.mkdtemp(), year="2012")
    Traceback (most recent call last):
    ...
    trivium.core.errors.PathNotFoundError: .../VOCdevkit/VOC2012: no such file or directory; \
pass download=True to fetch the dataset
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable
from typing import Any, ClassVar
from xml.etree.ElementTree import Element, ParseError

try:  # defusedxml where installed, as torchvision
    from defusedxml.ElementTree import parse as _parse_xml
except ImportError:
    from xml.etree.ElementTree import parse as _parse_xml

from trivium.core.errors import NO_SUCH_PATH, DatasetError, PathNotFoundError
from trivium.vision.datasets.utils import (
    VisionDataset,
    download_resource,
    pil_loader,
    pil_open,
    require_file,
    verify_str_arg,
)

__all__ = ["DATASET_YEAR_DICT", "VOCDetection", "VOCSegmentation"]

_THOR = "https://thor.robots.ox.ac.uk/pascal/VOC/"
#: torchvision's archives per year (the 2008 file name is torchvision's too).
DATASET_YEAR_DICT: dict[str, dict[str, str]] = {
    "2012": {
        "url": _THOR + "voc2012/VOCtrainval_11-May-2012.tar",
        "filename": "VOCtrainval_11-May-2012.tar",
        "md5": "6cd6e144f989b92b3379bac3b3de84fd",
        "base_dir": os.path.join("VOCdevkit", "VOC2012"),
    },
    "2011": {
        "url": _THOR + "voc2011/VOCtrainval_25-May-2011.tar",
        "filename": "VOCtrainval_25-May-2011.tar",
        "md5": "6c3384ef61512963050cb5d687e5bf1e",
        "base_dir": os.path.join("TrainVal", "VOCdevkit", "VOC2011"),
    },
    "2010": {
        "url": _THOR + "voc2010/VOCtrainval_03-May-2010.tar",
        "filename": "VOCtrainval_03-May-2010.tar",
        "md5": "da459979d0c395079b5c75ee67908abb",
        "base_dir": os.path.join("VOCdevkit", "VOC2010"),
    },
    "2009": {
        "url": _THOR + "voc2009/VOCtrainval_11-May-2009.tar",
        "filename": "VOCtrainval_11-May-2009.tar",
        "md5": "a3e00b113cfcfebf17e343f59da3caa1",
        "base_dir": os.path.join("VOCdevkit", "VOC2009"),
    },
    "2008": {
        "url": _THOR + "voc2008/VOCtrainval_14-Jul-2008.tar",
        "filename": "VOCtrainval_11-May-2012.tar",
        "md5": "2629fa636546599198acfcfbfcf1904a",
        "base_dir": os.path.join("VOCdevkit", "VOC2008"),
    },
    "2007": {
        "url": _THOR + "voc2007/VOCtrainval_06-Nov-2007.tar",
        "filename": "VOCtrainval_06-Nov-2007.tar",
        "md5": "c52e279531787c972589f7e41ab4ae64",
        "base_dir": os.path.join("VOCdevkit", "VOC2007"),
    },
    "2007-test": {
        "url": _THOR + "voc2007/VOCtest_06-Nov-2007.tar",
        "filename": "VOCtest_06-Nov-2007.tar",
        "md5": "b6e924de25625d8de591ea690078ad9f",
        "base_dir": os.path.join("VOCdevkit", "VOC2007"),
    },
}


class _VOCBase(VisionDataset):
    _SPLITS_DIR: ClassVar[str]
    _TARGET_DIR: ClassVar[str]
    _TARGET_FILE_EXT: ClassVar[str]

    def __init__(
        self,
        root: str | os.PathLike[str],
        year: str = "2012",
        image_set: str = "train",
        download: bool = False,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        transforms: Callable | None = None,
        *,
        loader: Callable[[str], Any] = pil_loader,
    ) -> None:
        super().__init__(root, transforms, transform, target_transform)
        self.year = verify_str_arg(year, "year", [str(y) for y in range(2007, 2013)])
        image_sets = ["train", "trainval", "val"] + (["test"] if year == "2007" else [])
        self.image_set = verify_str_arg(image_set, "image_set", image_sets)
        entry = DATASET_YEAR_DICT["2007-test" if year == "2007" and image_set == "test" else year]
        self.url, self.filename, self.md5 = entry["url"], entry["filename"], entry["md5"]
        self.loader = loader
        voc_root = os.path.join(self.root, entry["base_dir"])
        if download:
            download_resource(self.url, self.root, self.filename, self.md5, extract_to=self.root)
        if not os.path.isdir(voc_root):
            raise PathNotFoundError(
                f"{NO_SUCH_PATH}; pass download=True to fetch the dataset", path=voc_root
            )
        split_file = os.path.join(voc_root, "ImageSets", self._SPLITS_DIR, image_set + ".txt")
        with open(require_file(split_file, can_download=False)) as f:
            names = [line.strip() for line in f if line.strip()]
        self.images = [os.path.join(voc_root, "JPEGImages", n + ".jpg") for n in names]
        target_dir = os.path.join(voc_root, self._TARGET_DIR)
        self.targets = [os.path.join(target_dir, n + self._TARGET_FILE_EXT) for n in names]

    def _load_target(self, index: int) -> Any:
        raise NotImplementedError

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image, target = self.loader(self.images[index]), self._load_target(index)
        if self.transforms is not None:
            image, target = self.transforms(image, target)
        return image, target

    def __len__(self) -> int:
        return len(self.images)


class VOCSegmentation(_VOCBase):
    """VOC segmentation: ``(PIL RGB image, PIL "P" mask)``, as torchvision's ``VOCSegmentation``.

    Reads ``ImageSets/Segmentation/<image_set>.txt``, ``JPEGImages/<id>.jpg`` and
    ``SegmentationClass/<id>.png`` (the mask as stored: mode ``"P"``, 255 on the
    borders, opened by Pillow as torchvision opens it); images decode through
    ``loader`` (:func:`pil_loader`: :mod:`trivium.vision.io` to PIL RGB).

    Args:
        root: the folder holding ``VOCdevkit`` (``TrainVal/VOCdevkit`` for 2011).
        year: ``"2007"`` to ``"2012"``.
        image_set: ``"train"``, ``"trainval"``, ``"val"`` (and ``"test"`` for 2007).
        download: fetch and extract the year's archive.
        transform: applied to the image.
        target_transform: applied to the mask.
        transforms: applied to ``(image, mask)``; not with the two above.
        loader: reads an image file (keyword only).

    Example:
        >>> VOCSegmentation._TARGET_DIR
        'SegmentationClass'
    """

    _SPLITS_DIR = "Segmentation"
    _TARGET_DIR = "SegmentationClass"
    _TARGET_FILE_EXT = ".png"

    @property
    def masks(self) -> list[str]:
        """The mask files, one per image (``targets``).

        Example:
            >>> ds = VOCSegmentation.__new__(VOCSegmentation)
            >>> ds.targets = ["SegmentationClass/2007_000032.png"]
            >>> ds.masks
            ['SegmentationClass/2007_000032.png']
        """
        return self.targets

    def _load_target(self, index: int) -> Any:
        return pil_open(self.masks[index])


class VOCDetection(_VOCBase):
    """VOC detection: ``(PIL RGB image, annotation dict)``, as torchvision's ``VOCDetection``.

    Reads ``ImageSets/Main/<image_set>.txt``, ``JPEGImages/<id>.jpg`` and
    ``Annotations/<id>.xml``; the target is the XML as nested dicts
    (:meth:`parse_voc_xml`, torchvision's: ``{"annotation": {..., "object": [...]}}``,
    every value a string). An XML file that does not parse raises ``DatasetError``
    naming it. Arguments as :class:`VOCSegmentation`.

    Example:
        >>> from xml.etree.ElementTree import fromstring
        >>> xml = ("<annotation><filename>a.jpg</filename>"
        ...        "<object><name>cat</name></object></annotation>")
        >>> VOCDetection.parse_voc_xml(fromstring(xml))
        {'annotation': {'filename': 'a.jpg', 'object': [{'name': 'cat'}]}}
    """

    _SPLITS_DIR = "Main"
    _TARGET_DIR = "Annotations"
    _TARGET_FILE_EXT = ".xml"

    @property
    def annotations(self) -> list[str]:
        """The annotation files, one per image (``targets``).

        Example:
            >>> ds = VOCDetection.__new__(VOCDetection)
            >>> ds.targets = ["Annotations/2007_000032.xml"]
            >>> ds.annotations
            ['Annotations/2007_000032.xml']
        """
        return self.targets

    def _load_target(self, index: int) -> Any:
        path = self.annotations[index]
        try:
            root = _parse_xml(path).getroot()
        except FileNotFoundError:
            raise PathNotFoundError(path=path) from None
        except ParseError as e:
            raise DatasetError(f"not a VOC annotation: {e}", path=path) from None
        return self.parse_voc_xml(root)

    @staticmethod
    def parse_voc_xml(node: Element) -> dict[str, Any]:
        """An XML element as torchvision's nested dict (``object`` always a list).

        Example:
            >>> from xml.etree.ElementTree import fromstring
            >>> VOCDetection.parse_voc_xml(fromstring("<size><width>5</width></size>"))
            {'size': {'width': '5'}}
        """
        voc_dict: dict[str, Any] = {}
        children = list(node)
        if children:
            grouped: dict[str, list[Any]] = collections.defaultdict(list)
            for child in map(VOCDetection.parse_voc_xml, children):
                for key, value in child.items():
                    grouped[key].append(value)
            if node.tag == "annotation":
                grouped["object"] = [grouped["object"]]
            voc_dict = {node.tag: {k: v[0] if len(v) == 1 else v for k, v in grouped.items()}}
        if node.text:
            text = node.text.strip()
            if not children:
                voc_dict[node.tag] = text
        return voc_dict
