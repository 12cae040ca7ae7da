"""trivium.data.DataLoader with worker threads (``worker_type="thread"``).

The reference is the same loader with worker processes: the batches (values, order,
which worker made each), over ranks and epochs, with a random transform drawing from
each sample's seed, must be identical. Errors name the file of a real corrupt JPEG,
an IterableDataset shards itself through ``trivium.data.get_worker_info``, and a
resumed epoch gives exactly the rest of an uninterrupted one. Over epochs of a dataset
of many small Python objects, no per-sample object stays alive in the main process.
"""

from __future__ import annotations

import gc
import pathlib
import sys
import threading
import warnings
import weakref
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from trivium.core import DecodeError, RandomApply
from trivium.data import DataLoader, ParquetSource, get_worker_info
from trivium.data.pipes import SkippedSamplesWarning
from trivium.data.workers import intra_op_threads

ASSETS = pathlib.Path(__file__).resolve().parents[1] / "assets" / "images"
CORRUPT = ASSETS / "corrupt" / "tv-corrupt.jpg"  # refused by strict decoding


class Noisy(torch.utils.data.Dataset):
    """Sample ``i``: ``[i, a random draw, ±1 flipped at random, the worker's id]``."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.flip = RandomApply([lambda x: -x], p=0.5, generator=torch.Generator())

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        info = get_worker_info()
        draw = self.flip(torch.ones(()))  # from the sample's seed
        return torch.stack([torch.tensor(float(i)), draw, torch.tensor(float(info.id))])


def batches(worker_type: str, rank: int, epochs: int = 2, **kwargs: object) -> list[torch.Tensor]:
    loader = DataLoader(Noisy(29), batch_size=3, shuffle=True, num_workers=2, seed=5,
                        rank=rank, world_size=2, worker_type=worker_type, **kwargs)  # fmt: skip
    return [b for _ in range(epochs) for b in loader]


@pytest.mark.parametrize("rank", [0, 1])
def test_threads_give_the_batches_of_processes(rank: int) -> None:
    threads = batches("thread", rank)
    processes = batches("process", rank, persistent_workers=True)
    assert len(threads) == len(processes) == 10  # 5 per epoch and rank
    for a, b in zip(threads, processes, strict=True):
        assert torch.equal(a, b)
    draws = torch.cat([b[:, 1] for b in threads])
    assert set(draws.tolist()) == {-1.0, 1.0}  # the transform drew, differently per sample
    workers = [int(b[0, 2]) for b in threads[:5]]
    assert workers == [0, 1, 0, 1, 0]  # batch k made by worker k % 2, as in processes


def test_ranks_and_epochs_cover_the_dataset_once_each() -> None:
    epochs: list[list[int]] = [[], []]
    for rank in (0, 1):
        out = batches("thread", rank)
        for e in (0, 1):
            epochs[e] += [int(i) for b in out[5 * e : 5 * e + 5] for i in b[:, 0]]
    for ids in epochs:
        assert len(ids) == 30 and set(ids) == set(range(29))  # all, one repeated to even ranks
    assert epochs[0] != epochs[1]  # a new order each epoch


def test_resume_mid_epoch_under_threads_gives_exactly_the_rest() -> None:
    whole = [b for b in DataLoader(Noisy(29), batch_size=3, shuffle=True, seed=1,
                                   num_workers=2, worker_type="thread")]  # fmt: skip
    loader = DataLoader(Noisy(29), batch_size=3, shuffle=True, seed=1, num_workers=2,
                        worker_type="thread")  # fmt: skip
    it = iter(loader)
    head = [next(it) for _ in range(4)]
    state = loader.state_dict()
    del it
    resumed = DataLoader(Noisy(29), batch_size=3, shuffle=True, seed=1, num_workers=3,
                         worker_type="thread")  # fmt: skip
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert len(head) + len(rest) == len(whole) == 10
    for a, b in zip(head + rest, whole, strict=True):
        assert torch.equal(a[:, :2], b[:, :2])  # the same samples and draws (workers differ)


class JpegFiles(torch.utils.data.Dataset):
    """Decoded JPEG files; the decoder gets bytes only, the loader names the file."""

    def __init__(self, paths: list[pathlib.Path]) -> None:
        self.paths = [str(p) for p in paths]

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        io = pytest.importorskip("trivium.vision.io")
        raw = bytearray(pathlib.Path(self.paths[i]).read_bytes())
        data = torch.frombuffer(raw, dtype=torch.uint8)
        try:
            return io.decode_jpeg(data, strict=True)[:, :8, :8]
        except DecodeError as e:
            raise DecodeError(e.reason) from e  # no file named here

    def item_path(self, i: int) -> str:
        return self.paths[i]


@pytest.fixture
def jpegs(tmp_path: pathlib.Path) -> list[pathlib.Path]:
    """Six JPEGs, the fifth corrupt."""
    io = pytest.importorskip("trivium.vision.io")
    paths = []
    for i in range(6):
        path = tmp_path / f"{i}.jpg"
        if i == 4:
            path.write_bytes(CORRUPT.read_bytes())
        else:
            image = torch.full((3, 16, 16), 40 * i, dtype=torch.uint8)
            path.write_bytes(io.encode_jpeg(image).numpy().tobytes())
        paths.append(path)
    return paths


def test_an_error_in_a_thread_names_the_file(jpegs: list[pathlib.Path]) -> None:
    loader = DataLoader(JpegFiles(jpegs), batch_size=2, num_workers=2, worker_type="thread")
    with pytest.raises(DecodeError) as caught:
        list(loader)
    assert caught.value.path == str(jpegs[4])
    assert any("in DataLoader worker thread 0" in n for n in caught.value.__notes__)


def test_on_error_skip_under_threads(jpegs: list[pathlib.Path]) -> None:
    loader = DataLoader(JpegFiles(jpegs), batch_size=2, num_workers=2, worker_type="thread",
                        on_error="skip")  # fmt: skip
    with pytest.warns(SkippedSamplesWarning, match="1 samples skipped"):
        out = list(loader)
    assert [len(b) for b in out] == [2, 2, 1]
    means = torch.cat(out).float().mean(dim=(1, 2, 3))  # flat images: their values
    assert torch.allclose(means, torch.tensor([0.0, 40, 80, 120, 200]), atol=2)
    assert loader.skip_report.skipped_files == [str(jpegs[4])]


class Shards(torch.utils.data.IterableDataset):
    """Items 0..n-1, each worker yielding every ``num_workers``-th (asking trivium's info)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(worker, self.n, workers))


def test_an_iterable_dataset_shards_itself_under_threads() -> None:
    def run(worker_type: str) -> list[list[int]]:
        loader = DataLoader(Shards(11), batch_size=2, num_workers=2, worker_type=worker_type)
        return [b.tolist() for b in loader]

    threads = run("thread")
    assert sorted(i for b in threads for i in b) == list(range(11))  # each item once: sharded
    assert threads == run("process")  # and in torch's order: workers in turn


class TorchShards(torch.utils.data.IterableDataset):
    """Shards itself with torch's ``get_worker_info``, which is None in a worker thread."""

    def __iter__(self) -> Iterator[int]:
        info = torch.utils.data.get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(worker, 6, workers))


def test_an_iterable_dataset_asking_torch_in_threads_is_warned_of() -> None:
    loader = DataLoader(TorchShards(), batch_size=3, num_workers=2, worker_type="thread")
    with pytest.warns(UserWarning, match=r"did not call trivium.data.get_worker_info\(\)"):
        out = [b.tolist() for b in loader]
    assert out == [[0, 1, 2], [0, 1, 2], [3, 4, 5], [3, 4, 5]]  # every thread yields all
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # asking trivium's: no warning
        list(DataLoader(Shards(6), batch_size=3, num_workers=2, worker_type="thread"))


def test_worker_init_fn_threads_and_intra_op_threads() -> None:
    seen: dict[int, tuple[str, int]] = {}

    def init(worker_id: int) -> None:
        seen[worker_id] = (threading.current_thread().name, torch.get_num_threads())

    list(DataLoader(list(range(8)), batch_size=2, num_workers=2, worker_type="thread",
                    worker_init_fn=init))  # fmt: skip
    assert sorted(seen) == [0, 1]
    assert {name for name, _ in seen.values()} == {"trivium-loader-0", "trivium-loader-1"}
    assert {n for _, n in seen.values()} == {intra_op_threads(2)}


def test_timeout_and_worker_type_are_checked() -> None:
    release = threading.Event()

    class Stuck:
        def __len__(self) -> int:
            return 2

        def __getitem__(self, i: int) -> int:
            release.wait(10)
            return i

    loader = DataLoader(Stuck(), num_workers=1, worker_type="thread", timeout=0.2)
    try:
        with pytest.raises(RuntimeError, match=r"timed out after 0\.2 seconds"):
            list(loader)
    finally:
        release.set()
    with pytest.raises(ValueError, match="worker_type must be 'process' or 'thread'"):
        DataLoader([1], worker_type="threads")


class Sample:
    """A per-sample Python object, made by ``__getitem__`` and dropped by ``collate_fn``."""

    made: ClassVar[weakref.WeakSet[Sample]] = weakref.WeakSet()

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row
        Sample.made.add(self)


class ManyObjects(torch.utils.data.Dataset):
    """pytorch#13246's pattern: the samples in a list of many small Python objects."""

    def __init__(self, n: int) -> None:
        self.rows = [{"id": i, "name": f"sample-{i}"} for i in range(n)]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> Sample:
        return Sample(self.rows[i])


def ids(samples: list[Sample]) -> torch.Tensor:
    return torch.tensor([s.row["id"] for s in samples])


@pytest.mark.parametrize("worker_type", ["thread", "process"])
def test_no_per_sample_objects_stay_alive_in_the_parent(worker_type: str) -> None:
    dataset = ManyObjects(1000)
    refs = [sys.getrefcount(row) for row in dataset.rows[:50]]
    loader = DataLoader(dataset, batch_size=50, shuffle=True, num_workers=2,
                        collate_fn=ids, worker_type=worker_type,
                        persistent_workers=worker_type == "process")  # fmt: skip
    tracked = []
    for epoch in range(3):
        assert sum(len(b) for b in loader) == 1000
        assert len(Sample.made) == 0  # every sample object made in this process is gone
        if epoch != 1:
            gc.collect()
            tracked.append(len(gc.get_objects()))
    # The rows were read (in threads, here) and nothing still refers to them.
    assert [sys.getrefcount(row) for row in dataset.rows[:50]] == refs
    # No Python objects pile up epoch after epoch (1000 samples an epoch).
    assert tracked[1] - tracked[0] < 100


def test_an_arrow_source_under_threads_gives_the_main_process_batches(
    tmp_path: pathlib.Path,
) -> None:
    for i in range(3):
        table = pa.table({"x": np.arange(10 * i, 10 * i + 10)})
        pq.write_table(table, tmp_path / f"part-{i}.parquet", row_group_size=4)

    def run(workers: int, worker_type: str) -> list[list[int]]:
        loader = DataLoader(ParquetSource(tmp_path), batch_size=4, shuffle=True, seed=2,
                            num_workers=workers, worker_type=worker_type)  # fmt: skip
        return [b["x"].to_pylist() for b in loader]

    threads = run(2, "thread")
    assert sorted(x for b in threads for x in b) == list(range(30))
    assert threads == run(0, "process")  # the main process reads the same plan


class Logged(torch.utils.data.Dataset):
    """Sample ``i``: ``[i, a random draw]``; logs which worker asked for each, in order."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.flip = RandomApply([lambda x: -x], p=0.5, generator=torch.Generator())
        self.log: list[int] = []
        self.lock = threading.Lock()
        self.others = threading.Event()  # a worker other than 0 asked for a sample

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        info = get_worker_info()
        with self.lock:
            self.log.append(-1 if info is None else info.id)
        if info is not None and info.id > 0:
            self.others.set()
        elif info is not None and self.log.count(0) == 1:
            self.others.wait(0.5)  # give a worker started alongside the time to show up
        return torch.stack([torch.tensor(float(i)), self.flip(torch.ones(()))])


def test_threads_start_staggered_and_keep_the_batches_of_processes_and_the_main() -> None:
    def run(num_workers: int, worker_type: str) -> tuple[list[torch.Tensor], list[int]]:
        kwargs = {"persistent_workers": True} if worker_type == "process" and num_workers else {}
        dataset = Logged(22)
        loader = DataLoader(dataset, batch_size=3, shuffle=True, num_workers=num_workers,
                            seed=7, worker_type=worker_type, **kwargs)  # fmt: skip
        return list(loader), dataset.log

    threads, log = run(4, "thread")
    for reference, _ in (run(4, "process"), run(0, "process")):
        assert len(threads) == len(reference) == 8
        for a, b in zip(threads, reference, strict=True):
            assert torch.equal(a, b)
    assert {-1.0, 1.0} <= set(torch.cat(threads)[:, 1].tolist())  # the transform drew
    first = [log.index(w) for w in range(4)]  # where each worker's first sample is
    assert log[:3] == [0, 0, 0]  # worker 0's first batch is made alone
    assert first == sorted(first)  # worker k starts once worker k-1 sent its first batch
    for w in range(1, 4):  # ...and all of that batch was asked for before
        assert log[: first[w]].count(w - 1) >= 3


class Counted(torch.utils.data.Dataset):
    """Counts the samples asked for; the consumer waits on ``made`` to see them."""

    def __init__(self, n: int) -> None:
        self.n, self.made = n, threading.Semaphore(0)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        self.made.release()
        return torch.tensor(i)


@pytest.mark.parametrize("prefetch_factor", [1, 2, 3])
def test_a_thread_makes_at_most_prefetch_factor_batches_ahead(prefetch_factor: int) -> None:
    # As torch's worker processes: queued and in-the-making batches together.
    dataset = Counted(40)
    loader = DataLoader(dataset, batch_size=1, num_workers=1, worker_type="thread",
                        prefetch_factor=prefetch_factor)  # fmt: skip
    batches, made = iter(loader), 0
    for taken in range(1, 6):
        assert next(batches).item() == taken - 1
        while made < taken + prefetch_factor:  # the worker makes the batches it has room for
            assert dataset.made.acquire(timeout=30)
            made += 1
        assert not dataset.made.acquire(timeout=0.2)  # and no more
    assert [b.item() for b in batches] == list(range(5, 40))
