"""12-bit and lossless (SOF3) JPEG decode, against the pixels the files were made from.

The files are made at test time from known pixels with the ``cjpeg`` of the
libjpeg-turbo that ``trivium.vision._C`` is built on (packages/vision/build/deps/
libjpeg-turbo/bin); ``djpeg`` of the same build is the reference for 12-bit lossy
decodes. A lossless decode must give the source pixels back exactly. Pillow decodes
8-bit lossless JPEGs (compared below) and cannot identify 12-bit or 9- to 16-bit ones.
``encode_jpeg`` of uint16 writes 12-bit JPEGs, checked by decoding them back.
"""

from __future__ import annotations

import io
import re
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from image_assets import IMAGES, JPEG_DIR
from PIL import Image, UnidentifiedImageError

from trivium.core.errors import DecodeError, DecodeWarning, UnsupportedFormatError
from trivium.vision import _C
from trivium.vision.io import (
    ImageReadMode,
    decode_image,
    decode_jpeg,
    encode_jpeg,
    image_info,
    read_file,
)
from trivium.vision.transforms import CenterCrop, RandomResizedCrop, Resize, ToDtype
from trivium.vision.transforms.fused_decode import (
    DecodeCenterCrop,
    DecodeRandomResizedCrop,
    DecodeResize,
)

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "packages" / "vision" / "build" / "deps" / "libjpeg-turbo" / "bin"

pytestmark = pytest.mark.skipif(
    int(getattr(_C, "libjpeg_turbo_version", "0").split(".")[0]) < 3,
    reason="trivium.vision._C is built on a libjpeg without 12-bit and lossless decode",
)
needs_tools = pytest.mark.skipif(
    not (TOOLS / "cjpeg").exists(), reason="libjpeg-turbo's cjpeg/djpeg are not built"
)


def known_pixels(height: int, width: int, channels: int, bits: int, seed: int = 0) -> np.ndarray:
    """Smooth gradients plus a little noise: (H, W, C) int64 in [0, 2**bits)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    top = (1 << bits) - 1
    planes = [x, y, (x + y) / 2][:channels]
    smooth = np.stack([p * 0.9 + 0.05 for p in planes], axis=-1) * top
    noise = rng.integers(-top // 64 - 1, top // 64 + 2, smooth.shape)
    return np.clip(np.round(smooth) + noise, 0, top).astype(np.int64)


def write_pnm(path: Path, pixels: np.ndarray, bits: int) -> None:
    height, width, channels = pixels.shape
    maxval = (1 << bits) - 1
    header = f"{'P5' if channels == 1 else 'P6'}\n{width} {height}\n{maxval}\n".encode()
    path.write_bytes(header + pixels.astype(">u2" if maxval > 255 else "u1").tobytes())


def read_pnm(path: Path) -> np.ndarray:
    _, size, maxval, data = path.read_bytes().split(b"\n", 3)
    width, height = map(int, size.split())
    samples = np.frombuffer(data, ">u2" if int(maxval) > 255 else "u1")
    return samples.reshape(height, width, -1).astype(np.int64)


def cjpeg(tmp_path: Path, pixels: np.ndarray, bits: int, *options: str) -> bytes:
    source, output = tmp_path / "source.pnm", tmp_path / "made.jpg"
    write_pnm(source, pixels, bits)
    subprocess.run([TOOLS / "cjpeg", *options, "-outfile", output, source], check=True)
    return output.read_bytes()


def djpeg(tmp_path: Path, data: bytes, *options: str) -> np.ndarray:
    source, output = tmp_path / "input.jpg", tmp_path / "decoded.pnm"
    source.write_bytes(data)
    subprocess.run([TOOLS / "djpeg", *options, "-outfile", output, source], check=True)
    return read_pnm(output)


def stored(image: torch.Tensor, bits: int) -> np.ndarray:
    """The stored sample values of a decode: (H, W, C) int64, undoing the bit replication."""
    container = 8 if image.dtype == torch.uint8 else 16
    return image.permute(1, 2, 0).numpy().astype(np.int64) >> (container - bits)


def replicate(values: np.ndarray, bits: int, container: int) -> np.ndarray:
    """Bit replication written out independently: the value's bits repeated from the top."""
    out = np.zeros_like(values)
    for shift in range(container - bits, -bits, -bits):
        out |= values << shift if shift >= 0 else values >> -shift
    return out


@needs_tools
@pytest.mark.parametrize("bits", [2, 5, 8, 10, 12, 13, 16])
@pytest.mark.parametrize("channels", [1, 3])
def test_lossless_decode_is_exact(tmp_path: Path, bits: int, channels: int) -> None:
    pixels = known_pixels(37, 45, channels, bits, seed=bits)
    predictor = 1 + bits % 7
    data = cjpeg(tmp_path, pixels, bits, "-lossless", f"{predictor},0", "-precision", str(bits))
    image = decode_jpeg(data)
    container = 8 if bits <= 8 else 16
    assert image.dtype == (torch.uint8 if bits <= 8 else torch.uint16)
    assert image.shape == (channels, 37, 45)
    np.testing.assert_array_equal(stored(image, bits), pixels)
    decoded = image.permute(1, 2, 0).numpy().astype(np.int64)
    np.testing.assert_array_equal(decoded, replicate(pixels, bits, container))
    info = image_info(data)
    assert (info.bit_depth, info.lossless, info.progressive) == (bits, True, False)
    assert info.dtype == image.dtype


def test_lossless_dicom_file_matches_its_reference() -> None:
    # A 16-bit DICOM lossless JPEG (predictor 1) and its IJG/GDCM decode.
    name = "jd-lossless-jpeg_lossless_sel1"
    image = decode_jpeg(read_file(JPEG_DIR / f"{name}.jpg"))
    reference = np.asarray(Image.open(IMAGES / "reference" / f"{name}.png")).astype(np.int64)
    assert image.dtype == torch.uint16
    np.testing.assert_array_equal(image[0].numpy().astype(np.int64), reference)


@needs_tools
@pytest.mark.parametrize("channels", [1, 3])
def test_lossless_8_bit_matches_pillow(tmp_path: Path, channels: int) -> None:
    pixels = known_pixels(30, 41, channels, 8)
    data = cjpeg(tmp_path, pixels, 8, "-lossless", "4")
    image = decode_jpeg(data)
    assert image.dtype == torch.uint8
    np.testing.assert_array_equal(stored(image, 8), pixels)
    pillow = np.asarray(Image.open(io.BytesIO(data))).reshape(30, 41, channels)
    np.testing.assert_array_equal(image.permute(1, 2, 0).numpy(), pillow)


@needs_tools
@pytest.mark.parametrize("options", [("-lossless", "1"), ("-quality", "90")])
def test_pillow_cannot_identify_12_bit_jpeg(tmp_path: Path, options: tuple[str, ...]) -> None:
    data = cjpeg(tmp_path, known_pixels(16, 16, 3, 12), 12, *options, "-precision", "12")
    with pytest.raises(UnidentifiedImageError):
        Image.open(io.BytesIO(data))


@needs_tools
@pytest.mark.parametrize(
    ("channels", "options"),
    [(3, ()), (1, ()), (3, ("-progressive",)), (3, ("-sample", "1x1", "-restart", "2"))],
)
def test_12_bit_decode_matches_djpeg_and_source(
    tmp_path: Path, channels: int, options: tuple[str, ...]
) -> None:
    pixels = known_pixels(61, 83, channels, 12)
    data = cjpeg(tmp_path, pixels, 12, "-precision", "12", "-quality", "95", *options)
    image = decode_jpeg(data)
    assert image.dtype == torch.uint16 and image.shape == (channels, 61, 83)
    ours = stored(image, 12)
    np.testing.assert_array_equal(ours, djpeg(tmp_path, data, "-dct", "int"))
    # Within the quantisation error of the source: small on average, bounded everywhere.
    error = np.abs(ours - pixels)
    assert error.mean() < 4095 * 0.01 and error.max() < 4095 * 0.1
    info = image_info(data)
    assert (info.bit_depth, info.lossless, info.dtype) == (12, False, torch.uint16)


@needs_tools
@pytest.mark.parametrize("scale", ["1/2", "3/8", "1/8"])
def test_12_bit_scaled_decode_matches_djpeg(tmp_path: Path, scale: str) -> None:
    data = cjpeg(tmp_path, known_pixels(64, 80, 3, 12), 12, "-precision", "12")
    numerator, denominator = map(int, scale.split("/"))
    image = decode_jpeg(data, scale=numerator / denominator)
    reference = djpeg(tmp_path, data, "-dct", "int", "-scale", scale)
    np.testing.assert_array_equal(stored(image, 12), reference)


@needs_tools
@pytest.mark.parametrize("lossless", [False, True])
def test_region_decode_is_a_crop_of_the_full_decode(tmp_path: Path, lossless: bool) -> None:
    options = ("-lossless", "1") if lossless else ("-quality", "90")
    data = cjpeg(tmp_path, known_pixels(50, 70, 3, 12), 12, "-precision", "12", *options)
    full = decode_jpeg(data)
    for top, left, height, width in [(0, 0, 50, 70), (5, 9, 20, 31), (49, 69, 1, 1)]:
        region = decode_jpeg(data, roi=(top, left, height, width))
        assert torch.equal(region, full[:, top : top + height, left : left + width])


@needs_tools
def test_lossless_rejects_scale_and_min_size_decodes_full_size(tmp_path: Path) -> None:
    data = cjpeg(tmp_path, known_pixels(40, 48, 1, 16), 16, "-lossless", "1", "-precision", "16")
    with pytest.raises(UnsupportedFormatError, match="scale does not apply to lossless JPEG"):
        decode_jpeg(data, scale=0.5, path="scan.jpg")
    assert decode_jpeg(data, min_size=(10, 12)).shape == (1, 40, 48)


@needs_tools
def test_modes_convert_16_bit_samples(tmp_path: Path) -> None:
    pixels = known_pixels(20, 24, 3, 16)
    data = cjpeg(tmp_path, pixels, 16, "-lossless", "7", "-precision", "16")
    rgb = decode_jpeg(data, mode=ImageReadMode.RGB).to(torch.int64)
    assert torch.equal(rgb, torch.from_numpy(pixels).permute(2, 0, 1))
    rgba = decode_jpeg(data, mode=ImageReadMode.RGB_ALPHA).to(torch.int64)
    assert torch.equal(rgba[:3], rgb) and bool((rgba[3] == 65535).all())
    # Gray as Pillow's RGB -> L (ITU-R 601-2 in 16-bit fixed point), on 16-bit values.
    r, g, b = (pixels[..., i] for i in range(3))
    luma = (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16
    gray = decode_jpeg(data, mode=ImageReadMode.GRAY)
    np.testing.assert_array_equal(gray[0].numpy().astype(np.int64), luma)
    gray_alpha = decode_jpeg(data, mode=ImageReadMode.GRAY_ALPHA).to(torch.int64)
    assert torch.equal(gray_alpha[0], gray[0].to(torch.int64)) and bool(
        (gray_alpha[1] == 65535).all()
    )
    single = cjpeg(tmp_path, pixels[..., :1], 16, "-lossless", "1", "-precision", "16")
    expanded = decode_jpeg(single, mode=ImageReadMode.RGB).to(torch.int64)
    assert all(torch.equal(expanded[c], expanded[0]) for c in range(3))


@needs_tools
def test_to_dtype_scales_12_bit_like_16_bit_png(tmp_path: Path) -> None:
    pixels = known_pixels(16, 20, 3, 12)
    data = cjpeg(tmp_path, pixels, 12, "-lossless", "1", "-precision", "12")
    scaled = ToDtype(torch.float32, scale=True)(decode_jpeg(data))
    expected = torch.from_numpy(pixels / 4095).permute(2, 0, 1).float()
    torch.testing.assert_close(scaled, expected, atol=1 / 65535, rtol=0)
    assert float(decode_image(data, dtype=torch.float32).max()) <= 1.0
    narrowed = decode_image(data, dtype=torch.uint8).permute(1, 2, 0).numpy()
    np.testing.assert_array_equal(narrowed, pixels >> 4)


@needs_tools
@pytest.mark.parametrize(
    "options", [("-lossless", "1", "-precision", "16"), ("-precision", "12", "-quality", "90")]
)
def test_truncated_files_raise_decode_error_naming_the_input(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    bits = 16 if "16" in options else 12
    data = cjpeg(tmp_path, known_pixels(64, 64, 3, bits), bits, *options)
    cut = data[: len(data) * 2 // 3]
    with pytest.raises(DecodeError, match=r"scan\.jpg"):
        decode_jpeg(cut, path="scan.jpg")
    with pytest.warns(DecodeWarning):
        partial = decode_jpeg(cut, strict=False)
    assert partial.shape == (3, 64, 64) and partial.dtype == torch.uint16
    with pytest.raises(DecodeError, match=r"scan\.jpg"):
        decode_jpeg(data[:200], path="scan.jpg")


@needs_tools
@pytest.mark.parametrize(
    "options", [("-lossless", "2", "-precision", "12"), ("-precision", "12", "-progressive")]
)
def test_mutated_files_decode_or_raise_decode_error(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    data = cjpeg(tmp_path, known_pixels(40, 40, 3, 12), 12, *options)
    rng = np.random.default_rng(7)
    for _ in range(150):
        mutated = bytearray(data)
        for position in rng.integers(2, len(data), rng.integers(1, 6)):
            mutated[position] = int(rng.integers(256))
        for kwargs in ({}, {"strict": False}, {"mode": ImageReadMode.GRAY}, {"roi": (3, 5, 9, 7)}):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DecodeWarning)
                try:
                    image = decode_jpeg(bytes(mutated), max_pixels=100_000, **kwargs)
                except DecodeError:
                    continue
            assert image.dtype in (torch.uint8, torch.uint16) and image.dim() == 3


@pytest.mark.parametrize(("channels", "progressive"), [(3, False), (1, False), (3, True)])
def test_12_bit_encode_round_trip(channels: int, progressive: bool) -> None:
    pixels = known_pixels(48, 56, channels, 12, seed=channels)
    image = torch.from_numpy(replicate(pixels, 12, 16)).permute(2, 0, 1).to(torch.uint16)
    data = encode_jpeg(image, quality=95, subsampling="4:4:4", progressive=progressive)
    info = image_info(data)
    assert (info.bit_depth, info.lossless, info.progressive) == (12, False, progressive)
    decoded = stored(decode_jpeg(data), 12)
    error = np.abs(decoded - pixels)
    assert error.mean() < 4095 * 0.01 and error.max() < 4095 * 0.1


@needs_tools
def test_12_bit_encode_is_read_by_djpeg(tmp_path: Path) -> None:
    pixels = known_pixels(40, 40, 3, 12)
    image = torch.from_numpy(pixels << 4).permute(2, 0, 1).to(torch.uint16)
    data = bytes(encode_jpeg(image, quality=90).numpy())
    np.testing.assert_array_equal(
        djpeg(tmp_path, data, "-dct", "int"), stored(decode_jpeg(data), 12)
    )


def test_encode_rejects_other_sample_types() -> None:
    with pytest.raises(TypeError, match=r"uint8 or torch\.uint16"):
        encode_jpeg(torch.zeros(3, 8, 8, dtype=torch.int16))


def test_fused_decode_of_12_bit_jpeg_is_decode_then_transform() -> None:
    # Wider-than-8-bit JPEGs take the unfused path: decode in full at 16 bits, then
    # resize in float and round back, as for a 16-bit PNG.
    image = torch.arange(3 * 24 * 32, dtype=torch.int32).reshape(3, 24, 32)
    image = ((image * 37) % 4096 << 4).to(torch.uint16)
    data = encode_jpeg(image, quality=95)
    fused = DecodeResize(8)(data)
    assert fused.dtype == torch.uint16
    torch.testing.assert_close(fused, Resize(8)(decode_jpeg(data)), rtol=0, atol=0)


@needs_tools
@pytest.mark.parametrize("bits", [8, 16])
def test_fused_decode_of_lossless_jpeg_is_decode_then_transform(tmp_path: Path, bits: int) -> None:
    # Lossless JPEG has no DCT to scale or crop by: the fused transforms decode it in
    # full and resize or crop, exactly as decode_jpeg followed by the transform does.
    pixels = known_pixels(40, 48, 3, bits)
    data = cjpeg(tmp_path, pixels, bits, "-lossless", "1", "-precision", str(bits))
    full = decode_jpeg(data, mode=ImageReadMode.RGB)
    seeded = torch.Generator().manual_seed
    pairs = [
        (lambda: DecodeResize(20), lambda: Resize(20)),
        (lambda: DecodeCenterCrop(16), lambda: CenterCrop(16)),
        (
            lambda: DecodeRandomResizedCrop(12, generator=seeded(3)),
            lambda: RandomResizedCrop(12, generator=seeded(3)),
        ),
    ]
    for fused, unfused in pairs:
        assert not fused().plan(data).fused
        try:
            want = unfused()(full)
        except TypeError as e:  # resize refuses uint16: so must the fused transform
            with pytest.raises(TypeError, match=re.escape(str(e).split(": ", 1)[1])):
                fused()(data)
            continue
        got = fused()(data)
        assert got.dtype == want.dtype and torch.equal(got, want), type(fused()).__name__
