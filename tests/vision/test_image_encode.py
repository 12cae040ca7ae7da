"""JPEG and PNG encode: round trips, Pillow reading our files, encoder options."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR, PNG_DIR, pillow_array, psnr
from PIL import Image, JpegImagePlugin

from trivium.vision.io import (
    ImageReadMode,
    apply_exif_orientation,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    image_info,
    read_image,
    write_jpeg,
    write_png,
)

PHOTOS = ["tv-grace_hopper_517x606.jpg", "jd-rgb.jpg", "jd-mjpeg.jpg", "pil-hopper.jpg"]
# jd-rgb.jpg is stored 4:4:4 with fine color detail that 4:2:0 cannot keep.
SOURCE_SUBSAMPLING = {"jd-rgb.jpg": "4:4:4"}


@pytest.mark.parametrize("name", PHOTOS)
def test_jpeg_round_trip_at_quality_95(name: str) -> None:
    photo = read_image(JPEG_DIR / name)
    data = encode_jpeg(photo, quality=95, subsampling=SOURCE_SUBSAMPLING.get(name, "4:2:0"))
    assert psnr(decode_jpeg(data).numpy(), photo.numpy()) >= 40
    # Pillow reads our file to the same pixels we do.
    np.testing.assert_array_equal(
        pillow_array(bytes(data.numpy()), "RGB"), decode_jpeg(data).numpy()
    )


def test_jpeg_quality_orders_size_and_fidelity() -> None:
    photo = read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")
    sizes, scores = [], []
    for quality in (30, 60, 90):
        data = encode_jpeg(photo, quality)
        sizes.append(data.numel())
        scores.append(psnr(decode_jpeg(data).numpy(), photo.numpy()))
    assert sizes == sorted(sizes) and scores == sorted(scores)


def test_jpeg_matches_pillow_encoder_settings() -> None:
    photo = read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")
    ours = encode_jpeg(photo, quality=85)
    buffer = io.BytesIO()
    Image.fromarray(photo.permute(1, 2, 0).numpy()).save(buffer, "JPEG", quality=85)
    # Same library defaults (4:2:0, ISLOW, standard tables): same size within a few bytes.
    assert abs(ours.numel() - len(buffer.getvalue())) <= 64


@pytest.mark.parametrize(("subsampling", "pillow_code"), [("4:4:4", 0), ("4:2:2", 1), ("4:2:0", 2)])
def test_jpeg_subsampling_option(subsampling: str, pillow_code: int) -> None:
    photo = read_image(JPEG_DIR / "pil-hopper.jpg")
    data = bytes(encode_jpeg(photo, 90, subsampling=subsampling).numpy())
    assert JpegImagePlugin.get_sampling(Image.open(io.BytesIO(data))) == pillow_code


def test_jpeg_progressive_and_optimize_options() -> None:
    photo = read_image(JPEG_DIR / "pil-hopper.jpg")
    plain = encode_jpeg(photo, 90)
    optimized = encode_jpeg(photo, 90, optimize=True)
    progressive = encode_jpeg(photo, 90, progressive=True)
    assert optimized.numel() < plain.numel()
    assert image_info(progressive).progressive and not image_info(plain).progressive
    assert torch.equal(decode_jpeg(optimized), decode_jpeg(plain))  # same coefficients


def test_gray_jpeg_round_trip() -> None:
    gray = read_image(JPEG_DIR / "tv-gray_pytorch.jpg")
    data = encode_jpeg(gray, quality=95)
    assert image_info(data).channels == 1
    assert psnr(decode_jpeg(data).numpy(), gray.numpy()) >= 40


def test_jpeg_batch_encode() -> None:
    images = [read_image(JPEG_DIR / name) for name in PHOTOS]
    encoded = encode_jpeg(images, quality=80)
    assert all(torch.equal(a, encode_jpeg(b, 80)) for a, b in zip(encoded, images, strict=True))


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.uint16])
def test_png_round_trip_is_exact(channels: int, dtype: torch.dtype) -> None:
    generator = torch.Generator().manual_seed(channels)
    top = 256 if dtype == torch.uint8 else 65536
    image = torch.randint(0, top, (channels, 37, 53), generator=generator, dtype=torch.int32).to(
        dtype
    )
    data = encode_png(image)
    decoded = decode_png(data)
    assert decoded.dtype == dtype and torch.equal(decoded, image)
    # Pillow reads the same samples back.
    pil = Image.open(io.BytesIO(bytes(data.numpy())))
    if dtype == torch.uint8:
        reference = pillow_array(bytes(data.numpy()))
        np.testing.assert_array_equal(reference, image.numpy())
    elif channels == 1:
        np.testing.assert_array_equal(np.asarray(pil), image[0].numpy())


@pytest.mark.parametrize("level", [0, 1, 6, 9])
def test_png_compression_levels(level: int) -> None:
    image = read_image(PNG_DIR / "pil-hopper.png")
    data = encode_png(image, compression_level=level)
    assert torch.equal(decode_png(data), image)


def test_png_compression_shrinks() -> None:
    image = read_image(PNG_DIR / "pil-hopper.png")
    assert encode_png(image, 9).numel() < encode_png(image, 0).numel()


def test_write_jpeg_and_png(tmp_path: Path) -> None:
    image = read_image(JPEG_DIR / "pil-hopper.jpg")
    write_png(image, tmp_path / "a.png")
    write_jpeg(image, tmp_path / "a.jpg", quality=95)
    assert torch.equal(read_image(tmp_path / "a.png"), image)
    assert Image.open(tmp_path / "a.jpg").format == "JPEG"
    assert psnr(read_image(tmp_path / "a.jpg").numpy(), image.numpy()) >= 35


@pytest.mark.parametrize("orientation", range(1, 9))
def test_apply_exif_orientation_matches_pillow(orientation: int) -> None:
    from PIL import ImageOps

    pixels = np.random.default_rng(orientation).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    exif = Image.Exif()
    exif[0x0112] = orientation
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG", exif=exif)
    data = buffer.getvalue()
    assert image_info(data).orientation == orientation
    expected = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))))
    ours = decode_image(data, ImageReadMode.RGB, apply_exif_orientation=True)
    np.testing.assert_array_equal(ours.permute(1, 2, 0).numpy(), expected)
    batched = apply_exif_orientation(torch.from_numpy(pixels).permute(2, 0, 1)[None], orientation)
    assert torch.equal(batched[0], ours)


def test_apply_exif_orientation_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="orientation"):
        apply_exif_orientation(torch.zeros(1, 2, 2), 9)
