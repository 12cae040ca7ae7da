"""``VideoReader``: iterate, seek frame-accurately and pick frames from a video file.

The API follows ``torchvision.io.VideoReader`` (an iterator of ``{"data", "pts"}``
dicts, chainable ``seek``, ``get_metadata``, ``set_current_stream``) and adds
random access in the manner of torchcodec (``get_frames_at``,
``get_frames_in_range``) on a frame-pts index built once per stream.

Example:
    >>> import tempfile, torch
    >>> from trivium.vision.io import VideoReader, write_video
    >>> path = tempfile.mkdtemp() + "/ramp.mp4"
    >>> frames = torch.arange(10, dtype=torch.uint8).mul(25).view(10, 1, 1, 1)
    >>> write_video(path, frames.expand(10, 3, 16, 16), fps=10)
    >>> with VideoReader(path) as reader:
    ...     frame = next(reader.seek(0.25))
    ...     batch = reader.get_frames_at([7, 2])
    >>> frame["pts"], tuple(frame["data"].shape), batch.pts.tolist()
    (0.3, (3, 16, 16), [0.7, 0.2])
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import IO, Any, NamedTuple

import numpy as np
import torch

from trivium.core.errors import DecodeError
from trivium.core.forking import ForkSafe
from trivium.vision.io.video.backend import (
    FrameIndex,
    StreamInfo,
    VideoBackend,
    VideoSource,
    WantedFrames,
    find_stream,
)
from trivium.vision.io.video.buffers import SHARED_POOL
from trivium.vision.io.video.swscale import FrameSizeError

__all__ = ["VideoFrames", "VideoReader", "open_backend"]

BACKENDS = ("pyav", "ffmpeg")


class VideoFrames(NamedTuple):
    """Frames ``[T, C, H, W]`` (uint8) and their pts in seconds (float64 ``[T]``).

    Decoded batches are channels-last in memory: a view of ``[T, H, W, C]``, as the
    decoder writes pixels (``data.contiguous()`` gives NCHW memory).

    Example:
        >>> frames, pts = VideoFrames(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.zeros(2))
        >>> frames.shape[0] == pts.shape[0]
        True
    """

    data: torch.Tensor
    pts: torch.Tensor


def open_backend(src: VideoSource, backend: str = "pyav", num_threads: int = 0) -> VideoBackend:
    """Open ``src`` with the named backend (``"pyav"`` or ``"ffmpeg"``).

    Example:
        >>> open_backend(b"x", backend="gstreamer")
        Traceback (most recent call last):
        ...
        ValueError: backend must be one of ('pyav', 'ffmpeg'), got 'gstreamer'
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if not isinstance(num_threads, int) or num_threads < 0:
        raise ValueError(f"num_threads must be an int >= 0, got {num_threads!r}")
    if backend == "pyav":
        from trivium.vision.io.video.pyav import PyAVBackend

        return PyAVBackend(src, num_threads)
    from trivium.vision.io.video.ffmpeg import FFmpegBackend

    return FFmpegBackend(src, num_threads)


class VideoReader(ForkSafe):
    """Iterate over one stream of a video, as ``torchvision.io.VideoReader``.

    Each step yields ``{"data": tensor, "pts": seconds}``: video frames as uint8
    ``[C, H, W]`` RGB, audio frames as float32 ``[channels, samples]`` in [-1, 1].
    ``src`` is a path or, with ``backend="pyav"``, encoded bytes or a binary file
    object. ``stream`` is ``"video"``, ``"audio"`` or ``"kind:N"``. ``num_threads``
    is the decoder's thread count (0: FFmpeg decides; with the PyAV backend, one per
    CPU where the first frames read are picked by ``get_frames_at`` or
    ``get_frames_in_range``).

    The reader holds at most a few decoded frames at a time, closes with ``close()``
    or a ``with`` block, and pickles as its source, stream and position (a
    DataLoader worker re-opens the file and carries on from there). It is fork-safe:
    in a forked worker it leaves the parent's decoder (container or ffmpeg process)
    alone, opens its own and carries on from the same position.

    Example:
        >>> import tempfile, torch
        >>> from trivium.vision.io import write_video
        >>> path = tempfile.mkdtemp() + "/grey.mp4"
        >>> write_video(path, torch.full((5, 3, 8, 8), 100, dtype=torch.uint8), fps=5)
        >>> reader = VideoReader(path)
        >>> [round(f["pts"], 2) for f in reader]
        [0.0, 0.2, 0.4, 0.6, 0.8]
        >>> reader.get_metadata()["video"]["fps"]
        [5.0]
        >>> reader.close()
    """

    # The frame iterator runs on the parent's decoder: a forked child drops it (the
    # backend reopens itself) and goes on from ``_start``.
    _fork_handles = ("_iterator",)

    def __init__(
        self,
        src: VideoSource,
        stream: str = "video",
        *,
        backend: str = "pyav",
        num_threads: int = 0,
    ) -> None:
        self._src = src
        self._backend_name = backend
        self._num_threads = num_threads
        self._backend: VideoBackend | None = open_backend(src, backend, num_threads)
        self._stream = find_stream(self._backend.streams, stream, self._backend.path)
        self._iterator: Any = None
        self._start: int | None = None  # pts (ticks) the next iteration starts from
        self._exact = True
        self._skip_below: int | None = None  # frames before this pts are dropped (a seek ahead)

    # ------------------------------------------------------------------ state

    @property
    def backend(self) -> VideoBackend:
        """The open backend; ValueError once the reader is closed."""
        if self._backend is None:
            raise ValueError("I/O operation on a closed VideoReader")
        return self._backend

    @property
    def path(self) -> str | None:
        """The file being read (None for bytes or an unnamed file object)."""
        return self.backend.path

    @property
    def stream(self) -> StreamInfo:
        """The current stream's description (kind, codec, time base, size...)."""
        return self._stream

    def set_current_stream(self, stream: str) -> bool:
        """Switch to another stream (``"audio"``, ``"video:1"``...) and rewind to its start.

        Returns True as torchvision's does; a missing stream raises ValueError.

        Example:
            >>> import tempfile, torch
            >>> from trivium.vision.io import write_video
            >>> path = tempfile.mkdtemp() + "/silent.mp4"
            >>> write_video(path, torch.zeros(2, 3, 8, 8, dtype=torch.uint8), fps=2)
            >>> try:
            ...     VideoReader(path).set_current_stream("audio")
            ... except ValueError as e:
            ...     print(str(e).split(": ", 1)[1])
            no audio:0 stream (streams: video:0)
        """
        self._stream = find_stream(self.backend.streams, stream, self.backend.path)
        self._reset(None, True)
        return True

    def _reset(self, start: int | None, exact: bool) -> None:
        if self._iterator is not None:
            self._iterator.close()
        self._iterator, self._start, self._exact = None, start, exact
        self._skip_below = None

    # -------------------------------------------------------------- iteration

    def __iter__(self) -> VideoReader:
        return self

    def __next__(self) -> dict[str, Any]:
        if self._iterator is None:
            if not self._exact and self._past_end(self._start):
                raise StopIteration  # a keyframe seek would land on the last keyframe
            self._iterator = self.backend.frames(self._stream, self._start, self._exact)
        convert, ticks = next(self._iterator)
        while self._skip_below is not None and ticks < self._skip_below:
            convert, ticks = next(self._iterator)  # before the seek target: not converted
        self._skip_below = None
        data = convert()
        # Where a re-opened (unpickled) reader resumes: just after this frame.
        self._start, self._exact = ticks + 1, True
        return {"data": data, "pts": self._stream.seconds(ticks)}

    def _past_end(self, start: int | None) -> bool:
        if start is None or self._stream.kind != "video":
            return False
        index = self.backend.frame_index(self._stream)
        return not len(index) or start > index.pts[-1]

    def seek(self, time_s: float, keyframes_only: bool = False) -> VideoReader:
        """Make the next frame the first whose pts is at or after ``time_s`` seconds.

        With ``keyframes_only=True`` it starts at the keyframe at or before
        ``time_s`` instead: no decoding of frames in between, so faster, but not
        frame-accurate. For audio it starts at the frame that holds ``time_s``.
        Seeking past the end gives an empty iteration. Returns the reader.

        A frame-accurate seek a little ahead of the frame iteration would give next,
        with no keyframe in between, decodes on to it instead of seeking back to the
        keyframe: no decoder flush, and no frame decoded twice.

        Example:
            >>> import tempfile, torch
            >>> from trivium.vision.io import write_video
            >>> path = tempfile.mkdtemp() + "/grey.mp4"
            >>> write_video(path, torch.zeros(4, 3, 8, 8, dtype=torch.uint8), fps=4)
            >>> [f["pts"] for f in VideoReader(path).seek(0.3)], list(VideoReader(path).seek(9))
            ([0.5, 0.75], [])
        """
        time_s = float(time_s)
        if time_s != time_s:  # NaN
            raise ValueError("seek time must be a number, got NaN")
        if keyframes_only:  # the keyframe at or before time_s: the tick at or before it
            self._reset(self._stream.ticks_before(time_s), False)
            return self
        target = self._stream.ticks(time_s)
        if self._decodes_on_to(target):
            self._start, self._skip_below = target, target
            return self
        self._reset(target, True)
        return self

    def _decodes_on_to(self, target: int) -> bool:
        """Whether the running iteration reaches video pts ``target`` cheaper than a seek.

        A seek decodes the reference frames from the keyframe before the target on;
        going on decodes every frame from the next one. Going on wins when no keyframe
        lies between and the frames to go are at most as many as those already decoded
        since the last keyframe.
        """
        if self._iterator is None or self._stream.kind != "video" or self._start is None:
            return False
        index = self.backend.frame_index(self._stream)
        following = index.position_of(self._start)  # the frame iteration gives next
        position = index.position_of(target)
        if not index.timed or not following <= position < len(index):
            return False
        if index.keyframe_between(following, position):
            return False
        return position - following <= following - index.keyframe_before(following)

    # --------------------------------------------------------- random access

    def _video_index(self, what: str) -> FrameIndex:
        if self._stream.kind != "video":
            raise ValueError(
                f"{what} reads video frames; the current stream is {self._stream.name}"
            )
        return self.backend.frame_index(self._stream)

    def get_frames_at(self, indices: Any) -> VideoFrames:
        """The frames at the given positions (0-based, negative from the end), in that order.

        Positions are sorted and deduplicated first; the reader decodes forward
        through them and seeks only when a keyframe lies between the next frame it
        would decode and the next wanted one. The sequential position is kept.

        Example:
            >>> import tempfile, torch
            >>> from trivium.vision.io import write_video
            >>> path = tempfile.mkdtemp() + "/grey.mp4"
            >>> write_video(path, torch.zeros(6, 3, 8, 8, dtype=torch.uint8), fps=2)
            >>> frames, pts = VideoReader(path).get_frames_at([5, 0, 5])
            >>> tuple(frames.shape), pts.tolist()
            ((3, 3, 8, 8), [2.5, 0.0, 2.5])
        """
        index = self._video_index("get_frames_at")
        positions = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = len(index)
        if positions.size and (positions.min() < -n or positions.max() >= n):
            bad = positions[(positions < -n) | (positions >= n)][0]
            raise IndexError(f"frame index {int(bad)} out of range for a video of {n} frames")
        positions = np.where(positions < 0, positions + n, positions)
        return VideoFrames(self._decode_positions(index, positions), self._pts(index, positions))

    def get_frames_in_range(self, start_s: float, end_s: float) -> VideoFrames:
        """The frames whose pts lie in ``[start_s, end_s)`` seconds, decoded in one pass.

        Example:
            >>> import tempfile, torch
            >>> from trivium.vision.io import write_video
            >>> path = tempfile.mkdtemp() + "/grey.mp4"
            >>> write_video(path, torch.zeros(6, 3, 8, 8, dtype=torch.uint8), fps=2)
            >>> VideoReader(path).get_frames_in_range(1.0, 2.5).pts.tolist()
            [1.0, 1.5, 2.0]
        """
        if end_s < start_s:
            raise ValueError(f"end_s ({end_s}) must not be before start_s ({start_s})")
        index = self._video_index("get_frames_in_range")
        first, last = index.position_at(start_s), index.position_at(end_s)
        positions = np.arange(first, last, dtype=np.int64)
        return VideoFrames(self._decode_positions(index, positions), self._pts(index, positions))

    def _decode_positions(self, index: FrameIndex, positions: np.ndarray) -> torch.Tensor:
        """The frames at ``positions`` (any order, repeats allowed) as ``[T, C, H, W]``.

        The batch is channels-last (a ``[T, H, W, C]`` buffer seen as ``[T, C, H, W]``;
        from the shared pool of released buffers, so that its pages are not faulted in
        afresh), and each decoded frame is converted straight into its row (the first frame
        sizes the batch, so it is converted first and copied); a frame wanted at more
        than one position is copied to the others. Copies are NumPy's, on this thread:
        torch's would split them over intra-op threads, which only wait on busy cores.
        """
        wanted, inverse = np.unique(positions, return_inverse=True)
        rows: list[list[int]] = [[] for _ in range(len(wanted))]
        for row, unique in enumerate(inverse.reshape(-1).tolist()):
            rows[unique].append(row)
        batch: np.ndarray | None = None
        with contextlib.closing(self._decode_sorted(index, wanted)) as frames:
            for unique, convert in enumerate(frames):
                first, *others = rows[unique]
                if batch is None:
                    hwc = convert().permute(1, 2, 0).numpy()
                    batch = SHARED_POOL.take((len(positions), *hwc.shape))
                    np.copyto(batch[first], hwc)
                else:
                    try:
                        convert(batch[first])
                    except FrameSizeError as e:
                        raise DecodeError(str(e), path=self.path) from None
                for row in others:
                    np.copyto(batch[row], batch[first])
        if batch is None:
            s = self._stream
            return torch.empty((0, 3, s.height or 0, s.width or 0), dtype=torch.uint8)
        return torch.from_numpy(batch).permute(0, 3, 1, 2)

    def _decode_sorted(self, index: FrameIndex, wanted: np.ndarray) -> Iterator[Any]:
        """The frames at sorted, unique ``wanted`` positions, in that order, unconverted.

        Each is a ``convert`` callable (see :class:`VideoBackend`) to call before the
        next one is asked for.

        The reader decodes forward through them and seeks only when a keyframe lies
        between the next frame it would decode and the next wanted one; frames in
        between that nothing references may be left undecoded (``wanted`` of
        :meth:`VideoBackend.frames`). Each run from a seek is told its last wanted frame,
        so the backend reads no packet past it.
        """
        ends = _run_ends(index, wanted)
        frames, next_position = None, 0
        try:
            for i, target in enumerate(wanted.tolist()):
                restart = (
                    frames is None
                    or target < next_position
                    or index.keyframe_between(next_position, target)
                )
                for _ in range(2):
                    if restart:
                        if frames is not None:
                            frames.close()
                        run = _run_from(index, wanted[i : ends[i] + 1])
                        frames = self.backend.frames(
                            self._stream, int(index.pts[target]), True, run
                        )
                        next_position = target
                    found, next_position = _decode_to(frames, index, target, next_position)
                    if found is not None or restart:
                        break
                    restart = True  # the run ended before it (a frame stood in for another)
                if found is None:
                    raise DecodeError(
                        f"frame {target} (of {len(index)}) could not be decoded", path=self.path
                    )
                yield found
        finally:
            if frames is not None:
                frames.close()
            # The sequential iterator shared the decoder: restart it where it was.
            self._reset(self._start, self._exact)

    @staticmethod
    def _pts(index: FrameIndex, positions: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.asarray(index.seconds(positions), dtype=np.float64).reshape(-1))

    # ---------------------------------------------------------------- metadata

    def get_metadata(self) -> dict[str, dict[str, list[Any]]]:
        """Per-kind lists (one entry per stream), shaped like torchvision's.

        ``video``: duration (s), fps, num_frames, width, height, codec; ``audio``:
        duration, framerate (= sample rate, torchvision's key), sample_rate,
        channels, codec. ``num_frames`` is exact: the number of frames iteration
        gives, as many as the positions :meth:`get_frames_at` takes. It is the
        container's count where that counts the frames, else the frame index's
        (built once: by demuxing, or for an AVI with B-frames, whose packets are not
        its frames, by decoding the stream).

        Example:
            >>> import tempfile, torch
            >>> from trivium.vision.io import write_video
            >>> path = tempfile.mkdtemp() + "/grey.mp4"
            >>> write_video(path, torch.zeros(3, 3, 8, 12, dtype=torch.uint8), fps=3)
            >>> meta = VideoReader(path).get_metadata()["video"]
            >>> meta["num_frames"], meta["width"], meta["height"], meta["codec"]
            ([3], [12], [8], ['h264'])
        """
        meta: dict[str, dict[str, list[Any]]] = {}
        for s in self.backend.streams:
            entry = meta.setdefault(s.kind, {})
            if s.kind == "video":
                num_frames = s.num_frames or len(self.backend.frame_index(s))
                duration = s.duration
                if duration is None and num_frames and s.fps:
                    duration = num_frames / s.fps
                fields = {
                    "duration": duration,
                    "fps": s.fps,
                    "num_frames": num_frames,
                    "width": s.width,
                    "height": s.height,
                    "codec": s.codec,
                }
            else:
                fields = {
                    "duration": s.duration,
                    "framerate": float(s.sample_rate or 0),
                    "sample_rate": s.sample_rate,
                    "channels": s.channels,
                    "codec": s.codec,
                }
            for key, value in fields.items():
                entry.setdefault(key, []).append(value)
        return meta

    # --------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Stop decoding and release the file (and any ffmpeg process)."""
        if self._iterator is not None:
            self._iterator.close()
            self._iterator = None
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown
            self.close()

    def __getstate__(self) -> dict[str, Any]:
        src = self._src
        if not isinstance(src, str | os.PathLike | bytes | bytearray):
            src = _file_bytes(src)
        return {
            "src": src,
            "stream": self._stream.name,
            "backend": self._backend_name,
            "num_threads": self._num_threads,
            "start": self._start,
            "exact": self._exact,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["src"],
            state["stream"],
            backend=state["backend"],
            num_threads=state["num_threads"],
        )
        self._start, self._exact = state["start"], state["exact"]

    def __repr__(self) -> str:
        where = self._backend.path if self._backend is not None else "closed"
        return (
            f"VideoReader({where!r}, stream={self._stream.name!r}, backend={self._backend_name!r})"
        )


def _run_ends(index: FrameIndex, wanted: np.ndarray) -> np.ndarray:
    """For each of the sorted, unique ``wanted`` positions, the last one of its decode run.

    A run goes on from one wanted frame to the next unless a keyframe lies after the
    frame following it, up to the next (where :meth:`VideoReader._decode_sorted` seeks);
    the result indexes ``wanted``.

    Example:
        >>> from fractions import Fraction
        >>> index = FrameIndex(np.arange(10), np.array([0, 5]), Fraction(1, 10))
        >>> _run_ends(index, np.array([1, 3, 6, 8])).tolist()
        [1, 1, 3, 3]
    """
    if not len(wanted):
        return np.zeros(0, np.int64)
    keys = index.keyframes
    after = np.searchsorted(keys, wanted[:-1] + 1, "right")  # keyframes up to the next frame
    seeks = np.searchsorted(keys, wanted[1:], "right") > after
    starts = np.flatnonzero(np.concatenate(([True], seeks)))
    run_last = np.append(starts[1:] - 1, len(wanted) - 1)
    return run_last[np.searchsorted(starts, np.arange(len(wanted)), "right") - 1]


def _run_from(index: FrameIndex, positions: np.ndarray) -> WantedFrames:
    """The frames one decode run is for: those at ``positions``, the last of them its end."""
    pts = index.pts[positions]
    return WantedFrames(frozenset(pts.tolist()), int(pts[-1]))


def _decode_to(
    frames: Iterator[Any], index: FrameIndex, target: int, next_position: int
) -> tuple[Any, int]:
    """Decode on to position ``target``: its ``convert`` (None if the frames ran out).

    Returns it with the position of the frame the iterator gives next.
    """
    found = None
    while next_position <= target:
        convert, ticks = next(frames, (None, None))
        if convert is None:
            break
        next_position = index.position_of(ticks) + 1
        if next_position > target:  # this frame is the target (or stands in for it)
            found = convert
    return found, next_position


def _file_bytes(src: IO[bytes] | memoryview) -> bytes:
    """The whole content of a file object (to pickle a reader opened on one)."""
    if isinstance(src, memoryview):
        return src.tobytes()
    if not hasattr(src, "seek"):
        raise TypeError("a VideoReader on a non-seekable file object cannot be pickled")
    position = src.tell()
    src.seek(0)
    try:
        return src.read()
    finally:
        src.seek(position)
