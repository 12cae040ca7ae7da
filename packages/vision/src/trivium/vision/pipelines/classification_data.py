"""The data side of the classification pipeline: splits, transforms and loaders.

A split is ``<data_path>/<split>`` holding either an ImageFolder tree
(``<class>/<image>``) or the Parquet shards that ``trivium-data convert image-folder``
writes from one (columns ``image``, ``label`` and ``class_name``). Both become a
map-style dataset of ``(image, label)``
with the same samples in the same order, so the same run trains identically on
either. Loading goes through ``trivium.data.DataLoader`` (``pip install
trivium-vision[pipelines]``): exact sharding over workers and ranks, and
``state_dict()`` for mid-epoch resume.

Example:
    >>> t = train_transform(crop_size=32)
    >>> type(t.transforms[0]).__name__
    'DecodeRandomResizedCrop'
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from trivium.core import Compose, DatasetError
from trivium.vision.io import ImageReadMode, decode_image
from trivium.vision.transforms import (
    DecodeRandomResizedCrop,
    ImageClassificationEval,
    Normalize,
    RandomHorizontalFlip,
    ToDtype,
)
from trivium.vision.transforms.interpolation import InterpolationMode
from trivium.vision.transforms.presets import IMAGENET_MEAN, IMAGENET_STD, _policy

__all__ = ["eval_transform", "find_classes", "make_loader", "open_split", "train_transform"]


def train_transform(
    crop_size: int,
    auto_augment: str | None = None,
    hflip_prob: float = 0.5,
    generator: torch.Generator | None = None,
    scale_min: float = 0.08,
) -> Compose:
    """JPEG/PNG bytes -> normalised float32 crop: fused decode-and-crop, flip, policy, Normalize.

    The crop is decoded straight from the bytes (only its region, at the smallest
    DCT scale that covers it), covering ``scale_min`` to all of the image's area;
    ``auto_augment`` is a policy name of torchvision's presets (``"ra"``,
    ``"ta_wide"``, ``"augmix"``, ``"imagenet"``, ...).

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_jpeg
        >>> data = encode_jpeg(torch.zeros(3, 40, 60, dtype=torch.uint8))
        >>> train_transform(32)(data).shape
        torch.Size([3, 32, 32])
    """
    crop = DecodeRandomResizedCrop(crop_size, scale=(scale_min, 1.0), generator=generator)
    steps: list[Any] = [crop]
    if hflip_prob > 0:
        steps.append(RandomHorizontalFlip(hflip_prob, generator=generator))
    if auto_augment:
        steps.append(_policy(auto_augment, InterpolationMode.BILINEAR, 9, 3, generator))
    steps += [ToDtype(torch.float32, scale=True), Normalize(IMAGENET_MEAN, IMAGENET_STD)]
    return Compose(steps)


def eval_transform(crop_size: int, resize_size: int) -> Callable[[Any], torch.Tensor]:
    """JPEG/PNG bytes -> RGB decode -> ``ImageClassificationEval(crop_size, resize_size)``.

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(3, 40, 60, dtype=torch.uint8))
        >>> eval_transform(32, 36)(data).shape
        torch.Size([3, 32, 32])
    """
    return _DecodeThen(ImageClassificationEval(crop_size=crop_size, resize_size=resize_size))


class _DecodeThen:
    """Decode encoded bytes to RGB uint8, then apply ``transform`` (picklable for workers)."""

    def __init__(self, transform: Callable[[torch.Tensor], torch.Tensor]) -> None:
        self.transform = transform

    def __call__(self, data: Any) -> torch.Tensor:
        return self.transform(decode_image(data, ImageReadMode.RGB))


class _Row:
    """An Arrow row ``{"image": bytes, "label": int}`` -> ``(transform(image), label)``."""

    def __init__(self, transform: Callable[[Any], torch.Tensor]) -> None:
        self.transform = transform

    def __call__(self, row: dict[str, Any]) -> tuple[torch.Tensor, int]:
        return self.transform(row["image"]), int(row["label"])


def _shards(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parquet"))


def find_classes(data_path: str | Path, split: str = "train") -> list[str]:
    """The class names of a split, in label order: its folders, or the shards' ``class_name``.

    Example:
        >>> import tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> for c in ("dog", "cat"):
        ...     (root / "train" / c).mkdir(parents=True)
        >>> find_classes(root)
        ['cat', 'dog']
    """
    folder = _split_folder(data_path, split)
    shards = _shards(folder)
    if not shards:
        return sorted(entry.name for entry in folder.iterdir() if entry.is_dir())
    import pyarrow.parquet as pq

    names: dict[int, str] = {}
    for shard in shards:
        table = pq.read_table(shard, columns=["label", "class_name"])
        labels, class_names = table["label"].to_pylist(), table["class_name"].to_pylist()
        names.update(zip(labels, class_names, strict=True))
    if sorted(names) != list(range(len(names))):
        raise DatasetError("the shards' labels are not 0..N-1", path=folder)
    return [names[i] for i in range(len(names))]


def _split_folder(data_path: str | Path, split: str) -> Path:
    folder = Path(data_path) / split
    if not folder.is_dir():
        raise DatasetError(
            f"no {split!r} split: expected an ImageFolder tree or Parquet shards there",
            path=folder,
        )
    return folder


def open_split(data_path: str | Path, split: str, transform: Callable[[Any], torch.Tensor]) -> Any:
    """A map-style dataset of ``(transform(encoded image), label)`` for one split.

    An ImageFolder tree is read with :class:`trivium.vision.datasets.ImageFolder`;
    Parquet shards with ``trivium.data.ArrowDataset`` (memory-mapped), in the rows'
    order, which the converter writes in ImageFolder's order.

    Example:
        >>> import tempfile, pathlib, torch
        >>> from trivium.vision.io import encode_png
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "val" / "a").mkdir(parents=True)
        >>> _ = (root / "val" / "a" / "x.png").write_bytes(
        ...     bytes(encode_png(torch.zeros(3, 8, 8, dtype=torch.uint8)).numpy()))
        >>> ds = open_split(root, "val", eval_transform(4, 4))
        >>> len(ds), ds[0][0].shape, ds[0][1]
        (1, torch.Size([3, 4, 4]), 0)
    """
    shards = _shards(_split_folder(data_path, split))
    if not shards:
        from trivium.vision.datasets import ImageFolder

        return ImageFolder(str(Path(data_path) / split), loader=_read_bytes, transform=transform)
    from trivium.data import ArrowDataset, MapPipe

    return MapPipe(ArrowDataset([str(s) for s in shards], columns=["image", "label"])).map(
        _Row(transform)
    )


def _read_bytes(path: str) -> torch.Tensor:
    from trivium.vision.io import read_file

    return read_file(path)


def make_loader(
    dataset: Any,
    batch_size: int,
    *,
    train: bool,
    workers: int,
    seed: int,
) -> Any:
    """``trivium.data.DataLoader`` over ``dataset``: shuffled and even across ranks to train.

    Example:
        >>> loader = make_loader(list(range(10)), 4, train=True, workers=0, seed=0)
        >>> len(loader)
        2
    """
    from trivium.data import DataLoader

    return DataLoader(
        dataset,
        batch_size,
        shuffle=train,
        num_workers=workers,
        drop_last=train,
        persistent_workers=workers > 0,
        seed=seed,
        **({} if train else {"rank": 0, "world_size": 1}),
    )
