"""A real folder trains to the end here, as it does with torchvision's ``ImageFolder``.

The folder holds every shipped test image (JPEG and PNG: gray, palette, CMYK,
progressive, arithmetic, EXIF, 16-bit, lossless), files of every other listed format
written by Pillow (WebP lossy, lossless and with alpha, BMP, TIFF 8 and 16-bit, PPM,
PGM 8 and 16-bit), damaged-but-readable JPEGs, and files nothing can decode. Through a
torchvision-v2-style pipeline and through the fused decode, in torch's ``DataLoader``
with two workers and in ``trivium.data.DataLoader``: the epoch ends, every readable
file is a sample, every refused file is named, every recovered file is named, and the
default samples are Pillow's RGB pixels wherever Pillow reads the file as 8-bit.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from damaged_jpegs import DAMAGES
from image_assets import (
    JPEG_DIR,
    LOSSLESS_JPEGS,
    RECOVERED_CORRUPT,
    WARNING_JPEGS,
    refused_files,
    valid_jpegs,
    valid_pngs,
)
from PIL import Image

from trivium.core.errors import DecodeWarning, SkippedSamplesWarning, TriviumError
from trivium.data import DataLoader
from trivium.vision import transforms as T
from trivium.vision.datasets import ImageFolder

PHOTO = JPEG_DIR / "tv-grace_hopper_517x606.jpg"
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
SIZE = 32


@dataclasses.dataclass
class Folder:
    root: Path
    readable: list[Path]  # every file that must become a sample
    recovered: set[Path]  # damaged, decoded with a DecodeWarning
    refused: set[Path]  # nothing decodes them: named, skipped


def _write(path: Path, image: Image.Image, fmt: str, **options) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    path.write_bytes(buffer.getvalue())
    return path


def _other_formats(folder: Path) -> list[Path]:
    """The photo (made small) in every listed format Pillow writes, 8 and 16-bit."""
    rgb = Image.open(PHOTO).convert("RGB").resize((61, 72))
    rgba = rgb.copy()
    rgba.putalpha(Image.linear_gradient("L").resize(rgb.size))
    gray16 = Image.fromarray((np.asarray(rgb.convert("L"), np.uint16) * 257).astype(np.uint16))
    return [
        _write(folder / "lossy.webp", rgb, "WEBP", quality=80),
        _write(folder / "lossless-alpha.webp", rgba, "WEBP", lossless=True),
        _write(folder / "photo.bmp", rgb, "BMP"),
        _write(folder / "photo.tif", rgb, "TIFF"),
        _write(folder / "gray16.tiff", gray16, "TIFF"),
        _write(folder / "photo.ppm", rgb, "PPM"),
        _write(folder / "gray.pgm", rgb.convert("L"), "PPM"),
        _write(folder / "gray16.pgm", gray16, "PPM"),
        _write(folder / "palette.bmp", rgb.convert("P"), "BMP"),
    ]


def _copy(sources: list[Path], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy(source, folder / source.name)) for source in sources]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Folder:
    root = tmp_path_factory.mktemp("photos")
    jpegs = _copy([*valid_jpegs(), JPEG_DIR / next(iter(LOSSLESS_JPEGS))], root / "jpeg")
    pngs = _copy(valid_pngs(), root / "png")
    others = _other_formats(root / "other")
    photo = PHOTO.read_bytes()
    damaged = root / "damaged"
    made = []
    for name, damage in DAMAGES.items():
        made.append(damaged / f"{name.replace(' ', '-')}.jpg")
        made[-1].parent.mkdir(exist_ok=True)
        made[-1].write_bytes(damage(photo))
    refused = _copy(refused_files(), damaged)
    (damaged / "notes.jpg").write_text("not an image")
    refused.append(damaged / "notes.jpg")
    recovered = set(made) | {p for p in refused if p.name in RECOVERED_CORRUPT}
    recovered |= {p for p in jpegs if p.name in WARNING_JPEGS}
    refused_set = set(refused) - recovered
    readable = jpegs + pngs + others + sorted(recovered)
    return Folder(root, readable, recovered, refused_set)


def _pipeline(crop: torch.nn.Module) -> T.Compose:
    """torchvision v2's training steps after ``crop``."""
    steps = [T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)]
    return T.Compose([crop, *steps])


PIPELINES = {
    "v2-style": lambda: _pipeline(T.RandomResizedCrop(SIZE)),
    "fused-decode": lambda: _pipeline(T.DecodeRandomResizedCrop(SIZE)),
}


def test_image_folder_lists_every_file_of_the_folder(folder: Folder) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no format left out: nothing to warn about
        ds = ImageFolder(folder.root)
    listed = {Path(path) for path, _ in ds.samples}
    assert listed == set(folder.readable) | folder.refused
    assert ds.classes == ["damaged", "jpeg", "other", "png"]


def _pillow_8bit_rgb(path: Path) -> np.ndarray | None:
    """Pillow's RGB of ``path`` where Pillow reads it as an 8-bit image, else None."""
    try:
        image = Image.open(path)
        image.load()
    except OSError:  # lossless JPEG, a damaged file Pillow refuses
        return None
    if image.mode not in ("1", "L", "LA", "P", "PA", "RGB", "RGBA", "CMYK", "YCbCr"):
        return None  # 16-bit: the high-byte rule, tested in test_datasets_folder.py
    return np.asarray(image.convert("RGB")).transpose(2, 0, 1)


def test_default_samples_are_pillows_rgb_pixels(folder: Folder) -> None:
    ds = ImageFolder(folder.root, on_error="skip")
    compared = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DecodeWarning)
        for path in folder.readable:
            sample = ds.loader(str(path))
            assert sample.dtype == torch.uint8 and sample.ndim == 3 and sample.shape[0] == 3
            expected = _pillow_8bit_rgb(path)
            if expected is not None:
                np.testing.assert_array_equal(sample.numpy(), expected, err_msg=str(path))
                compared += 1
    assert compared >= len(folder.readable) - 12  # all but the 16-bit and lossless files


def _epoch(loader) -> int:
    """The samples of one epoch, checking every batch is a normalised float batch."""
    samples = 0
    for images, labels in loader:
        assert images.dtype == torch.float32 and images.shape[1:] == (3, SIZE, SIZE)
        assert torch.isfinite(images).all()
        assert images.shape[0] == labels.shape[0]
        samples += images.shape[0]
    return samples


def _loaders(ds: ImageFolder) -> dict[str, object]:
    return {
        "torch": torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=2),
        "trivium": DataLoader(ds, batch_size=8, shuffle=True, num_workers=2, seed=0),
    }


@pytest.mark.parametrize("loader_kind", ["torch", "trivium"])
@pytest.mark.parametrize("pipeline", list(PIPELINES))
def test_an_epoch_ends_and_names_every_file_it_could_not_use(
    folder: Folder, pipeline: str, loader_kind: str
) -> None:
    ds = ImageFolder(folder.root, transform=PIPELINES[pipeline](), on_error="skip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        samples = _epoch(_loaders(ds)[loader_kind])
    assert samples == len(ds)  # a skipped index gives the next readable sample
    report = ds.skip_report
    skipped = {Path(p) for p in report.skipped_files}
    recovered = {Path(p) for p in report.recovered_files}
    if pipeline == "fused-decode":
        # The fused decode reads only the rows its crop needs: a file whose damage
        # lies below the crop (a cut-short file) gives the crop's intact pixels.
        assert skipped <= folder.refused and recovered == folder.recovered
    else:
        assert skipped == folder.refused and recovered == folder.recovered
    if loader_kind == "trivium":  # the epoch's end names the first files (the workers' too)
        (message,) = [str(w.message) for w in caught if w.category is SkippedSamplesWarning]
        assert f"{len(skipped)} samples skipped" in message
        assert sum(str(p) in message for p in skipped) == 3


@pytest.mark.parametrize("pipeline", list(PIPELINES))
def test_without_skipping_the_first_refused_file_stops_the_epoch_naming_it(
    folder: Folder, pipeline: str
) -> None:
    ds = ImageFolder(folder.root, transform=PIPELINES[pipeline]())
    loader = torch.utils.data.DataLoader(ds, batch_size=8, num_workers=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DecodeWarning)
        with pytest.raises(Exception) as caught:  # torch re-raises it in the parent
            _epoch(loader)
    assert "DecodeError" in str(caught.value) or isinstance(caught.value, TriviumError)
    assert any(str(p) in str(caught.value) for p in folder.refused), str(caught.value)
