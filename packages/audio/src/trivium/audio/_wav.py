"""Plain WAV files (RIFF/WAVE, integer or float PCM) read with a header parse and NumPy.

:func:`trivium.audio.load` and :func:`~trivium.audio.info` read such files here
rather than through libsndfile, whose open costs more than decoding a short file.
Only files whose layout leaves no doubt are taken: a ``RIFF``/``WAVE`` header whose
size matches the file, one ``fmt`` chunk before one ``data`` chunk, other chunks
whole and of a few kinds libsndfile only steps over (``LIST``, ``fact``, ``JUNK``, a
``PEAK`` of the right size after ``fmt``), PCM (``WAVE_FORMAT_PCM``, 8/16/24/32-bit),
IEEE float (32/64-bit) or ``WAVE_FORMAT_EXTENSIBLE`` holding either with all bits
valid, and a data chunk that fits in the file and holds whole frames. Anything
else (RF64, RIFX, compressed codecs, odd or damaged chunks, truncated data) gives
``None`` and goes to libsndfile, which decodes or refuses it as before.

The samples come out as libsndfile gives them: 8-bit as stored (unsigned), 24-bit
as ``int32`` holding ``sample << 8``, the rest in their stored type.

Example:
    >>> import io, torch
    >>> from trivium.audio import save
    >>> buf = io.BytesIO()
    >>> save(buf, torch.zeros(2, 100), 8000, format="WAV", subtype="PCM_24")
    >>> layout = parse(memoryview(buf.getvalue()), len(buf.getvalue()))
    >>> layout.sample_rate, layout.channels, layout.frames, layout.subtype
    (8000, 2, 100, 'PCM_24')
"""

from __future__ import annotations

import struct
import sys
from typing import NamedTuple

import numpy as np

__all__ = ["WavLayout", "parse", "samples", "trailing_chunks_ok"]

_PCM, _FLOAT, _EXTENSIBLE = 1, 3, 0xFFFE
# The rest of the KSDATAFORMAT_SUBTYPE_PCM / _IEEE_FLOAT GUIDs after their format tag.
_GUID_TAIL = b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"
_SUBTYPES = {
    (False, 8): "PCM_U8",
    (False, 16): "PCM_16",
    (False, 24): "PCM_24",
    (False, 32): "PCM_32",
    (True, 32): "FLOAT",
    (True, 64): "DOUBLE",
}
_DTYPES = {8: "<u1", 16: "<i2", 32: "<i4"}
_FLOAT_DTYPES = {32: "<f4", 64: "<f8"}
_MAX_CHANNELS = 1024  # libsndfile's limit
_FMT = struct.Struct("<HHIIHH")
_CHUNK = struct.Struct("<4sI")
_RIFF = struct.Struct("<4sI4s")
# Chunks besides fmt and data that the WAV path steps over, with their least size:
# libsndfile parses others (PEAK, cue, bext, smpl, ...) and refuses malformed ones,
# so files holding them go to libsndfile (a fact chunk shorter than 4 bytes, too).
_SKIPPED = {b"fact": 4, b"LIST": 0, b"JUNK": 0, b"junk": 0, b"PAD ": 0, b"pad ": 0}
_NATIVE = sys.byteorder == "little"


class WavLayout(NamedTuple):
    """Where a WAV file's samples are and how they are stored (a tuple: made per load).

    Example:
        >>> layout = WavLayout(16000, 1, 16, False, 44, 32000, 64044)
        >>> layout.subtype, layout.dtype
        ('PCM_16', dtype('int16'))
    """

    sample_rate: int
    channels: int
    bits: int
    floating: bool
    data_offset: int  # first byte of the samples
    frames: int
    data_end: int  # where the chunks after the data (if any) start

    @property
    def subtype(self) -> str:
        """libsndfile's name for the sample encoding (``"PCM_16"``, ``"FLOAT"``, ...)."""
        return _SUBTYPES[self.floating, self.bits]

    @property
    def frame_bytes(self) -> int:
        """Bytes per frame (all channels of one sample)."""
        return self.channels * self.bits // 8

    @property
    def dtype(self) -> np.dtype:
        """The dtype of :func:`samples` (24-bit: ``int32``)."""
        if self.bits == 24:
            return np.dtype("<i4")
        return np.dtype((_FLOAT_DTYPES if self.floating else _DTYPES)[self.bits])


def _skippable(chunk_id: bytes, size: int) -> bool:
    least = _SKIPPED.get(chunk_id)
    return least is not None and size >= least and not size & 1


def _format(fmt: memoryview) -> tuple[int, int, int, bool] | None:
    """``(sample_rate, channels, bits, floating)`` of a plain ``fmt`` chunk, else None."""
    size = len(fmt)
    if size not in (16, 18, 40):
        return None
    tag, channels, rate, byte_rate, block_align, bits = _FMT.unpack_from(fmt)
    if tag == _EXTENSIBLE:
        if size != 40 or fmt[16] < 22 or bytes(fmt[26:40]) != _GUID_TAIL:
            return None
        valid_bits, tag = struct.unpack_from("<H", fmt, 18)[0], fmt[24] | fmt[25] << 8
        if valid_bits != bits:
            return None
    elif size == 40:
        return None
    floating = tag == _FLOAT
    if tag not in (_PCM, _FLOAT) or (floating, bits) not in _SUBTYPES:
        return None
    if not 0 < channels <= _MAX_CHANNELS or rate <= 0:
        return None
    if block_align != channels * bits // 8 or byte_rate != rate * block_align:
        return None
    return rate, channels, bits, floating


def parse(head: memoryview, file_size: int) -> WavLayout | None:
    """The layout of a plain WAV file from its first bytes (through the data chunk's header).

    ``head`` is the start of the file (all of it, or enough to reach the ``data``
    chunk's header); ``file_size`` is the whole file's size. The chunks after the
    data are not looked at here: check them with :func:`trailing_chunks_ok`.

    Example:
        >>> import io, torch
        >>> from trivium.audio import save
        >>> buf = io.BytesIO()
        >>> save(buf, torch.zeros(1, 10), 16000, format="WAV", subtype="PCM_16")
        >>> parse(memoryview(buf.getvalue()), len(buf.getvalue())).data_offset
        44
        >>> parse(memoryview(b"RIFX" + bytes(40)), 44) is None
        True
    """
    if not _NATIVE or len(head) < 12:
        return None
    riff, riff_size, wave = _RIFF.unpack_from(head)
    if riff != b"RIFF" or wave != b"WAVE" or riff_size + 8 != file_size:
        return None
    pos, fmt = 12, None
    while pos + 8 <= len(head):
        chunk_id, size = _CHUNK.unpack_from(head, pos)
        body = pos + 8
        if chunk_id == b"data":
            if fmt is None or size == 0 or body + size > file_size:
                return None
            rate, channels, bits, floating = fmt
            frames, extra = divmod(size, channels * bits // 8)
            if extra:
                return None
            return WavLayout(rate, channels, bits, floating, body, frames, body + size)
        if body + size > file_size:
            return None
        if chunk_id == b"fmt ":
            if fmt is not None or body + size > len(head):
                return None
            fmt = _format(head[body : body + size])
            if fmt is None:
                return None
        elif chunk_id == b"PEAK":  # libsndfile refuses one not sized for the channels
            if fmt is None or size != 8 + 8 * fmt[1]:
                return None
        elif not _skippable(chunk_id, size):
            return None
        pos = body + size
    return None


def trailing_chunks_ok(tail: memoryview, odd_data: bool) -> bool:
    """Whether the bytes after the data chunk are whole chunks the WAV path may skip.

    ``odd_data``: the data chunk has an odd size, so a pad byte may come first.

    Example:
        >>> trailing_chunks_ok(memoryview(b"LIST" + bytes([4, 0, 0, 0]) + b"INFO"), False)
        True
        >>> trailing_chunks_ok(memoryview(b"\\x00\\x01garbage"), False)
        False
    """
    pos = 1 if odd_data and len(tail) else 0
    while pos < len(tail):
        if pos + 8 > len(tail):
            return False
        chunk_id, size = _CHUNK.unpack_from(tail, pos)
        pos += 8 + size
        if not _skippable(chunk_id, size) or pos > len(tail):
            return False
    return True


def samples(raw: np.ndarray, layout: WavLayout) -> np.ndarray:
    """``[frames, channels]`` samples from whole frames of stored bytes (``uint8``).

    8-bit stays ``uint8`` as stored, 24-bit becomes ``int32`` holding ``sample << 8``
    (a new array), the rest are views of ``raw`` in their stored type.

    Example:
        >>> import numpy as np
        >>> layout = WavLayout(8000, 1, 24, False, 44, 2, 50)
        >>> samples(np.array([0, 0, 128, 1, 0, 0], np.uint8), layout).tolist()
        [[-2147483648], [256]]
    """
    channels = layout.channels
    if layout.bits == 24:
        wide = np.zeros((raw.size // 3, 4), np.uint8)
        wide[:, 1:] = raw.reshape(-1, 3)
        return wide.view("<i4").reshape(-1, channels)
    return raw.view(layout.dtype).reshape(-1, channels)
