"""The data side of the classification pipeline: splits, transforms and loaders.

A split is ``<data_path>/<split>`` holding either an ImageFolder tree
(``<class>/<image>``) or the Parquet shards that ``trivium-data convert image-folder``
writes from one (columns ``image``, ``label`` and ``class_name``). Both become a
map-style dataset of ``(image, label)``
with the same samples in the same order, so the same run trains identically on
either. Loading goes through ``trivium.data.DataLoader`` (the ``pipelines``
extra): exact sharding over workers and ranks, and
``state_dict()`` for mid-epoch resume.

Example:
    >>> type(TrainBatch(crop_size=32).crop).__name__
    'DecodeRandomResizedCrop'
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from trivium.core import DatasetError, empty_batch, stack_batch
from trivium.core.threads import parallel_map
from trivium.pipelines.vision.common import make_loader
from trivium.vision.io import ImageReadMode, decode_image, read_file
from trivium.vision.transforms import (
    DecodeRandomResizedCrop,
    ImageClassificationEval,
    RandomHorizontalFlip,
)
from trivium.vision.transforms.presets import IMAGENET_MEAN, IMAGENET_STD, auto_augment_transform

__all__ = ["TrainBatch", "eval_transform", "find_classes", "make_loader", "open_split"]


class TrainBatch:
    """A loader's ``collate_fn``: ``(encoded image, label)`` samples -> a normalised float batch.

    The parameters are drawn for the whole batch (every crop box, then every flip), then
    each image goes through every step while its pixels are in the caches:
    ``DecodeRandomResizedCrop`` decodes only its crop region, at the smallest DCT scale
    that covers it, the flip, and scale + ``Normalize`` into its slot of a channels-last
    float32 batch. With an auto-augment policy (``"ra"``, ``"ta_wide"``, ``"augmix"``,
    ``"imagenet"``, ...) the crops and flips make a uint8 batch first and the policy
    runs image by image. Crops cover ``scale_min`` to all of an image's area; every
    image draws its own parameters.

    Inside a loader worker the float batches live in shared memory
    (:func:`trivium.core.empty_batch`); under ``trivium.data.DataLoader`` they are the
    loader's reused buffers (:class:`trivium.core.BatchSlots`): a buffer is filled
    again only once the main process has dropped every tensor viewing the batch it
    held. A batch handed on to yet another process must be copied first (the loader
    cannot see that process's references).

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_jpeg
        >>> data = encode_jpeg(torch.zeros(3, 40, 60, dtype=torch.uint8))
        >>> images, labels = TrainBatch(32)([(data, 0), (data, 1)])
        >>> images.shape, images.dtype, labels.tolist()
        (torch.Size([2, 3, 32, 32]), torch.float32, [0, 1])
    """

    def __init__(
        self,
        crop_size: int,
        auto_augment: str | None = None,
        hflip_prob: float = 0.5,
        generator: torch.Generator | None = None,
        scale_min: float = 0.08,
    ) -> None:
        # 8-bit samples from every file (16-bit ones by their high byte), as ImageFolder's.
        self.crop = DecodeRandomResizedCrop(
            crop_size, scale=(scale_min, 1.0), dtype=torch.uint8, generator=generator
        )
        self.flip = RandomHorizontalFlip(hflip_prob, per_sample=True, generator=generator)
        self.policy = None
        if auto_augment:
            self.policy = auto_augment_transform(auto_augment, generator=generator)
        mean, std = torch.tensor(IMAGENET_MEAN), torch.tensor(IMAGENET_STD)
        self.scale, self.shift = 1 / (255 * std), -mean / std

    def __call__(self, samples: list[tuple[Any, int]]) -> tuple[torch.Tensor, torch.Tensor]:
        labels = torch.tensor([label for _, label in samples])
        if self.policy is None:
            return self._decoded_flipped_normalized([data for data, _ in samples]), labels
        images = self.flip(self.crop([data for data, _ in samples]))
        # The policies draw one op per call: one call per image.
        images = stack_batch([self.policy(image) for image in images])
        return self._normalized(images), labels

    def _decoded_flipped_normalized(self, encoded: list[Any]) -> torch.Tensor:
        """Crop, flip and normalise image by image into a channels-last float32 batch.

        The draws are the batch transforms' (every box, then every flip), but each
        image then goes through all the steps while its pixels are in the caches:
        decoded into a scratch slot, flipped, and scaled into its slot of the batch.
        """
        if not encoded:
            raise ValueError("TrainBatch: expected at least one sample, got an empty batch")
        plans = [self.crop.plan(data) for data in encoded]
        n, (h, w), c = len(plans), self.crop.crop.size, 3
        flips = self.flip.make_params([torch.empty((n, c, 0, 0))])["flip"].tolist()
        out = empty_batch((n, h, w, c), torch.float32)  # [N, H, W, C]: the decoder's order
        scale, shift = self.scale.repeat(w), self.shift.repeat(w)

        def one(i: int) -> None:
            pixels = _scratch((h, w, c))  # [H, W, C] uint8
            self.crop.execute(plans[i], out=pixels.permute(2, 0, 1))
            rows = (pixels.flip(1) if flips[i] else pixels).view(h, w * c)
            out[i].view(h, w * c).copy_(rows).mul_(scale).add_(shift)

        parallel_map(one, range(n))
        return out.permute(0, 3, 1, 2)

    def _normalized(self, images: torch.Tensor) -> torch.Tensor:
        """``(images / 255 - mean) / std`` as a float32 batch in the memory layout of ``images``.

        Each pass runs along whole rows of memory with the per-channel factors laid
        out to match, so the loops vectorise (a ``[1, C, 1, 1]`` broadcast over
        channels-last memory runs 5x slower).
        """
        n, c, h, w = images.shape
        if images.is_contiguous():  # [N, C, H*W]: one factor per plane
            out = empty_batch((n, c, h, w), torch.float32)
            planes, scale, shift = out.view(n, c, h * w), self.scale[:, None], self.shift[:, None]
            planes.copy_(images.view(n, c, h * w)).mul_(scale).add_(shift)
            return out
        out = empty_batch((n, h, w, c), torch.float32)  # channels last: [N*H, W*C] rows
        rows = images.permute(0, 2, 3, 1).reshape(n * h, w * c)
        out.view(n * h, w * c).copy_(rows).mul_(self.scale.repeat(w)).add_(self.shift.repeat(w))
        return out.permute(0, 3, 1, 2)


_local = threading.local()


def _scratch(shape: tuple[int, ...]) -> torch.Tensor:
    """This thread's uint8 scratch image of ``shape``, reused from call to call."""
    buffer = getattr(_local, "scratch", None)
    if buffer is None or tuple(buffer.shape) != shape:
        buffer = _local.scratch = torch.empty(shape, dtype=torch.uint8)
    return buffer


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
    """Decode encoded bytes to RGB uint8 (16-bit: the high byte), then apply ``transform``.

    Picklable, for loader workers.
    """

    def __init__(self, transform: Callable[[torch.Tensor], torch.Tensor]) -> None:
        self.transform = transform

    def __call__(self, data: Any) -> torch.Tensor:
        return self.transform(decode_image(data, ImageReadMode.RGB, dtype=torch.uint8))


class _Row:
    """An Arrow row ``{"image": bytes, "label": int}`` -> ``(transform(image), label)``."""

    def __init__(self, transform: Callable[[Any], Any] | None) -> None:
        self.transform = transform

    def __call__(self, row: dict[str, Any]) -> tuple[Any, int]:
        image = row["image"]
        return image if self.transform is None else self.transform(image), int(row["label"])


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
        from trivium.vision.datasets import find_classes as folder_classes

        return folder_classes(folder)[0]
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


def open_split(
    data_path: str | Path,
    split: str,
    transform: Callable[[Any], Any] | None = None,
    on_error: str = "raise",
) -> Any:
    """A map-style dataset of ``(transform(encoded image), label)`` for one split.

    Without ``transform`` a sample is ``(encoded image, label)``: the training
    loader decodes whole batches (:class:`TrainBatch`). ``on_error`` goes to
    ``ImageFolder`` (a file that cannot be read or transformed is replaced by the
    next readable one); decoding in the loader's ``collate_fn`` is the loader's
    ``on_error``'s (see :func:`make_loader`). Errors name the file (a shard's rows:
    the shard and row).

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

        return ImageFolder(
            str(Path(data_path) / split), loader=read_file, transform=transform, on_error=on_error
        )
    from trivium.data import ArrowDataset, MapPipe

    return MapPipe(ArrowDataset([str(s) for s in shards], columns=["image", "label"])).map(
        _Row(transform)
    )
