"""One op call per decode: one image, lists on the C++ threads, and encode_jpeg."""

from __future__ import annotations

import io
import multiprocessing
import random
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from image_assets import CORRUPT_DIR, pillow_array, valid_jpegs
from torch.utils._python_dispatch import TorchDispatchMode
from vision.native_fuzz import check_list, jpeg_batch, load_seeds

from trivium.core import get_num_threads, set_num_threads
from trivium.core.errors import DecodeError, EncodeError
from trivium.vision.io import (
    ImageReadMode,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    encode_webp,
)
from trivium.vision.io.image import codec

CORRUPT_JPEGS = sorted(CORRUPT_DIR.glob("*.jpg"))


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


def test_one_decode_is_one_op_call() -> None:
    # decode_jpeg of one input: the op's .status overload once, nothing else dispatched.
    data = (CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes()
    seen: list[str] = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Record():
        image = decode_jpeg(data)
        decode_jpeg([data, data], scale=0.5)
    assert seen == ["trivium.decode_jpeg.status", "trivium.decode_jpeg.status_list"]
    want = pillow_array(CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg")
    assert np.abs(image.numpy().astype(int) - want).max() <= 1


def test_the_typed_call_is_the_status_overload() -> None:
    # One image goes through _op_calls: the same overload as the boxed call, bytes in place.
    from trivium.vision import _op_calls

    data = (CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes()
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    boxed = torch.ops.trivium.decode_jpeg.status(tensor, 1, False, 0.5)
    for given in (data, tensor):
        typed = _op_calls.decode_jpeg(given, 1, False, 0.5, None, None, None, -1, None)
        assert typed[1:] == boxed[1:] and typed[0].shape == (1, 64, 64)
        assert torch.equal(typed[0], boxed[0])
    png = encode_png(torch.arange(24, dtype=torch.uint8).reshape(2, 3, 4) * 10)
    typed = _op_calls.decode_png(bytes(png.numpy()), 0, False, torch.float32, None, -1, None)
    assert torch.equal(typed[0], torch.ops.trivium.decode_png.status(png, dtype=torch.float32)[0])
    with pytest.raises(TypeError, match="1-D uint8 tensor or bytes"):
        _op_calls.decode_jpeg(bytearray(data), 0, False, None, None, None, None, -1, None)
    kept: list[torch.Tensor] = []  # a dispatch mode may keep the bytes' tensor: it holds them

    class Keep(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kept.append(args[0])
            return func(*args, **(kwargs or {}))

    before = sys.getrefcount(data)
    with Keep():
        decode_jpeg(data)
    assert sys.getrefcount(data) == before + 1
    assert bytes(kept[0].numpy()) == data
    kept.clear()
    assert sys.getrefcount(data) == before
    with pytest.raises(TypeError, match=r"torch\.dtype"):
        _op_calls.decode_png(png, 0, False, "float32", None, -1, None)


def test_status_reports_what_the_plain_op_raises() -> None:
    truncated = torch.frombuffer(
        bytearray((CORRUPT_DIR / "pil-truncated_jpeg.jpg").read_bytes()), dtype=torch.uint8
    )
    image, error, message = torch.ops.trivium.decode_jpeg.status(truncated)
    assert (error, image.numel()) == (codec.CORRUPT, 0)
    assert message.startswith("only part of the image decodes")
    below = torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.BackendSelect)
    op = torch.ops.trivium.decode_jpeg.default
    with pytest.raises(ValueError) as raised:  # as a C++ program sees it: no Trivium class
        op.redispatch(torch._C._dispatch_keys(truncated) & below, truncated, path="t.jpg")
    assert type(raised.value) is ValueError and str(raised.value).startswith(f"t.jpg: {message}")
    with pytest.raises(DecodeError, match=f"^t.jpg: {message[:20]}"):  # called from Python
        op(truncated, path="t.jpg")


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
def test_list_errors_and_warnings_name_the_item(two_threads, strict) -> None:
    good = (CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes()
    for path in CORRUPT_JPEGS:
        datas = [good, good, path.read_bytes(), good]
        check_list(datas, strict)
        named = _outcome(lambda d=datas: decode_jpeg(d, strict=strict, path="shard-7"))[0]
        if isinstance(named, tuple):
            assert named[1].startswith("shard-7: ")


def test_lists_of_every_format(two_threads) -> None:
    # decode_image of a list: every native format in one op call, Pillow's after it.
    from PIL import Image

    rgb = decode_jpeg((CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes())[:, :40, :48]
    bmp = io.BytesIO()
    Image.fromarray(rgb.permute(1, 2, 0).numpy()).save(bmp, format="BMP")
    datas = [encode_png(rgb), encode_webp(rgb, lossless=True), bmp.getvalue(), encode_png(rgb)]
    for image in decode_image(datas):
        assert torch.equal(image, rgb)
    assert [torch.equal(i, rgb) for i in decode_png([datas[0], datas[3]])] == [True, True]
    with pytest.raises(DecodeError, match=r"^<batch item 1>: "):
        decode_png([datas[0], datas[0][:20]])


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


# ---- Encode: the planes of a [3, H, W]-contiguous image are read in place


def test_encode_reads_planes_as_the_interleaved_copy() -> None:
    rgb = decode_jpeg((CORRUPT_DIR.parent / "jpeg" / "pil-hopper.jpg").read_bytes())
    for kwargs in ({}, {"subsampling": "4:4:4"}, {"subsampling": "4:2:2", "progressive": True}):
        planes = encode_jpeg(rgb.contiguous(), 85, **kwargs)  # [3, H, W] memory
        interleaved = encode_jpeg(rgb, 85, **kwargs)  # [H, W, 3] memory
        assert torch.equal(planes, interleaved)
    with pytest.raises(EncodeError, match=r"^encode_jpeg: "):
        encode_jpeg(rgb.contiguous(), 0)
    with pytest.raises(EncodeError, match=r"^encode_jpeg: quality is out of range"):
        encode_jpeg(rgb, 2**40)


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
    assert seen.count("trivium.decode_jpeg.status") == 1
    assert seen.count("trivium.decode_jpeg.status_list") == 1
    assert seen.count("trivium.encode_jpeg.default") == 1
    traced = torch.jit.trace(lambda x: encode_jpeg(x, 90), image.contiguous(), check_trace=False)
    assert "trivium::encode_jpeg" in str(traced.graph)
    assert torch.equal(traced(image.contiguous()), encoded)
