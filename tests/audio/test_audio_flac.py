"""A long FLAC (decoded in parts by the native library) against soundfile's sequential read."""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import av
import numpy as np
import pytest
import soundfile as sf
import torch
from audio.native_fuzz import Flac, Frame, check, encode_long, load_seeds, mutate, variable_blocks

from trivium.audio import _ops
from trivium.audio.io import _flac, load
from trivium.core import threads
from trivium.core.errors import DecodeError

pytestmark = pytest.mark.skipif(not _ops.NATIVE, reason="the native library is not built")
FUZZ_CASES = 200

# (channels, subtype, frames): odd lengths, so the last frame is short.
FILES = [
    (1, "PCM_16", 300_001),
    (2, "PCM_16", 400_003),
    (3, "PCM_24", 250_007),
    (2, "PCM_S8", 200_011),
]


@pytest.fixture
def num_threads() -> Iterator[None]:
    before = threads._num_threads
    yield
    threads._num_threads = before


def signal(channels: int, frames: int, seed: int = 0) -> np.ndarray:
    """``[time, channels]``: tones with noise, a silent stretch and a loud noisy one, so that
    the encoder uses LPC, constant and verbatim or escaped subframes."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / 48000
    tones = np.stack([0.3 * np.sin(2 * np.pi * (220 + 110 * c) * t) for c in range(channels)], 1)
    data = tones + 0.01 * rng.standard_normal((frames, channels))
    data[frames // 5 : frames // 5 + 20000] = 0
    data[frames // 2 : frames // 2 + 9000] = rng.uniform(-1, 1, (9000, channels))
    return np.clip(data, -1, 1)


def write(path: Path, channels: int, subtype: str, frames: int) -> np.ndarray:
    """Write a FLAC with soundfile; its sequential float32 read as ``[channels, time]``."""
    sf.write(path, signal(channels, frames), 48000, subtype=subtype, format="FLAC")
    return sf.read(path, dtype="float32", always_2d=True)[0].T


@pytest.mark.parametrize(("channels", "subtype", "frames"), FILES)
@pytest.mark.parametrize("count", [1, 2, 3])
def test_parts_equal_one_sequential_read(
    tmp_path: Path, channels: int, subtype: str, frames: int, count: int, num_threads: None
) -> None:
    path = tmp_path / "long.flac"
    reference = write(path, channels, subtype, frames)
    threads.set_num_threads(count)
    ranges = [(0, frames), (1, frames - 1), (4097, 150_001), (frames - 131_075, 131_075)]
    for offset, length in ranges:
        for first in (True, False):
            got = _flac.decode(path, offset, length, channels, first)
            assert got is not None, "the native path should decode a valid FLAC"
            expected = reference[:, offset : offset + length]
            np.testing.assert_array_equal(got.numpy(), expected if first else expected.T)
            waveform, rate = load(
                path, frame_offset=offset, num_frames=length, channels_first=first
            )
            assert rate == 48000 and waveform.is_contiguous()
            np.testing.assert_array_equal(waveform.numpy(), expected if first else expected.T)
    np.testing.assert_array_equal(load(path.read_bytes())[0].numpy(), reference)


def test_ffmpeg_encoded_flac_with_long_predictors(tmp_path: Path, num_threads: None) -> None:
    """FFmpeg's encoder at its highest level (LPC up to order 32, 15-bit coefficients)."""
    path = tmp_path / "ffmpeg.flac"
    samples = (signal(2, 300_000, seed=1) * 32767).astype(np.int16)
    with av.open(str(path), "w", format="flac") as out:
        stream = out.add_stream("flac", rate=48000, layout="stereo")
        stream.codec_context.options = {"compression_level": "12"}
        for start in range(0, len(samples), 4096):
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(samples[start : start + 4096].reshape(1, -1)),
                format="s16",
                layout="stereo",
            )
            frame.sample_rate = 48000
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    reference = sf.read(path, dtype="float32")[0].T
    assert reference.shape == (2, 300_000)
    threads.set_num_threads(2)
    got = _flac.decode(path, 0, 300_000, 2, True)
    assert got is not None
    np.testing.assert_array_equal(got.numpy(), reference)
    np.testing.assert_array_equal(load(path)[0].numpy(), reference)


def test_corrupt_and_truncated_long_flac(tmp_path: Path, num_threads: None) -> None:
    path = tmp_path / "long.flac"
    write(path, 2, "PCM_16", 400_003)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x55  # a CRC-16 mismatch in one frame
    bad = tmp_path / "bad.flac"
    bad.write_bytes(data)
    threads.set_num_threads(2)
    with pytest.raises(_flac.DamagedFrames):
        _flac.decode(bad, 0, 400_003, 2, True)
    with pytest.raises(DecodeError, match=r"bad\.flac: corrupt audio data"):
        load(bad)
    with pytest.raises(sf.LibsndfileError):  # what libsndfile itself says of it
        sf.read(io.BytesIO(bytes(data)), dtype="float32")
    cut = tmp_path / "cut.flac"
    cut.write_bytes(path.read_bytes()[: len(data) * 3 // 4])
    with pytest.raises(_flac.DamagedFrames):
        _flac.decode(cut, 0, 400_003, 2, True)
    with pytest.raises(DecodeError, match=r"cut\.flac: (truncated|corrupt audio data)"):
        load(cut)
    threads.set_num_threads(1)
    with pytest.raises(DecodeError, match=r"cut\.flac: (truncated|corrupt audio data)"):
        load(cut)


def test_sources_other_than_plain_flac_are_left_to_libsndfile(tmp_path: Path) -> None:
    path = tmp_path / "long.flac"
    reference = write(path, 1, "PCM_16", 300_001)
    assert _flac.decode(io.BytesIO(path.read_bytes()), 0, 300_001, 1, True) is None
    assert _flac.decode(b"ID3" + path.read_bytes(), 0, 300_001, 1, True) is None
    assert _flac.decode(path, 0, 300_001, 2, True) is None  # not the channels libsndfile saw
    assert _flac.decode(path, 1, 300_001, 1, True) is None  # past the stream's end
    np.testing.assert_array_equal(load(io.BytesIO(path.read_bytes()))[0].numpy(), reference)


def test_decoder_refuses_what_is_not_a_frame() -> None:
    data = torch.zeros(100, dtype=torch.uint8)
    assert torch.ops.trivium_audio.flac_frame_at(data, 0, 16, 4096).tolist() == [-1, -1]
    out = torch.empty(1, 10)
    result = torch.ops.trivium_audio.flac_decode_frames(data, 0, 100, 16, 4096, 0, out)
    assert result.tolist()[0] == -1
    with pytest.raises(RuntimeError, match="begin"):
        torch.ops.trivium_audio.flac_decode_frames(data, -1, 100, 16, 4096, 0, out)
    with pytest.raises(RuntimeError, match="begin"):
        torch.ops.trivium_audio.flac_decode_frames(data, 0, 101, 16, 4096, 0, out)


def test_silence_in_frames_of_a_few_bytes(tmp_path: Path) -> None:
    """Constant subframes: the last frames end within a header's length of the file's end."""
    path = tmp_path / "silence.flac"
    sf.write(path, np.zeros((300_000, 2)), 16000, subtype="PCM_16", format="FLAC")
    got = _flac.decode(path, 5, 299_995, 2, False)
    assert got is not None
    np.testing.assert_array_equal(got.numpy(), np.zeros((299_995, 2), np.float32))


def test_damaged_frames_are_reported_never_decoded_wrong(tmp_path: Path) -> None:
    """Bytes flipped anywhere after the first frame header: the decode stops at the damaged
    frame (its CRC), and every frame it did decode holds soundfile's samples."""
    path = tmp_path / "short.flac"
    reference = write(path, 2, "PCM_16", 40_000)
    clean = np.frombuffer(path.read_bytes(), np.uint8)
    first = _flac._stream_info(torch.from_numpy(clean.copy())).first_byte
    rng = np.random.default_rng(0)
    for _ in range(100):
        data = clean.copy()
        at = rng.integers(first + 1, len(data), size=rng.integers(1, 4))
        data[at] ^= rng.integers(1, 256, size=len(at)).astype(np.uint8)
        cut = rng.integers(len(data) // 2, len(data) + 1)
        out = torch.full((2, 40_000), 9.0)
        stop, start, end = torch.ops.trivium_audio.flac_decode_frames(
            torch.from_numpy(data[:cut]), first, cut, 16, 4096, 0, out
        ).tolist()
        assert stop == -1 or (cut == len(data) and (data == clean).all())
        assert start in (-1, 0) and end <= 40_000
        if end > 0:
            np.testing.assert_array_equal(out[:, :end].numpy(), reference[:, :end])


def test_mutated_files_decode_as_soundfile_or_are_refused(tmp_path: Path) -> None:
    """The fuzz of tests/audio/native_fuzz.py, short: frame and subframe header fields at
    extremes with their CRCs made right, frames spliced from other files, dropped or
    repeated, STREAMINFO changed, bytes damaged. The operators, ``_flac.decode`` and
    ``load`` give soundfile's samples, decline, or raise a DecodeError naming the file."""
    seeds, rng = load_seeds(), random.Random(0)
    outcomes = [check(mutate(seeds, rng), rng, tmp_path / "fuzz.flac") for _ in range(FUZZ_CASES)]
    assert sum(samples > 0 for samples, _, _ in outcomes) > FUZZ_CASES // 2
    assert sum(native for _, native, _ in outcomes) > FUZZ_CASES // 10
    assert {outcome for _, _, outcome in outcomes} == {"ok", "error"}


def _bits(*fields: tuple[int, int]) -> str:
    return "".join(format(value & ((1 << width) - 1), f"0{width}b") for value, width in fields)


def _frame_with(frame: Frame, assignment: int, subframes: str, padding: str = "") -> Frame:
    """``frame``'s header with ``assignment`` and a body of ``subframes`` (a bit string),
    padded to a byte with ``padding`` (zeros by default)."""
    bits = subframes + (padding or "0" * (-len(subframes) % 8))
    body = int(bits, 2).to_bytes(len(bits) // 8, "big")
    return replace(frame, assignment=assignment, body=body)


def _with_frame(flac: Flac, k: int, frame: Frame) -> bytes:
    return Flac(flac.head, (*flac.frames[:k], frame, *flac.frames[k + 1 :])).encode()


def _refused_from(tmp_path: Path, data: bytes, frame: int) -> None:
    """libFLAC and the native decoder both refuse ``data`` at its frame ``frame``."""
    path = tmp_path / "refused.flac"
    path.write_bytes(data)
    with pytest.raises(sf.LibsndfileError):
        sf.read(path, dtype="float32")
    tensor = torch.from_numpy(np.frombuffer(data, np.uint8).copy())
    stream = _flac._stream_info(tensor)
    out = torch.zeros(stream.channels, stream.total)
    stop, _, end = torch.ops.trivium_audio.flac_decode_frames(
        tensor, stream.first_byte, len(data), stream.bits, stream.fixed_block, 0, out
    ).tolist()
    assert (stop, end) == (-1, frame * stream.fixed_block)
    with pytest.raises(_flac.DamagedFrames):
        _flac.decode(path, 0, stream.total, stream.channels, True)
    with pytest.raises(DecodeError, match=r"refused\.flac: "):
        load(path)


def test_samples_outside_the_bit_depth_are_refused(tmp_path: Path) -> None:
    """A frame whose samples leave the stream's bit depth (a fixed predictor running past
    it; left and side each in range, the right channel they give not) passes its CRCs,
    and libFLAC refuses it: so does the native decoder, so load reads no other samples."""
    mono = Flac.parse(encode_long(1, "PCM_16", 140_000, 0.0))
    n = mono.frames[5].blocksize
    # Fixed order 1, warm-up 32767, escaped residuals of 8 raw bits, each 100.
    fixed = _bits((0, 1), (9, 6), (0, 1), (32767, 16), (0, 2), (0, 4), (15, 4), (8, 5))
    fixed += _bits((100, 8)) * (n - 1)
    _refused_from(tmp_path, _with_frame(mono, 5, _frame_with(mono.frames[5], 0, fixed)), 5)
    stereo = Flac.parse(encode_long(2, "PCM_16", 140_000, 0.0))
    left, side = _bits((0, 8), (32767, 16)), _bits((0, 8), (-32768, 17))
    damaged = _with_frame(stereo, 7, _frame_with(stereo.frames[7], 8, left + side))
    _refused_from(tmp_path, damaged, 7)
    fine = _with_frame(stereo, 7, _frame_with(stereo.frames[7], 8, left + _bits((0, 8), (1, 17))))
    got = _flac.decode(fine, 0, 140_000, 2, True)
    assert got is not None  # right = 32766
    np.testing.assert_array_equal(got.numpy(), sf.read(io.BytesIO(fine), dtype="float32")[0].T)


def test_padding_that_is_not_zero_is_refused(tmp_path: Path) -> None:
    """The bits after the last subframe up to the byte are zeros; a frame with ones there
    passes its CRCs, and libFLAC refuses it: so does the native decoder."""
    stereo = Flac.parse(encode_long(2, "PCM_16", 140_000, 0.0))
    left, side = _bits((0, 8), (1000, 16)), _bits((0, 8), (-3, 17))  # 49 bits: 7 padding
    zeros = _with_frame(stereo, 3, _frame_with(stereo.frames[3], 8, left + side))
    got = _flac.decode(zeros, 0, 140_000, 2, True)
    want = sf.read(io.BytesIO(zeros), dtype="float32")[0].T
    at = 3 * stereo.frames[3].blocksize + 5
    assert got is not None and (want[:, at] == [1000 / 32768, 1003 / 32768]).all()
    np.testing.assert_array_equal(got.numpy(), want)
    ones = _with_frame(stereo, 3, _frame_with(stereo.frames[3], 8, left + side, "0000001"))
    _refused_from(tmp_path, ones, 3)


def test_damaged_frames_are_read_sequentially(tmp_path: Path, num_threads: None) -> None:
    """A frame numbered out of sequence (its CRCs right): the native decoder declines, and
    load reads the file as soundfile does, in one sequential read (libsndfile's seeks
    into such a stream land elsewhere)."""
    flac = variable_blocks(Flac.parse(encode_long(1, "PCM_16", 140_001, 0.0)))
    frames = list(flac.frames)
    frames[56] = replace(frames[56], number=2**36 - 1)
    path = tmp_path / "renumbered.flac"
    path.write_bytes(Flac(flac.head, tuple(frames)).encode())
    want = sf.read(path, dtype="float32", always_2d=True)[0].T
    threads.set_num_threads(2)
    with pytest.raises(_flac.DamagedFrames):
        _flac.decode(path, 0, 140_001, 1, True)
    np.testing.assert_array_equal(load(path)[0].numpy(), want)
