"""Timestamps of MPEG-4 Part 2 AVIs with B-frames (the files of UCF101 and HMDB51).

AVI keeps no presentation timestamps; with B-frames the pts FFmpeg infers for the
packets come out pairwise swapped on the decoded frames. Reported times must rise in
display order (FFmpeg's best-effort timestamp) in both backends and in VideoClips.
The reference for pixels is PyAV's own decode, which is in display order.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
import torch

from trivium.vision.io import VideoClips, VideoReader

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")


def _encoders() -> list[str]:
    if shutil.which("ffmpeg") is None:
        return ["mpeg4"]
    listed = subprocess.run(
        ["ffmpeg", "-hide_banner", "-encoders"], capture_output=True, text=True, check=False
    ).stdout
    return [name for name in ("libxvid", "mpeg4") if f" {name} " in listed]


@pytest.fixture(scope="module", params=_encoders())
def avi(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("avi") / f"{request.param}.avi"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
         "-i", "testsrc=size=160x120:rate=25", "-t", "2",
         "-c:v", request.param, "-bf", "2", "-g", "12", str(path)],
        check=True, timeout=120,
    )  # fmt: skip
    return path


def display_order(path: Path) -> list[torch.Tensor]:
    """Every frame as PyAV decodes it (decoders output frames in display order)."""
    with av.open(str(path)) as container:
        return [
            torch.from_numpy(f.to_ndarray(format="rgb24")).permute(2, 0, 1)
            for f in container.decode(container.streams.video[0])
        ]


def best_effort_seconds(path: Path) -> list[float]:
    """ffprobe's best-effort timestamps (a frame without one: a frame after the last)."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
         "frame=best_effort_timestamp:stream=time_base", "-of", "compact=p=0", str(path)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split("\n")  # fmt: skip
    ticks: list[int] = []
    time_base = Fraction(1, 25)
    for line in out:
        key, _, value = line.strip().partition("=")
        if key == "time_base":
            time_base = Fraction(value)
        elif key == "best_effort_timestamp":
            ticks.append(int(value) if value.isdigit() else ticks[-1] + 1)
    return [float(t * time_base) for t in ticks]


@pytest.mark.parametrize("backend", ["pyav", "ffmpeg"])
def test_times_rise_in_display_order(avi: Path, backend: str) -> None:
    reference = display_order(avi)
    with VideoReader(avi, backend=backend) as reader:
        frames = list(reader)
        index = reader.backend.frame_index(reader.stream)
    times = [f["pts"] for f in frames]
    assert len(frames) == len(reference) > 40
    assert all(a < b for a, b in itertools.pairwise(times)), times[:8]
    np.testing.assert_allclose(times, best_effort_seconds(avi), atol=1e-9)
    np.testing.assert_allclose(index.seconds(np.arange(len(index))), times, atol=1e-9)
    for frame, expected in zip(frames, reference, strict=True):
        assert torch.equal(frame["data"], expected)


@pytest.mark.parametrize("backend", ["pyav", "ffmpeg"])
def test_seek_gives_the_first_displayed_frame_at_or_after_t(avi: Path, backend: str) -> None:
    reference = display_order(avi)
    times = best_effort_seconds(avi)
    step = times[1] - times[0]
    targets = [0.0, times[0], times[2] - step / 2, times[5], times[11], times[12] - step / 3,
               times[13], times[24], times[25] + step / 2, times[-1]]  # fmt: skip
    with VideoReader(avi, backend=backend) as reader:
        for t in targets:
            frame = next(reader.seek(t))
            k = next(i for i, s in enumerate(times) if s >= t - 1e-9)
            assert frame["pts"] == pytest.approx(times[k]), t
            assert torch.equal(frame["data"], reference[k]), (t, k)
        positions = [0, 3, 4, 13, 12, 30, len(times) - 1]
        batch = reader.get_frames_at(positions)
    for row, k in enumerate(positions):
        assert torch.equal(batch.data[row], reference[k]), k
    np.testing.assert_allclose(batch.pts.numpy(), [times[k] for k in positions])


@pytest.mark.parametrize("backend", ["pyav", "ffmpeg"])
def test_clip_index_and_clips_follow_display_order(avi: Path, backend: str, tmp_path: Path) -> None:
    reference = display_order(avi)
    clips = VideoClips([avi], 8, 5, backend=backend, cache_path=tmp_path / "index.npz")
    pts = clips.metadata["video_pts"][0]
    assert len(pts) == len(reference) and bool((pts[1:] > pts[:-1]).all())
    np.testing.assert_allclose(pts.numpy() / 25, best_effort_seconds(avi), atol=1e-9)
    loaded = VideoClips.from_cache(
        tmp_path / "index.npz", clip_length_in_frames=8, frames_between_clips=5, backend=backend
    )
    for source in (clips, loaded):
        for idx in (0, 1, 3, len(source) - 1):
            video, _, _, _ = source.get_clip(idx)
            first = 5 * idx
            for offset, frame in enumerate(video):
                assert torch.equal(frame, reference[first + offset]), (idx, offset)
