"""``CocoDetection``: COCO-format detection data as torchvision's v2 datasets give it.

A sample is ``(image, target)``: the image a uint8 :class:`~trivium.vision.tv_tensors.Image`
``[3, H, W]`` (RGB, decoded natively), the target the dict torchvision's
``wrap_dataset_for_transforms_v2(torchvision.datasets.CocoDetection(...))`` gives,
ready for a detection model and the v2 transforms. :func:`detection_collate` batches
such samples as torchvision's detection references do. Reading the annotations needs
pycocotools: ``pip install 'trivium-vision[detection]'``.

Example:
    >>> import tempfile
    >>> from trivium.vision.corpora import build_detection_corpus
    >>> root = build_detection_corpus(tempfile.mkdtemp(), num_train=2, num_val=0)
    >>> ds = CocoDetection(root / "train", root / "annotations" / "instances_train.json")
    >>> image, target = ds[0]
    >>> type(image).__name__, image.shape, sorted(target)
    ('Image', torch.Size([3, 128, 128]), ['boxes', 'image_id', 'labels'])
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import math
import operator
import os
import warnings
from collections.abc import Callable, Collection, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

from trivium.core.errors import DatasetError, PathNotFoundError, TriviumError
from trivium.core.skipping import SkipsUnreadable, check_on_error, with_path
from trivium.vision import tv_tensors
from trivium.vision.datasets.utils import ImageFileDataset, pil_loader
from trivium.vision.io import ImageReadMode, decode_image, read_file

__all__ = ["COCO_TARGET_KEYS", "CocoCaptions", "CocoDetection", "detection_collate"]

#: The keys ``target_keys`` may name (torchvision's): the annotations' own fields
#: and the ones built from them (``boxes``, ``masks``, ``labels``).
COCO_TARGET_KEYS = frozenset(
    {
        "segmentation",
        "area",
        "iscrowd",
        "image_id",
        "bbox",
        "category_id",
        "boxes",
        "masks",
        "labels",
    }
)
_BUILT = ("image_id", "boxes", "masks", "labels")


def import_pycocotools(*modules: str, needed_by: str) -> list[Any]:
    """``pycocotools.<module>`` for each of ``modules``, or an ImportError saying how to install it.

    Example:
        >>> import_pycocotools("nope", needed_by="This example")
        Traceback (most recent call last):
        ...
        ImportError: This example needs pycocotools: pip install 'trivium-vision[detection]'
    """
    try:
        return [importlib.import_module(f"pycocotools.{name}") for name in modules]
    except ImportError as e:
        raise ImportError(
            f"{needed_by} needs pycocotools: pip install 'trivium-vision[detection]'"
        ) from e


def _pycocotools() -> tuple[Any, Any]:
    coco, mask = import_pycocotools("coco", "mask", needed_by="CocoDetection")
    return coco.COCO, mask


def _target_keys(target_keys: str | Collection[str] | None) -> tuple[str, ...]:
    if target_keys is None:
        target_keys = ("image_id", "boxes", "labels")
    keys = set(COCO_TARGET_KEYS) if target_keys == "all" else set(target_keys)
    extra = keys - COCO_TARGET_KEYS
    if extra or (isinstance(target_keys, str) and target_keys != "all"):
        raise ValueError(
            f"target_keys must be 'all' or names from {sorted(COCO_TARGET_KEYS)}, "
            f"got {target_keys!r}"
        )
    return tuple(k for k in _BUILT if k in keys) + tuple(sorted(keys - set(_BUILT)))


def _load_annotations(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            dataset = json.load(f)
    except FileNotFoundError:
        raise PathNotFoundError(path=path) from None
    except (OSError, ValueError) as e:
        raise DatasetError(f"cannot read the COCO annotations: {e}", path=path) from e
    if not isinstance(dataset, dict) or not isinstance(dataset.get("images"), list):
        raise DatasetError("not a COCO annotation file: no 'images' list", path=path)
    return dataset


def _check_annotations(dataset: dict, path: str) -> None:
    """Refuse annotations a target cannot be built from, naming the annotation id."""
    image_ids = {image.get("id") for image in dataset["images"]}
    category_ids = {c.get("id") for c in dataset.get("categories", [])}
    for ann in dataset.get("annotations", []):
        where = f"{path}: annotation id {ann.get('id')!r}"
        bbox = ann.get("bbox")
        if not (
            isinstance(bbox, list | tuple)
            and len(bbox) == 4
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in bbox)
            and all(math.isfinite(v) for v in bbox)
        ):
            raise ValueError(f"{where}: bbox must be 4 finite numbers [x, y, w, h], got {bbox!r}")
        if bbox[2] < 0 or bbox[3] < 0:
            raise ValueError(f"{where}: bbox width and height must be >= 0, got {bbox!r}")
        if ann.get("category_id") not in category_ids:
            raise ValueError(
                f"{where}: category_id {ann.get('category_id')!r} is not one of the "
                f"categories {sorted(category_ids)}"
            )
        if ann.get("image_id") not in image_ids:
            raise ValueError(f"{where}: image_id {ann.get('image_id')!r} is not one of the images")


class CocoDetection(SkipsUnreadable, Dataset):
    """COCO detection data: ``(image, target)`` as torchvision's v2-wrapped ``CocoDetection``.

    Args:
        root: the folder the images' ``file_name`` are relative to.
        annFile: the COCO annotation file (``instances_*.json``).
        transform: applied to the image.
        target_transform: applied to the target dict.
        transforms: applied to ``(image, target)`` together (e.g. a v2 transform
            that moves the boxes with the image); not with the two above.
        target_keys: what the target holds: by default ``image_id`` (int), ``boxes``
            (:class:`~trivium.vision.tv_tensors.BoundingBoxes` XYXY, float32,
            ``canvas_size=(H, W)``) and ``labels`` (int64, the category ids); also
            ``masks`` (:class:`~trivium.vision.tv_tensors.Mask` ``[N, H, W]`` uint8
            from the polygons or RLE) and the annotations' own fields as lists
            (``segmentation``, ``area``, ``iscrowd``, ``bbox``, ``category_id``);
            ``"all"`` for every one.
        on_error: ``"raise"``, or ``"skip"`` to replace an image that cannot be
            read by the next readable one, as :class:`~trivium.vision.datasets.ImageFolder`.

    Attributes are torchvision's: ``coco`` (the pycocotools ``COCO``) and ``ids``
    (the image ids, sorted; sample ``i`` is image ``ids[i]``).

    The targets are those of ``torchvision.datasets.wrap_dataset_for_transforms_v2``
    except for an image without annotations: it gets empty ``boxes`` ``[0, 4]``,
    ``labels`` ``[0]`` (and ``masks`` ``[0, H, W]``), where torchvision gives
    only ``image_id``. Annotations whose ``bbox`` is not 4 finite numbers, or whose
    ``category_id`` or ``image_id`` is unknown, are refused at construction
    (``ValueError`` naming the annotation id). An image file that is missing or
    damaged raises, when read, a ``trivium.core`` error naming it
    (``PathNotFoundError``, ``DecodeError``).

    Example:
        >>> import tempfile
        >>> from trivium.vision.corpora import build_detection_corpus
        >>> root = build_detection_corpus(tempfile.mkdtemp(), num_train=0, num_val=1)
        >>> ds = CocoDetection(root / "val", root / "annotations" / "instances_val.json",
        ...                    target_keys=["boxes", "masks"])
        >>> image, target = ds[0]
        >>> target["boxes"].format.value, target["boxes"].canvas_size, target["masks"].dtype
        ('XYXY', (128, 128), torch.uint8)
        >>> target["masks"].shape[0] == target["boxes"].shape[0]
        True
    """

    item_kind = "image"

    def __init__(
        self,
        root: str | os.PathLike[str],
        annFile: str | os.PathLike[str],
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        transforms: Callable | None = None,
        *,
        target_keys: str | Collection[str] | None = ("image_id", "boxes", "labels"),
        on_error: str = "raise",
    ) -> None:
        if transforms is not None and (transform is not None or target_transform is not None):
            raise ValueError(
                "Only transforms or transform/target_transform can be passed as argument"
            )
        coco_cls, _ = _pycocotools()
        self.root = os.path.expanduser(root) if isinstance(root, str) else root
        self.annFile = os.fspath(annFile)
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = transforms
        self.target_keys = _target_keys(target_keys)
        check_on_error(on_error)  # before the annotations are read
        dataset = _load_annotations(self.annFile)
        _check_annotations(dataset, self.annFile)
        with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints its progress
            self.coco = coco_cls()
            self.coco.dataset = dataset
            self.coco.createIndex()
        self.ids = sorted(self.coco.imgs.keys())
        self.start_skipping(on_error, len(self.ids))

    def __len__(self) -> int:
        return len(self.ids)

    def _path(self, image_id: int) -> str:
        return os.path.join(self.root, self.coco.imgs[image_id]["file_name"])

    def _load_image(self, image_id: int) -> tv_tensors.Image:
        path = self._path(image_id)
        try:
            return tv_tensors.Image(decode_image(read_file(path), ImageReadMode.RGB, path=path))
        except (TriviumError, OSError) as e:
            raise with_path(e, path) from e

    def _load_target(self, image_id: int) -> list[dict]:
        return self.coco.loadAnns(self.coco.getAnnIds(imgIds=image_id))

    def _masks(self, annotations: list[dict], height: int, width: int) -> tv_tensors.Mask:
        _, mask_api = _pycocotools()
        masks = []
        for ann in annotations:
            segmentation = ann.get("segmentation")
            if isinstance(segmentation, dict):
                if not isinstance(segmentation.get("counts"), str | bytes):  # uncompressed RLE
                    segmentation = mask_api.frPyObjects(segmentation, height, width)
            elif isinstance(segmentation, list):
                segmentation = mask_api.merge(mask_api.frPyObjects(segmentation, height, width))
            else:
                raise ValueError(
                    f"{self.annFile}: annotation id {ann.get('id')!r}: segmentation must be "
                    f"polygons or RLE, got {type(segmentation).__name__}"
                )
            with warnings.catch_warnings():  # NumPy 2's copy-keyword notice
                warnings.simplefilter("ignore", DeprecationWarning)
                masks.append(torch.from_numpy(mask_api.decode(segmentation)))
        if not masks:
            return tv_tensors.Mask(torch.zeros(0, height, width, dtype=torch.uint8))
        return tv_tensors.Mask(torch.stack(masks))

    def _target(self, image_id: int, annotations: list[dict], height: int, width: int) -> dict:
        target: dict[str, Any] = {}
        for key in self.target_keys:
            if key == "image_id":
                target[key] = image_id
            elif key == "boxes":
                xywh = torch.tensor([a["bbox"] for a in annotations], dtype=torch.float32)
                x, y, w, h = xywh.reshape(-1, 4).unbind(-1)
                target[key] = tv_tensors.BoundingBoxes(
                    torch.stack([x, y, x + w, y + h], dim=-1),
                    format=tv_tensors.BoundingBoxFormat.XYXY,
                    canvas_size=(height, width),
                )
            elif key == "masks":
                target[key] = self._masks(annotations, height, width)
            elif key == "labels":
                target[key] = torch.tensor(
                    [a["category_id"] for a in annotations], dtype=torch.int64
                )
            else:
                target[key] = [a[key] for a in annotations]
        return target

    def load_item(self, index: int) -> tuple[Any, Any]:
        """``(image, target)`` of image ``ids[index]``, or a ``trivium.core`` error naming its file.

        The hook :meth:`__getitem__` calls: it never skips, whatever ``on_error``.

        Example:
            >>> import os, tempfile
            >>> from trivium.vision.corpora import build_detection_corpus
            >>> root = build_detection_corpus(tempfile.mkdtemp(), num_train=0, num_val=1)
            >>> ds = CocoDetection(root / "val", root / "annotations" / "instances_val.json",
            ...                    on_error="skip")
            >>> ds.load_item(0)[1]["image_id"]
            1
            >>> os.remove(ds.item_path(0))
            >>> ds.load_item(0)
            Traceback (most recent call last):
            ...
            trivium.core.errors.PathNotFoundError: ...
        """
        image_id = self.ids[index]
        image = self._load_image(image_id)
        height, width = image.shape[-2:]
        target = self._target(image_id, self._load_target(image_id), height, width)
        if self.transforms is not None:
            return self.transforms(image, target)
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        """``(image, target)`` of image ``ids[index]`` (see the class docstring).

        Example:
            >>> import tempfile
            >>> from trivium.vision.corpora import build_detection_corpus
            >>> root = build_detection_corpus(tempfile.mkdtemp(), num_train=0, num_val=1)
            >>> ds = CocoDetection(root / "val", root / "annotations" / "instances_val.json")
            >>> ds[0][1]["image_id"], ds[0][1]["labels"].dtype
            (1, torch.int64)
        """
        if not isinstance(index, int):
            index = operator.index(index)
        return self.get_item(index)

    def item_path(self, index: int) -> str:
        """The image file of ``ids[index]`` (``root`` joined with its ``file_name``).

        Example:
            >>> import os, tempfile
            >>> from trivium.vision.corpora import build_detection_corpus
            >>> root = build_detection_corpus(tempfile.mkdtemp(), num_train=0, num_val=1)
            >>> ds = CocoDetection(root / "val", root / "annotations" / "instances_val.json")
            >>> os.path.isfile(ds.item_path(0))
            True
        """
        return self._path(self.ids[index])

    def __repr__(self) -> str:
        lines = [f"Number of datapoints: {len(self)}", f"Root location: {self.root}"]
        if self.on_error != "raise":
            lines.append(f"on_error: {self.on_error!r}")
        for name in ("transforms", "transform", "target_transform"):
            value = getattr(self, name)
            if value is not None:
                lines += f"{name.replace('_', ' ').capitalize()}: {value!r}".splitlines()
        return "\n".join([f"Dataset {type(self).__name__}", *("    " + line for line in lines)])


def detection_collate(batch: Sequence[tuple[Any, Any]]) -> tuple[list[Any], list[Any]]:
    """``(images, targets)`` lists from ``(image, target)`` samples, for a detection DataLoader.

    Detection images differ in size and targets in box count, so nothing is stacked
    (torchvision's references' ``collate_fn``, with lists for tuples).

    Example:
        >>> import torch
        >>> images, targets = detection_collate([(torch.zeros(3, 4, 4), {"a": 1}),
        ...                                      (torch.zeros(3, 6, 5), {"a": 2})])
        >>> [i.shape[-1] for i in images], targets
        ([4, 5], [{'a': 1}, {'a': 2}])
    """
    images, targets = [], []
    for sample in batch:
        if not isinstance(sample, tuple | list) or len(sample) != 2:
            raise TypeError(
                f"detection_collate: samples must be (image, target) pairs, got {sample!r}"
            )
        images.append(sample[0])
        targets.append(sample[1])
    return images, targets


class CocoCaptions(ImageFileDataset):
    """COCO captions: ``(PIL RGB image, list of captions)``, as torchvision's ``CocoCaptions``.

    The annotation file (``captions_*.json``) is read as JSON (pycocotools is not
    needed); samples are the images in sorted id order (``ids``), each with its
    captions in the file's order, as pycocotools gives them to torchvision.

    Args:
        root: the folder the images' ``file_name`` are relative to.
        annFile: the COCO captions annotation file.
        transform: applied to the image.
        target_transform: applied to the list of captions.
        transforms: applied to ``(image, captions)``; not with the two above.
        loader: reads an image file (keyword only; ``pil_loader``).
        on_error: ``"raise"``, or ``"skip"`` to replace unreadable images (keyword only).

    Example:
        >>> import json, os, tempfile, torch
        >>> from trivium.vision.io import write_jpeg
        >>> root = tempfile.mkdtemp()
        >>> write_jpeg(torch.zeros(3, 4, 4, dtype=torch.uint8), os.path.join(root, "a.jpg"))
        >>> ann = {"images": [{"id": 7, "file_name": "a.jpg"}],
        ...        "annotations": [{"id": 1, "image_id": 7, "caption": "A black square."}]}
        >>> with open(os.path.join(root, "captions.json"), "w") as f:
        ...     json.dump(ann, f)
        >>> image, captions = CocoCaptions(root, os.path.join(root, "captions.json"))[0]
        >>> image.size, captions
        ((4, 4), ['A black square.'])
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        annFile: str | os.PathLike[str],
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        transforms: Callable | None = None,
        *,
        loader: Callable[[Any], Any] = pil_loader,
        on_error: str = "raise",
    ) -> None:
        super().__init__(root, transforms, transform, target_transform)
        self.annFile = os.fspath(annFile)
        dataset = _load_annotations(self.annFile)
        try:
            files = {image["id"]: image["file_name"] for image in dataset["images"]}
            self._captions: dict[Any, list[str]] = {image_id: [] for image_id in files}
            for ann in dataset.get("annotations", []):
                self._captions[ann["image_id"]].append(ann["caption"])
        except (KeyError, TypeError) as e:
            raise DatasetError(
                f"not a COCO captions file: an image or annotation lacks {e}", path=self.annFile
            ) from None
        self.ids = sorted(files)
        self._image_files = [os.path.join(self.root, files[i]) for i in self.ids]
        self._ready(loader, on_error)

    def _target(self, index: int) -> list[str]:
        return list(self._captions[self.ids[index]])
