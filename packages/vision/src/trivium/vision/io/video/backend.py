"""What the video backends share: stream descriptions, the frame-pts index, the backend
interface, stream selection and the lazy import of the optional video dependencies.

A backend opens one source and knows its streams; it builds a :class:`FrameIndex`
(every frame's pts, sorted, and the keyframe positions) once per stream, and decodes
frames from a timestamp on. Everything else (seeking rules, random access, batching)
lives in :class:`~trivium.vision.io.VideoReader` and is the same for every backend.

Example:
    >>> import numpy as np
    >>> from fractions import Fraction
    >>> index = FrameIndex(np.array([0, 512, 1024]), np.array([0]), Fraction(1, 12800))
    >>> index.seconds(2), index.position_at(0.03)
    (0.08, 1)
"""

from __future__ import annotations

import math
import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from types import ModuleType
from typing import IO, Any, TypeAlias

import numpy as np
import torch

from trivium.core import sources
from trivium.core.sources import source_name as source_name  # re-exported for the backends

#: A decoded frame not yet converted (call it for the tensor; a video frame's takes an
#: optional ``[H, W, 3]`` uint8 array to write its pixels into) and its pts in ticks.
Frame: TypeAlias = tuple[Callable[..., torch.Tensor], int]

#: Where a video comes from: a path, or (PyAV backend only) encoded bytes or a binary file object.
VideoSource: TypeAlias = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]

_INSTALL_HINT = "video support needs the 'video' extra: pip install 'trivium-vision[video]'"

# Seek targets are converted to ticks with this slack (a thousandth of a tick), so that
# t = k / fps as a float still lands on frame k and not on k + 1.
_TICK_SLACK = 1e-3


def import_optional(name: str) -> ModuleType:
    """Import an optional video dependency (``av``, ``ffmpeg``, ``imageio_ffmpeg``).

    Example:
        >>> import_optional("av").__name__
        'av'
    """
    try:
        return __import__(name)
    except ImportError as e:
        raise ImportError(f"{name} is not installed; {_INSTALL_HINT}") from e


def check_source(src: VideoSource) -> VideoSource:
    """Validate ``src``: an existing file path, non-empty bytes or a readable file object.

    :func:`trivium.core.sources.check_source` for a video source (the Errors table's
    exceptions and messages).

    Example:
        >>> check_source(b"x")
        b'x'
        >>> check_source(b"")
        Traceback (most recent call last):
        ...
        trivium.core.errors.EmptyInputError: empty input (0 bytes)
    """
    return sources.check_source(src, "video")


class StreamNotFoundError(ValueError):
    """The container has no stream of the kind and index asked for.

    Example:
        >>> isinstance(StreamNotFoundError("no audio:0 stream"), ValueError)
        True
    """


@dataclass(frozen=True)
class StreamInfo:
    """One stream of a container, as a backend sees it.

    ``index`` counts streams of the same ``kind`` (``"video:1"`` is the second video
    stream). ``duration`` is in seconds, None where the container does not say.

    Example:
        >>> s = StreamInfo("video", 0, "h264", Fraction(1, 25), 2.0, fps=25.0, width=8, height=6)
        >>> s.name
        'video:0'
    """

    kind: str
    index: int
    codec: str
    time_base: Fraction
    duration: float | None
    fps: float | None = None
    num_frames: int | None = None
    width: int | None = None
    height: int | None = None
    sample_rate: int | None = None
    channels: int | None = None

    @property
    def name(self) -> str:
        """``"kind:index"``, the form :meth:`VideoReader.set_current_stream` takes."""
        return f"{self.kind}:{self.index}"

    def ticks(self, seconds: float) -> int:
        """The smallest pts (in ``time_base`` ticks) at or after ``seconds``."""
        return math.ceil(seconds / self.time_base - _TICK_SLACK)

    def ticks_before(self, seconds: float) -> int:
        """The largest pts (in ``time_base`` ticks) at or before ``seconds``."""
        return math.floor(seconds / self.time_base + _TICK_SLACK)

    def seconds(self, ticks: int) -> float:
        """``ticks`` of ``time_base`` in seconds."""
        return ticks * self.time_base.numerator / self.time_base.denominator


@dataclass
class FrameIndex:
    """Every frame's pts (int64 ticks, sorted) and the positions of the keyframes.

    Built once per stream, by demuxing only (no decoding) where the container's
    packets are the frames, or else by decoding every frame once (a scan, see
    :func:`scanned_index`). ``timed`` is False for streams whose frames are found by
    counting from the start: those without timestamps (e.g. some MPEG program
    streams; their pts are synthesised as ``position / fps``), where seeking decodes
    from the start.

    ``decoder_pts`` is set on an index from a scan: the pts the decoder gives each
    frame, in display order (out of order in AVI with B-frames, see
    :func:`scanned_index`). A decoded frame is placed by it
    (:meth:`position_of_decoded`) and reported at ``pts`` of that position.

    Example:
        >>> index = FrameIndex(np.array([0, 40, 80]), np.array([0, 2]), Fraction(1, 1000))
        >>> len(index), index.position_at(0.041), index.keyframe_between(0, 2)
        (3, 2, True)
    """

    pts: np.ndarray
    keyframes: np.ndarray
    time_base: Fraction
    timed: bool = True
    decoder_pts: np.ndarray | None = None
    _decoded_positions: dict[int, int] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __len__(self) -> int:
        return len(self.pts)

    def position_of_decoded(self, ticks: int | None) -> int | None:
        """Position of the frame the decoder reports with pts ``ticks`` (None: no such frame).

        Only for an index from a scan (``decoder_pts`` set).

        Example:
            >>> index = scanned_index([1, 3, 2], [True, False, False], Fraction(1, 25), 25.0)
            >>> index.pts.tolist(), index.position_of_decoded(3), index.position_of_decoded(7)
            ([1, 2, 3], 1, None)
        """
        if self._decoded_positions is None:
            assert self.decoder_pts is not None, "not an index from a scan"
            self._decoded_positions = {int(t): i for i, t in enumerate(self.decoder_pts.tolist())}
        return None if ticks is None else self._decoded_positions.get(ticks)

    def seek_ticks(self, position: int) -> int:
        """The pts to give the demuxer's seek for the frame at ``position`` (a keyframe).

        That is the pts its packet carries: for an index from a scan, the decoder's.
        """
        source = self.pts if self.decoder_pts is None else self.decoder_pts
        return int(source[position])

    def seconds(self, position: int | np.ndarray) -> Any:
        """The pts of the frame(s) at ``position`` in seconds."""
        tb = self.time_base
        values = self.pts[position] * tb.numerator / tb.denominator
        return float(values) if np.ndim(values) == 0 else values

    def position_at(self, seconds: float) -> int:
        """Position of the first frame whose pts is at or after ``seconds`` (len if none)."""
        ticks = math.ceil(seconds / self.time_base - _TICK_SLACK)
        return int(np.searchsorted(self.pts, ticks, side="left"))

    def position_of(self, ticks: int) -> int:
        """Position of the frame with pts ``ticks`` (or of the next one)."""
        return int(np.searchsorted(self.pts, ticks, side="left"))

    def keyframe_between(self, after: int, upto: int) -> bool:
        """Whether a keyframe lies at a position in ``(after, upto]``."""
        k = self.keyframes
        return bool(np.searchsorted(k, upto, "right") > np.searchsorted(k, after, "right"))

    def keyframe_before(self, position: int) -> int:
        """The position of the last keyframe at or before ``position`` (0 if none)."""
        i = int(np.searchsorted(self.keyframes, position, side="right")) - 1
        return int(self.keyframes[i]) if i >= 0 else 0


@dataclass(frozen=True)
class WantedFrames:
    """The video pts a caller will convert, and the last one it needs from one decode run.

    Called with a pts, it says whether that frame is wanted (the ``wanted`` of
    :meth:`VideoBackend.frames`). ``last`` (ticks, None: unknown) is the last wanted
    pts before the caller seeks again or stops: a backend may stop reading packets
    once every wanted frame up to it has been sent to the decoder, and drain the
    decoder instead of decoding frames past it.

    Example:
        >>> wanted = WantedFrames(frozenset({40, 80, 200}), last=80)
        >>> wanted(80), wanted(120), wanted.up_to(40)
        (True, False, {40, 80})
    """

    pts: frozenset[int]
    last: int | None = None

    def __call__(self, pts: int) -> bool:
        return pts in self.pts

    def up_to(self, start: int) -> set[int] | None:
        """The wanted pts in ``[start, last]`` (None when ``last`` is unknown)."""
        if self.last is None:
            return None
        return {pts for pts in self.pts if start <= pts <= self.last}


def build_index(
    pts: list[int | None], keys: list[bool], time_base: Fraction, fps: float | None
) -> FrameIndex:
    """A :class:`FrameIndex` from demuxed packets' pts and keyframe flags (in file order).

    Example:
        >>> build_index([0, 80, 40], [True, False, False], Fraction(1, 1000), 25.0).pts
        array([ 0, 40, 80])
    """
    n = len(pts)
    if n and all(p is not None for p in pts):
        values = np.asarray(pts, dtype=np.int64)
        order = np.argsort(values, kind="stable")
        keyframes = np.flatnonzero(np.asarray(keys, dtype=bool)[order]).astype(np.int32)
        return FrameIndex(values[order], keyframes, time_base)
    return _untimed_index(n, time_base, fps)


def _untimed_index(n: int, time_base: Fraction, fps: float | None) -> FrameIndex:
    """``n`` frames found by counting from the start, at ``position / fps``."""
    step = max(1, round(1 / ((fps or 1.0) * time_base)))
    return FrameIndex(np.arange(n, dtype=np.int64) * step, np.zeros(1, np.int32), time_base, False)


def scanned_index(
    pts: list[int | None], keys: list[bool], time_base: Fraction, fps: float | None
) -> FrameIndex:
    """A :class:`FrameIndex` from decoding every frame: their pts and key flags, as decoded.

    For containers whose packets are not the frames. An AVI keeps no presentation
    times, and MPEG-4 Part 2 there often "packs" B-frames (DivX, Xvid: the files of
    UCF101 and HMDB51): one packet holds a P-frame and the B-frame shown before it,
    and the next packet is a placeholder (or, at the start, a one-byte packet that
    gives no frame at all). FFmpeg gives each decoded frame the pts of the packet
    its decoding started from, so the B-frame gets the placeholder's and the P-frame
    the one before: decoded in display order, the pts come out pairwise swapped (and
    other codecs with B-frames in AVI, H.264 say, get packet pts in decode order). The
    frame at position ``i`` (the ``i``-th the decoder gives) is reported at the
    ``i``-th smallest of these pts: the times the decoder gives, rising in display
    order. Where some frame has no pts, or two share one, frames are found by
    counting from the start (``timed`` False) at ``position / fps``.

    Example:
        >>> index = scanned_index([1, 3, 5, 4], [True, False, False, False], Fraction(1, 30), 30.0)
        >>> index.pts.tolist(), index.decoder_pts.tolist(), index.keyframes.tolist()
        ([1, 3, 4, 5], [1, 3, 5, 4], [0])
    """
    keyframes = np.flatnonzero(np.asarray(keys, dtype=bool)).astype(np.int32)
    if None in pts or len(set(pts)) != len(pts):
        index = _untimed_index(len(pts), time_base, fps)
        index.keyframes = keyframes if len(keyframes) else index.keyframes
        return index
    decoded = np.asarray(pts, dtype=np.int64)
    return FrameIndex(np.sort(decoded), keyframes, time_base, True, decoded)


class FrameIndexCache:
    """Frame indexes of files this process has read, so that a new reader skips the demux.

    Keyed by the path, the backend, the stream and the file's identity (device, inode,
    size, modification time in ns): a file changed or replaced under the same path is
    indexed again. Least recently used indexes go first once more than ``max_frames``
    frames are held (8 to 20 bytes a frame). The index arrays are read-only, since every
    reader of the file shares them. Thread-safe.

    Example:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/a.bin"
        >>> _ = open(path, "wb").write(b"x")
        >>> cache = FrameIndexCache(max_frames=10)
        >>> built = []
        >>> def build():
        ...     built.append(1)
        ...     return FrameIndex(np.array([0, 1]), np.array([0]), Fraction(1, 25))
        >>> a = cache.get_or_build(path, "pyav", "video:0", build)
        >>> b = cache.get_or_build(path, "pyav", "video:0", build)
        >>> a is b, len(built), a.pts.flags.writeable
        (True, 1, False)
    """

    def __init__(self, max_frames: int) -> None:
        self.max_frames = max_frames
        self._indexes: OrderedDict[tuple[Any, ...], FrameIndex] = OrderedDict()
        self._frames = 0
        self._lock = threading.Lock()
        # A fork while another thread holds the lock would leave it held in the child.
        os.register_at_fork(after_in_child=self._new_lock)

    def _new_lock(self) -> None:
        self._lock = threading.Lock()

    def get_or_build(
        self, path: str | None, backend: str, stream: str, build: Callable[[], FrameIndex]
    ) -> FrameIndex:
        """The index kept for this file and stream, else ``build()`` (kept for next time).

        ``path`` None (bytes, a file object) builds without caching.
        """
        key = self._key(path, backend, stream)
        if key is None:
            return build()
        with self._lock:
            index = self._indexes.get(key)
            if index is not None:
                self._indexes.move_to_end(key)
                return index
        index = build()  # outside the lock: demuxing a file takes a while
        for array in (index.pts, index.keyframes, index.decoder_pts):
            if array is not None:
                array.setflags(write=False)
        with self._lock:
            if key not in self._indexes and len(index) <= self.max_frames:
                self._indexes[key] = index
                self._frames += len(index)
                while self._frames > self.max_frames:
                    _, dropped = self._indexes.popitem(last=False)
                    self._frames -= len(dropped)
        return index

    @staticmethod
    def _key(path: str | None, backend: str, stream: str) -> tuple[Any, ...] | None:
        if path is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        return path, backend, stream, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns

    def clear(self) -> None:
        """Forget every index."""
        with self._lock:
            self._indexes.clear()
            self._frames = 0


#: The process's frame-index cache (a few million frames: hours of video).
INDEX_CACHE = FrameIndexCache(max_frames=4_000_000)


def frame_step(stream: StreamInfo) -> int:
    """Ticks between frames of a stream without timestamps (from its frame rate)."""
    return max(1, round(1 / ((stream.fps or 1.0) * stream.time_base)))


def parse_stream(spec: str) -> tuple[str, int]:
    """``"video"`` / ``"audio:1"`` as ``(kind, index)``; ValueError for anything else.

    Example:
        >>> parse_stream("audio:1"), parse_stream("video")
        (('audio', 1), ('video', 0))
    """
    kind, _, number = str(spec).partition(":")
    if kind not in ("video", "audio") or (number and not number.isdigit()):
        raise ValueError(f"stream must be 'video', 'audio', 'video:N' or 'audio:N', got {spec!r}")
    return kind, int(number or 0)


def find_stream(streams: list[StreamInfo], spec: str, path: str | None) -> StreamInfo:
    """The stream ``spec`` names, or a ValueError naming the file and the streams it has.

    Example:
        >>> s = StreamInfo("video", 0, "vp9", Fraction(1, 1000), None)
        >>> find_stream([s], "video:0", "a.webm").codec
        'vp9'
    """
    kind, index = parse_stream(spec)
    for stream in streams:
        if stream.kind == kind and stream.index == index:
            return stream
    have = ", ".join(s.name for s in streams) or "none"
    where = f"{path}: " if path else ""
    raise StreamNotFoundError(f"{where}no {kind}:{index} stream (streams: {have})")


class VideoBackend(ABC):
    """The small interface :class:`~trivium.vision.io.VideoReader` drives.

    ``frames`` yields ``(convert, pts_ticks)`` where ``convert()`` gives the frame
    (video: uint8 ``[C, H, W]`` RGB, audio: float32 ``[channels, samples]``); frames
    a caller skips are never converted. A video frame's ``convert(out)`` writes the
    pixels into ``out`` (C-contiguous uint8 ``[H, W, 3]``, e.g. a row of a batch) and
    returns a ``[C, H, W]`` view of it. With ``exact=True`` it starts at the first frame
    whose pts is at or after ``start`` (audio: the frame holding ``start``); with
    ``exact=False`` at the keyframe before it. At most a few decoded frames are held.

    Example:
        >>> sorted(VideoBackend.__abstractmethods__)
        ['close', 'frame_index', 'frames']
    """

    name: str
    path: str | None
    streams: list[StreamInfo]
    _indexes: dict[str, FrameIndex]

    @abstractmethod
    def frame_index(self, stream: StreamInfo) -> FrameIndex:
        """The stream's frame index, built on first use and kept."""

    @abstractmethod
    def frames(
        self,
        stream: StreamInfo,
        start: int | None,
        exact: bool,
        wanted: Callable[[int], bool] | None = None,
    ) -> Iterator[Frame]:
        """Decoded frames of ``stream`` from pts ``start`` (ticks; None: the beginning).

        ``wanted`` (exact only) tells which pts the caller will convert: a backend may
        leave out frames it rejects, where no other frame needs them decoded. A
        :class:`WantedFrames` also says the last pts the caller needs before it seeks
        again or stops, after which a backend may stop reading packets.
        """

    def _cached_index(
        self, stream: StreamInfo, path: str | None, read: Callable[[StreamInfo], FrameIndex]
    ) -> FrameIndex:
        """``stream``'s index: this backend's, else an earlier reader's of ``path``, else read.

        ``read(stream)`` runs once per file in a process (see :class:`FrameIndexCache`;
        a ``path`` of None, a source that is not a file, is not shared).
        """
        if stream.name not in self._indexes:
            self._indexes[stream.name] = INDEX_CACHE.get_or_build(
                path, self.name, stream.name, partial(read, stream)
            )
        return self._indexes[stream.name]

    def use_frame_index(self, stream: StreamInfo, index: FrameIndex) -> None:
        """Take ``index`` (e.g. from a saved cache) as the stream's index: no demuxing."""
        self._indexes[stream.name] = index

    @abstractmethod
    def close(self) -> None:
        """Release the container / kill any decoder process. Safe to call twice."""
