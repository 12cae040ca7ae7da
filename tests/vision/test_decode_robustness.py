"""Hostile input: mutated real files (fuzzing) and memory across many failing decodes."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import resource
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from image_assets import JPEG_DIR, PNG_DIR, corrupt_files

from trivium.core.errors import DecodeError, DecodeWarning
from trivium.vision.io import ImageReadMode, decode_image, decode_jpeg, image_info

SEEDS = [
    JPEG_DIR / "tv-rgb_pytorch.jpg",
    JPEG_DIR / "jd-moz-jpg-progressive.jpg",
    JPEG_DIR / "jd-restarts.jpg",
    JPEG_DIR / "ljt-testimgari.jpg",
    JPEG_DIR / "tv-cmyk_pytorch.jpg",
    PNG_DIR / "basn6a08.png",
    PNG_DIR / "basi3p04.png",
    PNG_DIR / "basn0g16.png",
    PNG_DIR / "tp1n3p08.png",
]
SEED_BYTES = [path.read_bytes() for path in SEEDS]
# Hostile headers may claim huge sizes; keep what a mutated file may allocate small.
FUZZ_PIXEL_LIMIT = 4_000_000


@st.composite
def mutated_files(draw: st.DrawFn) -> bytes:
    """A seed file with some bytes overwritten, a slice cut out or bytes inserted."""
    data = bytearray(SEED_BYTES[draw(st.integers(0, len(SEED_BYTES) - 1))])
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "truncate"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[pos : pos + draw(st.integers(1, 64))]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        else:
            del data[pos:]
    return bytes(data)


FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("TRIVIUM_FUZZ_EXAMPLES", "1500")),
    deadline=None,
    derandomize=True,  # the same inputs on every run: CI stays deterministic
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _decode_or_decode_error(data: bytes, **kwargs) -> torch.Tensor | None:
    try:
        return decode_image(data, max_pixels=FUZZ_PIXEL_LIMIT, **kwargs)
    except DecodeError:
        return None


@FUZZ_SETTINGS
@given(mutated_files(), st.sampled_from(list(ImageReadMode)))
def test_mutated_files_decode_or_raise_decode_error(data: bytes, mode: ImageReadMode) -> None:
    image = _decode_or_decode_error(data, mode=mode)
    if image is not None:
        info = image_info(data)
        assert image.shape[1:] == (info.height, info.width)
        assert image.dtype in (torch.uint8, torch.uint16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DecodeWarning)
        lenient = _decode_or_decode_error(data, mode=mode, strict=False)
    if image is not None:  # a clean decode is the same with strict=False
        assert lenient is not None and torch.equal(lenient, image)


@FUZZ_SETTINGS
@given(mutated_files(), st.integers(1, 8), st.tuples(*[st.integers(0, 40)] * 4))
def test_mutated_jpegs_scaled_and_region_decode(data: bytes, eighths: int, box) -> None:
    if not data.startswith(b"\xff\xd8\xff"):
        return
    top, left, height, width = box[0], box[1], box[2] + 1, box[3] + 1
    try:
        region = decode_jpeg(
            data, scale=eighths / 8, roi=(top, left, height, width), max_pixels=FUZZ_PIXEL_LIMIT
        )
    except DecodeError:
        return
    info = image_info(data)  # the region fitted inside the image, so its size is known
    assert region.shape[1] == min(
        math.ceil((top + height) * eighths / 8), math.ceil(info.height * eighths / 8)
    ) - (top * eighths // 8)


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def _claimed_pixels(data: bytes) -> int:
    try:
        info = image_info(data)
    except DecodeError:
        return 0
    return info.height * info.width


@pytest.mark.slow
def test_failing_decodes_do_not_leak() -> None:
    # Files claiming millions of pixels take long to fail; loop over the quick ones.
    files = [p.read_bytes() for p in corrupt_files() if _claimed_pixels(p.read_bytes()) < 10**6]
    assert len(files) >= 15

    def run(rounds: int) -> None:
        for _ in range(rounds):
            for data in files:
                for strict in (True, False):
                    with warnings.catch_warnings(), contextlib.suppress(DecodeError):
                        warnings.simplefilter("ignore", DecodeWarning)
                        decode_image(data, strict=strict)

    run(50)  # warm-up: allocator pools and caches reach their steady size
    gc.collect()
    before = _rss_mib()
    run(400)
    gc.collect()
    growth = _rss_mib() - before
    # ~16k failing decodes; a leak of even 1 KiB each would add 16 MiB.
    assert growth < 8, f"RSS grew by {growth:.1f} MiB"
