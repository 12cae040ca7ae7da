"""trivium.data.DataLoader: exact sharding, deterministic epochs and resume.

The reference for the global order is the loader itself on one rank and no workers:
every other layout must read the same positions, and the union over ranks must be
the dataset exactly once (checked against the dataset's own ids).
"""

from __future__ import annotations

import collections
import itertools
import os
import pathlib
import random
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import torch

from trivium.data import ArrowDataset, DataLoader, MapPipe, ParquetSource, SkippedSamplesWarning

N = 103


@pytest.fixture(scope="module")
def parquet_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """103 rows in 3 files, row groups of 9 (uneven everywhere)."""
    root = tmp_path_factory.mktemp("loader")
    for i, (lo, hi) in enumerate(((0, 40), (40, 41), (41, N))):
        ids = np.arange(lo, hi)
        table = pa.table(
            {"id": ids, "feat": pa.array([[float(j)] * 4 for j in ids], pa.list_(pa.float32(), 4))}
        )
        pq.write_table(table, root / f"part-{i}.parquet", row_group_size=9)
    return root


def map_ids(loader: DataLoader) -> list[list[int]]:
    return [b.tolist() for b in loader]


def arrow_ids(loader: DataLoader) -> list[list[int]]:
    return [b["id"].tolist() for b in loader]


def flat(batches) -> list[int]:
    return list(itertools.chain.from_iterable(batches))


def global_order(per_rank: list[list[list[int]]]) -> list[int]:
    """Positions p = i * R + r, rebuilt from each rank's batches."""
    flat = [list(itertools.chain.from_iterable(batches)) for batches in per_rank]
    out = []
    for i in range(max(map(len, flat))):
        out += [f[i] for f in flat if i < len(f)]
    return out


@pytest.mark.parametrize("world_size", [1, 2, 3])
@pytest.mark.parametrize("num_workers", [0, 2])
def test_map_style_exactly_once_and_same_order(world_size: int, num_workers: int) -> None:
    data = list(range(N))
    ref = list(itertools.chain.from_iterable(map_ids(DataLoader(data, 8, shuffle=True, seed=5))))
    assert sorted(ref) == data and ref != data
    per_rank = []
    for rank in range(world_size):
        loader = DataLoader(
            data,
            8,
            shuffle=True,
            num_workers=num_workers,
            seed=5,
            rank=rank,
            world_size=world_size,
        )
        per_rank.append(map_ids(loader))
        assert len(per_rank[-1]) == len(loader)
    assert len({len(b) for b in per_rank}) == 1  # every rank: the same number of batches
    got = global_order(per_rank)
    assert got[:N] == ref  # the global order ignores workers and ranks
    pad = len(got) - N
    assert pad < world_size and got[N:] == ref[:pad]  # padding wraps to the start


@pytest.mark.parametrize("world_size", [2, 3])
def test_drop_last_drops_the_uneven_tail(world_size: int) -> None:
    data = list(range(N))
    per_rank = [
        map_ids(DataLoader(data, 4, True, seed=1, drop_last=True, rank=r, world_size=world_size))
        for r in range(world_size)
    ]
    seen = list(itertools.chain.from_iterable(itertools.chain.from_iterable(per_rank)))
    assert len(seen) == len(set(seen))  # nothing twice
    per = N // world_size // 4 * 4
    assert all(len(list(itertools.chain.from_iterable(b))) == per for b in per_rank)
    assert all(len(batch) == 4 for b in per_rank for batch in b)


def test_epochs_and_seeds() -> None:
    data = list(range(N))
    loader = DataLoader(data, 10, shuffle=True, seed=0, num_workers=2)
    first = map_ids(loader)
    loader.set_epoch(0)
    assert first == map_ids(loader)  # same epoch: same order
    assert first == map_ids(DataLoader(data, 10, shuffle=True, seed=0))
    loader.set_epoch(1)
    second = map_ids(loader)
    assert second != first and sorted(flat(second)) == data
    # without set_epoch, each iteration takes the next epoch (torch reshuffles each time)
    third = map_ids(loader)
    assert loader.epoch == 2
    epoch_2 = DataLoader(data, 10, shuffle=True, seed=0)
    epoch_2.set_epoch(2)
    assert third == map_ids(epoch_2) != second
    assert map_ids(DataLoader(data, 10, shuffle=True, seed=1)) != first
    assert flat(map_ids(DataLoader(data, 10))) == data  # no shuffle: in order


@pytest.mark.parametrize("num_workers", [0, 2])
def test_arrow_source_exactly_once_across_layouts(
    parquet_dir: pathlib.Path, num_workers: int
) -> None:
    pipe = ParquetSource(parquet_dir).to_tensors(["id", "feat"])
    ref = arrow_ids(DataLoader(pipe, 7, shuffle=True, seed=2))
    ref_flat = list(itertools.chain.from_iterable(ref))
    assert sorted(ref_flat) == list(range(N)) and ref_flat != list(range(N))
    per_rank = [
        arrow_ids(
            DataLoader(pipe, 7, shuffle=True, num_workers=num_workers, seed=2, rank=r, world_size=2)
        )
        for r in (0, 1)
    ]
    assert len(per_rank[0]) == len(per_rank[1])
    assert global_order(per_rank)[:N] == ref_flat
    batch = next(iter(DataLoader(pipe, 5, shuffle=True, seed=2)))
    assert torch.equal(batch["feat"][:, 0], batch["id"].float())  # rows stay whole


def test_arrow_shuffle_window_keeps_rows_near_their_fragment(parquet_dir: pathlib.Path) -> None:
    pipe = ParquetSource(parquet_dir).to_tensors(["id"])
    loader = DataLoader(pipe, 9, shuffle=True, seed=4, shuffle_window=9)
    batches = arrow_ids(loader)
    # a window of 9 rows = one row group (when aligned): each batch is one row group
    groups = [sorted(b) for b in batches[:4]]
    assert all(g == list(range(g[0], g[0] + len(g))) for g in groups if g[0] < 36)
    assert sorted(itertools.chain.from_iterable(batches)) == list(range(N))
    wide = DataLoader(pipe, 9, shuffle=True, seed=4)  # the default window: all 60 rows
    assert arrow_ids(wide) != batches


def test_a_shuffle_buffer_counts_items_and_the_loader_refuses_it(parquet_dir: pathlib.Path) -> None:
    # buffer_size counts the pipe's items (RecordBatches here), wherever it is iterated...
    source = ParquetSource(parquet_dir)
    batches = [b["id"].to_pylist() for b in source.shuffle(buffer_size=3, seed=0)]
    assert sorted(batches) == [b["id"].to_pylist() for b in source] != batches
    # ... and carries items across the loader's batches: refused, naming the exact way.
    for pipe in (source.shuffle(), source.shuffle(buffer_size=9).to_tensors(["id"])):
        with pytest.raises(TypeError, match=r"Shuffle.*DataLoader\(shuffle=True\)"):
            DataLoader(pipe, 9, seed=4)


def interrupted(make, steps: int) -> tuple[list[list[int]], dict]:
    loader = make()
    seen = []
    for batch in loader:
        seen.append(batch)
        if len(seen) == steps:
            break
    return seen, loader.state_dict()


@pytest.mark.parametrize("trial", range(3))
def test_resume_mid_epoch_on_other_workers_and_ranks(parquet_dir: pathlib.Path, trial: int) -> None:
    rng = random.Random(trial)
    pipe = ParquetSource(parquet_dir, filter=pc.field("id") != 50).to_tensors(["id"])
    expected = [i for i in range(N) if i != 50]
    steps = rng.randint(1, 12)
    before, state = interrupted(
        lambda: DataLoader(pipe, 4, shuffle=True, num_workers=2, seed=9, shuffle_window=20), steps
    )
    assert state["samples_consumed"] == 4 * steps
    seen = [b["id"].tolist() for b in before]
    # resume on 1 worker and 2 "ranks" (in-process), another batch size
    for rank in (0, 1):
        loader = DataLoader(
            pipe, 3, num_workers=rank, seed=0, rank=rank, world_size=2, drop_last=True
        )
        loader.load_state_dict(state)
        assert loader.seed == 9
        seen += arrow_ids(loader)
    flat = list(itertools.chain.from_iterable(seen))
    assert len(flat) == len(set(flat))  # nothing twice
    remaining = len(expected) - 4 * steps
    assert len(flat) == 4 * steps + remaining // 2 // 3 * 3 * 2  # only drop_last's tail missing
    # without drop_last on one rank: exactly the unseen samples
    loader = DataLoader(pipe, 5, seed=9)
    loader.load_state_dict(state)
    rest = list(itertools.chain.from_iterable(arrow_ids(loader)))
    first = list(itertools.chain.from_iterable(b["id"].tolist() for b in before))
    assert sorted(first + rest) == expected
    full = DataLoader(pipe, 4, shuffle=True, seed=9, shuffle_window=20)
    full = list(itertools.chain.from_iterable(arrow_ids(full)))
    assert first + rest == full  # and in the epoch's order


def test_resume_map_style_dataset_and_finished_epoch() -> None:
    data = MapPipe(list(range(N)))
    before, state = interrupted(lambda: DataLoader(data, 6, shuffle=True, num_workers=2, seed=3), 5)
    loader = DataLoader(data, 6, shuffle=True, num_workers=2)
    loader.load_state_dict(state)
    rest = map_ids(loader)
    flat = [i for b in before for i in b.tolist()] + [i for b in rest for i in b]
    assert sorted(flat) == list(range(N))
    assert loader.state_dict()["samples_consumed"] == N  # the epoch is finished
    loader.load_state_dict(loader.state_dict())
    assert map_ids(loader) == []
    loader.set_epoch(1)
    assert len(map_ids(loader)) == 18
    with pytest.raises(ValueError, match="dataset of 103 samples, this one has 5"):
        DataLoader(list(range(5))).load_state_dict(state)
    with pytest.raises(ValueError, match="version"):
        DataLoader(data).load_state_dict({"version": 99})


def test_state_counts_only_what_was_yielded() -> None:
    loader = DataLoader(list(range(20)), 4, num_workers=2, prefetch_factor=4)
    it = iter(loader)
    next(it)
    next(it)
    assert loader.state_dict()["samples_consumed"] == 8  # prefetched batches do not count
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader([1], batch_size=0)


def with_pid(i: int) -> tuple[int, int]:
    return i, os.getpid()


def test_persistent_workers_keep_their_processes_and_follow_the_epochs() -> None:
    data = MapPipe(list(range(N)))
    loader = DataLoader(
        data.map(with_pid), 8, shuffle=True, num_workers=2, seed=4, persistent_workers=True
    )
    pids: set[int] = set()
    for epoch in (0, 1, 1, 2):  # epoch 1 twice: the same order again
        loader.set_epoch(epoch)
        batches = list(loader)
        reference = DataLoader(data, 8, shuffle=True, seed=4)
        reference.set_epoch(epoch)
        assert [ids.tolist() for ids, _ in batches] == map_ids(reference)
        pids |= {pid for _, batch_pids in batches for pid in batch_pids.tolist()}
    assert len(pids) == 2 and os.getpid() not in pids  # the same two workers throughout
    with pytest.raises(ValueError, match="persistent_workers needs num_workers > 0"):
        DataLoader(data, persistent_workers=True)
    with pytest.raises(ValueError, match="seed must be in"):
        DataLoader(data, seed=-1)


def test_persistent_workers_break_and_resume_mid_epoch(parquet_dir: pathlib.Path) -> None:
    pipe = ParquetSource(parquet_dir).to_tensors(["id"])
    full = arrow_ids(DataLoader(pipe, 4, shuffle=True, seed=9, shuffle_window=20))
    loader = DataLoader(
        pipe, 4, shuffle=True, num_workers=2, seed=9, shuffle_window=20, persistent_workers=True
    )
    before, state = [], {}
    for batch in loader:
        before.append(batch["id"].tolist())
        if len(before) == 5:
            state = loader.state_dict()
            break
    assert arrow_ids(loader) == full  # a new iteration starts the epoch over
    loader.load_state_dict(state)
    assert before + arrow_ids(loader) == full  # exactly the rest, in order


def test_on_error_skip_is_counted_and_keeps_batch_counts(parquet_dir: pathlib.Path) -> None:
    def fragile(row: dict) -> int:
        if row["id"] % 10 == 3:
            raise ValueError("corrupt")
        return row["id"]

    pipe = ParquetSource(parquet_dir).to_rows().map(fragile, on_error="skip")
    loader = DataLoader(pipe, 10, num_workers=2)
    with pytest.warns(SkippedSamplesWarning, match="10 samples skipped"):
        batches = map_ids(loader)
    assert len(batches) == 11 and loader.skipped == 10
    assert sorted(flat(batches)) == [i for i in range(N) if i % 10 != 3]
    with pytest.raises(ValueError, match="corrupt"):
        map_ids(DataLoader(ParquetSource(parquet_dir).to_rows().map(fragile), 10))


def test_arrow_dataset_through_the_loader(
    parquet_dir: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    ds = ArrowDataset(sorted(parquet_dir.glob("*.parquet")), cache_dir=tmp_path)
    loader = DataLoader(ds, 16, shuffle=True, num_workers=2, seed=0)
    batches = list(loader)
    ids = torch.cat([b["id"] for b in batches]).tolist()
    assert sorted(ids) == list(range(N))
    assert torch.equal(batches[0]["feat"][:, 3], batches[0]["id"].float())


def test_ops_that_carry_items_across_batches_are_refused_naming_the_exact_way(
    parquet_dir: pathlib.Path,
) -> None:
    rows = ParquetSource(parquet_dir).to_rows()
    refused = [
        (ParquetSource(parquet_dir).shuffle(), r"DataLoader\(shuffle=True\)"),
        (rows.header(3), "Subset"),
        (rows.enumerate(), "index"),
        (rows.cycle(2), "epochs"),
        (rows.cache(), "ArrowDataset"),
        (rows.shard(2, 0), "shards by itself"),
        (rows.bucket_by_length(2, len), "batch_sampler"),
    ]
    for pipe, hint in refused:
        with pytest.raises(TypeError, match=hint):
            DataLoader(pipe, 4)
    with pytest.raises(ValueError, match="shards by itself"):
        DataLoader(ParquetSource(parquet_dir).shard(2, 0))
    with pytest.raises(TypeError, match="map-style"):
        DataLoader(iter(range(3)))


def test_device_prefetch_on_cpu() -> None:
    loader = DataLoader(list(range(10)), 4, device="cpu")
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_device_prefetch_and_pin_memory_on_cuda(parquet_dir: pathlib.Path) -> None:
    pipe = ParquetSource(parquet_dir).to_tensors(["id", "feat"])
    loader = DataLoader(pipe, 8, num_workers=2, pin_memory=True, device="cuda", seed=0)
    batches = list(loader)
    assert all(b["feat"].is_cuda for b in batches)
    assert sorted(torch.cat([b["id"] for b in batches]).tolist()) == list(range(N))
    assert loader.state_dict()["samples_consumed"] == N


DDP_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from trivium.data import DataLoader, ParquetSource

    def run(rank, root, store, out):
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
        pipe = ParquetSource(root).to_tensors(["id"])
        loader = DataLoader(
            pipe, 6, shuffle=True, num_workers=2, seed=11, multiprocessing_context="fork"
        )
        result = {}
        for epoch in (0, 1):
            loader.set_epoch(epoch)
            result[epoch] = [b["id"].tolist() for b in loader]
        ids = torch.tensor([len(result[0])])
        dist.all_reduce(ids)  # would hang if ranks disagreed about the number of steps
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump({"rank": loader.rank, "world": loader.world_size, "batches": result}, f)
        dist.destroy_process_group()

    if __name__ == "__main__":
        # torch.multiprocessing's spawn API; fork: the ranks skip re-importing torch
        mp.start_processes(run, args=tuple(sys.argv[1:]), nprocs=2, start_method="fork")
    """
)


def test_two_ranks_two_workers_with_torch_distributed(
    parquet_dir: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    import json

    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = [sys.executable, str(script), str(parquet_dir), str(tmp_path / "store"), str(tmp_path)]
    subprocess.run(args, check=True, timeout=240, env=env)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [(r["rank"], r["world"]) for r in ranks] == [(0, 2), (1, 2)]
    for epoch in ("0", "1"):
        per_rank = [r["batches"][epoch] for r in ranks]
        assert len(per_rank[0]) == len(per_rank[1]) == 9  # ceil(103 / 2 / 6)
        ids = collections.Counter(i for batches in per_rank for b in batches for i in b)
        assert set(ids) == set(range(N))
        assert sum(ids.values()) == N + 1 and ids.most_common(1)[0][1] == 2  # one pad sample
        single = DataLoader(ParquetSource(parquet_dir).to_tensors(["id"]), 6, shuffle=True, seed=11)
        single.set_epoch(int(epoch))
        assert global_order(per_rank)[:N] == list(itertools.chain.from_iterable(arrow_ids(single)))
    assert ranks[0]["batches"]["0"] != ranks[0]["batches"]["1"]


def test_a_worker_error_leaves_nothing_for_the_next_loader() -> None:
    """The failed epoch's workers are shut down before the error propagates.

    Otherwise the next loader's forked workers inherit torch's iterator (kept alive by
    the traceback's reference cycle) and print its failing ``__del__`` on collection.
    """
    script = textwrap.dedent(
        """
        from trivium.data import DataLoader, MapPipe

        def boom(x):
            if x == 5:
                raise ValueError("bad sample")
            return x

        try:
            list(DataLoader(MapPipe(list(range(20))).map(boom), 2, num_workers=2))
        except ValueError:
            pass
        assert len(list(DataLoader(MapPipe(list(range(20))), 2, num_workers=2))) == 10
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
