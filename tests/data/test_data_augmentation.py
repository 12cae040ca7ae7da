"""Random transforms inside real loaders: every worker, epoch and sample draws its own values.

The README's usage, transforms built with ``generator=torch.Generator().manual_seed(0)``,
must not copy one stream into every worker. What a sample drew is read back from its
output: ``ColorJitter(brightness)`` on a constant 0.5 image gives ``0.5 * factor``.
"""

from __future__ import annotations

import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from trivium.core import seed_everything
from trivium.data import DataLoader, MapPipe, ParquetSource
from trivium.vision import transforms as T

N = 24


def jitter(seed: int = 0) -> T.ColorJitter:
    return T.ColorJitter(brightness=0.9, generator=torch.Generator().manual_seed(seed))


def dataset(seed: int = 0) -> MapPipe:
    """Samples ``(i, constant image)``; the image comes out scaled by sample i's draw."""
    return MapPipe([(i, torch.full((3, 2, 2), 0.5)) for i in range(N)]).map(jitter(seed))


def draws(batches) -> dict[int, float]:
    """Sample index -> the brightness factor it drew."""
    out = {}
    for ids, images in batches:
        for i, image in zip(ids.tolist(), images, strict=True):
            out[i] = round(2 * float(image.mean()), 6)
    return out


def torch_epoch(loader: torch.utils.data.DataLoader) -> dict[int, float]:
    return draws(loader)


def trivium_loader(num_workers: int, seed: int = 0, **kwargs) -> DataLoader:
    return DataLoader(dataset(), 4, shuffle=True, num_workers=num_workers, seed=seed, **kwargs)


# ---- torch's DataLoader: the transform's generator is rebound once per worker


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_torch_loader_workers_draw_differently(context: str) -> None:
    loader = torch.utils.data.DataLoader(
        dataset(), 2, num_workers=2, multiprocessing_context=context
    )
    got = torch_epoch(loader)
    assert sorted(got) == list(range(N))
    assert len(set(got.values())) == N  # no worker repeats another's draws


@pytest.mark.parametrize("persistent", [False, True])
def test_torch_loader_epochs_draw_differently_and_repeat_with_a_seed(persistent: bool) -> None:
    def run() -> list[dict[int, float]]:
        seed_everything(0)
        loader = torch.utils.data.DataLoader(
            dataset(), 2, num_workers=2, persistent_workers=persistent
        )
        return [torch_epoch(loader) for _ in range(2)]

    first, second = run()
    assert not set(first.values()) & set(second.values())
    assert run() == [first, second]  # seed_everything makes the run repeat


def test_torch_loader_without_workers_keeps_the_generator() -> None:
    """In the main process nothing is rebound: the stream is the transform's own."""
    loader = torch.utils.data.DataLoader(dataset(), 2)
    reference = jitter()
    expected = {}
    for i in range(N):
        factor = 2 * float(reference(torch.full((3, 2, 2), 0.5)).mean())
        expected[i] = round(factor, 6)
    assert torch_epoch(loader) == expected


# ---- trivium.data.DataLoader: a stream per (seed, epoch, sample)


def epoch(loader: DataLoader, epoch: int) -> dict[int, float]:
    loader.set_epoch(epoch)
    return draws(loader)


def test_trivium_loader_draws_depend_on_seed_epoch_and_sample_only() -> None:
    by_workers = [[epoch(trivium_loader(w), e) for e in (0, 1)] for w in (0, 1, 2)]
    assert by_workers[0] == by_workers[1] == by_workers[2]  # any number of workers
    first, second = by_workers[0]
    assert sorted(first) == list(range(N))
    assert len(set(first.values())) == N  # every sample its own draw
    assert not set(first.values()) & set(second.values())  # epochs differ
    assert epoch(trivium_loader(2, seed=1), 0) != first


def test_trivium_loader_needs_only_its_seed() -> None:
    torch.manual_seed(1)
    a = epoch(trivium_loader(2), 0)
    torch.manual_seed(2)
    b = epoch(trivium_loader(2), 0)
    assert a == b


def test_trivium_loader_persistent_workers_follow_the_epochs() -> None:
    loader = trivium_loader(2, persistent_workers=True)
    assert [epoch(loader, e) for e in (0, 1)] == [epoch(trivium_loader(0), e) for e in (0, 1)]


@pytest.mark.parametrize("workers", [0, 2])
def test_trivium_loader_resume_repeats_the_augmentations(workers: int) -> None:
    full = trivium_loader(0)
    full.set_epoch(1)
    uninterrupted = [(ids.tolist(), images) for ids, images in full]
    loader = trivium_loader(workers)
    loader.set_epoch(1)
    seen = []
    for batch in loader:
        seen.append(batch)
        if len(seen) == 2:
            state = loader.state_dict()
            break
    resumed = trivium_loader(2 - workers)  # another worker count
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert len(seen) + len(rest) == len(uninterrupted)
    for (ids, images), (ref_ids, ref_images) in zip(seen + rest, uninterrupted, strict=True):
        assert ids.tolist() == ref_ids
        assert torch.equal(images, ref_images)


# ---- columnar pipes: map is per sample, skips drop only the bad sample


@pytest.fixture(scope="module")
def jpeg_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """40 rows of (label, image); row 13's JPEG is cut short, in the middle of a batch.

    Image i is 6 * i in its top half; its bottom half is white on the left, black
    on the right (JPEG blocks are 8 x 8, so the two halves do not bleed into each other).
    """
    from trivium.vision.io import encode_jpeg

    images = [torch.full((3, 16, 24), 6 * i, dtype=torch.uint8) for i in range(40)]
    for img in images:  # the top 8 rows say the label; the bottom 8 show a flip
        img[:, 8:, :12], img[:, 8:, 12:] = 255, 0
    data = [bytes(encode_jpeg(img, quality=95).numpy()) for img in images]
    data[13] = data[13][: len(data[13]) // 2]
    root = tmp_path_factory.mktemp("jpegs")
    table = pa.table({"label": list(range(40)), "image": pa.array(data, pa.binary())})
    pq.write_table(table, root / "part-0.parquet", row_group_size=10)
    return root


def decode(data: torch.Tensor) -> torch.Tensor:
    from trivium.vision.io import decode_jpeg

    return decode_jpeg(data, strict=True)


def test_map_after_to_tensors_is_per_sample_and_skips_one_sample(
    jpeg_dir: pathlib.Path,
) -> None:
    pipe = ParquetSource(jpeg_dir).to_tensors().map(decode, input_col="image", on_error="skip")
    loader = DataLoader(pipe, 8, num_workers=2)
    with pytest.warns(UserWarning, match="epoch 0: 1 samples skipped"):
        batches = list(loader)
    assert loader.skipped == 1
    assert [len(b["label"]) for b in batches] == [8, 7, 8, 8, 8]  # only row 13 is gone
    for batch in batches:
        assert batch["image"].shape == (len(batch["label"]), 3, 16, 24)
        for label, image in zip(batch["label"].tolist(), batch["image"], strict=True):
            assert abs(int(image[0, 2, 12]) - 6 * label) <= 3  # rows stay aligned


def test_random_map_after_to_tensors_draws_per_sample(jpeg_dir: pathlib.Path) -> None:
    flip = T.RandomHorizontalFlip(generator=torch.Generator().manual_seed(0))
    pipe = (
        ParquetSource(jpeg_dir)
        .to_tensors()
        .map(decode, input_col="image", on_error="skip")
        .map(flip, input_col="image")
    )
    for workers in (0, 2):
        with pytest.warns(UserWarning, match="1 samples skipped"):  # row 13's cut JPEG
            batches = list(DataLoader(pipe, 13, num_workers=workers, seed=3))
        flipped = [
            bool(image[0, 12, 1] < image[0, 12, 22])
            for batch in batches
            for image in batch["image"]
        ]
        assert 0 < sum(flipped) < len(flipped)
        assert all(0 < sum(part) < len(part) for part in (flipped[:12], flipped[12:]))


def test_map_batches_sees_the_whole_batch(jpeg_dir: pathlib.Path) -> None:
    sizes = []

    def batch_size(images: list) -> torch.Tensor:
        sizes.append(len(images))
        return torch.tensor([len(images)] * len(images))

    pipe = ParquetSource(jpeg_dir).to_tensors().map_batches(batch_size, input_col="image")
    batches = list(DataLoader(pipe, 10))
    assert [b["image"].tolist() for b in batches] == [[10] * 10] * 4
    with pytest.raises(TypeError, match="map_batches needs batches"):
        list(MapPipe([1]).to_iter_pipe().map_batches(len))


class JitterBatch:
    """A collate_fn that draws (torchvision's reference mixes batches there)."""

    def __init__(self) -> None:
        self.jitter = T.ColorJitter(brightness=0.9, generator=torch.Generator().manual_seed(0))

    def __call__(self, samples: list) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.tensor([i for i, _ in samples])
        return ids, self.jitter(torch.stack([image for _, image in samples]))


def test_trivium_loader_collate_fn_draws_from_the_batch_scope() -> None:
    data = MapPipe([(i, torch.full((3, 2, 2), 0.5)) for i in range(N)])

    def run(workers: int) -> list[float]:
        loader = DataLoader(
            data, 4, shuffle=True, num_workers=workers, seed=0, collate_fn=JitterBatch()
        )
        return [round(float(images.mean()), 6) for _, images in loader]

    draws = run(0)
    assert run(2) == draws and len(set(draws)) == len(draws)
