"""RGB conversion in the PyAV backend: one reused scaler, the pixels of PyAV's own conversion."""

from __future__ import annotations

import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from vision.video_testclips import pyav_frames

from trivium.vision.io import VideoReader
from trivium.vision.io.video_pyav import video_to_tensor

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


def test_video_to_tensor_with_and_without_a_shared_reformatter() -> None:
    """One VideoReformatter across frames of different sizes and formats: same as fresh ones."""
    from av.video.reformatter import VideoReformatter

    rng = np.random.default_rng(0)
    shared = VideoReformatter()
    for height, width, fmt in [(6, 8, "yuv420p"), (10, 4, "yuvj420p"), (6, 8, "yuv444p")]:
        rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        frame = av.VideoFrame.from_ndarray(rgb, "rgb24").reformat(format=fmt)
        ours = video_to_tensor(frame, shared)
        assert ours.shape == (3, height, width) and ours.dtype == torch.uint8
        np.testing.assert_array_equal(
            ours.permute(1, 2, 0).numpy(), frame.to_ndarray(format="rgb24")
        )
        assert torch.equal(ours, video_to_tensor(frame))


def test_frames_outlive_the_next_conversion(tmp_path: Path) -> None:
    """Each frame owns its pixels: converting the next one through the same scaler leaves it."""
    path = encode(tmp_path / "a.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p"])
    with VideoReader(path) as reader:
        frames = [f["data"] for f in reader]
    reference = pyav_frames(path)
    assert not torch.equal(frames[0], frames[5])  # testsrc2 moves
    for frame, (array, _) in zip(frames, reference, strict=True):
        np.testing.assert_array_equal(frame.permute(1, 2, 0).numpy(), array)


def test_one_scaler_per_reader_and_none_in_a_pickle(tmp_path: Path) -> None:
    """The backend keeps one scaler for all frames; a pickled reader leaves it behind."""
    path = encode(tmp_path / "a.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p"])
    with VideoReader(path) as reader:
        next(reader)
        scaler = reader.backend._reformatter
        assert scaler is not None
        next(reader)
        reader.get_frames_at([0, 9])
        assert reader.backend._reformatter is scaler
        twin = pickle.loads(pickle.dumps(reader))
    with twin:
        assert twin.backend._reformatter is None
        np.testing.assert_array_equal(
            next(twin)["data"].permute(1, 2, 0).numpy(), pyav_frames(path)[2][0]
        )
