"""JPEG encode at 4:2:0, 4:2:2 and 4:4:4: the encoder's own RGB -> YCbCr conversion and
chroma downsampling give the bytes libjpeg's (through Pillow) gives, at every edge of the
vector loop."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR
from PIL import Image

from trivium.vision.io import encode_jpeg, read_image

# (height, width): widths around the 32-pixel vector groups and the 16-pixel MCU, odd
# heights (a row padded before downsampling) and heights past one 16-row MCU row.
SIZES = [(1, 1), (2, 3), (5, 15), (17, 16), (16, 17), (31, 31), (33, 32), (7, 33)]
SIZES += [(9, 47), (3, 64), (64, 65), (13, 100)]


def pillow_jpeg(
    hwc: np.ndarray, quality: int, subsampling: str = "4:2:0", **options: bool
) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(hwc).save(buffer, "JPEG", quality=quality, subsampling=subsampling, **options)
    return buffer.getvalue()


def samples(kind: str, height: int, width: int) -> np.ndarray:
    rng = np.random.default_rng(height * 1000 + width)
    if kind == "noise":
        return rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    if kind == "extremes":  # every channel at 0 or 255: the rounding at both ends
        return (rng.integers(0, 2, (height, width, 3)) * 255).astype(np.uint8)
    y, x, c = np.meshgrid(np.arange(height), np.arange(width), np.arange(3), indexing="ij")
    return ((x * 7 + y * 3 + c * 85) % 256).astype(np.uint8)


def ours(
    hwc: np.ndarray, quality: int, planar: bool, subsampling: str = "4:2:0", **options: bool
) -> bytes:
    image = torch.from_numpy(hwc).permute(2, 0, 1)  # a [C, H, W] view of (H, W, C) memory
    if planar:
        image = image.contiguous()
    return bytes(encode_jpeg(image, quality, subsampling=subsampling, **options).numpy())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kind", ["noise", "extremes", "gradient"])
@pytest.mark.parametrize("planar", [False, True], ids=["hwc", "chw"])
@pytest.mark.parametrize("subsampling", ["4:2:0", "4:2:2", "4:4:4"])
def test_bytes_equal_libjpeg_conversion(
    size: tuple[int, int], kind: str, planar: bool, subsampling: str
) -> None:
    hwc = samples(kind, *size)
    for quality in (75, 90, 100):
        assert ours(hwc, quality, planar, subsampling) == pillow_jpeg(hwc, quality, subsampling)


@pytest.mark.parametrize(
    "options", [{"progressive": True}, {"optimize": True}, {"progressive": True, "optimize": True}]
)
@pytest.mark.parametrize("subsampling", ["4:2:0", "4:2:2", "4:4:4"])
def test_progressive_and_optimized_bytes_equal_libjpeg(
    options: dict[str, bool], subsampling: str
) -> None:
    hwc = samples("noise", 45, 77)
    expected = pillow_jpeg(hwc, 90, subsampling, **options)
    assert ours(hwc, 90, False, subsampling, **options) == expected


@pytest.mark.parametrize("size", [(606, 517), (1280, 1920)], ids=["517x606", "1920x1280"])
@pytest.mark.parametrize("subsampling", ["4:2:0", "4:2:2", "4:4:4"])
def test_photo_bytes_equal_libjpeg(size: tuple[int, int], subsampling: str) -> None:
    photo = read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")
    hwc = np.asarray(Image.fromarray(photo.permute(1, 2, 0).numpy()).resize(size[::-1]))
    assert ours(hwc, 90, False, subsampling) == pillow_jpeg(hwc, 90, subsampling)
