"""The loader's shared read cache: each fragment read once per epoch, held once, never leaked.

References: storage reads are counted by the source itself (a subclass appending
each read fragment to a log file, from every process); the batches are compared with
the loader without workers (no cache) and with per-worker caches; leaks are checked
by listing the shared-memory directory before and after.
"""

from __future__ import annotations

import collections
import gc
import itertools
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trivium.data import DataLoader, ParquetSource
from trivium.data.shared_cache import SHM_ENV, SharedReadCache, sweep_stale

ROWS, GROUP = 256, 16  # 16 row groups


class CountingSource(ParquetSource):
    """A ParquetSource that logs every fragment it reads from storage (any process)."""

    def __init__(self, paths: object, log: pathlib.Path, **kwargs: object) -> None:
        super().__init__(paths, **kwargs)
        self.log = str(log)

    def _read(self, fragment):
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{fragment.index}\n".encode())
        finally:
            os.close(fd)
        return super()._read(fragment)


@pytest.fixture()
def shm(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    root = tmp_path / "shm"
    root.mkdir()
    monkeypatch.setenv(SHM_ENV, str(root))
    return root


@pytest.fixture(scope="module")
def parquet_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("cache") / "data.parquet"
    ids = np.arange(ROWS)
    blob = pa.array([bytes([i % 256]) * 100 for i in ids], pa.binary())
    pq.write_table(pa.table({"id": ids, "blob": blob}), path, row_group_size=GROUP)
    return path


def reads(log: pathlib.Path) -> collections.Counter:
    counts = collections.Counter(log.read_text().split()) if log.exists() else collections.Counter()
    log.unlink(missing_ok=True)
    return counts


def ids_of(loader: DataLoader) -> list[list[int]]:
    return [b["id"].tolist() for b in loader]


def cache_files(shm: pathlib.Path) -> list[pathlib.Path]:
    return [p for p in shm.rglob("*") if p.is_file() and p.name != "owner.lock"]


@pytest.mark.parametrize("num_workers", [1, 3])
def test_each_fragment_is_read_once_per_epoch_and_batches_are_unchanged(
    parquet_file: pathlib.Path, shm: pathlib.Path, tmp_path: pathlib.Path, num_workers: int
) -> None:
    log = tmp_path / "reads.log"
    source = CountingSource(parquet_file, log, columns=["id", "blob"])
    reference = ParquetSource(parquet_file, columns=["id", "blob"])
    loader = DataLoader(
        source, 10, num_workers=num_workers, seed=1, shuffle=True, shuffle_window=64
    )
    for epoch in range(2):
        loader.set_epoch(epoch)
        got = [(b["id"].tolist(), b["blob"].to_pylist()) for b in loader]
        assert reads(log) == {str(i): 1 for i in range(ROWS // GROUP)}
        expected = DataLoader(reference, 10, seed=1, shuffle=True, shuffle_window=64)
        expected.set_epoch(epoch)
        assert got == [(b["id"].tolist(), b["blob"].to_pylist()) for b in expected]
        assert cache_files(shm) == []  # freed at the end of the epoch
    private = DataLoader(
        source, 10, num_workers=2, seed=1, shared_cache=False, shuffle=True, shuffle_window=64
    )
    ids_of(private)
    assert sum(reads(log).values()) > ROWS // GROUP  # per-worker caches read some twice


@pytest.mark.parametrize("persistent", [False, True])
def test_a_dataset_within_one_window_is_read_once_for_all_epochs(
    parquet_file: pathlib.Path, shm: pathlib.Path, tmp_path: pathlib.Path, persistent: bool
) -> None:
    log = tmp_path / "reads.log"
    source = CountingSource(parquet_file, log, columns=["id", "blob"])
    reference = ParquetSource(parquet_file, columns=["id", "blob"])
    loader = DataLoader(source, 10, num_workers=2, seed=1, shuffle=True, shuffle_window=ROWS,
                        persistent_workers=persistent)  # fmt: skip
    for epoch in range(3):
        loader.set_epoch(epoch)
        got = [(b["id"].tolist(), b["blob"].to_pylist()) for b in loader]
        expected = DataLoader(reference, 10, seed=1, shuffle=True, shuffle_window=ROWS)
        expected.set_epoch(epoch)
        assert got == [(b["id"].tolist(), b["blob"].to_pylist()) for b in expected]
        # kept between epochs: the window's fragments, no more
        assert len([p for p in cache_files(shm) if p.suffix == ".arrow"]) == ROWS // GROUP
    assert reads(log) == {str(i): 1 for i in range(ROWS // GROUP)}  # once in 3 epochs
    del loader
    gc.collect()
    assert cache_files(shm) == []


def test_resume_on_other_workers_and_ranks_through_the_cache(
    parquet_file: pathlib.Path, shm: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    log = tmp_path / "reads.log"
    pipe = CountingSource(parquet_file, log, columns=["id"])
    loader = DataLoader(pipe, 8, num_workers=2, seed=3, shuffle=True, shuffle_window=48)
    it = iter(loader)
    seen = [next(it)["id"].tolist() for _ in range(5)]
    state = loader.state_dict()
    del it
    for rank in range(2):
        rest = DataLoader(
            pipe, 5, num_workers=3, seed=0, rank=rank, world_size=2, shuffle=True, shuffle_window=48
        )
        rest.load_state_dict(state)
        seen += ids_of(rest)
    assert sorted(itertools.chain.from_iterable(seen)) == list(range(ROWS))


def test_the_cache_holds_about_one_window(
    parquet_file: pathlib.Path, shm: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """Window 32 rows = 2 row groups; in flight 2 workers x 2 batches of 4 rows."""
    pipe = ParquetSource(parquet_file, columns=["id"])
    loader = DataLoader(pipe, 4, num_workers=2, seed=0, shuffle=True, shuffle_window=32)
    most = 0
    for _ in loader:
        most = max(most, len([p for p in cache_files(shm) if p.suffix == ".arrow"]))
    # the window being read (2), the next window reached by the batches in flight (2),
    # and one more where a window boundary falls inside a batch
    assert 1 <= most <= 5


def worker_pids() -> list[int]:
    pids = []
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
            pids += [int(p) for p in f.read().split()]
    return pids


def test_a_killed_worker_leaks_no_shared_memory(
    parquet_file: pathlib.Path, shm: pathlib.Path
) -> None:
    before = sorted(os.listdir(shm))
    pipe = ParquetSource(parquet_file, columns=["id", "blob"])
    loader = DataLoader(pipe, 4, num_workers=2, seed=0, timeout=60, shuffle=True, shuffle_window=64)
    it = iter(loader)
    next(it)
    assert cache_files(shm)  # fragments are in shared memory mid-epoch
    os.kill(worker_pids()[-1], signal.SIGKILL)
    with pytest.raises(RuntimeError, match=r"(?i)worker"):
        for _ in it:
            pass
    assert sorted(os.listdir(shm)) == before
    assert len(ids_of(loader)) == ROWS // 4  # the next epoch starts afresh


def test_a_killed_main_process_leaves_a_directory_the_next_cache_removes(
    shm: pathlib.Path,
) -> None:
    code = textwrap.dedent(
        """
        import os, signal
        from trivium.data.shared_cache import SharedReadCache
        cache = SharedReadCache()
        open(os.path.join(cache.path, "0.arrow"), "wb").write(b"x" * 4096)
        print(cache.path, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    env = {**os.environ, SHM_ENV: str(shm)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    left = pathlib.Path(out.stdout.strip())
    assert out.returncode == -signal.SIGKILL and left.is_dir()
    mine = SharedReadCache()  # sweeps directories whose owner is gone
    assert not left.exists()
    assert sweep_stale() == []  # a live owner's directory stays
    assert pathlib.Path(mine.path).is_dir()
    mine.close()


def test_an_exception_in_the_loop_frees_the_cache(
    parquet_file: pathlib.Path, shm: pathlib.Path
) -> None:
    pipe = ParquetSource(parquet_file, columns=["id"])
    for persistent in (False, True):
        loader = DataLoader(
            pipe,
            4,
            num_workers=2,
            seed=0,
            persistent_workers=persistent,
            shuffle=True,
            shuffle_window=64,
        )
        with pytest.raises(KeyError):
            for _ in loader:
                raise KeyError("stop")
        if not persistent:  # the workers are gone with the epoch
            assert cache_files(shm) == []
        assert sorted(itertools.chain.from_iterable(ids_of(loader))) == list(range(ROWS))
        # Persistent workers finish the batches they were given, which may fill the
        # cache after the stop: the next epoch's end empties it.
        assert cache_files(shm) == []


def test_load_many_reads_each_missing_fragment_once(
    parquet_file: pathlib.Path, shm: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    log = tmp_path / "reads.log"
    source = CountingSource(parquet_file, log, columns=["id"])
    reference = pq.ParquetFile(parquet_file)
    cache = SharedReadCache()
    try:
        cache.load(source, 5)  # already cached: mapped, not read again
        reads(log)
        tables = cache.load_many(source, [3, 0, 5])
        assert reads(log) == {"3": 1, "0": 1}
        for index in (3, 0, 5):
            assert tables[index] == reference.read_row_group(index, columns=["id"])
        cache.load_many(source, [0, 3])
        assert reads(log) == {}
    finally:
        cache.close()


def test_fill_without_waiting_leaves_a_fragment_being_read_to_its_reader(
    parquet_file: pathlib.Path, shm: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    import fcntl

    log = tmp_path / "reads.log"
    source = CountingSource(parquet_file, log, columns=["id"])
    cache = SharedReadCache()
    try:
        fd = os.open(os.path.join(cache.path, "2.arrow.lock"), os.O_CREAT | os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)  # another reader holds fragment 2
        assert cache.fill(source, 2, want=True, wait=False) is None
        assert reads(log) == {}
        os.close(fd)  # its reader is done (here: gone without writing it)
        table = cache.fill(source, 2, want=True, wait=False)
        assert table["id"].to_pylist() == list(range(2 * GROUP, 3 * GROUP))
        assert reads(log) == {"2": 1}
    finally:
        cache.close()


RANK_SCRIPT = """
import collections, json, os, sys
import torch.distributed as dist
sys.path.insert(0, {tests!r})
from test_data_shared_cache import CountingSource
from trivium.data import DataLoader

dist.init_process_group("gloo")
rank = dist.get_rank()
log = {log!r} + f".{{rank}}"
loader = DataLoader(CountingSource({path!r}, log, columns=["id"]), 8,
                    num_workers=2, seed=0, shuffle=True, shuffle_window={rows})
ids = []
for batch in loader:
    ids += batch["id"].tolist()
    dist.barrier()  # the ranks stay in step, as DDP's gradient all-reduce keeps them
reads = collections.Counter(open(log).read().split()) if os.path.exists(log) else {{}}
everyone = [None, None]
dist.all_gather_object(everyone, {{"ids": ids, "reads": reads, "dir": loader._read_cache.path}})
if rank == 0:
    print(json.dumps(everyone))
dist.destroy_process_group()
"""


def run_two_ranks(tmp_path: pathlib.Path, parquet_file: pathlib.Path) -> list[dict]:
    """Two ranks on this machine under torchrun (gloo), each with 2 workers."""
    import json

    script = tmp_path / "ranks.py"
    tests = str(pathlib.Path(__file__).parent)
    log = str(tmp_path / "reads")
    script.write_text(RANK_SCRIPT.format(tests=tests, log=log, path=str(parquet_file), rows=ROWS))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc-per-node", "2", str(script)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_two_ranks_on_one_machine_read_each_fragment_once_between_them(
    parquet_file: pathlib.Path, shm: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """torchrun, 2 ranks on gloo: one cache for the machine, each fragment read once.

    The reads are counted from both ranks and all their workers together; the ranks
    still split the rows exactly, and the shared directory is gone at the end.
    """
    ranks = run_two_ranks(tmp_path, parquet_file)
    assert ranks[0]["dir"] == ranks[1]["dir"]  # one cache directory for the machine
    reads = collections.Counter(ranks[0]["reads"]) + collections.Counter(ranks[1]["reads"])
    assert reads == {str(i): 1 for i in range(ROWS // GROUP)}
    assert sorted(ranks[0]["ids"] + ranks[1]["ids"]) == list(range(ROWS))
    assert not set(ranks[0]["ids"]) & set(ranks[1]["ids"])
    assert list(shm.iterdir()) == []


def test_loaders_given_one_name_share_a_directory_removed_by_the_last(
    parquet_file: pathlib.Path, shm: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    log = tmp_path / "reads.log"
    source = CountingSource(parquet_file, log, columns=["id"])
    first, second = SharedReadCache(name="job"), SharedReadCache(name="job")
    assert first.path == second.path and first.shared
    first.load(source, 3)
    assert second.load(source, 3)["id"].to_pylist() == list(range(3 * GROUP, 4 * GROUP))
    assert reads(log) == {"3": 1}
    first.close()
    assert sweep_stale() == [] and os.path.isdir(second.path)  # still held by second
    second.close()
    assert not os.path.exists(second.path)


def wait_for(ready: object, done: object) -> None:
    ready.set()
    done.wait(60)


def test_a_forked_child_alive_after_the_cache_closes_does_not_keep_its_directory(
    shm: pathlib.Path,
) -> None:
    """A worker forked while the loader held its cache (inheriting the owner lock's
    descriptor) and still exiting when the loader lets go: the directory goes anyway."""
    import multiprocessing

    cache = SharedReadCache()
    context = multiprocessing.get_context("fork")
    ready, done = context.Event(), context.Event()
    child = context.Process(target=wait_for, args=(ready, done))
    child.start()
    try:
        assert ready.wait(60)
        cache.close()
        assert list(shm.iterdir()) == []
    finally:
        done.set()
        child.join()
