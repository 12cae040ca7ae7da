"""Plain WAV files read without libsndfile (trivium.audio.io._wav): the same tensors as
libsndfile's path for every sample type, layout, source and range; the parts path of
long files; odd and damaged headers left to libsndfile; and a hypothesis fuzz of the
header parser against soundfile."""

from __future__ import annotations

import contextlib
import io
import os
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trivium.audio.io import _buffers, _ffmpeg, _samples, _sources, _wav, info, load
from trivium.core.errors import DecodeError

AUDIO = Path(__file__).resolve().parents[1] / "assets" / "audio"
SUBTYPES = ["PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE"]
# The asset files the WAV path takes (the others are mu-law and IMA ADPCM).
PLAIN_ASSETS = [
    "ds-LDC93S1.wav",
    "pg-boom.wav",  # a LIST chunk after the data
    "sb-spk1_snt1.wav",
    "sp-test-44100Hz-2ch-32bit-float-le.wav",  # fmt of 18 bytes, a fact chunk
    "sp-test-8000Hz-le-2ch-1byteu.wav",
    "sp-test-8000Hz-le-3ch-5S-24bit.wav",  # odd data size and its pad byte
    "tc-sine_mono_s16.wav",  # a LIST chunk before the data
]


def wav_bytes(subtype: str, channels: int, frames: int, fmt: str = "WAV", seed: int = 0) -> bytes:
    """A WAV file of random samples, extremes included, written by libsndfile."""
    rng = np.random.default_rng(seed)
    data = rng.uniform(-1.0, 1.0, (frames, channels))
    data[:1], data[1:2] = 1.0, -1.0
    buf = io.BytesIO()
    sf.write(buf, data, 8000 + seed, subtype=subtype, format=fmt)
    return buf.getvalue()


def libsndfile_load(monkeypatch: pytest.MonkeyPatch, *args, **kwargs):
    """``load`` through libsndfile only."""
    with monkeypatch.context() as m:
        m.setattr(_wav, "decode", lambda *a: None)
        return load(*args, **kwargs)


def libsndfile_info(monkeypatch: pytest.MonkeyPatch, *args, **kwargs):
    with monkeypatch.context() as m:
        m.setattr(_wav, "probe", lambda *a: None)
        return info(*args, **kwargs)


def assert_same(ours: tuple[torch.Tensor, int], ref: tuple[torch.Tensor, int]) -> None:
    assert ours[1] == ref[1]
    assert ours[0].dtype == ref[0].dtype and ours[0].shape == ref[0].shape
    assert ours[0].is_contiguous()
    equal_nan = ours[0].is_floating_point()  # fuzzed bytes can make NaNs
    assert np.array_equal(ours[0].numpy(), ref[0].numpy(), equal_nan=equal_nan)


@pytest.mark.parametrize("fmt", ["WAV", "WAVEX"])
@pytest.mark.parametrize("subtype", SUBTYPES)
@pytest.mark.parametrize("channels", [1, 2, 3])
def test_same_tensors_as_libsndfile(
    fmt: str, subtype: str, channels: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every sample type and layout, from bytes and from a path (one read of the file)."""
    data = wav_bytes(subtype, channels, 301, fmt)
    path = tmp_path / "a.wav"
    path.write_bytes(data)
    assert _wav.file_layout(data) is not None  # taken by the WAV path
    for normalize in (True, False):
        for channels_first in (True, False):
            for offset, count in ((0, -1), (7, 100), (300, -1), (301, 5), (900, 3)):
                kwargs = {"normalize": normalize, "channels_first": channels_first}
                expected = libsndfile_load(monkeypatch, data, offset, count, **kwargs)
                assert_same(load(data, offset, count, **kwargs), expected)
                assert_same(load(path, offset, count, **kwargs), expected)
    assert info(data) == libsndfile_info(monkeypatch, data)


@pytest.mark.parametrize("name", PLAIN_ASSETS)
def test_asset_files_through_the_wav_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = AUDIO / name
    assert _wav.file_layout(path) is not None
    for normalize in (True, False):
        assert_same(
            load(path, normalize=normalize), libsndfile_load(monkeypatch, path, normalize=normalize)
        )
    assert info(path) == libsndfile_info(monkeypatch, path)
    reference, rate = sf.read(path, dtype="float32", always_2d=True)
    waveform, sample_rate = load(path)
    assert sample_rate == rate and np.array_equal(waveform.numpy(), reference.T)


def test_every_source_gives_the_same(tmp_path: Path) -> None:
    data = wav_bytes("PCM_16", 2, 1000)
    path = tmp_path / "a.wav"
    path.write_bytes(data)
    expected = load(path)[0]
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    sources = [str(path), data, bytearray(data), memoryview(data), tensor, io.BytesIO(data)]
    for source in sources:
        assert torch.equal(load(source)[0], expected)
    # A view of the caller's buffer is never returned: changing it changes nothing.
    owned = bytearray(data)
    mono = load(owned, normalize=False, channels_first=False)[0]
    before = mono.clone()
    owned[44:] = bytes(len(owned) - 44)
    assert torch.equal(mono, before)


@pytest.mark.parametrize("subtype", SUBTYPES)
@pytest.mark.parametrize("channels", [1, 2, 3])
def test_long_files_read_in_parts_equal_one_read(
    subtype: str, channels: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every sample type and layout, whole and in a range, as libsndfile and one read give it
    (the parts path reads a stereo 16-bit part into the output's right channel)."""
    path = tmp_path / "long.wav"
    path.write_bytes(wav_bytes(subtype, channels, 5000, "WAVEX"))
    cases = [
        (o, n, z, c)
        for o, n in ((0, -1), (123, 4000))
        for z in (True, False)  # normalize
        for c in (True, False)  # channels_first
    ]
    whole = [load(path, o, n, normalize=z, channels_first=c) for o, n, z, c in cases]
    for (o, n, z, c), ours in zip(cases, whole, strict=True):
        assert_same(ours, libsndfile_load(monkeypatch, path, o, n, normalize=z, channels_first=c))
    monkeypatch.setattr(_wav, "_WHOLE_BYTES", 1000)
    monkeypatch.setattr(_wav, "_HEAD_BYTES", 200)
    monkeypatch.setattr(_wav, "_PART_BYTES", 999)  # not a whole number of frames
    monkeypatch.setattr(_samples, "_FILL_SAMPLES", 64)
    monkeypatch.setattr(_wav, "get_num_threads", lambda: 3)  # a read as stored in 3 pieces
    calls = []
    original = _wav._in_parts
    monkeypatch.setattr(_wav, "_in_parts", lambda *a: calls.append(1) or original(*a))
    for (o, n, z, c), expected in zip(cases, whole, strict=True):
        assert_same(load(path, o, n, normalize=z, channels_first=c), expected)
    assert len(calls) == len(cases)
    assert info(path).num_frames == 5000


def with_chunk_before_data(data: bytes, chunk: bytes) -> bytes:
    """``data`` (a canonical 44-byte-header WAV) with ``chunk`` between ``fmt`` and ``data``."""
    out = bytearray(data[:36] + chunk + data[36:])
    out[4:8] = struct.pack("<I", len(out) - 8)
    return bytes(out)


@pytest.mark.parametrize("junk", [0, 2])  # samples at a 4-byte boundary, and 2 bytes off it
@pytest.mark.parametrize("whole", [True, False])  # one read, or the parts path of long files
def test_stereo_16_bit_float_is_scipy_over_32768(
    junk: int, whole: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interleaved 16-bit stereo converts to [channels, time] float32 (and splits into int16
    rows) with integer operations on whole frames: every sample must equal scipy's int16
    (/ 32768), in every block and range."""
    scipy_wavfile = pytest.importorskip("scipy.io.wavfile")
    data = with_chunk_before_data(
        wav_bytes("PCM_16", 2, 1001), b"JUNK" + struct.pack("<I", junk) + bytes(junk)
    )
    assert _wav.file_layout(data).data_offset % 4 == (2 if junk else 0)
    path = tmp_path / "stereo.wav"
    path.write_bytes(data)
    stored = scipy_wavfile.read(path)[1]
    assert stored.dtype == np.int16 and stored.shape == (1001, 2)
    stored[5:7] = ((-32768, 32767), (0, -1))  # the extremes, zero and -1 in both channels
    stored[7:9] = ((32767, -32768), (-1, 0))
    data = data[: len(data) - stored.nbytes] + stored.tobytes()
    path.write_bytes(data)
    expected = (stored.astype(np.float32) / np.float32(32768)).T
    monkeypatch.setattr(_samples, "_STEREO_FRAMES", 64)  # many blocks, the last one short
    parts = []
    if not whole:
        monkeypatch.setattr(_wav, "_WHOLE_BYTES", 1000)
        monkeypatch.setattr(_wav, "_HEAD_BYTES", 200)
        monkeypatch.setattr(_wav, "_PART_BYTES", 998)
        original = _wav._in_parts
        monkeypatch.setattr(_wav, "_in_parts", lambda *a: parts.append(1) or original(*a))
    for source in (path, data):
        for offset, count in ((0, -1), (3, 500), (1000, -1), (1001, -1)):
            waveform = load(source, offset, count)[0]
            assert waveform.is_contiguous()
            end = None if count == -1 else offset + count
            assert np.array_equal(waveform.numpy(), expected[:, offset:end])
            as_stored = load(source, offset, count, normalize=False)[0]  # split, not scaled
            assert np.array_equal(as_stored.numpy(), stored.T[:, offset:end])
    assert len(parts) == (0 if whole else 8)  # the path read in parts, not libsndfile


def test_long_file_with_trailing_chunks_and_truncation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = bytearray(wav_bytes("PCM_16", 1, 3000))
    trailer = b"LIST" + struct.pack("<I", 9) + b"INFOabcde\x00"
    data += trailer
    data[4:8] = struct.pack("<I", len(data) - 8)
    path = tmp_path / "t.wav"
    path.write_bytes(bytes(data))
    expected = libsndfile_load(monkeypatch, path)
    monkeypatch.setattr(_wav, "_WHOLE_BYTES", 1000)
    assert_same(load(path), expected)
    cut = tmp_path / "cut.wav"
    cut.write_bytes(bytes(data[:3000]))
    with pytest.raises(DecodeError, match=r"cut\.wav: truncated"):
        load(cut)


@pytest.mark.parametrize("junk", [0, 150, 600])  # header in the first read, the second, neither
def test_long_file_header_found_past_the_first_read(
    junk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long file's header is looked for in a short head, then a longer one: a JUNK chunk
    pushing the data chunk past the short head costs a second read, past the longer one
    the file goes to libsndfile; the samples are the same every way."""
    data = wav_bytes("PCM_16", 2, 3000)
    if junk:
        data = with_chunk_before_data(data, b"JUNK" + struct.pack("<I", junk) + bytes(junk))
    path = tmp_path / "junk.wav"
    path.write_bytes(data)
    expected = libsndfile_load(monkeypatch, path, normalize=False)
    monkeypatch.setattr(_wav, "_WHOLE_BYTES", 1000)
    monkeypatch.setattr(_wav, "_HEAD_BYTES", 100)
    monkeypatch.setattr(_wav, "_LONG_HEAD_BYTES", 400)
    heads: list[int] = []
    original = _wav._read_into
    monkeypatch.setattr(_wav, "_read_into", lambda *a: _record(heads, original, *a))
    parts = []
    in_parts = _wav._in_parts
    monkeypatch.setattr(_wav, "_in_parts", lambda *a: parts.append(1) or in_parts(*a))
    assert_same(load(path, normalize=False), expected)
    assert heads == {0: [100], 150: [100, 400], 600: [100, 400]}[junk]
    assert len(parts) == (0 if junk == 600 else 1)  # 600: read by libsndfile


def _record(heads: list[int], read, fd: int, out: np.ndarray, at: int) -> bool:
    """``read(fd, out, at)``, noting the size of each read from the file's start."""
    if at == 0:
        heads.append(out.size)
    return read(fd, out, at)


def test_odd_files_are_left_to_libsndfile(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = wav_bytes("PCM_16", 1, 100)
    assert _wav.parse(memoryview(plain), len(plain)) is not None
    odd = {
        "riff size": plain[:4] + struct.pack("<I", 0) + plain[8:],
        "rifx": b"RIFX" + plain[4:],
        "mu-law": wav_bytes("ULAW", 1, 100),
        "ima adpcm": wav_bytes("IMA_ADPCM", 1, 100),
        "rf64": wav_bytes("PCM_16", 1, 100, "RF64"),
        "cut": plain[:120],
        "trailing garbage": plain + b"\x00\x01",
    }
    for name, data in odd.items():
        assert _wav.file_layout(data) is None, name
        try:
            expected = libsndfile_load(monkeypatch, data)
        except DecodeError as e:  # "rifx": libsndfile refuses its little-endian fmt
            with pytest.raises(type(e), match=str(e).split(": ", 1)[1]):
                load(data)
        else:
            assert_same(load(data), expected)
    with pytest.raises(DecodeError, match="truncated"):
        load(odd["cut"])


# ---------------------------------------------------------------------------- long files


def small_parts(monkeypatch: pytest.MonkeyPatch, part_bytes: int, threads: int) -> None:
    """Make files over 1000 bytes take the parts path, in parts of ``part_bytes``."""
    monkeypatch.setattr(_wav, "_WHOLE_BYTES", 1000)
    monkeypatch.setattr(_wav, "_HEAD_BYTES", 200)
    monkeypatch.setattr(_wav, "_PART_BYTES", part_bytes)
    monkeypatch.setattr(_samples, "_STEREO_FRAMES", 64)
    monkeypatch.setattr(_wav, "get_num_threads", lambda: threads)
    # Buffers of at least one part are reused, as the outputs of long files are.
    outputs = _buffers.BufferCache(keep=2, min_bytes=part_bytes, max_bytes=1 << 20)
    monkeypatch.setattr(_wav, "_OUTPUTS", outputs)


@pytest.mark.parametrize("channels", [1, 2, 3])
@pytest.mark.parametrize("threads", [1, 3])
def test_long_16_bit_files_equal_scipy(
    channels: int, threads: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parts path against scipy.io.wavfile: int16 as stored and float32 / 32768, both
    layouts, lengths around the part and piece boundaries (odd ones included), each load
    into memory a previous load's output left (its values all overwritten)."""
    scipy_wavfile = pytest.importorskip("scipy.io.wavfile")
    small_parts(monkeypatch, 300 * channels * 2, threads)  # parts of 300 frames
    parts = []
    in_parts = _wav._in_parts
    monkeypatch.setattr(_wav, "_in_parts", lambda *a: parts.append(1) or in_parts(*a))
    lengths = (599, 600, 601, 1201, 3001)  # as stored: one read up to 2 parts, then pieces
    for frames in lengths:
        path = tmp_path / f"{frames}.wav"
        path.write_bytes(wav_bytes("PCM_16", channels, frames, seed=frames))
        stored = scipy_wavfile.read(path)[1].reshape(frames, channels)
        scaled = stored.astype(np.float32) / np.float32(32768)
        for _ in range(2):
            as_stored = load(path, normalize=False, channels_first=False)[0]
            assert as_stored.dtype == torch.int16 and np.array_equal(as_stored.numpy(), stored)
            assert np.array_equal(load(path, normalize=False)[0].numpy(), stored.T)
            assert np.array_equal(load(path, channels_first=False)[0].numpy(), scaled)
            assert np.array_equal(load(path)[0].numpy(), scaled.T)
    assert len(parts) == len(lengths) * 2 * 4


def test_long_file_outputs_never_share_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An output's memory serves a later load only once the output and every tensor or
    array made from it are gone; the values a caller holds never change."""
    small_parts(monkeypatch, 400, 1)
    paths = []
    for seed, frames in enumerate((3000, 2000)):
        paths.append(tmp_path / f"{seed}.wav")
        paths[-1].write_bytes(wav_bytes("PCM_16", 2, frames, seed=seed))
    first = load(paths[0], normalize=False)[0]
    address = first.data_ptr()
    del first
    first = load(paths[0], normalize=False)[0]
    assert first.data_ptr() == address  # a dead output's memory is reused
    expected = first.clone()
    views = [first[1], first.numpy()[:, 5:], first[:, :10].view(torch.uint8)]
    del first
    held = [load(paths[1], normalize=False)[0] for _ in range(3)]
    assert address not in {t.data_ptr() for t in held}  # the views hold it
    assert torch.equal(views[0], expected[1]) and np.array_equal(views[1], expected.numpy()[:, 5:])
    freed = {address} | {t.data_ptr() for t in held}
    del views, held
    again = load(paths[1], normalize=False)[0]
    assert again.data_ptr() in freed
    assert torch.equal(again, libsndfile_load(monkeypatch, paths[1], normalize=False)[0])


def load_each(paths: list[str]) -> list[torch.Tensor]:
    """A DataLoader ``collate_fn``: the waveforms of a batch of WAV paths (int16 and float)."""
    return [t for p in paths for t in (load(p, normalize=False)[0], load(p)[0])]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_long_files_in_dataloader_workers_over_epochs(tmp_path: Path, context: str) -> None:
    """Long files (read in parts into reused output memory) loaded in worker processes,
    whose outputs move to shared memory on the way back, over two epochs: every waveform
    equals scipy's, however the workers' buffers are handed on."""
    scipy_wavfile = pytest.importorskip("scipy.io.wavfile")
    frames = (1_100_000, 1_150_000, 1_200_000)  # stereo 16-bit: over 4 MiB each
    paths = []
    for seed, n in enumerate(frames):
        paths.append(str(tmp_path / f"{seed}.wav"))
        Path(paths[-1]).write_bytes(wav_bytes("PCM_16", 2, n, seed=seed))
    assert os.path.getsize(paths[0]) > _wav._WHOLE_BYTES  # the parts path
    expected = {p: scipy_wavfile.read(p)[1].T for p in paths}
    loader = torch.utils.data.DataLoader(
        paths, batch_size=1, num_workers=2, collate_fn=load_each, multiprocessing_context=context
    )
    for _ in range(2):
        got = list(loader)
        assert len(got) == len(paths)
        for path, (stored, scaled) in zip(paths, got, strict=True):
            assert np.array_equal(stored.numpy(), expected[path])
            assert np.array_equal(scaled.numpy(), expected[path].astype(np.float32) / 32768)


def test_buffer_cache_keeps_few_buffers_of_fitting_sizes() -> None:
    cache = _buffers.BufferCache(keep=2, min_bytes=1000, max_bytes=4000)
    assert cache.empty((10,), np.int16).base is None  # under min_bytes: a plain array
    assert cache.empty((4001,), np.uint8).base is None and not cache._free  # over max_bytes
    small, middle, large = (cache.empty((n,), np.uint8) for n in (1000, 1500, 3000))
    addresses = [small.ctypes.data, middle.ctypes.data, large.ctypes.data]
    del small, middle, large  # given back in this order: the oldest (small) is dropped
    assert [b.ctypes.data for b in cache._free] == addresses[1:]
    # 2000 bytes fit the 3000 buffer only (1500 is too small), 1000 the 1500 one (at most 2x)
    kept = [cache.empty((2000,), np.uint8), cache.empty((1000,), np.uint8)]
    assert [a.ctypes.data for a in kept] == [addresses[2], addresses[1]]
    assert kept[0].shape == (2000,) and not cache._free
    cache._lock.acquire()  # a finalizer running while the cache is busy drops its buffer
    del kept
    cache._lock.release()
    assert not cache._free


def test_a_forked_child_starts_with_no_buffers(tmp_path: Path) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    cache = _buffers.BufferCache(keep=2, min_bytes=0, max_bytes=1000)
    cache.empty((100,), np.uint8)  # dies at once: one kept buffer
    assert len(cache._free) == 1
    pid = os.fork()
    if pid == 0:  # the child reports through its exit status
        os._exit(0 if not cache._free and cache._lock.acquire(blocking=False) else 1)
    assert os.waitpid(pid, 0)[1] == 0
    assert len(cache._free) == 1


# ---------------------------------------------------------------------------- fuzzing


@st.composite
def mutated_wavs(draw: st.DrawFn) -> bytes:
    """A valid WAV (random type, layout, length), then chunks added, fields and bytes changed."""
    subtype = draw(st.sampled_from(SUBTYPES))
    fmt = draw(st.sampled_from(["WAV", "WAVEX"]))
    data = bytearray(wav_bytes(subtype, draw(st.integers(1, 3)), draw(st.integers(0, 40)), fmt))
    for _ in range(draw(st.integers(0, 2))):  # extra chunks, odd sizes included
        size = draw(st.sampled_from([0, 1, 3, 4, 5, 8, 9, 16, 24, 32]))
        chunk_id = draw(
            st.sampled_from([b"LIST", b"JUNK", b"fact", b"PEAK", b"cue ", b"data", b"fmt "])
        )
        chunk = chunk_id + struct.pack("<I", size) + bytes(size + (size & 1))
        at = draw(st.sampled_from([12, len(data)]))
        data[at:at] = chunk
        data[4:8] = struct.pack("<I", len(data) - 8)
    for _ in range(draw(st.sampled_from([0, 0, 1, 2, 3]))):  # header fields and bytes
        at = draw(st.integers(0, min(len(data), 90) - 1))
        kind = draw(st.sampled_from(["byte", "u16", "u32"]))
        if kind == "byte":
            data[at] = draw(st.integers(0, 255))
        elif at + 4 <= len(data):
            value = draw(st.sampled_from([0, 1, 2, 3, 8, 16, 24, 32, 64, 0xFFFE, 0xFFFFFFFF]))
            if kind == "u16":
                data[at : at + 2] = struct.pack("<H", value & 0xFFFF)
            else:
                data[at : at + 4] = struct.pack("<I", value)
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=mutated_wavs(), normalize=st.booleans(), channels_first=st.booleans())
def test_fuzz_wav_path_agrees_with_soundfile(
    data: bytes, normalize: bool, channels_first: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the WAV path takes, libsndfile reads to the same tensor and header."""
    if not data:
        return
    fast = _wav.decode(data, 0, -1, normalize, channels_first)
    if fast is None:
        assert _wav.file_layout(data) is None
        return
    assert_same(
        fast, libsndfile_load(monkeypatch, data, normalize=normalize, channels_first=channels_first)
    )
    assert info(data) == libsndfile_info(monkeypatch, data)
    stored = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)[0]
    assert np.array_equal(load(data, channels_first=False)[0].numpy(), stored, equal_nan=True)


def test_looking_for_ffmpeg_formats_leaves_a_fifo_closed(tmp_path: Path) -> None:
    """The format sniff does not open a named pipe: that would let its writer start
    writing to a reader that then drops the bytes (libsndfile's open waits anew)."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    data = wav_bytes("PCM_16", 1, 500)
    writer_opened = threading.Event()

    def write() -> None:
        with open(fifo, "wb") as f:  # returns once a reader opens the pipe
            writer_opened.set()
            f.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert _sources.head(fifo, _ffmpeg.HEAD_BYTES) == b""
    assert not writer_opened.wait(0.5)  # the pipe was not opened for reading
    waveform, rate = load(fifo, normalize=False)
    writer.join(timeout=20)
    assert rate == 8000 and torch.equal(waveform, load(data, normalize=False)[0])


def test_a_fifo_is_left_to_libsndfile(tmp_path: Path) -> None:
    """A named pipe is not opened to be looked at: its writer must meet libsndfile's open."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    data = wav_bytes("PCM_16", 1, 500)
    assert _wav.file_layout(fifo) is None  # at once: no writer needed
    result: dict[str, object] = {}

    def read() -> None:
        try:
            result["loaded"] = load(fifo, normalize=False)
        except Exception as e:  # reported by the assertion below
            result["error"] = e

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        with open(fifo, "wb") as f:  # waits for the reader's one open
            f.write(data)
    finally:
        reader.join(timeout=20)
        if reader.is_alive():  # a reader left waiting for a writer: let it fail
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            reader.join(timeout=20)
    assert "loaded" in result, result
    waveform, rate = result["loaded"]
    assert rate == 8000 and torch.equal(waveform, load(data, normalize=False)[0])
