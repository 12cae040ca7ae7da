"""``stream``: a long file read chunk by chunk (:class:`AudioStream`), through libsndfile.

Example:
    >>> import io, torch
    >>> from trivium.audio.io import save
    >>> buf = io.BytesIO()
    >>> save(buf, torch.zeros(1, 250), 8000, format="WAV")
    >>> [c.shape[-1] for c in stream(buf.getvalue(), 100)]
    [100, 100, 50]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import soundfile as sf
from torch import Tensor

from trivium.audio.io import _ffmpeg
from trivium.audio.io._samples import to_tensor
from trivium.audio.io._sndfile import open_file, read_frames
from trivium.audio.io._sources import (
    AudioSource,
    check_range,
    head,
    own_source,
    portable_source,
    position,
)
from trivium.core.errors import DecodeError, UnsupportedFormatError
from trivium.core.forking import ForkSafe

__all__ = ["AudioStream", "stream"]


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
        >>> from trivium.audio.io import save
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
            f, _ = open_file(own_source(self._source, self._origin), self._format)
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
                data, scale = read_frames(f, self._name, n, self._normalize)
                # Short only where the frame count was an estimate (see the module doc).
                self._left = self._left - n if len(data) == n else 0
                if len(data):
                    yield to_tensor(data, self._channels_first, scale)
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
        self._left = 0
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
    try:
        f, name = open_file(uri, format)
    except UnsupportedFormatError as unsupported:
        found = _ffmpeg.sniff(head(uri, _ffmpeg.HEAD_BYTES)) if format is None else None
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
