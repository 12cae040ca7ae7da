"""The in-process video backend, on PyAV (the FFmpeg libraries).

Example:
    >>> import tempfile, torch
    >>> from trivium.vision.io import write_video
    >>> path = tempfile.mkdtemp() + "/grey.mp4"
    >>> write_video(path, torch.full((4, 3, 16, 16), 128, dtype=torch.uint8), fps=8)
    >>> backend = PyAVBackend(path)
    >>> [s.name for s in backend.streams], len(backend.frame_index(backend.streams[0]))
    (['video:0'], 4)
    >>> backend.close()
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import torch

from trivium.core.errors import DecodeError, PathNotFoundError
from trivium.core.forking import ForkSafe, own_file
from trivium.vision.io.video.backend import (
    Frame,
    FrameIndex,
    StreamInfo,
    VideoBackend,
    VideoSource,
    WantedFrames,
    build_index,
    check_source,
    frame_step,
    import_optional,
    scanned_index,
    source_name,
)
from trivium.vision.io.video.swscale import RGBConverter

# Decoders that honour ``skip_frame`` packet by packet and only drop frames that no
# other frame references with it set to NONREF (checked against full decodes in tests).
_SKIP_FRAME_CODECS = frozenset({"h264", "hevc", "mpeg1video", "mpeg2video", "mpeg4", "vp8", "vp9"})

# Containers that keep no presentation times (a packet's time is its place in the file)
# and whose frame counts count packets (placeholders, dropped frames), not frames: AVI.
# Their frame count comes from the frame index; a video stream with B-frames, whose
# packets are not one frame each (MPEG-4 Part 2 in AVI packs them: UCF101, HMDB51), is
# indexed by decoding it once (``scanned_index``), and its frames are placed by the pts
# the decoder gives them.
_PACKET_CLOCK_FORMATS = frozenset({"avi"})

# Integer sample formats and the divisor that maps them to [-1, 1].
_INT_SCALE = {"u8": 128.0, "s16": 32768.0, "s32": 2147483648.0, "s64": 9.223372036854776e18}


@contextmanager
def av_errors(path: str | None) -> Iterator[None]:
    """Turn PyAV/FFmpeg failures into :class:`DecodeError` naming the file."""
    av = import_optional("av")
    try:
        yield
    except av.error.FileNotFoundError as e:
        raise PathNotFoundError(path=path) from e
    except av.error.FFmpegError as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise DecodeError(f"cannot decode video: {reason}", path=path) from e


def audio_to_tensor(frame: Any) -> torch.Tensor:
    """An audio frame as float32 ``[channels, samples]`` in [-1, 1].

    Example:
        >>> import av, numpy as np
        >>> f = av.AudioFrame.from_ndarray(np.array([[0, 16384, -32768]], np.int16), "s16", "mono")
        >>> audio_to_tensor(f)
        tensor([[ 0.0000,  0.5000, -1.0000]])
    """
    array = frame.to_ndarray()
    fmt = frame.format
    channels = len(frame.layout.channels)
    if not fmt.is_planar:  # interleaved: (1, samples * channels)
        array = array.reshape(-1, channels).T
    base = fmt.name.rstrip("p")
    if base in _INT_SCALE:
        offset = 128.0 if base == "u8" else 0.0
        array = (array.astype(np.float32) - offset) / np.float32(_INT_SCALE[base])
    return torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))


def video_to_tensor(
    frame: Any, converter: RGBConverter | None = None, out: np.ndarray | None = None
) -> torch.Tensor:
    """A video frame as uint8 ``[C, H, W]`` RGB (a view of ``[H, W, 3]`` pixels).

    Pass one :class:`~trivium.vision.io.video.swscale.RGBConverter` for every frame of
    a stream: its swscale context is set up once and converts on this thread, into
    ``out`` (a C-contiguous ``[H, W, 3]`` uint8 array, e.g. a row of a batch) or a
    buffer it reuses. ``frame.to_ndarray(format=...)`` makes a fresh context per frame
    that starts and joins a pool of scaler threads each time, which at 360p costs
    more than decoding the frame. The pixels are the same either way.

    Example:
        >>> import av, numpy as np
        >>> frame = av.VideoFrame.from_ndarray(np.full((4, 6, 3), 200, np.uint8), "rgb24")
        >>> frame = frame.reformat(format="yuv420p")
        >>> rgb = video_to_tensor(frame, RGBConverter())
        >>> tuple(rgb.shape), torch.equal(rgb, video_to_tensor(frame))
        ((3, 4, 6), True)
        >>> np.array_equal(rgb.permute(1, 2, 0).numpy(), frame.to_ndarray(format="rgb24"))
        True
    """
    if converter is None:
        converter = RGBConverter()
    return torch.from_numpy(converter.to_array(frame, out)).permute(2, 0, 1)


def _stream_info(stream: Any, container: Any, index: int) -> StreamInfo:
    """``stream`` described (no frame count where the container's counts packets)."""
    time_base = stream.time_base or Fraction(1, 1_000_000)
    duration = None
    if stream.duration:
        duration = float(stream.duration * time_base)
    elif container.duration:
        duration = container.duration / 1_000_000
    codec = stream.codec_context.codec.canonical_name
    if stream.type == "video":
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        return StreamInfo(
            "video",
            index,
            codec,
            time_base,
            duration,
            fps=float(rate) if rate else None,
            num_frames=None if _counts_packets(container) else stream.frames or None,
            width=stream.codec_context.width,
            height=stream.codec_context.height,
        )
    ctx = stream.codec_context
    return StreamInfo(
        "audio",
        index,
        codec,
        time_base,
        duration,
        sample_rate=ctx.sample_rate,
        channels=len(ctx.layout.channels) if ctx.layout else ctx.channels,
    )


class PyAVBackend(ForkSafe, VideoBackend):
    """Decode in this process through PyAV; ``src`` is a path, bytes or a file object.

    ``num_threads`` is the decoder's thread count (0: FFmpeg picks, or one per CPU for a
    decoder whose first use is random access, see :func:`random_access_threads`).
    Fork-safe: a forked child leaves the parent's container alone (closing it would
    wait on decoder threads that do not exist there) and opens its own on first use.

    Example:
        >>> import tempfile, torch
        >>> from trivium.vision.io import write_video
        >>> path = tempfile.mkdtemp() + "/grey.mp4"
        >>> write_video(path, torch.zeros(2, 3, 8, 8, dtype=torch.uint8), fps=2)
        >>> backend = PyAVBackend(open(path, "rb").read())
        >>> backend.streams[0].codec, backend.frame_index(backend.streams[0]).timed
        ('h264', True)
        >>> backend.close()
    """

    name = "pyav"
    _fork_handles = ("_container", "_av_streams", "_converter")

    def __init__(self, src: VideoSource, num_threads: int = 0) -> None:
        self._src = check_source(src)
        self.path = source_name(src)
        self._num_threads = num_threads
        self._indexes: dict[str, FrameIndex] = {}
        self._closed = False
        self._converter: RGBConverter | None = None  # one for every frame converted
        container = self._container = self._open()
        self._fresh = True  # nothing demuxed yet
        counts = {"video": 0, "audio": 0}
        self.streams = []
        self._av_streams: dict[str, Any] | None = {}
        self._scanned: set[str] = set()  # indexed by decoding (see _PACKET_CLOCK_FORMATS)
        for stream in container.streams:
            if stream.type in counts:
                info = _stream_info(stream, container, counts[stream.type])
                counts[stream.type] += 1
                self.streams.append(info)
                self._av_streams[info.name] = stream
                if _needs_scan(stream, container):
                    self._scanned.add(info.name)

    def _opened(self) -> Any:
        """The open container: this process's own (opened here after a fork)."""
        if self._closed:
            raise ValueError("I/O operation on a closed video backend")
        if self._container is None:
            self._container = self._open()
            self._av_streams = {
                info.name: self._av_stream_in(self._container, info) for info in self.streams
            }
            self._fresh = True
        return self._container

    def _video_tensor(self, frame: Any, out: np.ndarray | None = None) -> torch.Tensor:
        """A decoded video frame as uint8 ``[C, H, W]`` RGB, in ``out`` (``[H, W, 3]``) if given."""
        if self._converter is None:
            self._converter = RGBConverter()
        return video_to_tensor(frame, self._converter, out)

    def _after_fork(self) -> None:
        super()._after_fork()
        if hasattr(self._src, "read"):
            self._src_from_parent = True

    @staticmethod
    def _check_process(pid: int) -> None:
        """Refuse to go on decoding with a container of process ``pid`` (the parent's)."""
        if os.getpid() != pid:
            raise RuntimeError(
                "a PyAV frame iterator cannot go on in a forked process; start a new one there"
            )

    def _open(self) -> Any:
        av = import_optional("av")
        if self.__dict__.pop("_src_from_parent", False):
            self._src = own_file(self._src)  # the file object's offset is the parent's too
        src = self._src
        if isinstance(src, bytes | bytearray | memoryview):
            src = io.BytesIO(src)
        elif not isinstance(src, str | os.PathLike) and hasattr(src, "seek"):
            src.seek(0)
        elif isinstance(src, os.PathLike):
            src = os.fspath(src)
        with av_errors(self.path):
            container = av.open(src, metadata_errors="ignore")
        for stream in container.streams.video:
            stream.thread_type = "AUTO"
            stream.codec_context.thread_count = self._num_threads
        return container

    def _reopen(self) -> None:
        """A fresh container (for streams that cannot seek back)."""
        container, self._container = self._container, None
        if container is not None:
            container.close()
        self._opened()

    @staticmethod
    def _av_stream_in(container: Any, info: StreamInfo) -> Any:
        group = container.streams.video if info.kind == "video" else container.streams.audio
        return group[info.index]

    def frame_index(self, stream: StreamInfo) -> FrameIndex:
        """The stream's index: kept from an earlier reader of the same file, or read.

        Reading it demuxes (no decoding), or for a stream whose packets are not its
        frames (MPEG-4 Part 2 with B-frames in AVI) decodes every frame
        (:meth:`_scan_index`), on a separate container, once per file in a process
        (see :class:`~trivium.vision.io.video.backend.FrameIndexCache`).
        """
        path = self.path if isinstance(self._src, str | os.PathLike) else None
        read = self._scan_index if stream.name in self._scanned else self._demux_index
        return self._cached_index(stream, path, read)

    def _demux_index(self, stream: StreamInfo) -> FrameIndex:
        """Demux (no decode) a separate container and index the stream's packets."""
        pts: list[int | None] = []
        keys: list[bool] = []
        container = self._open()
        try:
            with av_errors(self.path):
                for packet in container.demux(self._av_stream_in(container, stream)):
                    if packet.size and not packet.is_discard:
                        pts.append(packet.pts)
                        keys.append(packet.is_keyframe)
        finally:
            container.close()
        return build_index(pts, keys, stream.time_base, stream.fps)

    def _scan_index(self, stream: StreamInfo) -> FrameIndex:
        """Decode every frame of the stream on a separate container and index what comes out.

        The frames are not converted; see
        :func:`~trivium.vision.io.video.backend.scanned_index` for the times. One decode
        thread: frame threads only hand frames about here (a 320x240 MPEG-4 AVI scans
        about 30 % faster on one thread than on FFmpeg's three on 2 CPUs, and at 720p
        within 10 % of the best).
        """
        pts: list[int | None] = []
        keys: list[bool] = []
        container = self._open()
        try:
            av_stream = self._av_stream_in(container, stream)
            av_stream.codec_context.thread_count = 1
            with av_errors(self.path):
                for frame in container.decode(av_stream):
                    pts.append(frame.pts)
                    keys.append(frame.key_frame)
        finally:
            container.close()
        return scanned_index(pts, keys, stream.time_base, stream.fps)

    def frames(
        self,
        stream: StreamInfo,
        start: int | None,
        exact: bool,
        wanted: Callable[[int], bool] | None = None,
    ) -> Iterator[Frame]:
        """Seek to the keyframe at or before ``start`` and decode, dropping early frames.

        The seek goes to that keyframe's pts, from the frame index: the demuxer's own
        search (on dts, in MP4) can land a GOP late just before a keyframe. Frames
        that nothing references and that are not wanted (before ``start``, or whose
        pts ``wanted`` rejects) are not even decoded. Without ``exact`` the first frame
        is the keyframe itself: frames a decoder gives from there that are shown
        before it (open GOPs) are dropped.

        From the beginning no index is needed: frames without a pts (streams that
        have none) are numbered ``previous + 1 / fps``, as the index numbers them.
        """
        if start is None or stream.kind != "video":
            return self._timed_frames(stream, start, exact, start or 0)
        index = self.frame_index(stream)
        if not index.timed:
            return self._untimed_frames(stream, start)
        # The first frame to yield: the one at or after start if exact, else the last
        # one at or before start; the seek goes to the keyframe before it.
        if exact:
            position = index.position_of(start)
            if position < len(index):  # no frame lies between: start on the frame's pts
                start = int(index.pts[position])
        else:
            position = index.position_of(start + 1) - 1
        keyframe = index.keyframe_before(position)
        seek_to = index.seek_ticks(keyframe) if keyframe > 0 else 0
        if not exact:
            start, wanted = int(index.pts[keyframe]), None
        if wanted is None:
            wanted = start.__le__  # every frame from start on
        return self._timed_frames(stream, start, True, seek_to, wanted)

    def _decoded(
        self,
        stream: StreamInfo,
        wanted: Callable[[int], bool] | None = None,
        start: int | None = None,
    ) -> Iterator[Any]:
        """The stream's frames; those whose packet pts ``wanted`` rejects may be left out.

        Only frames that no other frame references are left out: H.264 packets in
        MP4 / Matroska form that hold only non-reference pictures are not sent to the
        decoder at all (so the frame threads hold only frames that are decoded), and
        for the other codecs FFmpeg skips them (``skip_frame = NONREF``, set packet by
        packet). Every frame that is decoded has exactly its pixels.

        A decoder that starts here (``num_threads`` 0) gets one frame thread per CPU
        (:func:`random_access_threads`) instead of FFmpeg's one more.

        When ``wanted`` is a :class:`~trivium.vision.io.video.backend.WantedFrames`
        with a ``last`` pts, no packet is read once every wanted frame from ``start``
        to it has been sent: the decoder is drained, so the frames that its threads
        and the B-frame reordering would hold back come out without any later frame
        being decoded.
        """
        container = self._opened()
        self._fresh = False
        av_stream = self._av_streams[stream.name]  # type: ignore[index]
        pid = os.getpid()  # the process that opened `container`
        scanned = stream.name in self._scanned  # a packet's pts does not say which frame it holds
        if wanted is None or stream.codec not in _SKIP_FRAME_CODECS or scanned:
            with av_errors(self.path):
                for frame in container.decode(av_stream):
                    yield frame
                    self._check_process(pid)
            return
        context, skipping = av_stream.codec_context, False
        if self._num_threads == 0 and not context.is_open:
            context.thread_count = random_access_threads()
        unreferenced = _unreferenced_test(stream.codec, context.extradata)
        pending = wanted.up_to(start or 0) if isinstance(wanted, WantedFrames) else None
        try:
            with av_errors(self.path):
                for packet in container.demux(av_stream):
                    skip = packet.pts is not None and not wanted(packet.pts)
                    if skip and unreferenced is not None and unreferenced(packet):
                        continue
                    if skip != skipping:
                        context.skip_frame = "NONREF" if skip else "DEFAULT"
                        skipping = skip
                    for frame in packet.decode():
                        yield frame
                        self._check_process(pid)
                    if pending is not None:
                        pending.discard(packet.pts)
                        if not pending:
                            yield from self._drain(av_stream, pid)
                            return
        finally:
            if os.getpid() == pid:  # a forked child leaves the parent's decoder alone
                context.skip_frame = "DEFAULT"

    def _drain(self, av_stream: Any, pid: int) -> Iterator[Any]:
        """The frames the decoder still holds, with no further packet decoded.

        The decoder is left draining: the next read seeks (which flushes it) or
        re-opens the container.
        """
        av = import_optional("av")
        end = av.Packet()  # empty: the end of the stream for the decoder
        end.time_base = av_stream.time_base  # the frames' time base, as demuxed packets give
        with av_errors(self.path):
            for frame in av_stream.codec_context.decode(end):
                yield frame
                self._check_process(pid)

    def _seek(self, stream: StreamInfo, ticks: int) -> None:
        """Position the demuxer at the keyframe at or before ``ticks``.

        Going back to the start re-opens instead (cheap): a seek there would replay
        encoder priming packets (AAC) that a fresh demuxer skips.
        """
        av = import_optional("av")
        container = self._opened()
        if ticks <= 0:
            if not self._fresh:
                self._reopen()
            self._fresh = False
            return
        self._fresh = False
        try:
            container.seek(ticks, stream=self._av_streams[stream.name], backward=True)  # type: ignore[index]
        except av.error.FFmpegError:  # not seekable: decode again from the start
            self._reopen()

    def _timed_frames(
        self,
        stream: StreamInfo,
        start: int | None,
        exact: bool,
        seek_to: int,
        wanted: Callable[[int], bool] | None = None,
    ) -> Iterator[Frame]:
        convert = self._video_tensor if stream.kind == "video" else audio_to_tensor
        frame_time = self._frame_time(stream)
        self._seek(stream, seek_to)
        first, step, previous = True, frame_step(stream), None
        decoded = self._decoded(stream, wanted, start)
        for frame in decoded:
            pts = frame_time(frame)
            if pts is None:
                if stream.name in self._scanned or (previous is None and start is not None):
                    continue  # cannot place it (a scanned stream: no frame of the index)
                pts = 0 if previous is None else previous + step
            previous = pts
            if first and exact and seek_to > 0 and pts > start:
                # The demuxer landed after the target: decode from the start instead
                # (done with this container's decoder first: the restart re-opens it).
                decoded.close()
                yield from self._timed_frames(stream, start, exact, 0, wanted)
                return
            first = False
            if exact and start is not None:
                end = pts + (_duration_ticks(frame, stream) if stream.kind == "audio" else 1)
                if end <= start:
                    continue
            yield partial(convert, frame), pts
        if first and exact and seek_to > 0:
            # Nothing decoded: the demuxer landed past the keyframe (MPEG-TS seeks on
            # timestamps it reads ahead of), where no frame decodes before the next one.
            yield from self._timed_frames(stream, start, exact, 0, wanted)

    def _frame_time(self, stream: StreamInfo) -> Callable[[Any], int | None]:
        """What gives a decoded frame's time in ticks (None: unknown).

        The frame's pts, except in a scanned stream (see ``_PACKET_CLOCK_FORMATS``): the
        index's time at the frame's position, found by the pts the decoder gives it.
        """
        if stream.name not in self._scanned:
            return _frame_pts
        index = self.frame_index(stream)
        if not index.timed:  # _untimed_frames places them
            return _frame_pts

        def indexed_time(frame: Any) -> int | None:
            position = index.position_of_decoded(frame.pts)
            return None if position is None else int(index.pts[position])

        return indexed_time

    def _untimed_frames(self, stream: StreamInfo, start: int | None) -> Iterator[Frame]:
        """Frames from the start, each at the index's time of its position."""
        self._reopen()
        index = self.frame_index(stream)
        for position, frame in enumerate(self._decoded(stream)):
            if position >= len(index):
                return
            pts = int(index.pts[position])
            if start is None or pts >= start:
                yield partial(self._video_tensor, frame), pts

    def close(self) -> None:
        """Close the container (never one a forked child inherited: that is the parent's)."""
        self._closed = True
        container, self._container = getattr(self, "_container", None), None
        if container is not None:
            container.close()


def _frame_pts(frame: Any) -> int | None:
    return frame.pts


def _counts_packets(container: Any) -> bool:
    """Whether the container's frame counts count packets (see ``_PACKET_CLOCK_FORMATS``)."""
    return container.format.name in _PACKET_CLOCK_FORMATS


def _needs_scan(stream: Any, container: Any) -> bool:
    """Whether a stream is indexed by decoding it (see ``_PACKET_CLOCK_FORMATS``)."""
    return (
        stream.type == "video"
        and _counts_packets(container)
        and bool(stream.codec_context.has_b_frames)
    )


def random_access_threads() -> int:
    """Decode threads for a decoder that starts with random access: one per usable CPU.

    FFmpeg's default (``thread_count`` 0) is one more frame thread than CPUs, which keeps
    a sequential decode's pipeline full. From a seek, with the frames nothing
    references left out, what is decoded is a chain of reference frames, each waiting
    on rows of the one before: an extra thread on the same CPUs only takes time from
    the frame the others wait on (20 random 720p clips, a reader per clip on 2 CPUs:
    about 12 % less wall-clock time and 4 % less CPU time with 2 threads than with 3).

    Example:
        >>> random_access_threads() >= 1
        True
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 16))  # 16: FFmpeg's most automatic threads


def _unreferenced_test(codec: str, extradata: bytes | None) -> Callable[[Any], bool] | None:
    """A test that a packet holds only pictures no other picture references, if there is one.

    For H.264 in its length-prefixed form (MP4, Matroska: ``extradata`` is an
    ``avcC`` record), see :func:`h264_unreferenced`; None for anything else.
    """
    if codec != "h264" or not extradata or len(extradata) < 7 or extradata[0] != 1:
        return None
    return partial(h264_unreferenced, length_size=(extradata[4] & 3) + 1)


def h264_unreferenced(packet: Any, length_size: int = 4) -> bool:
    """Whether a length-prefixed H.264 packet holds only non-reference slices.

    Each NAL unit's header gives its type and ``nal_ref_idc``; slices (types 1 to 5)
    with ``nal_ref_idc`` 0 belong to pictures that no other picture references (the
    test FFmpeg's ``skip_frame = NONREF`` makes). A packet without slices, with an SVC /
    MVC extension (types 14, 20), or whose lengths do not add up is not one.

    Example:
        >>> h264_unreferenced(bytes([0, 0, 0, 2, 0x01, 0x88]))  # a slice, nal_ref_idc 0
        True
        >>> h264_unreferenced(bytes([0, 0, 0, 2, 0x41, 0x88]))  # nal_ref_idc 2
        False
        >>> h264_unreferenced(bytes([0, 0, 0, 1, 0x06, 0, 0, 0, 2, 0x01, 0x88]))  # SEI + slice
        True
    """
    data = memoryview(packet).cast("B")
    size, offset, slices = len(data), 0, 0
    while offset < size:
        header = offset + length_size
        if header >= size:
            return False
        nal_size = int.from_bytes(data[offset:header], "big")
        nal = data[header]
        kind = nal & 0x1F
        if kind in (14, 20):
            return False
        if 1 <= kind <= 5:
            if nal & 0x60:
                return False
            slices += 1
        offset = header + nal_size
    return slices > 0 and offset == size


def _duration_ticks(frame: Any, stream: StreamInfo) -> int:
    """An audio frame's length in its stream's ticks."""
    return round(frame.samples / frame.sample_rate / stream.time_base)
