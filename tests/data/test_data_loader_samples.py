"""The samples of a map-style dataset read by the loader's workers, with and without ops.

The reference for each sample's random draws is the loader's rule itself, applied by
hand: sample ``j`` of an epoch (its position in the epoch's order) draws from
``sample_scope(seed, epoch, j)``. The same draws must come from worker processes,
worker threads and the main process, from the dataset alone and from a pipe of ops over
it; a sample whose read fails is skipped by the file it names, the others untouched.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from trivium.core import DecodeError
from trivium.core.seeding import sample_scope, scope_generator
from trivium.data import DataLoader, MapPipe

WORKERS = [(0, "process"), (2, "process"), (2, "thread")]
DAMAGED = (3, 7)
UNCOLLATABLE = 9  # read, then fails in collate_fn (which names no file)


class Draws(torch.utils.data.Dataset):
    """Sample ``i``: ``[i, a draw from the sample's stream]``; samples in DAMAGED fail."""

    def __init__(self, n: int, damaged: tuple[int, ...] = ()) -> None:
        self.n, self.damaged = n, damaged

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        draw = torch.rand((), generator=scope_generator(), dtype=torch.float64)
        if i in self.damaged:
            raise DecodeError("damaged")
        return torch.stack([torch.tensor(float(i), dtype=torch.float64), draw])

    def item_path(self, index: int) -> str:
        return f"samples/{index}.bin"


def fragile_collate(batch: list[torch.Tensor]) -> torch.Tensor:
    if any(int(sample[0]) == UNCOLLATABLE for sample in batch):
        raise DecodeError("cannot collate")
    return torch.stack(batch)


def expected_draw(seed: int, epoch: int, position: int) -> float:
    with sample_scope(seed, epoch, position):
        return float(torch.rand((), generator=scope_generator(), dtype=torch.float64))


def samples(dataset: object, workers: int, worker_type: str, **kwargs: object) -> torch.Tensor:
    loader = DataLoader(dataset, batch_size=4, shuffle=True, seed=3, num_workers=workers,
                        worker_type=worker_type, **kwargs)  # fmt: skip
    loader.set_epoch(1)
    return torch.cat(list(loader))


@pytest.mark.parametrize(("workers", "worker_type"), WORKERS)
def test_each_sample_draws_from_its_position_s_scope(workers: int, worker_type: str) -> None:
    out = samples(Draws(18), workers, worker_type)
    assert sorted(out[:, 0].tolist()) == list(range(18))
    assert out[:, 1].tolist() == [expected_draw(3, 1, j) for j in range(18)]
    through_ops = samples(MapPipe(Draws(18)).to_iter_pipe().map(lambda s: s), workers, worker_type)
    assert torch.equal(out, through_ops)


@pytest.mark.parametrize(("workers", "worker_type"), WORKERS)
def test_a_sample_that_fails_is_skipped_by_its_file_and_the_rest_keep_their_draws(
    workers: int, worker_type: str
) -> None:
    whole = samples(Draws(18), workers, worker_type)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the skip report's warning
        loader = DataLoader(Draws(18, DAMAGED), batch_size=4, shuffle=True, seed=3,
                            num_workers=workers, worker_type=worker_type, on_error="skip",
                            collate_fn=fragile_collate)  # fmt: skip
        loader.set_epoch(1)
        batches = list(loader)
    skipped = (*DAMAGED, UNCOLLATABLE)
    kept = [row for row in whole.tolist() if int(row[0]) not in skipped]
    assert torch.cat(batches).tolist() == kept
    named = sorted(loader.skip_report.skipped_files)
    assert named == sorted(f"samples/{i}.bin" for i in skipped)
    with pytest.raises(DecodeError) as caught:
        samples(Draws(18, DAMAGED), workers, worker_type)
    assert str(caught.value).startswith("samples/") and "damaged" in str(caught.value)
