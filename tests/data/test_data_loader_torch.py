"""torch's own DataLoader tests, run against torch's loader and trivium's alike.

A representative set ported from torch's ``test/test_dataloader.py`` (orders,
``drop_last``, samplers and batch samplers, an ``IterableDataset`` sharded over its
workers with ``get_worker_info()``, ``worker_init_fn``, ``timeout``, persistent
workers, pinning, collation, ``batch_size=None``): whatever torch's loader yields,
trivium's yields too, batch for batch. Then what trivium adds on the same inputs:
exact resume with a sampler, a batch sampler, an ``IterableDataset`` with state and a
pipe that batches.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import (
    BatchSampler,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    WeightedRandomSampler,
    get_worker_info,
)
from torch.utils.data import DataLoader as TorchDataLoader

from trivium.data import DataLoader, IterPipe, MapPipe

LOADERS = [TorchDataLoader, DataLoader]
N = 100


class TensorPairs(Dataset):
    """torch's TensorDataset of (data, label) rows."""

    def __init__(self, n: int = N) -> None:
        self.data = torch.randn(n, 2, 3, generator=torch.Generator().manual_seed(0))
        self.labels = torch.arange(n)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.data[i], self.labels[i]


class CountingIterable(IterableDataset):
    """torch's ``CountingIterableDataset``: each worker yields its own range."""

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end

    def __iter__(self) -> Any:
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per_worker = math.ceil((self.end - self.start) / info.num_workers)
        lo = self.start + info.id * per_worker
        return iter(range(lo, min(lo + per_worker, self.end)))

    def __len__(self) -> int:
        return self.end - self.start


class ResumableIterable(CountingIterable):
    """A CountingIterable that can say where it stands, and go on from there."""

    def __init__(self, start: int, end: int) -> None:
        super().__init__(start, end)
        self.taken, self.skip = 0, 0

    def __iter__(self) -> Any:
        skip, self.skip, self.taken = self.skip, 0, self.skip
        for x in itertools.islice(super().__iter__(), skip, None):
            self.taken += 1
            yield x

    def state_dict(self) -> dict[str, int]:
        return {"taken": self.taken}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.skip = state["taken"]


class WorkerIdDataset(Dataset):
    """Gives the id of the worker that read each item (torch's worker_init_fn test)."""

    def __init__(self, n: int) -> None:
        self.n, self.value = n, None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        return self.value


class Stream:
    """Re-iterable, without random access (no ``__getitem__``)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Any:
        yield from range(self.n)


def set_value(worker_id: int) -> None:
    get_worker_info().dataset.value = [worker_id, os.getpid()]  # type: ignore[union-attr]


class SleepyDataset(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> int:
        time.sleep(3)  # past the loader's timeout
        return i


class PidDataset(Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> int:
        return os.getpid()


class FailingDataset(Dataset):
    def __len__(self) -> int:
        return 10

    def __getitem__(self, i: int) -> int:
        if i == 6:
            raise KeyError(f"no sample {i}")
        return i


def batches(loader: Any) -> list[Any]:
    return [_plain(b) for b in loader]


def _plain(batch: Any) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.tolist()
    if isinstance(batch, dict):
        return {k: _plain(v) for k, v in batch.items()}
    if isinstance(batch, list | tuple):
        return [_plain(v) for v in batch]
    return batch


def both(*args: Any, **kwargs: Any) -> list[list[Any]]:
    """The batches each loader gives for the same arguments."""
    return [batches(make(*args, **kwargs)) for make in LOADERS]


# ---- orders, batch sizes, drop_last, len


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("batch_size", [1, 7, None])
def test_sequential(num_workers: int, batch_size: int | None) -> None:
    dataset = TensorPairs()
    ours, theirs = (
        batches(DataLoader(dataset, batch_size, num_workers=num_workers)),
        batches(TorchDataLoader(dataset, batch_size, num_workers=num_workers)),
    )
    assert ours == theirs
    assert len(ours) == (N if batch_size is None else math.ceil(N / batch_size))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_shuffle_covers_every_sample_once_in_another_order(num_workers: int) -> None:
    for make in LOADERS:
        loader = make(TensorPairs(), 7, shuffle=True, num_workers=num_workers)
        labels = [label for _, labels in loader for label in labels.tolist()]
        assert sorted(labels) == list(range(N)) and labels != list(range(N))
        again = [label for _, labels in loader for label in labels.tolist()]
        assert again != labels  # a new order for every iteration


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("batch_size", [1, 3, 10, 33, 100, 101])
def test_len_and_drop_last(batch_size: int, drop_last: bool) -> None:
    data = list(range(N))
    ours, theirs = both(data, batch_size, drop_last=drop_last)
    assert ours == theirs
    for make in LOADERS:
        assert len(make(data, batch_size, drop_last=drop_last)) == len(theirs)


def test_positional_arguments_are_torchs() -> None:
    data = list(range(10))
    args = (
        data,
        3,
        False,
        SequentialSampler(data),
        None,
        2,
    )  # ..., sampler, batch_sampler, workers
    ours, theirs = DataLoader(*args), TorchDataLoader(*args)
    assert ours.num_workers == theirs.num_workers == 2
    assert batches(ours) == batches(theirs)


# ---- samplers and batch samplers


def samplers(data: list[int]) -> list[Any]:
    def gen() -> torch.Generator:
        return torch.Generator().manual_seed(3)

    return [
        SequentialSampler(data),
        RandomSampler(data, generator=gen()),
        RandomSampler(data, replacement=True, num_samples=150, generator=gen()),
        SubsetRandomSampler(range(10, 60), generator=gen()),
        WeightedRandomSampler(np.linspace(0, 1, len(data)), 80, generator=gen()),
        list(reversed(range(len(data)))),
    ]


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("case", range(6))
def test_samplers_give_torchs_batches(case: int, num_workers: int) -> None:
    data = list(range(N))
    ours = batches(DataLoader(data, 8, sampler=samplers(data)[case], num_workers=num_workers))
    theirs = batches(TorchDataLoader(data, 8, sampler=samplers(data)[case]))
    assert ours == theirs


@pytest.mark.parametrize("num_workers", [0, 2])
def test_batch_samplers_give_torchs_batches(num_workers: int) -> None:
    data = list(range(N))
    uneven = [[3, 1], [5, 6, 7, 8, 9], [0], [2, 4, 99]]
    for make_sampler in (
        lambda: BatchSampler(SequentialSampler(data), 6, drop_last=False),
        lambda: BatchSampler(
            RandomSampler(data, generator=torch.Generator().manual_seed(1)), 6, drop_last=True
        ),
        lambda: uneven,
    ):
        ours = DataLoader(data, batch_sampler=make_sampler(), num_workers=num_workers)
        theirs = TorchDataLoader(data, batch_sampler=make_sampler())
        assert batches(ours) == batches(theirs)
        assert len(ours) == len(theirs) and ours.batch_size is theirs.batch_size is None


def test_the_options_that_exclude_each_other_are_refused_alike() -> None:
    data = list(range(10))
    bad = [
        {"shuffle": True, "sampler": SequentialSampler(data)},
        {"batch_sampler": [[0]], "batch_size": 2},
        {"batch_sampler": [[0]], "shuffle": True},
        {"batch_sampler": [[0]], "drop_last": True},
        {"num_workers": -1},
        {"timeout": -1},
        {"prefetch_factor": 2},
        {"persistent_workers": True},
    ]
    for kwargs in bad:
        for make in LOADERS:
            with pytest.raises(ValueError):
                make(data, **kwargs)
    for name in ("shuffle", "sampler", "batch_sampler"):
        value = {"shuffle": True, "sampler": [0], "batch_sampler": [[0]]}[name]
        for make in LOADERS:
            with pytest.raises(ValueError, match=f"unspecified {name}"):
                make(CountingIterable(0, 4), **{name: value})


def test_a_generator_seeds_the_order() -> None:
    def order(seed: int) -> list[Any]:
        loader = DataLoader(
            list(range(N)), 10, shuffle=True, generator=torch.Generator().manual_seed(seed)
        )
        return batches(loader)

    assert order(0) == order(0) != order(1)
    assert sorted(itertools.chain.from_iterable(order(0))) == list(range(N))


# ---- IterableDataset


@pytest.mark.parametrize(
    ("num_workers", "batch_size", "context"),
    [(w, b, "fork") for w in (0, 1, 3) for b in (None, 1, 4)] + [(3, 4, "spawn")],
)
def test_an_iterable_dataset_splits_itself_over_workers_in_torchs_order(
    num_workers: int, batch_size: int | None, context: str
) -> None:
    extra = {"multiprocessing_context": context} if num_workers else {}
    dataset = CountingIterable(3, 21)
    ours = batches(DataLoader(dataset, batch_size, num_workers=num_workers, **extra))
    theirs = batches(TorchDataLoader(dataset, batch_size, num_workers=num_workers, **extra))
    assert ours == theirs
    flat = itertools.chain.from_iterable(b if isinstance(b, list) else [b] for b in ours)
    assert sorted(flat) == list(range(3, 21))


@pytest.mark.parametrize("num_workers", [0, 3])
def test_an_iterable_dataset_drops_the_last_batch_of_each_worker(num_workers: int) -> None:
    ours, theirs = both(CountingIterable(0, 20), 4, num_workers=num_workers, drop_last=True)
    assert ours == theirs
    assert len(DataLoader(CountingIterable(0, 20), 4)) == 5  # as torch: len(dataset) / 4


# ---- workers: init, timeout, persistence, errors; pinning, collation


def test_worker_init_fn_runs_in_each_worker() -> None:
    for make in LOADERS:
        loader = make(WorkerIdDataset(8), 1, num_workers=2, worker_init_fn=set_value)
        got = [b for b in loader]
        ids = sorted({int(worker) for worker, _ in got})
        assert ids == [0, 1] and all(int(pid) != os.getpid() for _, pid in got)


def test_a_timeout_raises_when_a_worker_does_not_answer() -> None:
    for make in LOADERS:
        loader = make(SleepyDataset(), 1, num_workers=1, timeout=0.5)
        with pytest.raises(RuntimeError, match="timed out"):
            next(iter(loader))


def test_persistent_workers_keep_their_processes_across_epochs() -> None:
    for make in LOADERS:
        loader = make(PidDataset(), 2, num_workers=2, persistent_workers=True)
        epochs = [{pid for b in loader for pid in b.tolist()} for _ in range(3)]
        assert epochs[0] == epochs[1] == epochs[2] and len(epochs[0]) == 2


@pytest.mark.parametrize("num_workers", [0, 2])
def test_an_error_in_the_dataset_reaches_the_loop_with_its_type(num_workers: int) -> None:
    for make in LOADERS:
        loader = make(FailingDataset(), 2, num_workers=num_workers)
        with pytest.raises(KeyError, match="no sample 6"):
            list(loader)


@pytest.mark.filterwarnings("ignore:.*pin_memory.*:UserWarning")
def test_pin_memory_without_a_device_still_loads() -> None:
    ours, theirs = both(TensorPairs(20), 4, pin_memory=True)
    assert ours == theirs


def test_default_collation_of_dicts_tuples_and_numpy() -> None:
    samples = [
        {"x": np.full(3, i, np.float32), "pair": (i, float(i)), "name": f"s{i}"} for i in range(9)
    ]
    ours, theirs = both(samples, 4)
    assert ours == theirs
    unbatched = both([np.arange(i, i + 3) for i in range(5)], None)
    assert unbatched[0] == unbatched[1]


def test_a_custom_collate_fn_and_a_subset() -> None:
    def collate(items: list[int]) -> str:
        return ",".join(map(str, items))

    subset = Subset(list(range(50)), range(10, 20))
    ours, theirs = both(subset, 3, collate_fn=collate)
    assert ours == theirs == ["10,11,12", "13,14,15", "16,17,18", "19"]


# ---- what trivium adds on the same inputs: exact resume


def interrupted(loader: DataLoader, steps: int) -> tuple[list[Any], dict[str, Any]]:
    got = []
    for batch in loader:
        got.append(_plain(batch))
        if len(got) == steps:
            return got, loader.state_dict()
    raise AssertionError("the epoch ended first")


@pytest.mark.parametrize("workers", [(0, 2), (2, 3)])
def test_a_sampler_without_state_resumes_exactly(workers: tuple[int, int]) -> None:
    data = list(range(N))

    def sampler() -> RandomSampler:  # unseeded: each one draws another order
        return RandomSampler(data)

    before, state = interrupted(DataLoader(data, 8, sampler=sampler(), num_workers=workers[0]), 4)
    resumed = DataLoader(data, 8, sampler=sampler(), num_workers=workers[1])
    rest = batches(_resumed(resumed, state))
    epoch = state["sampler_order"]["indices"].tolist()  # the first loader's order
    assert list(itertools.chain.from_iterable(before + rest)) == epoch
    assert sorted(epoch) == data


def _resumed(loader: DataLoader, state: dict[str, Any]) -> DataLoader:
    loader.load_state_dict(state)
    return loader


def test_a_batch_sampler_resumes_exactly_on_other_workers() -> None:
    data = list(range(N))

    def batch_sampler() -> BatchSampler:
        return BatchSampler(
            RandomSampler(data, generator=torch.Generator().manual_seed(5)), 6, drop_last=False
        )

    full = batches(TorchDataLoader(data, batch_sampler=batch_sampler()))
    before, state = interrupted(DataLoader(data, batch_sampler=batch_sampler(), num_workers=2), 5)
    rest = batches(_resumed(DataLoader(data, batch_sampler=batch_sampler(), num_workers=3), state))
    assert before + rest == full


@pytest.mark.parametrize("num_workers", [0, 2])
def test_an_iterable_dataset_with_state_resumes_on_as_many_workers(num_workers: int) -> None:
    full = batches(TorchDataLoader(ResumableIterable(0, 30), 4, num_workers=num_workers))
    loader = DataLoader(ResumableIterable(0, 30), 4, num_workers=num_workers)
    before, state = interrupted(loader, 3)
    rest = batches(
        _resumed(DataLoader(ResumableIterable(0, 30), 4, num_workers=num_workers), state)
    )
    assert before + rest == full
    other = DataLoader(ResumableIterable(0, 30), 4, num_workers=num_workers + 3)
    with pytest.raises(ValueError, match="resumes on as many"):
        other.load_state_dict(state)


def test_an_iterable_dataset_without_state_says_it_cannot_resume() -> None:
    loader = DataLoader(CountingIterable(0, 30), 4)
    it = iter(loader)
    next(it)
    with pytest.raises(TypeError, match="without state_dict"):
        loader.state_dict()
    list(it)
    assert loader.state_dict()["samples_consumed"] == 8  # at the end: nothing left


@pytest.mark.parametrize("workers", [(0, 2), (2, 0), (2, 3)])
def test_a_pipe_that_batches_resumes_exactly_with_batch_size_none(
    workers: tuple[int, int],
) -> None:
    def pipe() -> IterPipe:
        return MapPipe(list(range(53))).to_iter_pipe().map(lambda x: x * 10).batch(5)

    full = batches(DataLoader(pipe(), batch_size=None, shuffle=True, seed=1))
    assert all(len(b) == 5 for b in full[:-1]) and len(full[-1]) == 3
    before, state = interrupted(
        DataLoader(pipe(), batch_size=None, shuffle=True, seed=1, num_workers=workers[0]), 4
    )
    assert state["samples_consumed"] == 20
    resumed = DataLoader(pipe(), batch_size=None, num_workers=workers[1])
    assert before + batches(_resumed(resumed, state)) == full


@pytest.mark.parametrize("workers", [(0, 2), (2, 3)])
def test_a_pipe_over_a_source_without_random_access_resumes_exactly(
    workers: tuple[int, int],
) -> None:
    def pipe() -> IterPipe:
        return IterPipe.from_iterable(Stream(47)).filter(lambda x: x % 7).map(lambda x: -x)

    full = batches(DataLoader(pipe(), 4))
    assert full == batches(DataLoader(pipe(), 4, num_workers=3))  # the source's own order
    before, state = interrupted(DataLoader(pipe(), 4, num_workers=workers[0]), 3)
    resumed = DataLoader(pipe(), 4, num_workers=workers[1])
    assert before + batches(_resumed(resumed, state)) == full


class Clip(IterPipe):
    """A user's operator: one class that only pulls from its source."""

    def __init__(self, source: IterPipe, most: int) -> None:
        self.source, self.most = source, most

    def _apply(self, items: Any) -> Any:
        return (min(x, self.most) for x in items)


class Pairs(IterPipe):
    """A user's operator that groups: it says how many source items make one output."""

    def __init__(self, source: IterPipe) -> None:
        self.source = source

    def items_per_output(self) -> int | None:
        return 2 * self.source.items_per_output()  # type: ignore[union-attr,operator]

    def _apply(self, items: Any) -> Any:
        while pair := list(itertools.islice(items, 2)):
            yield tuple(pair)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_users_operator_runs_in_the_loader_as_outside_it(num_workers: int) -> None:
    source = MapPipe(list(range(20))).to_iter_pipe()
    clipped = Clip(source.map(lambda x: x * 2), 25)
    assert batches(DataLoader(clipped, 4, num_workers=num_workers)) == batches(
        TorchDataLoader(list(clipped), 4)
    )
    pairs = Pairs(clipped)
    got = batches(DataLoader(pairs, batch_size=None, num_workers=num_workers))
    assert got == [list(p) for p in pairs]
    before, state = interrupted(DataLoader(pairs, batch_size=None, num_workers=num_workers), 3)
    assert state["samples_consumed"] == 6
    assert before + batches(_resumed(DataLoader(pairs, batch_size=None), state)) == got
