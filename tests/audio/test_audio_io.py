"""trivium.audio.io against soundfile, scipy.io.wavfile and the real files in tests/assets/audio."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.io.wavfile
import soundfile as sf
import torch

from trivium.audio import _ops
from trivium.audio import io as aio
from trivium.audio.io import AudioMetaData, _sndfile, info, load, save, stream
from trivium.core.errors import DecodeError, EncodeError, UnsupportedFormatError

AUDIO = Path(__file__).resolve().parents[1] / "assets" / "audio"
BAD = AUDIO / "bad"
AUDIO_FILES = sorted(p for p in AUDIO.iterdir() if p.suffix in (".wav", ".flac", ".ogg"))
SPEECH = AUDIO / "ds-LDC93S1.wav"
MULTI = AUDIO / "sb-multi-mic-speech.flac"
# WAV files holding plain integer or float PCM, which scipy.io.wavfile reads independently.
SCIPY_READABLE = [
    "ds-LDC93S1.wav",
    "pg-boom.wav",
    "sp-test-44100Hz-2ch-32bit-float-le.wav",
    "sp-test-8000Hz-le-2ch-1byteu.wav",
    "sp-test-8000Hz-le-3ch-5S-24bit.wav",
    "tc-sine_mono_s16.wav",
]


def sf_reference(path: Path, dtype: str = "float32") -> np.ndarray:
    data, _ = sf.read(path, dtype=dtype, always_2d=True)
    return data.T


@pytest.mark.parametrize("path", AUDIO_FILES, ids=lambda p: p.name)
def test_load_matches_soundfile(path: Path) -> None:
    waveform, sample_rate = load(path)
    assert waveform.dtype == torch.float32 and waveform.is_contiguous()
    np.testing.assert_array_equal(waveform.numpy(), sf_reference(path))
    assert sample_rate == sf.info(path).samplerate
    meta = info(path)
    assert (meta.num_channels, meta.num_frames) == tuple(waveform.shape)
    assert meta.sample_rate == sample_rate


@pytest.mark.parametrize(
    ("fmt", "subtype"),
    [
        ("WAV", "PCM_U8"),
        ("WAV", "PCM_16"),
        ("WAV", "PCM_24"),
        ("WAV", "PCM_32"),
        ("AIFF", "PCM_S8"),
        ("AIFF", "PCM_16"),
        ("FLAC", "PCM_16"),
        ("FLAC", "PCM_24"),
    ],
)
@pytest.mark.parametrize("channels", [1, 2, 3])  # 2: interleaved stereo's own conversion
def test_integer_pcm_scaled_like_libsndfile(fmt: str, subtype: str, channels: int) -> None:
    # load() reads integer PCM as stored and scales it itself: every value, the extremes
    # included, must equal libsndfile's own float conversion bit for bit.
    rng = np.random.default_rng(0)
    data = rng.integers(-(2**31), 2**31, size=(4000, channels), dtype=np.int64)
    data[:4] = [[-(2**31)], [2**31 - 1], [0], [-1]]
    buf = io.BytesIO()
    sf.write(buf, data.astype(np.int32), 8000, format=fmt, subtype=subtype)
    expected, _ = sf.read(io.BytesIO(buf.getvalue()), dtype="float32", always_2d=True)
    first, _ = load(buf.getvalue())
    last, _ = load(buf.getvalue(), channels_first=False)
    assert first.dtype == torch.float32 and first.is_contiguous() and last.is_contiguous()
    np.testing.assert_array_equal(first.numpy(), expected.T)
    np.testing.assert_array_equal(last.numpy(), expected)
    chunks = list(stream(buf.getvalue(), 999))
    np.testing.assert_array_equal(torch.cat(chunks, -1).numpy(), expected.T)


@pytest.mark.parametrize("name", SCIPY_READABLE)
def test_load_unnormalized_matches_scipy(name: str) -> None:
    path = AUDIO / name
    _, expected = scipy.io.wavfile.read(path)  # 24-bit comes back as left-justified int32
    expected = expected.reshape(len(expected), -1).T
    waveform, _ = load(path, normalize=False)
    assert waveform.numpy().dtype == expected.dtype
    np.testing.assert_array_equal(waveform.numpy(), expected)


def test_load_unnormalized_dtypes_by_subtype() -> None:
    expected = {"PCM_U8": torch.uint8, "PCM_16": torch.int16, "PCM_24": torch.int32}
    for path in AUDIO_FILES:
        subtype = sf.info(path).subtype
        waveform, _ = load(path, normalize=False)
        if subtype in expected:
            assert waveform.dtype == expected[subtype], path.name
        elif subtype == "FLOAT":
            assert waveform.dtype == torch.float32
        else:  # compressed: mu-law, ADPCM, Vorbis decode to normalised float32
            assert subtype in ("ULAW", "MS_ADPCM", "VORBIS"), subtype
            np.testing.assert_array_equal(waveform.numpy(), sf_reference(path))


def test_sources_are_equivalent() -> None:
    data = SPEECH.read_bytes()
    reference, sr = load(SPEECH)
    sources = [
        str(SPEECH),
        SPEECH,
        io.BytesIO(data),
        data,
        bytearray(data),
        memoryview(data),
        torch.frombuffer(bytearray(data), dtype=torch.uint8),
    ]
    for src in sources:
        waveform, rate = load(src)
        assert rate == sr and torch.equal(waveform, reference), type(src)
    with open(SPEECH, "rb") as f:
        assert torch.equal(load(f)[0], reference)


def test_frame_range_and_layout() -> None:
    full, _ = load(MULTI)
    assert full.shape == (4, 160000)
    part, _ = load(MULTI, frame_offset=1000, num_frames=500)
    assert torch.equal(part, full[:, 1000:1500])
    tail, _ = load(MULTI, frame_offset=159990)
    assert torch.equal(tail, full[:, -10:])
    assert load(MULTI, frame_offset=200000)[0].shape == (4, 0)
    assert load(MULTI, num_frames=0)[0].shape == (4, 0)
    last, _ = load(MULTI, channels_first=False)
    assert last.shape == (160000, 4) and torch.equal(last, full.T)
    with pytest.raises(ValueError, match="frame_offset"):
        load(MULTI, frame_offset=-1)
    with pytest.raises(ValueError, match="num_frames"):
        load(MULTI, num_frames=-2)


def test_long_flac_without_the_native_decoder_is_one_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the native library is not built, libsndfile reads a long FLAC in one pass."""
    monkeypatch.setattr(_ops, "NATIVE", False)
    opened = []
    real_open = _sndfile.open_file
    monkeypatch.setattr(_sndfile, "open_file", lambda *a: opened.append(a) or real_open(*a))
    reference = sf_reference(MULTI)  # 160000 frames: long enough for the native decoder
    np.testing.assert_array_equal(load(MULTI)[0].numpy(), reference)
    assert len(opened) == 1
    for offset in (1, 12345, 29999):
        np.testing.assert_array_equal(
            load(MULTI.read_bytes(), frame_offset=offset)[0].numpy(), reference[:, offset:]
        )
    last, _ = load(MULTI, channels_first=False, num_frames=140001)
    np.testing.assert_array_equal(last.numpy(), reference[:, :140001].T)


@pytest.mark.parametrize("path", sorted(BAD.iterdir()), ids=lambda p: p.name)
def test_bad_files_raise_decode_error_naming_the_file(path: Path) -> None:
    with pytest.raises(DecodeError, match=path.name):
        load(path)
    with pytest.raises(DecodeError, match=path.name):
        info(path)


def test_truncated_and_garbage_input(tmp_path: Path) -> None:
    wav = SPEECH.read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(wav[: len(wav) // 2])
    with pytest.raises(DecodeError, match=r"cut\.wav: truncated"):
        load(cut)
    with pytest.raises(DecodeError, match="truncated"):
        load(wav[:100])
    flac = (AUDIO / "sb-example2.flac").read_bytes()
    cut_flac = tmp_path / "cut.flac"
    cut_flac.write_bytes(flac[: len(flac) // 2])
    with pytest.raises(DecodeError, match=r"cut\.flac"):
        load(cut_flac)
    garbage = tmp_path / "noise.wav"
    garbage.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(UnsupportedFormatError, match=r"noise\.wav"):
        load(garbage)
    with pytest.raises(DecodeError, match="empty"):
        load(b"")
    with pytest.raises(FileNotFoundError, match=r"missing\.wav"):
        load(tmp_path / "missing.wav")
    with pytest.raises(TypeError, match="uint8"):
        load(torch.zeros(10))
    with pytest.raises(TypeError, match="path"):
        load(12345)  # type: ignore[arg-type]


def test_lying_header_is_refused_without_allocating_its_claim() -> None:
    flac = bytearray((AUDIO / "sb-example2.flac").read_bytes())
    assert flac[:4] == b"fLaC" and flac[4] == 0  # STREAMINFO first
    fields = int.from_bytes(flac[18:26], "big")  # rate, channels, bits, 36-bit total
    flac[18:26] = (fields | (1 << 36) - 1).to_bytes(8, "big")  # claims 2**36 - 1 frames
    assert sf.info(io.BytesIO(bytes(flac))).frames == 2**36 - 1
    # Reading it at face value would allocate 256 GiB (numpy raises MemoryError).
    with pytest.raises(DecodeError, match=r"<bytes>: (truncated|corrupt audio data)"):
        load(bytes(flac))
    assert info(bytes(flac)).num_frames == 2**36 - 1  # the header, as it is


def test_long_reads_in_blocks_equal_one_read(tmp_path: Path, monkeypatch) -> None:
    full, _ = load(MULTI)
    monkeypatch.setattr(_sndfile, "_BLOCK_FRAMES", 1000)
    assert torch.equal(load(MULTI)[0], full)
    assert torch.equal(load(MULTI, 500, 4321)[0], full[:, 500:4821])


# (format, subtype, absolute tolerance of the round trip against the float input)
LOSSLESS = [
    ("WAV", "PCM_16", 2**-15),
    ("WAV", "PCM_24", 2**-23),
    ("WAV", "PCM_32", 2**-31),
    ("WAV", "FLOAT", 0.0),
    ("WAV", "DOUBLE", 0.0),
    ("WAV", "PCM_U8", 2**-7),
    ("FLAC", "PCM_16", 2**-15),
    ("FLAC", "PCM_24", 2**-23),
    ("FLAC", "PCM_S8", 2**-7),
    ("AIFF", "PCM_16", 2**-15),
]


@pytest.mark.parametrize(("fmt", "subtype", "tol"), LOSSLESS, ids=lambda v: str(v))
def test_save_round_trip(tmp_path: Path, fmt: str, subtype: str, tol: float) -> None:
    source, sr = load(MULTI, num_frames=8000)  # real 4-channel speech
    path = tmp_path / f"x.{fmt.lower()}"
    save(path, source, sr, subtype=subtype)
    meta = sf.info(path)
    assert (meta.format, meta.subtype, meta.channels, meta.frames) == (fmt, subtype, 4, 8000)
    independent = sf_reference(path, "float64")
    back, rate = load(path)
    assert rate == sr
    np.testing.assert_array_equal(back.numpy(), sf_reference(path))  # decode matches soundfile
    # What was written is the input, quantised (half a step; 8-bit rounds one step).
    assert np.abs(independent - source.numpy()).max() <= tol
    if subtype.startswith("PCM"):
        raw, _ = load(path, normalize=False)
        assert not raw.is_floating_point()


def test_save_integer_input_is_written_as_is(tmp_path: Path) -> None:
    stored, sr = load(SPEECH, normalize=False)
    assert stored.dtype == torch.int16
    save(tmp_path / "a.wav", stored, sr)
    assert sf.info(tmp_path / "a.wav").subtype == "PCM_16"
    assert torch.equal(load(tmp_path / "a.wav", normalize=False)[0], stored)
    assert (tmp_path / "a.wav").read_bytes()[44:] == SPEECH.read_bytes()[44:]
    u8, sr8 = load(AUDIO / "sp-test-8000Hz-le-2ch-1byteu.wav", normalize=False)
    save(tmp_path / "u8.wav", u8, sr8)
    assert torch.equal(load(tmp_path / "u8.wav", normalize=False)[0], u8)


def test_save_companded_and_lossy(tmp_path: Path) -> None:
    source, sr = load(SPEECH)
    for subtype, min_snr in (("ULAW", 25.0), ("ALAW", 25.0)):  # 8-bit companding, quiet speech
        save(tmp_path / f"{subtype}.wav", source, sr, subtype=subtype)
        back = sf_reference(tmp_path / f"{subtype}.wav")
        noise = np.sum((back - source.numpy()) ** 2)
        assert 10 * np.log10(np.sum(source.numpy() ** 2) / noise) > min_snr
        assert info(tmp_path / f"{subtype}.wav").encoding == subtype
    save(tmp_path / "v.ogg", source, sr)  # Vorbis by default: lossy, so a loose tolerance
    assert info(tmp_path / "v.ogg") == AudioMetaData(sr, source.shape[-1], 1, 0, "VORBIS")
    back, _ = load(tmp_path / "v.ogg")
    np.testing.assert_array_equal(back.numpy(), sf_reference(tmp_path / "v.ogg"))
    snr = 10 * np.log10(np.sum(source.numpy() ** 2) / np.sum((back - source).numpy() ** 2))
    assert snr > 10.0


def test_save_formats_and_encodings(tmp_path: Path) -> None:
    x = torch.linspace(-1, 1, 200).reshape(2, 100)
    buf = io.BytesIO()
    save(buf, x, 16000, format="wav", encoding="PCM_S", bits_per_sample=24)
    assert info(buf.getvalue()) == AudioMetaData(16000, 100, 2, 24, "PCM_S")
    save(tmp_path / "f.wav", x, 16000)  # float32 defaults to FLOAT in WAV
    assert info(tmp_path / "f.wav").encoding == "PCM_F"
    save(tmp_path / "f.flac", x, 16000)  # FLAC cannot hold floats: its default, PCM_16
    assert info(tmp_path / "f.flac") == AudioMetaData(16000, 100, 2, 16, "FLAC")
    save(tmp_path / "mono.wav", torch.zeros(50), 8000)
    assert load(tmp_path / "mono.wav")[0].shape == (1, 50)
    save(tmp_path / "tc.wav", x.T, 8000, channels_first=False)
    assert torch.equal(load(tmp_path / "tc.wav")[0], x)
    save(tmp_path / "clip.wav", torch.tensor([[1.5, -3.0]]), 8000, subtype="PCM_16")
    assert load(tmp_path / "clip.wav", normalize=False)[0].tolist() == [[32767, -32768]]


def test_save_errors(tmp_path: Path) -> None:
    x = torch.zeros(1, 10)
    with pytest.raises(ValueError, match="extension"):
        save(tmp_path / "a.xyz", x, 8000)
    with pytest.raises(ValueError, match="format= is required"):
        save(io.BytesIO(), x, 8000)
    with pytest.raises(ValueError, match="cannot hold"):
        save(tmp_path / "a.flac", x, 8000, subtype="FLOAT")
    with pytest.raises(EncodeError, match="1-D or 2-D"):
        save(tmp_path / "a.wav", torch.zeros(1, 1, 10), 8000)
    with pytest.raises(ValueError, match="sample_rate"):
        save(tmp_path / "a.wav", x, 0)
    with pytest.raises(ValueError, match="either subtype or encoding"):
        save(tmp_path / "a.wav", x, 8000, subtype="PCM_16", encoding="PCM_S")
    with pytest.raises(TypeError, match="tensor"):
        save(tmp_path / "a.wav", np.zeros(10), 8000)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", [SPEECH, MULTI, AUDIO / "pg-house_lo.ogg"], ids=lambda p: p.name)
def test_stream_chunks_concatenate_to_load(path: Path) -> None:
    full, sr = load(path)
    with stream(path, 4096) as chunks:
        assert (chunks.sample_rate, chunks.num_channels, chunks.num_frames) == (
            sr,
            full.shape[0],
            full.shape[1],
        )
        parts = list(chunks)
    assert all(p.shape[-1] == 4096 for p in parts[:-1]) and 0 < parts[-1].shape[-1] <= 4096
    assert torch.equal(torch.cat(parts, -1), full)
    ranged = list(stream(path, 1000, frame_offset=123, num_frames=2500, normalize=False))
    assert [p.shape[-1] for p in ranged] == [1000, 1000, 500]
    assert torch.equal(torch.cat(ranged, -1), load(path, 123, 2500, normalize=False)[0])


def test_stream_errors_and_close() -> None:
    with pytest.raises(ValueError, match="frames_per_chunk"):
        stream(SPEECH, 0)
    with pytest.raises(DecodeError, match="incomplete-chunk"):
        stream(BAD / "sp-test-44100Hz-le-1ch-4bytes-incomplete-chunk.wav", 10)
    s = stream(SPEECH, 100)
    first = next(iter(s))
    assert first.shape == (1, 100)
    s.close()
    assert list(s) == []


def test_info_fields() -> None:
    cases = {
        "ds-LDC93S1.wav": AudioMetaData(16000, 46797, 1, 16, "PCM_S"),
        "pg-boom.wav": AudioMetaData(11025, 12432, 1, 8, "PCM_U"),
        "sp-test-8000Hz-le-3ch-5S-24bit.wav": AudioMetaData(8000, 5, 3, 24, "PCM_S"),
        "sp-test-44100Hz-2ch-32bit-float-le.wav": AudioMetaData(44100, 441, 2, 32, "PCM_F"),
        "sp-test-8000Hz-le-1ch-1byte-ulaw.wav": AudioMetaData(8000, 9, 1, 8, "ULAW"),
        "sb-multi-mic-speech.flac": AudioMetaData(16000, 160000, 4, 16, "FLAC"),
        "pg-house_lo.ogg": AudioMetaData(11025, 78331, 1, 0, "VORBIS"),
    }
    for name, expected in cases.items():
        assert info(AUDIO / name) == expected, name


def test_public_names() -> None:
    import trivium.audio as ta

    assert ta.load is aio.load and ta.save is aio.save and ta.info is aio.info


# --- Lossy files whose length libsndfile estimates (MP3, Ogg Vorbis / Opus) ---------------

needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")


def _ffmpeg_mp3(path: Path, *options: str) -> Path:
    """An 11 kHz mono MP3 made by ffmpeg's libmp3lame (a Xing/Info header unless told not to)."""
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
         "sine=frequency=440:sample_rate=11025:duration=7.27", "-ac", "1",
         "-c:a", "libmp3lame", *options, str(path)],
        check=True,
    )  # fmt: skip
    return path


def _soundfile_lossy(path: Path, fmt: str, subtype: str, rate: int) -> Path:
    noise = np.random.default_rng(0).uniform(-0.5, 0.5, (rate * 3, 1)).astype(np.float32)
    sf.write(path, noise, rate, format=fmt, subtype=subtype)
    return path


def _lossy_file(kind: str, tmp_path: Path) -> Path:
    if kind == "mp3-estimated-length":
        return _ffmpeg_mp3(tmp_path / "estimated.mp3", "-write_xing", "0")
    if kind == "mp3-xing":
        return _ffmpeg_mp3(tmp_path / "xing.mp3")
    if kind == "mp3-libsndfile":
        return _soundfile_lossy(tmp_path / "sndfile.mp3", "MP3", "MPEG_LAYER_III", 11025)
    if kind == "vorbis":
        return _soundfile_lossy(tmp_path / "vorbis.ogg", "OGG", "VORBIS", 11025)
    return _soundfile_lossy(tmp_path / "opus.opus", "OGG", "OPUS", 16000)


LOSSY = ["mp3-estimated-length", "mp3-xing", "mp3-libsndfile", "vorbis", "opus"]


@needs_ffmpeg
@pytest.mark.parametrize("kind", LOSSY)
def test_lossy_files_load_like_soundfile(kind: str, tmp_path: Path) -> None:
    # Ogg Opus goes to FFmpeg where PyAV is installed (see test_audio_ffmpeg.py).
    path = _lossy_file(kind, tmp_path)
    reference = sf_reference(path)
    assert reference.shape[1] > 10000
    for source in (path, path.read_bytes()):
        waveform, sample_rate = load(source, backend="soundfile")
        assert waveform.shape == reference.shape
        # mpg123 after sf.read's seek to 0 differs from a fresh decoder by an ulp or so.
        np.testing.assert_allclose(waveform.numpy(), reference, rtol=0, atol=1e-6)
        assert sample_rate == sf.info(path).samplerate
    # stream reads each file with the backend load picks (FFmpeg for Ogg Opus).
    chunks = torch.cat(list(stream(path, 4096)), -1)
    torch.testing.assert_close(chunks, load(path)[0], rtol=0, atol=1e-6)
    with sf.SoundFile(path) as f:  # a seek in a lossy stream decodes from an earlier frame
        f.seek(1000)
        ranged = f.read(2000, dtype="float32", always_2d=True).T
    np.testing.assert_allclose(
        load(path, 1000, 2000, backend="soundfile")[0].numpy(), ranged, rtol=0, atol=1e-6
    )


@needs_ffmpeg
def test_mp3_without_xing_header_is_an_estimate(tmp_path: Path) -> None:
    path = _ffmpeg_mp3(tmp_path / "estimated.mp3", "-write_xing", "0")
    # The header gives no frame count: libsndfile guesses from the file size and the
    # first frame's bitrate (here a little more than decodes); load returns what decodes.
    assert info(path).num_frames > load(path)[0].shape[-1] == sf_reference(path).shape[1]


@needs_ffmpeg
@pytest.mark.parametrize("kind", ["mp3-xing", "mp3-libsndfile"])
def test_truncated_mp3_with_a_frame_count_is_refused(kind: str, tmp_path: Path) -> None:
    data = _lossy_file(kind, tmp_path).read_bytes()
    cut = tmp_path / "cut.mp3"
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(DecodeError, match=r"cut\.mp3: truncated: expected \d+ frames"):
        load(cut)
    with pytest.raises(DecodeError, match=r"<bytes>: truncated"):
        load(cut.read_bytes())
    with pytest.raises(DecodeError, match=r"cut\.mp3: truncated"):
        list(stream(cut, 4096))


@needs_ffmpeg
@pytest.mark.parametrize("kind", ["mp3-estimated-length", "vorbis", "opus"])
def test_truncated_file_without_a_length_gives_what_decodes(kind: str, tmp_path: Path) -> None:
    # Ogg keeps no total (libsndfile takes the last page's position) and an MP3 without a
    # Xing/VBRI header only an estimate: a cut at a page or frame boundary looks like a
    # shorter file, so load returns the audio that is there, as soundfile.read does.
    path = _lossy_file(kind, tmp_path)
    data = path.read_bytes()
    cut = tmp_path / f"cut{path.suffix}"
    cut.write_bytes(data[: len(data) * 2 // 3])
    waveform, _ = load(cut, backend="soundfile")
    reference = sf_reference(cut)
    assert 0 < reference.shape[1] < sf_reference(path).shape[1]
    assert waveform.shape == reference.shape
    np.testing.assert_allclose(waveform.numpy(), reference, rtol=0, atol=1e-6)
    chunks = torch.cat(list(stream(cut, 4096)), -1)  # the backend load picks, as load
    torch.testing.assert_close(chunks, load(cut)[0], rtol=0, atol=1e-6)
    # Cut inside the headers, nothing decodes: refused, naming the file.
    stub = tmp_path / f"stub{path.suffix}"
    stub.write_bytes(data[:60])
    with pytest.raises(DecodeError, match=r"stub\."):
        load(stub)
