"""trivium.audio.stream on the formats read through FFmpeg (PyAV), chunk by chunk.

The files are made here with the ``ffmpeg`` command: AAC in M4A, Opus in WebM, an MP4
video with an AAC track, 16-bit PCM in Matroska (copied from a WAV holding known
samples), and a 20-minute AAC for the memory bound. The reference for a stream is
``load`` of the same range (itself checked against PyAV's decode in
test_audio_ffmpeg.py) and, for PCM, the samples written.
"""

from __future__ import annotations

import io
import pickle
import shutil
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
import torch
from loader_watchdog import load_in_workers
from torch.utils.data import IterableDataset

from trivium.audio import info, load, stream
from trivium.audio.io import AudioStream
from trivium.core.errors import DecodeError, EmptyInputError, PathNotFoundError

av = pytest.importorskip("av", reason="the ffmpeg extra (PyAV) is not installed")
pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

MODULE = "audio.test_audio_stream_ffmpeg"
CHUNK = 4000
TONES = "0.2*sin(2*PI*440*t)+0.1*sin(2*PI*3000*t)|0.2*sin(2*PI*660*t)+0.05*sin(2*PI*5000*t)"
PCM_RATE = 22050


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True)


def tones(rate: int, seconds: float, layout: str = "stereo") -> list[str]:
    exprs = TONES if layout == "stereo" else TONES.split("|")[0]
    return ["-f", "lavfi", "-i", f"aevalsrc={exprs}:s={rate}:d={seconds}"]


def pcm_samples() -> np.ndarray:
    """``[time, 2]`` int16: a chirp and noise, different in each channel."""
    rng = np.random.default_rng(7)
    t = np.arange(3 * PCM_RATE) / PCM_RATE
    left = 0.3 * np.sin(2 * np.pi * (200 + 900 * t) * t)
    right = rng.uniform(-0.4, 0.4, t.size)
    return np.round(np.stack([left, right], 1) * 32767).astype(np.int16)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("stream-ffmpeg")
    made = {name: folder / name for name in ("aac.m4a", "opus.webm", "video.mp4", "pcm.mkv")}
    ffmpeg(*tones(44100, 3), "-c:a", "aac", "-movflags", "+faststart", str(made["aac.m4a"]))
    ffmpeg(*tones(48000, 3), "-c:a", "libopus", str(made["opus.webm"]))
    ffmpeg(
        "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=3",
        *tones(22050, 3, "mono"), "-c:v", "mpeg4", "-c:a", "aac", "-shortest",
        str(made["video.mp4"]),
    )  # fmt: skip
    wav = folder / "pcm.wav"
    sf.write(wav, pcm_samples(), PCM_RATE, subtype="PCM_16")
    ffmpeg("-i", str(wav), "-c:a", "copy", str(made["pcm.mkv"]))
    return made


def ranges(total: int) -> list[tuple[int, int]]:
    """``(frame_offset, num_frames)``: from the start, across frames, past the seek
    threshold (MP4 seeks), up to and past the end, empty."""
    return [
        (0, -1), (0, 5000), (777, 4096), (30001, 9000), (30001, -1), (total - 100, 1000),
        (total + 10, -1), (5000, 0),
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["aac.m4a", "opus.webm", "video.mp4", "pcm.mkv"])
def test_chunks_equal_load_of_the_same_range(name: str, files: dict[str, Path]) -> None:
    path = files[name]
    total = load(path)[0].shape[1]
    meta = info(path)
    for frames_per_chunk in (1000, 1024, 4096, 44100):
        for offset, count in ranges(total):
            want, rate = load(path, frame_offset=offset, num_frames=count)
            with stream(path, frames_per_chunk, offset, count) as chunks:
                assert isinstance(chunks, AudioStream)
                assert (chunks.sample_rate, chunks.num_channels) == (rate, meta.num_channels)
                left = max(meta.num_frames - offset, 0)
                assert chunks.num_frames == (left if count < 0 else min(count, left))
                got = list(chunks)
            case = (frames_per_chunk, offset, count)
            assert all(c.shape[1] == frames_per_chunk for c in got[:-1]), case
            assert all(0 < c.shape[1] <= frames_per_chunk for c in got), case
            joined = torch.cat(got, -1) if got else torch.empty(want.shape[0], 0)
            assert torch.equal(joined, want), case
    for options in ({"normalize": False}, {"channels_first": False}):
        want, _ = load(path, frame_offset=30001, num_frames=10000, **options)
        got = list(stream(path, 3000, 30001, 10000, **options))
        axis = 0 if options.get("channels_first") is False else 1
        assert [c.shape[axis] for c in got] == [3000, 3000, 3000, 1000]
        assert all(c.is_contiguous() and c.dtype == want.dtype for c in got)
        assert torch.equal(torch.cat(got, axis), want)


def test_pcm_chunks_are_the_samples_written(files: dict[str, Path]) -> None:
    written = pcm_samples().T
    raw = torch.cat(list(stream(files["pcm.mkv"], 5000, normalize=False)), -1)
    assert raw.dtype == torch.int16
    np.testing.assert_array_equal(raw.numpy(), written)
    scaled = torch.cat(list(stream(files["pcm.mkv"], 777, 1234, 20000)), -1)
    np.testing.assert_array_equal(
        scaled.numpy(), written[:, 1234:21234].astype(np.float32) / np.float32(32768)
    )


def test_sources_stream_alike(files: dict[str, Path]) -> None:
    path = files["aac.m4a"]
    data = path.read_bytes()
    want = load(path, frame_offset=30001, num_frames=20000)[0]
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    with open(path, "rb") as f:
        for src in (f, io.BytesIO(data), data, bytearray(data), memoryview(data), tensor):
            got = torch.cat(list(stream(src, CHUNK, 30001, 20000)), -1)
            assert torch.equal(got, want), type(src)


def test_ogg_opus_streams_as_load_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "speech.opus"
    sf.write(
        path, pcm_samples()[:, :1].astype(np.float32) / 32768, 24000, format="OGG", subtype="OPUS"
    )
    want, rate = load(path)  # FFmpeg: at 48 kHz
    chunks = stream(path, CHUNK)
    assert rate == chunks.sample_rate == 48000
    assert torch.equal(torch.cat(list(chunks), -1), want)
    ranged = torch.cat(list(stream(path, 1000, 30001, 9000)), -1)  # Ogg: a seek, as load's
    assert torch.equal(ranged, load(path, frame_offset=30001, num_frames=9000)[0])


def test_pickled_stream_goes_on_from_where_it_stood(files: dict[str, Path]) -> None:
    for name in ("aac.m4a", "opus.webm"):
        path = files[name]
        reference = load(path)[0]
        for src in (path, path.read_bytes()):
            chunks = stream(src, CHUNK)
            iterator = iter(chunks)
            assert torch.equal(next(iterator), reference[:, :CHUNK])
            copy = pickle.loads(pickle.dumps(chunks))
            assert copy._file is None
            # The copy opens the source again and starts where load starts a range there.
            assert torch.equal(torch.cat(list(copy), -1), load(src, frame_offset=CHUNK)[0])
            assert torch.equal(next(iterator), reference[:, CHUNK : 2 * CHUNK])  # goes on
            chunks.close()
            assert list(iterator) == []


def test_close_and_with(files: dict[str, Path]) -> None:
    chunks = stream(files["opus.webm"], 100)
    assert next(iter(chunks)).shape == (2, 100)
    chunks.close()
    assert list(chunks) == []
    with stream(files["video.mp4"], 100) as chunks:
        assert next(iter(chunks)).shape == (1, 100)
    assert list(chunks) == []


def test_long_stream_memory_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "long.m4a"
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=1200",
           "-c:a", "aac", "-b:a", "24k", str(path))  # fmt: skip
    frames_per_chunk = 16000
    chunk_bytes = frames_per_chunk * 4
    whole_bytes = 1200 * 16000 * 4  # 77 MB as float32
    list(stream(path, frames_per_chunk, num_frames=frames_per_chunk))  # PyAV imported, warm
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        sizes, total = Counter(), 0
        with stream(path, frames_per_chunk) as chunks:
            expected = chunks.num_frames
            for chunk in chunks:
                sizes[chunk.shape[1]] += 1
                total += chunk.shape[1]
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    assert total >= expected == 1200 * 16000 and total - expected <= 2048
    assert sizes[frames_per_chunk] == total // frames_per_chunk and len(sizes) <= 2
    assert peak < 8 * chunk_bytes < whole_bytes / 100, peak
    window = torch.cat(list(stream(path, 5000, 600 * 16000 + 3, 12000)), -1)
    assert torch.equal(window, load(path, frame_offset=600 * 16000 + 3, num_frames=12000)[0])


def test_damage_in_the_middle_raises_from_the_chunk_that_meets_it(
    files: dict[str, Path], tmp_path: Path
) -> None:
    data = files["aac.m4a"].read_bytes()  # faststart: the index first, then the samples
    samples = data.find(b"mdat")
    cut = tmp_path / "cut.m4a"
    cut.write_bytes(data[: samples + (len(data) - samples) // 2])
    reference = load(files["aac.m4a"])[0]
    chunks = stream(cut, 1000)
    got = []
    with pytest.raises(
        DecodeError, match=r"cut\.m4a: corrupt or truncated audio data after sample \d+"
    ):
        for chunk in chunks:
            got.append(chunk)
    assert len(got) > 10  # the audio before the damage came first, as it decodes
    assert torch.equal(torch.cat(got, -1), reference[:, : 1000 * len(got)])
    with pytest.raises(DecodeError, match=r"<bytes>: "):
        list(stream(cut.read_bytes(), 1000))
    header_only = tmp_path / "header.m4a"
    header_only.write_bytes(data[:40])
    with pytest.raises(DecodeError, match=r"header\.m4a: "):
        stream(header_only, 1000)  # the header is read up front
    with pytest.raises(PathNotFoundError, match=r"missing\.m4a: no such file"):
        stream(tmp_path / "missing.m4a", 1000)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        stream(tmp_path, 1000)
    with pytest.raises(EmptyInputError):
        stream(b"", 1000)
    video_only = tmp_path / "video-only.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=32x32:rate=5:duration=1", "-c:v", "mpeg4",
           str(video_only))  # fmt: skip
    with pytest.raises(DecodeError, match=r"video-only\.mp4: no audio stream \(the file holds"):
        stream(video_only, 1000)


def test_without_pyav_the_error_says_what_to_install(files: dict[str, Path]) -> None:
    script = (
        "import sys; sys.modules['av'] = None\n"
        "from trivium.audio import stream\n"
        "from trivium.core.errors import UnsupportedFormatError\n"
        "try:\n    stream(sys.argv[1], 1000)\n"
        "except UnsupportedFormatError as e:\n    print(e)\n"
    )
    path = files["opus.webm"]
    run = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True
    )
    assert run.stdout.startswith(f"{path}: Matroska/WebM is not supported without FFmpeg")
    assert "pip install 'av>=12'" in run.stdout


# ------------------------------------------------------------- DataLoader workers


class Streams(IterableDataset):
    """Several streams; each worker yields ``(index, chunk)`` for every chunk left."""

    def __init__(self, streams: list[AudioStream]) -> None:
        self.streams = streams
        self.first: Any = None

    def __iter__(self):
        for k, chunks in enumerate(self.streams):
            for chunk in chunks if k else (self.first or iter(chunks)):
                yield k, chunk

    def __getstate__(self) -> dict[str, Any]:
        return {"streams": self.streams, "first": None}  # a generator does not pickle


def build_streams(paths: list[str]) -> Streams:
    return Streams([stream(path, CHUNK) for path in paths])


def read_first(dataset: Streams) -> torch.Tensor:
    """The next chunk of the first stream, in the parent."""
    if dataset.first is None:
        dataset.first = iter(dataset.streams[0])
    return next(dataset.first)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_streams_go_on_in_dataloader_workers(
    context: str, files: dict[str, Path], tmp_path: Path
) -> None:
    names = ["aac.m4a", "opus.webm", "video.mp4", "pcm.mkv"]
    paths = [str(files[n]) for n in names]
    got = load_in_workers(
        MODULE, {"paths": paths}, context, tmp_path / "out.pt", build="build_streams",
        read="read_first",
    )  # fmt: skip
    reference = load(paths[0])[0]
    assert torch.equal(got["before"], reference[:, :CHUNK])
    assert torch.equal(got["after"], reference[:, CHUNK : 2 * CHUNK])  # the parent's, untouched
    # The first stream goes on in each worker from where the parent stood (chunk 1),
    # starting as load starts that range; the others from the start.
    expected = {0: list(torch.split(load(paths[0], frame_offset=CHUNK)[0], CHUNK, -1))}
    for k, path in enumerate(paths[1:], 1):
        expected[k] = list(torch.split(load(path)[0], CHUNK, -1))
    per_stream: dict[int, list[torch.Tensor]] = {k: [] for k in expected}
    for k, chunk in got["workers"]:
        per_stream[int(k)].append(chunk)
    for k, want in expected.items():
        chunks = per_stream[k]
        assert len(chunks) == 2 * len(want), names[k]  # every chunk from each of 2 workers
        found = Counter(c.numpy().tobytes() for c in chunks)
        assert found == Counter(w.numpy().tobytes() for w in want + want), names[k]
