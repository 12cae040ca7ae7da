"""Caltech101 and CelebA on small copies of their layouts (JPEGs written with Pillow, gray ones
among them; annotation .mat files; CelebA's space-separated lists), against torchvision's
classes; their downloads (Caltech's zip of archives, CelebA's files) from a loopback server."""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.core.errors import DatasetError, PathNotFoundError
from trivium.vision.datasets import Caltech101, CelebA

sio = pytest.importorskip("scipy.io")
RNG = np.random.default_rng(0)


def _jpeg(path: Path, mode: str = "RGB") -> None:
    h, w = (int(v) for v in RNG.integers(6, 20, 2))
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(
        RNG.integers(0, 256, (h, w, 3) if mode == "RGB" else (h, w), np.uint8), mode
    ).save(path)


def assert_same(ours, theirs) -> None:
    assert len(ours) == len(theirs) > 0
    for i in range(len(theirs)):
        (image, target), (expected, expected_target) = ours[i], theirs[i]
        assert isinstance(image, Image.Image) and image.mode == expected.mode
        np.testing.assert_array_equal(np.asarray(image), np.asarray(expected))
        _same_target(target, expected_target)


def _same_target(target, expected) -> None:
    assert type(target) is type(expected)
    if isinstance(expected, tuple):
        for a, b in zip(target, expected, strict=True):
            _same_target(a, b)
    elif isinstance(expected, torch.Tensor):
        assert target.dtype == expected.dtype and torch.equal(target, expected)
    elif isinstance(expected, np.ndarray):
        np.testing.assert_array_equal(target, expected)
    else:
        assert target == expected


def build_caltech(root: Path) -> None:
    base = root / "caltech101"
    for category, count in (("Faces", 2), ("accordion", 3), ("BACKGROUND_Google", 1)):
        for i in range(1, count + 1):
            _jpeg(
                base / "101_ObjectCategories" / category / f"image_{i:04d}.jpg",
                "L" if i == 2 else "RGB",
            )
            folder = {"Faces": "Faces_2"}.get(category, category)
            contour = RNG.random((2, 5)) * 10
            (base / "Annotations" / folder).mkdir(parents=True, exist_ok=True)
            sio.savemat(
                base / "Annotations" / folder / f"annotation_{i:04d}.mat",
                {"obj_contour": contour, "box_coord": [[1, 2, 3, 4]]},
            )


@pytest.mark.parametrize("target_type", ["category", "annotation", ["annotation", "category"]])
def test_caltech101_is_torchvisions(tv: ModuleType, tmp_path: Path, target_type) -> None:
    build_caltech(tmp_path)
    ours, theirs = Caltech101(tmp_path, target_type), tv.datasets.Caltech101(tmp_path, target_type)
    assert (
        ours.categories == theirs.categories and ours.y == theirs.y and ours.index == theirs.index
    )
    assert ours.annotation_categories == theirs.annotation_categories
    assert_same(ours, theirs)
    assert ours[1][0].mode == "L" if target_type == "category" else True


def test_caltech101_download_extracts_the_archives_in_the_zip(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_caltech(tmp_path / "source")
    base = tmp_path / "source" / "caltech101"
    images, annotations = io.BytesIO(), io.BytesIO()
    with tarfile.open(fileobj=images, mode="w:gz") as tar:
        tar.add(base / "101_ObjectCategories", "101_ObjectCategories")
    with tarfile.open(fileobj=annotations, mode="w") as tar:
        tar.add(base / "Annotations", "Annotations")
    archive = file_server.root / "caltech-101.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("caltech-101/101_ObjectCategories.tar.gz", images.getvalue())
        z.writestr("caltech-101/Annotations.tar", annotations.getvalue())
    monkeypatch.setattr(Caltech101, "_URL", f"{file_server.url}/caltech-101.zip")
    monkeypatch.setattr(Caltech101, "_MD5", hashlib.md5(archive.read_bytes()).hexdigest())
    ours = Caltech101(tmp_path / "root", ["category", "annotation"], download=True)
    assert not (tmp_path / "root" / "caltech101" / "caltech-101").exists()
    assert_same(ours, tv.datasets.Caltech101(tmp_path / "root", ["category", "annotation"]))


ATTRS = ["5_o_Clock_Shadow", "Arched_Eyebrows", "Young"]


def build_celeba(root: Path) -> dict[str, str]:
    """``root/celeba`` with 6 images, 2 per split (torchvision fails on a split of one)."""
    base = root / "celeba"
    names = [f"{i:06d}.jpg" for i in range(1, 7)]
    for i, name in enumerate(names):
        _jpeg(base / "img_align_celeba" / name, "L" if i == 3 else "RGB")

    def lines(rows):
        return "".join(" ".join(str(v) for v in row) + "\n" for row in rows)

    (base / "list_eval_partition.txt").write_text(
        lines((n, p) for n, p in zip(names, [0, 0, 1, 2, 1, 2], strict=True))
    )
    (base / "identity_CelebA.txt").write_text(lines((n, 100 + i) for i, n in enumerate(names)))
    attr_rows = [(n, *RNG.choice([-1, 1], len(ATTRS))) for n in names]
    (base / "list_attr_celeba.txt").write_text(
        f"{len(names)}\n" + " ".join(ATTRS) + " \n" + lines(attr_rows).replace(" -1", "  -1")
    )
    bbox = [(n, *RNG.integers(0, 200, 4)) for n in names]
    (base / "list_bbox_celeba.txt").write_text(
        f"{len(names)}\nimage_id x_1 y_1 width height\n" + lines(bbox)
    )
    marks = [(n, *RNG.integers(0, 200, 10)) for n in names]
    parts = ["lefteye", "righteye", "nose", "leftmouth", "rightmouth"]
    header = " ".join(f"{p}_{axis}" for p in parts for axis in "xy")
    (base / "list_landmarks_align_celeba.txt").write_text(
        f"{len(names)}\n{header}\n" + lines(marks)
    )
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in base.glob("*.txt")}


def _use_md5s(monkeypatch: pytest.MonkeyPatch, classes, md5s: dict[str, str]) -> None:
    table = [(fid, md5s.get(name, md5), name) for fid, md5, name in CelebA.file_list]
    for cls in classes:
        monkeypatch.setattr(cls, "file_list", table)


@pytest.mark.parametrize("split", ["train", "valid", "test", "all"])
@pytest.mark.parametrize("target_type", ["attr", "identity", ["bbox", "landmarks"], []])
def test_celeba_is_torchvisions(
    tv: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: str, target_type
) -> None:
    _use_md5s(monkeypatch, [CelebA, tv.datasets.CelebA], build_celeba(tmp_path))
    ours = CelebA(tmp_path, split, target_type)
    theirs = tv.datasets.CelebA(tmp_path, split, target_type)
    assert list(ours.filename) == list(theirs.filename) and ours.attr_names == theirs.attr_names
    assert_same(ours, theirs)
    for name in ("attr", "identity", "bbox", "landmarks_align"):
        assert torch.equal(getattr(ours, name), getattr(theirs, name))


def test_celeba_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="target_transform is specified but target_type is empty"):
        CelebA(tmp_path, target_type=[], target_transform=str)
    with pytest.raises(ValueError, match="split must be one of"):
        CelebA(tmp_path, "val")
    md5s = build_celeba(tmp_path)
    bbox = tmp_path / "celeba" / "list_bbox_celeba.txt"
    bbox.write_text("2\nimage_id x_1\n000001.jpg one\n")
    md5s["list_bbox_celeba.txt"] = hashlib.md5(bbox.read_bytes()).hexdigest()
    _use_md5s(monkeypatch, [CelebA], md5s)
    with pytest.raises(DatasetError, match="a name and integers") as bad:
        CelebA(tmp_path)
    assert bad.value.path == str(bbox)
    (tmp_path / "celeba" / "list_eval_partition.txt").unlink()
    with pytest.raises(PathNotFoundError) as missing:
        CelebA(tmp_path)
    assert missing.value.path == str(tmp_path / "celeba" / "list_eval_partition.txt")


def test_celeba_download_fetches_each_file(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    md5s = build_celeba(tmp_path / "source")
    base = tmp_path / "source" / "celeba"
    with zipfile.ZipFile(base / "img_align_celeba.zip", "w") as z:
        for path in sorted((base / "img_align_celeba").iterdir()):
            z.write(path, f"img_align_celeba/{path.name}")
    md5s["img_align_celeba.zip"] = hashlib.md5(
        (base / "img_align_celeba.zip").read_bytes()
    ).hexdigest()
    for fid, _, name in CelebA.file_list:
        (file_server.root / fid).write_bytes((base / name).read_bytes())
    _use_md5s(monkeypatch, [CelebA, tv.datasets.CelebA], md5s)
    monkeypatch.setattr(CelebA, "gdrive_url", file_server.url + "/{id}")
    ours = CelebA(tmp_path / "root", "all", "identity", download=True)
    assert_same(ours, tv.datasets.CelebA(tmp_path / "root", "all", "identity"))
