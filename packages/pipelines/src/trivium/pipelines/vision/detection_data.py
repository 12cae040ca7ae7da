"""The data side of the detection pipeline: COCO splits, box-aware transforms, loaders.

A COCO-format folder holds one image folder per split and its annotations:
``<data_path>/<split>/*.jpg`` and ``<data_path>/annotations/instances_<split>.json``
(COCO 2017 is ``--train-split train2017 --val-split val2017``). A split becomes a
:class:`trivium.vision.datasets.CocoDetection` of ``(Image, target)`` samples,
``target`` holding ``boxes`` (``BoundingBoxes``, XYXY), ``labels`` and
``image_id``. Loading goes through ``trivium.data.DataLoader`` (exact sharding over
workers and ranks, ``state_dict()`` for mid-epoch resume) with
:func:`trivium.vision.datasets.detection_collate`.

Example:
    >>> [type(t).__name__ for t in train_transforms("hflip").transforms]
    ['RandomHorizontalFlip', 'SanitizeBoundingBoxes']
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trivium.core import Compose, DatasetError
from trivium.vision import transforms as T

__all__ = ["AUGMENTATIONS", "annotation_file", "make_loader", "open_split", "train_transforms"]

# torchvision's detection reference names for its data augmentation presets.
AUGMENTATIONS = ("hflip", "multiscale", "ssd")


def train_transforms(
    augmentation: str = "hflip", image_size: int = 512, hflip_prob: float = 0.5
) -> Compose:
    """The training augmentation of ``(Image, target)`` samples, by preset name.

    * ``"hflip"``: random horizontal flips;
    * ``"multiscale"``: flips and a random shorter side from 0.75x to 1.25x ``image_size``;
    * ``"ssd"``: zoom-out, IoU crop and flips (torchvision's SSD recipe).

    Every preset ends with ``SanitizeBoundingBoxes``: boxes that a crop left
    smaller than a pixel are dropped with their labels, so no degenerate box
    reaches the model.

    Example:
        >>> train_transforms("ssd").transforms[0].__class__.__name__
        'RandomZoomOut'
    """
    if augmentation not in AUGMENTATIONS:
        raise ValueError(f"augmentation must be one of {AUGMENTATIONS}, got {augmentation!r}")
    steps: list[Any] = []
    if augmentation == "ssd":
        steps += [T.RandomZoomOut(fill=0, side_range=(1.0, 2.0)), T.RandomIoUCrop()]
        steps += [T.Resize((image_size, image_size))]
    elif augmentation == "multiscale":
        sizes = list(range(int(0.75 * image_size), int(1.25 * image_size) + 1, 32))
        steps += [T.RandomShortestSize(min_size=sizes, max_size=2 * image_size)]
    steps += [T.RandomHorizontalFlip(hflip_prob), T.SanitizeBoundingBoxes()]
    return Compose(steps)


def annotation_file(data_path: str | Path, split: str) -> Path:
    """``<data_path>/annotations/instances_<split>.json``, checked to exist.

    Example:
        >>> annotation_file("no/such/folder", "val")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        FileNotFoundError: [Errno 2] no COCO annotations for split 'val': '...instances_val.json'
    """
    path = Path(data_path) / "annotations" / f"instances_{split}.json"
    if not path.is_file():
        raise FileNotFoundError(2, f"no COCO annotations for split {split!r}", str(path))
    return path


def open_split(
    data_path: str | Path,
    split: str,
    transforms: Callable[..., Any] | None = None,
    on_error: str = "raise",
) -> Any:
    """The :class:`~trivium.vision.datasets.CocoDetection` of one split.

    ``on_error="skip"`` replaces an image that cannot be read by the next readable
    one (with its own annotations); ``"raise"`` stops naming the file.

    Example:
        >>> open_split("no/such/folder", "train")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        FileNotFoundError: ...
    """
    from trivium.vision.datasets import CocoDetection

    annotations = annotation_file(data_path, split)
    images = Path(data_path) / split
    if not images.is_dir():
        raise DatasetError(f"no image folder for split {split!r}", path=images)
    return CocoDetection(str(images), str(annotations), transforms=transforms, on_error=on_error)


def make_loader(
    dataset: Any, batch_size: int, *, train: bool, workers: int, seed: int, on_error: str = "raise"
) -> Any:
    """``trivium.data.DataLoader`` of detection batches: lists of images and of targets.

    Training batches are shuffled, full and even across ranks; evaluation reads
    everything in order on one process. ``on_error`` is the loader's.

    Example:
        >>> loader = make_loader([(1, {}), (2, {})], 2, train=False, workers=0, seed=0)
        >>> images, targets = next(iter(loader))
        >>> images, targets
        ([1, 2], [{}, {}])
    """
    from trivium.pipelines.vision import common
    from trivium.vision.datasets import detection_collate

    return common.make_loader(
        dataset,
        batch_size,
        train=train,
        workers=workers,
        seed=seed,
        collate_fn=detection_collate,
        on_error=on_error,
    )
