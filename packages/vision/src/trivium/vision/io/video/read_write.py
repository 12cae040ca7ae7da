"""Whole-clip video I/O: ``read_video`` and ``write_video``, as in ``torchvision.io``.

Frames are ``[T, C, H, W]`` uint8 RGB (``output_format="THWC"`` / ``input_format="THWC"``
for torchvision's layout); audio is float32 ``[channels, N]`` in [-1, 1].

Example:
    >>> import tempfile, torch
    >>> path = tempfile.mkdtemp() + "/clip.mp4"
    >>> write_video(path, torch.zeros(8, 3, 16, 16, dtype=torch.uint8), fps=8)
    >>> video, audio, info = read_video(path, 0.25, 0.5)
    >>> tuple(video.shape), tuple(audio.shape), info
    ((3, 3, 16, 16), (1, 0), {'video_fps': 8.0})
"""

from __future__ import annotations

import os
from collections.abc import Generator
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from trivium.core.errors import EncodeError
from trivium.vision.io.video.backend import StreamNotFoundError, VideoSource, import_optional
from trivium.vision.io.video.reader import VideoReader

__all__ = ["read_video", "read_video_timestamps", "write_video"]

_FORMATS = ("TCHW", "THWC")


def _check_format(name: str, value: str) -> None:
    if value not in _FORMATS:
        raise ValueError(f"{name} must be 'TCHW' or 'THWC', got {value!r}")


def read_video(
    filename: VideoSource,
    start_pts: float | Fraction = 0,
    end_pts: float | Fraction | None = None,
    pts_unit: str = "sec",
    output_format: str = "TCHW",
    *,
    backend: str = "pyav",
) -> tuple[torch.Tensor, torch.Tensor, dict[str, float]]:
    """Read the frames and audio between ``start_pts`` and ``end_pts`` (both included).

    Returns ``(video [T, C, H, W] uint8, audio [channels, N] float32, info)`` where
    ``info`` has ``video_fps`` and, when there is audio, ``audio_fps`` (its sample
    rate), as torchvision. ``pts_unit="pts"`` reads the bounds as ticks of the video
    stream's time base. A file without video gives ``video`` of shape ``(0, 3, 0, 0)``;
    without audio, ``audio`` of shape ``(1, 0)``.

    Example:
        >>> import tempfile, torch
        >>> path = tempfile.mkdtemp() + "/clip.mp4"
        >>> write_video(path, torch.zeros(4, 3, 16, 16, dtype=torch.uint8), fps=4)
        >>> read_video(path, output_format="THWC")[0].shape
        torch.Size([4, 16, 16, 3])
    """
    _check_format("output_format", output_format)
    if pts_unit not in ("sec", "pts"):
        raise ValueError(f"pts_unit must be 'sec' or 'pts', got {pts_unit!r}")
    try:
        reader = VideoReader(filename, "video", backend=backend)
    except StreamNotFoundError:  # no video: read the audio alone (or say that is missing too)
        reader = VideoReader(filename, "audio", backend=backend)
    try:
        streams = {s.kind for s in reader.backend.streams}
        start, end = float(start_pts), None if end_pts is None else float(end_pts)
        if pts_unit == "pts":
            base = reader.stream.time_base
            start = float(start_pts * base)
            end = None if end_pts is None else float(end_pts * base)
        if end is not None and end < start:
            raise ValueError(f"end_pts ({end_pts}) must not be before start_pts ({start_pts})")
        info: dict[str, float] = {}
        video = torch.empty((0, 3, 0, 0), dtype=torch.uint8)
        if "video" in streams:
            video, fps = _read_frames(reader, start, end)
            info["video_fps"] = fps
        audio = torch.empty((1, 0), dtype=torch.float32)
        if "audio" in streams:
            reader.set_current_stream("audio")
            audio = read_audio_range(reader, start, end)
            info["audio_fps"] = float(reader.stream.sample_rate or 0)
    finally:
        reader.close()
    if output_format == "THWC":
        video = video.permute(0, 2, 3, 1)
    return video, audio, info


def _read_frames(
    reader: VideoReader, start: float, end: float | None
) -> tuple[torch.Tensor, float]:
    reader.set_current_stream("video")
    stream = reader.stream
    frames = []
    for frame in reader.seek(start):
        if end is not None and frame["pts"] > end + 1e-9:
            break
        frames.append(frame["data"])
    if frames:
        # One memcpy per frame into [T, H, W, C], seen as [T, C, H, W] (as get_frames_at).
        video = torch.from_numpy(np.stack([f.permute(1, 2, 0).numpy() for f in frames]))
        video = video.permute(0, 3, 1, 2)
    else:
        video = torch.empty((0, 3, stream.height or 0, stream.width or 0), dtype=torch.uint8)
    return video, float(stream.fps or 0.0)


def read_video_timestamps(
    filename: VideoSource, pts_unit: str = "pts", *, backend: str = "pyav"
) -> tuple[list[int] | list[Fraction], float | None]:
    """The pts of every video frame, in display order, and the frame rate: as torchvision.

    ``pts_unit="pts"`` (torchvision's default) gives ticks of the video stream's time
    base, ``"sec"`` gives seconds as :class:`~fractions.Fraction`. There is one entry
    per frame that iteration and :meth:`VideoReader.get_frames_at` give, in the same
    order and with the same times (the reader's frame index); a file without video
    gives ``([], None)``.

    Example:
        >>> import tempfile, torch
        >>> path = tempfile.mkdtemp() + "/clip.mp4"
        >>> write_video(path, torch.zeros(3, 3, 16, 16, dtype=torch.uint8), fps=4)
        >>> read_video_timestamps(path)
        ([0, 4096, 8192], 4.0)
        >>> read_video_timestamps(path, pts_unit="sec")[0]
        [Fraction(0, 1), Fraction(1, 4), Fraction(1, 2)]
    """
    if pts_unit not in ("sec", "pts"):
        raise ValueError(f"pts_unit must be 'sec' or 'pts', got {pts_unit!r}")
    try:
        reader = VideoReader(filename, "video", backend=backend)
    except StreamNotFoundError:
        return [], None
    with reader:
        stream = reader.stream
        ticks = reader.backend.frame_index(stream).pts.tolist()
    if pts_unit == "sec":
        return [t * stream.time_base for t in ticks], stream.fps
    return ticks, stream.fps


def read_audio_range(reader: VideoReader, start: float, end: float | None) -> torch.Tensor:
    """The current (audio) stream's samples from ``start`` to ``end`` seconds, trimmed.

    Example:
        >>> import tempfile, torch
        >>> path = tempfile.mkdtemp() + "/tone.mkv"
        >>> tone = torch.zeros(2, 8000)
        >>> write_video(path, torch.zeros(4, 3, 8, 8, dtype=torch.uint8), 4, audio=tone,
        ...             audio_fps=8000, audio_codec="pcm_s16le")
        >>> read_audio_range(VideoReader(path, "audio"), 0.25, 0.5).shape
        torch.Size([2, 2001])
    """
    rate = reader.stream.sample_rate or 1
    chunks = []
    for frame in reader.seek(start):
        data, pts = frame["data"], frame["pts"]
        first = max(0, round((start - pts) * rate))
        stop = data.shape[1] if end is None else min(data.shape[1], round((end - pts) * rate) + 1)
        if stop > first:
            chunks.append(data[:, first:stop])
        if end is not None and pts + data.shape[1] / rate > end:
            break
    if not chunks:
        return torch.empty((reader.stream.channels or 1, 0), dtype=torch.float32)
    return torch.cat(chunks, dim=1)


def write_video(
    filename: str | os.PathLike[str],
    frames: torch.Tensor,
    fps: float,
    video_codec: str = "libx264",
    options: dict[str, str] | None = None,
    audio: torch.Tensor | None = None,
    audio_fps: int | None = None,
    audio_codec: str | None = None,
    audio_options: dict[str, str] | None = None,
    *,
    input_format: str = "TCHW",
    pix_fmt: str | None = None,
) -> None:
    """Encode ``frames`` (uint8 ``[T, C, H, W]`` RGB, ``C`` = 3, or 1 for grey) to ``filename``.

    The container comes from the file extension. ``options`` go to the video
    encoder (e.g. ``{"crf": "18"}``); ``pix_fmt`` defaults to ``yuv420p`` (then
    height and width must be even). ``audio`` is float32 ``[channels, N]`` in
    [-1, 1] at ``audio_fps`` Hz, encoded with ``audio_codec`` (default ``aac``).
    ``input_format="THWC"`` takes torchvision's layout.

    Example:
        >>> import tempfile, torch
        >>> path = tempfile.mkdtemp() + "/clip.mp4"
        >>> write_video(path, torch.zeros(2, 3, 16, 16, dtype=torch.uint8), fps=25,
        ...             options={"crf": "23"})
        >>> read_video(path)[0].shape
        torch.Size([2, 3, 16, 16])
    """
    av = import_optional("av")
    array = _frames_array(frames, input_format)
    _, height, width, _ = array.shape
    if fps is None or not float(fps) > 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    audio_array = None if audio is None else _audio_array(audio, audio_fps)
    path = os.fspath(filename)
    rate = Fraction(fps).limit_denominator(1_000_000)
    try:
        with av.open(path, mode="w") as container:
            stream = container.add_stream(video_codec, rate=rate, options=dict(options or {}))
            stream.width, stream.height = width, height
            stream.pix_fmt = pix_fmt or (
                "yuv420p" if "yuv420p" in _pix_fmts(stream) else _pix_fmts(stream)[0]
            )
            audio_stream = None
            if audio_array is not None:
                audio_stream = container.add_stream(
                    audio_codec or "aac", rate=int(audio_fps), options=dict(audio_options or {})
                )
                audio_stream.layout = "mono" if audio_array.shape[0] == 1 else "stereo"
            feeder = None
            if audio_stream is not None:
                feeder = _audio_feeder(av, container, audio_stream, audio_array, int(audio_fps))
                next(feeder)
            for i, picture in enumerate(array):
                frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
                container.mux(stream.encode(frame))
                if feeder is not None:  # interleave: audio up to the end of this frame
                    feeder.send((i + 1) / float(rate))
            container.mux(stream.encode())
            if feeder is not None:
                feeder.close()
    except av.error.FFmpegError as e:
        raise EncodeError(f"cannot encode video: {e}", path=path) from e
    except ValueError as e:
        if isinstance(e, EncodeError):
            raise
        raise EncodeError(f"cannot encode video: {e}", path=path) from e


def _pix_fmts(stream: Any) -> list[str]:
    formats = stream.codec_context.codec.video_formats or []
    return [f.name for f in formats] or ["yuv420p"]


def _frames_array(frames: torch.Tensor, input_format: str) -> np.ndarray:
    """``frames`` as a contiguous ``[T, H, W, 3]`` uint8 array, or an EncodeError/TypeError."""
    _check_format("input_format", input_format)
    if not isinstance(frames, torch.Tensor):
        raise TypeError(f"write_video: frames must be a tensor, got {type(frames).__name__}")
    if frames.dtype != torch.uint8:
        raise TypeError(f"write_video: frames must be uint8, got {frames.dtype}")
    if frames.dim() != 4:
        raise EncodeError(f"frames must be 4-D [T, C, H, W], got shape {tuple(frames.shape)}")
    if input_format == "TCHW":
        frames = frames.permute(0, 2, 3, 1)
    if frames.shape[-1] == 1:
        frames = frames.expand(*frames.shape[:-1], 3)
    if frames.shape[-1] != 3:
        raise EncodeError(
            f"frames must have 1 or 3 channels in {input_format} order, got shape "
            f"{tuple(frames.shape)}"
        )
    if frames.shape[0] == 0:
        raise EncodeError("no frames to write")
    return np.ascontiguousarray(frames.detach().cpu().numpy())


def _audio_array(audio: torch.Tensor, audio_fps: int | None) -> np.ndarray:
    if audio_fps is None or int(audio_fps) <= 0:
        raise ValueError(f"audio_fps must be a positive sample rate, got {audio_fps!r}")
    if not isinstance(audio, torch.Tensor) or audio.dim() != 2 or audio.shape[0] not in (1, 2):
        shape = tuple(audio.shape) if isinstance(audio, torch.Tensor) else type(audio).__name__
        raise EncodeError(f"audio must be a [channels, N] tensor with 1 or 2 channels, got {shape}")
    return np.ascontiguousarray(audio.detach().cpu().to(torch.float32).numpy())


def _audio_feeder(
    av: Any, container: Any, stream: Any, samples: np.ndarray, rate: int
) -> Generator[None, float, None]:
    """A coroutine: sent a time in seconds, encode the samples up to it; closed, the rest.

    Samples go in codec-sized planar float frames (PyAV converts to the codec's format).
    """
    layout = "mono" if samples.shape[0] == 1 else "stereo"
    size = stream.codec_context.frame_size or 1024
    offset, total = 0, samples.shape[1]
    until = 0
    try:
        while True:
            until = min(total, round((yield) * rate))
            while offset < until:
                _encode_chunk(
                    av, container, stream, samples[:, offset : offset + size], offset, rate, layout
                )
                offset += size
    finally:  # on close: the remaining samples, then flush the encoder
        while offset < total:
            _encode_chunk(
                av, container, stream, samples[:, offset : offset + size], offset, rate, layout
            )
            offset += size
        container.mux(stream.encode())


def _encode_chunk(
    av: Any, container: Any, stream: Any, chunk: np.ndarray, offset: int, rate: int, layout: str
) -> None:
    frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(chunk), format="fltp", layout=layout)
    frame.sample_rate = rate
    frame.pts = offset
    frame.time_base = Fraction(1, rate)
    container.mux(stream.encode(frame))
