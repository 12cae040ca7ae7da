"""The PNG fast path checks the zlib header of the image data itself (it inflates raw deflate)."""

from __future__ import annotations

import struct
import zlib

import pytest
import torch

from trivium.core.errors import DecodeError, DecodeWarning
from trivium.vision.io import decode_png, encode_png


def with_zlib_header(png: bytes, cmf: int, flg: int) -> bytes:
    """`png` with the first two bytes of its first IDAT replaced, the CRC fixed."""
    at = png.index(b"IDAT") - 4
    (length,) = struct.unpack(">I", png[at : at + 4])
    data = bytes([cmf, flg]) + png[at + 10 : at + 8 + length]
    chunk = b"IDAT" + data
    return (
        png[:at]
        + png[at : at + 4]
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
        + png[at + 12 + length :]
    )


@pytest.fixture
def png() -> tuple[bytes, torch.Tensor]:
    image = torch.arange(3 * 20 * 30, dtype=torch.int32).reshape(3, 20, 30).to(torch.uint8)
    return bytes(encode_png(image).numpy()), image


def test_valid_headers_of_every_window_size_decode(png) -> None:
    data, image = png
    for cinfo in range(8):  # any window up to 32 KiB reads the same stream
        cmf = cinfo << 4 | 8
        flg = (31 - (cmf * 256) % 31) % 31
        assert torch.equal(decode_png(with_zlib_header(data, cmf, flg)), image)


@pytest.mark.parametrize(
    ("cmf", "flg", "reason"),
    [
        (0x78, 0x9D, "incorrect header check"),
        (0x77, 0x09, "incorrect header check"),
        (0x78, 0xBB, "preset dictionary"),
    ],
)
def test_bad_headers_are_damage(png, cmf: int, flg: int, reason: str) -> None:
    data = with_zlib_header(png[0], cmf, flg)
    with pytest.raises(DecodeError, match=reason):
        decode_png(data)
    with pytest.warns(DecodeWarning, match=reason):
        partial = decode_png(data, strict=False)
    assert partial.shape == (3, 20, 30) and not partial.any()
