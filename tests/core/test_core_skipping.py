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
