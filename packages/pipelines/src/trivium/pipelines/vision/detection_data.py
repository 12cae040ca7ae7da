"""The data side of the detection pipeline: COCO splits, box-aware transforms, loaders.

A COCO-format folder holds one image folder per split and its annotations:
``<data_path>/<split>/*.jpg`` and ``<data_path>/annotations/instances_<split>.json``
(``person_keypoints_<split>.json`` for keypoints; COCO 2017 is ``--train-split
train2017 --val-split val2017``). A split becomes a
:class:`trivium.vision.datasets.CocoDetection` of ``(Image, target)`` samples,
``target`` holding ``boxes`` (``BoundingBoxes``, XYXY), ``labels`` and
``image_id``, and for Mask R-CNN ``masks`` (``Mask`` ``[N, H, W]`` from the polygons
or RLE), for Keypoint R-CNN ``keypoints`` (float32 ``[N, K, 3]``: x, y, visibility,
as torchvision's detection reference gives them). Loading goes through
``trivium.data.DataLoader`` (exact sharding over workers and ranks, ``state_dict()``
for mid-epoch resume) with
:func:`trivium.vision.datasets.detection_collate`.

Example:
    >>> [type(t).__name__ for t in train_transforms("hflip").transforms]
    ['RandomHorizontalFlip', 'SanitizeBoundingBoxes']
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from trivium.core import Compose, DatasetError, Transform
from trivium.vision import transforms as T
from trivium.vision import tv_tensors
from trivium.vision.transforms import functional as F

__all__ = [
    "AUGMENTATIONS",
    "COCO_PERSON_FLIP_INDICES",
    "TARGETS",
    "RandomHorizontalFlipWithKeypoints",
    "WithKeypoints",
    "annotation_file",
    "flip_keypoints",
    "make_loader",
    "open_split",
    "train_transforms",
]

# torchvision's detection reference names for its data augmentation presets.
AUGMENTATIONS = ("hflip", "multiscale", "ssd")

#: What a model learns beside boxes and labels: nothing, instance masks, keypoints.
TARGETS = ("boxes", "masks", "keypoints")

#: Where each of COCO's 17 person keypoints goes in a mirrored image: left and right
#: swap (eyes, ears, shoulders, ...), the nose stays.
COCO_PERSON_FLIP_INDICES = (0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15)


def flip_keypoints(
    keypoints: Tensor, width: int, flip_indices: tuple[int, ...] = COCO_PERSON_FLIP_INDICES
) -> Tensor:
    """``[N, K, 3]`` keypoints of an image ``width`` wide, mirrored left-right.

    As torchvision's detection reference: ``x`` becomes ``width - x``, keypoint ``k``
    takes the place of ``flip_indices[k]`` (a left wrist becomes a right one), and
    unlabelled keypoints (visibility 0) stay ``(0, 0, 0)``, COCO's convention.

    Example:
        >>> import torch
        >>> points = torch.tensor([[[10.0, 5.0, 2.0], [0.0, 0.0, 0.0], [30.0, 6.0, 1.0]]])
        >>> flip_keypoints(points, 64, (0, 2, 1)).tolist()
        [[[54.0, 5.0, 2.0], [34.0, 6.0, 1.0], [0.0, 0.0, 0.0]]]
    """
    if keypoints.ndim != 3 or keypoints.shape[-1] != 3:
        raise ValueError(
            f"keypoints must be [N, K, 3] (x, y, visibility), got {tuple(keypoints.shape)}"
        )
    if keypoints.shape[1] != len(flip_indices):
        raise ValueError(
            f"keypoints have {keypoints.shape[1]} points per object but flip_indices "
            f"{len(flip_indices)}"
        )
    flipped = keypoints[:, list(flip_indices)].clone()
    flipped[..., 0] = width - flipped[..., 0]
    flipped[flipped[..., 2] == 0] = 0
    return flipped


class RandomHorizontalFlipWithKeypoints(Transform):
    """Mirror an ``(image, target)`` sample left-right with probability ``p``, keypoints too.

    The image and the target's ``BoundingBoxes`` and ``Mask`` flip as
    :class:`trivium.vision.transforms.RandomHorizontalFlip` flips them; the target's
    ``keypoints`` (``[N, K, 3]``) as :func:`flip_keypoints` (torchvision's
    detection reference flips keypoints so, swapping left and right).

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> image = tv_tensors.Image(torch.zeros(3, 4, 8, dtype=torch.uint8))
        >>> target = {"keypoints": torch.tensor([[[1.0, 2.0, 2.0], [3.0, 1.0, 2.0]]])}
        >>> flip = RandomHorizontalFlipWithKeypoints(p=1.0, flip_indices=(1, 0))
        >>> flip(image, target)[1]["keypoints"].tolist()
        [[[5.0, 1.0, 2.0], [7.0, 2.0, 2.0]]]
    """

    def __init__(
        self,
        p: float = 0.5,
        flip_indices: tuple[int, ...] = COCO_PERSON_FLIP_INDICES,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {p!r}")
        self.p = p
        self.flip_indices = tuple(flip_indices)

    def forward(self, image: Any, target: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """``(image, target)`` flipped with probability ``p``, else as given."""
        if float(self._rand(())) >= self.p:
            return image, target
        flipped = dict(target)
        for key, value in target.items():
            if isinstance(value, tv_tensors.BoundingBoxes | tv_tensors.Mask):
                flipped[key] = F.horizontal_flip(value)
        if "keypoints" in target:
            flipped["keypoints"] = flip_keypoints(
                target["keypoints"], image.shape[-1], self.flip_indices
            )
        return F.horizontal_flip(image), flipped


def _labels_and_keypoints(sample: tuple[Any, dict[str, Any]]) -> tuple[Tensor, ...]:
    """What ``SanitizeBoundingBoxes`` drops with a box: its label and its keypoints."""
    target = sample[1]
    return tuple(target[key] for key in ("labels", "keypoints") if key in target)


def train_transforms(
    augmentation: str = "hflip",
    image_size: int = 512,
    hflip_prob: float = 0.5,
    *,
    targets: str = "boxes",
) -> Compose:
    """The training augmentation of ``(Image, target)`` samples, by preset name.

    * ``"hflip"``: random horizontal flips;
    * ``"multiscale"``: flips and a random shorter side from 0.75x to 1.25x ``image_size``;
    * ``"ssd"``: zoom-out, IoU crop and flips (torchvision's SSD recipe).

    ``targets`` (:data:`TARGETS`) is what the samples hold beside boxes: masks move
    with the image in every preset; ``"keypoints"`` takes ``"hflip"`` only, whose
    flip swaps COCO's left and right keypoints
    (:class:`RandomHorizontalFlipWithKeypoints`), as torchvision's reference.

    Every preset ends with ``SanitizeBoundingBoxes``: boxes that a crop left
    smaller than a pixel are dropped with their labels (masks, keypoints), so no
    degenerate box reaches the model.

    Example:
        >>> train_transforms("ssd").transforms[0].__class__.__name__
        'RandomZoomOut'
        >>> train_transforms(targets="keypoints").transforms[0].__class__.__name__
        'RandomHorizontalFlipWithKeypoints'
    """
    if augmentation not in AUGMENTATIONS:
        raise ValueError(f"augmentation must be one of {AUGMENTATIONS}, got {augmentation!r}")
    if targets not in TARGETS:
        raise ValueError(f"targets must be one of {TARGETS}, got {targets!r}")
    if targets == "keypoints":
        if augmentation != "hflip":
            raise ValueError(
                f"augmentation={augmentation!r} does not move keypoints; "
                f"keypoint models take augmentation='hflip'"
            )
        flip = RandomHorizontalFlipWithKeypoints(hflip_prob)
        return Compose([flip, T.SanitizeBoundingBoxes(labels_getter=_labels_and_keypoints)])
    steps: list[Any] = []
    if augmentation == "ssd":
        steps += [T.RandomZoomOut(fill=0, side_range=(1.0, 2.0)), T.RandomIoUCrop()]
        steps += [T.Resize((image_size, image_size))]
    elif augmentation == "multiscale":
        sizes = list(range(int(0.75 * image_size), int(1.25 * image_size) + 1, 32))
        steps += [T.RandomShortestSize(min_size=sizes, max_size=2 * image_size)]
    steps += [T.RandomHorizontalFlip(hflip_prob), T.SanitizeBoundingBoxes()]
    return Compose(steps)


def annotation_file(data_path: str | Path, split: str, targets: str = "boxes") -> Path:
    """``<data_path>/annotations/instances_<split>.json``, checked to exist.

    For ``targets="keypoints"``: ``person_keypoints_<split>.json``, COCO's name.

    Example:
        >>> annotation_file("no/such/folder", "val")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        FileNotFoundError: [Errno 2] no COCO annotations for split 'val': '...instances_val.json'
    """
    kind = "person_keypoints" if targets == "keypoints" else "instances"
    path = Path(data_path) / "annotations" / f"{kind}_{split}.json"
    if not path.is_file():
        raise FileNotFoundError(2, f"no COCO annotations for split {split!r}", str(path))
    return path


def open_split(
    data_path: str | Path,
    split: str,
    transforms: Callable[..., Any] | None = None,
    on_error: str = "raise",
    *,
    targets: str = "boxes",
) -> Any:
    """The :class:`~trivium.vision.datasets.CocoDetection` of one split.

    ``targets`` (:data:`TARGETS`): ``"masks"`` adds the target's ``masks``,
    ``"keypoints"`` reads ``person_keypoints_<split>.json`` and adds ``keypoints``
    (float32 ``[N, K, 3]``, ``K`` the person category's keypoint names, 17 for COCO).
    ``on_error="skip"`` replaces an image that cannot be read by the next readable
    one (with its own annotations); ``"raise"`` stops naming the file.

    Example:
        >>> open_split("no/such/folder", "train")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        FileNotFoundError: ...
    """
    from trivium.vision.datasets import CocoDetection

    if targets not in TARGETS:
        raise ValueError(f"targets must be one of {TARGETS}, got {targets!r}")
    annotations = annotation_file(data_path, split, targets)
    images = Path(data_path) / split
    if not images.is_dir():
        raise DatasetError(f"no image folder for split {split!r}", path=images)
    keys = ("image_id", "boxes", "labels") + (("masks",) if targets == "masks" else ())
    dataset = CocoDetection(
        str(images), str(annotations), target_keys=keys, transforms=transforms, on_error=on_error
    )
    if targets == "keypoints":
        dataset.transforms = WithKeypoints(dataset.coco, str(annotations), transforms)
    return dataset


class WithKeypoints:
    """Adds ``keypoints`` to a ``CocoDetection`` target, then runs ``transforms``.

    The keypoints of the target's ``image_id``, in the order of its boxes (both are
    ``coco.getAnnIds(imgIds=image_id)``'s), as float32 ``[N, K, 3]``; ``K`` is the
    length of the categories' ``keypoints`` names (17 for COCO's persons).

    Example:
        >>> import json, tempfile, pathlib
        >>> from pycocotools.coco import COCO
        >>> coco = COCO()
        >>> coco.dataset = {"images": [{"id": 1}], "categories": [{"id": 1, "keypoints": ["a"]}],
        ...                 "annotations": [{"id": 1, "image_id": 1, "category_id": 1,
        ...                                  "bbox": [0, 0, 4, 4], "keypoints": [2, 3, 2]}]}
        >>> coco.createIndex()  # doctest: +ELLIPSIS
        creating index...
        >>> WithKeypoints(coco, "ann.json")(None, {"image_id": 1})[1]["keypoints"].tolist()
        [[[2.0, 3.0, 2.0]]]
    """

    def __init__(self, coco: Any, path: str, transforms: Callable[..., Any] | None = None) -> None:
        self.coco, self.path, self.transforms = coco, path, transforms
        names = [len(c.get("keypoints") or ()) for c in coco.dataset.get("categories", [])]
        self.num_keypoints = max(names, default=0) or 17

    def __call__(self, image: Any, target: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        anns = self.coco.loadAnns(self.coco.getAnnIds(imgIds=target["image_id"]))
        rows = []
        for ann in anns:
            points = ann.get("keypoints") or [0.0] * (3 * self.num_keypoints)
            if len(points) != 3 * self.num_keypoints:
                raise DatasetError(
                    f"annotation id {ann.get('id')!r} has {len(points)} keypoint values, "
                    f"not {3 * self.num_keypoints} ({self.num_keypoints} x, y, visibility)",
                    path=self.path,
                )
            rows.append(points)
        keypoints = torch.tensor(rows, dtype=torch.float32).reshape(-1, self.num_keypoints, 3)
        target = {**target, "keypoints": keypoints}
        if self.transforms is None:
            return image, target
        return self.transforms(image, target)


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
