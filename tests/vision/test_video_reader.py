"""VideoReader on both backends: real files, seeking, random access, metadata, pickling."""

from __future__ import annotations

import gc
import io
import os
import pickle
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from vision.video_testclips import (
    ASSETS_VIDEO,
    ffprobe_frame_count,
    frame_number,
    pyav_frames,
    pyav_keyframes,
    write_numbered,
)

from trivium.core.errors import DecodeError
from trivium.vision.io import VideoReader

BACKENDS = ["pyav", "ffmpeg"]
ASSET_FILES = sorted(ASSETS_VIDEO.iterdir())
N, FPS = 60, 25


@pytest.fixture(scope="module")
def numbered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 60-frame H.264 MP4 at 25 fps with a keyframe every 10 frames."""
    return write_numbered(tmp_path_factory.mktemp("video") / "numbered.mp4", N, FPS)


# ------------------------------------------------------------------ real files


def display_times(path: Path, reference: list[tuple[np.ndarray, float | None]]) -> list[float]:
    """The times of PyAV's frames, the ``i``-th frame at the ``i``-th smallest (seconds).

    PyAV gives frames in display order, with their times in that order too, except in
    the AVI, whose packed B-frames have theirs swapped with the next frame's.
    """
    times = [pts for _, pts in reference]
    assert None not in times
    assert (times == sorted(times)) == (path.suffix != ".avi")
    return sorted(times)


@pytest.mark.parametrize("path", ASSET_FILES, ids=lambda p: p.name)
def test_assets_decode_like_pyav_and_ffprobe(path: Path) -> None:
    """Frame count, pts and pixels of every asset, on both backends, against the references."""
    reference = pyav_frames(path)
    assert len(reference) == ffprobe_frame_count(path)
    decoded = {}
    for backend in BACKENDS:
        with VideoReader(path, backend=backend) as reader:
            frames = list(reader)
            assert reader.get_metadata()["video"]["num_frames"] == [len(reference)]
        assert len(frames) == len(reference), backend
        decoded[backend] = frames
    ours = decoded["pyav"]
    for frame, (array, _) in zip(ours, reference, strict=True):
        assert frame["data"].dtype == torch.uint8 and frame["data"].shape[0] == 3
        np.testing.assert_array_equal(frame["data"].permute(1, 2, 0).numpy(), array)
    if path.name != "pg-blue.mpg":  # no timestamps: ours are position / fps
        times = display_times(path, reference)
        assert [f["pts"] for f in ours] == pytest.approx(times, abs=1e-9)
    for a, b in zip(ours, decoded["ffmpeg"], strict=True):
        # The same pts; pixels within codec tolerance (both convert with swscale's
        # rgb24, but the ffmpeg binary may be another FFmpeg; here: identical).
        assert a["pts"] == b["pts"]
        diff = (a["data"].int() - b["data"].int()).abs().float().mean()
        assert diff <= 1.0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("path", ASSET_FILES, ids=lambda p: p.name)
def test_assets_frame_at_every_index_is_the_iterated_frame(path: Path, backend: str) -> None:
    """get_frames_at(i) is the i-th frame iteration gives (pixels, pts): every index on
    its own (PyAV; ffmpeg: a spread of them, a process each) and all in one shuffled call."""
    with VideoReader(path, backend=backend) as reader:
        frames = list(reader)
        n = len(frames)
        assert reader.get_metadata()["video"]["num_frames"] == [n]
        singles = range(n) if backend == "pyav" else sorted({0, 1, 2, n // 3, n // 2, n - 2, n - 1})
        for i in singles:
            data, pts = reader.get_frames_at([i])
            assert torch.equal(data[0], frames[i]["data"]), i
            assert pts.tolist() == [frames[i]["pts"]], i
        order = random.Random(path.name).sample(range(n), n)
        data, pts = reader.get_frames_at(order)
        with pytest.raises(IndexError, match="out of range"):
            reader.get_frames_at([n])
    for row, i in enumerate(order):
        assert torch.equal(data[row], frames[i]["data"]), i
    assert pts.tolist() == [frames[i]["pts"] for i in order]


@pytest.mark.parametrize("path", ASSET_FILES, ids=lambda p: p.name)
def test_metadata_matches_ffprobe(path: Path) -> None:
    import json

    probe = json.loads(
        subprocess.run(
            ["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(path)],
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    )
    video = next(s for s in probe["streams"] if s["codec_type"] == "video")
    audio = [s for s in probe["streams"] if s["codec_type"] == "audio"]
    for backend in BACKENDS:
        meta = VideoReader(path, backend=backend).get_metadata()
        assert meta["video"]["width"] == [video["width"]]
        assert meta["video"]["height"] == [video["height"]]
        assert meta["video"]["codec"] == [video["codec_name"]]
        assert meta["video"]["fps"][0] == pytest.approx(eval(video["avg_frame_rate"]))
        assert meta["video"]["duration"][0] == pytest.approx(meta["video"]["duration"][0])
        if audio:
            assert meta["audio"]["sample_rate"] == [int(audio[0]["sample_rate"])]
            assert meta["audio"]["channels"] == [audio[0]["channels"]]
            assert meta["audio"]["framerate"] == [float(audio[0]["sample_rate"])]
        else:
            assert "audio" not in meta


def test_written_avi_mpeg4_and_webm_vp9(tmp_path: Path) -> None:
    """Containers/codecs written here: AVI/MPEG-4 part 2 and WebM/VP9."""
    for name, codec in [("clip.avi", "mpeg4"), ("clip.webm", "libvpx-vp9")]:
        path = write_numbered(tmp_path / name, 12, 12, video_codec=codec)
        for backend in BACKENDS:
            numbers = [frame_number(f["data"]) for f in VideoReader(path, backend=backend)]
            assert numbers == list(range(12)), (name, backend)


# --------------------------------------------------------------------- seeking


@pytest.mark.parametrize("backend", BACKENDS)
def test_sequential_frames_and_pts(numbered: Path, backend: str) -> None:
    frames = list(VideoReader(numbered, backend=backend))
    assert [frame_number(f["data"]) for f in frames] == list(range(N))
    assert [f["pts"] for f in frames] == pytest.approx([i / FPS for i in range(N)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_seek_is_frame_accurate_at_random_times(numbered: Path, backend: str) -> None:
    rng = random.Random(4)
    keyframes = [round(t * FPS) for t in pyav_keyframes(numbered)]
    with VideoReader(numbered, backend=backend) as reader:
        for _ in range(12):
            k = rng.randrange(N - 1)
            between = (k + rng.uniform(0.05, 0.95)) / FPS
            frame = next(reader.seek(between))  # first frame with pts >= t: k + 1
            assert frame_number(frame["data"]) == k + 1
            assert frame["pts"] == pytest.approx((k + 1) / FPS)
            on = next(reader.seek(k / FPS))  # exactly on a frame's pts: that frame
            assert frame_number(on["data"]) == k
            approx = frame_number(next(reader.seek(between, keyframes_only=True))["data"])
            assert approx == max(kf for kf in keyframes if kf <= k)
        # Iteration carries on after a seek, and seek() chains.
        rest = [frame_number(f["data"]) for f in reader.seek(50 / FPS)]
        assert rest == list(range(50, N))


@pytest.mark.parametrize("backend", BACKENDS)
def test_seek_past_end_is_empty(numbered: Path, backend: str) -> None:
    reader = VideoReader(numbered, backend=backend)
    assert list(reader.seek(N / FPS + 1)) == []
    assert list(reader.seek(1e9, keyframes_only=True)) == []
    assert frame_number(next(reader.seek(-5))["data"]) == 0
    with pytest.raises(ValueError, match="NaN"):
        reader.seek(float("nan"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_get_frames_at(numbered: Path, backend: str) -> None:
    rng = random.Random(7)
    indices = [rng.randrange(N) for _ in range(15)] + [3, 3, -1]
    reader = VideoReader(numbered, backend=backend)
    first = next(reader)
    frames, pts = reader.get_frames_at(indices)
    expected = [i % N for i in indices]
    assert frames.shape == (len(indices), 3, 16, 64)
    assert [frame_number(f) for f in frames] == expected
    assert pts.dtype == torch.float64
    assert pts.tolist() == pytest.approx([i / FPS for i in expected])
    # The sequential position is kept across random access.
    assert frame_number(first["data"]) == 0
    assert frame_number(next(reader)["data"]) == 1
    with pytest.raises(IndexError, match="out of range"):
        reader.get_frames_at([N])
    assert reader.get_frames_at([]).data.shape == (0, 3, 16, 64)


@pytest.mark.parametrize("backend", BACKENDS)
def test_get_frames_in_range(numbered: Path, backend: str) -> None:
    reader = VideoReader(numbered, backend=backend)
    frames, pts = reader.get_frames_in_range(0.5, 1.0)  # [0.5, 1.0): frames 13 .. 24
    assert [frame_number(f) for f in frames] == list(range(13, 25))
    assert pts.tolist() == pytest.approx([i / FPS for i in range(13, 25)])
    assert reader.get_frames_in_range(10, 11).data.shape[0] == 0
    with pytest.raises(ValueError, match="end_s"):
        reader.get_frames_in_range(1.0, 0.5)


def test_get_frames_at_on_an_asset_matches_sequential_decode() -> None:
    path = ASSETS_VIDEO / "tc-h265_video.mp4"  # B-frames: decode order != display order
    reference = pyav_frames(path)
    for backend in BACKENDS:
        frames, _ = VideoReader(path, backend=backend).get_frames_at([9, 2, 5, 0])
        for frame, i in zip(frames, [9, 2, 5, 0], strict=True):
            np.testing.assert_array_equal(frame.permute(1, 2, 0).numpy(), reference[i][0])


def test_untimed_stream_seeks_by_position() -> None:
    """pg-blue.mpg has no pts at all: frames are numbered by position / fps."""
    path = ASSETS_VIDEO / "pg-blue.mpg"
    reference = pyav_frames(path)
    for backend in BACKENDS:
        reader = VideoReader(path, backend=backend)
        frame = next(reader.seek(10 / 30))
        assert frame["pts"] == pytest.approx(10 / 30)
        np.testing.assert_array_equal(frame["data"].permute(1, 2, 0).numpy(), reference[10][0])
        assert len(reader.get_frames_at([3, 20]).data) == 2


# Long GOPs with B-frames (non-reference frames that random access leaves undecoded),
# made by the ffmpeg binary: codec name, file suffix and encoder arguments.
SKIPPING_ENCODES = [
    ("h264", ".mp4", ["-c:v", "libx264", "-bf", "3", "-g", "50", "-pix_fmt", "yuv420p"]),
    ("h264", ".mkv", ["-c:v", "libx264", "-bf", "3", "-g", "50", "-pix_fmt", "yuv420p"]),
    ("h264", ".ts", ["-c:v", "libx264", "-bf", "3", "-g", "50", "-pix_fmt", "yuv420p"]),
    ("hevc", ".mkv", ["-c:v", "libx265", "-x265-params", "bframes=4:keyint=50:log-level=0"]),
    ("mpeg4", ".avi", ["-c:v", "mpeg4", "-bf", "2", "-g", "50", "-q:v", "4"]),
    ("mpeg2video", ".ts", ["-c:v", "mpeg2video", "-bf", "2", "-g", "50", "-q:v", "4"]),
    ("vp8", ".webm", ["-c:v", "libvpx", "-g", "50", "-auto-alt-ref", "1", "-lag-in-frames", "16"]),
    ("vp9", ".webm", ["-c:v", "libvpx-vp9", "-g", "50", "-deadline", "realtime"]),
]


def encode_testsrc(path: Path, encoder_args: list[str], seconds: int = 4) -> Path:
    """A moving 160x120 testsrc2 clip at 25 fps (skips the test if the encoder is missing)."""
    done = subprocess.run(
        [
            "ffmpeg", "-v", "error", "-y", "-f", "lavfi",
            "-i", f"testsrc2=size=160x120:rate=25:duration={seconds}", *encoder_args, str(path),
        ],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"ffmpeg cannot encode {path.name}: {done.stderr.decode()[-200:]}")
    return path


@pytest.mark.parametrize(
    "codec,suffix,args", SKIPPING_ENCODES, ids=[e[0] + e[1] for e in SKIPPING_ENCODES]
)
def test_random_access_with_skipped_frames_is_exact(
    tmp_path: Path, codec: str, suffix: str, args: list[str]
) -> None:
    """Frames left undecoded on the way to a target never change a decoded frame's pixels."""
    path = encode_testsrc(tmp_path / f"clip{suffix}", args)
    reference = pyav_frames(path)  # every frame, decoded in order by plain PyAV
    rng = random.Random(codec)
    with VideoReader(path) as reader:
        assert reader.stream.codec == codec
        n = len(reference)
        positions = [*sorted({rng.randrange(n) for _ in range(12)}), n - 1, 49, 50, 51]
        frames, pts = reader.get_frames_at(positions)
        for frame, position in zip(frames, positions, strict=True):
            np.testing.assert_array_equal(frame.permute(1, 2, 0).numpy(), reference[position][0])
        assert pts.tolist() == pytest.approx([reference[i][1] for i in positions])
        for position in rng.sample(range(n), 6):
            frame = next(reader.seek(reference[position][1]))
            np.testing.assert_array_equal(
                frame["data"].permute(1, 2, 0).numpy(), reference[position][0]
            )


@pytest.fixture
def decoded_pts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pts of every frame the PyAV backend's decoder gives from now on."""
    from trivium.vision.io.video import pyav as video_pyav

    decoded: list[int] = []
    original = video_pyav.PyAVBackend._decoded

    def counting(self, stream, wanted=None, start=None):
        for frame in original(self, stream, wanted, start):
            decoded.append(frame.pts)
            yield frame

    monkeypatch.setattr(video_pyav.PyAVBackend, "_decoded", counting)
    return decoded


def test_frames_nothing_references_are_not_decoded(tmp_path: Path, decoded_pts: list[int]) -> None:
    """Reaching the last frame of a GOP decodes only the reference frames before it."""
    path = encode_testsrc(tmp_path / "b.mp4", SKIPPING_ENCODES[0][2])
    with VideoReader(path) as reader:
        frame = reader.get_frames_at([48]).data[0]  # keyframes at 0 and 50
    np.testing.assert_array_equal(frame.permute(1, 2, 0).numpy(), pyav_frames(path)[48][0])
    assert len(decoded_pts) < 40  # of the 49 frames 0..48; B-frames (about half) are skipped


def test_h264_packets_left_out_are_those_ffmpeg_skips(tmp_path: Path) -> None:
    """The H.264 packets never sent to the decoder are those FFmpeg's NONREF decode skips."""
    import av

    from trivium.vision.io.video.pyav import h264_unreferenced

    path = encode_testsrc(tmp_path / "b.mp4", SKIPPING_ENCODES[0][2])
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.skip_frame = "NONREF"
        decoded = {frame.pts for frame in container.decode(stream)}
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        length_size = (stream.codec_context.extradata[4] & 3) + 1
        left_out = {
            packet.pts: h264_unreferenced(packet, length_size)
            for packet in container.demux(stream)
            if packet.size
        }
    assert {pts for pts, out in left_out.items() if out} == set(left_out) - decoded
    assert 0 < sum(left_out.values()) < len(left_out) / 2


@pytest.fixture
def packets_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pts of every packet PyAV demuxes from now on, in file order."""
    from av.container.input import InputContainer

    read: list[int] = []
    original = InputContainer.demux

    def counting(self, *args, **kwargs):
        for packet in original(self, *args, **kwargs):
            if packet.size:
                read.append(packet.pts)
            yield packet

    monkeypatch.setattr(InputContainer, "demux", counting)
    return read


@pytest.mark.parametrize("threads", [0, 1, 3])
def test_a_clip_reads_no_packet_past_its_last_frame(
    tmp_path: Path, packets_read: list[int], threads: int
) -> None:
    """Once the clip's last packet is in the decoder it is drained: nothing later is read."""
    path = encode_testsrc(tmp_path / "b.mp4", SKIPPING_ENCODES[0][2])
    reference = pyav_frames(path)
    with VideoReader(path, num_threads=threads) as reader:
        index = reader.backend.frame_index(reader.stream)
        file_order = list(packets_read)  # the index's demux
        packets_read.clear()
        positions = list(range(60, 76))  # keyframes at 0, 50 and 100
        frames = reader.get_frames_at(positions).data
    for frame, position in zip(frames, positions, strict=True):
        np.testing.assert_array_equal(frame.permute(1, 2, 0).numpy(), reference[position][0])
    last = max(file_order.index(int(index.pts[p])) for p in positions)
    assert packets_read == file_order[file_order.index(packets_read[0]) : last + 1]


def test_random_access_first_decodes_on_one_thread_per_cpu(numbered: Path) -> None:
    """num_threads=0: one frame thread per usable CPU when get_frames_at starts the decoder."""
    cpus = min(len(os.sched_getaffinity(0)), 16)

    def threads(reader: VideoReader) -> int:
        return reader.backend._container.streams.video[0].codec_context.thread_count

    with VideoReader(numbered) as reader:
        frames = reader.get_frames_at([33, 7]).data
        assert threads(reader) == cpus
        assert [frame_number(f) for f in frames] == [33, 7]
        assert [frame_number(f["data"]) for f in reader.seek(56 / FPS)] == [56, 57, 58, 59]
    with VideoReader(numbered, num_threads=3) as reader:
        reader.get_frames_at([33])
        assert threads(reader) == 3


def test_seek_just_before_a_keyframe_decodes_from_it(
    tmp_path: Path, decoded_pts: list[int]
) -> None:
    """Frame-accurate seeks start at the keyframe before the target frame, not earlier."""
    path = encode_testsrc(tmp_path / "b.mp4", SKIPPING_ENCODES[0][2])
    keyframe = round(pyav_keyframes(path)[1] * 25)
    with VideoReader(path) as reader:
        frame = next(reader.seek((keyframe - 0.5) / 25))
        assert frame["pts"] == pytest.approx(keyframe / 25)
    np.testing.assert_array_equal(
        frame["data"].permute(1, 2, 0).numpy(), pyav_frames(path)[keyframe][0]
    )
    assert len(decoded_pts) < 10  # the keyframe and what frame threading reads ahead


def test_batches_are_channels_last_in_memory(numbered: Path) -> None:
    """``[T, C, H, W]`` over the decoder's HWC rows: a permute gives contiguous THWC."""
    frames = VideoReader(numbered).get_frames_at([4, 1, 4]).data
    assert frames.shape == (3, 3, 16, 64)
    assert frames.permute(0, 2, 3, 1).is_contiguous()
    assert [frame_number(f) for f in frames] == [4, 1, 4]


# ----------------------------------------------------------------------- audio


@pytest.mark.parametrize("backend", BACKENDS)
def test_audio_stream_samples_exact_with_pcm(tmp_path: Path, backend: str) -> None:
    rate, seconds = 8000, 2
    t = torch.arange(rate * seconds) / rate
    tone = torch.stack([0.5 * torch.sin(2 * torch.pi * 440 * t), 0.25 * torch.cos(t * 50)])
    path = write_numbered(
        tmp_path / "pcm.mkv", 50, 25, audio=tone, audio_fps=rate, audio_codec="pcm_s16le"
    )
    reader = VideoReader(path, "audio", backend=backend)
    chunks = list(reader)
    assert all(c["data"].dtype == torch.float32 and c["data"].shape[0] == 2 for c in chunks)
    audio = torch.cat([c["data"] for c in chunks], dim=1)
    assert audio.shape == tone.shape
    assert (audio - tone).abs().max() <= 1 / 32768 + 1e-6  # s16 quantisation
    assert chunks[0]["pts"] == 0.0
    meta = reader.get_metadata()["audio"]
    assert (meta["sample_rate"], meta["channels"]) == ([rate], [2])
    # Switching streams works both ways.
    reader.set_current_stream("video:0")
    assert frame_number(next(reader)["data"]) == 0


def test_aac_sample_count_matches_ffmpeg_wav(tmp_path: Path) -> None:
    """AAC adds encoder padding: compare with what the ffmpeg CLI decodes to WAV."""
    import soundfile

    rate = 16000
    tone = 0.3 * torch.sin(torch.arange(rate) / rate * 2 * torch.pi * 300).unsqueeze(0)
    path = write_numbered(tmp_path / "aac.mp4", 25, 25, audio=tone, audio_fps=rate)
    wav = tmp_path / "ref.wav"
    subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), str(wav)], check=True, timeout=60)
    reference, ref_rate = soundfile.read(wav, dtype="float32", always_2d=True)
    assert ref_rate == rate
    ours = torch.cat([c["data"] for c in VideoReader(path, "audio")], dim=1)
    assert ours.shape == (1, reference.shape[0])
    assert abs(ours.shape[1] - tone.shape[1]) <= 1024
    np.testing.assert_allclose(ours[0].numpy(), reference[:, 0], atol=1e-4)


# ------------------------------------------------------------ sources, pickling


def test_bytes_and_file_object_sources(numbered: Path) -> None:
    data = numbered.read_bytes()
    for src in (data, io.BytesIO(data), open(numbered, "rb")):  # noqa: SIM115
        reader = VideoReader(src)
        assert [frame_number(f["data"]) for f in reader.seek(2.0)] == list(range(50, N))
        assert len(reader.get_frames_at([1, 2])[0]) == 2
        reader.close()
    with pytest.raises(TypeError, match="files only"):
        VideoReader(data, backend="ffmpeg")


@pytest.mark.parametrize("backend", BACKENDS)
def test_pickle_resumes_after_last_frame(numbered: Path, backend: str) -> None:
    reader = VideoReader(numbered, backend=backend).seek(1.0)
    next(reader)  # frame 25
    clone = pickle.loads(pickle.dumps(reader))
    assert frame_number(next(clone)["data"]) == 26
    assert frame_number(next(reader)["data"]) == 26
    from_bytes = pickle.loads(pickle.dumps(VideoReader(io.BytesIO(numbered.read_bytes()))))
    assert frame_number(next(from_bytes)["data"]) == 0


class _FramesDataset(torch.utils.data.Dataset):
    def __init__(self, reader: VideoReader) -> None:
        self.reader = reader

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.reader.get_frames_at([i * 7]).data[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_reader_in_dataloader_workers(numbered: Path, backend: str) -> None:
    dataset = _FramesDataset(VideoReader(numbered, backend=backend))
    loader = torch.utils.data.DataLoader(dataset, batch_size=2, num_workers=2)
    numbers = [frame_number(f) for batch in loader for f in batch]
    assert numbers == [i * 7 for i in range(8)]


# ------------------------------------------------------------------- bad input


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_input(tmp_path: Path, numbered: Path, backend: str) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing\.mp4"):
        VideoReader(tmp_path / "missing.mp4", backend=backend)
    with pytest.raises(ValueError, match=r"numbered\.mp4: no audio:0 stream \(streams: video:0\)"):
        VideoReader(numbered, "audio", backend=backend)
    with pytest.raises(ValueError, match="stream must be"):
        VideoReader(numbered, "subtitle", backend=backend)
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(bytes(random.Random(0).randrange(256) for _ in range(4096)))
    with pytest.raises(DecodeError, match=r"junk\.mp4"):
        VideoReader(junk, backend=backend)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(DecodeError, match=r"empty\.mp4"):
        VideoReader(empty, backend=backend)
    with pytest.raises(ValueError, match="backend must be"):
        VideoReader(numbered, backend="nope")
    reader = VideoReader(numbered, backend=backend)
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        next(reader)


@pytest.mark.parametrize("backend", BACKENDS)
def test_truncated_files_end_cleanly_or_raise(tmp_path: Path, numbered: Path, backend: str) -> None:
    webm = (ASSETS_VIDEO / "mp-big_buck_bunny_432_433.webm").read_bytes()
    cut_webm = tmp_path / "cut.webm"
    cut_webm.write_bytes(webm[: len(webm) * 2 // 3])
    frames = list(VideoReader(cut_webm, backend=backend))
    assert 0 < len(frames) < 24
    assert all(f["data"].shape == (3, 720, 1280) for f in frames)
    cut_mp4 = tmp_path / "cut.mp4"  # the index (moov) is at the end: nothing is readable
    cut_mp4.write_bytes(numbered.read_bytes()[:2000])
    with pytest.raises(DecodeError, match=r"cut\.mp4"):
        list(VideoReader(cut_mp4, backend=backend))


# --------------------------------------------------------- resources and memory


def test_ffmpeg_processes_are_reaped(numbered: Path) -> None:
    from vision.video_testclips import child_pids, open_fds

    gc.collect()
    before_children, before_fds = child_pids(), open_fds()
    reader = VideoReader(numbered, backend="ffmpeg")
    next(reader)
    assert len(child_pids()) == len(before_children) + 1  # one ffmpeg streaming frames
    reader.close()  # 1. close
    reader = VideoReader(numbered, backend="ffmpeg")
    next(reader)
    del reader  # 2. garbage collection
    gc.collect()
    reader = VideoReader(numbered, backend="ffmpeg")
    with pytest.raises(RuntimeError, match="boom"), reader:  # 3. an exception mid-iteration
        for _ in reader:
            raise RuntimeError("boom")
    reader = VideoReader(numbered, backend="ffmpeg")
    list(reader)  # 4. iteration to the end, and random access
    reader.get_frames_at([1, 40, 5])
    assert child_pids() == before_children
    assert open_fds() == before_fds


@pytest.mark.parametrize("backend", BACKENDS)
def test_iteration_holds_a_bounded_number_of_frames(tmp_path: Path, backend: str) -> None:
    import tracemalloc

    frames = torch.randint(0, 256, (90, 3, 96, 128), dtype=torch.uint8)
    path = tmp_path / "noise.mp4"
    from trivium.vision.io import write_video

    write_video(path, frames, 30)
    frame_bytes = 3 * 96 * 128
    reader = VideoReader(path, backend=backend, num_threads=1)
    next(reader)
    tracemalloc.start()
    try:
        count = 1 + sum(1 for _ in reader)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 90
    assert peak < 8 * frame_bytes  # 90 frames decoded, only a few ever alive


@pytest.mark.parametrize("backend", BACKENDS)
def test_relative_path_starting_with_a_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    (tmp_path / "-clip.mp4").write_bytes((ASSETS_VIDEO / "mp--video-with-dash-.mp4").read_bytes())
    monkeypatch.chdir(tmp_path)
    assert len(list(VideoReader("-clip.mp4", backend=backend))) == 5


@pytest.mark.parametrize("backend", ["pyav", "ffmpeg"])
def test_a_new_reader_of_an_indexed_file_does_not_demux_it_again(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frame index is kept per file (path, size, mtime): changed files are indexed anew."""
    if backend == "ffmpeg":
        pytest.importorskip("trivium.vision.io.video.ffmpeg")
    from trivium.vision.io.video import ffmpeg as video_ffmpeg
    from trivium.vision.io.video import pyav as video_pyav

    owner, method = (
        (video_pyav.PyAVBackend, "_demux_index")
        if backend == "pyav"
        else (video_ffmpeg.FFmpegBackend, "_probe_index")
    )
    built: list[str] = []
    original = getattr(owner, method)

    def counting(self, stream):
        built.append(stream.name)
        return original(self, stream)

    monkeypatch.setattr(owner, method, counting)
    path = write_numbered(tmp_path / "a.mp4", 12, fps=6, gop=4)
    for _ in range(3):
        with VideoReader(path, backend=backend) as reader:
            frames = reader.get_frames_at([1, 10])
        assert [frame_number(f) for f in frames.data] == [1, 10]
    assert built == ["video:0"]
    write_numbered(path, 20, fps=6, gop=4)  # same path, other content
    with VideoReader(path, backend=backend) as reader:
        assert [frame_number(f) for f in reader.get_frames_at([15, -1]).data] == [15, 19]
    assert built == ["video:0", "video:0"]
    with VideoReader(path.read_bytes(), backend="pyav") as reader:  # bytes: not cached
        assert len(reader.get_frames_at([0]).data) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_that_ends_early_is_decoded_again_from_a_seek(
    numbered: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decode run that stops before a wanted frame it should reach (a frame stood in
    for another) is sought again for that frame; a second early end is an error."""
    reader = VideoReader(numbered, backend=backend)
    original = type(reader.backend).frames
    calls: list[int] = []
    cut_after = {1: 1}  # call number -> frames it gives before ending

    def ending_early(self, *args, **kwargs):
        calls.append(args[1])
        frames = original(self, *args, **kwargs)
        limit = cut_after.get(len(calls))
        if limit is None:
            yield from frames
            return
        for _, frame in zip(range(limit), frames, strict=False):
            yield frame
        frames.close()

    monkeypatch.setattr(type(reader.backend), "frames", ending_early)
    wanted = [21, 22, 23]  # one run: no keyframe between them
    frames = reader.get_frames_at(wanted).data
    assert [frame_number(f) for f in frames] == wanted
    assert len(calls) == 2  # the run, then a seek for frame 22

    calls.clear()
    cut_after.update({1: 1, 2: 0})  # the new run ends at once too
    with pytest.raises(DecodeError, match=r"frame 22 .* could not be decoded"):
        reader.get_frames_at(wanted)
