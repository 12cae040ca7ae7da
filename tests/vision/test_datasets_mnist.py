"""The MNIST family on small IDX files written with NumPy (raw, .gz, .xz, the legacy processed
tensors), against torchvision's classes; downloads from a loopback server (mirrors, checksum
mismatch, resume, EMNIST's zip, QMNIST's .xz); a DataLoader with 2 workers."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.core.errors import DatasetError, PathNotFoundError
from trivium.vision import datasets as ours_module
from trivium.vision.datasets import EMNIST, MNIST, QMNIST, read_image_file

RNG = np.random.default_rng(0)
_CODES = {np.dtype(np.uint8): 8, np.dtype(np.int32): 12}


def idx_bytes(array: np.ndarray) -> bytes:
    """The IDX encoding of ``array``: magic ``0x0000TTNN``, big-endian sizes, big-endian values."""
    header = bytes([0, 0, _CODES[array.dtype], array.ndim])
    sizes = np.asarray(array.shape, ">u4").tobytes()
    return header + sizes + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_idx(path: Path, array: np.ndarray, suffix: str = "") -> None:
    data = idx_bytes(array)
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".gz":
        data = gzip.compress(data)
    elif suffix == ".xz":
        data = lzma.compress(data)
    Path(str(path) + suffix).write_bytes(data)


def images(count: int, side: int = 28) -> np.ndarray:
    return RNG.integers(0, 256, (count, side, side), dtype=np.uint8)


def build_mnist(root: Path, name: str, suffix: str = "") -> None:
    for prefix, count in (("train", 5), ("t10k", 3)):
        raw = root / name / "raw"
        write_idx(raw / f"{prefix}-images-idx3-ubyte", images(count), suffix)
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", RNG.integers(0, 10, count, np.uint8), suffix)


def assert_same_samples(ours, theirs) -> None:
    assert len(ours) == len(theirs) > 0
    for i in range(len(theirs)):
        (image, target), (expected, expected_target) = ours[i], theirs[i]
        assert isinstance(image, Image.Image) and image.mode == expected.mode == "L"
        np.testing.assert_array_equal(np.asarray(image), np.asarray(expected))
        assert type(target) is type(expected_target)
        if isinstance(target, torch.Tensor):
            assert target.dtype == expected_target.dtype and torch.equal(target, expected_target)
        else:
            assert target == expected_target


@pytest.mark.parametrize("name", ["MNIST", "FashionMNIST", "KMNIST"])
@pytest.mark.parametrize("train", [True, False])
def test_mnist_like_samples_are_torchvisions(
    tv: ModuleType, tmp_path: Path, name: str, train: bool
) -> None:
    build_mnist(tmp_path, name)
    ours = getattr(ours_module, name)(tmp_path, train=train)
    theirs = getattr(tv.datasets, name)(tmp_path, train=train)
    assert_same_samples(ours, theirs)
    assert torch.equal(ours.data, theirs.data) and ours.data.dtype == theirs.data.dtype
    assert torch.equal(ours.targets, theirs.targets) and ours.targets.dtype == torch.int64
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    assert repr(ours).splitlines()[2:] == repr(theirs).splitlines()[2:]


def test_compressed_idx_files_read_as_the_raw_ones(tv: ModuleType, tmp_path: Path) -> None:
    build_mnist(tmp_path / "gz", "MNIST", ".gz")
    raw = tmp_path / "raw" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for path in (tmp_path / "gz" / "MNIST" / "raw").iterdir():
        (raw / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
    assert_same_samples(MNIST(tmp_path / "gz"), tv.datasets.MNIST(tmp_path / "raw"))


def test_legacy_processed_tensors_win_as_in_torchvision(tv: ModuleType, tmp_path: Path) -> None:
    processed = tmp_path / "MNIST" / "processed"
    processed.mkdir(parents=True)
    for name, count in (("training.pt", 4), ("test.pt", 2)):
        pair = (torch.from_numpy(images(count)), torch.from_numpy(RNG.integers(0, 10, count)))
        torch.save(pair, processed / name)
    for train in (True, False):
        assert_same_samples(MNIST(tmp_path, train), tv.datasets.MNIST(tmp_path, train))
    (processed / "test.pt").unlink()  # one of the two alone: the raw files are read
    with pytest.raises(PathNotFoundError, match="download=True"):
        MNIST(tmp_path)


@pytest.mark.parametrize("train", [True, False])
def test_emnist_split_is_torchvisions(tv: ModuleType, tmp_path: Path, train: bool) -> None:
    raw = tmp_path / "EMNIST" / "raw"
    for part, count in (("train", 4), ("test", 3)):
        write_idx(raw / f"emnist-letters-{part}-images-idx3-ubyte", images(count))
        write_idx(
            raw / f"emnist-letters-{part}-labels-idx1-ubyte", RNG.integers(1, 27, count, np.uint8)
        )
    ours, theirs = (
        EMNIST(tmp_path, "letters", train=train),
        tv.datasets.EMNIST(tmp_path, "letters", train=train),
    )
    assert_same_samples(ours, theirs)
    assert ours.classes == theirs.classes
    with pytest.raises(ValueError, match="split must be one of"):
        EMNIST(tmp_path, "words")


@pytest.mark.parametrize("what", ["train", "test", "test10k", "test50k"])
@pytest.mark.parametrize("compat", [True, False])
def test_qmnist_subsets_and_targets_are_torchvisions(
    tv: ModuleType, tmp_path: Path, what: str, compat: bool
) -> None:
    raw = tmp_path / "QMNIST" / "raw"
    for part, count in (("train", 4), ("test", 10_003)):  # test50k: what follows the first 10k
        write_idx(raw / f"qmnist-{part}-images-idx3-ubyte", images(count, 2))
        labels = RNG.integers(0, 100_000, (count, 8)).astype(np.int32)
        write_idx(raw / f"qmnist-{part}-labels-idx2-int", labels)
    ours = QMNIST(tmp_path, what, compat=compat)
    theirs = tv.datasets.QMNIST(tmp_path, what, compat=compat)
    assert len(ours) == len(theirs)
    step = 997 if len(theirs) > 100 else 1
    for i in [*range(0, len(theirs), step), len(theirs) - 1]:
        assert_same_samples(
            torch.utils.data.Subset(ours, [i]), torch.utils.data.Subset(theirs, [i])
        )
    assert torch.equal(ours.targets, theirs.targets)


def test_malformed_idx_files_name_the_file(tmp_path: Path) -> None:
    build_mnist(tmp_path, "MNIST")
    labels = tmp_path / "MNIST" / "raw" / "train-labels-idx1-ubyte"
    labels.write_bytes(b"\x00\x00\x07\x01" + bytes(8))
    with pytest.raises(DatasetError, match="not an IDX file") as bad:
        MNIST(tmp_path)
    assert bad.value.path == str(labels)
    write_idx(labels, RNG.integers(0, 10, 4, np.uint8))
    with pytest.raises(DatasetError, match="5 images but 4 labels"):
        MNIST(tmp_path)
    image_file = tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte"
    image_file.write_bytes(idx_bytes(images(5))[:-10])
    with pytest.raises(DatasetError, match=r"says 3,920 values .* holds 3,910") as short:
        read_image_file(image_file)
    assert short.value.path == str(image_file)
    write_idx(image_file, RNG.integers(0, 10, 4, np.uint8))
    with pytest.raises(DatasetError, match="uint8 values in 3 dimensions"):
        MNIST(tmp_path)


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def test_mnist_download_tries_each_mirror_verifies_and_resumes(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "source"
    build_mnist(source, "MNIST", ".gz")
    resources = []
    for path in sorted((source / "MNIST" / "raw").iterdir()):
        (file_server.root / "good").mkdir(exist_ok=True)
        (file_server.root / "good" / path.name).write_bytes(path.read_bytes())
        resources.append((path.name, _md5(path.read_bytes())))
    monkeypatch.setattr(MNIST, "mirrors", [f"{file_server.url}/gone/", f"{file_server.url}/good/"])
    monkeypatch.setattr(MNIST, "resources", [(resources[0][0], "0" * 32), *resources[1:]])
    root = tmp_path / "root"
    with pytest.raises(DatasetError, match=r"HTTP 404.*expected md5 0+, got") as mismatch:
        MNIST(root, download=True)
    assert "/gone/" in str(mismatch.value) and "/good/" in str(mismatch.value)
    monkeypatch.setattr(MNIST, "resources", resources)
    file_server.cut_after = 50
    with pytest.raises(DatasetError, match="next try resumes"):
        MNIST(root, download=True)
    ours = MNIST(root, download=True)
    assert (f"/good/{resources[0][0]}", "bytes=50-") in file_server.requests
    assert_same_samples(ours, tv.datasets.MNIST(root))
    count = len(file_server.requests)
    MNIST(root, train=False, download=True)
    assert len(file_server.requests) == count


def test_emnist_download_unpacks_the_zip_of_gz_files(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = file_server.root / "gzip.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for part, count in (("train", 3), ("test", 2)):
            for kind, array in (
                ("images-idx3", images(count)),
                ("labels-idx1", RNG.integers(0, 10, count, np.uint8)),
            ):
                z.writestr(
                    f"gzip/emnist-digits-{part}-{kind}-ubyte.gz", gzip.compress(idx_bytes(array))
                )
    monkeypatch.setattr(EMNIST, "url", f"{file_server.url}/gzip.zip")
    monkeypatch.setattr(EMNIST, "md5", _md5(archive.read_bytes()))
    ours = EMNIST(tmp_path, "digits", train=False, download=True)
    assert not (tmp_path / "EMNIST" / "raw" / "gzip").exists()
    assert_same_samples(ours, tv.datasets.EMNIST(tmp_path, "digits", train=False))


def test_qmnist_download_decompresses_xz(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "xnist-images-idx3-ubyte.xz": lzma.compress(idx_bytes(images(3))),
        "xnist-labels-idx2-int.xz": lzma.compress(
            idx_bytes(RNG.integers(0, 9, (3, 8)).astype(np.int32))
        ),
    }
    for name, data in files.items():
        (file_server.root / name).write_bytes(data)
    resources = dict(
        QMNIST.resources, nist=[(f"{file_server.url}/{n}", _md5(d)) for n, d in files.items()]
    )
    monkeypatch.setattr(QMNIST, "resources", resources)
    ours = QMNIST(tmp_path, "nist", compat=False, download=True)
    assert_same_samples(ours, tv.datasets.QMNIST(tmp_path, "nist", compat=False))


def test_dataloader_with_two_workers(tmp_path: Path) -> None:
    build_mnist(tmp_path, "KMNIST", ".gz")
    ds = ours_module.KMNIST(tmp_path, transform=lambda im: torch.from_numpy(np.array(im)))
    images_, targets = zip(
        *torch.utils.data.DataLoader(ds, batch_size=2, num_workers=2), strict=True
    )
    assert torch.equal(torch.cat(images_), ds.data) and torch.equal(torch.cat(targets), ds.targets)
