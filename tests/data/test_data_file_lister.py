"""Tests for trivium.data.FileLister, against os.walk + fnmatch and hand-written listings."""

from __future__ import annotations

import fnmatch
import os
import pathlib

import pytest
import torch

from trivium.core import DatasetError
from trivium.data import FileLister

FILES = [
    "b.jpg",
    "a.jpg",
    "a.JPG",
    "c.txt",
    ".hidden.jpg",
    "sub1/x.jpg",
    "sub1/y.png",
    "sub1/deeper/z.jpg",
    "sub0/w.jpg",
    "sub0/w.txt",
]


@pytest.fixture
def tree(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "root"
    for rel in FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "empty_dir").mkdir()
    return root


def reference(root: str, masks: list[str], recursive: bool) -> list[str]:
    """Sorted per directory, directories visited in sorted order, top-down."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        names = sorted(
            f for f in filenames if not masks or any(fnmatch.fnmatch(f, m) for m in masks)
        )
        out += [os.path.join(dirpath, f) for f in names]
        if not recursive:
            break
    return out


def rel(paths: list[str], root: pathlib.Path) -> list[str]:
    return [os.path.relpath(p, root) for p in paths]


@pytest.mark.parametrize("masks", ["", "*.jpg", ["*.jpg", "*.png"], ["*.txt"], "nothing*"])
@pytest.mark.parametrize("recursive", [False, True])
def test_matches_os_walk_reference(tree: pathlib.Path, masks, recursive: bool) -> None:
    mask_list = [masks] if isinstance(masks, str) and masks else list(masks) if masks else []
    got = list(FileLister(str(tree), masks, recursive=recursive))
    assert got == reference(str(tree), mask_list, recursive)
    assert all(isinstance(p, str) and os.path.isfile(p) for p in got)


def test_hand_written_listings(tree: pathlib.Path) -> None:
    assert rel(list(FileLister(tree)), tree) == [".hidden.jpg", "a.JPG", "a.jpg", "b.jpg", "c.txt"]
    assert rel(list(FileLister(tree, "*.jpg", recursive=True)), tree) == [
        ".hidden.jpg",
        "a.jpg",
        "b.jpg",
        "sub0/w.jpg",
        "sub1/x.jpg",
        "sub1/deeper/z.jpg",
    ]
    assert rel(list(FileLister(tree, ["*.png", "w.*"], recursive=True)), tree) == [
        "sub0/w.jpg",
        "sub0/w.txt",
        "sub1/y.png",
    ]


def test_non_deterministic_lists_the_same_set(tree: pathlib.Path) -> None:
    got = list(FileLister(tree, recursive=True, non_deterministic=True))
    assert sorted(got) == sorted(reference(str(tree), [], True))
    assert len(got) == len(FILES)


def test_abspath_and_relative_root(tree: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent)
    relative = list(FileLister("root", "*.jpg", recursive=True))
    assert relative[0] == os.path.join("root", ".hidden.jpg")
    absolute = list(FileLister("root", "*.jpg", recursive=True, abspath=True))
    assert all(os.path.isabs(p) for p in absolute)
    assert absolute == [os.path.abspath(p) for p in relative]


def test_file_roots_and_several_roots(tree: pathlib.Path) -> None:
    jpg, txt = tree / "b.jpg", tree / "c.txt"
    assert list(FileLister(jpg, "*.jpg")) == [str(jpg)]
    assert list(FileLister(txt, "*.jpg")) == []
    assert list(FileLister(str(jpg), abspath=True)) == [os.path.abspath(jpg)]
    roots = [tree / "sub1", str(jpg), tree / "sub0"]
    assert rel(list(FileLister(roots, "*.jpg")), tree) == ["sub1/x.jpg", "b.jpg", "sub0/w.jpg"]
    assert list(FileLister(tree / "empty_dir", recursive=True)) == []


def test_missing_root_raises_dataset_error(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "nope"
    lister = FileLister(missing)  # lazy: the error comes when iterating
    with pytest.raises(DatasetError) as info:
        list(lister)
    assert info.value.path == str(missing) and str(missing) in str(info.value)
    assert isinstance(info.value, OSError)


def test_bad_masks() -> None:
    with pytest.raises(TypeError, match="FileLister: masks"):
        FileLister(".", ["*.jpg", 3])  # type: ignore[list-item]


def test_unreadable_subdirectory_raises_dataset_error(
    tree: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_scandir = os.scandir

    def scandir(path):  # chmod 0 would not stop root, so deny the read here
        if os.path.basename(path) == "sub1":
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(DatasetError, match="Permission denied") as info:
        list(FileLister(tree, recursive=True))
    assert info.value.path == str(tree / "sub1")
    assert len(list(FileLister(tree))) == 5  # not descending: sub1 is never read


def test_is_an_iterable_dataset(tree: pathlib.Path) -> None:
    lister = FileLister(tree, "*.jpg")
    assert isinstance(lister, torch.utils.data.IterableDataset)
    loader = torch.utils.data.DataLoader(lister, batch_size=None)
    assert list(loader) == list(lister) == list(lister)  # re-iterable, same order
    assert "masks=['*.jpg']" in repr(lister)
