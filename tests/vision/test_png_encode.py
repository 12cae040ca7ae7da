"""PNG encode on zlib: chunk layout, the per-row filter heuristic, and Pillow reading our files."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR
from PIL import Image

from trivium.vision.io import decode_png, encode_png, read_image


def chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """(type, data) of every chunk, each checked against its CRC."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    found, pos = [], 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + data) == crc, kind
        found.append((kind, data))
        pos += 12 + length
    return found


def scanlines(png: bytes, row_bytes: int) -> list[bytes]:
    """The filtered scanlines (filter byte first) of a non-interlaced PNG."""
    raw = zlib.decompress(b"".join(data for kind, data in chunks(png) if kind == b"IDAT"))
    step = row_bytes + 1
    assert len(raw) % step == 0
    return [raw[i : i + step] for i in range(0, len(raw), step)]


def reference_filters(rows: np.ndarray, bpp: int) -> list[int]:
    """libpng's choice per row: the filter whose bytes, read as signed, sum smallest."""
    choices = []
    previous = np.zeros_like(rows[0])
    for row in rows:
        x = row.astype(np.int32)
        b = previous.astype(np.int32)
        a = np.concatenate([np.zeros(bpp, np.int32), x[:-bpp]])
        c = np.concatenate([np.zeros(bpp, np.int32), b[:-bpp]])
        p = a + b - c
        pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
        paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
        residuals = [x, x - a, x - b, x - (a + b) // 2, x - paeth]
        sums = [
            int(np.abs((r & 0xFF).astype(np.uint8).view(np.int8).astype(np.int32)).sum())
            for r in residuals
        ]
        choices.append(int(np.argmin(sums)))  # the first of equal sums, as libpng
        previous = row
    return choices


def photo(channels: int) -> torch.Tensor:
    """A real photo (grace hopper, 517x606) with 1..4 channels."""
    rgb = read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")
    gray = rgb.float().mean(0, keepdim=True).round().to(torch.uint8)
    alpha = torch.arange(rgb.shape[2], dtype=torch.uint8).expand(1, *rgb.shape[1:])
    return {1: gray, 2: torch.cat([gray, alpha]), 3: rgb, 4: torch.cat([rgb, alpha])}[channels]


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("level", [1, 6])
def test_filters_follow_the_min_sum_heuristic(channels: int, level: int) -> None:
    image = photo(channels)
    data = bytes(encode_png(image, level).numpy())
    hwc = image.permute(1, 2, 0).contiguous().numpy()
    rows = hwc.reshape(hwc.shape[0], -1)
    lines = scanlines(data, rows.shape[1])
    assert [line[0] for line in lines] == reference_filters(rows, channels)
    pillow = np.asarray(Image.open(io.BytesIO(data)))
    np.testing.assert_array_equal(pillow.reshape(rows.shape), rows)


def test_level_0_stores_rows_unfiltered() -> None:
    image = photo(3)
    lines = scanlines(bytes(encode_png(image, 0).numpy()), 3 * image.shape[2])
    assert {line[0] for line in lines} == {0}


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_16_bit_samples_are_big_endian_and_filtered_as_bytes(channels: int) -> None:
    generator = torch.Generator().manual_seed(7)
    smooth = torch.linspace(0, 65535, 40 * 30 * channels).reshape(channels, 40, 30)
    noise = torch.randint(-300, 300, smooth.shape, generator=generator)
    image = (smooth + noise).clamp(0, 65535).to(torch.int32).to(torch.uint16)
    data = bytes(encode_png(image, 6).numpy())
    ihdr = dict(chunks(data))[b"IHDR"]
    assert ihdr[8] == 16 and ihdr[9] == {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    hwc = image.permute(1, 2, 0).contiguous().numpy().astype(">u2")
    rows = hwc.reshape(40, -1).view(np.uint8)
    lines = scanlines(data, rows.shape[1])
    assert [line[0] for line in lines] == reference_filters(rows, 2 * channels)
    assert torch.equal(decode_png(data), image)


def test_large_image_spans_many_idat_chunks() -> None:
    generator = torch.Generator().manual_seed(3)
    image = torch.randint(0, 256, (3, 300, 400), generator=generator, dtype=torch.uint8)
    data = bytes(encode_png(image, 1).numpy())  # noise: about 360 kB of deflate output
    found = chunks(data)
    assert [kind for kind, _ in found][:2] == [b"IHDR", b"IDAT"] and found[-1] == (b"IEND", b"")
    assert sum(kind == b"IDAT" for kind, _ in found) > 2
    assert all(data for kind, data in found if kind == b"IDAT")  # no empty IDAT chunks
    np.testing.assert_array_equal(
        np.asarray(Image.open(io.BytesIO(data))), image.permute(1, 2, 0).numpy()
    )


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 1, 5), (4, 7, 1), (2, 2, 17)])
def test_tiny_images(shape: tuple[int, int, int]) -> None:
    image = torch.arange(int(np.prod(shape)), dtype=torch.uint8).reshape(shape) * 37
    data = bytes(encode_png(image, 9).numpy())
    assert torch.equal(decode_png(data), image)
    pil = np.asarray(Image.open(io.BytesIO(data)))
    np.testing.assert_array_equal(pil.reshape(shape[1], shape[2], -1), image.permute(1, 2, 0))
