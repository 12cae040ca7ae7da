"""A long FLAC decoded by the native library, its frames split over the thread pool.

FLAC frames decode independently, so the file's bytes are cut into parts at frame
headers (found by their sync code and CRC-8) and each part decodes its frames into its
samples of the output. :func:`decode` gives the normalised float32 waveform that
libsndfile's float read gives (``sample / 2 ** (bits - 1)``), or ``None`` where this
path does not apply (no native library, a source other than a path or bytes, 8/16/24
bits only), and raises :class:`DamagedFrames` where the stream is not what it expects (a
bad CRC, a frame out of sequence, a sample outside the bit depth, a short file): ``load``
then reads it through libsndfile, whose errors name the file, sequentially (libsndfile's
seeks into damaged frames may give other samples than its sequential read).

Example:
    >>> import io, torch
    >>> from trivium.audio.io import save
    >>> buf = io.BytesIO()
    >>> save(buf, torch.zeros(1, 300_000), 16000, format="FLAC")
    >>> decode(buf.getvalue(), 0, 300_000, 1, True).shape
    torch.Size([1, 300000])
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from trivium.audio import _ops
from trivium.audio.io._sources import AudioSource
from trivium.core.threads import get_num_threads, parallel_map

__all__ = ["DamagedFrames", "decode"]

_BITS = (8, 16, 24)  # libsndfile's FLAC subtypes, whose float read this matches
# A part decodes at least this many frames (below, its search for a frame header and
# its own setup cost more than the thread saves); a thread takes several parts in turn,
# so one slowed by other work on the machine delays the whole by less than one part.
_PART_MIN_FRAMES = 1 << 16
_PARTS_PER_THREAD = 4


class DamagedFrames(Exception):
    """The frames are not what STREAMINFO and the frame headers before them promise.

    Example:
        >>> issubclass(DamagedFrames, Exception)
        True
    """


@dataclass(frozen=True)
class _Stream:
    """What the frames need from STREAMINFO, and where they start."""

    first_byte: int
    bits: int
    channels: int
    fixed_block: int  # samples per frame of a fixed-blocksize stream; 0: variable
    total: int


def decode(
    uri: AudioSource, frame_offset: int, frames: int, channels: int, channels_first: bool
) -> Tensor | None:
    """Frames ``frame_offset:frame_offset + frames`` of the FLAC ``uri`` as float32, or None.

    ``channels`` is libsndfile's channel count; ``None`` asks the caller to use libsndfile,
    and so does :class:`DamagedFrames`, for a sequential read.
    """
    if not _ops.NATIVE or frames <= 0:
        return None
    data = _bytes_of(uri)
    stream = None if data is None else _stream_info(data)
    if stream is None or stream.channels != channels or frame_offset + frames > stream.total:
        return None
    threads = get_num_threads()
    most = threads * _PARTS_PER_THREAD if threads > 1 else 1
    parts = max(1, min(most, frames // _PART_MIN_FRAMES))
    starts = _part_starts(data, stream, [frame_offset + frames * k // parts for k in range(parts)])
    if starts is None:
        raise DamagedFrames("no frame header where STREAMINFO's sample count puts one")
    out = torch.empty((channels, frames) if channels_first else (frames, channels))
    view = out if channels_first else out.T
    stops = [*starts[1:], data.numel()]

    def decode_part(k: int) -> list[int]:
        return torch.ops.trivium_audio.flac_decode_frames(
            data, starts[k], stops[k], stream.bits, stream.fixed_block, frame_offset, view
        ).tolist()

    results = parallel_map(decode_part, range(len(starts)))
    if not _tiled(results, stops, frame_offset, frame_offset + frames):
        raise DamagedFrames("a frame fails its CRC, its sequence or its bit depth, or is missing")
    return out


def _tiled(results: list[list[int]], stops: list[int], first: int, end: int) -> bool:
    """Whether the parts' frames ran on from one another and covered ``[first, end)``."""
    for k, (stop, _, following) in enumerate(results):
        if k + 1 < len(results) and (stop != stops[k] or following != results[k + 1][1]):
            return False
        if stop < 0:
            return False
    return results[0][1] <= first and results[-1][2] >= end


def _bytes_of(uri: AudioSource) -> Tensor | None:
    """The bytes of a path or bytes-like ``uri`` as a uint8 tensor (None: another source)."""
    try:
        if isinstance(uri, (str, os.PathLike)):
            return torch.from_numpy(np.fromfile(uri, np.uint8))
        if isinstance(uri, (bytes, bytearray, memoryview)):
            with warnings.catch_warnings():  # read only: the decoder never writes to it
                warnings.simplefilter("ignore", UserWarning)
                return torch.frombuffer(uri, dtype=torch.uint8)
    except (OSError, ValueError, TypeError):
        pass  # libsndfile says what is wrong
    return None


def _stream_info(data: Tensor) -> _Stream | None:
    """STREAMINFO and the first frame's offset, or None if ``data`` is not plain FLAC."""
    head = data[: 4 + 4 + 34].numpy().tobytes()
    if len(head) < 42 or head[:4] != b"fLaC" or head[4] & 0x7F != 0:
        return None
    info = int.from_bytes(head[8:42], "big")
    min_block, max_block = info >> 256, (info >> 240) & 0xFFFF
    channels = ((info >> 169) & 7) + 1
    bits = ((info >> 164) & 31) + 1
    total = (info >> 128) & ((1 << 36) - 1)
    position, last = 4, False
    while not last:
        block = data[position : position + 4].numpy().tobytes()
        if len(block) < 4:
            return None
        last = bool(block[0] & 0x80)
        position += 4 + int.from_bytes(block[1:4], "big")
    if bits not in _BITS or position >= data.numel():
        return None
    return _Stream(position, bits, channels, max_block if min_block == max_block else 0, total)


def _part_starts(data: Tensor, stream: _Stream, targets: list[int]) -> list[int] | None:
    """Byte offsets of frames holding or preceding each target sample, unique, in order."""
    size = data.numel() - stream.first_byte
    starts: list[int] = []
    for target in targets:
        guess = stream.first_byte + size * target // stream.total
        step = max(size * 2 * max(stream.fixed_block, 4096) // stream.total, 1)
        while True:
            at, sample = torch.ops.trivium_audio.flac_frame_at(
                data, guess, stream.bits, stream.fixed_block
            ).tolist()
            if guess <= stream.first_byte or (0 <= sample <= target and at >= 0):
                break
            guess, step = max(guess - step, stream.first_byte), step * 2
        if at < 0 or sample > target:
            return None
        if not starts or at > starts[-1]:
            starts.append(at)
    return starts
