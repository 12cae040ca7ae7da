"""trivium.audio.load / info on what libsndfile does not read, against PyAV's own decode.

The files are made here with PyAV's encoders (AAC in MP4 / M4A / ADTS, Opus in WebM
and Ogg, FLAC, ALAC and PCM in Matroska and MP4, MP3 in MP4, WMA in ASF, PCM in AVI,
AAC in MPEG-TS) or are real video files from tests/assets/video. The reference is
the whole first audio stream decoded by PyAV, frame by frame, as it comes.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
import torch

from trivium.audio import info, load
from trivium.audio.io import _ffmpeg
from trivium.core.errors import DecodeError, UnsupportedFormatError

av = pytest.importorskip("av", reason="the ffmpeg extra (PyAV) is not installed")

VIDEO = Path(__file__).resolve().parents[1] / "assets" / "video"
WITH_AUDIO = ["mp-big_buck_bunny_432_433.webm", "mp-transparent.webm"]
WITHOUT_AUDIO = ["mp--video-with-dash-.mp4", "tc-h265_video.mp4", "tc-av1_video.mkv", "pg-blue.mpg"]


@dataclass(frozen=True)
class Case:
    """A file to make: container (PyAV's muxer), codec, rate, channels, suffix."""

    muxer: str
    codec: str
    rate: int
    channels: int
    suffix: str
    seconds: float = 1.5
    sample_format: str | None = None  # the encoder's input format (default: its first)
    bit_rate: int | None = None

    @property
    def id(self) -> str:
        return f"{self.codec}-{self.rate // 1000}k-{self.channels}ch{self.suffix}"


CASES = [
    Case("mp4", "aac", 44100, 2, ".mp4"),
    Case("ipod", "aac", 16000, 1, ".m4a"),
    Case("ipod", "aac", 8000, 2, ".m4a"),
    Case("adts", "aac", 22050, 1, ".aac"),
    Case("adts", "aac", 48000, 2, ".aac"),
    Case("webm", "libopus", 48000, 2, ".webm"),
    Case("webm", "libopus", 16000, 1, ".webm"),
    Case("ogg", "libopus", 24000, 1, ".opus"),
    Case("ogg", "libopus", 48000, 2, ".ogg"),
    Case("matroska", "flac", 32000, 2, ".mka"),
    Case("ipod", "alac", 44100, 2, ".m4a", sample_format="s16p"),
    Case("ipod", "alac", 48000, 1, ".m4a", sample_format="s32p"),  # 24-bit
    Case("matroska", "pcm_s16le", 8000, 1, ".mkv"),
    Case("matroska", "pcm_u8", 11025, 2, ".mka"),
    Case("mp4", "libmp3lame", 44100, 2, ".mp4"),
    Case("asf", "wmav2", 22050, 2, ".wma", bit_rate=64000),
    Case("avi", "pcm_s16le", 16000, 2, ".avi"),
    Case("mpegts", "aac", 32000, 1, ".ts"),  # in no table: libsndfile refuses, FFmpeg reads
]
BY_ID = {case.id: case for case in CASES}
# Containers that count their samples (info's num_frames is the container's).
COUNTED = {"mp4", "ipod", "ogg"}


def signal(rate: int, channels: int, seconds: float) -> np.ndarray:
    """``[channels, time]`` float32: tones and a chirp, different in each channel (a tone at
    an eighth of the rate makes samples one position apart differ by about 0.08)."""
    t = np.arange(int(rate * seconds)) / rate
    rows = []
    for c in range(channels):
        tone = 0.2 * np.sin(2 * np.pi * (330 + 110 * c) * t)
        high = 0.1 * np.sin(2 * np.pi * rate / 8 * t + c)
        chirp = 0.15 * np.sin(2 * np.pi * (100 * t + 0.25 * rate / 4 * t * t / seconds))
        rows.append(tone + high + chirp * (1 - 0.5 * c))
    return np.stack(rows).astype(np.float32)


def encode(
    case: Case, dest: Path | io.BytesIO, *, extra_streams: int = 0, **options: str
) -> np.ndarray:
    """Write ``case`` with PyAV (muxer ``options``); ``extra_streams`` more audio streams
    follow (other tones)."""
    data = signal(case.rate, case.channels, case.seconds)
    layout = "mono" if case.channels == 1 else "stereo"
    with av.open(dest, "w", format=case.muxer, options=options) as out:
        streams = [out.add_stream(case.codec, rate=case.rate, layout=layout)]
        streams += [
            out.add_stream(case.codec, rate=case.rate, layout="mono") for _ in range(extra_streams)
        ]
        for stream in streams:
            if case.bit_rate:
                stream.bit_rate = case.bit_rate
            if case.sample_format:
                stream.format = case.sample_format
        for k, stream in enumerate(streams):
            samples = data if k == 0 else signal(case.rate, 1, case.seconds) * (0.5 / k)
            fmt = case.sample_format or stream.codec_context.codec.audio_formats[0].name
            for start in range(0, samples.shape[1], 1000):
                chunk = samples[:, start : start + 1000]
                frame = av.AudioFrame.from_ndarray(
                    _as_format(chunk, fmt), format=fmt, layout=stream.layout.name
                )
                frame.sample_rate, frame.pts = case.rate, start
                out.mux(stream.encode(frame))
            out.mux(stream.encode(None))
    return data


def _as_format(chunk: np.ndarray, fmt: str) -> np.ndarray:
    """``[channels, n]`` float samples in PyAV's array layout for sample format ``fmt``."""
    planar = fmt.endswith("p")
    base = fmt.removesuffix("p")
    if base == "s16":
        chunk = np.round(chunk * 32767).astype(np.int16)
    elif base == "s32":
        chunk = np.round(chunk * 8388607).astype(np.int32) << 8
    elif base == "u8":
        chunk = np.round(chunk * 127 + 128).astype(np.uint8)
    if planar:
        return np.ascontiguousarray(chunk)
    return np.ascontiguousarray(chunk.T).reshape(1, -1)


def pyav_decode(src: Path | bytes) -> tuple[np.ndarray, int, str]:
    """The reference: every frame of the first audio stream as PyAV decodes it,
    ``[channels, time]`` in the decoder's own dtype, the rate and the sample format."""
    with av.open(io.BytesIO(src) if isinstance(src, bytes) else str(src)) as container:
        stream = container.streams.audio[0]
        pieces, fmt = [], ""
        for frame in container.decode(stream):
            array = frame.to_ndarray()
            if not frame.format.is_planar:
                array = array.reshape(frame.samples, -1).T
            pieces.append(array)
            fmt = frame.format.name
        return np.concatenate(pieces, axis=1), stream.codec_context.sample_rate, fmt


def as_float(samples: np.ndarray) -> np.ndarray:
    """Integer samples scaled to [-1, 1] as libsndfile scales them (float32)."""
    if samples.dtype == np.uint8:
        return (samples.astype(np.float32) - 128) / 128
    if samples.dtype.kind == "i":
        return samples.astype(np.float32) / np.float32(2.0 ** (8 * samples.itemsize - 1))
    return samples.astype(np.float32)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ffmpeg")
    made = {}
    for case in CASES:
        made[case.id] = folder / f"{case.id.replace('.', '_')}{case.suffix}"
        encode(case, made[case.id])
    return made


@pytest.mark.parametrize("case_id", BY_ID)
def test_load_equals_pyav_decode(case_id: str, files: dict[str, Path]) -> None:
    case, path = BY_ID[case_id], files[BY_ID[case_id].id]
    reference, rate, fmt = pyav_decode(path)
    assert reference.shape[0] == case.channels and reference.shape[1] >= case.rate
    waveform, sample_rate = load(path)
    assert sample_rate == rate
    assert waveform.dtype == torch.float32 and waveform.is_contiguous()
    np.testing.assert_array_equal(waveform.numpy(), as_float(reference))
    last, _ = load(path, channels_first=False)
    assert last.is_contiguous() and torch.equal(last, waveform.T)
    stored, _ = load(path, normalize=False)
    if fmt.removesuffix("p") in ("flt", "fltp"):
        assert stored.dtype == torch.float32
    np.testing.assert_array_equal(stored.numpy(), reference)  # dtype included
    assert stored.numpy().dtype == reference.dtype
    assert torch.equal(load(path, normalize=False, channels_first=False)[0], stored.T)


def test_what_normalize_false_gives_per_codec(files: dict[str, Path]) -> None:
    dtypes = {
        "aac-44k-2ch.mp4": torch.float32,
        "libopus-48k-2ch.ogg": torch.float32,
        "libmp3lame-44k-2ch.mp4": torch.float32,
        "flac-32k-2ch.mka": torch.int16,
        "alac-44k-2ch.m4a": torch.int16,
        "alac-48k-1ch.m4a": torch.int32,  # 24-bit, left-justified (<< 8) as libsndfile's
        "pcm_s16le-8k-1ch.mkv": torch.int16,
        "pcm_u8-11k-2ch.mka": torch.uint8,
    }
    for case_id, dtype in dtypes.items():
        stored, _ = load(files[case_id], normalize=False)
        assert stored.dtype == dtype, case_id
    low_bits = load(files["alac-48k-1ch.m4a"], normalize=False)[0] & 0xFF
    assert not low_bits.any()
    # The 16-bit samples as written (ALAC and FLAC are lossless).
    expected = np.round(signal(44100, 2, 1.5) * 32767).astype(np.int16)
    np.testing.assert_array_equal(load(files["alac-44k-2ch.m4a"], normalize=False)[0], expected)


@pytest.mark.parametrize("case_id", BY_ID)
def test_info_describes_the_stream(case_id: str, files: dict[str, Path]) -> None:
    case, path = BY_ID[case_id], files[BY_ID[case_id].id]
    reference, rate, _ = pyav_decode(path)
    meta = info(path)
    assert (meta.sample_rate, meta.num_channels) == (rate, case.channels)
    decoded = reference.shape[1]
    if case.muxer == "ogg":  # the last page's position, less Opus's pre-skip
        assert meta.num_frames == decoded
    elif case.muxer in COUNTED:  # the samples given to the encoder; AAC pads the last frame
        assert meta.num_frames == round(case.seconds * case.rate) * rate // case.rate
        assert 0 <= decoded - meta.num_frames <= 2048
    else:  # an estimate from the duration or the bitrate
        assert abs(meta.num_frames - decoded) <= 0.05 * decoded
    encodings = {"libopus": "OPUS", "libmp3lame": "MP3", "pcm_s16le": "PCM_S", "pcm_u8": "PCM_U"}
    assert meta.encoding == encodings.get(case.codec, case.codec.upper())
    bits = {"pcm_s16le": 16, "pcm_u8": 8, "flac": 16}
    if case.codec == "alac":
        bits["alac"] = 0 if case.sample_format == "s32p" else 16  # s32: 24 or 32 bits
    assert meta.bits_per_sample == bits.get(case.codec, 0)


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0


@pytest.mark.parametrize(
    "case_id",
    ["aac-44k-2ch.mp4", "aac-16k-1ch.m4a", "libopus-48k-2ch.ogg", "libopus-24k-1ch.opus",
     "libopus-48k-2ch.webm", "aac-22k-1ch.aac", "alac-44k-2ch.m4a", "flac-32k-2ch.mka"],
)  # fmt: skip
def test_frame_ranges_are_exact_sample_positions(case_id: str, files: dict[str, Path]) -> None:
    path, rate = files[case_id], BY_ID[case_id].rate
    reference = as_float(pyav_decode(path)[0])
    total, level = reference.shape[1], rms(reference)
    lossless = case_id.startswith(("alac", "flac"))
    # Across frame boundaries, far enough in for a seek (MP4, Ogg), up to and past the end.
    windows = [(0, 1000), (1, 999), (777, 4096), (total // 3, 1), (total // 2 + 1, 5000)]
    windows += [(total - 3300, 1000), (total - 300, 1000), (total - 1, -1), (total, 10)]
    windows += [(total + 5000, -1), (5000, 0), (total // 2 + 1, -1)]
    for offset, count in windows:
        got, _ = load(path, frame_offset=offset, num_frames=count)
        want = reference[:, offset : None if count < 0 else offset + count]
        assert got.shape == want.shape, (offset, count)
        got = got.numpy()
        if lossless or offset <= 0.1 * rate:  # no seek: the decode from the start
            np.testing.assert_array_equal(got, want)
            continue
        # A seek starts the decoder 0.1 s earlier: the same positions, and samples that
        # can differ where the codec substitutes noise (its random state is not the one
        # of a decode from the start). One position off would differ by far more.
        assert rms(got - want) <= 0.02 * level, (offset, count)
        if rms(want) > 0.5 * level and want.shape[1] > 100:
            shifted = min(rms(got[:, 1:] - want[:, :-1]), rms(got[:, :-1] - want[:, 1:]))
            assert shifted > 0.1 * level, (offset, count)
    ranged, _ = load(path, frame_offset=total // 2, num_frames=5000, channels_first=False)
    assert torch.equal(ranged, load(path, frame_offset=total // 2, num_frames=5000)[0].T)


def each_source(path: Path) -> list[Any]:
    """``path`` as each kind of source ``load`` takes."""
    data = path.read_bytes()
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return [str(path), path, data, bytearray(data), memoryview(data), io.BytesIO(data), tensor]


def test_sources_are_equivalent(files: dict[str, Path]) -> None:
    for case_id in ("aac-16k-1ch.m4a", "libopus-48k-2ch.webm", "aac-22k-1ch.aac"):
        path = files[case_id]
        reference, rate = load(path)
        ranged = load(path, frame_offset=20000, num_frames=3000)[0]
        for src, again, third in zip(*(each_source(path) for _ in range(3)), strict=True):
            waveform, sample_rate = load(src)
            assert sample_rate == rate and torch.equal(waveform, reference), type(src)
            assert info(again) == info(path)
            assert torch.equal(load(third, frame_offset=20000, num_frames=3000)[0], ranged)
        with open(path, "rb") as f:
            assert torch.equal(load(f)[0], reference)


@pytest.mark.parametrize("name", WITH_AUDIO)
def test_video_files_give_their_audio_stream(name: str) -> None:
    path = VIDEO / name
    reference, rate, fmt = pyav_decode(path)
    assert fmt == "fltp" and reference.shape[0] == 2  # Vorbis, after a video stream
    waveform, sample_rate = load(path)
    assert sample_rate == rate
    np.testing.assert_array_equal(waveform.numpy(), reference)
    part, _ = load(path, frame_offset=12345, num_frames=6789)  # counted from the start
    np.testing.assert_array_equal(part.numpy(), reference[:, 12345 : 12345 + 6789])
    meta = info(path)
    assert (meta.sample_rate, meta.num_channels, meta.encoding) == (rate, 2, "VORBIS")
    assert abs(meta.num_frames - reference.shape[1]) < 0.02 * reference.shape[1]


@pytest.mark.parametrize("name", WITHOUT_AUDIO)
def test_video_files_without_audio_say_so(name: str) -> None:
    path = VIDEO / name
    for call in (load, info):
        with pytest.raises(DecodeError, match=rf"{name}: no audio stream \(the file holds video"):
            call(path)


def test_the_first_of_several_audio_streams(tmp_path: Path) -> None:
    path = tmp_path / "two.mka"
    written = encode(Case("matroska", "pcm_s16le", 16000, 2, ".mka"), path, extra_streams=2)
    with av.open(str(path)) as container:
        assert len(container.streams.audio) == 3
    waveform, rate = load(path, normalize=False)
    assert rate == 16000
    np.testing.assert_array_equal(waveform.numpy(), np.round(written * 32767).astype(np.int16))
    assert info(path).num_channels == 2


def test_dispatch_by_content_and_by_argument(files: dict[str, Path], tmp_path: Path) -> None:
    m4a = files["aac-16k-1ch.m4a"]
    renamed = tmp_path / "actually-m4a.wav"
    renamed.write_bytes(m4a.read_bytes())
    assert torch.equal(load(renamed)[0], load(m4a)[0])  # the bytes decide, not the name
    with pytest.raises(UnsupportedFormatError, match=r"actually-m4a\.wav"):
        load(renamed, backend="soundfile")
    # format: libsndfile's container names go to libsndfile, others are FFmpeg's demuxers.
    adts = files["aac-22k-1ch.aac"].read_bytes()
    assert torch.equal(load(adts, format="aac")[0], load(adts)[0])
    assert info(adts, format="AAC").encoding == "AAC"
    with pytest.raises(ValueError, match="format"):
        load(adts, format="no-such-demuxer")
    # backend="ffmpeg" reads what libsndfile reads too, as FFmpeg decodes it.
    wav = io.BytesIO()
    samples = (signal(8000, 2, 0.5) * 32767).astype(np.int16)
    sf.write(wav, samples.T, 8000, format="WAV", subtype="PCM_16")
    by_ffmpeg, rate = load(wav.getvalue(), backend="ffmpeg", normalize=False)
    assert rate == 8000 and np.array_equal(by_ffmpeg.numpy(), samples)
    assert torch.equal(load(wav.getvalue(), backend="ffmpeg")[0], load(wav.getvalue())[0])
    assert info(wav.getvalue(), backend="ffmpeg") == info(wav.getvalue())
    opus = files["libopus-24k-1ch.opus"]
    assert load(opus)[1] == 48000 and info(opus).sample_rate == 48000
    assert load(opus, backend="soundfile")[1] == 24000  # libsndfile: the encoder's rate
    for bad in ({"backend": "sox"}, {"buffer_size": 0}, {"buffer_size": True}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            load(m4a, **bad)
        with pytest.raises(ValueError, match=next(iter(bad))):
            info(m4a, **bad)
    assert torch.equal(load(io.BytesIO(m4a.read_bytes()), buffer_size=1 << 20)[0], load(m4a)[0])


def test_the_sniff_table_knows_each_container(files: dict[str, Path], tmp_path: Path) -> None:
    names = {
        ".mp4": "MP4/M4A/MOV",
        ".m4a": "MP4/M4A/MOV",
        ".webm": "Matroska/WebM",
        ".mka": "Matroska/WebM",
        ".mkv": "Matroska/WebM",
        ".aac": "AAC (ADTS)",
        ".opus": "Ogg Opus",
        ".ogg": "Ogg Opus",
        ".wma": "ASF (WMA)",
        ".avi": "AVI",
    }
    for case_id, path in files.items():
        found = _ffmpeg.sniff(path.read_bytes()[: _ffmpeg.HEAD_BYTES])
        assert (found and found.name) == names.get(path.suffix), case_id
    # What libsndfile writes stays with libsndfile (MP3 frames are not ADTS).
    noise = np.random.default_rng(0).uniform(-0.5, 0.5, (16000, 1))
    for fmt, subtype in [("WAV", "PCM_16"), ("FLAC", "PCM_16"), ("OGG", "VORBIS"),
                         ("MP3", "MPEG_LAYER_III"), ("AIFF", "PCM_16")]:  # fmt: skip
        buf = io.BytesIO()
        sf.write(buf, noise, 16000, format=fmt, subtype=subtype)
        assert _ffmpeg.sniff(buf.getvalue()[: _ffmpeg.HEAD_BYTES]) is None, fmt


def test_damaged_files_raise_decode_error_naming_them(tmp_path: Path) -> None:
    case = Case("mp4", "aac", 44100, 2, ".mp4")
    index_first, index_last = tmp_path / "first.mp4", tmp_path / "last.mp4"
    encode(case, index_first, movflags="faststart")
    encode(case, index_last)
    first, last = index_first.read_bytes(), index_last.read_bytes()
    samples = first.find(b"mdat")
    assert first.find(b"moov") < samples and last.find(b"moov") > last.find(b"mdat")
    damaged = {
        "header-only.m4a": first[:40],  # ftyp, then nothing
        "garbage.m4a": first[:32] + bytes(range(256)) * 8,
        "no-index.m4a": last[: len(last) // 2],  # the sample table (at the end) is lost
        "cut-samples.m4a": first[: samples + (len(first) - samples) // 2],
        "cut-last-frame.m4a": first[:-50],
    }
    for name, data in damaged.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(DecodeError, match=rf"{name}: "):
            load(path)
        with pytest.raises(DecodeError, match=r"<bytes>: "):
            load(data)
    with pytest.raises(DecodeError, match=r"cut-samples\.m4a: corrupt or truncated audio data"):
        load(tmp_path / "cut-samples.m4a")
    for name in ("header-only.m4a", "garbage.m4a", "no-index.m4a"):  # nothing to decode
        with pytest.raises(DecodeError, match=rf"{name}: "):
            info(tmp_path / name)
    # A range before the cut is all there.
    before_cut = load(tmp_path / "cut-samples.m4a", frame_offset=1000, num_frames=1000)[0]
    assert torch.equal(before_cut, load(index_first, frame_offset=1000, num_frames=1000)[0])


def test_a_cut_file_without_a_count_gives_what_is_there(
    files: dict[str, Path], tmp_path: Path
) -> None:
    # Matroska keeps no sample count: a file cut short reads as a shorter one.
    data = files["libopus-48k-2ch.webm"].read_bytes()
    (tmp_path / "cut.webm").write_bytes(data[: len(data) // 2])
    half, _ = load(tmp_path / "cut.webm")
    full = as_float(pyav_decode(files["libopus-48k-2ch.webm"])[0])
    assert 0 < half.shape[1] < full.shape[1]
    np.testing.assert_array_equal(half.numpy(), full[:, : half.shape[1]])
    # An ADTS frame cut in the middle is damaged data.
    data = files["aac-48k-2ch.aac"].read_bytes()
    (tmp_path / "cut.aac").write_bytes(data[: len(data) // 2])
    with pytest.raises(DecodeError, match=r"cut\.aac: corrupt or truncated audio data after"):
        load(tmp_path / "cut.aac")


# ------------------------------------------------------------- without the extra

_WITHOUT_AV = """
import json, sys
sys.modules["av"] = None  # PyAV cannot be imported
import trivium.audio as ta
from trivium.core.errors import UnsupportedFormatError
results = {}
for path in sys.argv[1:]:
    try:
        waveform, rate = ta.load(path)
        results[path] = ["ok", rate, list(waveform.shape)]
    except UnsupportedFormatError as e:
        results[path] = ["unsupported", str(e)]
    try:
        ta.info(path)
    except UnsupportedFormatError as e:
        results[path].append(str(e))
try:
    ta.load(sys.argv[-2], backend="ffmpeg")
except UnsupportedFormatError as e:
    results["backend"] = str(e)
print(json.dumps(results))
"""


def test_without_the_extra_the_error_says_what_to_install(
    files: dict[str, Path], tmp_path: Path
) -> None:
    wav = tmp_path / "plain.wav"
    sf.write(wav, np.zeros((800, 1)), 8000, subtype="PCM_16")
    paths = [files[i] for i in ("aac-44k-2ch.mp4", "libopus-48k-2ch.webm", "aac-22k-1ch.aac")]
    paths += [VIDEO / WITH_AUDIO[0], files["libopus-24k-1ch.opus"], wav, files["aac-32k-1ch.ts"]]
    assert paths[-2] == wav  # the script also asks for backend="ffmpeg" on it
    run = subprocess.run(
        [sys.executable, "-c", _WITHOUT_AV, *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
    )
    results = json.loads(run.stdout)
    formats = ["MP4/M4A/MOV", "Matroska/WebM", "AAC (ADTS)", "Matroska/WebM"]
    for path, fmt in zip(paths, formats, strict=False):
        outcome, message, info_message = results[str(path)]
        assert outcome == "unsupported"
        assert message.startswith(f"{path}: {fmt} is not supported without FFmpeg")
        assert message.endswith("the 'ffmpeg' extra of trivium-audio: pip install 'av>=12'")
        assert info_message == message
    assert results[str(paths[4])] == ["ok", 24000, [1, 36000]]  # Ogg Opus: libsndfile's
    assert results[str(wav)] == ["ok", 8000, [1, 800]]
    ts = results[str(paths[6])]  # not in the table: libsndfile's own refusal
    assert ts[0] == "unsupported" and ts[1].startswith(f"{paths[6]}: cannot decode")
    assert results["backend"].startswith(
        f"{wav}: decoding with backend='ffmpeg' is not supported without FFmpeg: install PyAV"
    )


def test_importing_trivium_audio_does_not_import_pyav() -> None:
    code = "import sys, trivium.audio; print('av' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


# ------------------------------------------------------------- DataLoader workers


def load_windows(items: list[tuple[str, int, int]]) -> list[torch.Tensor]:
    """A DataLoader ``collate_fn``: each ``(path, frame_offset, num_frames)`` loaded."""
    return [load(path, frame_offset=offset, num_frames=count)[0] for path, offset, count in items]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_loading_in_dataloader_workers(context: str, files: dict[str, Path]) -> None:
    paths = [str(files[i]) for i in ("aac-44k-2ch.mp4", "libopus-48k-2ch.ogg", "flac-32k-2ch.mka")]
    paths.append(str(VIDEO / WITH_AUDIO[1]))
    items = [(p, offset, count) for p in paths for offset, count in ((0, -1), (30001, 4000))]
    expected = load_windows(items)  # in this process first: PyAV already in use here
    loader = torch.utils.data.DataLoader(
        items,
        batch_size=1,
        num_workers=2,
        collate_fn=load_windows,
        multiprocessing_context=context,
        timeout=120,
    )
    for _ in range(2):
        got = [w for batch in loader for w in batch]
        assert len(got) == len(expected)
        for item, a, b in zip(items, got, expected, strict=True):
            assert torch.equal(a, b), item


def test_a_directory_is_not_an_audio_file(tmp_path: Path) -> None:
    for call in (load, info):
        for backend in (None, "ffmpeg"):
            with pytest.raises(IsADirectoryError, match=rf"{tmp_path}: is a directory"):
                call(tmp_path, backend=backend)


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg command")
@pytest.mark.parametrize("case_id", ["libopus-48k-2ch.ogg", "aac-44k-2ch.mp4"])
def test_a_stream_copied_out_of_a_longer_file(
    case_id: str, files: dict[str, Path], tmp_path: Path
) -> None:
    """``ffmpeg -ss ... -c copy`` keeps the packets before the cut at negative times:
    the count no longer says what decodes, and ranges still land on exact positions."""
    cut = tmp_path / f"cut{files[case_id].suffix}"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-ss", "0.5", "-i", str(files[case_id]),
         "-c", "copy", str(cut)],
        check=True,
    )  # fmt: skip
    if case_id.endswith(".ogg"):
        with av.open(str(cut)) as container:
            assert container.streams.audio[0].start_time < 0
    reference = as_float(pyav_decode(cut)[0])
    waveform, _ = load(cut)
    np.testing.assert_array_equal(waveform.numpy(), reference)
    assert abs(info(cut).num_frames - reference.shape[1]) <= 2048
    ranged, _ = load(cut, frame_offset=30001, num_frames=5000)
    assert rms(ranged.numpy() - reference[:, 30001:35001]) <= 0.02 * rms(reference)
