"""The subprocess video backend: raw frames streamed from an ``ffmpeg`` process.

ffmpeg-python builds the command lines. The ``ffmpeg`` binary is the one on PATH,
else the one shipped in the imageio-ffmpeg wheel; ``ffprobe`` (next to that
``ffmpeg``, or on PATH) describes the streams and lists every packet's pts and
keyframe flag once per stream: it only demuxes, so it is fast, and it gives the
exact integer timestamps PyAV sees, which is what makes both backends agree.

Video comes out as ``rgb24`` (swscale, as PyAV's ``to_ndarray(format="rgb24")``),
audio as interleaved ``f32le``. A seek to frame ``k`` passes ffmpeg an input
``-ss`` half way between frames ``k - 1`` and ``k``, so ffmpeg's accurate seek
starts exactly at ``k`` whatever its rounding. stderr goes to a temporary file
(never a pipe that could fill up and block ffmpeg), and every process is killed and
reaped when its iterator ends, is closed or is collected, and when the backend
closes, by the process that started it only: a forked child never reads, kills or
waits on the parent's ffmpeg processes, and starts its own.

Example:
    >>> import tempfile, torch
    >>> from trivium.vision.io import write_video
    >>> path = tempfile.mkdtemp() + "/grey.mp4"
    >>> write_video(path, torch.full((4, 3, 16, 16), 128, dtype=torch.uint8), fps=8)
    >>> backend = FFmpegBackend(path)
    >>> frames = list(backend.frames(backend.streams[0], None, exact=True))
    >>> len(frames), tuple(frames[0][0]().shape), [pts for _, pts in frames][:2]
    (4, (3, 16, 16), [0, 2048])
    >>> backend.close()
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import torch

from trivium.core.errors import DecodeError
from trivium.core.forking import ForkSafe, abandon
from trivium.vision.io.video.backend import (
    Frame,
    FrameIndex,
    StreamInfo,
    VideoBackend,
    VideoSource,
    build_index,
    check_source,
    find_stream,
    frame_step,
    import_optional,
    source_name,
)
from trivium.vision.io.video.swscale import check_size

_AUDIO_CHUNK = 1024  # samples per yielded audio frame
_PIPE_SIZE = 1 << 20  # bytes of pipe buffer asked for (the Linux default is 64 KiB)


def ffmpeg_binaries() -> tuple[str, str | None]:
    """Paths of ``ffmpeg`` (PATH, else imageio-ffmpeg's) and of ``ffprobe`` (or None).

    Example:
        >>> os.path.basename(ffmpeg_binaries()[0]).startswith("ffmpeg")
        True
    """
    ffmpeg_exe = shutil.which("ffmpeg")
    if ffmpeg_exe is None:
        ffmpeg_exe = import_optional("imageio_ffmpeg").get_ffmpeg_exe()
    beside = os.path.join(os.path.dirname(ffmpeg_exe), "ffprobe")
    ffprobe_exe = beside if os.access(beside, os.X_OK) else shutil.which("ffprobe")
    return ffmpeg_exe, ffprobe_exe


def _run_probe(args: list[str], path: str) -> str:
    _, ffprobe_exe = ffmpeg_binaries()
    if ffprobe_exe is None:
        raise RuntimeError("the ffmpeg video backend needs ffprobe (on PATH or beside ffmpeg)")
    done = subprocess.run(
        [ffprobe_exe, "-v", "error", *args, os.path.abspath(path)],  # "-x.mp4" is no option
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        reason = lines[-1].removeprefix(f"{os.path.abspath(path)}: ") if lines else "unknown error"
        raise DecodeError(f"ffprobe failed: {reason}", path=path)
    return done.stdout.decode(errors="replace")


def _fraction(text: str | None) -> Fraction | None:
    try:
        value = Fraction(text) if text else None
    except (ValueError, ZeroDivisionError):
        return None
    return value if value else None


def _stream_info(
    raw: dict[str, Any], index: int, container_duration: float | None, counted: bool = False
) -> StreamInfo:
    """A stream of ffprobe's output; ``counted``: its frames are counted from the index."""
    time_base = _fraction(raw.get("time_base")) or Fraction(1, 1_000_000)
    duration = raw.get("duration")
    duration = float(duration) if duration not in (None, "N/A") else container_duration
    if raw["codec_type"] == "video":
        rate = _fraction(raw.get("avg_frame_rate")) or _fraction(raw.get("r_frame_rate"))
        frames = int(raw["nb_frames"]) if str(raw.get("nb_frames", "")).isdigit() else None
        return StreamInfo(
            "video",
            index,
            raw.get("codec_name", "unknown"),
            time_base,
            duration,
            fps=float(rate) if rate else None,
            num_frames=None if counted else frames or None,
            width=int(raw["width"]),
            height=int(raw["height"]),
        )
    return StreamInfo(
        "audio",
        index,
        raw.get("codec_name", "unknown"),
        time_base,
        duration,
        sample_rate=int(raw["sample_rate"]),
        channels=int(raw["channels"]),
    )


def _kill(processes: set[subprocess.Popen]) -> None:
    """Kill and reap every process in ``processes`` (also run by the finalizer)."""
    while processes:
        proc = processes.pop()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _rgb_tensor(
    buffer: np.ndarray, height: int, width: int, out: np.ndarray | None = None
) -> torch.Tensor:
    rgb = buffer.reshape(height, width, 3)
    if out is not None:
        check_size(out, height, width)
        np.copyto(out, rgb)
        rgb = out
    return torch.from_numpy(rgb).permute(2, 0, 1)


def _audio_tensor(buffer: np.ndarray, channels: int) -> torch.Tensor:
    samples = buffer.view(np.float32).reshape(-1, channels).T
    return torch.from_numpy(np.ascontiguousarray(samples))


class FFmpegBackend(ForkSafe, VideoBackend):
    """Decode in an ``ffmpeg`` subprocess; ``src`` must be a file path.

    ``num_threads`` goes to ffmpeg's ``-threads`` (0: ffmpeg picks). Fork-safe: the
    processes are the parent's, and a forked child starts its own.

    Example:
        >>> ffmpeg_exe, _ = ffmpeg_binaries()
        >>> FFmpegBackend.name
        'ffmpeg'
    """

    name = "ffmpeg"

    def __init__(self, src: VideoSource, num_threads: int = 0) -> None:
        if not isinstance(src, str | os.PathLike):
            raise TypeError(
                "the ffmpeg backend reads files only; use backend='pyav' for bytes or file objects"
            )
        import_optional("ffmpeg")
        self.path = source_name(check_source(src))
        self._num_threads = num_threads
        self._indexes: dict[str, FrameIndex] = {}
        # Video streams in AVI with B-frames, whose packets are not their frames: indexed by
        # decoding (the PyAV backend's scan), and decoded from the start for every seek
        # (ffmpeg's -ss can land on a non-keyframe there and give grey frames).
        self._scanned: set[str] = set()
        self._processes: set[subprocess.Popen] = set()
        self._finalizer = weakref.finalize(self, _kill, self._processes)
        probe = json.loads(_run_probe(["-show_streams", "-show_format", "-of", "json"], self.path))
        fmt = probe.get("format", {})
        duration = fmt.get("duration")
        container_duration = float(duration) if duration not in (None, "N/A") else None
        start = fmt.get("start_time")
        self._start_time = float(start) if start not in (None, "N/A") else 0.0
        counts = {"video": 0, "audio": 0}
        self.streams = []
        for raw in probe.get("streams", []):
            kind = raw.get("codec_type")
            if kind in counts and not (
                kind == "video" and raw.get("disposition", {}).get("attached_pic")
            ):
                # AVI counts packets (placeholders, dropped frames): count from the index
                avi = "avi" in fmt.get("format_name", "").split(",")
                self.streams.append(_stream_info(raw, counts[kind], container_duration, avi))
                counts[kind] += 1
                if kind == "video" and avi and raw.get("has_b_frames"):
                    self._scanned.add(self.streams[-1].name)

    def _after_fork(self) -> None:
        super()._after_fork()
        # The parent's processes: not to be killed here, not even by the finalizer.
        self._finalizer.detach()
        abandon(self._processes)
        self._processes = set()
        self._finalizer = weakref.finalize(self, _kill, self._processes)

    def frame_index(self, stream: StreamInfo) -> FrameIndex:
        """The stream's index: kept from an earlier reader of the same file, or probed.

        See :meth:`_probe_index`, and :meth:`_scan_index` for a stream whose packets are
        not its frames; once per file in a process (see
        :class:`~trivium.vision.io.video.backend.FrameIndexCache`).
        """
        read = self._scan_index if stream.name in self._scanned else self._probe_index
        return self._cached_index(stream, self.path, read)

    def _scan_index(self, stream: StreamInfo) -> FrameIndex:
        """The PyAV backend's index of the stream, from decoding every frame once.

        Both backends then count and time the frames alike (the times are those of
        the decoder PyAV ships, see
        :func:`~trivium.vision.io.video.backend.scanned_index`), and the scan is
        shared with PyAV readers of the same file. Needs PyAV (the ``video`` extra).
        """
        from trivium.vision.io.video.pyav import PyAVBackend

        backend = PyAVBackend(self.path)
        try:
            return backend.frame_index(find_stream(backend.streams, stream.name, self.path))
        finally:
            backend.close()

    def _probe_index(self, stream: StreamInfo) -> FrameIndex:
        """Every packet's pts and keyframe flag from one ``ffprobe -show_entries`` run.

        Where packets lack a pts (AVI with B-frames: the container keeps none) the
        index holds the decoded frames' best-effort timestamps instead, which rise in
        display order and are the times ``ffmpeg`` itself seeks and trims by.
        """
        out = _run_probe(
            [
                "-select_streams",
                f"{stream.kind[0]}:{stream.index}",
                "-show_entries",
                "packet=pts,flags",
                "-of",
                "csv=p=0",
            ],
            self.path,
        )
        pts: list[int | None] = []
        keys: list[bool] = []
        for line in out.splitlines():
            fields = line.strip().split(",")
            if len(fields) < 2 or "D" in fields[-1]:
                continue
            pts.append(int(fields[0]) if fields[0].lstrip("-").isdigit() else None)
            keys.append("K" in fields[-1])
        if stream.kind == "video" and None in pts and any(p is not None for p in pts):
            pts, keys = self._best_effort_times(stream)
        return build_index(pts, keys, stream.time_base, stream.fps)

    def _best_effort_times(self, stream: StreamInfo) -> tuple[list[int | None], list[bool]]:
        """Decoded frames' best-effort timestamps (ffprobe decodes the stream once).

        A frame without one (the last of a packed-B-frame AVI) is placed a frame step
        after the one before it.
        """
        out = _run_probe(
            [
                "-select_streams",
                f"v:{stream.index}",
                "-show_entries",
                "frame=best_effort_timestamp,key_frame",
                "-of",
                "compact=p=0",
            ],
            self.path,
        )
        pts: list[int | None] = []
        keys: list[bool] = []
        for line in out.splitlines():
            fields = dict(field.partition("=")[::2] for field in line.strip().split("|"))
            if "best_effort_timestamp" not in fields:
                continue
            value = fields["best_effort_timestamp"]
            if value.lstrip("-").isdigit():
                pts.append(int(value))
            else:
                pts.append(None if not pts or pts[-1] is None else pts[-1] + frame_step(stream))
            keys.append(fields.get("key_frame") == "1")
        return pts, keys

    def _command(self, stream: StreamInfo, seek: float | None) -> list[str]:
        ffmpeg = import_optional("ffmpeg")
        ffmpeg_exe, _ = ffmpeg_binaries()
        options: dict[str, Any] = {"noautorotate": None, "threads": self._num_threads}
        if seek is not None and seek > 0:
            options["ss"] = f"{seek:.6f}"
        output: dict[str, Any] = {"map": f"0:{stream.kind[0]}:{stream.index}", "sn": None}
        if stream.kind == "video":
            output.update(format="rawvideo", pix_fmt="rgb24", fps_mode="passthrough", an=None)
        else:
            output.update(format="f32le", ac=stream.channels, ar=stream.sample_rate, vn=None)
        node = ffmpeg.input(os.path.abspath(self.path), **options).output("pipe:", **output)
        return [ffmpeg_exe, "-nostdin", "-hide_banner", "-loglevel", "error", *node.get_args()]

    def _popen(self, argv: list[str], stderr: Any) -> subprocess.Popen:
        proc = subprocess.Popen(
            argv, bufsize=0, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr
        )
        with contextlib.suppress(OSError, AttributeError):  # fewer, larger reads (Linux)
            fcntl.fcntl(proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
        self._processes.add(proc)
        return proc

    def _stream(self, argv: list[str], chunk: int, unit: int | None) -> Iterator[np.ndarray]:
        """Fixed-size chunks of the process's stdout; the process dies with the iterator.

        A short last chunk is dropped (a cut-off frame), or with ``unit`` (audio) kept to
        a whole number of ``unit``-byte samples.
        """
        with tempfile.TemporaryFile() as stderr:
            proc = self._popen(argv, stderr)
            pid = os.getpid()
            try:
                while True:
                    buffer = np.empty(chunk, dtype=np.uint8)
                    view, got = memoryview(buffer), 0
                    while got < chunk:
                        if os.getpid() != pid:
                            raise RuntimeError(
                                "an ffmpeg frame iterator cannot go on in a forked process "
                                "(the process is the parent's); start a new one there"
                            )
                        n = proc.stdout.readinto(view[got:])
                        if not n:
                            break
                        got += n
                    if got < chunk:
                        if unit and got >= unit:
                            yield buffer[: got - got % unit]
                        break
                    yield buffer
                if proc.wait() != 0:
                    stderr.seek(0)
                    lines = stderr.read().decode(errors="replace").strip().splitlines()
                    reason = lines[-1] if lines else f"exit status {proc.returncode}"
                    raise DecodeError(f"ffmpeg failed: {reason}", path=self.path)
            finally:
                if os.getpid() == pid:
                    self._processes.discard(proc)
                    _kill({proc})
                else:
                    abandon(proc)  # the parent's process: not to be killed or waited on

    def frames(
        self,
        stream: StreamInfo,
        start: int | None,
        exact: bool,
        wanted: Callable[[int], bool] | None = None,
    ) -> Iterator[Frame]:
        """Start an ffmpeg process at the right frame and read raw frames from its stdout.

        ``wanted`` is not used: the ffmpeg process decodes every frame.
        """
        if stream.kind == "audio":
            return self._audio_frames(stream, start)
        return self._video_frames(stream, start, exact)

    def _video_frames(self, stream: StreamInfo, start: int | None, exact: bool) -> Iterator[Frame]:
        index = self.frame_index(stream)
        position = 0 if start is None else index.position_of(start)
        if position >= len(index):
            return
        if not exact:  # the keyframe at or before `start`, as a backward demuxer seek
            at_or_before = int(np.searchsorted(index.pts, start, side="right")) - 1
            position = index.keyframe_before(max(at_or_before, 0))
        skip, seek = 0, None
        if not index.timed or stream.name in self._scanned:
            skip = position  # cannot seek: decode from the start and drop
        elif position > 0:
            midway = (index.seconds(position - 1) + index.seconds(position)) / 2
            seek = midway - self._start_time
        width, height = stream.width, stream.height
        chunks = self._stream(self._command(stream, seek), width * height * 3, None)
        for offset, buffer in enumerate(chunks):
            if offset < skip:
                continue
            at = position + offset - skip
            if at >= len(index):
                ticks = int(index.pts[-1]) + (at - len(index) + 1) * frame_step(stream)
            else:
                ticks = int(index.pts[at])
            yield partial(_rgb_tensor, buffer, height, width), ticks

    def _audio_frames(self, stream: StreamInfo, start: int | None) -> Iterator[Frame]:
        seconds = 0.0 if start is None else max(stream.seconds(start), 0.0)
        seek = seconds - self._start_time if seconds > self._start_time else None
        first = seconds if seek is not None else self._start_time
        channels, rate = stream.channels, stream.sample_rate
        done = 0
        for buffer in self._stream(
            self._command(stream, seek), _AUDIO_CHUNK * channels * 4, 4 * channels
        ):
            ticks = math.floor((first + done / rate) / stream.time_base)
            done += len(buffer) // (4 * channels)
            yield partial(_audio_tensor, buffer, channels), ticks

    def close(self) -> None:
        """Kill and reap every ffmpeg process this backend started."""
        _kill(self._processes)
