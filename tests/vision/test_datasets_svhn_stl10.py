"""SVHN on .mat files written with scipy.io.savemat and STL10 on its binary files, against
torchvision's classes; SVHN's single-file download from a loopback server (mismatch, resume)."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.core.errors import DatasetError, PathNotFoundError
from trivium.vision.datasets import STL10, SVHN

sio = pytest.importorskip("scipy.io")
RNG = np.random.default_rng(0)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def assert_same_samples(ours, theirs) -> None:
    assert len(ours) == len(theirs) > 0
    for i in range(len(theirs)):
        (image, target), (expected, expected_target) = ours[i], theirs[i]
        assert isinstance(image, Image.Image) and image.mode == expected.mode
        np.testing.assert_array_equal(np.asarray(image), np.asarray(expected))
        assert type(target) is type(expected_target) and target == expected_target


def write_svhn(path: Path, count: int) -> None:
    """As the real files: ``X`` uint8 [32, 32, 3, N], ``y`` [N, 1] with 10 for the digit 0."""
    x = RNG.integers(0, 256, (32, 32, 3, count), dtype=np.uint8)
    y = np.concatenate([[10, 1], RNG.integers(1, 11, count - 2)]).astype(np.uint8)[:, None]
    sio.savemat(path, {"X": x, "y": y})


@pytest.mark.parametrize("split", ["train", "test", "extra"])
def test_svhn_is_torchvisions(
    tv: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: str
) -> None:
    url, filename, _ = SVHN.split_list[split]
    write_svhn(tmp_path / filename, 5)
    table = dict(SVHN.split_list, **{split: [url, filename, _md5(tmp_path / filename)]})
    for cls in (SVHN, tv.datasets.SVHN):
        monkeypatch.setattr(cls, "split_list", table)
    ours, theirs = SVHN(tmp_path, split), tv.datasets.SVHN(tmp_path, split)
    assert_same_samples(ours, theirs)
    assert ours[0][1] == 0 and ours.labels.dtype == theirs.labels.dtype
    np.testing.assert_array_equal(ours.data, theirs.data)
    assert repr(ours).splitlines()[2:] == repr(theirs).splitlines()[2:]


def test_svhn_errors_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "test_32x32.mat"
    with pytest.raises(PathNotFoundError, match="download=True"):
        SVHN(tmp_path, "test")
    with pytest.raises(
        ValueError, match="split must be one of 'train', 'test', 'extra'; got 'val'"
    ):
        SVHN(tmp_path, "val")
    sio.savemat(path, {"X": np.zeros((32, 32, 3, 2), np.uint8), "y": np.ones((3, 1))})
    monkeypatch.setitem(SVHN.split_list, "test", ["", path.name, _md5(path)])
    with pytest.raises(DatasetError, match="one label per image") as bad:
        SVHN(tmp_path, "test")
    assert bad.value.path == str(path)
    path.write_bytes(b"not a mat file at all")
    monkeypatch.setitem(SVHN.split_list, "test", ["", path.name, _md5(path)])
    with pytest.raises(DatasetError, match=r"cannot read the \.mat file"):
        SVHN(tmp_path, "test")


def test_svhn_download_verifies_and_resumes(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = file_server.root / "train_32x32.mat"
    write_svhn(served, 4)
    url = f"{file_server.url}/train_32x32.mat"
    monkeypatch.setitem(SVHN.split_list, "train", [url, "train_32x32.mat", "0" * 32])
    with pytest.raises(DatasetError, match=r"expected md5 0+"):
        SVHN(tmp_path, download=True)
    monkeypatch.setitem(SVHN.split_list, "train", [url, "train_32x32.mat", _md5(served)])
    file_server.cut_after = 200
    with pytest.raises(DatasetError, match="next try resumes"):
        SVHN(tmp_path, download=True)
    ours = SVHN(tmp_path, download=True)
    assert file_server.requests[-1] == ("/train_32x32.mat", "bytes=200-")
    monkeypatch.setattr(tv.datasets.SVHN, "split_list", SVHN.split_list)
    assert_same_samples(ours, tv.datasets.SVHN(tmp_path))


def build_stl10(root: Path) -> list[list[str]]:
    """``root/stl10_binary`` with a few images per file, labels 1-10, folds, class names."""
    folder = root / "stl10_binary"
    folder.mkdir(parents=True)
    for name, count in (("train", 6), ("test", 3), ("unlabeled", 2)):
        (folder / f"{name}_X.bin").write_bytes(
            RNG.integers(0, 256, count * 3 * 96 * 96, np.uint8).tobytes()
        )
        if name != "unlabeled":
            (folder / f"{name}_y.bin").write_bytes(RNG.integers(1, 11, count, np.uint8).tobytes())
    (folder / "fold_indices.txt").write_text("".join(f"{i} {(i + 2) % 6} \n" for i in range(10)))
    (folder / "class_names.txt").write_text("\n".join(f"class{i}" for i in range(10)) + "\n")
    return [[path.name, _md5(path)] for path in sorted(folder.glob("*.bin"))]


@pytest.mark.parametrize(
    ("split", "folds"),
    [("train", None), ("train", 3), ("test", None), ("unlabeled", None), ("train+unlabeled", 1)],
)
def test_stl10_is_torchvisions(
    tv: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: str, folds: int | None
) -> None:
    md5s = dict(build_stl10(tmp_path))
    for cls in (STL10, tv.datasets.STL10):
        for attr in ("train_list", "test_list"):
            monkeypatch.setattr(cls, attr, [[n, md5s[n]] for n, _ in getattr(STL10, attr)])
    ours, theirs = STL10(tmp_path, split, folds), tv.datasets.STL10(tmp_path, split, folds)
    assert_same_samples(ours, theirs)
    np.testing.assert_array_equal(ours.labels, theirs.labels)
    assert ours.labels.dtype == theirs.labels.dtype and ours.classes == theirs.classes


def test_stl10_errors_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PathNotFoundError, match="download=True") as missing:
        STL10(tmp_path, "test")
    assert missing.value.path == str(tmp_path / "stl10_binary" / "test_y.bin")
    md5s = dict(build_stl10(tmp_path))
    test_x = tmp_path / "stl10_binary" / "test_X.bin"
    test_x.write_bytes(bytes(100))
    md5s["test_X.bin"] = _md5(test_x)
    monkeypatch.setattr(STL10, "test_list", [[n, md5s[n]] for n, _ in STL10.test_list])
    with pytest.raises(DatasetError, match="not a whole number of 3x96x96 images") as bad:
        STL10(tmp_path, "test")
    assert bad.value.path == str(test_x)


def test_stl10_download_extracts_the_archive(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    lists = build_stl10(tmp_path / "source")
    with tarfile.open(file_server.root / STL10.filename, "w:gz") as tar:
        tar.add(tmp_path / "source" / "stl10_binary", "stl10_binary")
    md5s = dict(lists)
    for cls in (STL10, tv.datasets.STL10):
        for attr in ("train_list", "test_list"):
            monkeypatch.setattr(cls, attr, [[n, md5s[n]] for n, _ in getattr(STL10, attr)])
    monkeypatch.setattr(STL10, "url", f"{file_server.url}/{STL10.filename}")
    monkeypatch.setattr(STL10, "tgz_md5", _md5(file_server.root / STL10.filename))
    ours = STL10(tmp_path / "root", "test", download=True)
    assert_same_samples(ours, tv.datasets.STL10(tmp_path / "root", "test"))


def test_dataloader_with_two_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_svhn(tmp_path / "test_32x32.mat", 6)
    monkeypatch.setitem(
        SVHN.split_list, "test", ["", "test_32x32.mat", _md5(tmp_path / "test_32x32.mat")]
    )
    ds = SVHN(tmp_path, "test", transform=lambda im: torch.from_numpy(np.array(im)))
    images, targets = zip(
        *torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2), strict=True
    )
    assert torch.equal(torch.cat(images), torch.from_numpy(ds.data).permute(0, 2, 3, 1))
    assert torch.cat(targets).tolist() == ds.labels.tolist()


def test_svhn_transforms_as_torchvisions(
    tv: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_svhn(tmp_path / "test_32x32.mat", 4)
    table = dict(SVHN.split_list, test=["", "test_32x32.mat", _md5(tmp_path / "test_32x32.mat")])
    for cls in (SVHN, tv.datasets.SVHN):
        monkeypatch.setattr(cls, "split_list", table)
    kwargs = {"transform": lambda im: np.asarray(im).sum(), "target_transform": lambda t: t * 2}
    ours, theirs = SVHN(tmp_path, "test", **kwargs), tv.datasets.SVHN(tmp_path, "test", **kwargs)
    assert [ours[i] for i in range(4)] == [theirs[i] for i in range(4)]
    # The transforms are read at each access, as torchvision's: a later assignment counts.
    ours.target_transform = theirs.target_transform = str
    assert [ours[i] for i in range(4)] == [theirs[i] for i in range(4)]
    assert isinstance(ours[0][1], str)
