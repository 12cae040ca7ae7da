"""SBDataset, WIDERFace, Kitti, Cityscapes and CocoCaptions on small copies of their real
layouts (JPEG / PNG written with Pillow, SBD's GTcls .mat with scipy, the box and label text
files, polygons JSON, a captions file), against torchvision's classes; SBD's and Kitti's
downloads from a loopback server."""

from __future__ import annotations

import hashlib
import json
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.core.errors import DatasetError, PathNotFoundError
from trivium.vision.datasets import Cityscapes, CocoCaptions, Kitti, SBDataset, WIDERFace

RNG = np.random.default_rng(0)


def write_image(path: Path, mode: str = "RGB", fmt: str | None = None, size=None) -> None:
    h, w = size or (int(v) for v in RNG.integers(6, 20, 2))
    shape = {"RGB": (h, w, 3), "L": (h, w)}[mode]
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(RNG.integers(0, 256, shape, np.uint8), mode).save(path, fmt)


def same(a, b) -> None:
    if isinstance(b, Image.Image):  # torchvision's may be a lazy JpegImageFile
        assert isinstance(a, Image.Image) and a.mode == b.mode and a.getpalette() == b.getpalette()
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        return
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(b, torch.Tensor):
        assert a.dtype == b.dtype and torch.equal(a, b)
    elif isinstance(b, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(b, dict):
        assert a.keys() == b.keys()
        for key in b:
            same(a[key], b[key])
    elif isinstance(b, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y)
    else:
        assert a == b


def assert_same(ours, theirs, order=None) -> None:
    assert len(ours) == len(theirs) > 0
    for i in range(len(theirs)):
        same(ours[i if order is None else order[i]], theirs[i])


# -- SBDataset ---------------------------------------------------------------------------


def build_sbd(root: Path) -> None:
    sio = pytest.importorskip("scipy.io")
    sparse = pytest.importorskip("scipy.sparse")
    names = ["2008_000002", "2008_000003", "2008_000007"]
    for n, name in enumerate(names):
        h, w = 7 + n, 9
        write_image(root / "img" / f"{name}.jpg", "L" if n == 1 else "RGB", size=(h, w))
        bounds = np.empty((20, 1), dtype=object)
        for i in range(20):
            bounds[i, 0] = sparse.csc_matrix(RNG.random((h, w)) > 0.8)
        gt = np.empty(
            (1, 1), dtype=[("Boundaries", "O"), ("Segmentation", "O"), ("CategoriesPresent", "O")]
        )
        gt[0, 0] = (bounds, RNG.integers(0, 21, (h, w)).astype(np.uint8), np.array([[1]]))
        (root / "cls").mkdir(parents=True, exist_ok=True)
        sio.savemat(root / "cls" / f"{name}.mat", {"GTcls": gt})
    (root / "train.txt").write_text("\n".join(names[:2]) + "\n")
    (root / "val.txt").write_text(names[2] + "\n")


@pytest.mark.parametrize("mode", ["segmentation", "boundaries"])
@pytest.mark.parametrize("image_set", ["train", "val"])
def test_sbd_is_torchvisions(tv: ModuleType, tmp_path: Path, mode: str, image_set: str) -> None:
    build_sbd(tmp_path)
    ours = SBDataset(tmp_path, image_set, mode)
    theirs = tv.datasets.SBDataset(tmp_path, image_set, mode)
    assert_same(ours, theirs)
    if mode == "boundaries":
        assert ours[0][1].shape[0] == 20


def test_sbd_download_lays_out_the_benchmark(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_sbd(tmp_path / "source")
    archive = file_server.root / "benchmark.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ["cls", "img", "train.txt", "val.txt"]:
            tar.add(tmp_path / "source" / name, f"benchmark_RELEASE/dataset/{name}")
        (tmp_path / "source" / "inst").mkdir()
        tar.add(tmp_path / "source" / "inst", "benchmark_RELEASE/dataset/inst")
    (file_server.root / "train_noval.txt").write_text("2008_000003\n")
    monkeypatch.setattr(SBDataset, "url", f"{file_server.url}/benchmark.tgz")
    monkeypatch.setattr(SBDataset, "md5", hashlib.md5(archive.read_bytes()).hexdigest())
    monkeypatch.setattr(SBDataset, "voc_train_url", f"{file_server.url}/train_noval.txt")
    noval_md5 = hashlib.md5(b"2008_000003\n").hexdigest()
    monkeypatch.setattr(SBDataset, "voc_split_md5", noval_md5)
    root = tmp_path / "root"
    ours = SBDataset(root, "train_noval", "segmentation", download=True)
    assert_same(ours, tv.datasets.SBDataset(root, "train_noval", "segmentation"))


def test_sbd_bad_class_file(tmp_path: Path) -> None:
    build_sbd(tmp_path)
    sio = pytest.importorskip("scipy.io")
    sio.savemat(tmp_path / "cls" / "2008_000007.mat", {"other": np.zeros(2)})
    with pytest.raises(DatasetError, match="not an SBD class file") as bad:
        SBDataset(tmp_path, "val", "segmentation")[0]
    assert bad.value.path == str(tmp_path / "cls" / "2008_000007.mat")


# -- WIDERFace ----------------------------------------------------------------------------


def build_widerface(root: Path) -> None:
    base = root / "widerface"
    faces = {
        "0--Parade/0_Parade_1.jpg": 2,
        "1--Handshaking/1_H_2.jpg": 0,
        "1--Handshaking/1_H_5.jpg": 1,
    }
    (base / "wider_face_split").mkdir(parents=True)
    for split in ("train", "val"):
        text = ""
        for name, count in faces.items():
            write_image(base / f"WIDER_{split}" / "images" / name)
            rows = RNG.integers(0, 40, (max(count, 1), 10)) if count else np.zeros((1, 10), int)
            text += f"{name}\n{count}\n" + "".join(" ".join(map(str, r)) + " \n" for r in rows)
        (base / "wider_face_split" / f"wider_face_{split}_bbx_gt.txt").write_text(text)
    for name in ("0--Parade/0_Parade_9.jpg", "2--Demo/2_D_1.jpg"):
        write_image(base / "WIDER_test" / "images" / name)
    (base / "wider_face_split" / "wider_face_test_filelist.txt").write_text(
        "0--Parade/0_Parade_9.jpg\n2--Demo/2_D_1.jpg\n"
    )


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_widerface_is_torchvisions(tv: ModuleType, tmp_path: Path, split: str) -> None:
    build_widerface(tmp_path)
    ours, theirs = WIDERFace(tmp_path, split), tv.datasets.WIDERFace(tmp_path, split)
    assert_same(ours, theirs)
    assert [i["img_path"] for i in ours.img_info] == [i["img_path"] for i in theirs.img_info]


def test_widerface_malformed_box_list(tmp_path: Path) -> None:
    build_widerface(tmp_path)
    path = tmp_path / "widerface" / "wider_face_split" / "wider_face_val_bbx_gt.txt"
    path.write_text("0--Parade/0_Parade_1.jpg\n2\n1 2 3 4 0 0 0 0 0 0\n")
    with pytest.raises(DatasetError, match="line 1: not a WIDER FACE box list") as bad:
        WIDERFace(tmp_path, "val")
    assert bad.value.path == str(path)


# -- Kitti ---------------------------------------------------------------------------------


def build_kitti(root: Path) -> None:
    raw = root / "Kitti" / "raw"
    for location, names in (("training", ["000002", "000000", "000001"]), ("testing", ["000003"])):
        for name in names:
            write_image(raw / location / "image_2" / f"{name}.png", fmt="PNG")
            if location == "training":
                lines = [
                    "Car 0.00 0 -1.57 599.41 156.40 629.75 189.25 2.85 2.63 12.34 0.47 1.4 69 -1.5",
                    "Pedestrian 0.50 2 0.21 1.0 2.0 3.0 4.5 1.7 0.6 0.8 -3.1 1.7 9.0 0.01",
                ]
                (raw / location / "label_2").mkdir(parents=True, exist_ok=True)
                (raw / location / "label_2" / f"{name}.txt").write_text(
                    "\n".join(lines[: 1 + int(name[-1]) % 2]) + "\n"
                )


@pytest.mark.parametrize("train", [True, False])
def test_kitti_is_torchvisions(tv: ModuleType, tmp_path: Path, train: bool) -> None:
    build_kitti(tmp_path)
    ours, theirs = Kitti(tmp_path, train), tv.datasets.Kitti(tmp_path, train)
    assert ours.images == sorted(theirs.images)  # ours sorted; theirs the listing's order
    assert_same(ours, theirs, order=[ours.images.index(p) for p in theirs.images])


def test_kitti_download(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_kitti(tmp_path / "source")
    raw = tmp_path / "source" / "Kitti" / "raw"
    for name, folder in (
        ("data_object_image_2.zip", "image_2"),
        ("data_object_label_2.zip", "label_2"),
    ):
        with zipfile.ZipFile(file_server.root / name, "w") as z:
            for path in sorted(raw.rglob(f"{folder}/*")):
                z.write(path, path.relative_to(raw).as_posix())
    monkeypatch.setattr(Kitti, "data_url", file_server.url + "/")
    ours = Kitti(tmp_path / "root", download=True)
    theirs = tv.datasets.Kitti(tmp_path / "root")
    assert_same(ours, theirs, order=[ours.images.index(p) for p in theirs.images])


# -- Cityscapes ----------------------------------------------------------------------------


def build_cityscapes(root: Path, mode: str = "gtFine") -> None:
    for city, frames in (
        ("aachen", ["000000_000019", "000001_000019"]),
        ("bonn", ["000004_000019"]),
    ):
        for frame in frames:
            stem = f"{city}_{frame}"
            write_image(
                root / "leftImg8bit" / "val" / city / f"{stem}_leftImg8bit.png",
                fmt="PNG",
                size=(6, 8),
            )
            target = root / mode / "val" / city
            target.mkdir(parents=True, exist_ok=True)
            Image.fromarray(RNG.integers(0, 34, (6, 8), np.uint8), "L").save(
                target / f"{stem}_{mode}_labelIds.png"
            )
            ids = RNG.integers(0, 30000, (6, 8)).astype(np.uint16)  # 16-bit gray, as stored
            Image.fromarray(ids).save(target / f"{stem}_{mode}_instanceIds.png")
            color = Image.fromarray(RNG.integers(0, 256, (6, 8, 4), np.uint8), "RGBA")
            color.save(target / f"{stem}_{mode}_color.png")
            polygons = {
                "imgHeight": 6,
                "imgWidth": 8,
                "objects": [{"label": "road", "polygon": [[0, 0], [7, 5]]}],
            }
            (target / f"{stem}_{mode}_polygons.json").write_text(json.dumps(polygons))


@pytest.mark.parametrize(
    "target_type", ["instance", "semantic", "color", "polygon", ["semantic", "polygon"]]
)
def test_cityscapes_is_torchvisions(tv: ModuleType, tmp_path: Path, target_type) -> None:
    build_cityscapes(tmp_path)
    ours = Cityscapes(tmp_path, "val", target_type=target_type)
    theirs = tv.datasets.Cityscapes(tmp_path, "val", target_type=target_type)
    assert sorted(ours.images) == sorted(theirs.images) and ours.images == sorted(ours.images)
    assert_same(ours, theirs, order=[ours.images.index(p) for p in theirs.images])


def test_cityscapes_extracts_the_zips_or_names_the_folder(tv: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(PathNotFoundError, match="needs an account") as missing:
        Cityscapes(tmp_path, "val")
    assert missing.value.path == str(tmp_path / "leftImg8bit" / "val")
    source = tmp_path / "source"
    build_cityscapes(source, "gtCoarse")
    root = tmp_path / "root"
    root.mkdir()
    for name, folder in (
        ("leftImg8bit_trainvaltest.zip", "leftImg8bit"),
        ("gtCoarse.zip", "gtCoarse"),
    ):
        with zipfile.ZipFile(root / name, "w") as z:
            for path in sorted((source / folder).rglob("*")):
                z.write(path, path.relative_to(source).as_posix())
    ours = Cityscapes(root, "val", mode="coarse", target_type="semantic")
    theirs = tv.datasets.Cityscapes(root, "val", mode="coarse", target_type="semantic")
    assert_same(ours, theirs, order=[ours.images.index(p) for p in theirs.images])


# -- CocoCaptions --------------------------------------------------------------------------


def test_coco_captions_is_torchvisions(tv: ModuleType, tmp_path: Path) -> None:
    pytest.importorskip("pycocotools")
    for name in ("a.jpg", "b.jpg", "c.jpg"):
        write_image(tmp_path / "images" / name, "L" if name == "b.jpg" else "RGB")
    annotations = {
        "images": [
            {"id": 9, "file_name": "a.jpg"},
            {"id": 2, "file_name": "b.jpg"},
            {"id": 5, "file_name": "c.jpg"},
        ],
        "annotations": [
            {"id": 1, "image_id": 9, "caption": "First of a."},
            {"id": 2, "image_id": 2, "caption": "Only of b."},
            {"id": 3, "image_id": 9, "caption": "Second of a."},
        ],
    }
    ann_file = tmp_path / "captions.json"
    ann_file.write_text(json.dumps(annotations))
    ours = CocoCaptions(tmp_path / "images", ann_file)
    theirs = tv.datasets.CocoCaptions(str(tmp_path / "images"), str(ann_file))
    assert ours.ids == theirs.ids
    assert_same(ours, theirs)
    assert ours[1][1] == [] and ours[2][1] == ["First of a.", "Second of a."]  # ids 2, 5, 9
    ann_file.write_text(json.dumps({"images": [{"id": 1}], "annotations": []}))
    with pytest.raises(DatasetError, match="lacks 'file_name'"):
        CocoCaptions(tmp_path, ann_file)
