"""Hostile input: mutated real files (fuzzing) and memory across many failing decodes.

The mutated files also go through the C++ operators (libtrivium_ops.so) called
directly, below the Python kernel, and once through a scripted module in a fresh
process: each call must give the Python API's image, or a clean c10 error naming
the reason (tests/vision/native_fuzz.py holds the checks; it is also the long fuzz).
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import random
import resource
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from image_assets import JPEG_DIR, PNG_DIR, WEBP_DIR, corrupt_files
from vision.native_fuzz import (
    Case,
    call_below_python,
    check_case,
    check_clean_error,
    exercise,
    mutate,
    run_scripted,
    webp_seeds,
)

from trivium.core.errors import DecodeError, DecodeWarning
from trivium.vision.io import ImageReadMode, decode_image, decode_jpeg, encode_jpeg, image_info

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
    WEBP_DIR / "pil-hopper.webp",
    WEBP_DIR / "pil-transparent.webp",
]
# Lossless, lossless with alpha, and lossy and lossless animations.
SEED_BYTES = [path.read_bytes() for path in SEEDS] + webp_seeds()
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
        assert image.shape[-2:] == (info.height, info.width)
        assert image.dim() == (4 if info.frames > 1 else 3)
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
    except ValueError as e:  # the box is outside the image the (mutated) header declares
        assert "is outside the" in str(e), e
        return
    info = image_info(data)  # the region fitted inside the image, so its size is known
    assert region.shape[1] == min(
        math.ceil((top + height) * eighths / 8), math.ceil(info.height * eighths / 8)
    ) - (top * eighths // 8)


OPS_SETTINGS = settings(
    FUZZ_SETTINGS, max_examples=int(os.environ.get("TRIVIUM_FUZZ_OPS_EXAMPLES", "300"))
)


@OPS_SETTINGS
@given(mutated_files(), st.integers(0, 2**32 - 1))
def test_cpp_ops_agree_with_the_python_api_on_mutated_files(data: bytes, seed: int) -> None:
    # decode_image/jpeg/png with random modes, strict, dtypes, scale/min_size/roi and
    # pixel limits (some hostile), then encode_jpeg/png of a decoded or bad image.
    exercise(data, random.Random(seed))


def test_scripted_ops_in_a_fresh_process_give_the_same_results(tmp_path) -> None:
    rng = random.Random(0)
    done = [call for _ in range(40) for call in exercise(mutate(rng.choice(SEED_BYTES), rng), rng)]
    run_scripted(done, tmp_path)  # no crash, the same images and error messages


PHOTO = JPEG_DIR / "tv-rgb_pytorch.jpg"  # 100 x 100
GRAY = torch.zeros(1, 8, 8, dtype=torch.uint8)


@pytest.mark.parametrize(
    ("case", "data", "reason"),
    [
        # An roi whose end overflowed int64 passed the bounds check (a 1-row image came back).
        (Case("decode_jpeg", [0, False, None, None, [1, 0, 2**63 - 1, 3], True, -1, "fuzz.bin"],
              {"roi": [1, 0, 2**63 - 1, 3]}), PHOTO, "is outside the 100x100 image"),
        (Case("decode_jpeg", [0, False, 0.5, None, [2**63 - 1, 0, 1, 1], True, -1, "fuzz.bin"],
              {"scale": 0.5, "roi": [2**63 - 1, 0, 1, 1]}), PHOTO, "is outside the 100x100"),
        # A negative min_size picked the smallest scale.
        (Case("decode_jpeg", [0, False, None, [-1, 5], None, True, -1, "fuzz.bin"],
              {"min_size": [-1, 5]}), PHOTO, "min_size must not be negative"),
        # Options beyond 32 bits wrapped to valid ones (2**32 + 75 encoded at quality 75).
        (Case("encode_jpeg", [2**32 + 75, 420, False, False], {"quality": 2**32 + 75}), GRAY,
         "quality is out of range"),
        (Case("encode_png", [2**32 + 6], {"compression_level": 2**32 + 6}), GRAY,
         "compression_level is out of range"),
        (Case("encode_webp", [75.0, False, 2**32 + 4, False], {"method": 2**32 + 4}), GRAY,
         "method is out of range"),
        # A bad subsampling was ignored for gray images.
        (Case("encode_jpeg", [75, 411, False, False], {"subsampling": 411}), GRAY,
         "subsampling must be 444, 422, 420 or 440"),
    ],
)  # fmt: skip
def test_bad_op_arguments_raise_instead_of_wrapping(case: Case, data, reason: str) -> None:
    data = data.read_bytes() if hasattr(data, "read_bytes") else data
    error = check_case(case, data)  # the Python API refuses it too
    assert reason in str(error)


@pytest.mark.parametrize(
    ("func", "args", "reason"),
    [
        ("decode_image", [torch.zeros(4), 0], "expected a 1-D uint8 tensor"),
        ("decode_png", [torch.zeros(2, 2, dtype=torch.uint8), 0], "expected a 1-D uint8 tensor"),
        ("decode_jpeg", [torch.zeros(8, dtype=torch.uint8)[::2], 0], "must be contiguous"),
        ("decode_image", [torch.empty(0, dtype=torch.uint8), 0], "empty input"),
        ("decode_jpeg", [torch.tensor([255, 216, 255], dtype=torch.uint8), 9], "mode must be"),
        ("decode_jpeg", [torch.tensor([255, 216], dtype=torch.uint8), 0, False, 0.3], "scale"),
        ("encode_jpeg", [torch.zeros(3, 4, 4)], "expected a torch.uint8 or torch.uint16"),
        ("encode_jpeg", [torch.zeros(2, 4, 4, dtype=torch.uint8)], "with C in (1, 3)"),
        ("encode_png", [torch.zeros(3, 0, 4, dtype=torch.uint8)], "cannot encode an empty image"),
        ("encode_png", [torch.zeros(3, 4, 4, dtype=torch.uint8), 10], "compression_level"),
        ("encode_jpeg", [torch.zeros(3, 4, 4, dtype=torch.uint8), 0], "quality must be in 1..100"),
        ("decode_webp", [torch.zeros(2, 2, dtype=torch.uint8), 0], "expected a 1-D uint8 tensor"),
        ("decode_webp", [torch.tensor([82, 73, 70, 70], dtype=torch.uint8), 0], "not a WebP"),
        ("encode_webp", [torch.zeros(3, 4, 4, dtype=torch.uint16)], "expected a torch.uint8"),
        ("encode_webp", [torch.zeros(5, 4, 4, dtype=torch.uint8)], "with C in (1, 2, 3, 4)"),
        ("encode_webp", [torch.zeros(3, 4, 4, dtype=torch.uint8), 101.0], "quality must be in"),
        ("encode_webp", [torch.zeros(3, 4, 4, dtype=torch.uint8), 75.0, False, 9], "method"),
    ],
)
def test_cpp_ops_name_the_reason_for_bad_arguments(func: str, args: list, reason: str) -> None:
    with pytest.raises((ValueError, TypeError, NotImplementedError)) as caught:
        call_below_python(func, *args)
    check_clean_error(caught.value, func, path=None)  # no path given: none named
    assert reason in str(caught.value)


def test_encode_jpeg_of_a_wrapped_quality_raises() -> None:
    with pytest.raises(ValueError, match="quality is out of range"):
        encode_jpeg(GRAY, 2**32 + 75)


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
