"""Frames of AVIs with B-frames: MPEG-4 Part 2 as UCF101 and HMDB51 ship it.

An AVI keeps no presentation times, and DivX / Xvid "pack" B-frames: a packet holds a
P-frame and the B-frame shown before it, the next packet is a placeholder (and Xvid's
first may be a one-byte packet that gives no frame). The container counts packets, and
FFmpeg gives the decoded frames (in display order) the packets' pts, pairwise swapped.

The reference is plain PyAV: its frames in the order it decodes them, the ``i``-th at
the ``i``-th smallest of its frame times. The files: the HMDB51-style asset, a numbered
clip from PyAV's encoder packed as DivX does (``write_packed_avi``), one from the ffmpeg
CLI's libxvid (packed, where the CLI has it), and from its mpeg4 encoder (B-frames, not
packed) and libx264 (B-frames: the decoder's pts come out of order beyond pairs).
"""

from __future__ import annotations

import itertools
import multiprocessing
import shutil
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
import torch
from vision.video_testclips import ASSETS_VIDEO, frame_number, vop_types, write_packed_avi

from trivium.vision.io import VideoClips, VideoReader, read_video, read_video_timestamps

BACKENDS = ["pyav", "ffmpeg"]
AVIS = ["hmdb51", "pyav-packed", "libxvid", "mpeg4", "libx264"]
PACKED = {"hmdb51", "pyav-packed", "libxvid"}
# PyAV's frame times out of display order: packed B-frames swap pairs, and H.264 frames
# get the pts FFmpeg guesses for the packets (decode order) of an AVI.
UNORDERED = PACKED | {"libx264"}
NUMBERED = 60  # frames of the pyav-packed clip


@dataclass
class Reference:
    """What plain PyAV decodes from a file."""

    frames: list[torch.Tensor]  # uint8 [C, H, W], in the order PyAV gives them
    ticks: list[int]  # the frames' pts as PyAV gives them
    keyframes: list[int]  # positions of the key frames
    time_base: Fraction
    fps: float

    @property
    def display_ticks(self) -> list[int]:
        """The ``i``-th frame's time: the ``i``-th smallest pts."""
        return sorted(self.ticks)

    @property
    def times(self) -> list[float]:
        return [float(t * self.time_base) for t in self.display_ticks]


def decode_reference(path: Path) -> Reference:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames, ticks, keyframes = [], [], []
        for position, frame in enumerate(container.decode(stream)):
            rgb = frame.to_ndarray(format="rgb24")
            frames.append(torch.from_numpy(rgb).permute(2, 0, 1))
            ticks.append(frame.pts)
            if frame.key_frame:
                keyframes.append(position)
        return Reference(frames, ticks, keyframes, stream.time_base, float(stream.average_rate))


def _ffmpeg_encode(path: Path, encoder: str) -> Path:
    if shutil.which("ffmpeg") is None:
        pytest.skip("needs the ffmpeg CLI")
    done = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
         "-i", "testsrc=size=160x120:rate=25", "-t", "2",
         "-c:v", encoder, "-bf", "2", "-g", "12", str(path)],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"the ffmpeg CLI cannot encode with {encoder}: {done.stderr.decode()[-200:]}")
    return path


@pytest.fixture(scope="module", params=AVIS)
def avi(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("avi")
    if request.param == "hmdb51":
        return ASSETS_VIDEO / "tv-TrumanShow_wave_f_nm_np1_fr_med_26.avi"
    if request.param == "pyav-packed":
        return write_packed_avi(folder / "packed.avi", NUMBERED, 25)
    return _ffmpeg_encode(folder / f"{request.param}.avi", request.param)


@pytest.fixture(scope="module")
def reference(avi: Path) -> Reference:
    return decode_reference(avi)


def kind(avi: Path) -> str:
    return "hmdb51" if avi.name.startswith("tv-") else avi.stem.replace("packed", "pyav-packed")


def close_pixels(ours: torch.Tensor, expected: torch.Tensor, backend: str) -> bool:
    """Equal pixels (PyAV backend), or within codec tolerance: the ffmpeg binary may be
    another FFmpeg than PyAV's (here both give the same bytes)."""
    if backend == "pyav":
        return torch.equal(ours, expected)
    return ours.shape == expected.shape and (ours.int() - expected.int()).abs().float().mean() <= 1


def test_the_files_hold_what_they_stand_for(avi: Path, reference: Reference) -> None:
    """Packed files have packets of two pictures; PyAV's times are out of order in those
    and in the H.264 one."""
    with av.open(str(avi)) as container:
        packets = [bytes(p) for p in container.demux(container.streams.video[0]) if p.size]
    packed = kind(avi) in PACKED
    assert any(len(vop_types(p)) == 2 for p in packets) == packed
    assert (reference.ticks != sorted(reference.ticks)) == (kind(avi) in UNORDERED)
    assert len(set(reference.ticks)) == len(reference.ticks) > 40
    if kind(avi) == "hmdb51":  # the one-byte packet: 49 packets, 48 frames
        assert (len(packets), len(reference.frames)) == (49, 48)
    if kind(avi) == "pyav-packed":
        assert [frame_number(f) for f in reference.frames] == list(range(NUMBERED))
        assert {"IB", "PB"} <= {vop_types(p) for p in packets}  # open GOPs packed too


@pytest.mark.parametrize("backend", BACKENDS)
def test_iteration_gives_pyavs_frames_at_display_times(
    avi: Path, reference: Reference, backend: str
) -> None:
    with VideoReader(avi, backend=backend) as reader:
        frames = list(reader)
        meta = reader.get_metadata()["video"]
    n = len(reference.frames)
    assert len(frames) == n and meta["num_frames"] == [n]
    times = [f["pts"] for f in frames]
    assert times == pytest.approx(reference.times, abs=1e-9)
    assert all(a < b for a, b in itertools.pairwise(times))
    assert times[0] == pytest.approx(float(reference.ticks[0] * reference.time_base))
    for i, (frame, expected) in enumerate(zip(frames, reference.frames, strict=True)):
        assert close_pixels(frame["data"], expected, backend), i
    if kind(avi) == "pyav-packed":
        assert [frame_number(f["data"]) for f in frames] == list(range(NUMBERED))
    ticks, fps = read_video_timestamps(avi, backend=backend)
    assert (ticks, fps) == (reference.display_ticks, reference.fps)
    seconds, _ = read_video_timestamps(avi, pts_unit="sec", backend=backend)
    assert seconds == [t * reference.time_base for t in reference.display_ticks]


@pytest.mark.parametrize("backend", BACKENDS)
def test_frame_at_every_index_is_the_iterated_frame(
    avi: Path, reference: Reference, backend: str
) -> None:
    """Every index on its own, by a new reader whose decoder starts at the seek (PyAV;
    ffmpeg, which decodes these from the start each time: a spread), then all of them
    in one shuffled call, with repeats."""
    n = len(reference.frames)
    singles = range(n) if backend == "pyav" else [0, 1, 2, 13, n // 2, n - 2, n - 1]
    for i in singles:
        with VideoReader(avi, backend=backend) as reader:
            data, pts = reader.get_frames_at([i])
        assert close_pixels(data[0], reference.frames[i], backend), i
        assert pts.tolist() == pytest.approx([reference.times[i]], abs=1e-9), i
    with VideoReader(avi, backend=backend) as reader:
        order = [*np.random.default_rng(n).permutation(n).tolist(), 0, n - 1, -1]
        data, pts = reader.get_frames_at(order)
        in_range = reader.get_frames_in_range(reference.times[5], reference.times[20])
    for row, i in enumerate(order):
        assert close_pixels(data[row], reference.frames[i], backend), i
    assert pts.tolist() == pytest.approx([reference.times[i] for i in order], abs=1e-9)
    assert in_range.pts.tolist() == pytest.approx(reference.times[5:20], abs=1e-9)
    for row, i in enumerate(range(5, 20)):
        assert close_pixels(in_range.data[row], reference.frames[i], backend), i


@pytest.mark.parametrize("backend", BACKENDS)
def test_seek_gives_the_first_frame_at_or_after_t(
    avi: Path, reference: Reference, backend: str
) -> None:
    times, n = reference.times, len(reference.frames)
    step = 1 / reference.fps
    positions = range(n) if backend == "pyav" else [0, 3, 12, 13, 25, n - 1]
    with VideoReader(avi, backend=backend) as reader:
        for k in positions:
            for t in (times[k], times[k] - step / 3):
                if k and t <= times[k - 1]:
                    continue  # (after the gap the one-byte packet leaves)
                frame = next(reader.seek(t))
                assert frame["pts"] == pytest.approx(times[k]), (t, k)
                assert close_pixels(frame["data"], reference.frames[k], backend), (t, k)
            keyframe = max(p for p in reference.keyframes if p <= k)
            frame = next(reader.seek(times[k] + step / 3, keyframes_only=True))
            assert frame["pts"] == pytest.approx(times[keyframe]), k
            assert close_pixels(frame["data"], reference.frames[keyframe], backend), k
        assert [f["pts"] for f in reader.seek(times[-3])] == pytest.approx(times[-3:])
        assert list(reader.seek(times[-1] + step)) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_video_gives_the_frames_between_its_ends(
    avi: Path, reference: Reference, backend: str
) -> None:
    times = reference.times
    video, _, info = read_video(avi, times[10], times[30], backend=backend)
    assert info["video_fps"] == reference.fps and len(video) == 21
    for row, expected in enumerate(reference.frames[10:31]):
        assert close_pixels(video[row], expected, backend), row


@pytest.mark.parametrize("backend", BACKENDS)
def test_clips_are_the_iterated_frames(
    avi: Path, reference: Reference, backend: str, tmp_path: Path
) -> None:
    """The clip index is the reader's (built, and loaded from its cache), and each clip
    holds the frames iteration gives at its positions."""
    clips = VideoClips([avi], 8, 5, backend=backend, cache_path=tmp_path / "index.npz")
    loaded = VideoClips.from_cache(
        tmp_path / "index.npz", clip_length_in_frames=8, frames_between_clips=5, backend=backend
    )
    n = len(reference.frames)
    for source in (clips, loaded):
        assert source.metadata["video_pts"][0].tolist() == reference.display_ticks
        assert source.num_clips() == (n - 8) // 5 + 1
        for idx in (0, 1, 3, source.num_clips() - 1):
            video, _, info, _ = source.get_clip(idx)
            assert info["video_fps"] == reference.fps
            for offset, frame in enumerate(video):
                assert close_pixels(frame, reference.frames[5 * idx + offset], backend), idx


class _Clips(torch.utils.data.Dataset):
    """Clip ``i`` of a VideoClips and its positions, for a DataLoader."""

    def __init__(self, clips: VideoClips) -> None:
        self.clips = clips

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.clips[i][0], torch.from_numpy(self.clips.clip_positions(i))


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_clips_in_dataloader_workers(context: str, tmp_path: Path) -> None:
    """Workers get the index (with the decoder's pts) by pickling, and decode the clips
    the main process would."""
    path = write_packed_avi(tmp_path / "packed.avi", NUMBERED, 25)
    clips = VideoClips([path], 6, 7)
    loader = torch.utils.data.DataLoader(
        _Clips(clips),
        batch_size=2,
        num_workers=2,
        multiprocessing_context=multiprocessing.get_context(context),
    )
    seen = 0
    for videos, positions in loader:
        for video, where in zip(videos, positions, strict=True):
            assert [frame_number(f) for f in video] == where.tolist()
            seen += 1
    assert seen == len(clips) == (NUMBERED - 6) // 7 + 1
