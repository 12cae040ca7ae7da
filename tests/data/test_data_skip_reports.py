"""Skips and recoveries named, file by file, wherever they happen.

Pipes (``map``, ``parallel_map``, ``map_batches``) and the ``DataLoader`` (its own
``on_error``, in fork and spawn workers, over epochs) on real JPEG files: a truncated
JPEG that ``decode_jpeg(strict=False)`` recovers with a ``DecodeWarning`` and a
corrupt one that strict decoding refuses. Errors that stop a run name the file (and
the row of an Arrow file), and keep their type and path out of a worker process.
"""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from trivium.core import DecodeError, TriviumError
from trivium.core.skipping import Origin
from trivium.data import ArrowDataset, DataLoader, IterPipe, MapPipe, ParquetSource
from trivium.data.pipes import SkippedSamplesWarning

io = pytest.importorskip("trivium.vision.io")

ASSETS = pathlib.Path(__file__).resolve().parents[1] / "assets" / "images"
TRUNCATED = ASSETS / "corrupt" / "pil-truncated_jpeg.jpg"  # decodes partly, with a warning
CORRUPT = ASSETS / "corrupt" / "tv-corrupt.jpg"  # refused


def good_jpeg(value: int) -> bytes:
    return io.encode_jpeg(torch.full((3, 24, 32), value, dtype=torch.uint8)).numpy().tobytes()


@pytest.fixture
def files(tmp_path: pathlib.Path) -> list[pathlib.Path]:
    """Twelve JPEGs: 3 and 8 truncated (recoverable), 5 and 10 corrupt (refused)."""
    paths = []
    for i in range(12):
        path = tmp_path / f"{i:02d}.jpg"
        if i in (3, 8):
            path.write_bytes(TRUNCATED.read_bytes())
        elif i in (5, 10):
            path.write_bytes(CORRUPT.read_bytes())
        else:
            path.write_bytes(good_jpeg(10 * i))
        paths.append(path)
    return paths


def skip_messages(caught: pytest.WarningsRecorder) -> list[str]:
    return [str(w.message) for w in caught if w.category is SkippedSamplesWarning]


def decode_file(path: pathlib.Path) -> torch.Tensor:
    """Read a file and decode its bytes leniently: no path reaches the decoder."""
    data = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8)
    try:
        image = io.decode_jpeg(data, strict=False)
    except DecodeError as e:
        if e.path is None:
            raise DecodeError(e.reason) from e  # a data error naming no file
        raise
    return image[:, :8, :8]


@pytest.mark.parametrize("op", ["map", "parallel_map"])
def test_a_pipe_names_what_it_skipped_and_what_it_recovered(
    files: list[pathlib.Path], op: str
) -> None:
    pipe = IterPipe.from_iterable(files)
    mapped = (
        pipe.map(decode_file, on_error="skip")
        if op == "map"
        else pipe.parallel_map(decode_file, 4, on_error="skip")
    )
    with pytest.warns(SkippedSamplesWarning) as caught:
        out = list(mapped)
    assert len(out) == 10
    (message,) = skip_messages(caught)
    assert message.startswith(f"2 samples skipped: {mapped!r} raised on them")
    assert f"{files[5]}, {files[10]}" in message
    report = mapped.skip_report
    assert report.skipped_files == [str(files[5]), str(files[10])]
    assert "marker" in report.skipped[str(files[5])]  # the decoder's reason
    assert sorted(report.recovered_files) == [str(files[3]), str(files[8])]  # each thread its own
    assert "Premature end of JPEG file" in report.recovered[str(files[3])]


def test_a_pipe_that_raises_names_the_sample_it_was_on(files: list[pathlib.Path]) -> None:
    rows = [{"label": 1, "path": str(p)} for p in files]
    with pytest.raises(KeyError) as caught:
        list(IterPipe.from_iterable(rows).map(lambda row: row["image"]))
    assert caught.value.args == ("image",)  # the user's error, as it was
    skipped = IterPipe.from_iterable(rows).map(lambda row: row["image"], on_error="skip")
    with pytest.warns(SkippedSamplesWarning, match=r"item 1, item 2, item 3 and 9 more"):
        assert list(skipped) == []
    assert skipped.skip_report.skipped["item 1"] == "KeyError: 'image'"


def test_map_batches_skips_or_raises_naming_the_files_of_its_rows(
    tmp_path: pathlib.Path,
) -> None:
    for i in range(3):
        table = pa.table({"id": np.arange(10 * i, 10 * i + 10)})
        pq.write_table(table, tmp_path / f"part-{i}.parquet", row_group_size=5)

    def fragile(batch: pa.RecordBatch) -> pa.RecordBatch:
        if 17 in batch["id"].to_pylist():
            raise DecodeError("id 17 is damaged")
        return batch

    source = ParquetSource(tmp_path)
    loader = DataLoader(source.map_batches(fragile, on_error="skip"), batch_size=5)
    with pytest.warns(SkippedSamplesWarning, match="epoch 0: 1 samples skipped"):
        ids = [i for b in loader for i in b["id"].to_pylist()]
    assert ids == [i for i in range(30) if not 15 <= i < 20]
    report = loader.skip_report
    assert report.skipped_files == [str(tmp_path / "part-1.parquet")]
    assert "id 17 is damaged" in report.skipped[str(tmp_path / "part-1.parquet")]
    with pytest.raises(DecodeError) as caught:
        list(DataLoader(source.map_batches(fragile), batch_size=5, num_workers=1))
    assert caught.value.path == str(tmp_path / "part-1.parquet")
    with pytest.raises(ValueError, match="on_error"):
        source.map_batches(fragile, on_error="ignore")


class JpegFiles(torch.utils.data.Dataset):
    """Items ``(encoded bytes, label)``, as the classification pipeline's; decoded in collate."""

    def __init__(self, paths: list[pathlib.Path]) -> None:
        self.paths = [str(p) for p in paths]

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        data = pathlib.Path(self.paths[index]).read_bytes()
        return torch.frombuffer(bytearray(data), dtype=torch.uint8), index

    def item_path(self, index: int) -> str:
        return self.paths[index]


def decode_batch(samples: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """A collate_fn decoding the whole batch (as a fused decode does): no file names."""
    images = [io.decode_jpeg(data, strict=False)[:, :8, :8] for data, _ in samples]
    return torch.stack(images), torch.tensor([label for _, label in samples])


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_the_loader_skips_and_recovers_by_name_across_workers_and_epochs(
    files: list[pathlib.Path], context: str
) -> None:
    loader = DataLoader(
        JpegFiles(files), batch_size=4, num_workers=2, collate_fn=decode_batch,
        multiprocessing_context=context, on_error="skip", shuffle=True,
        persistent_workers=context == "spawn",
    )  # fmt: skip
    for epoch in range(2):
        loader.set_epoch(epoch)
        with pytest.warns(SkippedSamplesWarning) as caught:
            labels = sorted(i for _, batch in loader for i in batch.tolist())
        assert labels == [i for i in range(12) if i not in (5, 10)]
        (message,) = skip_messages(caught)
        assert message.startswith(f"epoch {epoch}: 2 samples skipped (on_error='skip'): ")
        assert str(files[5]) in message and str(files[10]) in message
    report = loader.skip_report
    assert sorted(report.skipped_files) == [str(files[5]), str(files[10])]
    assert sorted(report.recovered_files) == [str(files[3]), str(files[8])]
    assert report.skipped_samples == loader.skipped == 4  # two epochs
    assert loader.state_dict()["skipped"] == 4


@pytest.mark.parametrize("workers", [0, 2])
def test_the_loader_stops_naming_the_file_with_the_error_s_type_and_path(
    files: list[pathlib.Path], workers: int
) -> None:
    loader = DataLoader(
        JpegFiles(files[4:8]), batch_size=4, num_workers=workers, collate_fn=decode_batch
    )
    with pytest.raises(DecodeError) as caught:
        list(loader)
    assert type(caught.value) is DecodeError and caught.value.path == str(files[5])
    assert str(caught.value).startswith(f"{files[5]}: ")
    if workers:
        assert any("in DataLoader worker process" in n for n in caught.value.__notes__)


def test_rows_of_arrow_files_are_named_by_file_and_row(tmp_path: pathlib.Path) -> None:
    for i in range(2):
        ids = np.arange(50 * i, 50 * i + 50)
        pq.write_table(pa.table({"id": ids}), tmp_path / f"p{i}.parquet", row_group_size=20)

    def fragile(row: dict) -> dict:
        if row["id"] in (7, 63):
            raise DecodeError(f"bad sample {row['id']}")
        return row

    pipe = (
        ParquetSource(tmp_path)
        .to_rows()
        .filter(lambda r: r["id"] % 2)
        .map(fragile, on_error="skip")
    )
    loader = DataLoader(pipe, batch_size=8, collate_fn=list, num_workers=2, shuffle=True)
    with pytest.warns(SkippedSamplesWarning):
        got = sorted(r["id"] for b in loader for r in b)
    assert got == [i for i in range(100) if i % 2 and i not in (7, 63)]
    skipped = loader.skip_report.skipped
    # id 63 is row 13 of p1.parquet: row group 0 (rows 0-19), row 13
    assert skipped == {
        f"{tmp_path / 'p0.parquet'}, row group 0, row 7": "bad sample 7",
        f"{tmp_path / 'p1.parquet'}, row group 0, row 13": "bad sample 63",
    }
    table = pq.read_table(tmp_path / "p1.parquet")
    assert table["id"][13].as_py() == 63  # the row named is the row that failed
    ds = MapPipe(ArrowDataset(tmp_path, cache_dir=tmp_path / "cache")).map(lambda row: fragile(row))
    with pytest.raises(DecodeError) as caught:
        list(DataLoader(ds, batch_size=10, collate_fn=list, num_workers=1))
    assert caught.value.path == str(tmp_path / "p0.parquet")
    assert str(caught.value) == f"{tmp_path / 'p0.parquet'}: row 7: bad sample 7"


def test_a_bug_in_a_transform_is_raised_with_a_note_naming_the_sample(
    files: list[pathlib.Path],
) -> None:
    def buggy(sample: tuple) -> None:
        raise TypeError("unsupported operand")

    ds = MapPipe(JpegFiles(files)).map(buggy)
    loader = DataLoader(ds, batch_size=2, on_error="skip")  # skips data errors only
    with pytest.raises(TypeError, match="unsupported operand") as caught:
        list(loader)
    assert isinstance(caught.value, TypeError) and not isinstance(caught.value, TriviumError)


def test_origin_attach_keeps_a_named_error_and_names_an_unnamed_one() -> None:
    named = DecodeError("bad", path="a.jpg")
    assert Origin("b.jpg").attach(named) is named
    unnamed = Origin("s.parquet", "row 4").attach(DecodeError("bad"))
    assert (type(unnamed), unnamed.path, str(unnamed)) == (
        DecodeError,
        "s.parquet",
        "s.parquet: row 4: bad",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        oserror = Origin("c.jpg").attach(PermissionError(13, "Permission denied"))
    assert isinstance(oserror, TriviumError) and oserror.path == "c.jpg"


class DecodedFiles(torch.utils.data.Dataset):
    """Decodes each file's bytes leniently in ``__getitem__``: the decoder knows no file."""

    def __init__(self, paths: list[pathlib.Path]) -> None:
        self.paths = [str(p) for p in paths]

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> torch.Tensor:
        return decode_file(pathlib.Path(self.paths[index])).float().mean()

    def item_path(self, index: int) -> str:
        return self.paths[index]


@pytest.mark.parametrize(
    ("workers", "worker_type"), [(0, "process"), (2, "thread"), (2, "process")]
)
def test_the_loader_names_the_sample_a_decode_warning_was_issued_reading(
    files: list[pathlib.Path], workers: int, worker_type: str
) -> None:
    readable = [p for i, p in enumerate(files) if i not in (5, 10)]
    loader = DataLoader(
        DecodedFiles(readable), batch_size=3, shuffle=True, num_workers=workers,
        worker_type=worker_type,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert sum(len(batch) for batch in loader) == 10
    report = loader.skip_report
    assert sorted(report.recovered_files) == [str(files[3]), str(files[8])]
    assert not report.skipped_files
