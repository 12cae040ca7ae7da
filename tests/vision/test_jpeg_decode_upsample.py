"""The decoder's own chroma upsampling and YCbCr -> RGB (csrc/jpeg_upsample.cpp).

An RGB decode of an 8-bit 4:2:0 or 4:2:2 JPEG, where libjpeg would upsample the chroma
2x with its fancy filter, takes raw YCbCr planes from libjpeg and upsamples and
converts them itself (on AVX2 CPUs). Its bytes must equal libjpeg-turbo's own fancy
upsampling and conversion: Pillow's decode, and our RGBA decode (which libjpeg
converts, then is cut to RGB).

DCT scaling changes which decodes upsample: libjpeg-turbo fancy-upsamples 4:2:2 at
2/8 .. 8/8; below 8/8 it decodes 4:2:0's chroma at the luma's scaled size (no
upsampling), and at 1/8 it repeats samples. Every scale 1/8 .. 8/8 is checked, so the
tests hold whichever path a scale takes.
"""

from __future__ import annotations

import io
import warnings
from fractions import Fraction

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR
from PIL import Image, ImageFile

import trivium.core
from trivium.core.errors import DecodeError, DecodeWarning
from trivium.vision.io import ImageReadMode, decode_jpeg

SUBSAMPLINGS = {"4:2:0": 2, "4:2:2": 1}  # Pillow's subsampling codes
PHOTO = JPEG_DIR / "tv-grace_hopper_517x606.jpg"
# Sizes around the MCU (16 pixels), the 32-pixel vector and the chroma edge cases
# (libjpeg upsamples chroma rows of 1 or 2 samples by repetition: widths 1..4).
EDGE = [1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 34, 47, 48, 49, 63, 64, 65, 70]
SCALES = [Fraction(k, 8) for k in range(1, 9)]  # every scale decode_jpeg takes


def _jpeg(pixels: np.ndarray, subsampling: int, quality: int = 95, **options: object) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(
        buffer, "JPEG", quality=quality, subsampling=subsampling, **options
    )
    return buffer.getvalue()


def _noise(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """Noise over a colour gradient: every chroma value, and edges in every block."""
    yy, xx = np.mgrid[0:height, 0:width]
    base = np.stack(
        [xx * 255 // max(width - 1, 1), yy * 255 // max(height - 1, 1), 255 - xx % 256], -1
    )
    noise = rng.integers(-60, 61, (height, width, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def _pillow_decode(data: bytes, scale: Fraction = Fraction(1)) -> np.ndarray | None:
    """Pillow's RGB decode as [C, H, W], at 1/2, 1/4 and 1/8 through ``draft`` (libjpeg's
    DCT scaling with its fancy upsampling); None at the scales draft does not give, and
    for images narrower or lower than 1/scale pixels (where draft picks another)."""
    image = Image.open(io.BytesIO(data))
    if scale != 1:
        width, height = image.size
        k = scale.denominator
        if scale.numerator != 1 or min(width, height) < k:
            return None
        image.draft("RGB", (width // k, height // k))  # draft takes the scale 1/k
        assert image.size == (-(-width // k), -(-height // k))
    return np.asarray(image.convert("RGB")).transpose(2, 0, 1)


def _assert_like_libjpeg(data: bytes, scale: Fraction = Fraction(1)) -> torch.Tensor:
    """Our RGB decode at `scale` equals our RGBA decode's RGB and, where draft gives the
    scale, Pillow's, byte for byte."""
    options = {} if scale == 1 else {"scale": scale}
    ours = decode_jpeg(data, ImageReadMode.RGB, **options)
    assert torch.equal(decode_jpeg(data, ImageReadMode.RGB_ALPHA, **options)[:3], ours)
    pillow = _pillow_decode(data, scale)
    if pillow is not None:
        np.testing.assert_array_equal(ours.numpy(), pillow)
    return ours


def _assert_like_libjpeg_at_every_scale(data: bytes) -> None:
    for scale in SCALES:
        _assert_like_libjpeg(data, scale)


@pytest.mark.parametrize("subsampling", SUBSAMPLINGS.values(), ids=SUBSAMPLINGS.keys())
def test_every_width_to_70_matches_libjpeg(subsampling: int) -> None:
    rng = np.random.default_rng(subsampling)
    for width in range(1, 71):
        for height in (1, 2, 7, 16, 17, 33):
            _assert_like_libjpeg_at_every_scale(_jpeg(_noise(rng, height, width), subsampling))


@pytest.mark.parametrize("subsampling", SUBSAMPLINGS.values(), ids=SUBSAMPLINGS.keys())
def test_every_height_to_70_matches_libjpeg(subsampling: int) -> None:
    rng = np.random.default_rng(10 + subsampling)
    for height in range(1, 71):
        for width in (3, 5, 17, 33, 64, 65):
            _assert_like_libjpeg_at_every_scale(_jpeg(_noise(rng, height, width), subsampling))


@pytest.mark.parametrize("subsampling", SUBSAMPLINGS.values(), ids=SUBSAMPLINGS.keys())
def test_edge_sizes_progressive_and_restarts_match_libjpeg(subsampling: int) -> None:
    rng = np.random.default_rng(20 + subsampling)
    for height in EDGE:
        for width in EDGE:
            pixels = _noise(rng, height, width)
            _assert_like_libjpeg_at_every_scale(_jpeg(pixels, subsampling, progressive=True))
            _assert_like_libjpeg_at_every_scale(_jpeg(pixels, subsampling, restart_marker_blocks=1))


@pytest.mark.parametrize("subsampling", SUBSAMPLINGS.values(), ids=SUBSAMPLINGS.keys())
def test_wide_rows_match_libjpeg(subsampling: int) -> None:
    """Widths around the 512-pixel strips a row is converted in."""
    rng = np.random.default_rng(30 + subsampling)
    for width in (495, 511, 512, 513, 527, 529, 1023, 1024, 1025, 1057, 2049):
        _assert_like_libjpeg_at_every_scale(_jpeg(_noise(rng, 19, width), subsampling))


@pytest.mark.parametrize("subsampling", SUBSAMPLINGS.values(), ids=SUBSAMPLINGS.keys())
def test_saturated_colours_are_clamped_like_libjpeg(subsampling: int) -> None:
    """Pure colours in 2x2 cells: luma plus chroma leaves 0..255 and is clamped."""
    rng = np.random.default_rng(40 + subsampling)
    corners = np.array([[r, g, b] for r in (0, 255) for g in (0, 255) for b in (0, 255)])
    cells = corners[rng.integers(0, 8, (40, 50))].astype(np.uint8)
    pixels = cells.repeat(2, axis=0).repeat(2, axis=1)
    for quality in (50, 100):
        data = _jpeg(pixels, subsampling, quality=quality)
        ours = _assert_like_libjpeg(data)
        assert int(ours.min()) == 0 and int(ours.max()) == 255
        _assert_like_libjpeg_at_every_scale(data)


@pytest.mark.parametrize("subsampling", SUBSAMPLINGS.values(), ids=SUBSAMPLINGS.keys())
def test_every_chroma_pair_converts_like_libjpeg(subsampling: int) -> None:
    """YCbCr samples written as they are (Pillow's "YCbCr" mode): chroma ramps whose
    upsampled values take every (Cb, Cr) pair, under random luma."""
    rng = np.random.default_rng(70 + subsampling)
    yy, xx = np.mgrid[0:1024, 0:1024]
    ycc = np.stack([rng.integers(0, 256, (1024, 1024)), xx // 4, yy // 4], -1).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(ycc, "YCbCr").save(buffer, "JPEG", quality=100, subsampling=subsampling)
    data = buffer.getvalue()
    raw = Image.open(io.BytesIO(data))
    raw.draft("YCbCr", raw.size)  # libjpeg's upsampled planes, not converted
    planes = np.asarray(raw).astype(np.int32)
    assert len(np.unique(planes[..., 1] * 256 + planes[..., 2])) == 256 * 256
    _assert_like_libjpeg(data)


@pytest.mark.parametrize("subsampling", SUBSAMPLINGS.values(), ids=SUBSAMPLINGS.keys())
@pytest.mark.parametrize("progressive", [False, True])
def test_photo_matches_libjpeg(subsampling: int, progressive: bool) -> None:
    photo = Image.open(PHOTO).convert("RGB")
    for size in [photo.size, (1920, 1280), (961, 719)]:
        pixels = np.asarray(photo.resize(size, Image.Resampling.BILINEAR))
        data = _jpeg(pixels, subsampling, quality=90, progressive=progressive)
        _assert_like_libjpeg_at_every_scale(data)


def test_assets_match_libjpeg() -> None:
    for name in [
        "tv-grace_hopper_517x606.jpg",
        "jd-mjpeg.jpg",
        "jd-restarts.jpg",
        "jd-moz-jpg-progressive.jpg",
        "ljt-testorig.jpg",
        "ljt-testimgint.jpg",
        "ljt-testimgari.jpg",
        "pil-hopper.jpg",
    ]:
        _assert_like_libjpeg_at_every_scale((JPEG_DIR / name).read_bytes())


@pytest.mark.parametrize("scale", [Fraction(1), Fraction(1, 2), Fraction(3, 8)], ids=str)
def test_list_decode_on_threads_matches_single_decodes(scale: Fraction) -> None:
    rng = np.random.default_rng(50)
    inputs = [
        _jpeg(_noise(rng, int(h), int(w)), subsampling, progressive=bool(p))
        for h, w, subsampling, p in zip(
            rng.integers(1, 300, 40),
            rng.integers(1, 300, 40),
            [2, 1] * 20,
            [0, 0, 1, 1] * 10,
            strict=True,
        )
    ]
    previous = trivium.core.get_num_threads()
    trivium.core.set_num_threads(2)
    try:
        batch = decode_jpeg(inputs, ImageReadMode.RGB, scale=scale)
    finally:
        trivium.core.set_num_threads(previous)
    for data, image in zip(inputs, batch, strict=True):
        assert torch.equal(image, _assert_like_libjpeg(data, scale))


@pytest.mark.parametrize("subsampling", SUBSAMPLINGS.values(), ids=SUBSAMPLINGS.keys())
@pytest.mark.parametrize("scale", [Fraction(1), Fraction(1, 2), Fraction(3, 4)], ids=str)
def test_truncated_file_decodes_like_libjpeg(subsampling: int, scale: Fraction) -> None:
    data = _jpeg(_noise(np.random.default_rng(60), 120, 150), subsampling)
    truncated = data[: len(data) * 2 // 3]
    with pytest.raises(DecodeError, match="only part of the image decodes"):
        decode_jpeg(truncated, ImageReadMode.RGB, scale=scale)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = decode_jpeg(truncated, ImageReadMode.RGB, scale=scale, strict=False)
        rgba = decode_jpeg(truncated, ImageReadMode.RGB_ALPHA, scale=scale, strict=False)
    assert [w.category for w in caught] == [DecodeWarning, DecodeWarning]
    assert torch.equal(rgba[:3], ours)
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    try:
        pillow = _pillow_decode(truncated, scale)
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = False
    if scale != Fraction(3, 4):  # draft gives 1/2^n only
        np.testing.assert_array_equal(ours.numpy(), pillow)
