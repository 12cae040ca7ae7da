"""``TrainBatch``: the classification pipeline's training batches, in and out of loader workers."""

from __future__ import annotations

import gc
import pathlib
import random
import sys

import pytest
import torch
from shared_memory import segment_inode

from trivium.pipelines.vision.classification_data import TrainBatch, make_loader, open_split
from trivium.vision.io import encode_jpeg
from trivium.vision.transforms import DecodeRandomResizedCrop, RandomHorizontalFlip
from trivium.vision.transforms.presets import IMAGENET_MEAN, IMAGENET_STD


def photo_like(rng: random.Random) -> torch.Tensor:
    """A smooth random image with some edges (JPEG-friendly, varied sizes)."""
    h, w = rng.randint(60, 90), rng.randint(60, 90)
    g = torch.Generator().manual_seed(rng.randint(0, 2**31))
    coarse = torch.randint(0, 256, (1, 3, 6, 6), generator=g, dtype=torch.uint8).float()
    image = torch.nn.functional.interpolate(coarse, (h, w), mode="bilinear")[0]
    return image.round().to(torch.uint8)


@pytest.fixture(scope="module")
def jpegs() -> list[bytes]:
    rng = random.Random(0)
    return [encode_jpeg(photo_like(rng), quality=90).numpy().tobytes() for _ in range(24)]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory, jpegs: list[bytes]) -> pathlib.Path:
    root = tmp_path_factory.mktemp("tree")
    for i, data in enumerate(jpegs):
        folder = root / "train" / f"c{i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:03d}.jpg").write_bytes(data)
    return root


def test_train_batch_is_crop_then_flip_then_normalize(jpegs: list[bytes]) -> None:
    samples = [(data, i % 3) for i, data in enumerate(jpegs)]
    images, labels = TrainBatch(32, generator=torch.Generator().manual_seed(7))(samples)
    assert images.shape == (24, 3, 32, 32) and images.dtype == torch.float32
    assert labels.tolist() == [i % 3 for i in range(24)]
    # The same draws through the transforms one after the other: every box, then every flip.
    g = torch.Generator().manual_seed(7)
    crop = DecodeRandomResizedCrop(32, generator=g)
    flip = RandomHorizontalFlip(per_sample=True, generator=g)
    pixels = flip(crop(list(jpegs)))
    mean, std = torch.tensor(IMAGENET_MEAN), torch.tensor(IMAGENET_STD)
    expected = (pixels.float() / 255 - mean[:, None, None]) / std[:, None, None]
    torch.testing.assert_close(images, expected, atol=1e-5, rtol=0)


def test_train_batch_rejects_an_empty_batch() -> None:
    with pytest.raises(ValueError, match="empty batch"):
        TrainBatch(32)([])


def epochs(loader, count: int) -> list[list[torch.Tensor]]:
    out = []
    for epoch in range(count):
        loader.set_epoch(epoch)
        out.append([images for images, _ in loader])
    return out


def test_worker_batches_equal_in_process_ones(tree: pathlib.Path) -> None:
    dataset = open_split(tree, "train")

    def run(workers: int) -> list[list[torch.Tensor]]:
        batches = TrainBatch(24, generator=torch.Generator().manual_seed(1))
        loader = make_loader(dataset, 4, train=True, workers=workers, seed=3, collate_fn=batches)
        return [[x.clone() for x in epoch] for epoch in epochs(loader, 2)]

    for a, b in zip(run(0), run(2), strict=True):
        assert len(a) == len(b) == 6
        assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="shared memory by fd on Linux")
def test_workers_reuse_a_batch_buffer_only_once_the_main_process_drops_it(tree: pathlib.Path):
    dataset = open_split(tree, "train")
    loader = make_loader(dataset, 2, train=True, workers=2, seed=0, collate_fn=TrainBatch(24))
    segments: list[set[int]] = []
    held = []
    for epoch in range(4):
        loader.set_epoch(epoch)
        segments.append(set())
        for k, (images, _) in enumerate(loader):
            segments[-1].add(segment_inode(images))
            if epoch == 0 and k < 4:  # kept: their buffers must not come back
                held.append((images, images.clone()))
            del images
            gc.collect()
        if epoch == 1:  # released: their slots come back
            assert all(torch.equal(kept, copy) for kept, copy in held)
            held.clear()
            gc.collect()
    # 12 batches an epoch in the loader's slots (prefetch_factor + 2 per worker) at most
    assert all(len(epoch) <= 2 * 4 for epoch in segments[2:]), segments


def test_two_loaders_sharing_one_train_batch_keep_their_batches(tree: pathlib.Path) -> None:
    dataset = open_split(tree, "train")
    batches = TrainBatch(24)
    loaders = [
        make_loader(dataset, 2, train=True, workers=2, seed=s, collate_fn=batches) for s in (0, 1)
    ]
    held = []
    for epoch in range(3):
        for loader in loaders:
            loader.set_epoch(epoch)
        for k, ((a, _), (b, _)) in enumerate(zip(*loaders, strict=True)):
            if k % 3 == 0:
                held += [(a, a.clone()), (b, b.clone())]
    assert all(torch.equal(kept, copy) for kept, copy in held)
