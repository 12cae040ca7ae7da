"""trivium.core.sources: one way from a path, bytes, array, tensor or file object to a source."""

from __future__ import annotations

import errno
import io
import os
import pathlib

import numpy as np
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from trivium.core.errors import EmptyInputError, PathNotFoundError
from trivium.core.sources import (
    as_bytes_buffer,
    as_bytes_tensor,
    as_readable,
    check_path,
    check_source,
    describe_source,
    source_name,
)

PAYLOAD = bytes(range(7))


@pytest.fixture
def files(tmp_path: pathlib.Path) -> dict[str, pathlib.Path]:
    full = tmp_path / "clip.mp4"
    full.write_bytes(PAYLOAD)
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    return {"full": full, "empty": empty, "dir": tmp_path, "missing": tmp_path / "nope.png"}


def test_check_path_accepts_a_file_and_returns_its_string(files):
    assert check_path(files["full"], "video") == os.fspath(files["full"])


def test_check_path_missing_is_path_not_found_as_open_says(files):
    with pytest.raises(FileNotFoundError) as opened, open(files["missing"], "rb"):
        pass
    with pytest.raises(PathNotFoundError) as e:
        check_path(files["missing"], "image")
    assert e.value.errno == opened.value.errno == errno.ENOENT
    assert e.value.filename == os.fspath(files["missing"])
    assert str(e.value) == f"{files['missing']}: no such file or directory"


def test_check_path_below_a_file_is_path_not_found(files):
    with pytest.raises(PathNotFoundError):
        check_path(files["full"] / "inner.mp4", "video")


@pytest.mark.parametrize(("kind", "article"), [("video", "a"), ("audio", "an"), ("image", "an")])
def test_check_path_directory(files, kind, article):
    with pytest.raises(IsADirectoryError) as e:
        check_path(files["dir"], kind)
    assert str(e.value) == f"{files['dir']}: is a directory, not {article} {kind} file"


def test_check_path_empty_file(files):
    with pytest.raises(EmptyInputError) as e:
        check_path(files["empty"], "audio")
    assert str(e.value) == f"{files['empty']}: empty input (0 bytes)"


def test_source_name_and_describe():
    named = io.BufferedReader(io.BytesIO(PAYLOAD))
    assert source_name(pathlib.Path("a/b.wav")) == os.path.join("a", "b.wav")
    assert source_name(b"x") is None and source_name(io.BytesIO()) is None
    assert source_name(named) is None  # a BufferedReader over BytesIO has no name
    assert describe_source(bytearray(b"x")) == "<bytearray>"
    assert describe_source(memoryview(b"x")) == "<memoryview>"
    assert describe_source(torch.zeros(2, dtype=torch.uint8)) == "<uint8 tensor>"
    assert describe_source(np.zeros(2, np.uint8)) == "<ndarray>"


def test_source_name_of_an_open_file(files):
    with open(files["full"], "rb") as f:
        assert source_name(f) == describe_source(f) == os.fspath(files["full"])


@pytest.mark.parametrize(
    "data",
    [
        PAYLOAD,
        bytearray(PAYLOAD),
        memoryview(PAYLOAD),
        np.frombuffer(PAYLOAD, np.uint8),
        torch.tensor(list(PAYLOAD), dtype=torch.uint8),
        torch.tensor(list(PAYLOAD), dtype=torch.uint8).repeat_interleave(2)[::2],  # strided
    ],
    ids=["bytes", "bytearray", "memoryview", "ndarray", "tensor", "strided-tensor"],
)
def test_as_bytes_buffer_and_tensor_hold_the_bytes(data):
    assert bytes(memoryview(as_bytes_buffer(data, "f"))) == PAYLOAD
    t = as_bytes_tensor(data, "f")
    assert t.dtype == torch.uint8 and t.dim() == 1 and t.is_contiguous()
    assert t.numpy().tobytes() == PAYLOAD


def test_as_bytes_buffer_views_arrays_of_any_dtype_as_their_bytes():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert bytes(as_bytes_buffer(a)) == a.tobytes()


def test_no_copy_where_the_memory_allows():
    data = bytearray(PAYLOAD)
    assert as_bytes_buffer(data) is data
    array = np.frombuffer(bytearray(PAYLOAD), np.uint8)
    assert np.shares_memory(as_bytes_buffer(array), array)
    tensor = torch.tensor(list(PAYLOAD), dtype=torch.uint8)
    assert as_bytes_tensor(tensor).data_ptr() == tensor.data_ptr()
    assert np.shares_memory(as_bytes_buffer(tensor), tensor.numpy())
    assert as_bytes_tensor(array).data_ptr() == array.ctypes.data


def test_as_bytes_tensor_copies_read_only_memory():
    data = bytes(PAYLOAD)
    t = as_bytes_tensor(data)
    t[0] = 99
    assert data == PAYLOAD


@pytest.mark.parametrize(
    "data", [torch.zeros(4), torch.zeros(2, 2, dtype=torch.uint8)], ids=["float", "2-D"]
)
def test_wrong_tensors_are_type_errors_naming_the_function(data):
    expected = (
        f"decode_png: expected a 1-D uint8 tensor of encoded bytes, "
        f"got {data.dtype} of shape {tuple(data.shape)}"
    )
    for convert in (as_bytes_buffer, as_bytes_tensor):
        with pytest.raises(TypeError) as e:
            convert(data, "decode_png")
        assert str(e.value) == expected


def test_what_names_the_content():
    with pytest.raises(TypeError, match=r"^expected a 1-D uint8 tensor of encoded audio, got"):
        as_bytes_buffer(torch.zeros(3), what="encoded audio")


def test_other_types_are_type_errors():
    with pytest.raises(TypeError) as e:
        as_bytes_buffer("a.jpg", "decode_image")
    assert str(e.value) == (
        "decode_image: expected encoded bytes (tensor, bytes or array), got <class 'str'>"
    )


def test_fake_tensors_are_refused():
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.zeros(4, dtype=torch.uint8))
        with pytest.raises(TypeError, match=r"^decode_jpeg: cannot decode a fake tensor"):
            as_bytes_buffer(fake, "decode_jpeg")
        with pytest.raises(TypeError, match="cannot decode a fake tensor"):
            as_bytes_tensor(fake, "decode_jpeg")


@pytest.mark.parametrize(
    "empty",
    [b"", bytearray(), memoryview(b""), np.zeros(0, np.uint8), torch.zeros(0, dtype=torch.uint8)],
    ids=["bytes", "bytearray", "memoryview", "ndarray", "tensor"],
)
def test_empty_input(empty):
    for convert in (as_bytes_buffer, as_bytes_tensor):
        with pytest.raises(EmptyInputError) as e:
            convert(empty, "decode_image")
        assert str(e.value) == "empty input (0 bytes)"
        out = convert(empty, allow_empty=True)
        assert (out.numel() if isinstance(out, torch.Tensor) else memoryview(out).nbytes) == 0


def test_as_readable_path_is_not_touched():
    assert as_readable(pathlib.Path("no/such.wav"), "audio") == ("no/such.wav", "no/such.wav")


@pytest.mark.parametrize(
    ("data", "name"),
    [
        (PAYLOAD, "<bytes>"),
        (bytearray(PAYLOAD), "<bytearray>"),
        (torch.tensor(list(PAYLOAD), dtype=torch.uint8), "<uint8 tensor>"),
    ],
)
def test_as_readable_in_memory_is_a_bytes_io(data, name):
    stream, got = as_readable(data, "audio")
    assert isinstance(stream, io.BytesIO) and stream.read() == PAYLOAD and got == name


def test_as_readable_file_objects_pass_through(files):
    stream = io.BytesIO(PAYLOAD)
    assert as_readable(stream, "audio") == (stream, "<BytesIO>")
    with open(files["full"], "rb") as f:
        assert as_readable(f, "audio") == (f, os.fspath(files["full"]))


def test_as_readable_errors():
    with pytest.raises(EmptyInputError):
        as_readable(b"", "audio")
    with pytest.raises(TypeError, match=r"^expected a 1-D uint8 tensor of encoded audio"):
        as_readable(torch.zeros(2), "audio")
    with pytest.raises(TypeError) as e:
        as_readable(object(), "audio")
    assert str(e.value) == (
        "expected a path, a binary file-like object, or encoded bytes "
        "(bytes, bytearray, memoryview, uint8 tensor), got object"
    )


def test_check_source(files):
    stream = io.BytesIO(PAYLOAD)
    assert check_source(files["full"], "video") is files["full"]
    assert check_source(PAYLOAD, "video") is PAYLOAD
    assert check_source(stream, "video") is stream
    with pytest.raises(PathNotFoundError):
        check_source(files["missing"], "video")
    with pytest.raises(IsADirectoryError, match=r"is a directory, not a video file$"):
        check_source(files["dir"], "video")
    with pytest.raises(EmptyInputError):
        check_source(files["empty"], "video")
    with pytest.raises(EmptyInputError):
        check_source(bytearray(), "video")
    with pytest.raises(TypeError) as e:
        check_source(3, "video")
    assert str(e.value) == (
        "expected a path, bytes or a binary file object for the video source, got int"
    )
