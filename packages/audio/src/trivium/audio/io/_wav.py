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

:func:`decode` and :func:`probe` are ``load`` and ``info`` on this path: a file up to
4 MiB is read in one call, a longer one part by part on the thread pool, each part
converted while in cache into an output whose memory a dead output left (``_buffers``).

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

import os
import stat
import struct
import sys
from collections.abc import Callable
from typing import NamedTuple, TypeVar

import numpy as np
import torch
from torch import Tensor

from trivium.audio.io import _buffers
from trivium.audio.io._samples import fill, to_tensor
from trivium.audio.io._sources import OPEN_FLAGS, AudioSource, memory_source
from trivium.audio.io.metadata import ENCODINGS, AudioMetaData
from trivium.core.threads import get_num_threads, parallel_map

__all__ = [
    "WavLayout",
    "decode",
    "file_layout",
    "parse",
    "probe",
    "samples",
    "trailing_chunks_ok",
]

_T = TypeVar("_T")

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


# --- load and info of plain WAV files: whole-file and part-by-part reads ------------------

# Plain WAV files skip libsndfile: up to this size a file is read in one
# call; a longer one has its header and trailing chunks read, then its samples in parts
# of this many bytes (converted while in cache). The header is looked for in the first
# _HEAD_BYTES (a canonical header is 44 or 68 bytes), then in the first
# _LONG_HEAD_BYTES (chunks such as a long LIST or an alignment JUNK before the data).
_WHOLE_BYTES = 1 << 22
_HEAD_BYTES = 1 << 12
_LONG_HEAD_BYTES = 1 << 16
_TAIL_BYTES = 1 << 20
_PART_BYTES = 1 << 20
# The outputs of long files (the parts path) reuse the memory of dead ones (_buffers):
# two buffers serve a loop that holds one waveform while loading the next; beyond 32 MiB
# (glibc maps such blocks afresh every time anyway) the memory is not kept.
_OUTPUTS = _buffers.BufferCache(keep=2, min_bytes=_WHOLE_BYTES, max_bytes=1 << 25)
# Scale from stored samples to load's float32 (8-bit after centring on 0), as libsndfile
# normalises: power-of-two scales, so the same float32 bit for bit. 1.0 casts a DOUBLE.
_SCALES = {"PCM_U8": 2.0**-7, "PCM_16": 2.0**-15, "PCM_24": 2.0**-31, "PCM_32": 2.0**-31}
_SCALES["DOUBLE"] = 1.0
_PREADV = getattr(os, "preadv", None)


def probe(uri: AudioSource) -> AudioMetaData | None:
    """``info`` of a plain WAV file from its header; None for anything else."""
    layout = file_layout(uri)
    if layout is None:
        return None
    encoding, bits = ENCODINGS[layout.subtype]
    return AudioMetaData(layout.sample_rate, layout.frames, layout.channels, bits, encoding)


def file_layout(uri: AudioSource) -> WavLayout | None:
    """The layout of ``uri`` if it is a plain WAV file (see the module doc), else None."""
    memory = memory_source(uri)
    if memory is not None:
        return _parse_memory(memory)
    return _on_file(uri, lambda fd, layout, whole: layout)


def decode(
    uri: AudioSource, frame_offset: int, num_frames: int, normalize: bool, channels_first: bool
) -> tuple[Tensor, int] | None:
    """``load`` of a plain WAV file without libsndfile; None for anything else."""
    memory = memory_source(uri)
    if memory is not None:
        layout = _parse_memory(memory)
        if layout is None:
            return None
        return _from_memory(
            memory, layout, frame_offset, num_frames, normalize, channels_first, False
        ), layout.sample_rate

    def read(fd: int, layout: WavLayout, whole: np.ndarray | None) -> tuple[Tensor, int] | None:
        if whole is not None:
            waveform = _from_memory(
                whole, layout, frame_offset, num_frames, normalize, channels_first, True
            )
        else:
            waveform = _in_parts(fd, layout, frame_offset, num_frames, normalize, channels_first)
        return None if waveform is None else (waveform, layout.sample_rate)

    return _on_file(uri, read)


def _read_into(fd: int, out: np.ndarray, offset: int) -> bool:
    """Fill ``out`` (``uint8``) from ``offset`` of file ``fd``; False if the file ends first."""
    view, done = memoryview(out), 0
    while done < out.size:
        if _PREADV is not None:
            got = _PREADV(fd, [view[done:]], offset + done)
        else:
            os.lseek(fd, offset + done, os.SEEK_SET)
            chunk = os.read(fd, out.size - done)
            got = len(chunk)
            view[done : done + got] = chunk
        if not got:
            return False
        done += got
    return True


def _read_in_pieces(fd: int, out: np.ndarray, offset: int) -> bool:
    """:func:`_read_into` split over the pool's threads (one piece each, at least a part)."""
    if out.size < 2 * _PART_BYTES:
        return _read_into(fd, out, offset)
    pieces = max(1, min(get_num_threads(), out.size // _PART_BYTES))
    bounds = [out.size * k // pieces for k in range(pieces + 1)]
    return all(
        parallel_map(
            lambda k: _read_into(fd, out[bounds[k] : bounds[k + 1]], offset + bounds[k]),
            range(pieces),
        )
    )


def _open_regular(path: str | os.PathLike) -> tuple[int, int] | None:
    """``(fd, size)`` of a regular file opened for reading; None for anything else.

    Checked before opening: opening a named pipe would let its writer start, and the
    pipe is libsndfile's to read (once).
    """
    status = os.stat(path)
    if not stat.S_ISREG(status.st_mode):
        return None
    return os.open(path, OPEN_FLAGS), status.st_size


def _parse_file(fd: int, size: int) -> tuple[WavLayout, np.ndarray | None] | None:
    """A plain WAV file's layout, and the whole file when it is short (else None)."""
    sizes = (size,) if size <= _WHOLE_BYTES else (_HEAD_BYTES, _LONG_HEAD_BYTES)
    for want in sizes:
        head = np.empty(min(size, want), np.uint8)
        if not _read_into(fd, head, 0):
            return None
        layout = parse(memoryview(head), size)
        if layout is not None:
            break
    else:
        return None
    if head.size == size:
        tail = memoryview(head)[layout.data_end :]
    else:
        if size - layout.data_end > _TAIL_BYTES:
            return None
        tail_bytes = np.empty(size - layout.data_end, np.uint8)
        if not _read_into(fd, tail_bytes, layout.data_end):
            return None
        tail = memoryview(tail_bytes)
    if not trailing_chunks_ok(tail, layout.data_end % 2 == 1):
        return None
    return layout, head if head.size == size else None


def _on_file(uri: AudioSource, use: Callable[[int, WavLayout, np.ndarray | None], _T]) -> _T | None:
    """``use(fd, layout, whole)`` if ``uri`` is a path to a plain WAV file, else None.

    ``whole`` holds the file when it is short (read in one call), else None. An
    ``OSError`` (missing, a directory, unreadable) also gives None: libsndfile's path
    reports it.
    """
    if not isinstance(uri, (str, os.PathLike)):
        return None
    try:
        opened = _open_regular(uri)
        if opened is None:
            return None
        fd, size = opened
        try:
            parsed = _parse_file(fd, size)
            return None if parsed is None else use(fd, *parsed)
        finally:
            os.close(fd)
    except OSError:
        return None


def _parse_memory(buffer: np.ndarray) -> WavLayout | None:
    view = memoryview(buffer)
    layout = parse(view, buffer.size)
    if layout is None or not trailing_chunks_ok(view[layout.data_end :], layout.data_end % 2 == 1):
        return None
    return layout


def _stored_samples(
    raw: np.ndarray, layout: WavLayout, normalize: bool
) -> tuple[np.ndarray, float | None]:
    """``[time, channels]`` samples of whole frames of bytes, and the scale still to apply."""
    data = samples(raw, layout)
    if not normalize:
        return data, None
    if layout.bits == 8:  # unsigned: centre on 0 first
        data = np.subtract(data, 128, dtype=np.int16)
    return data, _scale(layout, normalize)


def _scale(layout: WavLayout, normalize: bool) -> float | None:
    """The scale from :func:`_stored_samples` to ``load``'s float32; None: returned as they are."""
    return _SCALES.get(layout.subtype) if normalize else None


def _range(layout: WavLayout, frame_offset: int, num_frames: int) -> tuple[int, int]:
    """First byte and frame count of ``load``'s range."""
    available = max(layout.frames - frame_offset, 0)
    frames = available if num_frames == -1 else min(num_frames, available)
    start = layout.data_offset + min(frame_offset, layout.frames) * layout.frame_bytes
    return start, frames


def _from_memory(
    buffer: np.ndarray,
    layout: WavLayout,
    frame_offset: int,
    num_frames: int,
    normalize: bool,
    channels_first: bool,
    owned: bool,
) -> Tensor:
    """The waveform from a whole file in memory (``owned``: ours to return views of)."""
    start, frames = _range(layout, frame_offset, num_frames)
    data, scale = _stored_samples(
        buffer[start : start + frames * layout.frame_bytes], layout, normalize
    )
    view = scale is None and (not channels_first or layout.channels == 1)
    # Where to_tensor would return a view: only of our own buffer, aligned for its dtype.
    if view and (not owned or data.ctypes.data % data.dtype.itemsize):
        data = data.copy()
    return to_tensor(data, channels_first, scale)


def _in_parts(
    fd: int,
    layout: WavLayout,
    frame_offset: int,
    num_frames: int,
    normalize: bool,
    channels_first: bool,
) -> Tensor | None:
    """The waveform of a long WAV, read and converted part by part into the output.

    Parts go to the ``trivium.core`` thread pool (reads are positional, conversions
    release the GIL); None if the file turns out shorter than its header said.
    """
    start, frames = _range(layout, frame_offset, num_frames)
    channels, frame_bytes = layout.channels, layout.frame_bytes
    shape = (channels, frames) if channels_first else (frames, channels)
    scale = _scale(layout, normalize)
    out = _OUTPUTS.empty(shape, np.float32 if scale is not None else layout.dtype)
    if scale is None and layout.bits != 24 and (channels == 1 or not channels_first):
        # Stored as returned: read straight into the output, a piece per pool thread.
        whole = _read_in_pieces(fd, out.reshape(-1).view(np.uint8), start)
        return torch.from_numpy(out) if whole else None
    part = max(1, _PART_BYTES // frame_bytes)
    in_place = channels_first and scale is not None and _stereo16(layout)

    def convert(first: int) -> bool:
        count = min(part, frames - first)
        if in_place:  # a part's frames are as long as its right channel: read them there
            raw = out[1, first : first + count].view(np.uint8)
        else:
            raw = np.empty(count * frame_bytes, np.uint8)
        if not _read_into(fd, raw, start + first * frame_bytes):
            return False
        data, scale = _stored_samples(raw, layout, normalize)
        span = slice(first, first + count)
        fill(out[:, span] if channels_first else out[span], data, channels_first, scale)
        return True

    if not all(parallel_map(convert, range(0, frames, part))):
        return None
    return torch.from_numpy(out)


def _stereo16(layout: WavLayout) -> bool:
    """Whether a WAV file's frames are two 16-bit samples (one little-endian ``int32``)."""
    return _NATIVE and layout.channels == 2 and layout.bits == 16 and not layout.floating
