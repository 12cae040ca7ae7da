"""Audio file I/O on soundfile (libsndfile): ``load``, ``save``, ``info`` and ``stream``.

``load`` and ``info`` also read, through FFmpeg (``_ffmpeg``, PyAV: the ``ffmpeg``
extra), what libsndfile does not: MP4 / M4A, Matroska / WebM, ADTS AAC, Ogg Opus and
the audio of video files.

Waveforms are ``[channels, time]`` tensors (``channels_first=True``, the default) and
the sample rate travels beside them. Sources can be a path, a binary file-like
object, or the encoded bytes themselves (``bytes``, ``bytearray``, ``memoryview`` or
a 1-D ``uint8`` tensor), so a column of FLAC bytes decodes without a temp file.

Bad input raises a :class:`trivium.core.DecodeError` naming the file: an unknown
format (:class:`~trivium.core.UnsupportedFormatError`, a ``DecodeError``), a corrupt
header or stream, or a file shorter than its header says. That last check needs a
header that states the length: WAV, AIFF, FLAC and the like do, and so does an MP3
with a Xing/Info or VBRI header. Ogg (Vorbis, Opus) has no such header (libsndfile
takes the length from the last page) and a bare MP3 only an estimate from its size:
for those the frame count of :func:`info` is approximate and ``load`` returns what
decodes, so a file cut at a page or frame boundary reads as a shorter file. (An
estimate can also fall short, for a variable-bitrate MP3 without a Xing header:
libsndfile stops decoding at it, and ``load`` returns what ``soundfile.read`` does.)

Example:
    >>> import io, torch
    >>> buf = io.BytesIO()
    >>> save(buf, torch.zeros(2, 800), 8000, format="WAV", subtype="PCM_16")
    >>> waveform, sample_rate = load(buf.getvalue())
    >>> waveform.shape, sample_rate
    (torch.Size([2, 800]), 8000)
    >>> info(buf.getvalue()).encoding
    'PCM_S'
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, TypeVar

import numpy as np
import soundfile as sf
import torch
from torch import Tensor

from trivium.audio import _buffers, _ffmpeg, _wav
from trivium.core.errors import (
    DecodeError,
    EmptyInputError,
    EncodeError,
    UnsupportedFormatError,
)
from trivium.core.forking import ForkSafe, own_file
from trivium.core.sources import as_readable, check_path, describe_source
from trivium.core.threads import get_num_threads, parallel_map

__all__ = ["AudioMetaData", "AudioStream", "info", "load", "save", "stream"]

_T = TypeVar("_T")
AudioSource = str | os.PathLike | IO[bytes] | bytes | bytearray | memoryview | Tensor

# subtype -> (encoding as torchaudio names it, bits per sample)
_ENCODINGS: dict[str, tuple[str, int]] = {
    "PCM_S8": ("PCM_S", 8),
    "PCM_16": ("PCM_S", 16),
    "PCM_24": ("PCM_S", 24),
    "PCM_32": ("PCM_S", 32),
    "PCM_U8": ("PCM_U", 8),
    "FLOAT": ("PCM_F", 32),
    "DOUBLE": ("PCM_F", 64),
    "ULAW": ("ULAW", 8),
    "ALAW": ("ALAW", 8),
    "VORBIS": ("VORBIS", 0),
    "OPUS": ("OPUS", 0),
    "MPEG_LAYER_I": ("MP1", 0),
    "MPEG_LAYER_II": ("MP2", 0),
    "MPEG_LAYER_III": ("MP3", 0),
}
# Integer subtypes returned as stored with normalize=False: (dtype soundfile reads, shift, out).
_RAW_INT: dict[str, tuple[str, int, torch.dtype]] = {
    "PCM_S8": ("int16", 8, torch.int8),
    "PCM_U8": ("int16", 8, torch.uint8),
    "PCM_16": ("int16", 0, torch.int16),
    "PCM_24": ("int32", 0, torch.int32),
    "PCM_32": ("int32", 0, torch.int32),
}
_RAW_FLOAT = {"FLOAT": "float32", "DOUBLE": "float64"}
# Uncompressed integer PCM for normalize=True: (dtype soundfile reads, scale to [-1, 1]).
# libsndfile's int-to-float loop is scalar and several times slower than reading the
# samples as stored and scaling them with NumPy; the power-of-two scale makes both give
# the same float32 bit for bit. (FLAC decodes to integers and converts in one loop
# anyway, so it gains nothing.)
_SCALED_INT: dict[str, tuple[str, float]] = {
    "PCM_S8": ("int16", 2.0**-15),
    "PCM_U8": ("int16", 2.0**-15),
    "PCM_16": ("int16", 2.0**-15),
    "PCM_24": ("int32", 2.0**-31),
    "PCM_32": ("int32", 2.0**-31),
}
# torchaudio-style (encoding, bits_per_sample) -> libsndfile subtype for save().
_SUBTYPES: dict[tuple[str, int | None], str] = {
    ("PCM_S", 8): "PCM_S8",
    ("PCM_S", 16): "PCM_16",
    ("PCM_S", 24): "PCM_24",
    ("PCM_S", 32): "PCM_32",
    ("PCM_S", None): "PCM_16",
    ("PCM_U", 8): "PCM_U8",
    ("PCM_U", None): "PCM_U8",
    ("PCM_F", 32): "FLOAT",
    ("PCM_F", 64): "DOUBLE",
    ("PCM_F", None): "FLOAT",
    ("ULAW", 8): "ULAW",
    ("ULAW", None): "ULAW",
    ("ALAW", 8): "ALAW",
    ("ALAW", None): "ALAW",
    ("VORBIS", None): "VORBIS",
    ("OPUS", None): "OPUS",
}
_DTYPE_SUBTYPES = {
    torch.int16: "PCM_16",
    torch.int32: "PCM_32",
    torch.uint8: "PCM_U8",
    torch.float32: "FLOAT",
    torch.float64: "DOUBLE",
}
_BLOCK_FRAMES = 1 << 20  # long reads go in blocks of this many frames
# A FLAC of at least two parts of this many frames decodes in parts on the thread pool
# (a part's own decoder and seek cost about what decoding this many frames does).
_PART_MIN_FRAMES = 1 << 16
_PARTS_MAX_FRAMES = 1 << 26
# libsndfile's log line for a WAV/RF64 data chunk longer than the file.
_SHORT_DATA = re.compile(r"^data\s*:\s*(\d+)\s*\(should be (\d+)\)", re.MULTILINE)
_C_TYPES = {"float32": "float", "float64": "double", "int16": "short", "int32": "int"}
_MP3_SCAN_BYTES = 4096  # how far past the ID3v2 tag to look for the first MPEG frame
# Plain WAV files skip libsndfile (see ``_wav``): up to this size a file is read in one
# call; a longer one has its header and trailing chunks read, then its samples in parts
# of this many bytes (converted while in cache). The header is looked for in the first
# _WAV_HEAD_BYTES (a canonical header is 44 or 68 bytes), then in the first
# _WAV_LONG_HEAD_BYTES (chunks such as a long LIST or an alignment JUNK before the data).
_WAV_WHOLE_BYTES = 1 << 22
_WAV_HEAD_BYTES = 1 << 12
_WAV_LONG_HEAD_BYTES = 1 << 16
_WAV_TAIL_BYTES = 1 << 20
_WAV_PART_BYTES = 1 << 20
# The outputs of long files (the parts path) reuse the memory of dead ones (_buffers):
# two buffers serve a loop that holds one waveform while loading the next; beyond 32 MiB
# (glibc maps such blocks afresh every time anyway) the memory is not kept.
_WAV_OUTPUTS = _buffers.BufferCache(keep=2, min_bytes=_WAV_WHOLE_BYTES, max_bytes=1 << 25)
# Scale from stored samples to load's float32 (8-bit after centring on 0), as libsndfile
# normalises: power-of-two scales, so the same float32 bit for bit. 1.0 casts a DOUBLE.
_WAV_SCALES = {"PCM_U8": 2.0**-7, "PCM_16": 2.0**-15, "PCM_24": 2.0**-31, "PCM_32": 2.0**-31}
_WAV_SCALES["DOUBLE"] = 1.0
_PREADV = getattr(os, "preadv", None)
_FILL_SAMPLES = 1 << 16  # samples per block when converting to float32 (in cache)
_STEREO_FRAMES = 1 << 16  # frames per block of the interleaved 16-bit stereo conversion
_LITTLE_ENDIAN = sys.byteorder == "little"
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
_BACKENDS = ("soundfile", "ffmpeg")


class _SoundFile(sf.SoundFile):
    """A ``SoundFile`` that knows whether its frame count is exact or an estimate."""

    exact_frames: bool = True


@dataclass(frozen=True)
class AudioMetaData:
    """What :func:`info` reports about an audio file (the fields of torchaudio's).

    ``encoding`` is ``"PCM_S"``, ``"PCM_U"``, ``"PCM_F"``, ``"ULAW"``, ``"ALAW"``,
    ``"FLAC"``, ``"VORBIS"``, ``"OPUS"``, ``"MP3"`` or libsndfile's subtype name for
    anything else libsndfile reads, and the codec's name in capitals for what FFmpeg
    reads (``"AAC"``, ``"ALAC"``, ``"WMAV2"``, ...); ``bits_per_sample`` is 0 for lossy
    codecs and where the file does not tell.

    Example:
        >>> AudioMetaData(16000, 32000, 1, 16, "PCM_S").num_frames
        32000
    """

    sample_rate: int
    num_frames: int
    num_channels: int
    bits_per_sample: int
    encoding: str


def _open(src: AudioSource, format: str | None = None) -> tuple[sf.SoundFile, str]:
    """Open ``src`` for reading, turning libsndfile's complaints into ``DecodeError``."""
    obj, name = as_readable(src, "audio")
    start = _position(obj)
    try:
        f = _SoundFile(obj, mode="r", format=format)
    except sf.LibsndfileError as e:
        if isinstance(obj, str):  # checked only on failure: no stat calls on the fast path
            _check_path(obj)
        reason = e.error_string or str(e)
        if "not recognised" in reason or "unimplemented format" in reason:
            raise UnsupportedFormatError(f"cannot decode: {reason}", path=name) from None
        raise DecodeError(f"cannot decode: {reason}", path=name) from None
    except (sf.SoundFileError, RuntimeError, TypeError) as e:
        raise DecodeError(f"cannot decode: {e}", path=name) from None
    _check_complete(f, name)
    if f.format == "OGG":
        f.exact_frames = False
    elif f.format == "MP3":
        f.exact_frames = _mp3_states_length(lambda at, n: _read_at(obj, start + at, n))
    return f, name


def _check_path(path: str) -> None:
    """Raise what the Errors table says if ``path`` is missing, a directory or empty."""
    try:
        check_path(path, "audio")
    except (OSError, EmptyInputError) as e:
        raise e from None  # not "during handling of" libsndfile's error


def _read_at(obj: Any, offset: int, size: int) -> bytes:
    """``size`` bytes at ``offset`` of a path or file object, leaving its position alone."""
    if isinstance(obj, str):
        with open(obj, "rb") as file:
            file.seek(offset)
            return file.read(size)
    position = obj.tell()
    try:
        obj.seek(offset)
        return obj.read(size)
    finally:
        obj.seek(position)


def _mp3_states_length(read_at: Any) -> bool:
    """Whether an MP3's first frame is a Xing/Info or VBRI header with a frame count.

    Without one, libsndfile (mpg123) estimates the length from the file size and the
    first frame's bitrate. ``read_at(offset, size)`` reads the file's bytes.
    """
    tag = read_at(0, 10)
    start = 0
    if tag[:3] == b"ID3" and len(tag) == 10:  # skip an ID3v2 tag (syncsafe size)
        start = 10 + sum((b & 0x7F) << (7 * (3 - i)) for i, b in enumerate(tag[6:10]))
        start += 10 if tag[5] & 0x10 else 0  # a footer
    head = read_at(start, _MP3_SCAN_BYTES)
    for i in range(len(head) - 40):
        if head[i] != 0xFF or head[i + 1] & 0xE6 != 0xE2:  # sync + layer III
            continue
        version, bitrate, rate = (head[i + 1] >> 3) & 3, head[i + 2] >> 4, (head[i + 2] >> 2) & 3
        if version == 1 or bitrate in (0, 15) or rate == 3:
            continue
        mono = head[i + 3] >> 6 == 3
        side = (17 if mono else 32) if version == 3 else (9 if mono else 17)
        xing = i + 4 + side + (0 if head[i + 1] & 1 else 2)  # + 2 after a CRC
        if head[xing : xing + 4] in (b"Xing", b"Info"):
            return bool(head[xing + 7] & 1)  # the frames field is present
        return head[i + 36 : i + 40] == b"VBRI"  # always carries a frame count
    return False


def _check_complete(f: sf.SoundFile, name: str) -> None:
    """Refuse a WAV-like file whose data chunk is cut short (libsndfile only logs it)."""
    if f.format not in ("WAV", "WAVEX", "RF64", "W64"):
        return
    log = f.extra_info
    if "should be" not in log:
        return
    match = _SHORT_DATA.search(log)
    if match is not None and int(match.group(1)) > int(match.group(2)):
        f.close()
        raise DecodeError(
            f"truncated: the header declares {match.group(1)} bytes of audio data, "
            f"the file holds {match.group(2)}",
            path=name,
        )


def _check_range(frame_offset: int, num_frames: int) -> None:
    for arg, value in (("frame_offset", frame_offset), ("num_frames", num_frames)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{arg} must be an int, got {type(value).__name__}")
    if frame_offset < 0:
        raise ValueError(f"frame_offset must be >= 0, got {frame_offset}")
    if num_frames < -1:
        raise ValueError(f"num_frames must be -1 (all) or >= 0, got {num_frames}")


def _read_block(f: sf.SoundFile, name: str, frames: int, dtype: str) -> np.ndarray:
    # Straight to libsndfile: SoundFile.read seeks to the end of what it read after every
    # call, and in an MP3 that seek drops mpg123's bit reservoir, so the next read decodes
    # wrong samples (chunked reads, streams). Reads past the frame count return nothing.
    if f.closed:
        raise DecodeError("the file is closed", path=name)
    out = np.empty((frames, f.channels), dtype)
    ctype = _C_TYPES[dtype]
    read = getattr(sf._snd, f"sf_readf_{ctype}")
    try:
        got = read(f._file, sf._ffi.cast(f"{ctype} *", out.ctypes.data), frames)
        sf._error_check(f._errorcode)
    except (sf.SoundFileError, RuntimeError) as e:
        raise DecodeError(f"corrupt audio data: {e}", path=name) from None
    return out if got == frames else out[:got]


def _read_dtype(f: sf.SoundFile, normalize: bool) -> tuple[str, float | None]:
    """The dtype to ask soundfile for, and the scale that makes it ``load``'s float32."""
    subtype = f.subtype
    if normalize:
        if f.format == "FLAC":
            return "float32", None
        return _SCALED_INT.get(subtype, ("float32", None))
    if subtype in _RAW_INT:
        return _RAW_INT[subtype][0], None
    return _RAW_FLOAT.get(subtype, "float32"), None


def _read(
    f: sf.SoundFile, name: str, frames: int, normalize: bool
) -> tuple[np.ndarray, float | None]:
    """Read ``frames`` frames as ``[time, channels]``, and the scale still to apply.

    Integer PCM comes back as stored with ``scale`` set when ``normalize`` asks for
    float32 (see ``_SCALED_INT``); otherwise the array is already in the promised dtype.
    """
    dtype, scale = _read_dtype(f, normalize)
    if frames <= _BLOCK_FRAMES:
        data = _read_block(f, name, frames, dtype)
    else:
        # A compressed file's frame count comes from its header, not its size: read in
        # blocks so that a lying header cannot make us allocate what it claims.
        blocks: list[np.ndarray] = []
        left = frames
        while left > 0:
            want = min(left, _BLOCK_FRAMES)
            blocks.append(_read_block(f, name, want, dtype))
            left -= len(blocks[-1])
            if len(blocks[-1]) < want:
                break
        data = np.concatenate(blocks)
    if len(data) < frames and getattr(f, "exact_frames", True):
        raise DecodeError(f"truncated: expected {frames} frames, decoded {len(data)}", path=name)
    raw = None if normalize else _RAW_INT.get(f.subtype)
    if raw is not None and raw[1]:
        data = data >> raw[1]
        data = (data + 128).astype(np.uint8) if raw[2] == torch.uint8 else data.astype(np.int8)
    return data, scale


def _fill(out: np.ndarray, data: np.ndarray, channels_first: bool, scale: float | None) -> None:
    """Write ``[time, channels]`` ``data`` into ``out`` in its layout, scaled to float32.

    Scaling goes in blocks of time that stay in cache: a plain cast, then an in-place
    multiply, channel by channel where ``out`` is channels-first (2-3x faster than
    NumPy's casting multiply, which also transposes slowly).
    """
    if scale is None:
        if channels_first and _interleaved_stereo16(data):
            _split_stereo16(out, data)
        else:
            np.copyto(out, data.T if channels_first else data)  # faster than ascontiguousarray
        return
    if channels_first and _interleaved_stereo16(data):
        _fill_stereo16(out, data, scale)
        return
    factor = np.float32(scale)
    step = max(1, _FILL_SAMPLES // max(data.shape[1], 1))
    for start in range(0, data.shape[0], step):
        span = slice(start, start + step)
        if channels_first:
            for channel, row in enumerate(out[:, span]):
                np.copyto(row, data[span, channel], casting="unsafe")
                np.multiply(row, factor, out=row)
        else:
            block = out[span]
            np.copyto(block, data[span], casting="unsafe")
            np.multiply(block, factor, out=block)


def _interleaved_stereo16(data: np.ndarray) -> bool:
    """Whether ``data`` is ``[time, 2]`` ``int16`` with each frame's 4 bytes together."""
    return (
        _LITTLE_ENDIAN
        and data.dtype == np.int16
        and data.ndim == 2
        and data.shape[1] == 2
        and data.strides == (4, 2)
    )


def _stereo16(layout: _wav.WavLayout) -> bool:
    """Whether a WAV file's frames are two 16-bit samples (one little-endian ``int32``)."""
    return _LITTLE_ENDIAN and layout.channels == 2 and layout.bits == 16 and not layout.floating


def _split_stereo16(out: np.ndarray, data: np.ndarray) -> None:
    """Write interleaved ``int16`` stereo ``data`` into ``[2, time]`` ``int16`` ``out``.

    Read as one little-endian ``int32``, a frame is ``right << 16 | left & 0xFFFF``:
    its cast to ``int16`` is ``left`` and ``frame >> 16`` is ``right``, so both rows
    come from contiguous operations, block by block in cache (NumPy's copy of the
    transposed ``[time, 2]`` array walks each channel with a stride: several times
    slower).
    """
    frames = data.view(np.int32)[:, 0]  # [time, 1] -> [time]
    step = max(1, min(_STEREO_FRAMES, frames.size))
    right = np.empty(step, np.int32)
    for start in range(0, frames.size, step):
        block = frames[start : start + step]
        span = slice(start, start + block.size)
        np.copyto(out[0, span], block, casting="unsafe")
        np.right_shift(block, 16, out=right[: block.size])
        np.copyto(out[1, span], right[: block.size], casting="unsafe")


def _fill_stereo16(out: np.ndarray, data: np.ndarray, scale: float) -> None:
    """Write interleaved ``int16`` stereo ``data`` into ``[2, time]`` float32 ``out``, scaled.

    Casting a strided channel is NumPy's slow loop. Read as one little-endian
    ``int32``, a frame is ``right << 16 | left & 0xFFFF``: ``frame << 16`` is
    ``left << 16`` and ``frame & -65536`` is ``right << 16``, so both channels come
    from contiguous integer operations and contiguous casts (about 1.7x faster). The
    shifted values and ``scale / 65536`` are exact in float32, so the result is
    bit-identical to casting each sample and multiplying by ``scale``.

    A frame takes exactly the bytes of its right channel's float32, so the frames go
    where ``out[1]`` is (``load``'s long-file path reads them there; others are copied
    there first) and every step works in place in ``out``, block by block in cache:
    ``frame << 16`` into ``out[0]`` as ``int32``, ``frame & -65536`` over the frame,
    then each row cast to float32 where it lies and scaled (about 1.2x faster than
    passing through a separate buffer).
    """
    left, right = out.view(np.int32)  # the rows' bytes as int32
    frames = data.view(np.int32)[:, 0]  # [time, 1] -> [time]
    if frames.ctypes.data != right.ctypes.data:
        np.copyto(right, frames)
    factor = np.float32(scale / 65536)
    step = max(1, min(_STEREO_FRAMES, right.size))
    for start in range(0, right.size, step):
        span = slice(start, start + step)
        np.left_shift(right[span], 16, out=left[span])
        np.bitwise_and(right[span], -65536, out=right[span])
        _cast_scaled(out[0, span], left[span], factor)
        _cast_scaled(out[1, span], right[span], factor)


def _cast_scaled(row: np.ndarray, values: np.ndarray, factor: np.float32) -> None:
    """``row[:] = values * factor`` as a cast then an in-place multiply (faster than one call).

    ``values`` may be ``row``'s own bytes (same size, same place): each element is read
    before it is written.
    """
    np.copyto(row, values, casting="unsafe")
    np.multiply(row, factor, out=row)


def _to_tensor(data: np.ndarray, channels_first: bool, scale: float | None = None) -> Tensor:
    """``[channels, time]`` (or ``[time, channels]``) contiguous tensor, scaled to float32."""
    contiguous = not channels_first or data.shape[1] == 1
    if scale is None and contiguous:
        return torch.from_numpy(data.T if channels_first else data)  # already contiguous
    if contiguous and data.size <= _FILL_SAMPLES:  # one block: the fewest NumPy calls
        out = (data.T if channels_first else data).astype(np.float32)
        return torch.from_numpy(np.multiply(out, np.float32(scale), out=out))
    shape = data.T.shape if channels_first else data.shape
    out = np.empty(shape, data.dtype if scale is None else np.float32)
    _fill(out, data, channels_first, scale)
    return torch.from_numpy(out)


def _reopenable(uri: AudioSource) -> bool:
    return isinstance(uri, (str, os.PathLike, bytes, bytearray, memoryview))


def _read_in_parts(
    uri: AudioSource,
    f: sf.SoundFile,
    name: str,
    frame_offset: int,
    frames: int,
    channels_first: bool,
    format: str | None,
) -> Tensor:
    """Normalised float32 waveform of a long FLAC, decoded in parts on the thread pool.

    FLAC seeks to the exact sample, so each thread opens its own decoder at the start
    of its part and writes straight into its slice of the output: the same samples
    as one sequential read.
    """
    parts = min(get_num_threads(), frames // _PART_MIN_FRAMES)
    out = np.empty((f.channels, frames) if channels_first else (frames, f.channels), np.float32)
    bounds = [frames * k // parts for k in range(parts + 1)]

    def read_part(k: int) -> None:
        g = f if k == 0 else _open(uri, format)[0]
        try:
            g.seek(frame_offset + bounds[k])
            data, scale = _read(g, name, bounds[k + 1] - bounds[k], True)
        finally:
            if k:
                g.close()
        span = slice(bounds[k], bounds[k + 1])
        _fill(out[:, span] if channels_first else out[span], data, channels_first, scale)

    parallel_map(read_part, range(parts))
    return torch.from_numpy(out)


def load(
    uri: AudioSource,
    frame_offset: int = 0,
    num_frames: int = -1,
    normalize: bool = True,
    channels_first: bool = True,
    format: str | None = None,
    buffer_size: int = 4096,
    backend: str | None = None,
) -> tuple[Tensor, int]:
    """Decode audio into ``(waveform, sample_rate)``, as ``torchaudio.load``.

    ``uri`` is a path, a binary file-like object, or encoded bytes (``bytes``,
    ``bytearray``, ``memoryview`` or a 1-D ``uint8`` tensor). ``frame_offset`` and
    ``num_frames`` (``-1``: to the end) select a range without decoding the rest.
    The waveform is ``[channels, time]`` (``[time, channels]`` with
    ``channels_first=False``).

    With ``normalize=True`` (default) samples are ``float32`` in [-1, 1]. With
    ``normalize=False`` integer PCM comes back as stored: 8-bit signed as ``int8``,
    8-bit unsigned as ``uint8`` (silence is 128), 16-bit as ``int16``, 24-bit as
    ``int32`` holding ``sample << 8`` (left-justified, as libsndfile and torchaudio
    give it), 32-bit as ``int32``; ``FLOAT``/``DOUBLE`` files as ``float32``/``float64``.
    This applies to every container holding integer PCM (WAV, FLAC, AIFF, ...);
    companded and lossy encodings (mu-law, A-law, ADPCM, Vorbis, Opus, MP3) have no
    stored integers and always decode to normalised ``float32``.

    Files libsndfile does not read go to FFmpeg (PyAV, the ``ffmpeg`` extra of
    ``trivium-audio``): MP4 / M4A / MOV (AAC, ALAC, ...),
    Matroska / WebM (Opus, Vorbis, ...), ADTS AAC, Ogg Opus, AVI, ASF (WMA), and the
    audio of video files. They are told apart by their first bytes; anything else
    libsndfile does not recognise is offered to FFmpeg too. The first audio stream is
    decoded, as PyAV decodes it (priming samples dropped where the container says how
    many); ``normalize=False`` keeps the integer samples of integer codecs (PCM, FLAC,
    ALAC) and gives float32 for the others (AAC, Opus, Vorbis, MP3). Ogg Opus is
    decoded by FFmpeg at 48 kHz (as torchaudio does) where PyAV is installed, else by
    libsndfile at the rate the encoder was given. Without the extra, the other formats
    raise :class:`~trivium.core.UnsupportedFormatError` naming the file, the format and
    what to install. In MP4 and Ogg, ``frame_offset`` seeks to a packet 0.1 s before
    it and decodes from there (lossy codecs' noise substitution can then give samples
    a little different from a decode from the start); elsewhere the decode runs from
    the start.

    ``format`` forces a container: libsndfile's name (``"WAV"``, ``"FLAC"``,
    ``"RAW"``, ...; needed only for headerless data), or else FFmpeg's demuxer name
    (``"mp4"``, ``"aac"``, ``"matroska"``, ...). ``backend`` picks the decoder:
    ``"soundfile"`` (libsndfile only), ``"ffmpeg"`` (FFmpeg only; ``format`` is then
    FFmpeg's name), or None (the rule above). ``buffer_size`` is accepted as
    torchaudio's: FFmpeg reads file objects and bytes in blocks of at least this many
    bytes.

    A long FLAC from a path or bytes (at least 2 x 65536 frames) is decoded in parts on
    the ``trivium.core`` thread pool (one thread inside a DataLoader worker); the
    samples are the same as one sequential read. The waveform of a WAV file over 4 MiB
    (up to 32 MiB) goes into memory that an earlier such waveform left once it and
    every tensor made from it were gone, so loading file after file takes no page
    faults; up to two such buffers stay allocated between loads.

    Raises :class:`~trivium.core.errors.PathNotFoundError` (a ``FileNotFoundError``)
    for a missing path, :class:`~trivium.core.errors.EmptyInputError` for an empty file
    or empty bytes, and :class:`DecodeError` naming the file for unknown formats,
    corrupt or truncated data.

    Example:
        >>> import io, torch
        >>> buf = io.BytesIO()
        >>> save(buf, torch.tensor([[0.0, 0.5, -0.5]]), 16000, format="WAV", subtype="PCM_16")
        >>> load(buf.getvalue(), normalize=False)[0]
        tensor([[     0,  16384, -16384]], dtype=torch.int16)
    """
    _check_range(frame_offset, num_frames)
    _check_backend(backend, buffer_size)
    if backend != "ffmpeg" and (format is None or format.upper() == "WAV"):
        loaded = _load_wav(uri, frame_offset, num_frames, normalize, channels_first)
        if loaded is not None:
            return loaded

    def ffmpeg(container: str, otherwise: Exception | None) -> tuple[Tensor, int]:
        obj, name = as_readable(uri, "audio")
        data, sample_rate = _ffmpeg.decode(
            obj,
            _rewinder(obj),
            name,
            container,
            format=_ffmpeg_format(format),
            buffer_size=buffer_size,
            frame_offset=frame_offset,
            num_frames=num_frames,
            normalize=normalize,
            channels_first=channels_first,
            otherwise=otherwise,
        )
        return torch.from_numpy(data), sample_rate

    return _dispatch(
        uri,
        format,
        backend,
        lambda: _load_soundfile(uri, frame_offset, num_frames, normalize, channels_first, format),
        ffmpeg,
    )


def _load_soundfile(
    uri: AudioSource,
    frame_offset: int,
    num_frames: int,
    normalize: bool,
    channels_first: bool,
    format: str | None,
) -> tuple[Tensor, int]:
    """``load`` through libsndfile."""
    f, name = _open(uri, format)
    with f:
        available = max(f.frames - frame_offset, 0)
        frames = available if num_frames == -1 else min(num_frames, available)
        sample_rate = f.samplerate
        if _decode_in_parts(uri, f, frames, normalize):
            waveform = _read_in_parts(uri, f, name, frame_offset, frames, channels_first, format)
            return waveform, sample_rate
        if frames and frame_offset:
            f.seek(frame_offset)
        data, scale = _read(f, name, frames, normalize)
    return _to_tensor(data, channels_first, scale), sample_rate


def _check_backend(backend: str | None, buffer_size: int) -> None:
    if backend is not None and backend not in _BACKENDS:
        raise ValueError(f"backend must be None, 'soundfile' or 'ffmpeg', got {backend!r}")
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size <= 0:
        raise ValueError(f"buffer_size must be a positive int, got {buffer_size!r}")


def _dispatch(
    uri: AudioSource,
    format: str | None,
    backend: str | None,
    soundfile: Callable[[], _T],
    ffmpeg: Callable[[str, Exception | None], _T],
) -> _T:
    """``soundfile()`` or ``ffmpeg(container, otherwise)``, as :func:`load` says.

    ``ffmpeg`` gets the name of the container for messages, and the error to raise
    where FFmpeg finds no audio either (libsndfile's, for data neither recognises).
    """
    container = _ffmpeg_container(uri, format, backend)
    if container is not None:
        return ffmpeg(container, None)
    try:
        return soundfile()
    except UnsupportedFormatError as unsupported:
        if backend is not None or format is not None or not _ffmpeg.available():
            raise
        return ffmpeg("audio", unsupported)


def _ffmpeg_container(uri: AudioSource, format: str | None, backend: str | None) -> str | None:
    """The container FFmpeg is to read ``uri`` as (its name), or None for libsndfile."""
    if backend is not None:
        return (format or "decoding with backend='ffmpeg'") if backend == "ffmpeg" else None
    if format is not None:
        return None if format.upper() in sf.available_formats() else format
    found = _ffmpeg.sniff(_head(uri))
    if found is None or (found.libsndfile_reads and not _ffmpeg.available()):
        return None
    return found.name


def _ffmpeg_format(format: str | None) -> str | None:
    """FFmpeg's demuxer name for ``format`` (None: FFmpeg probes the data)."""
    return None if format is None else format.lower()


def _head(uri: AudioSource) -> bytes:
    """The first bytes of ``uri`` (for :func:`_ffmpeg.sniff`); empty where unreadable.

    A file object is left where it stood. Errors are left for the decoder to report.
    """
    memory = _memory_source(uri)
    if memory is not None:
        return memory[: _ffmpeg.HEAD_BYTES].tobytes()
    if isinstance(uri, (str, os.PathLike)):
        try:
            # Only regular files: opening a named pipe, even without blocking, lets
            # its writer start, and what is read here never reaches libsndfile.
            if not stat.S_ISREG(os.stat(uri).st_mode):
                return b""
            fd = os.open(uri, _OPEN_FLAGS)
        except OSError:
            return b""
        try:
            return os.read(fd, _ffmpeg.HEAD_BYTES)
        except OSError:
            return b""
        finally:
            os.close(fd)
    try:
        position = uri.tell()  # type: ignore[union-attr]
        head = uri.read(_ffmpeg.HEAD_BYTES)  # type: ignore[union-attr]
        uri.seek(position)  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError):
        return b""
    return head if isinstance(head, bytes) else b""


def _rewinder(obj: str | IO[bytes]) -> Callable[[], str | IO[bytes]]:
    """A function giving ``obj`` again from where its audio starts (for a second open)."""
    if isinstance(obj, str):
        return lambda: obj
    origin = _position(obj)

    def rewound() -> IO[bytes]:
        obj.seek(origin)
        return obj

    return rewound


def _memory_source(uri: AudioSource) -> np.ndarray | None:
    """Encoded bytes held in memory as a 1-D ``uint8`` array (no copy), or None."""
    if isinstance(uri, Tensor):
        if uri.dtype != torch.uint8 or uri.dim() != 1 or uri.device.type != "cpu":
            return None
        return uri.detach().contiguous().numpy()
    if isinstance(uri, (bytes, bytearray, memoryview)):
        try:
            return np.frombuffer(uri, np.uint8)
        except (ValueError, TypeError):  # a non-contiguous or multi-dimensional view
            return None
    return None


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
    if out.size < 2 * _WAV_PART_BYTES:
        return _read_into(fd, out, offset)
    pieces = max(1, min(get_num_threads(), out.size // _WAV_PART_BYTES))
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
    return os.open(path, _OPEN_FLAGS), status.st_size


def _parse_wav_file(fd: int, size: int) -> tuple[_wav.WavLayout, np.ndarray | None] | None:
    """A plain WAV file's layout, and the whole file when it is short (else None)."""
    sizes = (size,) if size <= _WAV_WHOLE_BYTES else (_WAV_HEAD_BYTES, _WAV_LONG_HEAD_BYTES)
    for want in sizes:
        head = np.empty(min(size, want), np.uint8)
        if not _read_into(fd, head, 0):
            return None
        layout = _wav.parse(memoryview(head), size)
        if layout is not None:
            break
    else:
        return None
    if head.size == size:
        tail = memoryview(head)[layout.data_end :]
    else:
        if size - layout.data_end > _WAV_TAIL_BYTES:
            return None
        tail_bytes = np.empty(size - layout.data_end, np.uint8)
        if not _read_into(fd, tail_bytes, layout.data_end):
            return None
        tail = memoryview(tail_bytes)
    if not _wav.trailing_chunks_ok(tail, layout.data_end % 2 == 1):
        return None
    return layout, head if head.size == size else None


def _wav_layout(uri: AudioSource) -> _wav.WavLayout | None:
    """The layout of ``uri`` if it is a plain WAV file (see ``_wav``), else None."""
    memory = _memory_source(uri)
    if memory is not None:
        return _parse_wav_memory(memory)
    return _on_wav_file(uri, lambda fd, layout, whole: layout)


def _on_wav_file(
    uri: AudioSource, use: Callable[[int, _wav.WavLayout, np.ndarray | None], _T]
) -> _T | None:
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
            parsed = _parse_wav_file(fd, size)
            return None if parsed is None else use(fd, *parsed)
        finally:
            os.close(fd)
    except OSError:
        return None


def _parse_wav_memory(buffer: np.ndarray) -> _wav.WavLayout | None:
    view = memoryview(buffer)
    layout = _wav.parse(view, buffer.size)
    if layout is None or not _wav.trailing_chunks_ok(
        view[layout.data_end :], layout.data_end % 2 == 1
    ):
        return None
    return layout


def _wav_samples(
    raw: np.ndarray, layout: _wav.WavLayout, normalize: bool
) -> tuple[np.ndarray, float | None]:
    """``[time, channels]`` samples of whole frames of bytes, and the scale still to apply."""
    data = _wav.samples(raw, layout)
    if not normalize:
        return data, None
    if layout.bits == 8:  # unsigned: centre on 0 first
        data = np.subtract(data, 128, dtype=np.int16)
    return data, _wav_scale(layout, normalize)


def _wav_scale(layout: _wav.WavLayout, normalize: bool) -> float | None:
    """The scale from :func:`_wav_samples` to ``load``'s float32; None: returned as they are."""
    return _WAV_SCALES.get(layout.subtype) if normalize else None


def _load_wav(
    uri: AudioSource, frame_offset: int, num_frames: int, normalize: bool, channels_first: bool
) -> tuple[Tensor, int] | None:
    """``load`` of a plain WAV file without libsndfile; None for anything else."""
    memory = _memory_source(uri)
    if memory is not None:
        layout = _parse_wav_memory(memory)
        if layout is None:
            return None
        return _wav_from_memory(
            memory, layout, frame_offset, num_frames, normalize, channels_first, False
        ), layout.sample_rate

    def read(
        fd: int, layout: _wav.WavLayout, whole: np.ndarray | None
    ) -> tuple[Tensor, int] | None:
        if whole is not None:
            waveform = _wav_from_memory(
                whole, layout, frame_offset, num_frames, normalize, channels_first, True
            )
        else:
            waveform = _wav_in_parts(
                fd, layout, frame_offset, num_frames, normalize, channels_first
            )
        return None if waveform is None else (waveform, layout.sample_rate)

    return _on_wav_file(uri, read)


def _wav_range(layout: _wav.WavLayout, frame_offset: int, num_frames: int) -> tuple[int, int]:
    """First byte and frame count of ``load``'s range."""
    available = max(layout.frames - frame_offset, 0)
    frames = available if num_frames == -1 else min(num_frames, available)
    start = layout.data_offset + min(frame_offset, layout.frames) * layout.frame_bytes
    return start, frames


def _wav_from_memory(
    buffer: np.ndarray,
    layout: _wav.WavLayout,
    frame_offset: int,
    num_frames: int,
    normalize: bool,
    channels_first: bool,
    owned: bool,
) -> Tensor:
    """The waveform from a whole file in memory (``owned``: ours to return views of)."""
    start, frames = _wav_range(layout, frame_offset, num_frames)
    data, scale = _wav_samples(
        buffer[start : start + frames * layout.frame_bytes], layout, normalize
    )
    view = scale is None and (not channels_first or layout.channels == 1)
    # Where _to_tensor would return a view: only of our own buffer, aligned for its dtype.
    if view and (not owned or data.ctypes.data % data.dtype.itemsize):
        data = data.copy()
    return _to_tensor(data, channels_first, scale)


def _wav_in_parts(
    fd: int,
    layout: _wav.WavLayout,
    frame_offset: int,
    num_frames: int,
    normalize: bool,
    channels_first: bool,
) -> Tensor | None:
    """The waveform of a long WAV, read and converted part by part into the output.

    Parts go to the ``trivium.core`` thread pool (reads are positional, conversions
    release the GIL); None if the file turns out shorter than its header said.
    """
    start, frames = _wav_range(layout, frame_offset, num_frames)
    channels, frame_bytes = layout.channels, layout.frame_bytes
    shape = (channels, frames) if channels_first else (frames, channels)
    scale = _wav_scale(layout, normalize)
    out = _WAV_OUTPUTS.empty(shape, np.float32 if scale is not None else layout.dtype)
    if scale is None and layout.bits != 24 and (channels == 1 or not channels_first):
        # Stored as returned: read straight into the output, a piece per pool thread.
        whole = _read_in_pieces(fd, out.reshape(-1).view(np.uint8), start)
        return torch.from_numpy(out) if whole else None
    part = max(1, _WAV_PART_BYTES // frame_bytes)
    in_place = channels_first and scale is not None and _stereo16(layout)

    def convert(first: int) -> bool:
        count = min(part, frames - first)
        if in_place:  # a part's frames are as long as its right channel: read them there
            raw = out[1, first : first + count].view(np.uint8)
        else:
            raw = np.empty(count * frame_bytes, np.uint8)
        if not _read_into(fd, raw, start + first * frame_bytes):
            return False
        data, scale = _wav_samples(raw, layout, normalize)
        span = slice(first, first + count)
        _fill(out[:, span] if channels_first else out[span], data, channels_first, scale)
        return True

    if not all(parallel_map(convert, range(0, frames, part))):
        return None
    return torch.from_numpy(out)


def _decode_in_parts(uri: AudioSource, f: sf.SoundFile, frames: int, normalize: bool) -> bool:
    """Whether a load is worth splitting over threads (a long FLAC from a reopenable source).

    Capped at ``_PARTS_MAX_FRAMES``: the output is allocated up front from the header's
    frame count, which longer (or lying) headers must not decide.
    """
    return (
        f.format == "FLAC"
        and normalize
        and _PART_MIN_FRAMES * 2 <= frames <= _PARTS_MAX_FRAMES
        and get_num_threads() > 1
        and _reopenable(uri)
    )


def info(
    uri: AudioSource,
    format: str | None = None,
    buffer_size: int = 4096,
    backend: str | None = None,
) -> AudioMetaData:
    """Read the header of an audio file into an :class:`AudioMetaData`, decoding nothing.

    Files go to libsndfile or FFmpeg as in :func:`load` (same ``format``,
    ``buffer_size`` and ``backend``). ``num_frames`` is exact where the file counts its
    samples: WAV, FLAC, AIFF and the like, an MP3 with a Xing/Info or VBRI header, MP4 /
    M4A / MOV and Ogg (the last page's position). It is an estimate for Ogg Vorbis and
    Opus read by libsndfile and an MP3 without such a header (from the size and
    bitrate), for Matroska / WebM (the container's duration, in milliseconds) and for
    ADTS AAC (from the bitrate). An MP4 counts the samples the encoder was given; the
    AAC decoder also returns the encoder's padding of the last frame, so ``load`` gives
    up to one frame (1024 samples) more.

    Example:
        >>> import io, torch
        >>> buf = io.BytesIO()
        >>> save(buf, torch.zeros(1, 160), 16000, format="FLAC")
        >>> info(buf.getvalue())
        AudioMetaData(sample_rate=16000, num_frames=160, num_channels=1, bits_per_sample=16, encoding='FLAC')
    """  # noqa: E501
    _check_backend(backend, buffer_size)
    if backend != "ffmpeg" and (format is None or format.upper() == "WAV"):
        layout = _wav_layout(uri)
        if layout is not None:
            encoding, bits = _ENCODINGS[layout.subtype]
            return AudioMetaData(layout.sample_rate, layout.frames, layout.channels, bits, encoding)

    def ffmpeg(container: str, otherwise: Exception | None) -> AudioMetaData:
        obj, name = as_readable(uri, "audio")
        fields = _ffmpeg.probe(
            obj,
            name,
            container,
            format=_ffmpeg_format(format),
            buffer_size=buffer_size,
            otherwise=otherwise,
        )
        return AudioMetaData(*fields)

    return _dispatch(uri, format, backend, lambda: _info_soundfile(uri, format), ffmpeg)


def _info_soundfile(uri: AudioSource, format: str | None) -> AudioMetaData:
    """``info`` through libsndfile."""
    f, _ = _open(uri, format)
    with f:
        encoding, bits = _ENCODINGS.get(f.subtype, (f.subtype, 0))
        if f.format == "FLAC":
            encoding = "FLAC"
        return AudioMetaData(f.samplerate, f.frames, f.channels, bits, encoding)


def _pick_subtype(
    format: str, dtype: torch.dtype, subtype: str | None, encoding: str | None, bits: int | None
) -> str:
    if subtype is not None:
        if encoding is not None or bits is not None:
            raise ValueError("give either subtype or encoding/bits_per_sample, not both")
        return subtype.upper()
    if encoding is not None:
        key = (encoding.upper(), bits)
        if key not in _SUBTYPES:
            raise ValueError(f"unsupported encoding/bits_per_sample: {encoding}/{bits}")
        return _SUBTYPES[key]
    if bits is not None:
        raise ValueError("bits_per_sample needs an encoding (e.g. encoding='PCM_S')")
    preferred = _DTYPE_SUBTYPES.get(dtype)
    if preferred is not None and sf.check_format(format, preferred):
        return preferred
    return sf.default_subtype(format)


def _format_for(uri: Any, format: str | None) -> str:
    if format is not None:
        return format.upper()
    if isinstance(uri, (str, os.PathLike)):
        ext = os.path.splitext(os.fspath(uri))[1].lstrip(".").upper()
        ext = {"OGA": "OGG", "OPUS": "OGG", "AIF": "AIFF"}.get(ext, ext)
        if ext in sf.available_formats():
            return ext
        raise ValueError(f"{os.fspath(uri)}: unknown audio file extension; pass format=")
    raise ValueError("format= is required when saving to a file-like object")


def _writable_array(src: Tensor, channels_first: bool, subtype: str) -> np.ndarray:
    """``[time, channels]`` NumPy data soundfile writes without surprises."""
    if src.dim() == 1:
        src = src.unsqueeze(0 if channels_first else 1)
    if src.dim() != 2:
        raise EncodeError(f"expected a 1-D or 2-D waveform, got shape {tuple(src.shape)}")
    data = src.detach().cpu()
    if channels_first:
        data = data.t()
    if data.dtype == torch.uint8:  # soundfile has no uint8 input: widen to left-justified int16
        data = (data.to(torch.int16) - 128) << 8
    elif data.is_floating_point():
        if data.dtype not in (torch.float32, torch.float64):
            data = data.float()
        if subtype not in ("FLOAT", "DOUBLE"):  # integer files wrap around on overflow
            data = data.clamp(-1.0, 1.0)
    elif data.dtype not in (torch.int16, torch.int32):
        raise EncodeError(f"unsupported waveform dtype {data.dtype}")
    return np.ascontiguousarray(data.numpy())


def save(
    uri: str | os.PathLike | IO[bytes],
    src: Tensor,
    sample_rate: int,
    channels_first: bool = True,
    format: str | None = None,
    subtype: str | None = None,
    encoding: str | None = None,
    bits_per_sample: int | None = None,
) -> None:
    """Encode ``src`` (``[channels, time]``, or ``[time]``) to a file or file-like object.

    ``format`` is libsndfile's container name (``"WAV"``, ``"FLAC"``, ``"OGG"``, ...),
    taken from the file extension when omitted. The sample encoding is either
    ``subtype`` (libsndfile's name: ``"PCM_16"``, ``"PCM_24"``, ``"PCM_32"``,
    ``"FLOAT"``, ``"VORBIS"``, ``"ULAW"``, ...) or torchaudio's ``encoding`` /
    ``bits_per_sample`` pair (``"PCM_S"``/16, ``"PCM_F"``/32, ...). By default it
    follows the tensor's dtype where the container allows it (float32 to ``FLOAT``,
    int16 to ``PCM_16``, uint8 to ``PCM_U8``), else the container's default
    (``PCM_16`` for FLAC, Vorbis for OGG). Floating input is clipped to [-1, 1]
    before integer encoding; integer input is written as is.

    Example:
        >>> import io, torch
        >>> buf = io.BytesIO()
        >>> x = torch.zeros(2, 100)
        >>> save(buf, x, 44100, format="WAV", encoding="PCM_S", bits_per_sample=24)
        >>> info(buf.getvalue()).bits_per_sample
        24
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"src must be a tensor, got {type(src).__name__}")
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or sample_rate <= 0:
        raise ValueError(f"sample_rate must be a positive int, got {sample_rate!r}")
    fmt = _format_for(uri, format)
    chosen = _pick_subtype(fmt, src.dtype, subtype, encoding, bits_per_sample)
    if not sf.check_format(fmt, chosen):
        raise ValueError(
            f"{fmt} cannot hold subtype {chosen}; "
            f"choose one of {sorted(sf.available_subtypes(fmt))}"
        )
    data = _writable_array(src, channels_first, chosen)
    name = describe_source(uri)
    try:
        sf.write(uri, data, sample_rate, subtype=chosen, format=fmt)
    except (sf.SoundFileError, RuntimeError, ValueError) as e:
        raise EncodeError(f"cannot encode {fmt}/{chosen}: {e}", path=name) from None


class AudioStream(ForkSafe):
    """Chunks of an audio file read one at a time; made by :func:`stream`.

    Iterating yields waveforms of ``frames_per_chunk`` frames (the last may be
    shorter). ``sample_rate``, ``num_channels`` and ``num_frames`` are known up front.
    The file is closed when iteration ends, on :meth:`close`, or when leaving a
    ``with`` block. It can be iterated once.

    A stream is fork-safe and pickles: in a forked or spawned DataLoader worker it
    opens the source again (never reading the parent's open file, whose offset the
    two processes would share) and goes on from the frame the parent had reached.

    Example:
        >>> import io, torch
        >>> buf = io.BytesIO()
        >>> save(buf, torch.zeros(1, 250), 8000, format="WAV")
        >>> with stream(buf.getvalue(), 100) as chunks:
        ...     [c.shape[-1] for c in chunks], chunks.sample_rate
        ([100, 100, 50], 8000)
    """

    def __init__(
        self,
        f: sf.SoundFile,
        name: str,
        frames_per_chunk: int,
        frames: int,
        normalize: bool,
        channels_first: bool,
        *,
        source: AudioSource | None = None,
        format: str | None = None,
        frame_offset: int = 0,
        origin: int = 0,
    ) -> None:
        self._file: sf.SoundFile | None = f
        self._source = source  # to open the file again in another process (None: cannot)
        self._origin = origin  # where the audio starts in a file object source
        self._format = format
        self._frame_offset = frame_offset
        self._name = name
        self._chunk = frames_per_chunk
        self._left = frames
        self._normalize = normalize
        self._channels_first = channels_first
        self.sample_rate: int = f.samplerate
        self.num_channels: int = f.channels
        self.num_frames: int = frames

    _fork_handles = ("_file",)

    def _opened(self) -> sf.SoundFile:
        """The open file: this process's own (opened again after a fork or unpickling)."""
        if self._file is None:
            if self._source is None:
                raise DecodeError(
                    "cannot open the stream again in this process: it was made without its source",
                    path=self._name,
                )
            f, _ = _open(_own_source(self._source, self._origin), self._format)
            position = self._frame_offset + self.num_frames - self._left
            if position:
                f.seek(position)
            self._file = f
        return self._file

    def __iter__(self) -> Iterator[Tensor]:
        try:
            while self._left > 0:
                f = self._opened()
                if f.closed:
                    break
                n = min(self._chunk, self._left)
                data, scale = _read(f, self._name, n, self._normalize)
                # Short only where the frame count was an estimate (see the module doc).
                self._left = self._left - n if len(data) == n else 0
                if len(data):
                    yield _to_tensor(data, self._channels_first, scale)
        finally:
            self.close()

    def close(self) -> None:
        """Close the underlying file (iteration stops).

        Example:
            >>> import io, torch
            >>> buf = io.BytesIO()
            >>> save(buf, torch.zeros(1, 10), 8000, format="WAV")
            >>> s = stream(buf.getvalue(), 4)
            >>> s.close()
            >>> list(s)
            []
        """
        self._left = 0
        if self._file is not None:
            self._file.close()

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_source"] = _portable_source(self._source, self._origin)
        state["_origin"] = 0
        return state

    def __enter__(self) -> AudioStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        file = getattr(self, "_file", None)
        if file is not None and not file.closed:
            file.close()


def stream(
    uri: AudioSource,
    frames_per_chunk: int,
    frame_offset: int = 0,
    num_frames: int = -1,
    normalize: bool = True,
    channels_first: bool = True,
    format: str | None = None,
) -> AudioStream:
    """Read a long file chunk by chunk without loading it whole (see :class:`AudioStream`).

    Chunks concatenated along time equal ``load(uri, frame_offset, num_frames, ...)``;
    ``normalize`` and ``channels_first`` mean what they mean for :func:`load`. It reads
    the formats libsndfile decodes; those :func:`load` reads through FFmpeg (MP4, WebM,
    ...) raise :class:`~trivium.core.UnsupportedFormatError` saying so. Errors in
    the header raise here; damage further in raises ``DecodeError`` from the chunk
    that meets it.

    Example:
        >>> import io, torch
        >>> buf = io.BytesIO()
        >>> save(buf, torch.rand(1, 1000) - 0.5, 8000, format="FLAC")
        >>> chunks = list(stream(buf.getvalue(), 300))
        >>> bool(torch.equal(torch.cat(chunks, -1), load(buf.getvalue())[0]))
        True
    """
    if isinstance(frames_per_chunk, bool) or not isinstance(frames_per_chunk, int):
        raise TypeError(f"frames_per_chunk must be an int, got {type(frames_per_chunk).__name__}")
    if frames_per_chunk <= 0:
        raise ValueError(f"frames_per_chunk must be > 0, got {frames_per_chunk}")
    _check_range(frame_offset, num_frames)
    origin = _position(uri)
    try:
        f, name = _open(uri, format)
    except UnsupportedFormatError as unsupported:
        found = _ffmpeg.sniff(_head(uri)) if format is None else None
        if found is None:
            raise
        raise UnsupportedFormatError(
            f"{found.name} is read through FFmpeg, by load() (whole or a range), not stream()",
            path=unsupported.path,
        ) from None
    available = max(f.frames - frame_offset, 0)
    frames = available if num_frames == -1 else min(num_frames, available)
    if frames and frame_offset:
        f.seek(frame_offset)
    return AudioStream(
        f,
        name,
        frames_per_chunk,
        frames,
        normalize,
        channels_first,
        source=uri,
        format=format,
        frame_offset=frame_offset,
        origin=origin,
    )


def _position(src: AudioSource) -> int:
    """Where a file object stands (the audio starts there); 0 for other sources."""
    try:
        return int(src.tell()) if hasattr(src, "read") else 0  # type: ignore[union-attr]
    except (OSError, AttributeError, ValueError):
        return 0


def _own_source(src: AudioSource, origin: int) -> AudioSource:
    """``src`` as this process can open it without moving another process's file offset.

    ``origin`` is where the audio starts in a file object (see
    :func:`trivium.core.forking.own_file`).
    """
    return own_file(src, origin) if hasattr(src, "read") else src


def _portable_source(src: AudioSource | None, origin: int) -> AudioSource | None:
    """``src`` as something that pickles (a path, bytes or a tensor), in this process."""
    if src is None or isinstance(src, (str, os.PathLike, bytes, bytearray, Tensor)):
        return src
    if isinstance(src, memoryview):
        return src.tobytes()
    name = getattr(src, "name", None)
    if origin == 0 and isinstance(name, str) and os.path.isfile(name):
        return name
    position = src.tell()
    src.seek(origin)
    try:
        return src.read()
    finally:
        src.seek(position)
