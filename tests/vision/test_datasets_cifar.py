"""CIFAR10 / CIFAR100 on small copies of the real pickle batches, against torchvision's classes;
their download from a loopback server (mismatch, resume); a DataLoader with 2 workers."""

from __future__ import annotations

import hashlib
import pickle
import tarfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from PIL import Image

from trivium.core.errors import DatasetError, PathNotFoundError
from trivium.vision.datasets import CIFAR10, CIFAR100

RNG = np.random.default_rng(0)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _batch(path: Path, count: int, label_key: str, classes: int) -> None:
    """A batch as the real files hold it: a protocol-2 pickle of uint8 rows and labels."""
    entry = {
        "batch_label": "training batch 1 of 5",
        label_key: [int(v) for v in RNG.integers(0, classes, count)],
        "data": RNG.integers(0, 256, (count, 3072), dtype=np.uint8),
        "filenames": [f"img_{i}.png" for i in range(count)],
    }
    path.write_bytes(pickle.dumps(entry, protocol=2))


def build_cifar(root: Path, cls: type) -> dict[str, list]:
    """``root/<base_folder>`` with small batches; the lists of (name, md5) describing them."""
    folder = root / cls.base_folder
    folder.mkdir(parents=True)
    hundred = cls.base_folder.startswith("cifar-100")
    label_key, classes = ("fine_labels", 100) if hundred else ("labels", 10)
    lists = {}
    for attr in ("train_list", "test_list"):
        lists[attr] = []
        for i, (name, _) in enumerate(getattr(cls, attr)):
            _batch(folder / name, 3 + i, label_key, classes)
            lists[attr].append([name, _md5(folder / name)])
    names = [f"class {i}" for i in range(classes)]
    meta = folder / cls.meta["filename"]
    meta.write_bytes(pickle.dumps({cls.meta["key"]: names, "num_cases_per_batch": 3}, protocol=2))
    lists["meta"] = dict(cls.meta, md5=_md5(meta))
    return lists


def _use(monkeypatch: pytest.MonkeyPatch, classes: list[type], lists: dict) -> None:
    for cls in classes:
        for attr, value in lists.items():
            monkeypatch.setattr(cls, attr, value)


def assert_same_samples(ours, theirs) -> None:
    assert len(ours) == len(theirs) > 0
    for i in range(len(theirs)):
        (image, target), (expected, expected_target) = ours[i], theirs[i]
        assert isinstance(image, Image.Image) and image.mode == expected.mode
        assert image.size == expected.size
        np.testing.assert_array_equal(np.asarray(image), np.asarray(expected))
        assert type(target) is type(expected_target) and target == expected_target


@pytest.mark.parametrize("name", ["CIFAR10", "CIFAR100"])
@pytest.mark.parametrize("train", [True, False])
def test_samples_and_targets_are_torchvisions(
    tv: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, train: bool
) -> None:
    ours_cls, theirs_cls = (
        {"CIFAR10": CIFAR10, "CIFAR100": CIFAR100}[name],
        getattr(tv.datasets, name),
    )
    _use(monkeypatch, [ours_cls, theirs_cls], build_cifar(tmp_path, ours_cls))
    ours, theirs = ours_cls(tmp_path, train=train), theirs_cls(tmp_path, train=train)
    assert_same_samples(ours, theirs)
    assert ours.targets == theirs.targets and ours.classes == theirs.classes
    assert ours.class_to_idx == theirs.class_to_idx
    np.testing.assert_array_equal(ours.data, theirs.data)
    assert repr(ours).splitlines()[2:] == repr(theirs).splitlines()[2:]
    flipped = ours_cls(
        tmp_path, train=train, transform=lambda im: im.transpose(0), target_transform=str
    )
    image, target = flipped[0]
    assert image.tobytes() == theirs[0][0].transpose(0).tobytes() and target == str(theirs[0][1])


def test_missing_corrupt_and_malformed_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(PathNotFoundError, match="download=True") as missing:
        CIFAR10(tmp_path)
    assert missing.value.path == str(tmp_path / "cifar-10-batches-py" / "data_batch_1")
    lists = build_cifar(tmp_path, CIFAR10)
    batch = tmp_path / "cifar-10-batches-py" / "data_batch_2"
    with pytest.raises(DatasetError, match="expected md5 c99cafc1") as corrupt:
        CIFAR10(tmp_path)  # torchvision's checksums: the small batches differ
    assert corrupt.value.path == str(tmp_path / "cifar-10-batches-py" / "data_batch_1")
    _use(monkeypatch, [CIFAR10], lists)
    batch.write_bytes(pickle.dumps({"data": np.zeros((2, 10), np.uint8), "labels": [0, 1]}))
    lists["train_list"][1][1] = _md5(batch)  # the lists are this test's own
    with pytest.raises(DatasetError, match="uint8 rows of 3072 values") as bad:
        CIFAR10(tmp_path)
    assert bad.value.path == str(batch)


def test_a_pickle_that_would_run_code_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lists = build_cifar(tmp_path, CIFAR10)
    batch = tmp_path / "cifar-10-batches-py" / "test_batch"
    batch.write_bytes(pickle.dumps({"data": print, "labels": []}))
    lists["test_list"] = [["test_batch", _md5(batch)]]
    _use(monkeypatch, [CIFAR10], lists)
    with pytest.raises(DatasetError, match=r"refusing to load builtins\.print") as caught:
        CIFAR10(tmp_path, train=False)
    assert caught.value.path == str(batch)


def _archive(tmp_path: Path, served: Path) -> tuple[dict, str]:
    source = tmp_path / "source"
    lists = build_cifar(source, CIFAR10)
    archive = served / CIFAR10.filename
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source / CIFAR10.base_folder, CIFAR10.base_folder)
    return lists, _md5(archive)


def test_download_fetches_verifies_and_resumes(
    tv: ModuleType, tmp_path: Path, file_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    lists, md5 = _archive(tmp_path, file_server.root)
    _use(monkeypatch, [CIFAR10, tv.datasets.CIFAR10], lists)
    monkeypatch.setattr(CIFAR10, "url", f"{file_server.url}/{CIFAR10.filename}")
    root = tmp_path / "root"
    monkeypatch.setattr(CIFAR10, "tgz_md5", "0" * 32)
    with pytest.raises(DatasetError, match="expected md5 0+, got " + md5):
        CIFAR10(root, download=True)
    assert not (root / CIFAR10.filename).exists()
    monkeypatch.setattr(CIFAR10, "tgz_md5", md5)
    file_server.cut_after = 100
    with pytest.raises(DatasetError, match="next try resumes"):
        CIFAR10(root, download=True)
    assert (root / (CIFAR10.filename + ".part")).stat().st_size == 100
    ours = CIFAR10(root, download=True)
    assert file_server.requests[-1] == (f"/{CIFAR10.filename}", "bytes=100-")
    assert_same_samples(ours, tv.datasets.CIFAR10(root))
    count = len(file_server.requests)
    CIFAR10(root, download=True)  # already there: nothing fetched
    assert len(file_server.requests) == count


def test_dataloader_with_two_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, [CIFAR10], build_cifar(tmp_path, CIFAR10))
    ds = CIFAR10(tmp_path, transform=lambda im: torch.from_numpy(np.array(im)))
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2)
    images, targets = zip(*loader, strict=True)
    assert torch.equal(torch.cat(images), torch.from_numpy(ds.data))
    assert torch.cat(targets).tolist() == ds.targets
