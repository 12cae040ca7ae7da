"""ParquetSource's pass with row groups read ahead on the thread pool, against pyarrow.

The reference is pyarrow's own one-at-a-time reader (``ParquetFile.iter_batches``, and
``read_row_group`` / ``read_table`` with a filter): the same batches, in the same order,
with or without the pool.
"""

from __future__ import annotations

import itertools
import pathlib
import shutil
import threading
import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from trivium.core import DecodeError
from trivium.core.threads import get_num_threads, parallel_map, set_num_threads
from trivium.data import ParquetSource
from trivium.data._read_ahead import read_ahead

BAD = pathlib.Path(__file__).resolve().parents[1] / "assets" / "parquet" / "bad"


@pytest.fixture
def threads() -> Iterator[None]:
    """Two pool threads, whatever this machine has (read-ahead needs two)."""
    before = get_num_threads()
    set_num_threads(2)
    yield
    set_num_threads(before)


@pytest.fixture
def lists(tmp_path: pathlib.Path) -> pathlib.Path:
    """Two files of (label, ``list<float32>``[8], name) in uneven row groups."""
    rng = np.random.default_rng(0)
    for name, rows, group in (("a", 37, 10), ("b", 26, 7)):
        feat = rng.standard_normal((rows, 8), dtype=np.float32)
        offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * 8)
        table = pa.table(
            {
                "label": rng.integers(0, 100, rows),
                "feat": pa.ListArray.from_arrays(offsets, pa.array(feat.ravel())),
                "name": [f"{name}{i}" for i in range(rows)],
            }
        )
        pq.write_table(table, tmp_path / f"{name}.parquet", row_group_size=group)
    return tmp_path


def pyarrow_batches(
    files: list[pathlib.Path], batch_size: int, columns: list[str] | None, groups=None
) -> list[pa.RecordBatch]:
    out = []
    for path in files:
        reader = pq.ParquetFile(path)
        rows = range(reader.num_row_groups) if groups is None else groups[path]
        out += reader.iter_batches(batch_size=batch_size, row_groups=rows, columns=columns)
    return out


def assert_same_batches(got: list[pa.RecordBatch], ref: list[pa.RecordBatch]) -> None:
    assert [b.num_rows for b in got] == [b.num_rows for b in ref]
    for mine, theirs in zip(got, ref, strict=True):
        assert mine.schema.equals(theirs.schema, check_metadata=True)
        assert mine.equals(theirs)


@pytest.mark.parametrize("batch_size", [3, 7, 10, 64])
@pytest.mark.parametrize("columns", [None, ["feat", "label"]])
def test_read_ahead_batches_equal_iter_batches(
    threads: None, lists: pathlib.Path, batch_size: int, columns: list[str] | None
) -> None:
    source = ParquetSource(lists, columns=columns, batch_size=batch_size)
    assert source._reads_ahead(source.fragments)  # the pass under test reads ahead
    files = sorted(lists.glob("*.parquet"))
    assert_same_batches(list(source), pyarrow_batches(files, batch_size, columns))


@pytest.mark.parametrize("groups", [(5, 9, 3, 9), (5, 5, 8), (4, 4, 4, 4, 4)])
def test_uneven_row_groups_read_ahead_as_iter_batches(
    threads: None, tmp_path: pathlib.Path, groups: tuple[int, ...]
) -> None:
    """Row groups of several lengths are read one by one, of one length as streams."""
    path = tmp_path / "t.parquet"
    start = 0
    schema = pa.schema([("id", pa.int64()), ("v", pa.list_(pa.float32()))])
    with pq.ParquetWriter(path, schema) as writer:
        for n in groups:
            ids = np.arange(start, start + n)
            values = [[float(i)] * int(i % 3) for i in ids]
            writer.write_table(pa.table({"id": ids, "v": values}, schema=schema))
            start += n
    assert [f.num_rows for f in ParquetSource(path).fragments] == list(groups)
    for batch_size in (3, 4, 16):
        source = ParquetSource(path, batch_size=batch_size)
        assert source._reads_ahead(source.fragments)
        assert_same_batches(list(source), pyarrow_batches([path], batch_size, None))


def test_read_ahead_shards_and_resume_as_the_one_thread_pass(
    threads: None, lists: pathlib.Path
) -> None:
    files = sorted(lists.glob("*.parquet"))
    for index in range(3):
        shard = ParquetSource(lists, batch_size=4).shard(3, index)
        groups = {path: [] for path in files}
        for fragment in shard._my_fragments():
            groups[pathlib.Path(fragment.path)].append(fragment.index)
        assert_same_batches(list(shard), pyarrow_batches(files, 4, None, groups))
    # resume: the batches after the first five, as a fresh pass restored from a state
    pipe = ParquetSource(lists, batch_size=6).to_tensors(["label"])
    pipe.reset()
    head = [pipe.next()["label"].tolist() for _ in range(5)]
    resumed = ParquetSource(lists, batch_size=6).to_tensors(["label"])
    resumed.reset(pipe.state_dict())
    rest = []
    while (batch := next(resumed, None)) is not None:
        rest.append(batch["label"].tolist())
    ref = [b["label"].to_pylist() for b in pyarrow_batches(files, 6, ["label"])]
    assert head + rest == ref


def test_one_thread_and_huge_row_groups_stream_as_before(
    lists: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = get_num_threads()
    set_num_threads(1)
    try:
        assert not ParquetSource(lists, batch_size=5)._reads_ahead(ParquetSource(lists).fragments)
    finally:
        set_num_threads(before)
    files = sorted(lists.glob("*.parquet"))
    monkeypatch.setattr("trivium.data.arrow_sources.READ_AHEAD_BYTES", 100)  # under 2 groups
    source = ParquetSource(lists, batch_size=5)
    assert not source._reads_ahead(source.fragments)
    assert_same_batches(list(source), pyarrow_batches(files, 5, None))


def test_read_ahead_with_a_filter_or_whole_row_groups(threads: None, lists: pathlib.Path) -> None:
    expr = pc.field("label") >= 40
    source = ParquetSource(lists, columns=["label", "name"], filter=expr, batch_size=4)
    assert source._reads_ahead(source.fragments)
    got = pa.Table.from_batches(list(source))
    ref = pq.read_table(lists, filters=expr, columns=["label", "name"])
    assert got.to_pylist() == ref.to_pylist()
    whole = list(ParquetSource(lists))  # no batch_size: a batch per row group
    groups = [
        pq.ParquetFile(path).read_row_group(i)
        for path in sorted(lists.glob("*.parquet"))
        for i in range(pq.ParquetFile(path).num_row_groups)
    ]
    assert [b.num_rows for b in whole] == [g.num_rows for g in groups]
    assert all(b.equals(g.to_batches()[0]) for b, g in zip(whole, groups, strict=True))


def test_an_error_comes_after_the_batches_before_it(threads: None, tmp_path: pathlib.Path) -> None:
    corrupt = BAD / "pq-datapage_v1-corrupt-checksum.parquet"
    readable = pq.read_table(corrupt, page_checksum_verification=False)
    pq.write_table(readable, tmp_path / "a.parquet", row_group_size=max(1, len(readable) // 4))
    shutil.copy(corrupt, tmp_path / "b.parquet")
    source = ParquetSource(tmp_path, batch_size=3)
    assert source._reads_ahead(source.fragments)
    got: list[pa.RecordBatch] = []
    with pytest.raises(DecodeError, match="CRC") as info:
        for batch in source:
            got.append(batch)
    assert info.value.path == str(tmp_path / "b.parquet")
    assert pa.Table.from_batches(got).equals(pq.read_table(tmp_path / "a.parquet"))


def test_read_ahead_keeps_order_and_budget(threads: None) -> None:
    lock = threading.Lock()
    started: list[int] = []

    def read(x: int) -> int:
        with lock:
            started.append(x)
        time.sleep(0.002 * (x % 3))  # later items may finish first
        return x * 10

    for budget, depth, ahead in ((9, 5, 1), (100, 3, 2)):  # at most 2 (budget), 3 (depth)
        started.clear()
        got = []
        for value in read_ahead(read, range(12), lambda x: 4, budget=budget, depth=depth):
            with lock:
                assert max(started) <= value // 10 + ahead  # what was begun ahead of the caller
            got.append(value)
        assert got == [x * 10 for x in range(12)]
        assert sorted(started) == list(range(12))


def test_read_ahead_raises_in_place_and_never_waits_on_a_busy_pool(threads: None) -> None:
    def read(x: int) -> int:
        if x == 3:
            raise ValueError("three")
        return x

    got = []
    with pytest.raises(ValueError, match="three"):
        for value in read_ahead(read, range(6), lambda x: 1, budget=10, depth=4):
            got.append(value)
    assert got == [0, 1, 2]

    # every pool thread runs a pass that reads ahead on the same pool: no deadlock
    def nested(n: int) -> list[int]:
        return list(read_ahead(lambda x: x + n, range(8), lambda x: 1, budget=10, depth=3))

    assert parallel_map(nested, [0, 100, 200]) == [[x + n for x in range(8)] for n in (0, 100, 200)]
    assert list(itertools.islice(read_ahead(str, range(100), lambda x: 1, 5, 3), 2)) == ["0", "1"]


def test_page_check_is_done_again_for_a_rewritten_file(tmp_path: pathlib.Path) -> None:
    from trivium.data import arrow_sources

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": list(range(10))}), path)
    limit = ParquetSource(path)._limit()
    assert len(list(ParquetSource(path))) == 1
    # passed: a second source of this file in this process does not check it again
    assert arrow_sources._file_key(str(path), limit) in arrow_sources._PAGES_PASSED
    pq.write_table(pa.table({"x": list(range(20))}), path)  # new size, time and contents
    assert arrow_sources._file_key(str(path), limit) not in arrow_sources._PAGES_PASSED
    assert len(list(ParquetSource(path))) == 1
    assert arrow_sources._file_key(str(path), limit) in arrow_sources._PAGES_PASSED
