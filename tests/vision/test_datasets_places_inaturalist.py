"""Places365 and INaturalist on small copies of their layouts (the devkit's lists, the image
folders of each version), against torchvision's classes; Places365's devkit and images and
INaturalist's archive downloaded from a loopback server."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from PIL import Image

from trivium.core.errors import DatasetError, PathNotFoundError
from trivium.vision.datasets import INaturalist, Places365, inaturalist

RNG = np.random.default_rng(0)


def write_image(path: Path, mode: str = "RGB") -> None:
    h, w = (int(v) for v in RNG.integers(6, 20, 2))
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(
        RNG.integers(0, 256, (h, w, 3) if mode == "RGB" else (h, w), np.uint8), mode
    ).save(path)


def assert_same(ours, theirs, order=None) -> None:
    assert len(ours) == len(theirs) > 0
    for i in range(len(theirs)):
        (image, target), (expected, expected_target) = (
            ours[i if order is None else order[i]],
            theirs[i],
        )
        assert isinstance(image, Image.Image) and image.mode == expected.mode
        np.testing.assert_array_equal(np.asarray(image), np.asarray(expected))
        assert type(target) is type(expected_target) and target == expected_target


# -- Places365 -----------------------------------------------------------------------------

CATEGORIES = "/a/airfield 0\n/a/airplane_cabin 1\n/b/bakery/shop 2\n"
LISTS = {
    "places365_train_standard.txt": "/a/airfield/00000001.jpg 0\n/b/bakery/shop/00000002.jpg 2\n",
    "places365_val.txt": "Places365_val_00000001.jpg 1\nPlaces365_val_00000002.jpg 0\n",
    "places365_test.txt": "Places365_test_00000001.jpg\n",
}
FOLDERS = {
    "places365_train_standard.txt": "data_256_standard",
    "places365_val.txt": "val_256",
    "places365_test.txt": "test_256",
}


def build_places(root: Path) -> dict[str, tuple[str, str]]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "categories_places365.txt").write_text(CATEGORIES)
    md5s = {"categories_places365.txt": hashlib.md5(CATEGORIES.encode()).hexdigest()}
    for name, text in LISTS.items():
        (root / name).write_text(text)
        md5s[name] = hashlib.md5(text.encode()).hexdigest()
        for line in text.splitlines():
            write_image(
                root / FOLDERS[name] / line.split()[0].lstrip("/"), "L" if "0002" in line else "RGB"
            )
    return md5s


def _use(monkeypatch: pytest.MonkeyPatch, classes, md5s: dict[str, str]) -> None:
    for cls in classes:
        monkeypatch.setattr(
            cls, "_CATEGORIES_META", ("categories_places365.txt", md5s["categories_places365.txt"])
        )
        table = {s: (n, md5s.get(n, m)) for s, (n, m) in Places365._FILE_LIST_META.items()}
        monkeypatch.setattr(cls, "_FILE_LIST_META", table)


@pytest.mark.parametrize("split", ["train-standard", "val", "test"])
def test_places365_is_torchvisions(
    tv: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: str
) -> None:
    _use(monkeypatch, [Places365, tv.datasets.Places365], build_places(tmp_path))
    ours = Places365(tmp_path, split, small=True)
    theirs = tv.datasets.Places365(tmp_path, split, small=True)
    assert ours.imgs == theirs.imgs and ours.targets == theirs.targets
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    assert_same(ours, theirs)


def test_places365_missing_and_corrupt_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(PathNotFoundError, match="download=True") as missing:
        Places365(tmp_path)
    assert missing.value.path == str(tmp_path / "categories_places365.txt")
    build_places(tmp_path)
    with pytest.raises(DatasetError, match="expected md5 06c963b8"):
        Places365(tmp_path)


def test_places365_download_fetches_devkit_and_images(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "source"
    md5s = build_places(source)
    devkit = file_server.root / "filelist_places365-standard.tar"
    with tarfile.open(devkit, "w") as tar:
        for name in ["categories_places365.txt", *LISTS]:
            tar.add(source / name, name)
    images = file_server.root / "val_256.tar"
    with tarfile.open(images, "w") as tar:
        tar.add(source / "val_256", "val_256")
    _use(monkeypatch, [Places365, tv.datasets.Places365], md5s)
    monkeypatch.setattr(Places365, "_BASE_URL", file_server.url + "/")
    md5 = {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in (devkit, images)}
    monkeypatch.setitem(Places365._DEVKIT_META, "standard", (devkit.name, md5[devkit.name]))
    monkeypatch.setitem(Places365._IMAGES_META, ("val", True), (images.name, md5[images.name]))
    ours = Places365(tmp_path / "root", "val", small=True, download=True)
    assert_same(ours, tv.datasets.Places365(tmp_path / "root", "val", small=True))


# -- INaturalist ---------------------------------------------------------------------------

SPECIES_2021 = [
    "00000_Animalia_Chordata_Aves_Passeriformes_Corvidae_Corvus_corax",
    "00001_Animalia_Chordata_Aves_Passeriformes_Corvidae_Pica_pica",
    "00002_Plantae_Tracheophyta_Magnoliopsida_Rosales_Rosaceae_Rosa_canina",
]


def build_inaturalist(root: Path, version: str) -> None:
    base = root / version
    if version.startswith("2021"):
        folders = SPECIES_2021
    elif version == "2017":
        folders = ["Aves/Corvus corax", "Aves/Pica pica", "Plantae/Rosa canina"]
    else:
        folders = ["Aves/1", "Aves/0", "Plantae/2"]
    for n, folder in enumerate(folders):
        for i in range(2):
            write_image(base / folder / f"{n}{i}abc.jpg", "L" if (n, i) == (1, 1) else "RGB")


@pytest.mark.parametrize(
    ("version", "target_type"),
    [
        ("2021_valid", "full"),
        ("2021_valid", ["genus", "kingdom", "full"]),
        ("2017", ["full", "super"]),
        ("2019", "super"),
    ],
)
def test_inaturalist_is_torchvisions(
    tv: ModuleType, tmp_path: Path, version: str, target_type
) -> None:
    build_inaturalist(tmp_path, version)
    ours = INaturalist(tmp_path, version, target_type)
    theirs = tv.datasets.INaturalist(tmp_path, version, target_type)
    assert (
        ours.all_categories == theirs.all_categories
        and ours.categories_map == theirs.categories_map
    )
    assert ours.categories_index == theirs.categories_index
    assert sorted(ours.index) == sorted(theirs.index) and ours.index == sorted(ours.index)
    assert_same(ours, theirs, order=[ours.index.index(item) for item in theirs.index])
    level = "genus" if version.startswith("2021") else "super"
    assert ours.category_name(level, 0) == theirs.category_name(level, 0)


def test_inaturalist_bad_folder_names_it(tmp_path: Path) -> None:
    build_inaturalist(tmp_path, "2021_valid")
    (tmp_path / "2021_valid" / "00003_Plantae").mkdir()
    with pytest.raises(DatasetError, match="expected the category folder 00003_") as bad:
        INaturalist(tmp_path, "2021_valid")
    assert bad.value.path == str(tmp_path / "2021_valid" / "00003_Plantae")
    with pytest.raises(ValueError, match="target_type must be one of"):
        INaturalist(tmp_path, "2021_valid", "super")


def test_inaturalist_download_renames_the_archives_folder(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_inaturalist(tmp_path / "source", "2021_valid")
    archive = file_server.root / "val.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "source" / "2021_valid", "val")
    monkeypatch.setitem(inaturalist.DATASET_URLS, "2021_valid", f"{file_server.url}/val.tar.gz")
    monkeypatch.setitem(
        inaturalist.DATASET_MD5, "2021_valid", hashlib.md5(archive.read_bytes()).hexdigest()
    )
    ours = INaturalist(tmp_path / "root", "2021_valid", download=True)
    theirs = tv.datasets.INaturalist(tmp_path / "root", "2021_valid")
    assert_same(ours, theirs, order=[ours.index.index(item) for item in theirs.index])
