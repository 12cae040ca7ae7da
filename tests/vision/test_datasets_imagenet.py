"""ImageNet on small copies of the three real archives (devkit meta.mat written with
scipy.io.savemat, per-class train tars, flat val tar of JPEGs), against torchvision's class:
the same parse (meta.bin, train/, val/), classes, samples and PIL images."""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.core.errors import DatasetError, PathNotFoundError
from trivium.vision.datasets import ImageNet, imagenet

sio = pytest.importorskip("scipy.io")
RNG = np.random.default_rng(0)
# ILSVRC2012_ID, WNID, words, num_children: two leaves and one inner synset, as meta.mat has.
SYNSETS = [
    (1, "n01440764", "tench, Tinca tinca", 0),
    (2, "n01443537", "goldfish, Carassius auratus", 0),
    (3, "n00001740", "entity", 2),
]
VAL_TRUTH = [2, 1, 2, 1, 1]


def _jpeg(mode: str = "RGB") -> bytes:
    size = tuple(int(v) for v in RNG.integers(8, 24, 2))
    pixels = RNG.integers(0, 256, (size[1], size[0], 3 if mode == "RGB" else 1), np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels.squeeze(-1) if mode == "L" else pixels, mode).save(buffer, "JPEG")
    return buffer.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _devkit(path: Path) -> None:
    fields = ["ILSVRC2012_ID", "WNID", "words", "gloss", "num_children", "children"]
    synsets = np.zeros((len(SYNSETS), 1), dtype=[(f, "O") for f in fields])
    for i, (idx, wnid, words, children) in enumerate(SYNSETS):
        synsets[i, 0] = (idx, wnid, words, "a gloss", children, np.zeros((1, children)))
    mat = io.BytesIO()
    sio.savemat(mat, {"synsets": synsets})
    with tarfile.open(path, "w:gz") as tar:
        _add(tar, "ILSVRC2012_devkit_t12/data/meta.mat", mat.getvalue())
        truth = "".join(f"{v}\n" for v in VAL_TRUTH).encode()
        _add(tar, "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt", truth)


def _train(path: Path) -> None:
    with tarfile.open(path, "w") as outer:
        for _, wnid, _, children in SYNSETS:
            if children:
                continue
            inner = io.BytesIO()
            with tarfile.open(fileobj=inner, mode="w") as tar:
                for i, mode in enumerate(["RGB", "L", "RGB"]):
                    _add(tar, f"{wnid}_{i}.JPEG", _jpeg(mode))
            _add(outer, f"{wnid}.tar", inner.getvalue())


def _val(path: Path) -> None:
    with tarfile.open(path, "w") as tar:
        for i in reversed(range(len(VAL_TRUTH))):  # tar order is not the images' order
            _add(tar, f"ILSVRC2012_val_{i + 1:08d}.JPEG", _jpeg("L" if i == 2 else "RGB"))


@pytest.fixture
def archives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tv: ModuleType) -> Path:
    """The three archives in ``tmp_path/archives``, their MD5s set in both libraries."""
    folder = tmp_path / "archives"
    folder.mkdir()
    for key, build in (("devkit", _devkit), ("train", _train), ("val", _val)):
        name = imagenet.ARCHIVE_META[key][0]
        build(folder / name)
        md5 = hashlib.md5((folder / name).read_bytes()).hexdigest()
        for table in (imagenet.ARCHIVE_META, tv.datasets.imagenet.ARCHIVE_META):
            monkeypatch.setitem(table, key, (name, md5))
    return folder


@pytest.mark.parametrize("split", ["train", "val"])
def test_parse_and_samples_are_torchvisions(
    tv: ModuleType, tmp_path: Path, archives: Path, split: str
) -> None:
    ours_root, theirs_root = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(archives, ours_root)
    shutil.copytree(archives, theirs_root)
    ours, theirs = ImageNet(ours_root, split), tv.datasets.ImageNet(theirs_root, split)
    assert torch.load(ours_root / "meta.bin") == torch.load(theirs_root / "meta.bin")
    tree = sorted(p.relative_to(ours_root).as_posix() for p in (ours_root / split).rglob("*"))
    assert tree == sorted(
        p.relative_to(theirs_root).as_posix() for p in (theirs_root / split).rglob("*")
    )
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    assert ours.wnids == theirs.wnids and ours.wnid_to_idx == theirs.wnid_to_idx
    assert ours.targets == theirs.targets and len(ours) == len(theirs) > 0
    for i in range(len(theirs)):
        (image, target), (expected, expected_target) = ours[i], theirs[i]
        assert isinstance(image, Image.Image) and image.mode == expected.mode == "RGB"
        np.testing.assert_array_equal(np.asarray(image), np.asarray(expected))
        assert target == expected_target
    assert ours.root == str(ours_root)
    # A root torchvision prepared serves as it is (meta.bin, the split folder).
    again = ImageNet(theirs_root, split)
    assert [Path(p).name for p, _ in again.samples] == [Path(p).name for p, _ in theirs.samples]


def test_tensor_samples_with_loader_none(tmp_path: Path, archives: Path) -> None:
    ds = ImageNet(archives, "val", loader=None)
    image, _ = ds[0]
    assert isinstance(image, torch.Tensor) and image.dtype == torch.uint8 and image.shape[0] == 3
    np.testing.assert_array_equal(
        image.permute(1, 2, 0).numpy(), np.asarray(ImageNet(archives, "val")[0][0])
    )


def test_missing_and_bad_archives_name_the_file(tmp_path: Path, archives: Path) -> None:
    with pytest.raises(PathNotFoundError, match=r"image-net\.org") as missing:
        ImageNet(tmp_path / "empty")
    assert missing.value.path == str(tmp_path / "empty" / "ILSVRC2012_devkit_t12.tar.gz")
    (archives / "ILSVRC2012_img_train.tar").write_bytes(b"not this")
    with pytest.raises(DatasetError, match="expected md5") as corrupt:
        ImageNet(archives, "train")
    assert corrupt.value.path == str(archives / "ILSVRC2012_img_train.tar")
    with pytest.raises(ValueError, match="split must be one of 'train', 'val'; got 'test'"):
        ImageNet(archives, "test")


def test_val_ground_truth_of_another_length_is_refused(tmp_path: Path, archives: Path) -> None:
    imagenet.parse_devkit_archive(archives)
    _, wnids = imagenet.load_meta_file(archives)
    with pytest.raises(DatasetError, match="5 validation images but 4 ground-truth labels"):
        imagenet.parse_val_archive(archives, wnids=wnids[:4])
    assert not (archives / "val").exists()


def test_dataloader_with_two_workers(archives: Path) -> None:
    ds = ImageNet(archives, "train", transform=lambda im: torch.from_numpy(np.array(im)).sum())
    sums, targets = zip(*torch.utils.data.DataLoader(ds, batch_size=2, num_workers=2), strict=True)
    plain = ImageNet(archives, "train")
    assert torch.cat(sums).tolist() == [int(np.asarray(im).sum()) for im, _ in plain]
    assert torch.cat(targets).tolist() == ds.targets
