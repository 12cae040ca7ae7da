"""class_folders: the classes of a ROOT/<class>/<file> tree, against os.walk's listing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trivium.core.errors import DatasetError, PathNotFoundError
from trivium.core.folders import NO_CLASS_FOLDERS, class_folders


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in ("zebra", "Ant", "cat", ".cache", "b c"):
        (tmp_path / name).mkdir()
    (tmp_path / "notes.txt").write_text("not a class")
    (tmp_path / "cat" / "kitten").mkdir()  # nested: not a class of the root
    return tmp_path


def test_the_sub_folders_in_sorted_order_as_os_walk_lists_them(tree: Path) -> None:
    reference = sorted(next(os.walk(tree))[1])
    assert class_folders(tree) == reference == [".cache", "Ant", "b c", "cat", "zebra"]
    assert class_folders(str(tree), skip_hidden=True) == [n for n in reference if n[0] != "."]


def test_a_missing_root_raises_path_not_found_naming_it(tmp_path: Path) -> None:
    with pytest.raises(PathNotFoundError) as caught:
        class_folders(tmp_path / "missing")
    assert caught.value.path == str(tmp_path / "missing")


def test_a_file_or_an_empty_root_is_refused_naming_it(tree: Path) -> None:
    with pytest.raises(DatasetError, match=r"notes\.txt: not a directory$"):
        class_folders(tree / "notes.txt")
    with pytest.raises(DatasetError) as caught:
        class_folders(tree / "zebra")
    assert not isinstance(caught.value, PathNotFoundError)
    assert str(caught.value) == f"{tree / 'zebra'}: {NO_CLASS_FOLDERS}"
    (tree / "zebra" / ".git").mkdir()
    assert class_folders(tree / "zebra") == [".git"]
    with pytest.raises(DatasetError, match="no class folders"):
        class_folders(tree / "zebra", skip_hidden=True)
