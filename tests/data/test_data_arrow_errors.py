"""Every Arrow reader on every real file: what pyarrow reads is read, the rest refused by name.

The good files of ``tests/assets/parquet`` read through ``ArrowDataset`` equal pyarrow's
rows one for one (where pyarrow's own ``as_py`` cannot give a row a Python value, the
dataset raises a ``DecodeError`` naming the file, row and column); the bad ones raise a
``trivium.core`` error naming the file from ``ArrowDataset``, the sources and the
``DataLoader``. Decompression bombs made here with pyarrow are refused before they
expand, measured by the peak memory of a subprocess that reads them.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from trivium.core import DatasetError, DecodeError, TriviumError
from trivium.data import (
    ArrowDataset,
    ArrowIPCSource,
    DataLoader,
    ParquetSource,
    get_max_uncompressed_bytes,
)

ASSETS = pathlib.Path(__file__).resolve().parents[1] / "assets" / "parquet"
GOOD = sorted(p for p in ASSETS.iterdir() if p.is_file())
BAD = sorted((ASSETS / "bad").iterdir())


def reference_table(path: pathlib.Path) -> pa.Table:
    if path.suffix == ".parquet":
        return pq.ParquetFile(path).read()
    try:
        return pa.ipc.open_file(path).read_all()
    except pa.ArrowInvalid:
        return pa.ipc.open_stream(path).read_all()


def plain(value: object) -> object:
    if isinstance(value, torch.Tensor | np.ndarray):
        return value.tolist()
    return value


def reference_row(table: pa.Table, i: int) -> dict | Exception:
    try:
        return table.slice(i, 1).to_pylist()[0]
    except Exception as e:  # pyarrow has no Python value for this row
        return e


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_every_good_file_reads_as_pyarrow_reads_it_row_for_row(
    path: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    ref = reference_table(path)
    ds = ArrowDataset(path, cache_dir=tmp_path)
    assert len(ds) == ref.num_rows and ds.column_names == ref.schema.names
    for i in range(len(ds)):
        expected = reference_row(ref, i)
        if isinstance(expected, Exception):  # e.g. a date beyond year 9999
            with pytest.raises(DecodeError, match=rf"row {i}, column '\w+': ") as caught:
                ds[i]
            assert caught.value.path == str(path)
            assert type(caught.value.__cause__) is type(expected)
            continue
        got = {k: plain(v) for k, v in ds[i].items()}
        assert repr(got) == repr(expected), f"row {i}"  # repr: NaN equals NaN
        origin = ds.item_origin(i)
        assert (origin.path, origin.detail) == (str(path), f"row {i}")
    if len(ds) > 1:
        picked = ds[[len(ds) - 1, 0]]  # a take: gathered for every column type
        assert picked.num_rows == 2


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_every_bad_file_raises_a_trivium_error_naming_it(
    path: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    source = ParquetSource if path.suffix == ".parquet" else ArrowIPCSource
    attempts = {
        "ArrowDataset": lambda: [ArrowDataset(path, cache_dir=tmp_path)[0]],
        "source": lambda: list(source(path)),
        "source batches": lambda: list(source(path, batch_size=3)),
        "DataLoader": lambda: list(DataLoader(source(path), batch_size=4, shuffle=True)),
    }
    for name, attempt in attempts.items():
        with pytest.raises(TriviumError) as caught:
            attempt()
        assert caught.value.path == str(path), name
        assert str(caught.value).startswith(f"{path}: "), name


def test_an_ipc_file_with_a_schema_and_no_record_batch(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "empty.arrow"
    schema = pa.schema([("x", pa.int64()), ("s", pa.string())])
    with pa.ipc.new_file(path, schema):
        pass
    assert pa.ipc.open_file(path).read_all().num_rows == 0  # pyarrow reads it: no rows
    ds = ArrowDataset(path, cache_dir=tmp_path)
    assert len(ds) == 0 and ds.column_names == ["x", "s"] and ds[0:0].num_rows == 0
    assert list(ds) == [] and ds.__getitems__([]) == []
    with pytest.raises(IndexError, match="out of range for 0 rows"):
        ds[0]
    assert list(ArrowIPCSource(path)) == []
    assert list(DataLoader(ArrowIPCSource(path), batch_size=2)) == []
    both = ArrowDataset([path, _ipc(tmp_path / "one.arrow", pa.table({"x": [7], "s": ["a"]}))])
    assert [both[0]] == [{"x": 7, "s": "a"}]


def _ipc(path: pathlib.Path, table: pa.Table) -> pathlib.Path:
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table)
    return path


def test_duplicate_column_names_are_refused_by_name_where_rows_are_dicts(
    tmp_path: pathlib.Path,
) -> None:
    table = pa.table([pa.array([1, 2]), pa.array([3, 4]), pa.array([5, 6])], names=["a", "a", "b"])
    arrow = _ipc(tmp_path / "dup.arrow", table)
    parquet = tmp_path / "dup.parquet"
    pq.write_table(table, parquet)
    for path in (arrow, parquet):
        with pytest.raises(DatasetError, match=r"columns \['a'\] appear more than once") as caught:
            ArrowDataset(path, cache_dir=tmp_path)
        assert caught.value.path == str(path)
        assert [r["b"] for r in ArrowDataset(path, columns=["b"], cache_dir=tmp_path)] == [5, 6]
        source = ParquetSource if path.suffix == ".parquet" else ArrowIPCSource
        assert pa.Table.from_batches(list(source(path))).equals(reference_table(path))
        with pytest.raises(DatasetError, match="column 'a' appears 2 times") as caught:
            list(source(path, columns=["a"]))
        assert caught.value.path == str(path)


def test_values_without_a_python_form_name_file_row_and_column(tmp_path: pathlib.Path) -> None:
    days = pa.array([0, 4_000_000], pa.date32())  # the second: year 12921
    table = pa.table({"id": [0, 1], "day": days})
    with pytest.raises(OverflowError):
        table.to_pylist()  # pyarrow itself has no Python value for it
    path = _ipc(tmp_path / "dates.arrow", table)
    ds = ArrowDataset([_ipc(tmp_path / "first.arrow", table.slice(0, 1)), path])
    assert ds[0]["day"] == datetime.date(1970, 1, 1)
    for read in (lambda: ds[2], lambda: ds[-1], lambda: ds.__getitems__([2]), lambda: list(ds)):
        with pytest.raises(DecodeError) as caught:
            read()
        assert caught.value.path == str(path)
        assert str(caught.value).startswith(f"{path}: row 1, column 'day': OverflowError")
    loader = DataLoader(ds, batch_size=2, num_workers=1, collate_fn=list)
    with pytest.raises(DecodeError) as caught:
        list(loader)
    assert caught.value.path == str(path)  # from the worker, with its path


def _negative_row_group(tmp_path: pathlib.Path) -> pathlib.Path:
    """Four row groups of 25 rows; the third's footer row count flipped to -25."""
    path = tmp_path / "fuzzed.parquet"
    pq.write_table(pa.table({"id": np.arange(100)}), path, row_group_size=25)
    data = bytearray(path.read_bytes())
    start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    # i64 fields one after the last, zigzag(25) = 0x32: a column chunk's num_values,
    # then its row group's num_rows (the row group's fields follow its columns)
    spots = [i for i in range(start, len(data) - 9) if data[i : i + 2] == b"\x16\x32"]
    assert len(spots) == 8
    data[spots[1::2][2] + 1] = 0x31  # zigzag -25
    path.write_bytes(data)
    assert pq.ParquetFile(path).metadata.row_group(2).num_rows == -25
    return path


def test_a_fuzzed_footer_is_refused_naming_the_file(tmp_path: pathlib.Path) -> None:
    path = _negative_row_group(tmp_path)
    for read in (
        lambda: list(DataLoader(ParquetSource(path), batch_size=10)),
        lambda: list(ParquetSource(path)),
        lambda: ArrowDataset(path, cache_dir=tmp_path),
    ):
        with pytest.raises(DecodeError, match="row group 2 declares -25 rows") as caught:
            read()
        assert caught.value.path == str(path)


# ---- decompression bombs


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _padded_varint(value: int, size: int) -> bytes:
    """``value`` as a varint of ``size`` bytes (Thrift readers accept the padding)."""
    raw = bytearray(_varint(value))
    while len(raw) < size:
        raw[-1] |= 0x80
        raw.append(0)
    return bytes(raw)


def _zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


PAGE = 16 << 20  # one binary value of 16 MiB of zeros per page
PAGE_BYTES = PAGE + 10  # PLAIN: a 4-byte length; v1 page: 6 bytes of definition levels
ROWS = 160  # 2.5 GiB declared, over the default 2 GiB limit


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """A Parquet bomb (91 KB declaring 2.5 GiB) and two that lie about their sizes.

    The test's own memory stays small: the table is 160 chunks viewing one 16 MiB value.
    """
    root = tmp_path_factory.mktemp("bombs")
    one = pa.record_batch({"x": pa.array([bytes(PAGE)], pa.binary())})
    table = pa.Table.from_batches([one] * ROWS)
    bomb = root / "bomb.parquet"
    pq.write_table(
        table, bomb, row_group_size=ROWS, compression="zstd", use_dictionary=False,
        write_statistics=False,
    )  # fmt: skip
    declared = pq.ParquetFile(bomb).metadata.row_group(0).total_byte_size
    assert bomb.stat().st_size < 200_000 and declared > get_max_uncompressed_bytes()
    data = bytearray(bomb.read_bytes())
    start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    # the footer lies: row group and column chunk declare 1000 bytes
    old = _varint(_zigzag(declared))
    footer = bytes(data[start:-8])
    assert footer.count(old) == 2
    data[start:-8] = footer.replace(old, _padded_varint(_zigzag(1000), len(old)))
    footer_lies = root / "footer_lies.parquet"
    footer_lies.write_bytes(data)
    # ... and so do the page headers: uncompressed_page_size (field 2, i32) 1000 each
    old_page = b"\x15" + _varint(_zigzag(PAGE_BYTES))
    body = bytes(data[:start])
    assert body.count(old_page) == ROWS
    data[:start] = body.replace(old_page, b"\x15" + _padded_varint(2000, len(old_page) - 1))
    all_lie = root / "all_lie.parquet"
    all_lie.write_bytes(data)
    return {"bomb": bomb, "footer_lies": footer_lies, "all_lie": all_lie}


_READ_IN_SUBPROCESS = """
import json, sys
from trivium.core import TriviumError
from trivium.data import ArrowDataset, DataLoader, ParquetSource
path, cache, limit = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
kwargs = {} if limit == "default" else {"max_uncompressed_bytes": limit}
reads = {
    "ParquetSource": lambda: list(ParquetSource(path, **kwargs)),
    "ParquetSource batches": lambda: list(ParquetSource(path, batch_size=4, **kwargs)),
    "DataLoader": lambda: list(DataLoader(ParquetSource(path, **kwargs), batch_size=4)),
    "ArrowDataset": lambda: ArrowDataset(path, cache_dir=cache, **kwargs),
}
out = {}
for name, read in reads.items():
    try:
        read()
        out[name] = None
    except TriviumError as e:
        out[name] = [type(e).__name__, e.path, str(e)]
# VmHWM, not ru_maxrss: the latter survives exec and so counts pytest's own peak
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
out["peak_rss"] = int(hwm[0].split()[1]) * 1024
print(json.dumps(out))
"""


def _read_in_subprocess(path: pathlib.Path, cache: pathlib.Path, limit: object) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _READ_IN_SUBPROCESS, str(path), str(cache), json.dumps(limit)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("which", ["bomb", "footer_lies"])
def test_a_parquet_bomb_is_refused_before_it_expands(
    bombs: dict[str, pathlib.Path], which: str, tmp_path: pathlib.Path
) -> None:
    path = bombs[which]
    out = _read_in_subprocess(path, tmp_path, "default")
    declared = "2,684,"  # 160 pages of 16 MiB and their headers: 2.5 GiB
    for name in ("ParquetSource", "ParquetSource batches", "DataLoader", "ArrowDataset"):
        kind, error_path, message = out[name]
        assert (kind, error_path) == ("DecodeError", str(path)), name
        assert "max_uncompressed_bytes=2,147,483,648" in message, name
        assert f"declares {declared}" in message, name
        if which == "footer_lies":
            assert "(its page headers)" in message, name
    # never allocated: 2.5 GiB expanded would be at least that much resident memory
    assert out["peak_rss"] < 1 << 30, out["peak_rss"]
    assert not list(tmp_path.glob("*.arrow"))  # nothing converted


def test_a_file_whose_page_headers_lie_too_is_bounded_by_what_they_declare(
    bombs: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    path = bombs["all_lie"]
    out = _read_in_subprocess(path, tmp_path, "default")
    for name in ("ParquetSource", "ParquetSource batches", "DataLoader", "ArrowDataset"):
        kind, error_path, message = out[name]
        assert (kind, error_path) == ("DecodeError", str(path)), name
        assert "decompress" in message.lower(), name  # a page larger than its header says
    assert out["peak_rss"] < 1 << 30, out["peak_rss"]


def test_the_limit_is_the_readers_argument_or_the_process_wide_one(
    bombs: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    import trivium.data as td

    small = tmp_path / "small.parquet"
    one = pa.record_batch({"x": pa.array([bytes(1 << 20)], pa.binary())})
    table = pa.Table.from_batches([one] * 8)  # 8 MiB declared
    pq.write_table(table, small, compression="zstd", use_dictionary=False)
    assert len(list(ParquetSource(small))) == 1
    with pytest.raises(DecodeError, match="max_uncompressed_bytes=4,000,000") as caught:
        list(ParquetSource(small, max_uncompressed_bytes=4_000_000))
    assert caught.value.path == str(small)
    td.set_max_uncompressed_bytes(4_000_000)
    try:
        with pytest.raises(DecodeError, match="max_uncompressed_bytes=4,000,000"):
            ArrowDataset(small, cache_dir=tmp_path)
        assert ArrowDataset(small, cache_dir=tmp_path, max_uncompressed_bytes=None)[7]["x"] == (
            bytes(1 << 20)
        )
    finally:
        td.set_max_uncompressed_bytes(td.DEFAULT_MAX_UNCOMPRESSED_BYTES)
    with pytest.raises(ValueError, match="max_uncompressed_bytes must be a positive int"):
        ParquetSource(small, max_uncompressed_bytes=0)


@pytest.mark.parametrize("form", ["file", "stream"])
def test_an_ipc_bomb_with_compressed_buffers_is_refused_before_it_expands(
    tmp_path: pathlib.Path, form: str
) -> None:
    path = tmp_path / ("bomb.arrow" if form == "file" else "bomb.arrows")
    zeros = pa.array(np.zeros(4 << 20, np.int64))  # 32 MiB a batch
    batch = pa.record_batch({"x": zeros})
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    new = pa.ipc.new_file if form == "file" else pa.ipc.new_stream
    with new(path, batch.schema, options=options) as writer:
        writer.write_batch(pa.record_batch({"x": pa.array([1, 2], pa.int64())}))
        writer.write_batch(batch)  # the second record batch: 33,554,432 bytes declared
    assert path.stat().st_size < 100_000
    limit = 16 << 20
    reads = {
        "ArrowIPCSource": lambda: list(ArrowIPCSource(path, max_uncompressed_bytes=limit)),
        "ArrowDataset": lambda: ArrowDataset(path, max_uncompressed_bytes=limit),
        "DataLoader": lambda: list(
            DataLoader(ArrowIPCSource(path, max_uncompressed_bytes=limit), batch_size=8)
        ),
    }
    for name, read in reads.items():
        with pytest.raises(DecodeError) as caught:
            read()
        assert caught.value.path == str(path), name
        assert "record batch 1 declares 33,554,432 bytes uncompressed" in str(caught.value)
        assert f"max_uncompressed_bytes={limit:,}" in str(caught.value), name
    assert len(ArrowDataset(path)) == (4 << 20) + 2  # under the default: read as pyarrow does
