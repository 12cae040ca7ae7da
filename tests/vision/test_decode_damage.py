"""Damaged-but-readable JPEGs decode by default with Pillow's pixels and one warning naming them.

The damage is made in real JPEGs of tests/assets: bytes corrupted inside the
entropy-coded data, a marker inside a data segment, the DC scan of a progressive file
removed, extraneous bytes before a marker. Every entry point (decode_jpeg,
decode_image, read_image, the list decode, the op, the fused decodes) decides the same.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from damaged_jpegs import DAMAGES
from image_assets import CORRUPT_DIR, JPEG_DIR
from PIL import Image

from trivium.core.errors import DecodeError, DecodeWarning
from trivium.vision import transforms as T
from trivium.vision.io import ImageReadMode, decode_image, decode_jpeg, read_image
from trivium.vision.io.image.codec import decoding_file

PHOTO = JPEG_DIR / "tv-grace_hopper_517x606.jpg"  # baseline 4:2:0


def _pillow_rgb(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).transpose(2, 0, 1)


def _one_warning(decode: Callable[[], torch.Tensor]) -> tuple[torch.Tensor, str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        image = decode()
    damage = [w for w in caught if issubclass(w.category, DecodeWarning)]
    assert len(damage) == 1, [str(w.message) for w in caught]
    return image, str(damage[0].message)


@pytest.fixture(scope="module", params=list(DAMAGES), ids=list(DAMAGES))
def damaged(request, tmp_path_factory) -> tuple[Path, bytes]:
    data = DAMAGES[request.param](PHOTO.read_bytes())
    path = tmp_path_factory.mktemp("damaged") / f"{request.param.replace(' ', '_')}.jpg"
    path.write_bytes(data)
    return path, data


REASONS = {
    "bad_Huffman_code": "bad Huffman code",
    "marker_in_data": "premature end of data segment",
    "extraneous_bytes": "extraneous bytes before marker",
    "progressive_without_DC": "",
}


def test_the_damage_is_real(damaged) -> None:
    # Each file is damaged (strict raises, naming it) and Pillow reads it all the same.
    path, data = damaged
    with pytest.raises(DecodeError, match="corrupt image data") as caught:
        decode_jpeg(data, strict=True, path=path)
    assert REASONS[path.stem] in str(caught.value)
    assert caught.value.path == str(path)
    assert _pillow_rgb(data).shape == (3, 606, 517)


def test_every_entry_point_decodes_with_pillows_pixels_and_one_warning(damaged) -> None:
    path, data = damaged
    want = _pillow_rgb(data)
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    calls = {
        "decode_jpeg": lambda: decode_jpeg(data, ImageReadMode.RGB, path=path),
        "decode_image": lambda: decode_image(data, ImageReadMode.RGB, path=path),
        "read_image": lambda: read_image(path, ImageReadMode.RGB),
        "op": lambda: torch.ops.trivium.decode_image(tensor, 3, path=str(path)),
        "list": lambda: decode_jpeg([data], ImageReadMode.RGB, path=path)[0],
    }
    for name, call in calls.items():
        image, message = _one_warning(call)
        assert message.startswith(f"{path}: "), (name, message)
        assert message.endswith("decoded what the data allows (strict=True raises)")
        np.testing.assert_array_equal(image.numpy(), want, err_msg=name)


def test_strict_raises_on_every_entry_point(damaged) -> None:
    path, data = damaged
    for call in (
        lambda: decode_jpeg(data, path=path, strict=True),
        lambda: decode_image(data, path=path, strict=True),
        lambda: read_image(path, strict=True),
        lambda: decode_jpeg([data], path=path, strict=True),
    ):
        with pytest.raises(DecodeError) as caught:
            call()
        assert caught.value.path == str(path)


def test_fused_decodes_warn_once_naming_the_file_a_dataset_reads(damaged) -> None:
    path, data = damaged
    for transform in (T.DecodeResize(64), T.DecodeCenterCrop(100), T.DecodeRandomResizedCrop(32)):
        with decoding_file(path):  # as DatasetFolder names the file it reads
            image, message = _one_warning(lambda t=transform: t(data))
        assert message.startswith(f"{path}: ")
        assert image.dtype == torch.uint8


def test_fused_decode_equals_decoding_then_transforming(damaged) -> None:
    _, data = damaged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DecodeWarning)
        fused = T.DecodeCenterCrop(100)(data)
        unfused = T.CenterCrop(100)(decode_image(data))
    assert torch.equal(fused, unfused)


def test_a_truncated_file_raises_by_default_as_pillow_and_torchvision() -> None:
    # Pillow raises "image file is truncated" and torchvision's decode_jpeg refuses it too.
    cut = PHOTO.read_bytes()[:40_000]
    with pytest.raises(OSError, match="truncated"):
        Image.open(io.BytesIO(cut)).load()
    with pytest.raises(DecodeError, match=r"^cut\.jpg: only part of the image decodes"):
        decode_image(cut, path="cut.jpg")
    image, message = _one_warning(lambda: decode_jpeg(cut, strict=False, path="cut.jpg"))
    assert message.startswith("cut.jpg: Premature end of JPEG file")
    assert image.shape == (3, 606, 517)


def test_the_real_damaged_file_decodes_as_pillow() -> None:
    path = CORRUPT_DIR / "jd-its-8e5e74dbf9b6.jpg"  # premature end of data segment
    image, message = _one_warning(lambda: read_image(path, ImageReadMode.RGB))
    assert message.startswith(f"{path}: Corrupt JPEG data")
    np.testing.assert_array_equal(image.numpy(), _pillow_rgb(path.read_bytes()))


def test_a_region_that_meets_damage_gets_the_full_decodes_verdict() -> None:
    # tv-corrupt.jpg: bad Huffman codes from its third row of blocks, then a marker no
    # decoder reads. A region that meets the first reads on to the end, so it raises
    # as the full decode does instead of returning the region with a warning; its top
    # 16 rows hold no damage.
    data = (CORRUPT_DIR / "tv-corrupt.jpg").read_bytes()
    with pytest.raises(DecodeError, match="0xae"):
        decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8))
    for roi in [(0, 0, 60, 60), (16, 0, 8, 120)]:
        with pytest.raises(DecodeError, match="0xae"):
            decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8), roi=roi)
    with pytest.raises(DecodeError, match="0xae"):
        T.DecodeCenterCrop(60)(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8), roi=(0, 0, 16, 120))
    # A region above a cut meets no damage: its pixels are intact, no warning.
    photo = (JPEG_DIR / "tv-grace_hopper_517x606.jpg").read_bytes()
    cut = torch.frombuffer(bytearray(photo[: len(photo) * 3 // 4]), dtype=torch.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        top = decode_jpeg(cut, roi=(0, 0, 64, 517))
    full = decode_jpeg(torch.frombuffer(bytearray(photo), dtype=torch.uint8))
    assert torch.equal(top, full[:, :64])
