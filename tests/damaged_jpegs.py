"""Damaged-but-readable JPEGs made from real ones: the damage libjpeg recovers from.

Each builder takes a real JPEG's bytes and returns them damaged as real files are:
bytes corrupted inside the entropy-coded data, a marker inside a data segment,
extraneous bytes before a marker, a progressive file whose DC scan is missing. Pillow
decodes every one of them.
"""

from __future__ import annotations

import io

from PIL import Image


def _scan_start(data: bytes, which: int = 0) -> int:
    """The first byte of entropy-coded data after SOS number ``which``."""
    at = -1
    for _ in range(which + 1):
        at = data.index(b"\xff\xda", at + 1)
    return at + 2 + int.from_bytes(data[at + 2 : at + 4], "big")


def bad_huffman_code(data: bytes) -> bytes:
    raw = bytearray(data)
    start = _scan_start(data) + 20_000
    raw[start : start + 64] = b"\xff\x00" * 32  # stuffed 0xFF: ones no Huffman code has
    return bytes(raw)


def marker_in_data(data: bytes) -> bytes:
    start = _scan_start(data) + 5000
    return data[:start] + b"\xff\xd7" + data[start:]  # an RST marker where none belongs


def extraneous_bytes(data: bytes) -> bytes:
    at = data.index(b"\xff\xdb")  # before the quantisation tables
    return data[:at] + b"\x00\x01\x02" + data[at:]


def progressive_without_dc(data: bytes) -> bytes:
    """The photo re-encoded progressive by Pillow, its first scan (the DC scan) removed."""
    buffer = io.BytesIO()
    Image.open(io.BytesIO(data)).save(buffer, "JPEG", quality=85, progressive=True)
    raw = buffer.getvalue()
    first = raw.index(b"\xff\xda")
    second = raw.index(b"\xff\xda", first + 2)
    # Keep any table segments between the scans (from the last marker before the second SOS).
    between = raw[first:second]
    tables = between.rfind(b"\xff\xc4")
    keep = between[tables:] if tables > 0 else b""
    return raw[:first] + keep + raw[second:]


DAMAGES = {
    "bad Huffman code": bad_huffman_code,
    "marker in data": marker_in_data,
    "extraneous bytes": extraneous_bytes,
    "progressive without DC": progressive_without_dc,
}
