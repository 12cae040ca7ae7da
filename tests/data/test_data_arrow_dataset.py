"""ArrowDataset against pyarrow tables: random access, views, conversion cache, workers."""

from __future__ import annotations

import pathlib
import pickle
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from trivium.core import DatasetError, DecodeError
from trivium.data import ArrowDataset

ASSETS = pathlib.Path(__file__).resolve().parents[1] / "assets" / "parquet"
ROWS = 300


def make_table(lo: int = 0, n: int = ROWS) -> pa.Table:
    ids = np.arange(lo, lo + n)
    return pa.table(
        {
            "id": ids,
            "x": ids.astype(np.float32) / 2,
            "vec": pa.FixedSizeListArray.from_arrays(
                pa.array(np.repeat(ids, 3).astype(np.int16)), 3
            ),
            "blob": [bytes([i % 256]) * (i % 7) for i in ids],
            "name": [f"n{i}" for i in ids],
            "tags": [[int(i)] * (i % 3) for i in ids],
        }
    )


def write_ipc(path: pathlib.Path, table: pa.Table, chunk: int = 64) -> pathlib.Path:
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table, max_chunksize=chunk)
    return path


def expected_row(table: pa.Table, i: int) -> dict:
    return table.slice(i, 1).to_pylist()[0]


def as_plain(row: dict) -> dict:
    return {
        k: v.tolist() if isinstance(v, torch.Tensor | np.ndarray) else v for k, v in row.items()
    }


def test_random_access_matches_pyarrow(tmp_path: pathlib.Path) -> None:
    table = make_table()
    ds = ArrowDataset(write_ipc(tmp_path / "t.arrow", table))
    assert len(ds) == ROWS and ds.column_names == table.schema.names
    for i in [*np.random.default_rng(0).integers(0, ROWS, 50).tolist(), 0, 63, 64, ROWS - 1]:
        assert as_plain(ds[i]) == expected_row(table, i)
    assert as_plain(ds[-1]) == expected_row(table, ROWS - 1)
    assert isinstance(ds[5]["vec"], np.ndarray) and ds[5]["vec"].dtype == np.int16
    as_torch = ArrowDataset(ds.paths, format="torch")
    assert isinstance(as_torch[5]["vec"], torch.Tensor) and as_torch[5]["vec"].dtype == torch.int16
    assert as_plain(as_torch[77]) == expected_row(table, 77)
    with pytest.raises(ValueError, match="format"):
        ArrowDataset(ds.paths, format="pandas")
    assert ds[10:20].equals(table.slice(10, 10))
    assert ds[5:50:7].to_pylist() == table.to_pylist()[5:50:7]
    with pytest.raises(IndexError):
        ds[ROWS]
    with pytest.raises(TypeError, match="int or slice"):
        ds["x"]  # type: ignore[index]


def test_memory_mapped_rows_are_views_of_the_file(tmp_path: pathlib.Path) -> None:
    path = write_ipc(tmp_path / "t.arrow", make_table())
    for ds in (ArrowDataset(path, format="torch"), ArrowDataset(path)):
        vec = ds[7]["vec"]
        start = vec.data_ptr() if isinstance(vec, torch.Tensor) else vec.ctypes.data
        values = [chunk.buffers()[-1] for chunk in ds.data["vec"].chunks]
        assert any(v.address <= start < v.address + v.size for v in values)  # no copy


def test_writing_into_a_row_copies_its_page_and_leaves_the_file(tmp_path: pathlib.Path) -> None:
    # the map is private copy-on-write: an in-place op on a row must not crash (a
    # read-only map would segfault) nor reach the file or another dataset
    table = make_table()
    path = write_ipc(tmp_path / "t.arrow", table)
    before = path.read_bytes()
    for ds in (ArrowDataset(path, format="torch"), ArrowDataset(path)):
        ds[7]["vec"][:] = 99
        assert (np.asarray(ds[7]["vec"]) == 99).all()
    assert path.read_bytes() == before
    fresh = ArrowDataset(path)
    assert as_plain(fresh[7]) == expected_row(table, 7)


def test_parquet_is_converted_once_to_a_cached_ipc(tmp_path: pathlib.Path) -> None:
    table = make_table()
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=50)
    cache = tmp_path / "cache"
    ds = ArrowDataset(path, columns=["name", "id"], cache_dir=cache)
    [cached] = list(cache.iterdir())
    assert cached.suffix == ".arrow"
    mtime = cached.stat().st_mtime_ns
    again = ArrowDataset(path, columns=["name", "id"], cache_dir=cache)
    assert list(cache.iterdir()) == [cached] and cached.stat().st_mtime_ns == mtime
    assert again[123] == {"name": "n123", "id": 123} == ds[123]
    ArrowDataset(path, cache_dir=cache)  # other columns: another cache entry
    assert len(list(cache.iterdir())) == 2


def test_several_files_and_schema_mismatch(tmp_path: pathlib.Path) -> None:
    a = write_ipc(tmp_path / "a.arrow", make_table(0, 100))
    b = write_ipc(tmp_path / "b.arrow", make_table(100, 50))
    ds = ArrowDataset([a, b])
    assert len(ds) == 150 and ds[120]["id"] == 120
    c = write_ipc(tmp_path / "c.arrow", pa.table({"id": ["s"]}))
    with pytest.raises(DatasetError, match="schema differs") as info:
        ArrowDataset([a, c])
    assert info.value.path == str(c)
    with pytest.raises(DatasetError, match="no column"):
        ArrowDataset(a, columns=["nope"])


def test_bad_inputs_name_the_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(DatasetError, match="no such file or directory"):
        ArrowDataset(tmp_path / "missing.arrow")
    for bad in sorted((ASSETS / "bad").glob("*")):
        with pytest.raises((DecodeError, DatasetError)) as info:
            ArrowDataset(bad, cache_dir=tmp_path)
        assert str(bad) in str(info.value)


def test_select_shuffle_split(tmp_path: pathlib.Path) -> None:
    ds = ArrowDataset(write_ipc(tmp_path / "t.arrow", make_table()))
    sub = ds.select([5, 1, 299])
    assert [r["id"] for r in sub] == [5, 1, 299] and len(sub) == 3
    assert sub.select([2, 0])[0]["id"] == 299  # views of views
    assert sub[0:2].to_pylist() == [expected_row(ds.data, 5), expected_row(ds.data, 1)]
    a = [r["id"] for r in ds.shuffle(seed=7)]
    assert sorted(a) == list(range(ROWS)) and a != list(range(ROWS))
    assert a == [r["id"] for r in ds.shuffle(seed=7)]
    split = ds.train_test_split(test_size=0.1, seed=3)
    train, test = ({r["id"] for r in split[k]} for k in ("train", "test"))
    assert len(test) == 30 and not train & test and len(train | test) == ROWS
    assert len(ds.train_test_split(test_size=10, shuffle=False)["test"]) == 10
    with pytest.raises(ValueError, match="empty split"):
        ds.train_test_split(test_size=0)
    with pytest.raises(IndexError):
        ds.select([ROWS])


def test_pickles_by_path_and_works_with_samplers(tmp_path: pathlib.Path) -> None:
    ds = ArrowDataset(write_ipc(tmp_path / "t.arrow", make_table())).select(range(0, ROWS, 2))
    blob = pickle.dumps(ds)
    assert len(blob) < 10_000  # the path and indices, not the data
    assert pickle.loads(blob)[3]["id"] == 6
    sampler = torch.utils.data.RandomSampler(ds, generator=torch.Generator().manual_seed(0))
    loader = torch.utils.data.DataLoader(
        ds.select(range(len(ds))),
        batch_size=16,
        sampler=sampler,
        num_workers=2,
        collate_fn=lambda rows: [r["id"] for r in rows],
    )
    ids = [i for batch in loader for i in batch]
    assert sorted(ids) == list(range(0, ROWS, 2))
    mem = ArrowDataset.from_table(make_table(0, 10))
    assert pickle.loads(pickle.dumps(mem))[4]["name"] == "n4"


def test_a_directory_reads_its_files_in_sorted_order_as_pyarrow(tmp_path: pathlib.Path) -> None:
    import pyarrow.dataset as pds

    root = tmp_path / "data"
    (root / "sub").mkdir(parents=True)
    pq.write_table(make_table(0, 40), root / "b.parquet", row_group_size=16)
    pq.write_table(make_table(40, 30), root / "sub" / "c.parquet")
    write_ipc(root / "a.arrow", make_table(70, 20))
    (root / "_SUCCESS").write_bytes(b"")  # marker files are skipped, as ParquetSource does
    (root / "notes.txt").write_text("not data")
    ds = ArrowDataset(root, cache_dir=tmp_path / "cache")
    files = sorted(str(p) for p in root.rglob("*") if p.suffix in (".arrow", ".parquet"))
    assert ds.paths == files
    reference = pa.concat_tables(
        [
            pds.dataset(f, format="ipc" if f.endswith(".arrow") else "parquet").to_table()
            for f in files
        ]
    )
    assert ds.data.equals(reference)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetError, match=r"no .* files in directory"):
        ArrowDataset(empty)


def test_rows_in_torch_format_are_tensors_as_to_tensors(tmp_path: pathlib.Path) -> None:
    from trivium.data import to_tensors

    table = make_table()
    ds = ArrowDataset(write_ipc(tmp_path / "t.arrow", table), format="torch")
    for index, rows in [
        (slice(10, 20), table.slice(10, 10)),
        ([3, 1, 299], table.take([3, 1, 299])),
    ]:
        got, want = ds[index], to_tensors(rows)
        assert isinstance(got, dict) and got.keys() == want.keys()
        assert torch.equal(got["id"], torch.arange(ROWS)[index])
        for key in ("x", "vec", "tags", "tags_lengths"):
            assert torch.equal(got[key], want[key]), key
        assert [bytes(b.numpy()) for b in got["blob"]] == rows["blob"].to_pylist()
    assert ds[5:8]["vec"].tolist() == ds.data["vec"].to_pylist()[5:8]
    shuffled = ds.shuffle(seed=1)
    order = [r["id"] for r in shuffled]
    assert shuffled[0:4]["id"].tolist() == order[:4]
    numpy_ds = ArrowDataset(ds.paths)
    assert numpy_ds[[3, 1]].equals(table.take([3, 1]))
    with pytest.raises(IndexError):
        ds[[ROWS]]
    with pytest.raises(TypeError, match="ints"):
        ds[[0.5]]


def test_train_test_split_unpacks_and_indexes_by_name(tmp_path: pathlib.Path) -> None:
    ds = ArrowDataset(write_ipc(tmp_path / "t.arrow", make_table()))
    split = ds.train_test_split(test_size=0.1, seed=3)
    train, test = split
    assert (len(train), len(test)) == (270, 30)
    assert split["train"] is train and split.test is test and split[1] is test
    assert split.keys() == ("train", "test") and dict(split.items()) == {
        "train": train,
        "test": test,
    }
    again = ds.train_test_split(test_size=0.1, seed=3)
    assert [r["id"] for r in again.test] == [r["id"] for r in test]
    with pytest.raises(KeyError, match="'validation'"):
        split["validation"]


def test_the_conversion_cache_moves_with_the_environment(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trivium.data.arrow_dataset import default_cache_dir

    path = tmp_path / "t.parquet"
    pq.write_table(make_table(0, 10), path)
    monkeypatch.delenv("TRIVIUM_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == str(tmp_path / "home" / ".cache" / "trivium" / "arrow")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    ArrowDataset(path)
    assert [p.suffix for p in (tmp_path / "xdg" / "trivium" / "arrow").iterdir()] == [".arrow"]
    monkeypatch.setenv("TRIVIUM_CACHE_DIR", str(tmp_path / "mine"))
    ds = ArrowDataset(path)
    assert ds.cache_dir == str(tmp_path / "mine" / "arrow")
    assert len(list((tmp_path / "mine" / "arrow").iterdir())) == 1
    assert not (tmp_path / "home").exists()


def every_type_table(n: int = 150) -> pa.Table:
    """One column per kind of Arrow column ArrowDataset reads, some with nulls."""
    ids = np.arange(n)
    floats = ids.astype(np.float64) / 3
    with_nulls = pa.array([None if i % 5 == 0 else int(i) for i in ids], pa.int32())
    return pa.table(
        {
            "i8": pa.array(ids % 100, pa.int8()),
            "u16": pa.array(ids, pa.uint16()),
            "i64": pa.array(ids * 10**12, pa.int64()),
            "f16": pa.array(floats.astype(np.float16), pa.float16()),
            "f32": pa.array(floats, pa.float32()),
            "f64": floats,
            "bool": ids % 3 == 0,
            "nullable": with_nulls,
            "str": [f"s{i}" * (i % 4) for i in ids],
            "large_str": pa.array([f"L{i}" for i in ids], pa.large_string()),
            "bin": [bytes([i % 256]) * (i % 5) for i in ids],
            "large_bin": pa.array([b"b" * (i % 3) for i in ids], pa.large_binary()),
            "fixed_f32": pa.FixedSizeListArray.from_arrays(
                pa.array(np.repeat(floats, 4), pa.float32()), 4
            ),
            "fixed_u8": pa.FixedSizeListArray.from_arrays(
                pa.array(np.repeat(ids % 256, 2), pa.uint8()), 2
            ),
            # null in the first record batch only: batches read this column differently
            "fixed_one_null": pa.array(
                [None if i == 3 else [float(i), 1.0] for i in ids], pa.list_(pa.float32(), 2)
            ),
            "list": [[int(i)] * (i % 3) for i in ids],
            "struct": [{"a": int(i), "b": f"t{i}"} for i in ids],
            "ts": pa.array(ids * 1_000_000, pa.timestamp("us")),
            "odd 'name\"": ids,  # a name that needs quoting
        }
    )


@pytest.mark.parametrize("format", ["numpy", "torch"])
def test_every_column_type_matches_pyarrow_rows(tmp_path: pathlib.Path, format: str) -> None:
    table = every_type_table()
    expected = table.to_pylist()
    for chunk in (64, 1000):  # several record batches, and one
        ds = ArrowDataset(write_ipc(tmp_path / f"t{chunk}.arrow", table, chunk), format=format)
        got = [as_plain(ds[i]) for i in range(len(ds))]
        assert got == expected
        assert [as_plain(ds[i]) for i in range(-len(ds), 0)] == expected
        assert [as_plain(r) for r in ds.__getitems__(list(range(len(ds))))] == expected
        picked = ds.select([7, 70, 140])
        assert [as_plain(picked[i]) for i in range(3)] == [expected[k] for k in (7, 70, 140)]
    row = ArrowDataset(tmp_path / "t64.arrow")[3]
    assert (
        type(row["i8"]) is int
        and type(row["f32"]) is float
        and type(row["fixed_f32"]) is np.ndarray
    )


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_rows_in_workers_match_pyarrow(tmp_path: pathlib.Path, context: str) -> None:
    table = every_type_table()
    ds = ArrowDataset(write_ipc(tmp_path / "t.arrow", table))
    loader = torch.utils.data.DataLoader(
        ds, batch_size=32, num_workers=2, collate_fn=list, multiprocessing_context=context
    )
    got = [as_plain(row) for batch in loader for row in batch]
    assert got == table.to_pylist()


# ---- ds[i] through the subclass made for each dataset (one Python call per row)


def write_batches(path: pathlib.Path, table: pa.Table, lengths: list[int]) -> pathlib.Path:
    """``table`` as an IPC file of record batches of these lengths (in order)."""
    assert sum(lengths) == table.num_rows
    with pa.ipc.new_file(path, table.schema) as writer:
        start = 0
        for n in lengths:
            rows = table.slice(start, n).to_pylist()
            writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=table.schema))
            start += n
    return path


@pytest.mark.parametrize(
    "lengths",
    [
        [300],
        [64] * 4 + [44],  # one length but the last: a division finds the batch
        [100, 100, 100],
        [2] * 150,
        [10, 10, 280],  # uneven: comparisons with the starts
        [0, 150, 0, 150],
        [100, 64, 136],
        [7] * 20 + [160],  # many uneven: a bisect
        [1] * 17 + [0, 283],
    ],
)
@pytest.mark.parametrize("format", ["numpy", "torch"])
def test_rows_of_every_batch_layout_match_pyarrow(
    tmp_path: pathlib.Path, lengths: list[int], format: str
) -> None:
    table = make_table()
    path = write_batches(tmp_path / "t.arrow", table, lengths)
    reader = pa.ipc.open_file(path)
    assert [reader.get_batch(k).num_rows for k in range(reader.num_record_batches)] == lengths
    ds = ArrowDataset(path, format=format)
    expected = table.to_pylist()
    assert [as_plain(ds[i]) for i in range(ROWS)] == expected
    assert [as_plain(ds[i]) for i in range(-ROWS, 0)] == expected


def test_the_dataset_class_is_a_subclass_that_pickles_as_the_public_class(
    tmp_path: pathlib.Path,
) -> None:
    import copy

    path = write_ipc(tmp_path / "t.arrow", make_table())
    ds = ArrowDataset(path)
    cls = type(ds)
    assert (
        isinstance(ds, ArrowDataset) and issubclass(cls, ArrowDataset) and cls is not ArrowDataset
    )
    assert (cls.__name__, cls.__qualname__) == ("ArrowDatasetRows", "ArrowDatasetRows")
    assert cls.__module__ == ArrowDataset.__module__
    assert type(ArrowDataset(path)) is not cls  # made per dataset: its columns are baked in
    blob = pickle.dumps(ds)
    assert len(blob) < 10_000 and b"ArrowDatasetRows" not in blob  # rebuilt by path
    for again in (pickle.loads(blob), copy.copy(ds), copy.deepcopy(ds)):
        assert type(again).__name__ == "ArrowDatasetRows" and isinstance(again, ArrowDataset)
        assert [as_plain(again[i]) for i in (0, 77, -1)] == [as_plain(ds[i]) for i in (0, 77, -1)]
    view = ds.select([4, 2])
    assert type(view) is ArrowDataset  # rows through the view's indices
    assert [r["id"] for r in pickle.loads(pickle.dumps(view))] == [4, 2]
    assert type(pickle.loads(pickle.dumps(view))) is ArrowDataset
    mem = ArrowDataset.from_table(make_table(0, 10))
    assert isinstance(mem, ArrowDataset) and type(mem).__name__ == "_InMemoryArrowDatasetRows"
    assert pickle.loads(pickle.dumps(mem))[-1]["name"] == "n9"


class Tagged(ArrowDataset):
    """A user's subclass overriding ``__getitem__``: its override runs."""

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        return ("tagged", super().__getitem__(index))


class Plain(ArrowDataset):
    """A user's subclass keeping ``__getitem__``: fast rows, pickled as ``Plain``."""


def test_user_subclasses_keep_their_getitem_and_class(tmp_path: pathlib.Path) -> None:
    table = make_table()
    path = write_ipc(tmp_path / "t.arrow", table)
    tagged = Tagged(path)
    assert type(tagged) is Tagged
    tag, row = tagged[3]
    assert tag == "tagged" and as_plain(row) == expected_row(table, 3)
    assert as_plain(tagged[-2][1]) == expected_row(table, ROWS - 2)
    plain = Plain(path)
    assert type(plain).__name__ == "PlainRows" and isinstance(plain, Plain)
    assert as_plain(plain[5]) == expected_row(table, 5)
    loaded = pickle.loads(pickle.dumps(plain))
    assert isinstance(loaded, Plain) and as_plain(loaded[6]) == expected_row(table, 6)
    assert type(plain.select([1])) is Plain


def test_index_errors_are_those_of_the_public_getitem(tmp_path: pathlib.Path) -> None:
    ds = ArrowDataset(write_ipc(tmp_path / "t.arrow", make_table()))
    assert type(ds) is not ArrowDataset
    kinds = "ArrowDataset indices must be int or slice (or a list of ints), got"
    for bad, error, message in [
        (ROWS, IndexError, f"index {ROWS} out of range for {ROWS} rows"),
        (-ROWS - 1, IndexError, f"index {-ROWS - 1} out of range for {ROWS} rows"),
        (10**30, IndexError, f"index {10**30} out of range for {ROWS} rows"),
        (True, TypeError, f"{kinds} bool"),
        (1.0, TypeError, f"{kinds} float"),
        ("x", TypeError, f"{kinds} str"),
        (None, TypeError, f"{kinds} NoneType"),
    ]:
        with pytest.raises(error) as fast:
            ds[bad]
        with pytest.raises(error) as public:
            ArrowDataset.__getitem__(ds, bad)
        assert str(fast.value) == str(public.value) == message
        with pytest.raises(error, match=re.escape(message)):
            ds.__getitems__([0, bad])  # torch's DataLoader fetches batches so
    empty = ArrowDataset.from_table(make_table(0, 0))
    with pytest.raises(IndexError, match="index 0 out of range for 0 rows"):
        empty[0]
    table = make_table()  # NumPy integers still read the row, as before
    for index in (np.int64(7), np.int32(-1), np.uint8(200)):
        assert as_plain(ds[index]) == expected_row(table, int(index) % ROWS)


def worker_class_and_row(row: dict) -> tuple[str, dict]:
    """The collate_fn of a loader without batches: the worker's dataset class and row."""
    info = torch.utils.data.get_worker_info()
    return type(info.dataset).__name__, as_plain(row)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_workers_read_rows_through_the_subclass(tmp_path: pathlib.Path, context: str) -> None:
    table = make_table(0, 40)
    ds = ArrowDataset(write_ipc(tmp_path / "t.arrow", table, chunk=16))
    loader = torch.utils.data.DataLoader(  # batch_size=None: the worker calls ds[i]
        ds,
        batch_size=None,
        num_workers=2,
        collate_fn=worker_class_and_row,
        multiprocessing_context=context,
    )
    got = list(loader)
    assert {name for name, _ in got} == {"ArrowDatasetRows"}
    assert [row for _, row in got] == table.to_pylist()
