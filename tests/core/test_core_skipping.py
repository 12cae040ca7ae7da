"""Tests for trivium.core.skipping: on_error="skip" for map-style datasets, on real files."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from trivium.core.errors import (
    DatasetError,
    DecodeError,
    PathNotFoundError,
    SkippedSamplesWarning,
)
from trivium.core.skipping import SkipsUnreadable, check_on_error, with_path


class TextFiles(SkipsUnreadable, Dataset):
    """Items: the text of each file under ``root``; an empty file is damaged."""

    item_kind = "line"

    def __init__(self, root: Path, names: list[str], on_error: str = "raise") -> None:
        self.root = root
        self.paths = [str(root / name) for name in names]
        self.start_skipping(on_error, len(self.paths))

    def __len__(self) -> int:
        return len(self.paths)

    def load_item(self, index: int) -> str:
        path = self.paths[index]
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise with_path(e, path) from e
        if not data:
            raise with_path(DecodeError("empty file"), path)
        return data.decode()

    def item_path(self, index: int) -> str:
        return self.paths[index]

    def __getitem__(self, index: int) -> str:
        return self.get_item(index)


def _files(root: Path, texts: dict[str, str]) -> list[str]:
    for name, text in texts.items():
        (root / name).write_text(text)
    return sorted(texts)


def test_a_bad_item_is_replaced_by_the_next_readable_one(tmp_path: Path) -> None:
    names = _files(tmp_path, {"0.txt": "zero", "1.txt": "", "2.txt": "two", "3.txt": ""})
    ds = TextFiles(tmp_path, names, on_error="skip")
    with pytest.warns(SkippedSamplesWarning, match=r"1\.txt: empty file .*next readable line"):
        assert ds[1] == "two"
    with pytest.warns(SkippedSamplesWarning, match=r"3\.txt"):
        assert ds[3] == "zero"  # wraps around
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # each file reported once
        assert [ds[i] for i in range(4)] == ["zero", "two", "two", "zero"]
        assert ds[-1] == "zero"
    assert ds.skipped == 2 and ds.skipped_files == [
        str(tmp_path / "1.txt"),
        str(tmp_path / "3.txt"),
    ]
    with pytest.raises(IndexError, match="index 4 is out of range for 4 lines"):
        ds[4]


def test_flags_found_in_fork_workers_reach_the_parent(tmp_path: Path) -> None:
    texts = {f"{i}.txt": ("" if i in (2, 5) else str(i)) for i in range(8)}
    ds = TextFiles(tmp_path, _files(tmp_path, texts), on_error="skip")
    loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedSamplesWarning)  # raised inside the workers
        items = list(loader)
    assert items == ["0", "1", "3", "3", "4", "6", "6", "7"]
    assert ds.skipped == 2  # found by the workers only: the parent read no item
    assert ds.skipped_files == [str(tmp_path / "2.txt"), str(tmp_path / "5.txt")]
    assert torch.equal(ds._bad, torch.tensor([0, 0, 1, 0, 0, 1, 0, 0], dtype=torch.uint8))


def test_raise_names_the_file_and_nothing_is_skipped(tmp_path: Path) -> None:
    names = _files(tmp_path, {"a.txt": "", "b.txt": "b"})
    ds = TextFiles(tmp_path, [*names, "gone.txt"])
    with pytest.raises(DecodeError) as caught:
        ds[0]
    assert caught.value.path == str(tmp_path / "a.txt")
    with pytest.raises(PathNotFoundError) as missing:
        ds[2]
    assert missing.value.path == str(tmp_path / "gone.txt")
    assert ds.skipped == 0 and ds.skipped_files == []


def test_no_readable_item_raises_a_dataset_error_naming_the_root(tmp_path: Path) -> None:
    ds = TextFiles(tmp_path, _files(tmp_path, {"a.txt": "", "b.txt": ""}), on_error="skip")
    with pytest.warns(SkippedSamplesWarning), pytest.raises(DatasetError) as caught:
        ds[0]
    assert "none of the 2 lines could be read" in str(caught.value)
    assert caught.value.path == str(tmp_path)


def test_check_on_error_and_with_path(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="on_error must be 'raise' or 'skip', got 'ignore'"):
        check_on_error("ignore")
    with pytest.raises(ValueError, match="on_error"):
        TextFiles(tmp_path, [], on_error="ignore")
    try:
        tmp_path.read_bytes()  # a folder: the OS refuses to read it
    except OSError as e:
        error = with_path(e, tmp_path)
    assert isinstance(error, DatasetError) and error.path == str(tmp_path)
    assert str(error).startswith(f"{tmp_path}: cannot load the file:")
    named = DecodeError("bad", path="x.jpg")
    assert with_path(named, "y.jpg") is named  # a named error keeps its path


# ---- recovered files: DecodeWarnings counted per item, per thread, across workers

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TRUNCATED_JPEG = ASSETS / "images" / "corrupt" / "pil-truncated_jpeg.jpg"


def _decode_lenient(data: bytes) -> torch.Tensor:
    """What a decoder that recovers damaged images does: decode_jpeg(strict=False) warns."""
    io = pytest.importorskip("trivium.vision.io")
    return io.decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8), strict=False)


class JpegFiles(SkipsUnreadable, Dataset):
    """Items: decoded JPEGs, read leniently (a truncated one decodes with a DecodeWarning)."""

    item_kind = "image"

    def __init__(self, paths: list[Path], on_error: str = "raise") -> None:
        self.paths = [str(p) for p in paths]
        self.start_skipping(on_error, len(self.paths))

    def __len__(self) -> int:
        return len(self.paths)

    def load_item(self, index: int) -> torch.Tensor:
        data = Path(self.paths[index]).read_bytes()
        if not data:
            raise with_path(DecodeError("empty file"), self.paths[index])
        return _decode_lenient(data)

    def item_path(self, index: int) -> str:
        return self.paths[index]

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.get_item(index)


def _jpeg_corpus(root: Path) -> list[Path]:
    """Six JPEGs: 1 and 4 truncated (decodable with a warning), 3 empty (unreadable)."""
    io = pytest.importorskip("trivium.vision.io")
    good = io.encode_jpeg(torch.full((3, 16, 16), 90, dtype=torch.uint8)).numpy().tobytes()
    paths = []
    for i in range(6):
        data = TRUNCATED_JPEG.read_bytes() if i in (1, 4) else b"" if i == 3 else good
        paths.append(root / f"{i}.jpg")
        paths[-1].write_bytes(data)
    return paths


def test_a_decode_warning_reaches_the_open_watch_whatever_the_filters(tmp_path: Path) -> None:
    from trivium.core.errors import DecodeWarning, watch_decode_warnings

    seen: list[str] = []
    data = TRUNCATED_JPEG.read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # shown or not, each one is counted
        with watch_decode_warnings(seen.append):
            for _ in range(3):
                _decode_lenient(data)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with watch_decode_warnings(seen.append), watch_decode_warnings(seen.append):
            _decode_lenient(data)  # each open block is told
    assert len(seen) == 5 and all("Premature end of JPEG file" in m for m in seen)
    assert [w.category for w in shown] == [DecodeWarning]  # still issued as the filters say
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _decode_lenient(data)  # outside any block: nobody is told
    assert len(seen) == 5


def test_a_watch_sees_its_own_thread_and_the_work_it_hands_to_parallel_map() -> None:
    import threading

    from trivium.core.errors import watch_decode_warnings
    from trivium.core.threads import parallel_map

    damaged = TRUNCATED_JPEG.read_bytes()
    io = pytest.importorskip("trivium.vision.io")
    good = io.encode_jpeg(torch.zeros(3, 8, 8, dtype=torch.uint8)).numpy().tobytes()
    seen: dict[str, list[str]] = {"damaged": [], "good": []}
    start = threading.Barrier(2)

    def decode_many(name: str, data: bytes) -> None:
        with watch_decode_warnings(seen[name].append):
            start.wait()
            for _ in range(20):  # interleaved with the other thread's decodes
                _decode_lenient(data)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threads = [
            threading.Thread(target=decode_many, args=("damaged", damaged)),
            threading.Thread(target=decode_many, args=("good", good)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(seen["damaged"]) == 20 and seen["good"] == []
        fanned: list[str] = []
        with watch_decode_warnings(fanned.append):
            parallel_map(_decode_lenient, [damaged, good, damaged, good], num_threads=4)
    assert len(fanned) == 2


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_recovered_files_are_flagged_in_the_process_that_loads_them(
    tmp_path: Path, on_error: str
) -> None:
    paths = _jpeg_corpus(tmp_path)
    readable = [p for p in paths if p.stat().st_size]
    ds = JpegFiles(paths if on_error == "skip" else readable, on_error=on_error)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        items = [ds[i] for i in range(len(ds))]
        assert ds[1].shape == items[1].shape  # read again: still flagged once
    assert all(item.shape[0] == 3 for item in items)
    assert ds.recovered_files == [str(paths[1]), str(paths[4])]
    report = ds.skip_report
    assert report.recovered_files == [str(paths[1]), str(paths[4])]
    assert "Premature end of JPEG file" in report.recovered[str(paths[1])]
    assert report.skipped_files == ([str(paths[3])] if on_error == "skip" else [])


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_skipped_and_recovered_files_found_in_workers_reach_the_parent(
    tmp_path: Path, context: str
) -> None:
    paths = _jpeg_corpus(tmp_path)
    ds = JpegFiles(paths, on_error="skip")
    for _epoch in range(2):  # new workers each epoch: the flags stay
        loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context=context)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert len(list(loader)) == 6
        assert ds.skipped_files == [str(paths[3])]
        assert ds.recovered_files == [str(paths[1]), str(paths[4])]
    report = ds.skip_report
    assert (report.skipped_files, report.recovered_files) == (
        [str(paths[3])],
        [str(paths[1]), str(paths[4])],
    )
    assert "2 files recovered" in report.summary() and str(paths[4]) in report.summary()


def test_a_skip_report_merges_and_names_the_first_few() -> None:
    from trivium.core.skipping import SkipReport

    report = SkipReport()
    for i in range(46):
        report.skip(f"img/{i}.jpg", "corrupt image data")
    other = SkipReport()
    other.skip("img/0.jpg", "corrupt image data")
    other.recover("img/99.jpg", "img/99.jpg: returned a partial image: premature end")
    report.update(other)
    assert report.skipped_samples == 47 and len(report.skipped_files) == 46
    assert report.brief() == (
        "46 files skipped: img/0.jpg, img/1.jpg, img/2.jpg and 43 more; "
        "1 file recovered: img/99.jpg"
    )
    lines = report.summary().splitlines()
    assert lines[0] == "46 files skipped (on_error='skip'):" and len(lines) == 1 + 46 + 2
    assert lines[-1] == "  img/99.jpg: returned a partial image: premature end"
    assert report.as_dict()["recovered_files"] == {"img/99.jpg": other.recovered["img/99.jpg"]}
