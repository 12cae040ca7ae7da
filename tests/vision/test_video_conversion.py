"""RGB conversion in the PyAV backend: one reused converter, the pixels of PyAV's own conversion."""

from __future__ import annotations

import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from vision.video_testclips import pyav_frames

from trivium.vision.io import VideoReader
from trivium.vision.io.video.buffers import SHARED_POOL
from trivium.vision.io.video.pyav import video_to_tensor
from trivium.vision.io.video.swscale import FrameSizeError, RGBConverter

av = pytest.importorskip("av")

# (name, suffix, ffmpeg output arguments): colour tags and pixel formats the scaler
# must convert exactly as ``frame.to_ndarray(format="rgb24")`` does.
ENCODES = [
    ("bt601-limited", ".mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p"]),
    (
        "bt709-tagged",
        ".mp4",
        ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-colorspace", "bt709", "-color_range", "tv"],
    ),
    ("full-range", ".mp4", ["-c:v", "libx264", "-pix_fmt", "yuvj420p"]),
    ("yuv444", ".mkv", ["-c:v", "libx264", "-pix_fmt", "yuv444p"]),
    ("10-bit", ".mkv", ["-c:v", "libx264", "-pix_fmt", "yuv420p10le"]),
    ("vp9", ".webm", ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-pix_fmt", "yuv420p"]),
    ("mpeg4", ".avi", ["-c:v", "mpeg4", "-q:v", "4"]),
]


def encode(path: Path, args: list[str]) -> Path:
    """A 1 s, 96x64 testsrc2 clip at 10 fps; skips if ffmpeg cannot make it."""
    done = subprocess.run(
        [
            "ffmpeg", "-v", "error", "-y", "-f", "lavfi",
            "-i", "testsrc2=size=96x64:rate=10:duration=1", *args, str(path),
        ],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"ffmpeg cannot encode {path.name}: {done.stderr.decode()[-200:]}")
    return path


@pytest.mark.parametrize("name,suffix,args", ENCODES, ids=[e[0] for e in ENCODES])
def test_frames_match_pyav_to_ndarray(tmp_path: Path, name: str, suffix: str, args: list) -> None:
    """Sequential frames and a random-access batch: PyAV's own rgb24 pixels, frame for frame."""
    path = encode(tmp_path / f"{name}{suffix}", args)
    reference = pyav_frames(path)
    for threads in (0, 1):
        with VideoReader(path, num_threads=threads) as reader:
            frames = [f["data"] for f in reader]
            batch = reader.get_frames_at([7, 0, 3]).data
        assert len(frames) == len(reference)
        for frame, (array, _) in zip(frames, reference, strict=True):
            np.testing.assert_array_equal(frame.permute(1, 2, 0).numpy(), array)
        for row, position in zip(batch, [7, 0, 3], strict=True):
            np.testing.assert_array_equal(row.permute(1, 2, 0).numpy(), reference[position][0])


def test_video_to_tensor_with_and_without_a_shared_converter() -> None:
    """One converter across frames of different sizes, formats and tags: PyAV's pixels."""
    rng = np.random.default_rng(0)
    shared = RGBConverter()
    cases = [
        (6, 8, "yuv420p", None),
        (10, 4, "yuvj420p", None),
        (6, 8, "yuv444p", None),
        (8, 30, "yuv420p", None),  # a width the SIMD rows do not divide
        (12, 16, "yuv420p", (1, 2)),  # BT.709, full range
        (12, 16, "yuv420p", (6, 1)),  # SMPTE 170M, limited
        (7, 10, "yuv420p", None),  # odd height: PyAV's path
    ]
    for height, width, fmt, tags in cases:
        rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        frame = av.VideoFrame.from_ndarray(rgb, "rgb24").reformat(format=fmt)
        if tags is not None:
            frame.colorspace, frame.color_range = tags
        expected = frame.to_ndarray(format="rgb24")
        ours = video_to_tensor(frame, shared)
        assert ours.shape == (3, height, width) and ours.dtype == torch.uint8
        np.testing.assert_array_equal(ours.permute(1, 2, 0).numpy(), expected)
        assert torch.equal(ours, video_to_tensor(frame))
        out = np.zeros((height, width, 3), np.uint8)
        assert video_to_tensor(frame, shared, out).numpy().base is not None
        np.testing.assert_array_equal(out, expected)


def test_converter_writes_into_out_and_reuses_only_released_buffers() -> None:
    """A pooled buffer is written again only once no result (or view of one) holds it."""
    SHARED_POOL.clear()
    rng = np.random.default_rng(1)
    converter = RGBConverter()
    frames = [
        av.VideoFrame.from_ndarray(
            rng.integers(0, 256, (16, 32, 3), dtype=np.uint8), "rgb24"
        ).reformat(format="yuv420p")
        for _ in range(6)
    ]
    expected = [f.to_ndarray(format="rgb24") for f in frames]
    converter.to_array(frames[0])
    assert converter._ctx is not None  # swscale straight into our buffers, not PyAV's copy
    kept = [torch.from_numpy(converter.to_array(f))[1:] for f in frames[:4]]  # views only
    for view, array in zip(kept, expected[:4], strict=True):
        np.testing.assert_array_equal(view.numpy(), array[1:])
    first = converter.to_array(frames[4])
    address = first.ctypes.data
    del first
    again = converter.to_array(frames[5])  # the released buffer comes back
    assert again.ctypes.data == address
    np.testing.assert_array_equal(again, expected[5])
    for view, array in zip(kept, expected[:4], strict=True):  # the held ones are untouched
        np.testing.assert_array_equal(view.numpy(), array[1:])
    out = np.empty((16, 32, 3), np.uint8)
    assert converter.to_array(frames[0], out) is out
    np.testing.assert_array_equal(out, expected[0])
    with pytest.raises(FrameSizeError, match=r"from \(8, 32, 3\) to \(16, 32, 3\)"):
        converter.to_array(frames[0], np.empty((8, 32, 3), np.uint8))


def test_interlaced_frames_convert_as_pyav_does(tmp_path: Path) -> None:
    """Interlaced H.264 (field by field in swscale's frame API): PyAV's pixels."""
    path = encode(
        tmp_path / "interlaced.mp4",
        ["-c:v", "libx264", "-flags", "+ilme+ildct", "-pix_fmt", "yuv420p"],
    )
    reference = pyav_frames(path)
    with VideoReader(path) as reader:
        frames = [f["data"].permute(1, 2, 0).numpy() for f in reader]
    assert len(frames) == len(reference)
    for frame, (array, _) in zip(frames, reference, strict=True):
        np.testing.assert_array_equal(frame, array)


def test_frames_outlive_the_next_conversion(tmp_path: Path) -> None:
    """Each frame owns its pixels: converting the next one through the same scaler leaves it."""
    path = encode(tmp_path / "a.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p"])
    with VideoReader(path) as reader:
        frames = [f["data"] for f in reader]
    reference = pyav_frames(path)
    assert not torch.equal(frames[0], frames[5])  # testsrc2 moves
    for frame, (array, _) in zip(frames, reference, strict=True):
        np.testing.assert_array_equal(frame.permute(1, 2, 0).numpy(), array)


def test_one_converter_per_reader_and_none_in_a_pickle(tmp_path: Path) -> None:
    """The backend keeps one converter for all frames; a pickled reader leaves it behind."""
    path = encode(tmp_path / "a.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p"])
    with VideoReader(path) as reader:
        next(reader)
        converter = reader.backend._converter
        assert converter is not None
        next(reader)
        reader.get_frames_at([0, 9])
        assert reader.backend._converter is converter
        twin = pickle.loads(pickle.dumps(reader))
    with twin:
        assert twin.backend._converter is None
        np.testing.assert_array_equal(
            next(twin)["data"].permute(1, 2, 0).numpy(), pyav_frames(path)[2][0]
        )


def test_batches_from_the_pool_are_not_reused_while_anything_holds_them(tmp_path: Path) -> None:
    """A later batch of the same shape never lands in memory a kept view still reads."""
    path = encode(tmp_path / "a.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p"])
    reference = [array for array, _ in pyav_frames(path)]
    with VideoReader(path) as reader:
        first = reader.get_frames_at([0, 1, 2]).data
        kept = first[1]  # a view of the batch: the batch's memory stays in use
        address = first.data_ptr()
        del first
        second = reader.get_frames_at([5, 6, 7]).data
        assert second.data_ptr() != address
        del second
        third = reader.get_frames_at([8, 9, 3]).data  # released: its memory comes back
    np.testing.assert_array_equal(kept.permute(1, 2, 0).numpy(), reference[1])
    for row, position in zip(third, [8, 9, 3], strict=True):
        np.testing.assert_array_equal(row.permute(1, 2, 0).numpy(), reference[position])
