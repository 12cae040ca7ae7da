"""Arrow sources against pyarrow's own readers, on tests/assets/parquet and written files."""

from __future__ import annotations

import itertools
import pathlib
import socket

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import torch

from trivium.core import DatasetError, DecodeError, TriviumError
from trivium.data import ArrowIPCSource, CSVSource, ParquetSource

ASSETS = pathlib.Path(__file__).resolve().parents[1] / "assets" / "parquet"
PARQUET = sorted(ASSETS.glob("*.parquet"))
IPC = sorted(p for p in ASSETS.glob("ipc-*") if "bigendian-generated_datetime" not in p.name)
BAD = sorted((ASSETS / "bad").iterdir())


def read_all(source) -> pa.Table:
    return pa.Table.from_batches(list(source), schema=source.schema)


def same(got: pa.Table, ref: pa.Table) -> bool:
    """Equal schemas and values (NaN equal to NaN, unlike Table.equals)."""
    if not got.schema.equals(ref.schema):
        return False
    return got.equals(ref) or repr(got.to_pylist()) == repr(ref.to_pylist())


def reference_ipc(path: pathlib.Path) -> pa.Table:
    try:
        return pa.ipc.open_file(path).read_all()
    except pa.ArrowInvalid:
        return pa.ipc.open_stream(path).read_all()


@pytest.mark.parametrize("path", PARQUET, ids=lambda p: p.name)
def test_parquet_assets_match_pyarrow(path: pathlib.Path) -> None:
    ref = pq.read_table(path)
    assert same(read_all(ParquetSource(path)), ref)


@pytest.mark.parametrize("path", IPC, ids=lambda p: p.name)
def test_ipc_assets_match_pyarrow(path: pathlib.Path) -> None:
    assert same(read_all(ArrowIPCSource(path)), reference_ipc(path))


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_files_raise_an_error_naming_the_file(path: pathlib.Path) -> None:
    cls = ParquetSource if path.suffix == ".parquet" else ArrowIPCSource
    with pytest.raises(DecodeError) as info:
        list(cls(path))
    assert str(path) in str(info.value) and info.value.path == str(path)


def test_bad_big_endian_datetime_is_refused_not_crashed() -> None:
    path = ASSETS / "ipc-bigendian-generated_datetime.arrow"
    with pytest.raises(DecodeError, match="bigendian"):
        list(ArrowIPCSource(path))


@pytest.fixture
def shards(tmp_path: pathlib.Path) -> pathlib.Path:
    """Three Parquet files of 25, 30, 35 rows in row groups of 10."""
    start = 0
    for i, n in enumerate((25, 30, 35)):
        ids = np.arange(start, start + n)
        table = pa.table({"id": ids, "x": ids * 0.5, "name": [f"r{j}" for j in ids]})
        pq.write_table(table, tmp_path / f"part-{i}.parquet", row_group_size=10)
        start += n
    (tmp_path / "_SUCCESS").write_text("")  # ignored, as Spark/pyarrow do
    return tmp_path


def test_fragments_are_row_groups(shards: pathlib.Path) -> None:
    src = ParquetSource(shards, batch_size=4)
    assert [f.num_rows for f in src.fragments] == [10, 10, 5, 10, 10, 10, 10, 10, 10, 5]
    batches = list(src)
    assert max(b.num_rows for b in batches) == 4
    assert pa.Table.from_batches(batches)["id"].to_pylist() == list(range(90))


def test_columns_and_filter_pushdown(shards: pathlib.Path) -> None:
    expr = (pc.field("id") >= 23) & (pc.field("x") < 30.0) & (pc.field("name") != "r40")
    src = ParquetSource(str(shards), columns=["name", "id"], filter=expr)
    got = read_all(src)
    ref = pq.read_table(shards, filters=expr, columns=["name", "id"])
    assert got.schema.names == ["name", "id"]
    assert got.to_pylist() == ref.to_pylist()
    assert sum(src.fragment_rows()) == ref.num_rows
    assert src.take(np.arange(ref.num_rows)[::-1]).to_pylist() == ref.to_pylist()[::-1]


def test_shards_partition_the_fragments(shards: pathlib.Path) -> None:
    src = ParquetSource(shards)
    parts = [read_all(src.shard(3, i))["id"].to_pylist() for i in range(3)]
    assert sorted(itertools.chain.from_iterable(parts)) == list(range(90))
    assert parts[1][:10] == list(range(10, 20))  # whole row groups: fragment 1 is rows 10..19


def test_plain_torch_dataloader_workers_split_fragments(shards: pathlib.Path) -> None:
    loader = torch.utils.data.DataLoader(ParquetSource(shards), batch_size=None, num_workers=2)
    ids = sorted(i for b in loader for i in b["id"].to_pylist())
    assert ids == list(range(90))


def test_take_matches_pyarrow_take(shards: pathlib.Path) -> None:
    src = ParquetSource(shards)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 90, 40)
    ref = pq.read_table(shards).take(pa.array(ids))
    assert src.take(ids).to_pylist() == ref.to_pylist()
    assert src.take(np.arange(12, 18)).to_pylist() == pq.read_table(shards).slice(12, 6).to_pylist()
    # a row or a run from each of many fragments (copied as slices), in any order
    scattered = np.array([85, 3, 4, 5, 47, 19, 20, 62, 31, 9, 10, 74, 0])
    assert src.take(scattered).to_pylist() == pq.read_table(shards).take(scattered).to_pylist()
    with pytest.raises(IndexError):
        src.take(np.array([90]))


def test_missing_column_names_the_file(shards: pathlib.Path) -> None:
    with pytest.raises(DatasetError, match="no column \\['nope'\\]") as info:
        list(ParquetSource(shards, columns=["id", "nope"]))
    assert info.value.path.endswith("part-0.parquet")


def test_schemas_disagreeing_across_files(shards: pathlib.Path) -> None:
    pq.write_table(pa.table({"id": ["a"], "x": [1.0], "name": ["q"]}), shards / "part-3.parquet")
    with pytest.raises(DatasetError, match="column 'id' is string, not int64") as info:
        _ = ParquetSource(shards).fragments
    assert info.value.path.endswith("part-3.parquet")
    # only the selected columns have to agree
    assert len(read_all(ParquetSource(shards, columns=["x"]))) == 91


def test_missing_path_and_empty_directory(tmp_path: pathlib.Path) -> None:
    with pytest.raises(DatasetError, match="no such file or directory") as info:
        list(ParquetSource(tmp_path / "nope.parquet"))
    assert info.value.path == str(tmp_path / "nope.parquet")
    with pytest.raises(DatasetError, match=r"no \.parquet"):
        list(ParquetSource(tmp_path))
    with pytest.raises(TypeError, match="filter"):
        ParquetSource(tmp_path, filter="id > 3")  # type: ignore[arg-type]


def test_ipc_file_fragments_are_record_batches(tmp_path: pathlib.Path) -> None:
    table = pa.table({"a": np.arange(50, dtype=np.int32), "b": np.arange(50) * 2.0})
    path = tmp_path / "t.arrow"
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table, max_chunksize=16)
    src = ArrowIPCSource(path, columns=["b"], filter=pc.field("a") >= 10)
    assert [f.num_rows for f in src.fragments] == [16, 16, 16, 2]
    assert read_all(src)["b"].to_pylist() == (np.arange(10, 50) * 2.0).tolist()
    assert src.fragment_rows() == [6, 16, 16, 2]


def test_csv_source_matches_pyarrow_csv(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,word,score\n" + "".join(f"{i},w{i},{i / 4}\n" for i in range(30)))
    src = CSVSource(path, columns=["score", "id"], filter=pc.field("id") > 20, batch_size=4)
    ref = pacsv.read_csv(path).filter(pc.field("id") > 20).select(["score", "id"])
    assert read_all(src).equals(ref)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3\n")
    with pytest.raises(DecodeError) as info:
        list(CSVSource(bad))
    assert info.value.path == str(bad)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_s3_through_a_loopback_moto_server(tmp_path: pathlib.Path) -> None:
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    from pyarrow import fs as pafs

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port())
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        creds = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **creds)
        s3.create_bucket(Bucket="bucket")
        local = tmp_path / "x.parquet"
        table = pa.table({"id": np.arange(40), "v": np.arange(40) * 1.5})
        pq.write_table(table, local, row_group_size=16)
        for key in ("data/a.parquet", "data/b.parquet"):
            s3.upload_file(str(local), "bucket", key)
        filesystem = pafs.S3FileSystem(
            access_key="test",
            secret_key="test",
            endpoint_override=f"{host}:{port}",
            scheme="http",
            region="us-east-1",
        )
        src = ParquetSource("s3://bucket/data", columns=["v"], filesystem=filesystem)
        assert [f.num_rows for f in src.fragments] == [16, 16, 8, 16, 16, 8]
        got = read_all(src)["v"].to_pylist()
        assert got == table["v"].to_pylist() * 2
        with pytest.raises(TriviumError) as info:
            list(ParquetSource("s3://bucket/missing.parquet", filesystem=filesystem))
        assert "bucket/missing.parquet" in str(info.value)
    finally:
        server.stop()


def test_batch_size_streams_and_bad_files_still_name_the_file(shards: pathlib.Path) -> None:
    got = list(ParquetSource(shards, columns=["id"], batch_size=7))
    assert all(b.num_rows <= 7 for b in got)
    assert pa.Table.from_batches(got)["id"].to_pylist() == list(range(90))
    assert [b.num_rows for b in ParquetSource(shards, batch_size=7).shard(10, 2)] == [5]
    bad = ASSETS / "bad" / "pq-datapage_v1-corrupt-checksum.parquet"
    with pytest.raises(DecodeError, match="CRC") as info:
        list(ParquetSource(bad, batch_size=100))
    assert info.value.path == str(bad)
