"""Video readers and clips used in the parent, then in DataLoader workers (fork/spawn/forkserver).

A PyAV container or an ffmpeg process inherited through ``fork`` belongs to the parent:
the worker must open its own and never close, read or kill the parent's (closing an
inherited PyAV container waits forever on decoder threads that do not exist in the
child). Each test reads in the parent, iterates in workers under a watchdog
(:mod:`loader_watchdog`), and reads in the parent again.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
from loader_watchdog import load_in_workers
from torch.utils.data import Dataset, IterableDataset
from vision.video_testclips import frame_number, write_numbered

from trivium.vision.io import VideoClips, VideoReader

MODULE = "vision.test_video_fork_safety"
CONTEXTS = ["fork", "spawn", "forkserver"]
FPS = 10


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("fork_videos")
    rate = 8000
    tone = 0.5 * torch.sin(torch.arange(2 * rate) / rate * 2 * torch.pi * 100).repeat(2, 1)
    return [
        write_numbered(root / "a.mp4", 24, FPS, gop=6),
        write_numbered(
            root / "b.mkv", 16, FPS, audio=tone[:, : 16 * 800], audio_fps=rate,
            audio_codec="pcm_s16le",
        ),
    ]  # fmt: skip


# ---------------------------------------------------------------- VideoClips


def build_clips(paths: list[str], backend: str) -> VideoClips:
    return VideoClips(paths, clip_length_in_frames=4, frames_between_clips=3, backend=backend)


def read_clips(clips: VideoClips) -> list[Any]:
    # Every clip, the last read being clip 0: the parent's reader stays open on video 0,
    # the one the first worker reads first.
    return [clips[i] for i in reversed(range(len(clips)))][::-1]


@pytest.mark.parametrize("context", CONTEXTS)
def test_video_clips_in_workers_after_the_parent(
    videos: list[Path], context: str, tmp_path: Path
) -> None:
    got = load_in_workers(
        MODULE,
        {"paths": [str(p) for p in videos], "backend": "pyav"},
        context,
        tmp_path / "out.pt",
        build="build_clips",
        read="read_clips",
    )
    _check_clips(got)


def test_video_clips_ffmpeg_backend_in_forked_workers(videos: list[Path], tmp_path: Path) -> None:
    got = load_in_workers(
        MODULE,
        {"paths": [str(p) for p in videos], "backend": "ffmpeg"},
        "fork",
        tmp_path / "out.pt",
        build="build_clips",
        read="read_clips",
    )
    _check_clips(got)


def _check_clips(got: dict[str, Any]) -> None:
    before, workers, after = got["before"], got["workers"], got["after"]
    assert len(workers) == len(before) == 7 + 5
    for parent, worker, again in zip(before, workers, after, strict=True):
        assert torch.equal(worker[0], parent[0]) and torch.equal(again[0], parent[0])
        assert torch.equal(worker[1], parent[1]) and torch.equal(again[1], parent[1])
        assert worker[2] == parent[2] and worker[3] == parent[3]
    starts = [frame_number(clip[0][0]) for clip in workers]
    assert starts == [0, 3, 6, 9, 12, 15, 18, 0, 3, 6, 9, 12]
    assert workers[-1][1].shape[0] == 2 and workers[-1][1].shape[1] > 0  # the mkv's audio


# ------------------------------------------------------ VideoReader, sequential


class ReaderFrames(IterableDataset):
    """The reader's frames from where it stands (each worker goes on from there)."""

    def __init__(self, reader: VideoReader) -> None:
        self.reader = reader

    def __iter__(self):
        for frame in self.reader:
            yield frame["data"], frame["pts"]


def build_sequential(path: str, backend: str) -> ReaderFrames:
    return ReaderFrames(VideoReader(path, backend=backend))


def read_sequential(frames: ReaderFrames) -> tuple[torch.Tensor, float]:
    frame = next(frames.reader)  # leaves a decoder (or an ffmpeg process) mid-stream
    return frame["data"], frame["pts"]


@pytest.mark.parametrize(
    ("backend", "context"), [("pyav", "fork"), ("ffmpeg", "fork"), ("ffmpeg", "spawn")]
)
def test_video_reader_iteration_goes_on_in_workers(
    videos: list[Path], backend: str, context: str, tmp_path: Path
) -> None:
    path = videos[0]
    reference = [(f["data"], f["pts"]) for f in VideoReader(path, backend=backend)]
    got = load_in_workers(
        MODULE,
        {"path": str(path), "backend": backend},
        context,
        tmp_path / "out.pt",
        build="build_sequential",
        read="read_sequential",
    )
    assert torch.equal(got["before"][0], reference[0][0]) and got["before"][1] == 0.0
    # The parent's own decoder (or process) was left alone: it goes on at frame 1.
    assert torch.equal(got["after"][0], reference[1][0]) and got["after"][1] == reference[1][1]
    # Every worker goes on from frame 1, as the parent stood when it started them.
    counts = Counter(frame_number(data) for data, _ in got["workers"])
    assert counts == {k: 2 for k in range(1, 24)}
    by_pts = {pts: data for data, pts in reference}
    for data, pts in got["workers"]:
        assert torch.equal(data, by_pts[pts])


# --------------------------------------------------- VideoReader, random access


class ReaderRandomAccess(Dataset):
    """Frame ``i`` of a video through one shared reader."""

    def __init__(self, reader: VideoReader) -> None:
        self.reader = reader

    def __len__(self) -> int:
        return len(self.reader.backend.frame_index(self.reader.stream))

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.reader.get_frames_at([i]).data[0]


def build_random_access(path: str, backend: str, source: str) -> ReaderRandomAccess:
    # An open file's offset is shared with forked workers: they must not read through it.
    src = open(path, "rb") if source == "file" else path  # noqa: SIM115 - the reader's now
    return ReaderRandomAccess(VideoReader(src, backend=backend))


def read_random_access(frames: ReaderRandomAccess) -> list[torch.Tensor]:
    return [frames[i] for i in range(len(frames))]


@pytest.mark.parametrize(
    ("backend", "source", "context"),
    [("pyav", "path", "fork"), ("pyav", "file", "fork"), ("pyav", "file", "forkserver")],
)
def test_video_reader_random_access_in_workers(
    videos: list[Path], backend: str, source: str, context: str, tmp_path: Path
) -> None:
    got = load_in_workers(
        MODULE,
        {"path": str(videos[1]), "backend": backend, "source": source},
        context,
        tmp_path / "out.pt",
        build="build_random_access",
        read="read_random_access",
    )
    assert [frame_number(f) for f in got["workers"]] == list(range(16))
    for parent, worker, again in zip(got["before"], got["workers"], got["after"], strict=True):
        assert torch.equal(worker, parent) and torch.equal(again, parent)
