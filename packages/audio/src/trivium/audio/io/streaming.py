"""``stream``: a long file read chunk by chunk (:class:`AudioStream`).

The file goes to libsndfile or to FFmpeg as :func:`~trivium.audio.io.load` sends it
(see :mod:`trivium.audio.io.reading`); a backend's reader gives the chunks, and the
stream keeps the position reached so that another process can open the source again
and go on from there.

Example:
    >>> import io, torch
    >>> from trivium.audio.io import save
    >>> buf = io.BytesIO()
    >>> save(buf, torch.zeros(1, 250), 8000, format="WAV")
    >>> [c.shape[-1] for c in stream(buf.getvalue(), 100)]
    [100, 100, 50]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Protocol

import soundfile as sf
import torch
from torch import Tensor

from trivium.audio.io import _ffmpeg
from trivium.audio.io._samples import to_tensor
from trivium.audio.io._sndfile import open_file, read_frames
from trivium.audio.io._sources import (
    AudioSource,
    check_range,
    own_source,
    portable_source,
    position,
)
from trivium.audio.io.reading import _dispatch, _ffmpeg_format
from trivium.core.errors import DecodeError
from trivium.core.forking import ForkSafe
from trivium.core.sources import as_readable

__all__ = ["AudioStream", "stream"]


class _Reader(Protocol):
    """A backend's chunks: ``read(n)`` gives ``n`` frames, fewer at the end."""

    @property
    def closed(self) -> bool: ...

    def read(self, frames: int) -> Tensor: ...

    def close(self) -> None: ...


class _SndfileReader:
    """Chunks read by libsndfile."""

    def __init__(self, f: sf.SoundFile, name: str, normalize: bool, channels_first: bool) -> None:
        self._f, self._name = f, name
        self._normalize, self._channels_first = normalize, channels_first

    @property
    def closed(self) -> bool:
        return self._f.closed

    def read(self, frames: int) -> Tensor:
        data, scale = read_frames(self._f, self._name, frames, self._normalize)
        return to_tensor(data, self._channels_first, scale)

    def close(self) -> None:
        self._f.close()


class _FFmpegReader:
    """Chunks decoded by FFmpeg, packet by packet."""

    def __init__(self, reader: _ffmpeg.ChunkReader) -> None:
        self.chunks = reader

    @property
    def closed(self) -> bool:
        return self.chunks.closed

    def read(self, frames: int) -> Tensor:
        return torch.from_numpy(self.chunks.read(frames))

    def close(self) -> None:
        self.chunks.close()


class AudioStream(ForkSafe):
    """Chunks of an audio file read one at a time; made by :func:`stream`.

    Iterating yields waveforms of ``frames_per_chunk`` frames (the last may be
    shorter). ``sample_rate``, ``num_channels`` and ``num_frames`` are known up front
    (``num_frames`` as :func:`~trivium.audio.io.info` counts them: see :func:`stream`
    for where that is an estimate). The file is closed when iteration ends, on
    :meth:`close`, or when leaving a ``with`` block. It can be iterated once.

    A stream is fork-safe and pickles: in a forked or spawned DataLoader worker it
    opens the source again (never reading the parent's open file, whose offset the
    two processes would share) and goes on from the frame the parent had reached.

    Example:
        >>> import io, torch
        >>> from trivium.audio.io import save
        >>> buf = io.BytesIO()
        >>> save(buf, torch.zeros(1, 250), 8000, format="WAV")
        >>> with stream(buf.getvalue(), 100) as chunks:
        ...     [c.shape[-1] for c in chunks], chunks.sample_rate
        ([100, 100, 50], 8000)
    """

    def __init__(
        self,
        reader: _Reader,
        name: str,
        frames_per_chunk: int,
        *,
        sample_rate: int,
        num_channels: int,
        num_frames: int,
        start: int,
        stop: int | None,
        channels_first: bool,
        reopen: Callable[[AudioSource, int], _Reader],
        source: AudioSource | None = None,
        origin: int = 0,
    ) -> None:
        self._file: _Reader | None = reader
        self._reopen = reopen  # (source, position) -> a reader there, in another process
        self._source = source  # to open the file again in another process (None: cannot)
        self._origin = origin  # where the audio starts in a file object source
        self._name = name
        self._chunk = frames_per_chunk
        self._position = start  # the next frame to read
        self._stop = stop  # where the range ends (None: where the decode ends)
        self._ended = False
        self._time_axis = -1 if channels_first else 0
        self.sample_rate: int = sample_rate
        self.num_channels: int = num_channels
        self.num_frames: int = num_frames

    _fork_handles = ("_file",)

    def _opened(self) -> _Reader:
        """The open reader: this process's own (opened again after a fork or unpickling)."""
        if self._file is None:
            if self._source is None:
                raise DecodeError(
                    "cannot open the stream again in this process: it was made without its source",
                    path=self._name,
                )
            self._file = self._reopen(own_source(self._source, self._origin), self._position)
        return self._file

    def __iter__(self) -> Iterator[Tensor]:
        try:
            while not self._ended:
                n = (
                    self._chunk
                    if self._stop is None
                    else min(self._chunk, self._stop - self._position)
                )
                reader = self._opened() if n > 0 else None
                if reader is None or reader.closed:
                    break
                data = reader.read(n)
                got = data.shape[self._time_axis]
                self._position += got
                if got:
                    yield data
                # Short only at the end of the decode (an estimated or open-ended count).
                if got < n:
                    break
        finally:
            self.close()

    def close(self) -> None:
        """Close the underlying file (iteration stops).

        Example:
            >>> import io, torch
            >>> from trivium.audio.io import save
            >>> buf = io.BytesIO()
            >>> save(buf, torch.zeros(1, 10), 8000, format="WAV")
            >>> s = stream(buf.getvalue(), 4)
            >>> s.close()
            >>> list(s)
            []
        """
        self._ended = True
        if self._file is not None:
            self._file.close()

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_source"] = portable_source(self._source, self._origin)
        state["_origin"] = 0
        return state

    def __enter__(self) -> AudioStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        reader = getattr(self, "_file", None)
        if reader is not None and not reader.closed:
            reader.close()


def _open_sndfile(
    src: AudioSource,
    position: int,
    *,
    format: str | None,
    name: str,
    normalize: bool,
    channels_first: bool,
) -> _SndfileReader:
    f, _ = open_file(src, format)
    if position:
        f.seek(position)
    return _SndfileReader(f, name, normalize, channels_first)


def _open_ffmpeg(
    src: AudioSource,
    position: int,
    *,
    container: str,
    format: str | None,
    stop: float,
    name: str,
    normalize: bool,
    channels_first: bool,
    otherwise: Exception | None = None,
) -> _FFmpegReader:
    obj, _ = as_readable(src, "audio")
    reader = _ffmpeg.open_chunks(
        obj,
        name,
        container,
        format=format,
        start=position,
        stop=stop,
        normalize=normalize,
        channels_first=channels_first,
        otherwise=otherwise,
    )
    return _FFmpegReader(reader)


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
    ``normalize``, ``channels_first`` and ``format`` mean what they mean for
    :func:`load`, and a file goes to libsndfile or FFmpeg as :func:`load` sends it.
    The formats read through FFmpeg (MP4 / M4A / MOV, Matroska / WebM, ADTS AAC, Ogg
    Opus, AVI, ASF, the audio of video files) are demuxed and decoded packet by
    packet: memory holds one chunk and one decoded frame, whatever the file's length.
    A range starts where :func:`load` starts it (a seek in MP4 / MOV and Ogg, a decode
    from the start elsewhere), and so does a stream going on in another process.

    ``num_frames`` of the stream is the frame count of :func:`~trivium.audio.io.info`
    (less ``frame_offset``, at most the ``num_frames`` asked for): exact for the
    formats whose header counts their frames; an estimate for Matroska / WebM, ADTS
    AAC, Ogg read by libsndfile and an MP3 without a Xing/VBRI header. The chunks give
    what decodes: an MP4's AAC gives up to one AAC frame (1024 samples) more than its
    count (the encoder's padding, which :func:`load` returns too).

    Errors in the header raise here; damage further in raises ``DecodeError`` naming
    the file (and, through FFmpeg, the sample reached) from the chunk that meets it.

    Example:
        >>> import io, torch
        >>> from trivium.audio.io import load, save
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
    check_range(frame_offset, num_frames)
    origin = position(uri)
    options = {"normalize": normalize, "channels_first": channels_first}

    def soundfile() -> AudioStream:
        f, name = open_file(uri, format)
        available = max(f.frames - frame_offset, 0)
        frames = available if num_frames == -1 else min(num_frames, available)
        if frames and frame_offset:
            f.seek(frame_offset)
        return AudioStream(
            _SndfileReader(f, name, normalize, channels_first),
            name,
            frames_per_chunk,
            sample_rate=f.samplerate,
            num_channels=f.channels,
            num_frames=frames,
            start=frame_offset,
            stop=frame_offset + frames,
            channels_first=channels_first,
            reopen=partial(_open_sndfile, format=format, name=name, **options),
            source=uri,
            origin=origin,
        )

    def ffmpeg(container: str, otherwise: Exception | None) -> AudioStream:
        name = as_readable(uri, "audio")[1]
        stop = math.inf if num_frames < 0 else frame_offset + num_frames
        reopen = partial(
            _open_ffmpeg,
            container=container,
            format=_ffmpeg_format(format),
            stop=stop,
            name=name,
            **options,
        )
        reader = reopen(uri, frame_offset, otherwise=otherwise)
        counted = reader.chunks  # what the container says, up front
        available = max(counted.num_frames - frame_offset, 0)
        return AudioStream(
            reader,
            name,
            frames_per_chunk,
            sample_rate=counted.sample_rate,
            num_channels=counted.num_channels,
            num_frames=available if num_frames == -1 else min(num_frames, available),
            start=frame_offset,
            stop=None if num_frames < 0 else frame_offset + num_frames,
            channels_first=channels_first,
            reopen=reopen,
            source=uri,
            origin=origin,
        )

    return _dispatch(uri, format, None, soundfile, ffmpeg)
