"""decode_jpeg's direct codec call (plain eager CPU calls) against the op path and Pillow."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from image_assets import CORRUPT_DIR, pillow_array, valid_jpegs

from trivium.vision.io import ImageReadMode, decode_jpeg, ops

CORRUPT_JPEGS = sorted(CORRUPT_DIR.glob("*.jpg"))


def _through_op(monkeypatch: pytest.MonkeyPatch, *args, **kwargs):
    """decode_jpeg with the direct call turned off: the dispatcher's op decodes."""
    with monkeypatch.context() as m:
        m.setattr(ops, "direct_buffer", lambda *a: None)
        return decode_jpeg(*args, **kwargs)


def _outcome(call):
    """(result or error type and message, warning messages) of call()."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result: object = call()
        except Exception as e:
            result = (type(e), str(e))
    return result, [str(w.message) for w in caught]


def _same(a: object, b: object) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor)
        assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
        assert torch.equal(a, b)
    else:
        assert a == b


@pytest.mark.parametrize("path", valid_jpegs(), ids=lambda p: p.name)
@pytest.mark.parametrize("mode", [ImageReadMode.UNCHANGED, ImageReadMode.GRAY, ImageReadMode.RGB])
def test_direct_call_equals_the_op(monkeypatch, path: Path, mode: ImageReadMode) -> None:
    data = path.read_bytes()
    for source in (
        data,
        bytearray(data),
        np.frombuffer(data, np.uint8),
        torch.tensor(list(data), dtype=torch.uint8),
    ):
        direct = _outcome(lambda s=source: decode_jpeg(s, mode))
        _same(direct[0], _outcome(lambda s=source: _through_op(monkeypatch, s, mode))[0])


@pytest.mark.parametrize("path", CORRUPT_JPEGS, ids=lambda p: p.name)
@pytest.mark.parametrize("strict", [True, False])
def test_errors_and_warnings_name_the_file_as_the_op_does(monkeypatch, path, strict) -> None:
    data = path.read_bytes()
    where = f"images/{path.name}"
    direct, direct_warnings = _outcome(lambda: decode_jpeg(data, strict=strict, path=where))
    op, op_warnings = _outcome(lambda: _through_op(monkeypatch, data, strict=strict, path=where))
    _same(direct, op)
    assert direct_warnings == op_warnings
    if isinstance(direct, tuple):
        assert direct[1].startswith(where)


def test_roi_scale_and_limit_as_the_op(monkeypatch) -> None:
    data = (CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes()
    calls = [
        {"roi": (8, 4, 40, 50), "scale": 0.5},
        {"roi": (100, 100, 200, 200)},  # outside the image: ValueError naming decode_jpeg
        {"max_pixels": 100},
        {"max_pixels": None},
    ]
    for kwargs in calls:
        _same(
            _outcome(lambda k=kwargs: decode_jpeg(data, **k))[0],
            _outcome(lambda k=kwargs: _through_op(monkeypatch, data, **k))[0],
        )


def test_direct_call_matches_pillow() -> None:
    path = CORRUPT_DIR.parent / "jpeg" / "jd-rgb.jpg"
    image = decode_jpeg(path.read_bytes())
    assert np.array_equal(image.numpy(), pillow_array(path))


def test_direct_buffer_reads_in_place() -> None:
    data = (CORRUPT_DIR.parent / "jpeg" / "jd-rgb.jpg").read_bytes()
    assert ops.direct_buffer(data, None, "cpu") is data
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    assert np.shares_memory(ops.direct_buffer(tensor, None, torch.device("cpu")), tensor.numpy())
    # Where the op must run: out, another device, other dtypes, empty data.
    assert ops.direct_buffer(data, torch.empty(0, dtype=torch.uint8), "cpu") is None
    assert ops.direct_buffer(data, None, "meta") is None
    assert ops.direct_buffer(tensor.view(torch.int8), None, "cpu") is None
    assert ops.direct_buffer(b"", None, "cpu") is None
