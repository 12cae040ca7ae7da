"""One error rule for every loader (docs/design.md, "Errors").

A missing path raises ``PathNotFoundError``: a ``FileNotFoundError`` with the errno and
filename that the builtin ``open()`` gives (the reference), and a ``DatasetError``.
Empty input raises ``EmptyInputError`` with the same wording from a path or from bytes.
"""

from __future__ import annotations

import errno
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trivium.core.errors import (
    EMPTY_INPUT,
    NO_SUCH_PATH,
    DatasetError,
    DecodeError,
    EmptyInputError,
    PathNotFoundError,
)


def _vision() -> Any:
    return pytest.importorskip("trivium.vision.io")


def _video_reader(src: Any) -> Any:
    pytest.importorskip("av", reason="VideoReader's default backend needs PyAV")
    return _vision().VideoReader(src)


def _audio() -> Any:
    return pytest.importorskip("trivium.audio")


def _audio_ffmpeg() -> Any:
    pytest.importorskip("av", reason="the ffmpeg extra of trivium-audio needs PyAV")
    return _audio()


def _data() -> Any:
    return pytest.importorskip("trivium.data")


def _arrow_dataset(path: Any) -> Any:
    return _data().ArrowDataset(path, cache_dir=Path(path).parent / "cache")


def _image_folder(root: Any) -> Any:
    return pytest.importorskip("trivium.vision.datasets").ImageFolder(root)


def _vision_dataset(name: str, **kwargs: Any) -> Callable[[Any], Any]:
    def build(root: Any) -> Any:
        return getattr(pytest.importorskip("trivium.vision.datasets"), name)(root, **kwargs)

    return build


def _audio_folder(root: Any) -> Any:
    return pytest.importorskip("trivium.audio.datasets").AudioFolder(root)


def _librispeech(root: Any) -> Any:
    return pytest.importorskip("trivium.audio.datasets").LIBRISPEECH(root, "test-clean")


def _librimix(root: Any) -> Any:
    return pytest.importorskip("trivium.audio.datasets").LibriMix(root)


def _audio_dataset(name: str, *args: Any) -> Callable[[Any], Any]:
    return lambda root: getattr(pytest.importorskip("trivium.audio.datasets"), name)(root, *args)


# The datasets whose missing root is checked too (their hint says how to get them).
DATASET_ROOTS: dict[str, Callable[[Any], Any]] = {
    "audio.datasets.LIBRISPEECH": _librispeech,
    **{
        f"audio.datasets.{name}": _audio_dataset(name)
        for name in (
            "SPEECHCOMMANDS",
            "YESNO",
            "LJSPEECH",
            "GTZAN",
            "CMUARCTIC",
            "CMUDict",
            "VCTK_092",
            "COMMONVOICE",
            "TEDLIUM",
            "LibriLightLimited",
            "LibriSpeechBiasing",
            "FluentSpeechCommands",
            "VoxCeleb1Identification",
            "VoxCeleb1Verification",
            "IEMOCAP",
            "DR_VCTK",
        )
    },
    "audio.datasets.MUSDB_HQ": _audio_dataset("MUSDB_HQ", "train"),
    "audio.datasets.Snips": _audio_dataset("Snips", "train"),
    "audio.datasets.QUESST14": _audio_dataset("QUESST14", "docs"),
}


# name -> (call, whether it reads the input's bytes)
LOADERS: dict[str, tuple[Callable[[Any], Any], bool]] = {
    "vision.decode_image": (lambda p: _vision().decode_image(p), True),
    "vision.read_file": (lambda p: _vision().read_file(p), False),
    "vision.image_info": (lambda p: _vision().image_info(p), True),
    "vision.VideoReader": (_video_reader, True),
    "audio.load": (lambda p: _audio().load(p), True),
    "audio.info": (lambda p: _audio().info(p), True),
    "audio.load[ffmpeg]": (lambda p: _audio_ffmpeg().load(p, backend="ffmpeg"), True),
    "audio.info[ffmpeg]": (lambda p: _audio_ffmpeg().info(p, backend="ffmpeg"), True),
    "data.ParquetSource": (lambda p: list(_data().ParquetSource(p)), True),
    "data.ArrowIPCSource": (lambda p: list(_data().ArrowIPCSource(p)), True),
    "data.DataLoader": (lambda p: list(_data().DataLoader(_data().ParquetSource(p))), True),
    "data.ArrowDataset": (_arrow_dataset, True),
    "data.FileLister": (lambda p: list(_data().FileLister(p)), False),
    "vision.datasets.ImageFolder": (_image_folder, False),
    "audio.datasets.AudioFolder": (_audio_folder, False),
    "vision.datasets.CIFAR10": (_vision_dataset("CIFAR10"), False),
    "vision.datasets.CIFAR100": (_vision_dataset("CIFAR100"), False),
    "vision.datasets.MNIST": (_vision_dataset("MNIST"), False),
    "vision.datasets.FashionMNIST": (_vision_dataset("FashionMNIST"), False),
    "vision.datasets.KMNIST": (_vision_dataset("KMNIST"), False),
    "vision.datasets.EMNIST": (_vision_dataset("EMNIST", split="digits"), False),
    "vision.datasets.QMNIST": (_vision_dataset("QMNIST"), False),
    "vision.datasets.SVHN": (_vision_dataset("SVHN"), False),
    "vision.datasets.STL10": (_vision_dataset("STL10"), False),
    "vision.datasets.ImageNet": (_vision_dataset("ImageNet"), False),
    "vision.datasets.VOCDetection": (_vision_dataset("VOCDetection"), False),
    "vision.datasets.VOCSegmentation": (_vision_dataset("VOCSegmentation"), False),
    "vision.datasets.Flowers102": (_vision_dataset("Flowers102"), False),
    "vision.datasets.Food101": (_vision_dataset("Food101"), False),
    "vision.datasets.OxfordIIITPet": (_vision_dataset("OxfordIIITPet"), False),
    "vision.datasets.DTD": (_vision_dataset("DTD"), False),
    "vision.datasets.GTSRB": (_vision_dataset("GTSRB"), False),
    "vision.datasets.Caltech101": (_vision_dataset("Caltech101"), False),
    "vision.datasets.CelebA": (_vision_dataset("CelebA"), False),
    "vision.datasets.SBDataset": (_vision_dataset("SBDataset"), False),
    "vision.datasets.WIDERFace": (_vision_dataset("WIDERFace"), False),
    "vision.datasets.Kitti": (_vision_dataset("Kitti"), False),
    "vision.datasets.Cityscapes": (_vision_dataset("Cityscapes"), False),
    "vision.datasets.Places365": (_vision_dataset("Places365"), False),
    "vision.datasets.INaturalist": (_vision_dataset("INaturalist"), False),
    "vision.datasets.Kinetics": (_vision_dataset("Kinetics", frames_per_clip=8), False),
    "vision.datasets.UCF101": (
        _vision_dataset("UCF101", annotation_path="lists", frames_per_clip=8),
        False,
    ),
    "vision.datasets.HMDB51": (
        _vision_dataset("HMDB51", annotation_path="lists", frames_per_clip=8),
        False,
    ),
}
BYTES_LOADERS = ["vision.decode_image", "vision.image_info", "vision.VideoReader"]
BYTES_LOADERS += ["audio.load", "audio.info", "audio.load[ffmpeg]", "audio.info[ffmpeg]"]


@pytest.mark.parametrize("name", [*LOADERS, *DATASET_ROOTS])
def test_a_missing_path_raises_what_open_raises(name: str, tmp_path: Path) -> None:
    call = DATASET_ROOTS[name] if name in DATASET_ROOTS else LOADERS[name][0]
    missing = tmp_path / "missing"
    with pytest.raises(FileNotFoundError) as reference:
        open(missing, "rb")  # noqa: SIM115 - the builtin is the reference
    with pytest.raises(PathNotFoundError) as caught:
        call(missing)
    error = caught.value
    assert isinstance(error, FileNotFoundError) and isinstance(error, DatasetError)
    assert error.errno == reference.value.errno == errno.ENOENT
    assert error.path is not None and error.filename == error.path
    assert re.fullmatch(rf"{re.escape(error.path)}: {NO_SUCH_PATH}(; .+)?", str(error))
    # A dataset's hint may name the split's own folder under the root.
    assert Path(error.path) == missing or missing in Path(error.path).parents


def test_a_missing_librimix_folder_names_it_and_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(PathNotFoundError) as caught:
        _librimix(tmp_path)
    assert str(caught.value).startswith(f"{caught.value.path}: {NO_SUCH_PATH}; ")


@pytest.mark.parametrize("name", [n for n, (_, reads) in LOADERS.items() if reads])
def test_an_empty_file_says_empty_input_naming_it(name: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    with pytest.raises(EmptyInputError) as caught:
        LOADERS[name][0](empty)
    assert caught.value.path == str(empty)
    assert str(caught.value) == f"{empty}: {EMPTY_INPUT}"


@pytest.mark.parametrize("name", BYTES_LOADERS)
@pytest.mark.parametrize("data", [b"", bytearray(), memoryview(b"")], ids=type)
def test_empty_bytes_say_the_same_without_a_path(name: str, data: Any) -> None:
    with pytest.raises(EmptyInputError) as caught:
        LOADERS[name][0](data)
    assert caught.value.path is None and str(caught.value) == EMPTY_INPUT


def test_the_rule_survives_pickling_into_a_worker() -> None:
    error = pickle.loads(pickle.dumps(PathNotFoundError(path="a/b.wav")))
    assert type(error) is PathNotFoundError
    assert (error.errno, error.filename) == (errno.ENOENT, "a/b.wav")
    assert str(error) == f"a/b.wav: {NO_SUCH_PATH}"
    empty = pickle.loads(pickle.dumps(EmptyInputError(path="c.png")))
    assert type(empty) is EmptyInputError and str(empty) == f"c.png: {EMPTY_INPUT}"


class _Files:
    """A map-style dataset of file contents, read with ``open()`` (the builtin's errors)."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> bytes:
        with open(self.paths[index], "rb") as f:
            return f.read()

    def item_path(self, index: int) -> str:
        return str(self.paths[index])


@pytest.mark.parametrize("workers", [0, 1])
def test_the_rule_survives_a_dataloader_worker(tmp_path: Path, workers: int) -> None:
    """What a worker process raises reaches the main process as the same error."""
    vision = _vision()
    (tmp_path / "a.jpg").write_bytes(b"")
    missing = tmp_path / "missing.jpg"
    ds = _Files([tmp_path / "a.jpg"])
    DataLoader = _data().DataLoader
    with pytest.raises(EmptyInputError) as empty:
        list(DataLoader(ds, batch_size=1, num_workers=workers, collate_fn=lambda b: [
            vision.decode_image(x) for x in b
        ]))  # fmt: skip
    assert empty.value.path == str(tmp_path / "a.jpg")  # named by the loader: bytes had none
    assert str(empty.value) == f"{tmp_path / 'a.jpg'}: {EMPTY_INPUT}"
    with pytest.raises(PathNotFoundError) as caught:
        list(DataLoader(_Files([missing]), batch_size=1, num_workers=workers))
    error = caught.value
    assert (error.errno, error.filename, str(error)) == (
        errno.ENOENT,
        str(missing),
        f"{missing}: {NO_SUCH_PATH}",
    )


@pytest.mark.parametrize("reader", ["ParquetSource", "ArrowDataset", "DataLoader"])
def test_a_decompression_bomb_says_what_it_declares_and_the_limit(
    tmp_path: Path, reader: str
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    data = _data()
    path = tmp_path / "zeros.parquet"
    pq.write_table(pa.table({"x": [0] * 100_000}), path, use_dictionary=False)
    read = {
        "ParquetSource": lambda: list(data.ParquetSource(path, max_uncompressed_bytes=1000)),
        "ArrowDataset": lambda: data.ArrowDataset(
            path, cache_dir=tmp_path, max_uncompressed_bytes=1000
        ),
        "DataLoader": lambda: list(
            data.DataLoader(data.ParquetSource(path, max_uncompressed_bytes=1000))
        ),
    }[reader]
    with pytest.raises(DecodeError) as caught:
        read()
    assert caught.value.path == str(path)
    assert re.fullmatch(
        rf"{re.escape(str(path))}: row group 0 declares [\d,]+ bytes uncompressed, over the "
        r"limit max_uncompressed_bytes=1,000 \(.+\)",
        str(caught.value),
    )
