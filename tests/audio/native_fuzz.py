"""Long-running fuzz of the native FLAC frame decoder, meant for an AddressSanitizer build.

`make fuzz-asan` builds trivium.audio._C with -fsanitize=address, runs this script on
mutations of FLAC files, and restores the normal build. The seeds are the FLAC assets
and long FLACs written with soundfile and PyAV (1 to 8 channels, 8/16/24 bits, block
sizes from 1000 to 4608 samples, fixed and variable block sizes). A mutation flips bits,
overwrites runs of bytes, truncates, splices in frames of another file, or sets fields
of a frame header, a subframe header, its residual coding or STREAMINFO to extremes,
most often with the CRCs made right again so that the frame is decoded, not refused.

Each mutated file goes through the operators (``flac_frame_at``, ``flac_decode_frames``),
through ``_flac.decode`` on one to three threads, and through ``trivium.audio.load``. The
reference is soundfile's sequential read of the same bytes: every sample the native
path gives must equal it, a native decode must not succeed where soundfile fails, and
``load`` must return soundfile's samples or raise a ``DecodeError`` naming the file.
The pytest suite runs a short, deterministic fuzz on every `make test`
(test_audio_flac.py).

Example:
    python tests/audio/native_fuzz.py --iterations 2000 --seed 3
"""

from __future__ import annotations

import argparse
import faulthandler
import io
import random
import tempfile
import warnings
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import av
import numpy as np
import soundfile as sf
import torch

from trivium.audio.io import _flac, load
from trivium.core import get_num_threads, set_num_threads
from trivium.core.errors import DecodeError

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "audio"
# Seeds: (channels, subtype, frames, compression level); long enough for load's native path.
WRITTEN = [
    (1, "PCM_16", 140_001, 0.0),
    (2, "PCM_16", 140_003, 0.6),
    (2, "PCM_24", 140_005, 1.0),
    (3, "PCM_S8", 140_007, 0.3),
    (6, "PCM_16", 140_009, 0.8),
    (8, "PCM_24", 140_011, 0.5),
]
_SIZES = {1: 192, **{c: 576 << (c - 2) for c in range(2, 6)}}
_SIZES.update({c: 256 << (c - 8) for c in range(8, 16)})
_BITS_CODE = {8: 1, 12: 2, 16: 4, 20: 5, 24: 6}


def _crc8_table() -> list[int]:
    table = []
    for v in range(256):
        c = v
        for _ in range(8):
            c = ((c << 1) ^ 0x07 if c & 0x80 else c << 1) & 0xFF
        table.append(c)
    return table


def _crc16_table() -> np.ndarray:
    table = []
    for v in range(256):
        c = v << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x8005 if c & 0x8000 else c << 1) & 0xFFFF
        table.append(c)
    return np.array(table, np.uint16)


_CRC8 = _crc8_table()
_CRC16 = _crc16_table().tolist()


def crc8(data: bytes) -> int:
    """FLAC's frame header CRC-8 (polynomial 0x07).

    Example:
        >>> crc8(b"123456789")
        244
    """
    c = 0
    for b in data:
        c = _CRC8[c ^ b]
    return c


def crc16(data: bytes) -> int:
    """FLAC's frame CRC-16 (polynomial 0x8005, MSB first).

    Example:
        >>> crc16(b"123456789")
        65256
    """
    c, table = 0, _CRC16
    for b in data:
        c = ((c << 8) & 0xFFFF) ^ table[(c >> 8) ^ b]
    return c


def utf8_number(n: int) -> bytes:
    """FLAC's UTF-8-like coding of a frame or sample number (up to 36 bits).

    Example:
        >>> utf8_number(5).hex(), utf8_number(0x80).hex()
        ('05', 'c280')
    """
    if n < 0x80:
        return bytes([n])
    for extra in range(1, 7):
        if n < 1 << (6 + 5 * extra - (extra > 5)):  # 11, 16, 21, 26, 31, 36 bits
            break
    lead = (0xFF00 >> (extra + 1)) & 0xFF
    out = [lead | (n >> (6 * extra))]
    out += [0x80 | ((n >> (6 * k)) & 0x3F) for k in range(extra - 1, -1, -1)]
    return bytes(out)


@dataclass(frozen=True)
class Frame:
    """A frame header's fields and the frame's body (its subframes, without the CRC-16).

    Example:
        >>> f = Frame(False, 12, 9, 1, 4, 0, b"")
        >>> Frame.parse(f.encode()) == f
        True
    """

    variable: bool
    size_code: int
    rate_code: int
    assignment: int
    bits_code: int
    number: int
    body: bytes
    size_extra: int = 0  # the header's blocksize - 1 (codes 6, 7)
    rate_extra: int = 0  # the header's sample rate field (codes 12-14)

    @property
    def blocksize(self) -> int:
        return _SIZES.get(self.size_code, self.size_extra + 1)

    def header(self) -> bytes:
        """The header with its CRC-8."""
        out = bytearray([0xFF, 0xF8 | self.variable, self.size_code << 4 | self.rate_code])
        out.append((self.assignment << 4 | self.bits_code << 1) & 0xFF)
        out += utf8_number(self.number)
        if self.size_code == 6:
            out.append(self.size_extra & 0xFF)
        elif self.size_code == 7:
            out += (self.size_extra & 0xFFFF).to_bytes(2, "big")
        if self.rate_code == 12:
            out.append(self.rate_extra & 0xFF)
        elif self.rate_code in (13, 14):
            out += (self.rate_extra & 0xFFFF).to_bytes(2, "big")
        return bytes(out + bytes([crc8(out)]))

    def encode(self) -> bytes:
        """Header, body and CRC-16."""
        return self._encoded

    @cached_property
    def _encoded(self) -> bytes:  # a seed's frames are encoded again in every mutation
        head = self.header() + self.body
        return head + crc16(head).to_bytes(2, "big")

    @staticmethod
    def parse(data: bytes) -> Frame:
        """The fields of a valid frame ``data`` (header to CRC-16)."""
        size_code, rate_code = data[2] >> 4, data[2] & 15
        n, at = data[4], 5
        if n >= 0xC0:
            extra = 8 - (n ^ 0xFF).bit_length() - 1
            n &= (1 << (6 - extra)) - 1
            for b in data[5 : 5 + extra]:
                n = n << 6 | (b & 0x3F)
            at += extra
        size_extra = rate_extra = 0
        if size_code in (6, 7):
            width = size_code - 5
            size_extra = int.from_bytes(data[at : at + width], "big")
            at += width
        if rate_code in (12, 13, 14):
            width = 1 if rate_code == 12 else 2
            rate_extra = int.from_bytes(data[at : at + width], "big")
            at += width
        fields = (data[1] & 1 == 1, size_code, rate_code, data[3] >> 4, (data[3] >> 1) & 7, n)
        return Frame(*fields, data[at + 1 : -2], size_extra, rate_extra)


@dataclass(frozen=True)
class Flac:
    """A FLAC file as its metadata blocks and its frames.

    Example:
        >>> flac = Flac.parse(encode_long(1, "PCM_16", 5000, 0.0))
        >>> len(flac.frames), flac.frames[0].blocksize, flac.bits
        (5, 1152, 16)
    """

    head: bytes  # "fLaC" and the metadata blocks
    frames: tuple[Frame, ...]

    @property
    def bits(self) -> int:
        return ((int.from_bytes(self.head[8:42], "big") >> 164) & 31) + 1

    def encode(self) -> bytes:
        return self.head + b"".join(f.encode() for f in self.frames)

    @staticmethod
    def parse(data: bytes) -> Flac:
        """Split a valid FLAC ``data`` at its frame headers (each checked by its CRCs)."""
        stream = _flac._stream_info(torch.frombuffer(bytearray(data), dtype=torch.uint8))
        assert stream is not None, "not a FLAC this decoder reads"
        arr = np.frombuffer(data, np.uint8)
        sync = np.flatnonzero((arr[:-1] == 0xFF) & ((arr[1:] & 0xFE) == 0xF8))
        starts = [int(s) for s in sync if s >= stream.first_byte and _header_ok(data, int(s))]
        bounds = [*starts, len(data)]
        frames, at = [], starts[0]
        for stop in bounds[1:]:
            if crc16(data[at:stop]) == 0:
                frames.append(Frame.parse(data[at:stop]))
                at = stop
        assert at == len(data), "frames do not cover the file"
        return Flac(data[: starts[0]], tuple(frames))


def _header_ok(data: bytes, at: int) -> bool:
    for length in range(6, 17):
        if at + length <= len(data) and crc8(data[at : at + length]) == 0:
            return True
    return False


def signal(channels: int, frames: int, seed: int) -> np.ndarray:
    """``[time, channels]``: tones, noise, silence and full-scale noise, so that an encoder
    uses every kind of subframe.

    Example:
        >>> signal(2, 100, 0).shape
        (100, 2)
    """
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / 48000
    tones = np.stack([0.3 * np.sin(2 * np.pi * (220 + 110 * c) * t) for c in range(channels)], 1)
    data = tones + 0.01 * rng.standard_normal((frames, channels))
    data[frames // 5 : frames // 5 + frames // 16] = 0
    loud = data[frames // 2 : frames // 2 + frames // 28]
    loud[:] = rng.uniform(-1, 1, loud.shape)
    if channels > 1:  # a stretch where two channels are equal (side = 0)
        data[frames // 3 : frames // 3 + frames // 24, 1] = data[
            frames // 3 : frames // 3 + frames // 24, 0
        ]
    return np.clip(data, -1, 1)


def encode_long(channels: int, subtype: str, frames: int, level: float) -> bytes:
    """A FLAC written by soundfile (libFLAC) at compression ``level`` in [0, 1].

    Example:
        >>> encode_long(1, "PCM_16", 100, 0.5)[:4]
        b'fLaC'
    """
    buffer = io.BytesIO()
    data = signal(channels, frames, channels)
    sf.write(buffer, data, 48000, subtype, format="FLAC", compression_level=level)
    return buffer.getvalue()


def encode_ffmpeg(frames: int, frame_size: int) -> bytes:
    """A stereo 16-bit FLAC written by FFmpeg (LPC up to order 32, 15-bit coefficients,
    mid/side and the other channel decorrelations) with blocks of ``frame_size``.

    Example:
        >>> Flac.parse(encode_ffmpeg(3000, 1000)).frames[0].blocksize
        1000
    """
    samples = (signal(2, frames, 7) * 32767).astype(np.int16)
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="flac") as out:
        stream = out.add_stream("flac", rate=44100, layout="stereo")
        options = {"compression_level": "12", "frame_size": str(frame_size)}
        stream.codec_context.options = options
        for start in range(0, frames, frame_size):
            chunk = np.ascontiguousarray(samples[start : start + frame_size].reshape(1, -1))
            frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout="stereo")
            frame.sample_rate = 44100
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return buffer.getvalue()


def renumber(frames: list[Frame], variable: bool) -> list[Frame]:
    """The frames numbered as one stream (by sample for ``variable``, else by frame).

    Example:
        >>> f = Frame(False, 12, 9, 1, 4, 7, b"")
        >>> [g.number for g in renumber([f, f], True)]
        [0, 4096]
    """
    out, sample = [], 0
    for k, f in enumerate(frames):
        out.append(replace(f, variable=variable, number=sample if variable else k))
        sample += f.blocksize
    return out


def with_stream_info(head: bytes, **fields: int) -> bytes:
    """``head`` with STREAMINFO fields set: min_block, max_block, channels, bits, total.

    Example:
        >>> head = Flac.parse(encode_long(2, "PCM_16", 100, 0.5)).head
        >>> Flac(with_stream_info(head, bits=24), ()).bits
        24
    """
    info = int.from_bytes(head[8:42], "big")
    layout = {
        "min_block": (256, 16, 0),
        "max_block": (240, 16, 0),
        "channels": (169, 3, 1),
        "bits": (164, 5, 1),
        "total": (128, 36, 0),
    }
    for name, value in fields.items():
        shift, width, bias = layout[name]
        mask = (1 << width) - 1
        info = info & ~(mask << shift) | (((value - bias) & mask) << shift)
    return head[:8] + info.to_bytes(34, "big") + head[42:]


def variable_blocks(flac: Flac, other: Flac | None = None) -> Flac:
    """``flac`` as a variable-blocksize stream; with ``other`` (the same channels and bits),
    the two files' frames alternate in runs, so that the block size varies.

    Example:
        >>> flac = Flac.parse(encode_long(1, "PCM_16", 3000, 0.0))
        >>> variable_blocks(flac).frames[1].number
        1152
    """
    frames = list(flac.frames)
    if other is not None:
        mixed: list[Frame] = []
        for k in range(0, max(len(frames), len(other.frames)), 3):
            mixed += frames[k : k + 3] + list(other.frames[k : k + 2])
        frames = mixed
    frames = renumber(frames, True)
    sizes = [f.blocksize for f in frames]
    head = with_stream_info(
        flac.head, min_block=min(sizes[:-1] or sizes), max_block=max(sizes), total=sum(sizes)
    )
    if min(sizes[:-1] or sizes) == max(sizes):  # still looks fixed: mark it variable
        head = with_stream_info(head, min_block=16)
    return Flac(head, tuple(frames))


def load_seeds() -> list[Flac]:
    """The FLAC assets and long written FLACs, fixed and variable block sizes, parsed."""
    seeds = [Flac.parse(p.read_bytes()) for p in sorted(ASSETS.glob("*.flac"))]
    seeds += [Flac.parse(encode_long(*spec)) for spec in WRITTEN]
    seeds += [Flac.parse(encode_ffmpeg(140_000, size)) for size in (1000, 4608)]
    stereo16 = [s for s in seeds if s.head[8:42] and _channels_bits(s) == (2, 16)]
    seeds.append(variable_blocks(stereo16[0], stereo16[-1]))
    seeds.append(variable_blocks(seeds[2]))
    return seeds


def _channels_bits(flac: Flac) -> tuple[int, int]:
    info = int.from_bytes(flac.head[8:42], "big")
    return ((info >> 169) & 7) + 1, flac.bits


# --- mutations -------------------------------------------------------------------------


def _set_bits(body: bytes, at: int, width: int, value: int) -> bytes:
    """``body`` with bits ``[at, at + width)`` (MSB first) set to ``value``."""
    n = len(body) * 8
    if at + width > n:
        return body
    v = int.from_bytes(body, "big")
    shift = n - at - width
    mask = ((1 << width) - 1) << shift
    v = v & ~mask | ((value << shift) & mask)
    return v.to_bytes(len(body), "big")


def _get_bits(body: bytes, at: int, width: int) -> int:
    n = len(body) * 8
    if at + width > n:
        return 0
    return (int.from_bytes(body, "big") >> (n - at - width)) & ((1 << width) - 1)


def _subframe_field(frame: Frame, bits: int, rng: random.Random) -> Frame:
    """The first subframe's type, wasted bits, LPC precision or shift, residual method,
    partition order or a Rice parameter set to an extreme (or any) value."""
    body = frame.body
    kind = _get_bits(body, 1, 6)
    bps = bits + (frame.assignment == 9)
    pick = rng.random()
    if pick < 0.2:
        choices = [0, 1, 8, 12, 13, 31, 32, 33, 43, 62, 63, rng.randrange(64)]
        return replace(frame, body=_set_bits(body, 1, 6, rng.choice(choices)))
    if pick < 0.3:  # wasted bits: a flag and a unary count
        body = _set_bits(body, 7, 1, 1)
        return replace(frame, body=_set_bits(body, 8, 8, rng.choice([0, 1, 0x80, 0x10])))
    if _get_bits(body, 7, 1) or kind < 8 or 12 < kind < 32:
        return replace(frame, body=_set_bits(body, 0, 1, 1))  # the padding bit
    order = kind - 8 if kind <= 12 else kind - 31
    at = 8 + order * bps
    if kind >= 32:
        precision = _get_bits(body, at, 4) + 1
        if pick < 0.45:
            return replace(frame, body=_set_bits(body, at, 4, rng.choice([0, 13, 14, 15])))
        if pick < 0.55:
            shift = rng.choice([0, 1, 15, 16, 31, rng.randrange(32)])
            return replace(frame, body=_set_bits(body, at + 4, 5, shift))
        if pick < 0.62:  # a coefficient at its extreme
            k = at + 9 + rng.randrange(order) * precision
            value = rng.choice([1 << (precision - 1), (1 << (precision - 1)) - 1])
            return replace(frame, body=_set_bits(body, k, precision, value))
        at += 9 + order * precision
    if pick < 0.72:
        return replace(frame, body=_set_bits(body, at, 2, rng.choice([1, 2, 3])))
    method = _get_bits(body, at, 2)
    if pick < 0.87:
        return replace(frame, body=_set_bits(body, at + 2, 4, rng.choice([0, 1, 8, 14, 15])))
    param_bits = 5 if method else 4
    value = rng.choice([0, (1 << param_bits) - 1, (1 << param_bits) - 2, 1])
    return replace(frame, body=_set_bits(body, at + 6, param_bits, value))


def _header_field(frame: Frame, rng: random.Random) -> Frame:
    """One frame header field set to an extreme or reserved value."""
    pick = rng.randrange(6)
    if pick == 0:
        size_code = rng.choice([0, 1, 6, 7, 15, rng.randrange(16)])
        extra = rng.choice([0, 1, 0xFF, 0xFFFF, frame.blocksize - 1, frame.blocksize])
        return replace(frame, size_code=size_code, size_extra=extra)
    if pick == 1:
        rate_code = rng.choice([0, 12, 13, 14, 15, rng.randrange(16)])
        return replace(frame, rate_code=rate_code, rate_extra=rng.choice([0, 1, 0xFFFF]))
    if pick == 2:
        return replace(frame, bits_code=rng.randrange(8))
    if pick == 3:
        return replace(frame, assignment=rng.randrange(16))
    if pick == 4:
        return replace(frame, variable=not frame.variable)
    number = rng.choice([frame.number + 1, 2**31 - 1, 2**36 - 1, 0, max(frame.number - 1, 0)])
    return replace(frame, number=number)


def _stream_field(head: bytes, rng: random.Random) -> bytes:
    name = rng.choice(["min_block", "max_block", "channels", "bits", "total"])
    values = {
        "min_block": [0, 1, 16, 4096, 65535],
        "max_block": [0, 1, 16, 1152, 4096, 65535],
        "channels": list(range(1, 9)),
        "bits": [4, 8, 12, 16, 20, 24, 32],
        "total": [0, 1, 131_072, 140_000, 2**32, 2**36 - 1],
    }
    return with_stream_info(head, **{name: rng.choice(values[name])})


def mutate(seeds: list[Flac], rng: random.Random) -> bytes:
    """One mutated file: structured changes to frames (their CRCs most often made right
    again), then sometimes raw damage to the bytes.

    Example:
        >>> seeds = [Flac.parse(encode_long(1, "PCM_16", 5000, 0.0))]
        >>> mutate(seeds, random.Random(0))[:4]
        b'fLaC'
    """
    flac = rng.choice(seeds)
    frames, head = list(flac.frames), flac.head
    for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
        k, pick = rng.randrange(len(frames)), rng.random()
        if pick < 0.35:
            frames[k] = _subframe_field(frames[k], flac.bits, rng)
        elif pick < 0.6:
            frames[k] = _header_field(frames[k], rng)
        elif pick < 0.7:
            head = _stream_field(head, rng)
        elif pick < 0.85:  # a frame of another file, numbered to fit (or not)
            donor = rng.choice(seeds).frames
            frames[k] = replace(donor[rng.randrange(len(donor))], number=frames[k].number)
            if rng.random() < 0.3:
                frames[k] = replace(frames[k], variable=not frames[k].variable)
        elif pick < 0.92:  # frames dropped or repeated
            j = rng.randrange(len(frames))
            frames[min(j, k) : max(j, k) + 1] = frames[k : k + 1] * rng.choice([0, 1, 2])
            frames = frames or list(flac.frames[:1])
        else:  # bits flipped in a body, CRC made right
            body = bytearray(frames[k].body)
            if body:
                body[rng.randrange(len(body))] ^= 1 << rng.randrange(8)
            frames[k] = replace(frames[k], body=bytes(body))
    data = bytearray(Flac(head, tuple(frames)).encode())
    if rng.random() < 0.35:
        _damage(data, len(head), rng)
    return bytes(data)


def _damage(data: bytearray, first: int, rng: random.Random) -> None:
    """Bit flips, byte runs or a truncation, in place (mostly after the metadata)."""
    for _ in range(rng.randint(1, 4)):
        lo = first if rng.random() < 0.9 else 0
        if len(data) <= lo + 1:
            return
        pos, pick = rng.randrange(lo, len(data)), rng.random()
        if pick < 0.5:
            data[pos] ^= 1 << rng.randrange(8)
        elif pick < 0.75:
            n = rng.randint(1, 300)
            fill = rng.choice([b"\x00", b"\xff", b"\xff\xf8", rng.randbytes(1)])
            data[pos : pos + n] = (fill * n)[: len(data[pos : pos + n])]
        else:
            del data[pos:]


# --- checks ----------------------------------------------------------------------------


def reference(data: bytes, frames: int | None = None) -> np.ndarray | None:
    """soundfile's sequential float32 read as ``[channels, time]`` (the first ``frames``),
    or None where it fails.

    Example:
        >>> reference(b"not audio") is None
        True
    """
    blocks: list[np.ndarray] = []
    try:
        with sf.SoundFile(io.BytesIO(data)) as f:
            left = f.frames if frames is None else frames
            while left > 0:  # in blocks: a damaged header may claim any length
                blocks.append(f.read(min(left, 1 << 20), dtype="float32", always_2d=True))
                left -= len(blocks[-1])
                if not len(blocks[-1]):
                    break
            channels = f.channels
    except (sf.LibsndfileError, RuntimeError, ValueError, TypeError):
        return None
    return np.concatenate(blocks).T if blocks else np.zeros((channels, 0), np.float32)


def reference_prefix(data: bytes, samples: int, first_frame: int | None = None) -> np.ndarray:
    """soundfile's read of ``data``'s frames from the one at byte ``first_frame`` (the
    first) on, cut after the frame that ends sample ``samples`` - 1, behind ``data``'s
    metadata with STREAMINFO saying how many samples there are (libsndfile decodes a frame
    ahead, which may be a damaged one); its samples ``[0, samples)`` as numbered by the
    frames, those before the first frame zero.

    Example:
        >>> data = encode_long(1, "PCM_16", 5000, 0.0)
        >>> reference_prefix(data, 1152).shape
        (1, 1152)
    """
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    stream = _flac._stream_info(tensor)
    assert stream is not None
    first_frame = stream.first_byte if first_frame is None else first_frame
    out = torch.zeros(stream.channels, samples)
    stop, first, _ = torch.ops.trivium_audio.flac_decode_frames(
        tensor, first_frame, len(data), stream.bits, stream.fixed_block, 0, out
    ).tolist()
    assert stop > 0, "the frames decoded once do not decode again"
    piece = data[: stream.first_byte] + data[first_frame:stop]
    want = reference(with_stream_info(piece, total=samples - first), samples - first)
    assert want is not None, f"native frames decoded [{first}, {samples}), soundfile fails on them"
    return np.concatenate([np.zeros((want.shape[0], first), np.float32), want], 1)


def check_ops(data: bytes, rng: random.Random) -> int:
    """The operators on ``data``: frames found are frames, decoded samples equal soundfile's.
    Returns the samples per channel decoded."""
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    stream = _flac._stream_info(tensor)
    if stream is None:
        bits, fixed, channels, first = rng.choice([8, 16, 24]), rng.choice([0, 4096]), 2, 0
    else:
        bits, fixed, channels = stream.bits, stream.fixed_block, stream.channels
        first = stream.first_byte
        if rng.random() < 0.1:
            fixed = rng.choice([0, 1, 192, 65535, 2**40])
    for _ in range(2):
        at = rng.randrange(-5, len(data) + 5)
        frame_at = torch.ops.trivium_audio.flac_frame_at
        offset, _ = frame_at(tensor, at, bits, fixed).tolist()
        assert offset == -1 or max(at, 0) <= offset < len(data), (at, offset)
    if not 4 <= bits <= 24:
        return 0
    length = rng.choice([1, 1000, 50_000, 140_000])
    start_sample = rng.choice([0, 0, 1, 4095])
    out = torch.full((channels, length), 9.0)
    view = out if rng.random() < 0.5 else torch.full((length, channels), 9.0).T
    stop = rng.choice([len(data), len(data), rng.randrange(first, len(data) + 1)])
    result = torch.ops.trivium_audio.flac_decode_frames(
        tensor, first, stop, bits, fixed, start_sample, view
    ).tolist()
    end, begin = result[2], result[1]
    assert result[0] == -1 or first <= result[0] <= len(data), f"stopped at byte {result[0]}"
    if stream is None or begin != 0 or end <= start_sample or fixed != stream.fixed_block:
        return 0
    got = view[:, : min(end, start_sample + length) - start_sample].numpy()
    want = reference_prefix(data, start_sample + got.shape[1])
    np.testing.assert_array_equal(got, want[:, start_sample:], "op samples != soundfile's")
    return got.shape[1]


def check_decode(data: bytes, rng: random.Random, full: np.ndarray | None) -> bool:
    """``_flac.decode`` of a range: declined (None, DamagedFrames) or soundfile's samples
    (``full``: soundfile's read of ``data``)."""
    channels = full.shape[0] if full is not None else rng.randrange(1, 9)
    total = full.shape[1] if full is not None else 140_000
    offset = rng.choice([0, 0, 1, 4097, total // 3])
    frames = max(total - offset - rng.choice([0, 0, 1, 10_000]), 1)
    first = rng.random() < 0.5
    before = get_num_threads()
    set_num_threads(rng.randint(1, 3))
    try:
        got = _flac.decode(data, offset, frames, channels, first)
    except _flac.DamagedFrames:
        got = None
    finally:
        set_num_threads(before)
    if got is None:
        return False
    tensor = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    stream = _flac._stream_info(tensor)
    assert stream is not None
    first_frame = _flac._part_starts(tensor, stream, [offset])
    assert first_frame is not None
    want = reference_prefix(data, offset + frames, first_frame[0])[:, offset:]
    np.testing.assert_array_equal(got.numpy(), want if first else want.T, "decode != soundfile")
    return True


def check_load(data: bytes, path: Path, want: np.ndarray | None) -> str:
    """``load`` of the file: soundfile's samples ``want``, or a DecodeError naming it."""
    path.write_bytes(data)
    try:
        waveform, _ = load(path)
    except DecodeError as e:
        assert path.name in str(e), f"a DecodeError not naming the file: {e}"
        return "error"
    assert want is not None, "load succeeded where soundfile fails"
    np.testing.assert_array_equal(waveform.numpy(), want, "load != soundfile")
    return "ok"


def check(data: bytes, rng: random.Random, path: Path) -> tuple[int, bool, str]:
    """Every check on one mutated file; what the op decoded, whether ``_flac.decode``
    decoded, and how ``load`` ended."""
    full = reference(data)
    return check_ops(data, rng), check_decode(data, rng, full), check_load(data, path, full)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang", type=float, default=120, help="seconds a case may take")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng, seeds = random.Random(args.seed), load_seeds()
    decoded = natively = loaded = 0
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "fuzz.flac"
        for i in range(args.iterations):
            data = mutate(seeds, rng)
            faulthandler.dump_traceback_later(args.hang, exit=True)
            try:
                samples, native, outcome = check(data, rng, path)
            except AssertionError as e:
                (Path(workdir).parent / f"flac-fuzz-{args.seed}-{i}.flac").write_bytes(data)
                raise AssertionError(f"case {i} (seed {args.seed}): {e}") from None
            finally:
                faulthandler.cancel_dump_traceback_later()
            decoded += samples > 0
            natively += native
            loaded += outcome == "ok"
    print(
        f"{args.iterations} mutated FLACs from {len(seeds)} seeds: {decoded} decoded in part by "
        f"the op, {natively} whole ranges by _flac.decode, {loaded} loads equal to soundfile, "
        "the rest clean DecodeErrors; no crash"
    )


if __name__ == "__main__":
    main()
