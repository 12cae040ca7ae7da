"""Arrow sources and ArrowDataset used in the parent, then in DataLoader workers.

A source keeps a file open between reads (a memory-mapped Parquet reader), a filesystem
(a remote one holds connections and threads) and a cache of fragments; a forked worker
must read through its own. Each test reads in the parent, iterates in workers under a
watchdog (:mod:`loader_watchdog`), and reads in the parent again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from loader_watchdog import load_in_workers
from torch.utils.data import Dataset

from trivium.data import ArrowDataset, ArrowIPCSource, CSVSource, ParquetSource
from trivium.data.arrow_sources import ArrowSource

MODULE = "data.test_data_fork_safety"
ROWS = 40


def _table(first: int) -> pa.Table:
    ids = list(range(first, first + ROWS))
    return pa.table({"id": ids, "name": [f"row {i}" for i in ids], "v": [i / 4 for i in ids]})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fork_data")
    for k in range(2):
        pq.write_table(_table(k * ROWS), root / f"part{k}.parquet", row_group_size=6)
        pacsv.write_csv(_table(k * ROWS), root / f"part{k}.csv")
        with pa.ipc.new_file(root / f"part{k}.arrow", _table(0).schema) as writer:
            for batch in _table(k * ROWS).to_batches(max_chunksize=7):
                writer.write_batch(batch)
    return root


ALL_ROWS = sorted(_table(0).to_pylist() + _table(ROWS).to_pylist(), key=lambda r: r["id"])

# ------------------------------------------------------------------ iteration

SOURCES = {"parquet": ParquetSource, "arrow": ArrowIPCSource, "csv": CSVSource}


def build_source(root: str, kind: str, subtree: bool) -> ArrowSource:
    cls = SOURCES[kind]
    if subtree:  # a filesystem other than the local one: the child rebuilds it
        fs = pafs.SubTreeFileSystem(root, pafs.LocalFileSystem())
        return cls([f"part0.{kind}", f"part1.{kind}"], batch_size=5, filesystem=fs)
    return cls(root, batch_size=5)


def read_source(source: ArrowSource) -> list[dict[str, Any]]:
    return [row for batch in source for row in batch.to_pylist()]


@pytest.mark.parametrize(
    ("kind", "subtree", "context"),
    [
        ("parquet", False, "fork"),
        ("parquet", True, "fork"),
        ("parquet", False, "spawn"),
        ("parquet", True, "forkserver"),
        ("arrow", False, "fork"),
        ("csv", False, "fork"),
    ],
)
def test_arrow_source_iteration_in_workers(
    files: Path, kind: str, subtree: bool, context: str, tmp_path: Path
) -> None:
    got = load_in_workers(
        MODULE,
        {"root": str(files), "kind": kind, "subtree": subtree},
        context,
        tmp_path / "out.pt",
        build="build_source",
        read="read_source",
    )
    assert got["before"] == got["after"] == ALL_ROWS
    # Each worker reads its own fragments: together, every row once.
    rows = [row for batch in got["workers"] for row in batch.to_pylist()]
    assert sorted(rows, key=lambda r: r["id"]) == ALL_ROWS


# -------------------------------------------------------------- random access


class RowsByTake(Dataset):
    """Row ``i`` of a source by global row id (through its fragment cache)."""

    def __init__(self, source: ArrowSource) -> None:
        self.source = source

    def __len__(self) -> int:
        return sum(self.source.fragment_rows())

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.source.take(np.array([i])).to_pylist()[0]


def build_take(root: str, subtree: bool) -> RowsByTake:
    return RowsByTake(build_source(root, "parquet", subtree))


def read_take(rows: RowsByTake) -> list[dict[str, Any]]:
    return [rows[i] for i in (0, 7, 41, 79)]  # the cache holds fragments of both files


@pytest.mark.parametrize("subtree", [False, True])
def test_arrow_source_take_in_forked_workers(files: Path, subtree: bool, tmp_path: Path) -> None:
    got = load_in_workers(
        MODULE,
        {"root": str(files), "subtree": subtree},
        "fork",
        tmp_path / "out.pt",
        build="build_take",
        read="read_take",
    )
    assert got["before"] == got["after"] == [ALL_ROWS[i] for i in (0, 7, 41, 79)]
    assert got["workers"] == ALL_ROWS


# --------------------------------------------------------------- ArrowDataset


def build_dataset(root: str, parquet: bool, cache: str) -> ArrowDataset:
    name = "parquet" if parquet else "arrow"
    paths = [os.path.join(root, f"part{k}.{name}") for k in range(2)]
    return ArrowDataset(paths, cache_dir=cache)  # Parquet: converted there, then mapped


def read_dataset(dataset: ArrowDataset) -> list[dict[str, Any]]:
    return [dataset[i] for i in range(len(dataset))]


@pytest.mark.parametrize(
    ("parquet", "context"), [(False, "fork"), (True, "fork"), (False, "spawn")]
)
def test_arrow_dataset_in_workers(files: Path, parquet: bool, context: str, tmp_path: Path) -> None:
    got = load_in_workers(
        MODULE,
        {"root": str(files), "parquet": parquet, "cache": str(tmp_path / "cache")},
        context,
        tmp_path / "out.pt",
        build="build_dataset",
        read="read_dataset",
    )
    assert got["before"] == got["after"] == got["workers"] == ALL_ROWS


# ------------------------------------------------------------- what the child holds


def _child_view(source: ParquetSource, parents: tuple[Any, Any]) -> tuple[bool, ...]:
    from trivium.core import forking

    dropped = source._open_file is None
    rows = read_source(source)
    own_fs = source._filesystem() is not parents[0]
    own_file = source._open_file is not None and source._open_file is not parents[1]
    abandoned = all(any(h is p for h in forking._abandoned) for p in parents)
    return dropped, own_fs, own_file, abandoned, rows == ALL_ROWS


def test_forked_child_reads_through_its_own_file_and_filesystem(files: Path) -> None:
    import multiprocessing

    source = build_source(str(files), "parquet", subtree=True)
    assert read_source(source) == ALL_ROWS
    parents = (source._filesystem(), source._open_file)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=lambda: queue.put(_child_view(source, parents)))
    child.start()
    try:
        result = queue.get(timeout=60)  # turns a hang into a failure
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    assert result == (True, True, True, True, True)
    assert source._filesystem() is parents[0] and source._open_file is parents[1]
    assert read_source(source) == ALL_ROWS
