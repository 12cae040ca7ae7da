"""Audio that libsndfile does not read, decoded by FFmpeg through PyAV (the ``ffmpeg`` extra).

:func:`trivium.audio.load` and :func:`~trivium.audio.info` come here for the
containers of :data:`CONTAINERS`, known by their first bytes (MP4 / M4A / MOV,
Matroska / WebM, ADTS AAC, Ogg Opus, AVI, ASF), for other data that libsndfile does
not recognise but FFmpeg does, and whenever ``backend="ffmpeg"`` asks. The first
audio stream is decoded, whatever else the container holds.

Samples come out as the decoder gives them (:func:`decode` says how they are
converted), so the waveform is PyAV's own decode: the codec's priming samples are
dropped where the container says how many there are (an MP4 edit list, Ogg Opus
pre-skip, Matroska's codec delay) and kept where it does not (ADTS).

Sample positions are exact. Where the container stamps packets with sample-exact
times (:data:`_COUNTED`: MP4 / MOV, Ogg) a range starting later than
:data:`_PREROLL_SECONDS` seeks to a packet that much before it and decodes from there,
so its samples are those of a decode from the start except where the decoder's state
is not rebuilt by then (AAC's perceptual noise substitution draws from a random state
that the seek resets). Elsewhere
(Matroska stamps milliseconds) the decode runs from the start and counts samples.

Example:
    >>> sniff(b"\\x00\\x00\\x00\\x1cftypM4A \\x00\\x00\\x00\\x00").name
    'MP4/M4A/MOV'
    >>> sniff(b"RIFF\\x24\\x00\\x00\\x00WAVEfmt ") is None
    True
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from types import ModuleType
from typing import IO, Any

import numpy as np

from trivium.core.errors import DecodeError, EmptyInputError, UnsupportedFormatError
from trivium.core.sources import check_path

__all__ = ["CONTAINERS", "HEAD_BYTES", "INSTALL_HINT", "Container", "available", "sniff"]

#: What to install for the formats read here.
INSTALL_HINT = "install PyAV, the 'ffmpeg' extra of trivium-audio: pip install 'av>=12'"
#: How many leading bytes :func:`sniff` looks at.
HEAD_BYTES = 64


@dataclass(frozen=True)
class Container:
    """A container read through FFmpeg, known by its first bytes.

    ``libsndfile_reads``: libsndfile decodes it too, and does where PyAV is missing.

    Example:
        >>> Container("Matroska/WebM", lambda head: head[:4] == b"\\x1a\\x45\\xdf\\xa3").name
        'Matroska/WebM'
    """

    name: str
    matches: Callable[[bytes], bool]
    libsndfile_reads: bool = False


def _starts_with(signature: bytes, offset: int = 0) -> Callable[[bytes], bool]:
    return lambda head: head[offset : offset + len(signature)] == signature


def _adts(head: bytes) -> bool:
    """An ADTS AAC frame header: 12 sync bits, then MPEG version and layer 0 (MP3's is not 0)."""
    return len(head) > 1 and head[0] == 0xFF and head[1] & 0xF6 == 0xF0


def _ogg_opus(head: bytes) -> bool:
    """An Ogg page whose first packet is an Opus ID header (after the segment table)."""
    if head[:4] != b"OggS" or len(head) < 27:
        return False
    packet = 27 + head[26]
    return head[packet : packet + 8] == b"OpusHead"


#: The containers ``load`` sends to FFmpeg by their first bytes (checked in this order).
CONTAINERS: tuple[Container, ...] = (
    Container("MP4/M4A/MOV", _starts_with(b"ftyp", 4)),
    Container("Matroska/WebM", _starts_with(b"\x1a\x45\xdf\xa3")),
    Container("AAC (ADTS)", _adts),
    # libsndfile decodes Opus at the rate the encoder was given; FFmpeg (and torchaudio)
    # at 48 kHz, Opus's own rate.
    Container("Ogg Opus", _ogg_opus, libsndfile_reads=True),
    Container("AVI", lambda head: head[:4] == b"RIFF" and head[8:12] == b"AVI "),
    Container("ASF (WMA)", _starts_with(bytes.fromhex("3026b2758e66cf11a6d900aa0062ce6c"))),
)
# FFmpeg's names for the formats libsndfile reads itself: what it refuses there is
# refused, not handed to FFmpeg's more lenient demuxers (MP3 is left out: FFmpeg reads
# MP3 streams that libsndfile's mpg123 does not recognise).
_LIBSNDFILE_FORMATS = frozenset({"wav", "w64", "aiff", "au", "caf", "flac", "voc", "ogg"})
# Containers that stamp audio packets in samples and count them (FFmpeg's stream
# duration), and whether the count includes the codec's delay, which the decoder drops:
# Ogg's granule positions count Opus's pre-skip, an MP4 edit list leaves out AAC priming.
_COUNTED = {"mov,mp4,m4a,3gp,3g2,mj2": False, "ogg": True}
# How much earlier than a range's start a seek lands, so that the decoder's state
# (overlapping transforms, Opus's 80 ms of convergence) is built by the time it starts.
_PREROLL_SECONDS = 0.1
_PREROLL_FRAMES = 2  # ... and at least this many codec frames
_MIN_READ = 1 << 16  # bytes FFmpeg reads at a time from a file object, at least
# The decoders' sample formats (without the planar "p"), as NumPy types.
_DTYPES = {
    "u8": np.dtype(np.uint8),
    "s16": np.dtype(np.int16),
    "s32": np.dtype(np.int32),
    "s64": np.dtype(np.int64),
    "flt": np.dtype(np.float32),
    "dbl": np.dtype(np.float64),
}
# normalize=True of integer samples: (offset to subtract, power-of-two scale to [-1, 1]).
_INTEGER_SCALES = {
    "u8": (128, 2.0**-7),
    "s16": (0, 2.0**-15),
    "s32": (0, 2.0**-31),
    "s64": (0, 2.0**-63),
}
# FFmpeg's decoders named otherwise than their codec (PyAV 12 gives the decoder's name).
_DECODER_CODECS = {
    "mp3float": "mp3",
    "mp2float": "mp2",
    "mp1float": "mp1",
    "aac_fixed": "aac",
    "libopus": "opus",
    "libvorbis": "vorbis",
    "libfdk_aac": "aac",
}
_PCM = re.compile(r"pcm_([suf])(\d+)")
_PCM_KINDS = {"s": "PCM_S", "u": "PCM_U", "f": "PCM_F"}
_COMPANDED = {"pcm_mulaw": ("ULAW", 8), "pcm_alaw": ("ALAW", 8)}
# Lossless codecs whose decoded sample format gives their bit depth (FLAC and ALAC decode
# 24-bit audio to 32-bit samples, so "s32" says nothing more than 24 or 32).
_FORMAT_BITS = {"u8": 8, "s16": 16}


def sniff(head: bytes) -> Container | None:
    """The entry of :data:`CONTAINERS` that ``head`` (a file's first bytes) starts, or None.

    Example:
        >>> sniff(b"\\xff\\xf1\\x50\\x80\\x02\\x1f\\xfc").name
        'AAC (ADTS)'
        >>> sniff(b"\\xff\\xfb\\x90\\x64") is None  # an MP3 frame: libsndfile's
        True
    """
    for container in CONTAINERS:
        if container.matches(head):
            return container
    return None


def available() -> bool:
    """Whether PyAV imports (the ``ffmpeg`` extra is installed).

    Example:
        >>> isinstance(available(), bool)
        True
    """
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


def _import_av(name: str, container: str) -> ModuleType:
    try:
        import av
    except ImportError:
        raise UnsupportedFormatError(
            f"{container} is not supported without FFmpeg: {INSTALL_HINT}", path=name
        ) from None
    return av


@dataclass
class _Opened:
    """An open container, its first audio stream and what is known of its samples."""

    container: Any
    stream: Any
    rate: int
    channels: int
    frames: int  # as the container counts them, or an estimate
    exact: bool  # whether ``frames`` is the container's count
    origin: int  # the first sample's timestamp, in samples (for positions after a seek)
    tick: Fraction  # one timestamp unit in samples; positions are exact where it is 1/k


def _open(
    src: str | IO[bytes],
    name: str,
    format: str | None,
    buffer_size: int,
    otherwise: Exception | None,
) -> _Opened:
    """Open ``src`` and its first audio stream; ``otherwise`` is raised where FFmpeg does
    not recognise the data, or takes it for a format that libsndfile reads (and refused)."""
    import av

    target = f"file:{src}" if isinstance(src, str) else src  # a path, never a URL
    try:
        container = av.open(target, "r", format=format, buffer_size=max(buffer_size, _MIN_READ))
    except av.error.FFmpegError as e:
        if otherwise is not None:
            raise otherwise from None
        if isinstance(src, str):  # say why a path cannot be read (missing, a directory, empty)
            try:
                check_path(src, "audio")
            except (OSError, EmptyInputError) as error:
                raise error from None
        raise DecodeError(f"cannot decode: {_reason(e)}", path=name) from None
    except ValueError as e:  # PyAV: no container format of that name
        raise ValueError(f"format: {e}") from None
    try:
        if otherwise is not None and _libsndfile_format(container.format.name):
            raise otherwise
        return _describe(av, container, name)
    except BaseException:
        container.close()
        raise


def _describe(av: ModuleType, container: Any, name: str) -> _Opened:
    streams = container.streams.audio
    if not streams:
        held = ", ".join(_stream_kind(s) for s in container.streams) or "no streams"
        raise DecodeError(f"no audio stream (the file holds {held})", path=name)
    stream = streams[0]
    discard = getattr(getattr(av, "stream", None), "Discard", None)  # PyAV 14 and later
    if discard is not None:
        for other in container.streams:
            if other is not stream:
                other.discard = discard.all  # the demuxer may skip their packets unread
    context = stream.codec_context
    rate, channels = context.sample_rate, context.channels
    if not rate or not channels:
        raise DecodeError("the audio stream gives no sample rate or channel count", path=name)
    frames, exact = _count(container, stream, rate)
    tick = stream.time_base * rate
    origin = int((stream.start_time or 0) * tick)
    return _Opened(container, stream, rate, channels, frames, exact, origin, tick)


def _stream_kind(stream: Any) -> str:
    codec = getattr(stream.codec_context, "name", None) if stream.type != "attachment" else None
    return f"{stream.type} ({codec})" if codec else stream.type


def _count(container: Any, stream: Any, rate: int) -> tuple[int, bool]:
    """The stream's samples as the container counts them (exact), else estimated.

    A stream that starts before or after 0 (a file cut from a longer one keeps its
    earlier pre-roll packets at negative times) is counted from its start, as an
    estimate: FFmpeg's duration of such a stream is not the span it decodes.
    """
    counted = _COUNTED.get(container.format.name)
    if stream.duration and stream.time_base:
        start = stream.start_time or 0
        delay = stream.codec_context.delay if counted else 0
        frames = max(round((stream.duration - start) * stream.time_base * rate) - delay, 0)
        return frames, counted is not None and start == 0
    if container.duration:  # the container's duration (microseconds), e.g. Matroska's
        return round(container.duration * rate / 1_000_000), False
    return 0, False


def _reason(error: Exception) -> str:
    return getattr(error, "strerror", None) or str(error)


def _preroll(opened: _Opened) -> int:
    frame_size = opened.stream.codec_context.frame_size or 0
    return max(math.ceil(_PREROLL_SECONDS * opened.rate), _PREROLL_FRAMES * frame_size)


def _seekable(opened: _Opened) -> bool:
    """Whether frames' timestamps give exact sample positions after a seek."""
    tick = opened.tick
    return opened.container.format.name in _COUNTED and tick > 0 and tick.numerator == 1


def _window(
    opened: _Opened, first: int | None, start: int, stop: float, name: str
) -> tuple[list[list[np.ndarray]], int, str]:
    """The samples in ``[start, stop)``, as a list of pieces for each channel (views of
    the frames' buffers), where the decode ended, and the decoder's sample format.

    ``first`` is the position of the first frame (None: read from its timestamp, after
    a seek); later frames follow on by their lengths. This loop runs once per frame
    (about every 1024 samples): it does the least it can per frame.
    """
    import av

    channels, rate = opened.channels, opened.rate
    pieces: list[list[np.ndarray]] = [[] for _ in range(channels)]
    position, kind, dtype, planar = first, "", np.dtype(np.float32), True
    try:
        for frame in opened.container.decode(opened.stream):
            count = frame.samples
            if position is None:
                position = _position_after_seek(opened, frame, start)
            if not kind:
                kind, planar = frame.format.name, frame.format.is_planar
                dtype = _DTYPES[kind.removesuffix("p")]
            elif frame.format.name != kind or frame.sample_rate != rate:
                raise DecodeError(
                    f"the sample format or rate changes mid-stream at sample {position}",
                    path=name,
                )
            lo, hi = max(start - position, 0), min(stop - position, count)
            if hi > lo and not _take(frame, planar, dtype, lo, hi, pieces):
                raise DecodeError(
                    f"the channel count changes mid-stream at sample {position}", path=name
                )
            position += count
            if position >= stop:
                break
    except av.error.FFmpegError as e:
        where = "" if position is None else f" after sample {position}"
        raise DecodeError(
            f"corrupt or truncated audio data{where}: {_reason(e)}", path=name
        ) from None
    return pieces, position or 0, kind or opened.stream.codec_context.format.name


def _take(
    frame: Any, planar: bool, dtype: np.dtype, lo: int, hi: int, pieces: list[list[np.ndarray]]
) -> bool:
    """Append samples ``lo:hi`` of each channel of ``frame`` to ``pieces`` (views of its
    buffers); False if it holds another number of channels."""
    planes, channels, size = frame.planes, len(pieces), dtype.itemsize
    if planar:
        if len(planes) != channels:
            return False
        for channel, plane in zip(pieces, planes, strict=True):
            channel.append(np.frombuffer(plane, dtype, hi - lo, lo * size))
        return True
    if len(frame.layout.channels) != channels:
        return False
    interleaved = np.frombuffer(planes[0], dtype, (hi - lo) * channels, lo * channels * size)
    for c, channel in enumerate(pieces):
        channel.append(interleaved[c::channels])
    return True


def _position_after_seek(opened: _Opened, frame: Any, start: int) -> int:
    """The position of the first frame after a seek, from its timestamp."""
    if frame.pts is None:
        raise _Reseek()
    position = int(frame.pts * opened.tick) - opened.origin
    if position > start:
        raise _Reseek()
    return position


class _Reseek(Exception):
    """A seek landed where positions cannot be told: decode from the start instead."""


def _decode_range(
    opened: _Opened, reopen: Callable[[], _Opened], start: int, count: int, name: str
) -> tuple[list[list[np.ndarray]], int, str]:
    """:func:`_window` of ``[start, start + count)`` (``count`` -1: to the end), seeking
    where positions stay exact; closes the container."""
    import av

    stop = math.inf if count < 0 else start + count
    try:
        if start > _preroll(opened) and _seekable(opened):
            target = math.floor((start - _preroll(opened) + opened.origin) / opened.tick)
            try:
                opened.container.seek(target, stream=opened.stream, backward=True)
                return _window(opened, None, start, stop, name)
            except (_Reseek, av.error.FFmpegError):  # a seek FFmpeg cannot do: start over
                opened.container.close()
                opened = reopen()
        return _window(opened, 0, start, stop, name)
    finally:
        opened.container.close()


def _assemble(
    pieces: list[list[np.ndarray]], kind: str, normalize: bool, channels_first: bool
) -> np.ndarray:
    """One ``[channels, time]`` (or ``[time, channels]``) array of each channel's pieces.

    ``normalize`` gives float32 in [-1, 1]: integer samples scaled by a power of two
    (8-bit centred on 0 first), as libsndfile scales them; otherwise integer samples
    keep their type and float ones are float32 or float64, as decoded.
    """
    channels, total = len(pieces), sum(piece.size for piece in pieces[0])
    base = kind.removesuffix("p")
    offset, scale = _INTEGER_SCALES.get(base, (0, None)) if normalize else (0, None)
    dtype = np.float32 if normalize else _DTYPES[base]
    out = np.empty((channels, total) if channels_first else (total, channels), dtype)
    if total:
        for row, chunks in zip(out if channels_first else out.T, pieces, strict=True):
            np.concatenate(chunks, out=row, casting="unsafe")
        if offset:
            np.subtract(out, np.float32(offset), out=out)
        if scale is not None:
            np.multiply(out, np.float32(scale), out=out)
    return out


def decode(
    src: str | IO[bytes],
    reopen: Callable[[], str | IO[bytes]],
    name: str,
    container: str,
    *,
    format: str | None,
    buffer_size: int,
    frame_offset: int,
    num_frames: int,
    normalize: bool,
    channels_first: bool,
    otherwise: Exception | None = None,
) -> tuple[np.ndarray, int]:
    """Decode the first audio stream of ``src`` into ``([channels, time] samples, rate)``.

    ``container`` names the format in errors (an entry of :data:`CONTAINERS`, or what
    the caller knows); ``format`` is FFmpeg's demuxer name, None to probe. ``reopen``
    gives the source again (from its start) where a seek must be undone.
    ``otherwise`` is raised instead of FFmpeg's complaint where FFmpeg does not find
    audio in ``src`` either (the caller's own reason to refuse it).

    With ``normalize`` the samples are float32 in [-1, 1]; without, integer samples
    (16-bit PCM, FLAC, ALAC ...: ``uint8``, ``int16``, ``int32`` holding 24-bit
    samples ``<< 8``) keep their type, and float ones (AAC, Opus, Vorbis, MP3, ...)
    are float32 (float64 where decoded so).

    Example:
        >>> import io, av, numpy as np
        >>> buf = io.BytesIO()
        >>> with av.open(buf, "w", format="matroska") as out:
        ...     stream = out.add_stream("pcm_s16le", rate=8000, layout="stereo")
        ...     interleaved = np.arange(-300, 300, dtype=np.int16).reshape(1, 600)
        ...     frame = av.AudioFrame.from_ndarray(interleaved, "s16", "stereo")
        ...     frame.sample_rate = 8000
        ...     out.mux(stream.encode(frame)); out.mux(stream.encode(None))
        >>> samples, rate = decode(io.BytesIO(buf.getvalue()), None, "<bytes>", "Matroska",
        ...     format=None, buffer_size=4096, frame_offset=10, num_frames=3, normalize=False,
        ...     channels_first=True)
        >>> samples, rate
        (array([[-280, -278, -276],
               [-279, -277, -275]], dtype=int16), 8000)
    """
    _import_av(name, container)
    opened = _open(src, name, format, buffer_size, otherwise)
    pieces, end, kind = _decode_range(
        opened,
        lambda: _open(reopen(), name, format, buffer_size, None),
        frame_offset,
        num_frames,
        name,
    )
    wanted = opened.frames if num_frames < 0 else min(frame_offset + num_frames, opened.frames)
    if opened.exact and end < wanted:
        raise DecodeError(
            f"truncated: the container holds {opened.frames} samples, decoded {end}", path=name
        )
    out = _assemble(pieces, kind, normalize, channels_first)
    return out, opened.rate


def probe(
    src: str | IO[bytes],
    name: str,
    container: str,
    *,
    format: str | None,
    buffer_size: int,
    otherwise: Exception | None = None,
) -> tuple[int, int, int, int, str]:
    """``(sample_rate, num_frames, num_channels, bits_per_sample, encoding)`` of the first
    audio stream, decoding nothing.

    ``num_frames`` is the container's count where it keeps one (MP4 / MOV, Ogg), else
    an estimate from its duration. ``encoding`` is ``"PCM_S"`` / ``"PCM_U"`` /
    ``"PCM_F"`` / ``"ULAW"`` / ``"ALAW"`` for PCM, else the codec's name in capitals
    (``"AAC"``, ``"OPUS"``, ``"VORBIS"``, ``"MP3"``, ``"FLAC"``, ``"ALAC"``, ...);
    ``bits_per_sample`` is 0 for lossy codecs and where the stream does not tell.
    Arguments as for :func:`decode`.

    Example:
        >>> import io, av, numpy as np
        >>> buf = io.BytesIO()
        >>> with av.open(buf, "w", format="matroska") as out:
        ...     stream = out.add_stream("pcm_s16le", rate=8000, layout="stereo")
        ...     frame = av.AudioFrame.from_ndarray(np.zeros((1, 400), np.int16), "s16", "stereo")
        ...     frame.sample_rate = 8000
        ...     out.mux(stream.encode(frame)); out.mux(stream.encode(None))
        >>> probe(io.BytesIO(buf.getvalue()), "<bytes>", "Matroska", format=None, buffer_size=4096)
        (8000, 200, 2, 16, 'PCM_S')
    """
    _import_av(name, container)
    opened = _open(src, name, format, buffer_size, otherwise)
    try:
        encoding, bits = _encoding(opened.stream.codec_context)
        return opened.rate, opened.frames, opened.channels, bits, encoding
    finally:
        opened.container.close()


def _encoding(context: Any) -> tuple[str, int]:
    """torchaudio's ``(encoding, bits_per_sample)`` for a stream's codec."""
    codec = context.codec
    name = getattr(codec, "canonical_name", None)  # PyAV 13 and later
    name = name or _DECODER_CODECS.get(codec.name, codec.name)
    if name in _COMPANDED:
        return _COMPANDED[name]
    pcm = _PCM.match(name)
    if pcm is not None:
        return _PCM_KINDS[pcm.group(1)], int(pcm.group(2))
    lossless = getattr(codec, "lossless", False) and not getattr(codec, "lossy", False)
    bits = _FORMAT_BITS.get(context.format.name.removesuffix("p"), 0) if lossless else 0
    return name.upper(), bits


def _libsndfile_format(container_format: str) -> bool:
    """Whether FFmpeg's demuxer name ``container_format`` is a format libsndfile reads."""
    return bool(set(container_format.split(",")) & _LIBSNDFILE_FORMATS)
