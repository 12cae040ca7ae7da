"""Files read through libsndfile (soundfile): WAV and its kin, FLAC, AIFF, Ogg, MP3, ...

:func:`decode` and :func:`probe` are ``load`` and ``info`` for whatever the WAV fast
path and the FFmpeg containers leave here; :func:`open_file` and :func:`read_frames`
also serve ``stream``. Integer PCM is read as stored and scaled with NumPy
(``_SCALED_INT``), a long FLAC's frames decode on the thread pool (by the native
library, ``_flac``), and a WAV-like file whose data chunk is cut short is refused
(libsndfile only logs it).

Example:
    >>> import io, torch
    >>> from trivium.audio.io import save
    >>> buf = io.BytesIO()
    >>> save(buf, torch.zeros(1, 160), 16000, format="FLAC")
    >>> probe(buf.getvalue(), None).encoding
    'FLAC'
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import soundfile as sf
import torch
from torch import Tensor

from trivium.audio.io import _flac
from trivium.audio.io._samples import to_tensor
from trivium.audio.io._sources import AudioSource, position, read_at, reopenable
from trivium.audio.io.metadata import ENCODINGS, AudioMetaData
from trivium.core.errors import DecodeError, EmptyInputError, UnsupportedFormatError
from trivium.core.sources import as_readable, check_path

__all__ = ["decode", "open_file", "probe", "read_frames"]

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
_BLOCK_FRAMES = 1 << 20  # long reads go in blocks of this many frames
# A FLAC this long goes to the native decoder (shorter ones: its setup costs more than
# it saves).
_LONG_FLAC_FRAMES = 1 << 17
_PARTS_MAX_FRAMES = 1 << 26
# libsndfile's log line for a WAV/RF64 data chunk longer than the file.
_SHORT_DATA = re.compile(r"^data\s*:\s*(\d+)\s*\(should be (\d+)\)", re.MULTILINE)
_C_TYPES = {"float32": "float", "float64": "double", "int16": "short", "int32": "int"}
_MP3_SCAN_BYTES = 4096  # how far past the ID3v2 tag to look for the first MPEG frame


class _SoundFile(sf.SoundFile):
    """A ``SoundFile`` that knows whether its frame count is exact or an estimate."""

    exact_frames: bool = True


def open_file(src: AudioSource, format: str | None = None) -> tuple[sf.SoundFile, str]:
    """Open ``src`` for reading, turning libsndfile's complaints into ``DecodeError``."""
    obj, name = as_readable(src, "audio")
    start = position(obj)
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
        f.exact_frames = _mp3_states_length(lambda at, n: read_at(obj, start + at, n))
    return f, name


def _check_path(path: str) -> None:
    """Raise what the Errors table says if ``path`` is missing, a directory or empty."""
    try:
        check_path(path, "audio")
    except (OSError, EmptyInputError) as e:
        raise e from None  # not "during handling of" libsndfile's error


def _mp3_states_length(read_bytes: Any) -> bool:
    """Whether an MP3's first frame is a Xing/Info or VBRI header with a frame count.

    Without one, libsndfile (mpg123) estimates the length from the file size and the
    first frame's bitrate. ``read_bytes(offset, size)`` reads the file's bytes.
    """
    tag = read_bytes(0, 10)
    start = 0
    if tag[:3] == b"ID3" and len(tag) == 10:  # skip an ID3v2 tag (syncsafe size)
        start = 10 + sum((b & 0x7F) << (7 * (3 - i)) for i, b in enumerate(tag[6:10]))
        start += 10 if tag[5] & 0x10 else 0  # a footer
    head = read_bytes(start, _MP3_SCAN_BYTES)
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


def read_frames(
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


def decode(
    uri: AudioSource,
    frame_offset: int,
    num_frames: int,
    normalize: bool,
    channels_first: bool,
    format: str | None,
) -> tuple[Tensor, int]:
    """``load`` through libsndfile."""
    f, name = open_file(uri, format)
    with f:
        available = max(f.frames - frame_offset, 0)
        frames = available if num_frames == -1 else min(num_frames, available)
        sample_rate = f.samplerate
        if _long_flac(uri, f, frames, normalize):
            waveform = _decode_long_flac(uri, f, frame_offset, frames, channels_first)
            if waveform is not None:
                return waveform, sample_rate
        if frames and frame_offset:
            _seek(f, name, frame_offset)
        data, scale = read_frames(f, name, frames, normalize)
    return to_tensor(data, channels_first, scale), sample_rate


def _long_flac(uri: AudioSource, f: sf.SoundFile, frames: int, normalize: bool) -> bool:
    """Whether a load is a long FLAC from a path or bytes (for the native decoder).

    Capped at ``_PARTS_MAX_FRAMES``: the output is allocated up front from the header's
    frame count, which longer (or lying) headers must not decide.
    """
    return (
        f.format == "FLAC"
        and normalize
        and _LONG_FLAC_FRAMES <= frames <= _PARTS_MAX_FRAMES
        and reopenable(uri)
    )


def _decode_long_flac(
    uri: AudioSource, f: sf.SoundFile, frame_offset: int, frames: int, channels_first: bool
) -> Tensor | None:
    """A long FLAC by the native decoder, its frames on the thread pool; None: read it
    sequentially (where the native decoder does not apply or found damaged frames)."""
    try:
        return _flac.decode(uri, frame_offset, frames, f.channels, channels_first)
    except _flac.DamagedFrames:
        return None


def _seek(f: sf.SoundFile, name: str, frame: int) -> None:
    """Move to ``frame``; a seek that fails (in corrupt data) is a ``DecodeError``."""
    try:
        f.seek(frame)
    except (sf.SoundFileError, RuntimeError) as e:
        raise DecodeError(f"corrupt audio data: {e}", path=name) from None


def probe(uri: AudioSource, format: str | None) -> AudioMetaData:
    """``info`` through libsndfile."""
    f, _ = open_file(uri, format)
    with f:
        encoding, bits = ENCODINGS.get(f.subtype, (f.subtype, 0))
        if f.format == "FLAC":
            encoding = "FLAC"
        return AudioMetaData(f.samplerate, f.frames, f.channels, bits, encoding)
