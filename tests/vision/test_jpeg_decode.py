"""JPEG decode against Pillow: every valid asset, read modes, scaled and region decode."""

from __future__ import annotations

import io
import math
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from image_assets import CORRUPT_DIR, JPEG_DIR, pillow_array, psnr, valid_jpegs
from PIL import Image, ImageFile, ImageOps

from trivium.core.errors import DecodeError, DecodeWarning, UnsupportedFormatError
from trivium.vision.io import (
    ImageReadMode,
    decode_jpeg,
    encode_jpeg,
    image_info,
    read_file,
)

JPEGS = valid_jpegs()
PHOTO = JPEG_DIR / "tv-grace_hopper_517x606.jpg"


def _pillow_encoded(subsampling: int, progressive: bool = False, mode: str = "RGB") -> bytes:
    """The photo re-encoded by Pillow (an independent encoder) with the given options."""
    buffer = io.BytesIO()
    image = Image.open(PHOTO).convert(mode)
    options = {} if mode == "L" else {"subsampling": subsampling}
    image.save(buffer, "JPEG", quality=90, progressive=progressive, **options)
    return buffer.getvalue()


@pytest.mark.parametrize("path", JPEGS, ids=lambda p: p.name)
def test_unchanged_matches_pillow(path: Path) -> None:
    image = decode_jpeg(read_file(path))
    reference = pillow_array(path, "L" if image.shape[0] == 1 else "RGB")
    np.testing.assert_array_equal(image.numpy(), reference)


@pytest.mark.parametrize("path", JPEGS, ids=lambda p: p.name)
def test_rgb_and_alpha_modes_match_pillow(path: Path) -> None:
    data = read_file(path)
    rgb = decode_jpeg(data, ImageReadMode.RGB)
    np.testing.assert_array_equal(rgb.numpy(), pillow_array(path, "RGB"))
    rgba = decode_jpeg(data, ImageReadMode.RGB_ALPHA)
    assert torch.equal(rgba[:3], rgb) and bool((rgba[3] == 255).all())


def _pillow_gray(path: Path) -> np.ndarray:
    """Pillow's gray decode: libjpeg's own Y output (draft "L"), else RGB -> L."""
    image = Image.open(path)
    image.draft("L", image.size)
    return np.asarray(image.convert("L"))[None]


@pytest.mark.parametrize("path", JPEGS, ids=lambda p: p.name)
def test_gray_modes_match_pillow(path: Path) -> None:
    data = read_file(path)
    gray = decode_jpeg(data, ImageReadMode.GRAY)
    np.testing.assert_array_equal(gray.numpy(), _pillow_gray(path))
    gray_alpha = decode_jpeg(data, ImageReadMode.GRAY_ALPHA)
    assert torch.equal(gray_alpha[:1], gray) and bool((gray_alpha[1] == 255).all())


@pytest.mark.parametrize(
    ("subsampling", "label"), [(0, "4:4:4"), (1, "4:2:2"), (2, "4:2:0")], ids=lambda v: str(v)
)
@pytest.mark.parametrize("progressive", [False, True])
def test_subsamplings_and_progressive_match_pillow(subsampling, label, progressive) -> None:
    data = _pillow_encoded(subsampling, progressive)
    assert image_info(data).progressive == progressive
    np.testing.assert_array_equal(decode_jpeg(data).numpy(), pillow_array(data, "RGB"))


def test_440_subsampling_matches_pillow() -> None:
    photo = decode_jpeg(read_file(PHOTO))
    data = encode_jpeg(photo, quality=90, subsampling="4:4:0")
    np.testing.assert_array_equal(
        decode_jpeg(data).numpy(), pillow_array(bytes(data.numpy()), "RGB")
    )


def test_cmyk_adobe_is_converted_like_pillow() -> None:
    path = JPEG_DIR / "tv-cmyk_pytorch.jpg"
    assert image_info(read_file(path)).color_space == "CMYK"
    np.testing.assert_array_equal(decode_jpeg(read_file(path)).numpy(), pillow_array(path, "RGB"))
    gray = decode_jpeg(read_file(path), ImageReadMode.GRAY).numpy().astype(int)
    assert np.abs(gray - pillow_array(path, "L").astype(int)).max() <= 1


def test_ycck_is_converted_like_pillow() -> None:
    turbojpeg = pytest.importorskip("turbojpeg")
    try:
        jpeg = turbojpeg.TurboJPEG()
    except Exception as e:  # the shared library is missing
        pytest.skip(f"libturbojpeg unavailable: {e}")
    cmyk = np.asarray(Image.open(PHOTO).convert("CMYK"))
    # TurboJPEG writes CMYK input as an Adobe YCCK JPEG.
    data = jpeg.encode(cmyk, quality=95, pixel_format=turbojpeg.TJPF_CMYK)
    assert image_info(data).color_space == "YCCK"
    ours = decode_jpeg(data).numpy().astype(int)
    assert np.abs(ours - pillow_array(data, "RGB").astype(int)).max() <= 1


def test_restart_markers_and_arithmetic_coding() -> None:
    for name in ("jd-restarts.jpg", "ljt-testimgari.jpg"):
        np.testing.assert_array_equal(
            decode_jpeg(read_file(JPEG_DIR / name)).numpy(), pillow_array(JPEG_DIR / name, "RGB")
        )


def test_lossless_jpeg_decodes_or_raises_unsupported() -> None:
    # Its pixels are checked against a reference in test_jpeg_precision.py; a build
    # on a libjpeg without the lossless process (before 3.0) refuses the SOF3 marker.
    path = JPEG_DIR / "jd-lossless-jpeg_lossless_sel1.jpg"
    try:
        image = decode_jpeg(read_file(path))
    except UnsupportedFormatError as e:
        assert str(path) in str(UnsupportedFormatError(e.reason, path=path))
        assert "SOF" in str(e)
    else:
        assert image.dtype == torch.uint16 and image.shape == (1, 256, 256)


@pytest.mark.parametrize("eighths", range(1, 9))
def test_scaled_decode_size_and_pixels(eighths: int) -> None:
    data = read_file(PHOTO)
    image = decode_jpeg(data, scale=Fraction(eighths, 8))
    h, w = math.ceil(606 * eighths / 8), math.ceil(517 * eighths / 8)
    assert image.shape == (3, h, w)
    pil = Image.open(PHOTO).convert("RGB")
    if 8 % eighths == 0:
        # At 1/2, 1/4, 1/8 DCT scaling is close to averaging each n x n block.
        reference, bound = np.asarray(pil.reduce(8 // eighths)), 40
    else:  # other factors resample off the pixel grid: a looser sanity bound
        reference, bound = np.asarray(pil.resize((w, h), Image.Resampling.BICUBIC)), 26
    assert psnr(image.numpy().transpose(1, 2, 0), reference) >= bound


@pytest.mark.parametrize("factor", [2, 4, 8])
def test_scaled_decode_matches_pillow_draft(factor: int) -> None:
    image = decode_jpeg(read_file(PHOTO), scale=1 / factor)
    pil = Image.open(PHOTO)
    pil.draft("RGB", (517 // factor, 606 // factor))
    assert pil.size == (image.shape[2], image.shape[1])
    # Pillow's draft mode picks the fast integer IDCT; we keep the accurate one.
    assert psnr(image.numpy().transpose(1, 2, 0), np.asarray(pil.convert("RGB"))) >= 38


def test_scale_accepts_floats_and_fractions_only_of_eighths() -> None:
    data = read_file(PHOTO)
    assert decode_jpeg(data, scale=0.375).shape == decode_jpeg(data, scale=Fraction(3, 8)).shape
    with pytest.raises(ValueError, match="scale must be one of"):
        decode_jpeg(data, scale=0.3)
    with pytest.raises(ValueError, match="not both"):
        decode_jpeg(data, scale=0.5, min_size=(10, 10))


@pytest.mark.parametrize(
    "min_size", [(1, 1), (76, 10), (77, 65), (224, 224), (606, 517), (999, 999)]
)
def test_min_size_picks_the_smallest_covering_scale(min_size: tuple[int, int]) -> None:
    data = read_file(PHOTO)
    image = decode_jpeg(data, min_size=min_size)
    covering = [
        m
        for m in range(1, 9)
        if math.ceil(606 * m / 8) >= min_size[0] and math.ceil(517 * m / 8) >= min_size[1]
    ]
    expected = min(covering) if covering else 8
    assert image.shape[1:] == (math.ceil(606 * expected / 8), math.ceil(517 * expected / 8))


ROI_FILES = [
    "tv-grace_hopper_517x606.jpg",
    "jd-rgb.jpg",
    "tv-gray_pytorch.jpg",
    "tv-cmyk_pytorch.jpg",
    "jd-moz-jpg-progressive.jpg",
    "jd-restarts.jpg",
    "jd-mjpeg.jpg",
]


@pytest.mark.parametrize("name", ROI_FILES)
@pytest.mark.parametrize("eighths", [8, 4, 3, 1])
def test_roi_equals_cropping_the_full_decode(name: str, eighths: int) -> None:
    data = read_file(JPEG_DIR / name)
    info = image_info(data)
    full = decode_jpeg(data, scale=eighths / 8)
    rng = np.random.default_rng(eighths)
    for _ in range(12):
        top, left = int(rng.integers(0, info.height)), int(rng.integers(0, info.width))
        height = int(rng.integers(1, info.height - top + 1))
        width = int(rng.integers(1, info.width - left + 1))
        region = decode_jpeg(data, roi=(top, left, height, width), scale=eighths / 8)
        t, l = top * eighths // 8, left * eighths // 8
        b = min(full.shape[1], math.ceil((top + height) * eighths / 8))
        r = min(full.shape[2], math.ceil((left + width) * eighths / 8))
        b, r = max(b, t + 1), max(r, l + 1)
        assert torch.equal(region, full[:, t:b, l:r]), (top, left, height, width)


@pytest.mark.parametrize("mode", list(ImageReadMode))
def test_roi_in_every_mode_equals_cropping_the_full_decode(mode: ImageReadMode) -> None:
    """Crop rows are decoded in place and moved left; the last ones go through a scratch row."""
    data = read_file(PHOTO)
    full = decode_jpeg(data, mode)
    h, w = full.shape[1:]
    for top, left, height, width in [
        (0, 1, h, w - 1),  # every row spills into the next, the last one cannot
        (h - 5, 17, 5, 40),
        (3, w - 33, h - 3, 33),
        (10, 30, 1, 1),
        (0, 0, h, w),
    ]:
        region = decode_jpeg(data, mode, roi=(top, left, height, width))
        assert torch.equal(region, full[:, top : top + height, left : left + width]), (top, left)


def test_roi_outside_the_image_is_a_value_error_not_a_decode_error() -> None:
    data = read_file(PHOTO)  # 517 x 606
    for roi in [(0, 0, 607, 10), (-1, 0, 5, 5), (0, 0, 0, 5), (600, 510, 7, 8)]:
        for decode in (decode_jpeg, torch.ops.trivium.decode_jpeg):
            with pytest.raises(ValueError, match=r"^decode_jpeg: roi .* outside the 517x606") as e:
                decode(data, roi=roi)
            assert not isinstance(e.value, DecodeError), roi
    # The bytes are not to blame: the same call on a damaged file still names the file.
    with pytest.raises(DecodeError, match=r"^cut\.jpg: "):
        decode_jpeg(data[:300], roi=(0, 0, 5, 5), path="cut.jpg")


def test_min_size_with_roi_covers_the_region() -> None:
    image = decode_jpeg(read_file(PHOTO), roi=(100, 100, 300, 200), min_size=(100, 60))
    assert image.shape[1] >= 100 and image.shape[2] >= 60
    # 3/8 is the smallest scale covering it: rows 300 * 3/8 -> 113, columns 200 * 3/8 -> 76.
    assert image.shape[1:] == (113, 76)


@pytest.mark.parametrize("orientation", [3, 6])
def test_exif_orientation_matches_pillow(orientation: int) -> None:
    path = JPEG_DIR / f"pil-hopper_orientation_{orientation}.jpg"
    data = read_file(path)
    assert image_info(data).orientation == orientation
    oriented = decode_jpeg(data, apply_exif_orientation=True)
    reference = np.asarray(ImageOps.exif_transpose(Image.open(path)).convert("RGB"))
    np.testing.assert_array_equal(oriented.numpy(), reference.transpose(2, 0, 1))


def test_truncated_jpeg_raises_or_warns() -> None:
    # A truncated file raises by default, as Pillow and torchvision refuse it.
    path = CORRUPT_DIR / "pil-truncated_jpeg.jpg"
    with pytest.raises(DecodeError, match=r"pil-truncated_jpeg\.jpg: only part of the image"):
        decode_jpeg(read_file(path), path=path)
    with pytest.raises(DecodeError, match=r"pil-truncated_jpeg\.jpg: corrupt image data"):
        decode_jpeg(read_file(path), path=path, strict=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        image = decode_jpeg(read_file(path), strict=False)
    assert [w.category for w in caught] == [DecodeWarning]
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    try:
        reference = pillow_array(path, "RGB")
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = False
    assert image.shape == reference.shape
    # What the file still holds decodes as Pillow decodes it.
    assert psnr(image.numpy(), reference) >= 30


def _with_claimed_size(data: torch.Tensor, height: int, width: int) -> bytes:
    """The JPEG with its SOF0 header patched to claim another size (a decompression bomb)."""
    raw = bytearray(data.numpy().tobytes())
    sof = raw.rindex(b"\xff\xc0")  # the last SOF0: an EXIF thumbnail may hold another
    raw[sof + 5 : sof + 9] = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return bytes(raw)


def test_pixel_limit_is_checked_from_the_header() -> None:
    with pytest.raises(DecodeError, match="60000x50000 image exceeds the limit"):
        decode_jpeg(_with_claimed_size(read_file(PHOTO), 50000, 60000))
    with pytest.raises(DecodeError, match="dimension"):  # 65535x65535: over libjpeg's own cap
        decode_jpeg(read_file(CORRUPT_DIR / "jd-max_size.jpg"))
    data = read_file(PHOTO)
    with pytest.raises(DecodeError, match="517x606 image exceeds the limit of 1000 pixels"):
        decode_jpeg(data, max_pixels=1000)
    assert decode_jpeg(data, max_pixels=517 * 606).shape == (3, 606, 517)
