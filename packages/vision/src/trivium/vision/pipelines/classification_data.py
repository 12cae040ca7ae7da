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
    >>> type(TrainBatch(crop_size=32).crop).__name__
    'DecodeRandomResizedCrop'
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import get_worker_info

from trivium.core import DatasetError, empty_batch, stack_batch
from trivium.core.threads import parallel_map
from trivium.vision.io import ImageReadMode, decode_image, read_file
from trivium.vision.pipelines.common import make_loader
from trivium.vision.transforms import (
    DecodeRandomResizedCrop,
    ImageClassificationEval,
    RandomHorizontalFlip,
)
from trivium.vision.transforms.interpolation import InterpolationMode
from trivium.vision.transforms.presets import IMAGENET_MEAN, IMAGENET_STD, _policy

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

    Inside a loader worker the float batches live in shared memory, in a pool of a
    few buffers per worker: a buffer is filled again only once the main process has
    dropped every tensor viewing the batch it held. A batch handed on to yet another
    process must be copied first (the pool cannot see that process's references).

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
        self.crop = DecodeRandomResizedCrop(crop_size, scale=(scale_min, 1.0), generator=generator)
        self.flip = RandomHorizontalFlip(hflip_prob, per_sample=True, generator=generator)
        self.policy = None
        if auto_augment:
            self.policy = _policy(auto_augment, InterpolationMode.BILINEAR, 9, 3, generator)
        mean, std = torch.tensor(IMAGENET_MEAN), torch.tensor(IMAGENET_STD)
        self.scale, self.shift = 1 / (255 * std), -mean / std
        self.lender = _BatchLender()

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
        out = self.lender.empty((n, h, w, c), torch.float32)  # [N, H, W, C]: the decoder's order
        scale, shift = self.scale.repeat(w), self.shift.repeat(w)

        def one(i: int) -> None:
            pixels = _scratch((h, w, c))  # [H, W, C] uint8
            self.crop.execute(plans[i], out=pixels.permute(2, 0, 1))
            rows = (pixels.flip(1) if flips[i] else pixels).view(h, w * c)
            out[i].view(h, w * c).copy_(rows).mul_(scale).add_(shift)

        parallel_map(one, range(n))
        return self.lender.lend(out.permute(0, 3, 1, 2))

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

# A loader worker lends each float batch from a pool of shared-memory buffers: making
# a fresh 38 MB segment per batch costs the kernel's page allocation and zeroing,
# about as long as normalising the batch. _SLOTS buffers per worker process, at most.
_SLOTS = 6
_FREE, _LENT = 1, 0


class _BatchLender:
    """The shared-memory batches of one ``TrainBatch`` in one worker, reused once dropped.

    Each worker process keeps up to ``_SLOTS`` buffers and, in a small shared segment
    of its own, a flag per slot: ``_FREE`` while the main process holds no batch of
    that slot. A batch goes out in a free slot's buffer (reused, or made on first use)
    as a :class:`_LentBatch`, with the flags; unpickled in the main process it becomes
    a plain tensor whose storage, once no tensor views it any more, marks its slot free
    again. Outside a worker, and while every slot is out, batches are new tensors.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._flags: torch.Tensor | None = None  # made in the worker, on first use
        self._buffers: dict[int, torch.UntypedStorage] = {}
        self._lent: dict[int, int] = {}  # data_ptr of a batch being filled -> its slot

    def __getstate__(self) -> dict[str, Any]:
        return {}  # nothing crosses processes: every worker keeps its own pool

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._reset()

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """An uninitialised batch: in a worker, in a free slot's buffer where one is free."""
        if get_worker_info() is None:
            return empty_batch(shape, dtype)
        if self._pid != os.getpid() or self._flags is None:  # a new worker process
            self._reset()
            self._flags = torch.full((_SLOTS,), _FREE, dtype=torch.int32).share_memory_()
        nbytes = math.prod(shape) * dtype.itemsize
        flags = self._flags.numpy()
        for slot in range(_SLOTS):
            if flags[slot] != _FREE:
                continue
            storage = self._buffers.get(slot)
            if storage is None or storage.nbytes() != nbytes:
                storage = self._buffers[slot] = torch.UntypedStorage._new_shared(nbytes)
            flags[slot] = _LENT
            batch = torch.empty(0, dtype=dtype).set_(storage).view(shape)
            self._lent[batch.data_ptr()] = slot
            return batch
        return empty_batch(shape, dtype)  # every slot is out: a fresh segment

    def lend(self, batch: torch.Tensor) -> torch.Tensor:
        """``batch`` (a view of a buffer from :meth:`empty`), marked to come back when dropped."""
        slot = self._lent.pop(batch.data_ptr(), None)
        if slot is None:
            return batch
        lent = batch.as_subclass(_LentBatch)
        lent.flags, lent.slot = self._flags, slot
        return lent


class _LentBatch(torch.Tensor):
    """A worker's batch in a pooled buffer: it unpickles as a plain tensor that frees the slot."""

    flags: torch.Tensor
    slot: int
    # Ops on it give plain tensors (only the batch itself is lent).
    __torch_function__ = torch._C._disabled_torch_function_impl

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return _received, (self.as_subclass(torch.Tensor), self.flags, self.slot)


def _received(batch: torch.Tensor, flags: torch.Tensor, slot: int) -> torch.Tensor:
    """Where a lent batch is unpickled: ``batch``, its slot marked free once it is freed."""
    weakref.finalize(batch.untyped_storage(), _mark_free, flags, slot)
    return batch


def _mark_free(flags: torch.Tensor, slot: int) -> None:
    flags[slot] = _FREE


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
    """Decode encoded bytes to RGB uint8, then apply ``transform`` (picklable for workers)."""

    def __init__(self, transform: Callable[[torch.Tensor], torch.Tensor]) -> None:
        self.transform = transform

    def __call__(self, data: Any) -> torch.Tensor:
        return self.transform(decode_image(data, ImageReadMode.RGB))


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
    data_path: str | Path, split: str, transform: Callable[[Any], Any] | None = None
) -> Any:
    """A map-style dataset of ``(transform(encoded image), label)`` for one split.

    Without ``transform`` a sample is ``(encoded image, label)``: the training
    loader decodes whole batches (:class:`TrainBatch`).

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

        return ImageFolder(str(Path(data_path) / split), loader=read_file, transform=transform)
    from trivium.data import ArrowDataset, MapPipe

    return MapPipe(ArrowDataset([str(s) for s in shards], columns=["image", "label"])).map(
        _Row(transform)
    )
