"""The direct codec calls of decode_jpeg (one image, lists) and encode_jpeg against the ops."""

from __future__ import annotations

import multiprocessing
import random
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from image_assets import CORRUPT_DIR, pillow_array, valid_jpegs
from torch.utils._python_dispatch import TorchDispatchMode
from vision.native_fuzz import check_list, jpeg_batch, load_seeds

from trivium.core import get_num_threads, set_num_threads
from trivium.core.errors import DecodeError
from trivium.vision.io import ImageReadMode, codec, decode_jpeg, encode_jpeg, ops

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


# ---- Lists: decoded natively on the thread pool, errors from the first failure


@pytest.fixture
def two_threads():
    before = get_num_threads()
    set_num_threads(2)
    yield
    set_num_threads(before)


def _list_outcome(call):
    """(results or error, warning messages sorted: threads may finish in any order)."""
    result, messages = _outcome(call)
    return result, sorted(messages)


@pytest.mark.parametrize("mode", [ImageReadMode.UNCHANGED, ImageReadMode.RGB])
def test_list_on_threads_equals_one_by_one(two_threads, mode) -> None:
    datas = [p.read_bytes() for p in valid_jpegs()] * 3  # more items than threads, mixed sizes
    images = decode_jpeg(datas, mode)
    assert isinstance(images, list) and len(images) == len(datas)
    for image, data in zip(images, datas, strict=True):
        _same(image, decode_jpeg(data, mode))
    # Inputs of each kind the codec reads in place, scaled and cropped alike.
    data = (CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes()
    sources = [
        data,
        bytearray(data),
        np.frombuffer(data, np.uint8),
        torch.frombuffer(bytearray(data), dtype=torch.uint8),
    ]
    for kwargs in ({}, {"scale": 0.5}, {"roi": (8, 4, 40, 50), "scale": 0.25}):
        for image in decode_jpeg(sources, mode, **kwargs):
            _same(image, decode_jpeg(data, mode, **kwargs))


@pytest.mark.parametrize("strict", [True, False])
def test_list_errors_and_warnings_as_the_op(monkeypatch, two_threads, strict) -> None:
    good = (CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes()
    for path in CORRUPT_JPEGS:
        datas = [good, good, path.read_bytes(), good]
        direct = _list_outcome(lambda d=datas: decode_jpeg(d, strict=strict))
        op = _list_outcome(lambda d=datas: _through_op(monkeypatch, d, strict=strict))
        if isinstance(op[0], list):
            assert isinstance(direct[0], list)
            for a, b in zip(direct[0], op[0], strict=True):
                _same(a, b)
        else:
            _same(direct[0], op[0])
            assert "<batch item 2>" in direct[0][1]
        assert direct[1] == op[1]
        named = _outcome(lambda d=datas: decode_jpeg(d, strict=strict, path="shard-7"))[0]
        if isinstance(named, tuple):
            assert named[1].startswith("shard-7: ")


@pytest.mark.parametrize("strict", [True, False])
def test_lists_of_mutated_jpegs_as_one_by_one(strict: bool) -> None:
    rng = random.Random(11 + strict)
    jpegs = [seed for seed in load_seeds() if seed.startswith(b"\xff\xd8")]
    for _ in range(40):
        check_list(jpeg_batch(jpegs, rng), strict)


def test_list_raises_for_the_first_bad_item_in_list_order(two_threads) -> None:
    good = (CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes()
    truncated = (CORRUPT_DIR / "pil-truncated_jpeg.jpg").read_bytes()
    missing_sof = (CORRUPT_DIR / "jd-missing-sof.jpg").read_bytes()
    with pytest.raises(DecodeError, match=r"^<batch item 1>: ") as first:
        decode_jpeg([good, missing_sof, good, truncated] + [good] * 20)
    assert first.value.reason == _outcome(lambda: decode_jpeg(missing_sof))[0][1]


def test_lists_from_several_python_threads(two_threads) -> None:
    # Calls from several threads share the decode threads; each gets its own images.
    datas = [p.read_bytes() for p in valid_jpegs()]
    expected = [decode_jpeg(data) for data in datas]
    with ThreadPoolExecutor(3) as callers:
        for images in callers.map(decode_jpeg, [datas[i:] + datas[:i] for i in range(6)]):
            assert len(images) == len(datas)
        results = list(callers.map(decode_jpeg, [datas] * 6))
    for images in results:
        for image, want in zip(images, expected, strict=True):
            _same(image, want)


def test_list_in_a_forked_child(two_threads) -> None:
    # The decode threads do not exist in a forked child: it starts its own.
    datas = [p.read_bytes() for p in valid_jpegs()][:6]
    expected = _decoded_bytes(datas)
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        assert pool.apply(_decoded_bytes, (datas,)) == expected


def _decoded_bytes(datas: list[bytes]) -> list[bytes]:
    # NumPy, not torch ops: torch's OpenMP threads do not survive a fork.
    set_num_threads(2)
    return [image.numpy().tobytes() for image in decode_jpeg(datas)]


# ---- Encode: the codec called directly gives the op's bytes and errors


def _encode_through_op(monkeypatch: pytest.MonkeyPatch, *args, **kwargs):
    with monkeypatch.context() as m:
        m.setattr(codec, "direct_pixels", lambda image, **_: None)
        return encode_jpeg(*args, **kwargs)


def test_direct_encode_equals_the_op(monkeypatch) -> None:
    rgb = decode_jpeg((CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes())
    gray = rgb[:1].contiguous()  # [C, H, W]-contiguous: copied to (H, W, C) first
    wide = (rgb.to(torch.int32) * 257).to(torch.uint16)
    calls = [
        ((rgb, 90), {}),
        ((rgb, 75), {"subsampling": "4:4:4", "progressive": True}),
        ((rgb, 50), {"subsampling": "4:2:2", "optimize": True}),
        ((rgb[:, 3:40, 5:60], 95), {}),  # a strided crop
        ((rgb.contiguous(), 90), {}),  # [3, H, W]-contiguous: its planes read in place
        ((rgb.contiguous(), 85), {"subsampling": "4:4:4"}),
        ((rgb.contiguous(), 70), {"subsampling": "4:2:2", "progressive": True}),
        ((rgb.contiguous(), 80), {"subsampling": "4:4:0"}),  # rows interleaved for libjpeg
        ((rgb.contiguous(), 0), {}),
        ((gray, 80), {}),
        ((wide, 90), {}),
        ((rgb, 0), {}),  # quality outside 1..100: the codec's error, named as the op names it
        ((rgb, 2**40), {}),  # beyond the codec's int: the op's error
    ]
    for args, kwargs in calls:
        direct = _outcome(lambda a=args, k=kwargs: encode_jpeg(*a, **k))[0]
        op = _outcome(lambda a=args, k=kwargs: _encode_through_op(monkeypatch, *a, **k))[0]
        _same(direct, op)
    assert codec.direct_pixels(rgb).base is not None  # a decoded image is read in place


@pytest.fixture
def one_thread():
    before = get_num_threads()
    set_num_threads(1)  # a mode is per thread: the list's items decode on this one
    yield
    set_num_threads(before)


@pytest.mark.filterwarnings(
    "ignore:`torch.jit.trace` is deprecated", "ignore::torch.jit.TracerWarning"
)
def test_dispatch_modes_and_jit_trace_see_the_ops(one_thread) -> None:
    # A shortcut around the dispatcher would hide the decode and encode from them.
    data = (CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes()
    image = decode_jpeg(data)
    seen: list[str] = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Record():
        _same(decode_jpeg(data), image)
        _same(decode_jpeg([data, data])[1], image)
        encoded = encode_jpeg(image, 90)
    assert seen.count("trivium.decode_jpeg.default") == 3
    assert seen.count("trivium.encode_jpeg.default") == 1
    traced = torch.jit.trace(lambda x: encode_jpeg(x, 90), image.contiguous(), check_trace=False)
    assert "trivium::encode_jpeg" in str(traced.graph)
    assert torch.equal(traced(image.contiguous()), encoded)
