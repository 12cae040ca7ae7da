"""PNG decode against the PngSuite expected pixels and Pillow, plus bad input."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from image_assets import PNG_DIR, PNGSUITE_REFERENCE, pillow_array, valid_pngs
from PIL import Image

from trivium.core.errors import DecodeError, DecodeWarning
from trivium.vision.io import ImageReadMode, decode_png, image_info, read_file

PNGS = valid_pngs()
EIGHT_BIT = [p for p in PNGS if Image.open(p).mode not in ("I;16", "I")]
WITH_REFERENCE = [p for p in PNGS if (PNGSUITE_REFERENCE / f"{p.stem}.json").exists()]


@pytest.mark.parametrize("path", WITH_REFERENCE, ids=lambda p: p.name)
def test_rgba_matches_pngsuite_reference(path: Path) -> None:
    image = decode_png(read_file(path), ImageReadMode.RGB_ALPHA)
    expected = np.array(json.loads((PNGSUITE_REFERENCE / f"{path.stem}.json").read_text()))
    expected = expected.reshape(image.shape[1], image.shape[2], 4).transpose(2, 0, 1)
    assert image.dtype == (
        torch.uint16 if image_info(read_file(path)).bit_depth == 16 else torch.uint8
    )
    np.testing.assert_array_equal(image.numpy().astype(np.int64), expected)


@pytest.mark.parametrize("path", EIGHT_BIT, ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("mode", "pil_mode"),
    [(ImageReadMode.RGB, "RGB"), (ImageReadMode.RGB_ALPHA, "RGBA")],
)
def test_modes_match_pillow(path: Path, mode: ImageReadMode, pil_mode: str) -> None:
    image = decode_png(read_file(path), mode, dtype=torch.uint8)  # Pillow narrows 16-bit color
    np.testing.assert_array_equal(image.numpy(), pillow_array(path, pil_mode))


@pytest.mark.parametrize("path", EIGHT_BIT, ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("mode", "pil_mode"), [(ImageReadMode.GRAY, "L"), (ImageReadMode.GRAY_ALPHA, "LA")]
)
def test_gray_modes_match_pillow(path: Path, mode: ImageReadMode, pil_mode: str) -> None:
    image = decode_png(read_file(path), mode, dtype=torch.uint8).numpy().astype(int)
    expected = pillow_array(path, pil_mode).astype(int)
    # Luma of 16-bit color is computed before narrowing to 8 bits, Pillow's after.
    assert np.abs(image - expected).max() <= 1


def _header_channels(data: bytes) -> int:
    """Channels from the raw IHDR color type and a tRNS chunk, read by hand."""
    color_type = data[25]
    has_trns = b"tRNS" in data[: data.index(b"IDAT")]
    return {0: 1 + has_trns, 2: 3 + has_trns, 3: 3 + has_trns, 4: 2, 6: 4}[color_type]


@pytest.mark.parametrize("path", PNGS, ids=lambda p: p.name)
def test_unchanged_channels_follow_the_header(path: Path) -> None:
    data = read_file(path)
    info = image_info(data)
    image = decode_png(data)
    assert image.shape == (info.channels, info.height, info.width)
    assert info.channels == _header_channels(path.read_bytes())
    assert (info.width, info.height) == Image.open(path).size


@pytest.mark.parametrize("name", ["basn0g16.png", "pil-i_trns.png"])
def test_sixteen_bit_gray_is_exact(name: str) -> None:
    raw = np.asarray(Image.open(PNG_DIR / name))  # Pillow keeps I;16 samples as they are
    image = decode_png(read_file(PNG_DIR / name), ImageReadMode.GRAY)
    assert image.dtype == torch.uint16
    np.testing.assert_array_equal(image[0].numpy(), raw)


def test_sixteen_bit_to_float_and_uint8() -> None:
    data = read_file(PNG_DIR / "basn2c16.png")
    wide = decode_png(data).numpy().astype(np.float64)
    as_float = decode_png(data, dtype=torch.float32)
    np.testing.assert_allclose(as_float.numpy(), wide / 65535, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(
        decode_png(data, dtype=torch.uint8).numpy(), pillow_array(PNG_DIR / "basn2c16.png", "RGB")
    )


def test_interlaced_equals_non_interlaced() -> None:
    for interlaced, plain in [
        ("basi2c08", "basn2c08"),
        ("basi6a16", "basn6a16"),
        ("basi0g02", "basn0g02"),
    ]:
        a = decode_png(read_file(PNG_DIR / f"{interlaced}.png"))
        b = decode_png(read_file(PNG_DIR / f"{plain}.png"))
        assert torch.equal(a, b), interlaced


def _truncated_png(rows: int = 256) -> tuple[bytes, torch.Tensor]:
    """A PNG written by Pillow (several IDAT chunks), cut in the middle of its data."""
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (rows, 256, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG", compress_level=0)
    data = buffer.getvalue()
    return data[: len(data) // 2], torch.from_numpy(pixels).permute(2, 0, 1)


def test_truncated_png_raises_in_strict_mode() -> None:
    data, _ = _truncated_png()
    with pytest.raises(DecodeError, match=r"x\.png"):
        decode_png(data, path="x.png")


def test_truncated_png_non_strict_returns_decoded_rows() -> None:
    data, pixels = _truncated_png()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        image = decode_png(data, strict=False)
    assert any(issubclass(w.category, DecodeWarning) for w in caught)
    assert image.shape == pixels.shape
    # The rows before the cut came through intact; the rows after it are zero.
    assert torch.equal(image[:, :64], pixels[:, :64])
    assert int(image[:, -1].sum()) == 0


def _pillow_png(pixels: np.ndarray, **options) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG", **options)
    return buffer.getvalue()


def _smooth_image(height: int, width: int, channels: int) -> np.ndarray:
    """Gradients plus noise: Pillow's adaptive filtering then picks every filter type."""
    rng = np.random.default_rng(channels)
    y, x = np.mgrid[0:height, 0:width]
    base = (x * 3 + y * 2)[..., None] + rng.integers(0, 24, (height, width, channels))
    return (base % 256).astype(np.uint8).squeeze()


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_eight_bit_fast_path_matches_pillow_and_libspng(channels: int) -> None:
    pixels = _smooth_image(480, 641, channels)  # > 64 KiB of data: several IDAT chunks
    data = _pillow_png(pixels)
    assert data.count(b"IDAT") > 1
    image = decode_png(data)  # 8-bit, stored as asked: the zlib + own unfilter path
    expected = pixels[None] if channels == 1 else pixels.transpose(2, 0, 1)
    np.testing.assert_array_equal(image.numpy(), expected)
    # The same file through libspng (RGBA output converts, so it cannot take the fast path).
    through_libspng = decode_png(data, ImageReadMode.RGB_ALPHA)
    if channels != 1:
        np.testing.assert_array_equal(through_libspng[:channels].numpy(), expected)


def _with_damaged_idat(data: bytes) -> bytes:
    raw = bytearray(data)
    raw[raw.index(b"IDAT") + 40] ^= 0xFF  # a byte of compressed data; the CRC now fails
    return bytes(raw)


def test_bad_image_data_checksum_raises_or_warns() -> None:
    data = _with_damaged_idat(_pillow_png(_smooth_image(64, 64, 3)))
    with pytest.raises(DecodeError, match="checksum"):
        decode_png(data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        image = decode_png(data, strict=False)
    assert [w.category for w in caught] == [DecodeWarning]
    assert image.shape == (3, 64, 64) and int(image.sum()) == 0  # the one chunk was refused
