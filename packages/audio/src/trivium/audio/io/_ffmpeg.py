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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from types import ModuleType
from typing import IO, Any

import numpy as np

from trivium.audio.io._sources import rewinder
from trivium.core.errors import DecodeError, EmptyInputError, UnsupportedFormatError
from trivium.core.sources import check_path

__all__ = [
    "CONTAINERS",
    "HEAD_BYTES",
    "INSTALL_HINT",
    "Container",
    "available",
    "sniff",
]

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


@dataclass
class _Cursor:
    """Where a decode stands: the next frame's position (None: unknown until a frame
    after a seek tells it) and the decoder's sample format (empty until the first frame)."""

    position: int | None
    kind: str = ""


def _frames(
    opened: _Opened, cursor: _Cursor, start: int, stop: float, name: str
) -> Iterator[list[np.ndarray]]:
    """Each decoded frame's samples in ``[start, stop)``, one view of its buffer per
    channel (frames holding none of them are skipped); ``cursor`` follows the decode.

    This loop runs once per frame (about every 1024 samples): it does the least it can
    per frame.
    """
    import av

    rate, channels = opened.rate, opened.channels
    position, kind = cursor.position, cursor.kind
    dtype, planar = np.dtype(np.float32), True
    try:
        for frame in opened.container.decode(opened.stream):
            count = frame.samples
            if position is None:
                position = _position_after_seek(opened, frame, start)
            if not kind:
                kind, planar = frame.format.name, frame.format.is_planar
                dtype, cursor.kind = _DTYPES[kind.removesuffix("p")], kind
            elif frame.format.name != kind or frame.sample_rate != rate:
                raise DecodeError(
                    f"the sample format or rate changes mid-stream at sample {position}",
                    path=name,
                )
            lo, hi = max(start - position, 0), min(stop - position, count)
            position += count
            if hi > lo:
                views = _take(frame, planar, dtype, channels, lo, hi)
                if views is None:
                    raise DecodeError(
                        f"the channel count changes mid-stream at sample {position - count}",
                        path=name,
                    )
                yield views
            if position >= stop:
                return
    except av.error.FFmpegError as e:
        where = "" if position is None else f" after sample {position}"
        raise DecodeError(
            f"corrupt or truncated audio data{where}: {_reason(e)}", path=name
        ) from None
    finally:
        cursor.position = position


def _take(
    frame: Any, planar: bool, dtype: np.dtype, channels: int, lo: int, hi: int
) -> list[np.ndarray] | None:
    """Samples ``lo:hi`` of each channel of ``frame`` (views of its buffers); None if it
    holds another number of channels."""
    planes, size = frame.planes, dtype.itemsize
    if planar:
        if len(planes) != channels:
            return None
        return [np.frombuffer(plane, dtype, hi - lo, lo * size) for plane in planes]
    if len(frame.layout.channels) != channels:
        return None
    interleaved = np.frombuffer(planes[0], dtype, (hi - lo) * channels, lo * channels * size)
    return [interleaved[c::channels] for c in range(channels)]


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


def _ranged_frames(
    opened: _Opened,
    reopen: Callable[[], _Opened],
    start: int,
    stop: float,
    name: str,
    cursor: _Cursor,
) -> Iterator[list[np.ndarray]]:
    """:func:`_frames` of ``[start, stop)``, seeking where positions stay exact; closes
    the container when done (or when closed), and refuses a counted file that decodes
    shorter than it says."""
    import av

    try:
        frames = None
        if start > _preroll(opened) and _seekable(opened):
            target = math.floor((start - _preroll(opened) + opened.origin) / opened.tick)
            try:
                opened.container.seek(target, stream=opened.stream, backward=True)
                frames = _frames(opened, cursor, start, stop, name)
                first = next(frames, None)  # a frame before the start, or _Reseek
                if first is not None:
                    yield first
            except (_Reseek, av.error.FFmpegError):  # a seek FFmpeg cannot do: start over
                opened.container.close()
                opened, frames, cursor.position, cursor.kind = reopen(), None, None, ""
        if frames is None:
            cursor.position = 0
            frames = _frames(opened, cursor, start, stop, name)
        yield from frames
        end, wanted = cursor.position or 0, min(stop, opened.frames)
        if opened.exact and end < wanted:
            raise DecodeError(
                f"truncated: the container holds {opened.frames} samples, decoded {end}",
                path=name,
            )
    finally:
        opened.container.close()


def _decode_range(
    opened: _Opened, reopen: Callable[[], _Opened], start: int, count: int, name: str
) -> tuple[list[list[np.ndarray]], str]:
    """The samples in ``[start, start + count)`` (``count`` -1: to the end), as a list of
    pieces for each channel (views of the frames' buffers), and the decoder's sample
    format; closes the container."""
    stop = math.inf if count < 0 else start + count
    cursor = _Cursor(None)
    pieces: list[list[np.ndarray]] = [[] for _ in range(opened.channels)]
    appends = [channel.append for channel in pieces]
    for views in _ranged_frames(opened, reopen, start, stop, name, cursor):
        for append, view in zip(appends, views):  # noqa: B905 - _take gives each channel
            append(view)
    return pieces, cursor.kind or opened.stream.codec_context.format.name


def _output_dtype(kind: str, normalize: bool) -> np.dtype:
    return np.dtype(np.float32) if normalize else _DTYPES[kind.removesuffix("p")]


def _normalize(out: np.ndarray, kind: str, normalize: bool) -> None:
    """Scale ``out`` (samples cast to float32) in place to [-1, 1] where ``normalize``
    asks and the decoder gave integers: as libsndfile scales them (8-bit centred on 0
    first, then a power of two)."""
    offset, scale = (
        _INTEGER_SCALES.get(kind.removesuffix("p"), (0, None)) if normalize else (0, None)
    )
    if offset:
        np.subtract(out, np.float32(offset), out=out)
    if scale is not None:
        np.multiply(out, np.float32(scale), out=out)


def _assemble(
    pieces: list[list[np.ndarray]], kind: str, normalize: bool, channels_first: bool
) -> np.ndarray:
    """One ``[channels, time]`` (or ``[time, channels]``) array of each channel's pieces.

    ``normalize`` gives float32 in [-1, 1] (see :func:`_normalize`); otherwise integer
    samples keep their type and float ones are float32 or float64, as decoded.
    """
    channels, total = len(pieces), sum(piece.size for piece in pieces[0])
    dtype = _output_dtype(kind, normalize)
    out = np.empty((channels, total) if channels_first else (total, channels), dtype)
    if total:
        for row, chunks in zip(out if channels_first else out.T, pieces, strict=True):
            np.concatenate(chunks, out=row, casting="unsafe")
        _normalize(out, kind, normalize)
    return out


class ChunkReader:
    """The samples of a range of the first audio stream, read a chunk at a time while
    the container is demuxed and decoded packet by packet (for ``stream``).

    It holds one decoded frame at most, besides the chunk being filled: the part of a
    frame that does not fit a chunk is carried (as views of its buffers) to the next.
    Made by :func:`open_chunks`.

    Example:
        >>> import io, av, numpy as np
        >>> buf = io.BytesIO()
        >>> with av.open(buf, "w", format="matroska") as out:
        ...     stream = out.add_stream("pcm_s16le", rate=8000, layout="mono")
        ...     samples = np.arange(10, dtype=np.int16)[None]
        ...     frame = av.AudioFrame.from_ndarray(samples, "s16", "mono")
        ...     frame.sample_rate = 8000
        ...     out.mux(stream.encode(frame)); out.mux(stream.encode(None))
        >>> reader = open_chunks(io.BytesIO(buf.getvalue()), "<bytes>", "Matroska", format=None,
        ...     start=2, stop=math.inf, normalize=False, channels_first=True)
        >>> reader.read(3), reader.read(100)
        (array([[2, 3, 4]], dtype=int16), array([[5, 6, 7, 8, 9]], dtype=int16))
        >>> reader.closed
        True
    """

    def __init__(
        self,
        opened: _Opened,
        frames: Iterator[list[np.ndarray]],
        cursor: _Cursor,
        normalize: bool,
        channels_first: bool,
    ) -> None:
        self.sample_rate, self.num_channels = opened.rate, opened.channels
        self.num_frames, self.exact = opened.frames, opened.exact
        self._default_kind = opened.stream.codec_context.format.name
        self._frames: Iterator[list[np.ndarray]] | None = frames
        self._cursor = cursor
        self._carry: list[np.ndarray] = []  # what is left of the last frame
        self._normalize = normalize
        self._channels_first = channels_first

    @property
    def closed(self) -> bool:
        """Whether the decode has ended (the container is closed)."""
        return self._frames is None and not self._carry

    def read(self, count: int) -> np.ndarray:
        """The next ``count`` frames, ``[channels, time]`` (or ``[time, channels]``);
        fewer at the end of the range (then the container is closed)."""
        out = np.empty(0)
        filled = 0
        while filled < count:
            if not self._carry:
                views = None if self._frames is None else next(self._frames, None)
                if views is None:
                    self._frames = None
                    break
                self._carry = views
            if not filled:
                out = self._allocate(count)
            n = min(count - filled, self._carry[0].size)
            rows = out if self._channels_first else out.T
            for row, view in zip(rows, self._carry, strict=True):
                np.copyto(row[filled : filled + n], view[:n], casting="unsafe")
            self._carry = [view[n:] for view in self._carry] if n < self._carry[0].size else []
            filled += n
        if filled == 0:
            return self._allocate(0)
        if filled < count:
            out = np.ascontiguousarray(out[:, :filled] if self._channels_first else out[:filled])
        _normalize(out, self._cursor.kind, self._normalize)
        return out

    def _allocate(self, count: int) -> np.ndarray:
        kind = self._cursor.kind or self._default_kind
        shape = (self.num_channels, count) if self._channels_first else (count, self.num_channels)
        return np.empty(shape, _output_dtype(kind, self._normalize))

    def close(self) -> None:
        """Close the container; reading gives nothing more."""
        frames, self._frames, self._carry = self._frames, None, []
        if frames is not None:
            frames.close()  # type: ignore[attr-defined]


def open_chunks(
    src: str | IO[bytes],
    name: str,
    container: str,
    *,
    format: str | None,
    start: int,
    stop: float,
    normalize: bool,
    channels_first: bool,
    reopen: Callable[[], str | IO[bytes]] | None = None,
    buffer_size: int = 4096,
    otherwise: Exception | None = None,
) -> ChunkReader:
    """A :class:`ChunkReader` of the samples ``[start, stop)`` of ``src`` (``stop``
    ``math.inf``: to the end), seeking as :func:`decode` does; the header is read here.
    Arguments as for :func:`decode` (``reopen`` None: ``src`` itself, rewound).
    """
    _import_av(name, container)
    opened = _open(src, name, format, buffer_size, otherwise)
    again = rewinder(src) if reopen is None else reopen
    cursor = _Cursor(None)
    frames = _ranged_frames(
        opened, lambda: _open(again(), name, format, buffer_size, None), start, stop, name, cursor
    )
    return ChunkReader(opened, frames, cursor, normalize, channels_first)


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
    pieces, kind = _decode_range(
        opened,
        lambda: _open(reopen(), name, format, buffer_size, None),
        frame_offset,
        num_frames,
        name,
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
