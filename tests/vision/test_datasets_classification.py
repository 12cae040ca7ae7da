"""FakeData, Flowers102, Food101, OxfordIIITPet, DTD and GTSRB on small copies of their real
layouts (JPEG / PPM / PNG written with Pillow, .mat with scipy.io.savemat, the split text,
JSON and CSV files), against torchvision's classes; downloads from a loopback server."""

from __future__ import annotations

import hashlib
import json
import tarfile
import warnings
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.core.errors import DatasetError, DecodeError, PathNotFoundError, SkippedSamplesWarning
from trivium.vision.datasets import DTD, GTSRB, FakeData, Flowers102, Food101, OxfordIIITPet

RNG = np.random.default_rng(0)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def write_image(path: Path, mode: str = "RGB", fmt: str | None = None) -> None:
    w, h = (int(v) for v in RNG.integers(6, 20, 2))
    shape = {"RGB": (h, w, 3), "L": (h, w), "RGBA": (h, w, 4)}[mode]
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(RNG.integers(0, 256, shape, np.uint8), mode).save(path, fmt)


def assert_same(ours, theirs) -> None:
    assert len(ours) == len(theirs) > 0
    for i in range(len(theirs)):
        (image, target), (expected, expected_target) = ours[i], theirs[i]
        assert isinstance(image, Image.Image) and image.mode == expected.mode
        np.testing.assert_array_equal(np.asarray(image), np.asarray(expected))
        assert_same_target(target, expected_target)


def assert_same_target(target, expected) -> None:
    assert type(target) is type(expected)
    if isinstance(expected, Image.Image):
        assert target.mode == expected.mode
        np.testing.assert_array_equal(np.asarray(target), np.asarray(expected))
    elif isinstance(expected, tuple):
        for a, b in zip(target, expected, strict=True):
            assert_same_target(a, b)
    else:
        assert target == expected


@pytest.mark.parametrize("image_size", [(3, 5, 7), (1, 4, 4), (4, 3, 2)])
def test_fakedata_is_torchvisions(tv: ModuleType, image_size: tuple[int, int, int]) -> None:
    kwargs = {"size": 6, "image_size": image_size, "num_classes": 4, "random_offset": 3}
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    assert_same(FakeData(**kwargs), tv.datasets.FakeData(**kwargs))
    assert torch.equal(torch.rand(1), before)  # the global generator is left as it was
    with pytest.raises(IndexError):
        FakeData(**kwargs)[6]


# -- Flowers102 ---------------------------------------------------------------------------


def build_flowers(root: Path) -> dict[str, tuple[str, str]]:
    base = root / "flowers-102"
    for i in range(1, 9):
        write_image(base / "jpg" / f"image_{i:05d}.jpg", "L" if i == 4 else "RGB")
    sio = pytest.importorskip("scipy.io")
    sio.savemat(base / "imagelabels.mat", {"labels": RNG.integers(1, 103, (1, 8))})
    ids = {"trnid": [[1, 5, 2]], "valid": [[3, 8]], "tstid": [[4, 6, 7]]}
    sio.savemat(base / "setid.mat", {k: np.asarray(v, np.uint16) for k, v in ids.items()})
    table = dict(Flowers102._file_dict)
    for key in ("label", "setid"):
        table[key] = (table[key][0], _md5(base / table[key][0]))
    return table


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_flowers102_is_torchvisions(
    tv: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: str
) -> None:
    table = build_flowers(tmp_path)
    for cls in (Flowers102, tv.datasets.Flowers102):
        monkeypatch.setattr(cls, "_file_dict", table)
    ours, theirs = Flowers102(tmp_path, split), tv.datasets.Flowers102(tmp_path, split)
    assert ours._image_files == theirs._image_files and ours._labels == theirs._labels
    assert_same(ours, theirs)
    assert ours.classes == theirs.classes


def test_flowers102_download(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = build_flowers(tmp_path / "source")
    base = tmp_path / "source" / "flowers-102"
    with tarfile.open(file_server.root / "102flowers.tgz", "w:gz") as tar:
        tar.add(base / "jpg", "jpg")
    for key in ("label", "setid"):
        (file_server.root / table[key][0]).write_bytes((base / table[key][0]).read_bytes())
    table["image"] = ("102flowers.tgz", _md5(file_server.root / "102flowers.tgz"))
    for cls in (Flowers102, tv.datasets.Flowers102):
        monkeypatch.setattr(cls, "_file_dict", table)
    monkeypatch.setattr(Flowers102, "_download_url_prefix", file_server.url + "/")
    ours = Flowers102(tmp_path / "root", "test", download=True)
    assert_same(ours, tv.datasets.Flowers102(tmp_path / "root", "test"))


def test_flowers102_bad_files_name_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(PathNotFoundError, match="download=True") as missing:
        Flowers102(tmp_path)
    assert missing.value.path == str(tmp_path / "flowers-102" / "jpg")
    table = build_flowers(tmp_path)
    with pytest.raises(DatasetError, match="expected md5 e0620be6"):
        Flowers102(tmp_path)  # torchvision's checksums, not the small files'
    monkeypatch.setattr(Flowers102, "_file_dict", table)
    bad = tmp_path / "flowers-102" / "jpg" / "image_00005.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not a whole jpeg")
    ds = Flowers102(tmp_path)
    with pytest.raises(DecodeError) as caught:
        ds[1]
    assert caught.value.path == str(bad)
    skipping = Flowers102(tmp_path, on_error="skip")
    with pytest.warns(SkippedSamplesWarning, match="image_00005.jpg"):
        _, label = skipping[1]
    assert label == ds._labels[2] and skipping.skipped_files == [str(bad)]


# -- Food101 -----------------------------------------------------------------------------


def build_food(root: Path) -> None:
    base = root / "food-101"
    meta = {
        "train": {"ramen": ["ramen/1", "ramen/2"], "apple_pie": ["apple_pie/7"]},
        "test": {"ramen": ["ramen/3"], "bibimbap": ["bibimbap/4", "bibimbap/5"]},
    }
    for split, classes in meta.items():
        for paths in classes.values():
            for p in paths:
                write_image(base / "images" / f"{p}.jpg", "L" if p.endswith("5") else "RGB")
        (base / "meta").mkdir(parents=True, exist_ok=True)
        (base / "meta" / f"{split}.json").write_text(json.dumps(classes))


@pytest.mark.parametrize("split", ["train", "test"])
def test_food101_is_torchvisions(tv: ModuleType, tmp_path: Path, split: str) -> None:
    build_food(tmp_path)
    ours, theirs = Food101(tmp_path, split), tv.datasets.Food101(tmp_path, split)
    assert_same(ours, theirs)
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    (tmp_path / "food-101" / "meta" / "test.json").write_text("[1, 2]")
    with pytest.raises(DatasetError, match="class -> image list"):
        Food101(tmp_path, "test")


# -- OxfordIIITPet ----------------------------------------------------------------------


def build_pets(root: Path) -> None:
    base = root / "oxford-iiit-pet"
    rows = {
        "trainval": [
            ("Abyssinian_1", 1, 1),
            ("american_bulldog_10", 2, 2),
            ("Abyssinian_12", 1, 1),
        ],
        "test": [("yorkshire_terrier_3", 37, 2), ("Bengal_5", 6, 1)],
    }
    for split, lines in rows.items():
        text = ""
        for image_id, label, species in lines:
            # An RGBA PNG named .jpg, as a few files of the real set are.
            rgba = image_id == "Bengal_5"
            write_image(
                base / "images" / f"{image_id}.jpg",
                "RGBA" if rgba else "RGB",
                "PNG" if rgba else None,
            )
            trimap = Image.fromarray(RNG.integers(1, 4, (5, 6), np.uint8), "L")
            (base / "annotations" / "trimaps").mkdir(parents=True, exist_ok=True)
            trimap.save(base / "annotations" / "trimaps" / f"{image_id}.png")
            text += f"{image_id} {label} {species} 1\n"
        (base / "annotations" / f"{split}.txt").write_text(text)


@pytest.mark.parametrize(
    "target_types",
    ["category", "binary-category", "segmentation", ["segmentation", "category"], []],
)
@pytest.mark.parametrize("split", ["trainval", "test"])
def test_oxford_pets_is_torchvisions(
    tv: ModuleType, tmp_path: Path, split: str, target_types
) -> None:
    build_pets(tmp_path)
    ours = OxfordIIITPet(tmp_path, split, target_types)
    theirs = tv.datasets.OxfordIIITPet(tmp_path, split, target_types)
    assert_same(ours, theirs)
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    assert ours.bin_class_to_idx == theirs.bin_class_to_idx


def test_oxford_pets_download_extracts_both_archives(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_pets(tmp_path / "source")
    resources = []
    for name in ("images", "annotations"):
        archive = file_server.root / f"{name}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(tmp_path / "source" / "oxford-iiit-pet" / name, name)
        resources.append((f"{file_server.url}/{archive.name}", _md5(archive)))
    monkeypatch.setattr(OxfordIIITPet, "_RESOURCES", tuple(resources))
    ours = OxfordIIITPet(tmp_path / "root", "test", "segmentation", download=True)
    assert_same(ours, tv.datasets.OxfordIIITPet(tmp_path / "root", "test", "segmentation"))


# -- DTD ---------------------------------------------------------------------------------


def build_dtd(root: Path) -> None:
    data = root / "dtd" / "dtd"
    names = {
        "train": ["banded/banded_0002.jpg", "zigzagged/z_1.jpg", "banded/banded_0004.jpg"],
        "val": ["crosshatched/c_3.jpg"],
        "test": ["zigzagged/z_9.jpg", "banded/b_1.jpg"],
    }
    (data / "labels").mkdir(parents=True)
    for split, lines in names.items():
        for line in lines:
            write_image(data / "images" / line)
        (data / "labels" / f"{split}3.txt").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_dtd_is_torchvisions(tv: ModuleType, tmp_path: Path, split: str) -> None:
    build_dtd(tmp_path)
    ours, theirs = DTD(tmp_path, split, partition=3), tv.datasets.DTD(tmp_path, split, partition=3)
    assert_same(ours, theirs)
    assert (
        ours.classes == theirs.classes
        and repr(ours).splitlines()[2:] == repr(theirs).splitlines()[2:]
    )


# -- GTSRB -------------------------------------------------------------------------------


def build_gtsrb(root: Path) -> None:
    base = root / "gtsrb"
    for cls, count in (("00000", 2), ("00002", 1)):
        for i in range(count):
            write_image(base / "GTSRB" / "Training" / cls / f"00000_{i:05d}.ppm", fmt="PPM")
    (base / "GTSRB" / "Training" / "00000" / "GT-00000.csv").write_text("not an image\n")
    rows = [("00001.ppm", 14), ("00000.ppm", 3)]
    for name, _ in rows:
        write_image(base / "GTSRB" / "Final_Test" / "Images" / name, fmt="PPM")
    header = "Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId\n"
    body = "".join(f"{name};9;9;1;1;8;8;{cls}\n" for name, cls in rows)
    (base / "GT-final_test.csv").write_text(header + body)


@pytest.mark.parametrize("split", ["train", "test"])
def test_gtsrb_is_torchvisions(tv: ModuleType, tmp_path: Path, split: str) -> None:
    build_gtsrb(tmp_path)
    ours, theirs = GTSRB(tmp_path, split), tv.datasets.GTSRB(tmp_path, split)
    assert ours._samples == theirs._samples
    assert_same(ours, theirs)


def test_gtsrb_download_extracts_the_test_zips(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_gtsrb(tmp_path / "source")
    base = tmp_path / "source" / "gtsrb"
    images = file_server.root / "GTSRB_Final_Test_Images.zip"
    with zipfile.ZipFile(images, "w") as z:
        for path in (base / "GTSRB" / "Final_Test" / "Images").iterdir():
            z.write(path, f"GTSRB/Final_Test/Images/{path.name}")
    truth = file_server.root / "GTSRB_Final_Test_GT.zip"
    with zipfile.ZipFile(truth, "w") as z:
        z.write(base / "GT-final_test.csv", "GT-final_test.csv")
    urls = [(f"{file_server.url}/{p.name}", _md5(p)) for p in (images, truth)]
    monkeypatch.setitem(GTSRB._URLS, "test", urls)
    ours = GTSRB(tmp_path / "root", "test", download=True)
    assert_same(ours, tv.datasets.GTSRB(tmp_path / "root", "test"))


def test_dataloader_with_two_workers(tmp_path: Path) -> None:
    build_dtd(tmp_path)
    to_sum = lambda image: int(np.asarray(image, dtype=np.int64).sum())  # noqa: E731
    ds = DTD(tmp_path, "train", partition=3, transform=to_sum)
    sums, labels = zip(*torch.utils.data.DataLoader(ds, batch_size=2, num_workers=2), strict=True)
    plain = DTD(tmp_path, "train", partition=3)
    assert torch.cat(sums).tolist() == [to_sum(image) for image, _ in plain]
    assert torch.cat(labels).tolist() == plain._labels
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to report on good files
        list(torch.utils.data.DataLoader(ds, batch_size=3, num_workers=2))


def test_every_class_names_a_missing_root(tmp_path: Path) -> None:
    for cls, where in [
        (Food101, "food-101/meta"),
        (OxfordIIITPet, "oxford-iiit-pet/images"),
        (DTD, "dtd/dtd"),
        (GTSRB, "gtsrb/GTSRB/Training"),
    ]:
        with pytest.raises(PathNotFoundError, match="download=True") as caught:
            cls(tmp_path)
        assert caught.value.path == str(tmp_path / where)
