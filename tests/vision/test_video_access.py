"""Random access under every decoder thread setting, and readers opened on a known index.

The reference is plain PyAV decoding every frame in order: a clip read after any
seek, by one reader or a new reader per clip, must give its pixels and pts.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from vision.video_testclips import pyav_frames, pyav_keyframes

from trivium.vision.io import VideoClips, VideoReader
from trivium.vision.io.video.backend import INDEX_CACHE
from trivium.vision.io.video.buffers import SHARED_POOL

av = pytest.importorskip("av")

FPS = 25
# Three thread settings of the decoder: FFmpeg's choice (frame threads), one, two.
THREADS = [0, 1, 2]


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A moving 160x120 H.264 clip, 6 s, keyframe every 40 frames, B-frames (with refs)."""
    path = tmp_path_factory.mktemp("access") / "clip.mp4"
    done = subprocess.run(
        [
            "ffmpeg", "-v", "error", "-y", "-f", "lavfi",
            "-i", f"testsrc2=size=160x120:rate={FPS}:duration=6",
            "-c:v", "libx264", "-bf", "3", "-g", "40", "-x264-params", "scenecut=0",
            "-pix_fmt", "yuv420p", str(path),
        ],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"ffmpeg cannot encode the clip: {done.stderr.decode()[-200:]}")
    return path


@pytest.fixture(scope="module")
def reference(clip: Path) -> list[tuple[np.ndarray, float | None]]:
    """Every frame of ``clip`` in order, by plain PyAV."""
    return pyav_frames(clip)


def random_clips(n: int, count: int, length: int, seed: int) -> list[list[int]]:
    """``count`` clips of ``length`` consecutive positions, in random (unsorted) order."""
    rng = random.Random(seed)
    return [list(range(s, s + length)) for s in (rng.randrange(n - length) for _ in range(count))]


def assert_frames(frames: torch.Tensor, pts: torch.Tensor, reference: list, positions) -> None:
    """``frames`` / ``pts`` are the reference frames at ``positions``, pixel for pixel."""
    assert len(frames) == len(positions)
    for frame, position in zip(frames, positions, strict=True):
        np.testing.assert_array_equal(frame.permute(1, 2, 0).numpy(), reference[position][0])
    assert pts.tolist() == pytest.approx([reference[i][1] for i in positions], abs=1e-9)


@pytest.mark.parametrize("num_threads", THREADS)
def test_clips_after_seeks_equal_a_sequential_read(
    clip: Path, reference: list, num_threads: int
) -> None:
    """One reader, clips in random order (back and forth over keyframes), then all at once."""
    clips = random_clips(len(reference), 8, 12, seed=num_threads)
    keyframes = [round(t * FPS) for t in pyav_keyframes(clip)]
    assert len(keyframes) >= 4  # seeks cross keyframes both ways
    with VideoReader(clip, num_threads=num_threads) as reader:
        for positions in clips:
            assert_frames(*reader.get_frames_at(positions), reference, positions)
        everything = [p for positions in clips for p in positions]
        assert_frames(*reader.get_frames_at(everything), reference, everything)
        # a keyframe and the frames either side of it
        around = [keyframes[2] - 1, keyframes[2], keyframes[2] + 1, keyframes[1]]
        assert_frames(*reader.get_frames_at(around), reference, around)


@pytest.mark.parametrize("num_threads", THREADS)
def test_seeks_then_iteration_equal_a_sequential_read(
    clip: Path, reference: list, num_threads: int
) -> None:
    """Frame-accurate seeks anywhere, then a few frames of iteration from there."""
    rng = random.Random(10 + num_threads)
    with VideoReader(clip, num_threads=num_threads) as reader:
        for start in [rng.randrange(len(reference) - 4) for _ in range(6)]:
            reader.seek(reference[start][1])
            got = [next(reader) for _ in range(4)]
            frames = torch.stack([f["data"] for f in got])
            pts = torch.tensor([f["pts"] for f in got], dtype=torch.float64)
            assert_frames(frames, pts, reference, range(start, start + 4))


@pytest.mark.parametrize("num_threads", THREADS)
def test_a_reader_per_clip_on_a_known_index_equals_a_fresh_scan(
    clip: Path, reference: list, num_threads: int
) -> None:
    """A reader opened on a kept index decodes what a reader that demuxed the file does."""
    INDEX_CACHE.clear()
    with VideoReader(clip, num_threads=num_threads) as fresh:
        scanned = fresh.backend.frame_index(fresh.stream)
        first = fresh.get_frames_at(list(range(5)))
    assert_frames(*first, reference, range(5))
    assert len(scanned) == len(reference)
    for positions in random_clips(len(reference), 5, 10, seed=20 + num_threads):
        with VideoReader(clip, num_threads=num_threads) as reader:  # the process's index
            kept = reader.backend.frame_index(reader.stream)
            np.testing.assert_array_equal(kept.pts, scanned.pts)
            np.testing.assert_array_equal(kept.keyframes, scanned.keyframes)
            assert_frames(*reader.get_frames_at(positions), reference, positions)
        INDEX_CACHE.clear()
        with VideoReader(clip, num_threads=num_threads) as reader:  # handed the index
            reader.backend.use_frame_index(reader.stream, scanned)
            assert_frames(*reader.get_frames_at(positions), reference, positions)


def test_video_clips_get_clip_in_random_order(clip: Path, reference: list) -> None:
    """VideoClips (a new reader per clip, index from its own scan) gives the reference clips."""
    clips = VideoClips([clip], clip_length_in_frames=8, frames_between_clips=1, with_audio=False)
    rng = random.Random(3)
    for idx in rng.sample(range(clips.num_clips()), 6):
        clips.close()  # as a DataLoader worker's fresh dataset: no reader kept
        video, _, _, _ = clips.get_clip(idx)
        positions = clips.clip_positions(idx).tolist()
        assert positions == list(range(idx, idx + 8))
        for frame, position in zip(video, positions, strict=True):
            np.testing.assert_array_equal(frame.permute(1, 2, 0).numpy(), reference[position][0])


def test_a_batch_larger_than_the_pool_is_exact_and_left_alone(
    clip: Path, reference: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches the pool does not keep are fresh memory that later batches never reuse."""
    monkeypatch.setattr(SHARED_POOL, "max_bytes", 160 * 120 * 3 * 4)  # 4 frames
    SHARED_POOL.clear()
    with VideoReader(clip) as reader:
        big = reader.get_frames_at(list(range(10, 30)))
        small = [reader.get_frames_at([i, i + 1, i + 2]).data for i in range(40, 60, 3)]
        again = reader.get_frames_at(list(range(10, 30)))
    assert_frames(*big, reference, range(10, 30))
    assert_frames(*again, reference, range(10, 30))
    assert big.data.data_ptr() != again.data.data_ptr()
    for batch, i in zip(small, range(40, 60, 3), strict=True):
        for frame, position in zip(batch, range(i, i + 3), strict=True):
            np.testing.assert_array_equal(frame.permute(1, 2, 0).numpy(), reference[position][0])
    SHARED_POOL.clear()


@pytest.fixture
def seeks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The targets (ticks) of every demuxer seek the PyAV backend makes from now on."""
    from trivium.vision.io.video import pyav as video_pyav

    made: list[int] = []
    original = video_pyav.PyAVBackend._seek

    def counting(self, stream, ticks):
        made.append(ticks)
        return original(self, stream, ticks)

    monkeypatch.setattr(video_pyav.PyAVBackend, "_seek", counting)
    return made


@pytest.mark.parametrize("num_threads", THREADS)
def test_a_seek_just_ahead_decodes_on_without_seeking(
    clip: Path, reference: list, seeks: list[int], num_threads: int
) -> None:
    """Seeks a few frames ahead in the same GOP go on decoding; back or past a keyframe seek."""
    keyframes = [round(t * FPS) for t in pyav_keyframes(clip)]
    start = keyframes[1] + 20  # 20 frames decoded since the keyframe
    with VideoReader(clip, num_threads=num_threads) as reader:

        def read_at(position: int, count: int = 3) -> None:
            reader.seek(reference[position][1])
            got = [next(reader) for _ in range(count)]
            frames = torch.stack([f["data"] for f in got])
            pts = torch.tensor([f["pts"] for f in got], dtype=torch.float64)
            assert_frames(frames, pts, reference, range(position, position + count))

        read_at(start)
        assert len(seeks) == 1
        read_at(start + 3)  # the very next frame
        read_at(start + 10)  # 4 frames ahead
        assert len(seeks) == 1  # neither needed a seek
        read_at(start + 2)  # behind: seeks
        assert len(seeks) == 2
        read_at(keyframes[2] + 1)  # past a keyframe: seeks to it
        assert len(seeks) == 3
        reader.seek(reference[keyframes[2] + 6][1])
        state = reader.__getstate__()  # a reader pickled after a seek resumes at its target
    with VideoReader(clip) as twin:
        twin.__setstate__(state)
        frame = next(twin)
    np.testing.assert_array_equal(
        frame["data"].permute(1, 2, 0).numpy(), reference[keyframes[2] + 6][0]
    )
    assert frame["pts"] == pytest.approx(reference[keyframes[2] + 6][1])


def test_a_seek_far_ahead_in_the_gop_seeks(clip: Path, reference: list, seeks: list[int]) -> None:
    """Going on would decode more frames than the seek: it seeks to the keyframe."""
    keyframes = [round(t * FPS) for t in pyav_keyframes(clip)]
    with VideoReader(clip) as reader:
        reader.seek(reference[keyframes[1] + 2][1])
        next(reader)
        target = keyframes[1] + 30  # 27 frames ahead, 3 decoded since the keyframe
        frame = next(reader.seek(reference[target][1]))
    assert len(seeks) == 2
    np.testing.assert_array_equal(frame["data"].permute(1, 2, 0).numpy(), reference[target][0])
