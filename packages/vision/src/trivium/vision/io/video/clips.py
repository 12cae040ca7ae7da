"""Clips of N frames over many videos, for training: ``VideoClips`` and its samplers.

The names follow ``torchvision.datasets.video_utils.VideoClips`` and
``torchvision.datasets.samplers`` (``RandomClipSampler``, ``UniformClipSampler``).
The frame index (every frame's pts, per video) is built once, on a thread pool with
a progress bar, by demuxing only; it is kept compact (int32 ticks where they fit)
and can be saved to and loaded from a cache file.

Example:
    >>> import tempfile, torch
    >>> from trivium.vision.io import write_video
    >>> root = tempfile.mkdtemp()
    >>> for n in (5, 8):
    ...     write_video(f"{root}/{n}.mp4", torch.zeros(n, 3, 8, 8, dtype=torch.uint8), fps=4)
    >>> clips = VideoClips([f"{root}/5.mp4", f"{root}/8.mp4"], clip_length_in_frames=4,
    ...                    frames_between_clips=2)
    >>> clips.num_clips(), clips.num_clips_per_video.tolist()
    (4, [1, 3])
    >>> video, audio, info, video_idx = clips.get_clip(3)
    >>> tuple(video.shape), info["video_fps"], video_idx
    ((4, 3, 8, 8), 4.0, 1)
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from trivium.core.errors import DatasetError, DecodeWarning, PathNotFoundError
from trivium.core.progress import progress
from trivium.core.threads import parallel_map
from trivium.vision.io.video.backend import FrameIndex
from trivium.vision.io.video.read_write import read_audio_range
from trivium.vision.io.video.reader import VideoReader

__all__ = ["RandomClipSampler", "UniformClipSampler", "VideoClips"]

# 2: keyframe positions and the timed flag; 3: AVI times rise in display order; 4: the
# frames of AVIs with B-frames from a decode scan, with the pts the decoder gives them.
_CACHE_VERSION = 4


def compact_pts(pts: np.ndarray) -> np.ndarray:
    """``pts`` as int32 when every value fits, else int64 (4 bytes a frame in most files).

    Example:
        >>> compact_pts(np.array([0, 512, 1024])).dtype, compact_pts(np.array([2**40])).dtype
        (dtype('int32'), dtype('int64'))
    """
    info = np.iinfo(np.int32)
    if pts.size == 0 or (pts.min() >= info.min and pts.max() <= info.max):
        return pts.astype(np.int32)
    return pts.astype(np.int64)


@dataclass
class _VideoEntry:
    """What the index keeps of one video."""

    pts: np.ndarray  # int32/int64 ticks, sorted
    keyframes: np.ndarray  # int32 positions
    timed: bool  # False: the stream has no pts, ``pts`` are position / fps
    time_base: Fraction
    fps: float
    has_audio: bool
    size: int  # file size and mtime, to notice a changed file behind a cache
    mtime_ns: int
    decoder_pts: np.ndarray | None = None  # as ``pts``; an index from a scan (FrameIndex's)

    def frame_index(self) -> FrameIndex:
        """The video stream's frame index, as a reader would build it."""
        decoded = None if self.decoder_pts is None else self.decoder_pts.astype(np.int64)
        return FrameIndex(
            self.pts.astype(np.int64), self.keyframes, self.time_base, self.timed, decoded
        )

    @property
    def nbytes(self) -> int:
        """Bytes its arrays hold."""
        extra = 0 if self.decoder_pts is None else self.decoder_pts.nbytes
        return self.pts.nbytes + self.keyframes.nbytes + extra


class _Metadata(dict):
    """``VideoClips.metadata``: torchvision's dict, carrying the full index for
    ``_precomputed_metadata`` (torchvision's pts alone lack the keyframes and time base)."""

    def __init__(self, entries: list[_VideoEntry | None], fields: dict[str, list[Any]]) -> None:
        super().__init__(fields)
        self.entries = list(entries)


class _StaleCacheError(DatasetError):
    """A cache file written by another version of this module."""


def _index_video(path: str, backend: str) -> _VideoEntry | None:
    stat = os.stat(path)
    try:
        with VideoReader(path, backend=backend) as reader:
            stream = reader.stream
            index = reader.backend.frame_index(stream)
            has_audio = any(s.kind == "audio" for s in reader.backend.streams)
    except (ValueError, OSError) as e:  # DecodeError, no video stream, unreadable
        warnings.warn(f"{path}: skipped, no clips from it ({e})", DecodeWarning, stacklevel=3)
        return None
    fps = stream.fps or (1.0 / float(stream.time_base))
    return _VideoEntry(
        compact_pts(index.pts),
        index.keyframes.astype(np.int32),
        index.timed,
        stream.time_base,
        fps,
        has_audio,
        stat.st_size,
        stat.st_mtime_ns,
        None if index.decoder_pts is None else compact_pts(index.decoder_pts),
    )


def resample_positions(num_frames: int, original_fps: float, new_fps: float | None) -> np.ndarray:
    """Frame positions that play ``num_frames`` at ``original_fps`` back at ``new_fps``.

    As torchvision's ``VideoClips._resample_video_idx``: frames are dropped (or
    repeated) by flooring ``i * original_fps / new_fps``.

    Example:
        >>> resample_positions(6, 30, 15).tolist(), resample_positions(3, 10, 20).tolist()
        ([0, 2, 4], [0, 0, 1, 1, 2, 2])
    """
    if new_fps is None or not original_fps:
        return np.arange(num_frames, dtype=np.int64)
    count = math.floor(num_frames * new_fps / original_fps)
    return np.floor(np.arange(count) * (original_fps / new_fps)).astype(np.int64)


class VideoClips(Dataset):
    """Every clip of ``clip_length_in_frames`` frames, ``frames_between_clips`` apart.

    ``frame_rate`` (optional) resamples every video to that rate first.
    ``num_workers`` threads build the index (0: one thread per usable CPU). With
    ``cache_path``, an index saved there for the same files is loaded, and a fresh
    one is saved there otherwise. ``_precomputed_metadata`` (torchvision's argument)
    names the videos by its ``"video_paths"``; the :attr:`metadata` of another
    ``VideoClips`` also carries its index, which is then used without re-reading the
    videos (a plain dict, such as torchvision's, has too little: they are indexed
    anew). Videos that cannot be read give no clips and a
    :class:`~trivium.core.DecodeWarning` naming them.

    ``get_clip(idx)`` (and ``clips[idx]``) returns ``(video, audio, info, video_idx)``
    as torchvision: video ``[T, C, H, W]`` uint8 (``output_format="THWC"`` for
    torchvision's layout), audio float32 ``[channels, N]`` over the clip's time span
    (empty if the video has none or ``with_audio=False``), and
    ``info = {"video_fps": ..., "audio_fps": ...}``.

    Example:
        >>> import tempfile, torch
        >>> from trivium.vision.io import write_video
        >>> path = tempfile.mkdtemp() + "/a.mp4"
        >>> write_video(path, torch.zeros(10, 3, 8, 8, dtype=torch.uint8), fps=10)
        >>> clips = VideoClips([path], clip_length_in_frames=4, frames_between_clips=3)
        >>> len(clips), clips.get_clip_location(2), clips.clip_positions(2).tolist()
        (3, (0, 2), [6, 7, 8, 9])
    """

    def __init__(
        self,
        video_paths: Sequence[str | os.PathLike[str]],
        clip_length_in_frames: int = 16,
        frames_between_clips: int = 1,
        frame_rate: float | None = None,
        num_workers: int = 0,
        *,
        backend: str = "pyav",
        cache_path: str | os.PathLike[str] | None = None,
        output_format: str = "TCHW",
        with_audio: bool = True,
        _precomputed_metadata: dict[str, Any] | None = None,
    ) -> None:
        if clip_length_in_frames < 1 or frames_between_clips < 1:
            raise ValueError(
                "clip_length_in_frames and frames_between_clips must be >= 1, got "
                f"{clip_length_in_frames} and {frames_between_clips}"
            )
        if output_format not in ("TCHW", "THWC"):
            raise ValueError(f"output_format must be 'TCHW' or 'THWC', got {output_format!r}")
        self.video_paths = [os.fspath(p) for p in video_paths]
        self.clip_length_in_frames = clip_length_in_frames
        self.frames_between_clips = frames_between_clips
        self.frame_rate = frame_rate
        self.backend = backend
        self.output_format = output_format
        self.with_audio = with_audio
        self._reader: tuple[int, VideoReader] | None = None
        if _precomputed_metadata is not None:
            self.video_paths = [os.fspath(p) for p in _precomputed_metadata["video_paths"]]
            entries = getattr(_precomputed_metadata, "entries", None)
            if entries is not None and len(entries) == len(self.video_paths):
                self._set_entries(list(entries))
                return
        entries = _load_cache(cache_path, self.video_paths) if cache_path is not None else None
        if entries is None:
            entries = self._build_index(num_workers)
            if cache_path is not None:
                _save_entries(cache_path, self.video_paths, entries)
        self._set_entries(entries)

    def _build_index(self, num_workers: int) -> list[_VideoEntry | None]:
        for path in self.video_paths:
            if not os.path.isfile(path):
                raise PathNotFoundError(path=path)
        threads = num_workers if num_workers > 0 else None
        with progress(total=len(self.video_paths), desc="indexing videos", unit="video") as bar:

            def index_one(path: str) -> _VideoEntry | None:
                entry = _index_video(path, self.backend)
                bar.update(1)
                return entry

            return parallel_map(index_one, self.video_paths, threads)

    def _set_entries(self, entries: list[_VideoEntry | None]) -> None:
        self._entries = entries
        counts = []
        for entry in entries:
            n = 0 if entry is None else len(self._positions(entry))
            clips = (n - self.clip_length_in_frames) // self.frames_between_clips + 1
            counts.append(max(0, clips))
        self.num_clips_per_video = np.asarray(counts, dtype=np.int64)
        self._cumulative = np.cumsum(self.num_clips_per_video)

    def _positions(self, entry: _VideoEntry) -> np.ndarray:
        return resample_positions(len(entry.pts), entry.fps, self.frame_rate)

    # ----------------------------------------------------------------- index

    @property
    def metadata(self) -> dict[str, list[Any]]:
        """``video_paths``, ``video_pts`` (int64 tensors of ticks), ``video_fps``: as torchvision.

        Example:
            >>> VideoClips([], 4).metadata
            {'video_paths': [], 'video_pts': [], 'video_fps': []}
        """
        return _Metadata(
            self._entries,
            {
                "video_paths": list(self.video_paths),
                "video_pts": [
                    torch.from_numpy(e.pts.astype(np.int64))
                    if e
                    else torch.empty(0, dtype=torch.int64)
                    for e in self._entries
                ],
                "video_fps": [e.fps if e else None for e in self._entries],
            },
        )

    def subset(self, indices: Sequence[int]) -> VideoClips:
        """The clips of the videos at ``indices`` only, sharing this index (torchvision's).

        Example:
            >>> import tempfile, torch
            >>> from trivium.vision.io import write_video
            >>> root = tempfile.mkdtemp()
            >>> for n in (5, 8):
            ...     frames = torch.zeros(n, 3, 8, 8, dtype=torch.uint8)
            ...     write_video(f"{root}/{n}.mp4", frames, fps=4)
            >>> clips = VideoClips([f"{root}/5.mp4", f"{root}/8.mp4"], 4, 2)
            >>> clips.subset([1]).num_clips_per_video.tolist()
            [3]
        """
        picked = [int(i) for i in indices]
        clips = VideoClips.__new__(VideoClips)
        clips.__dict__.update(self.__getstate__())
        clips.video_paths = [self.video_paths[i] for i in picked]
        clips._set_entries([self._entries[i] for i in picked])
        return clips

    def index_nbytes(self) -> int:
        """Bytes the frame index holds (pts, keyframe positions): a few bytes per frame.

        Example:
            >>> VideoClips([], 4).index_nbytes()
            0
        """
        return sum(e.nbytes for e in self._entries if e is not None)

    def save_index(self, path: str | os.PathLike[str]) -> None:
        """Save the frame index to ``path`` (``.npz``), for ``cache_path=`` or :meth:`from_cache`.

        Example:
            >>> import tempfile
            >>> cache = tempfile.mkdtemp() + "/index.npz"
            >>> VideoClips([], 4).save_index(cache)
            >>> VideoClips.from_cache(cache, clip_length_in_frames=4).num_clips()
            0
        """
        _save_entries(path, self.video_paths, self._entries)

    @classmethod
    def from_cache(cls, path: str | os.PathLike[str], **kwargs: Any) -> VideoClips:
        """Clips over the videos of a saved index, without re-reading them.

        ``kwargs`` are the other constructor arguments (clip length, stride, ...).
        A missing or unreadable cache raises :class:`~trivium.core.DatasetError`.
        """
        paths, entries = _read_cache(path)
        clips = cls.__new__(cls)
        init_kwargs = {k: v for k, v in kwargs.items() if k not in ("num_workers", "cache_path")}
        _init_without_index(clips, paths, **init_kwargs)
        clips._set_entries(entries)
        return clips

    # ----------------------------------------------------------------- clips

    def num_clips(self) -> int:
        """The number of clips over all videos."""
        return int(self._cumulative[-1]) if len(self._cumulative) else 0

    def __len__(self) -> int:
        return self.num_clips()

    def get_clip_location(self, idx: int) -> tuple[int, int]:
        """``(video_idx, clip_idx)``: which video clip ``idx`` is from, and which of its clips."""
        if not -self.num_clips() <= idx < self.num_clips():
            raise IndexError(f"clip index {idx} out of range for {self.num_clips()} clips")
        idx = idx % self.num_clips()
        video_idx = int(np.searchsorted(self._cumulative, idx, side="right"))
        before = int(self._cumulative[video_idx - 1]) if video_idx else 0
        return video_idx, idx - before

    def clip_positions(self, idx: int) -> np.ndarray:
        """The frame positions (in the original video) that make up clip ``idx``."""
        video_idx, clip_idx = self.get_clip_location(idx)
        start = clip_idx * self.frames_between_clips
        positions = self._positions(self._entries[video_idx])  # type: ignore[arg-type]
        return positions[start : start + self.clip_length_in_frames]

    def _open(self, video_idx: int) -> VideoReader:
        """A reader on the video, kept open while clips come from the same one.

        It is handed the saved frame index: building its own would demux the whole
        file for every clip.
        """
        if self._reader is not None and self._reader[0] == video_idx:
            return self._reader[1]
        self.close()
        reader = VideoReader(self.video_paths[video_idx], backend=self.backend)
        entry = self._entries[video_idx]
        assert entry is not None  # videos without entries have no clips
        reader.backend.use_frame_index(reader.stream, entry.frame_index())
        self._reader = (video_idx, reader)
        return reader

    def get_clip(self, idx: int) -> tuple[torch.Tensor, torch.Tensor, dict[str, float], int]:
        """Decode clip ``idx``: ``(video, audio, info, video_idx)``."""
        video_idx, _ = self.get_clip_location(idx)
        entry = self._entries[video_idx]
        assert entry is not None  # videos without entries have no clips
        positions = self.clip_positions(idx)
        reader = self._open(video_idx)
        reader.set_current_stream("video")
        video = reader.get_frames_at(positions).data
        info = {"video_fps": float(self.frame_rate or entry.fps)}
        audio = torch.empty((1, 0), dtype=torch.float32)
        if self.with_audio and entry.has_audio:
            reader.set_current_stream("audio")
            tb = entry.time_base
            start = int(entry.pts[positions[0]]) * tb.numerator / tb.denominator
            end = int(entry.pts[positions[-1]]) * tb.numerator / tb.denominator + 1 / entry.fps
            audio = read_audio_range(reader, start, end)
            info["audio_fps"] = float(reader.stream.sample_rate or 0)
        if self.output_format == "THWC":
            video = video.permute(0, 2, 3, 1)
        return video, audio, info, video_idx

    def __getitem__(self, idx: int) -> tuple[torch.Tensor, torch.Tensor, dict[str, float], int]:
        return self.get_clip(idx)

    def close(self) -> None:
        """Close the reader kept open between clips."""
        if self._reader is not None:
            self._reader[1].close()
            self._reader = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_reader"] = None  # each worker opens its own
        return state


def _init_without_index(
    clips: VideoClips,
    paths: list[str],
    clip_length_in_frames: int = 16,
    frames_between_clips: int = 1,
    frame_rate: float | None = None,
    *,
    backend: str = "pyav",
    output_format: str = "TCHW",
    with_audio: bool = True,
) -> None:
    """The constructor's checks and fields, for an index that comes from a cache."""
    VideoClips.__init__(
        clips,
        [],
        clip_length_in_frames,
        frames_between_clips,
        frame_rate,
        backend=backend,
        output_format=output_format,
        with_audio=with_audio,
    )
    clips.video_paths = paths


# ------------------------------------------------------------------------ cache


def _save_entries(
    path: str | os.PathLike[str], paths: list[str], entries: list[_VideoEntry | None]
) -> None:
    present = [e for e in entries if e is not None]
    lengths = np.array([len(e.pts) if e else -1 for e in entries], dtype=np.int64)
    pts = np.concatenate([e.pts.astype(np.int64) for e in present]) if present else np.zeros(0)
    keyframes = [e.keyframes if e else np.zeros(0, np.int32) for e in entries]
    decoded = [e.decoder_pts.astype(np.int64) for e in present if e.decoder_pts is not None]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        np.savez(
            f,
            version=np.array(_CACHE_VERSION),
            paths=np.array(paths, dtype=str),
            lengths=lengths,
            pts=compact_pts(pts.astype(np.int64)),
            keyframe_counts=np.array([len(k) for k in keyframes], dtype=np.int64),
            keyframes=np.concatenate([np.zeros(0, np.int32), *keyframes]).astype(np.int32),
            timed=np.array([bool(e and e.timed) for e in entries], dtype=bool),
            # decoder pts of the videos indexed by a scan, one after another (in order)
            scanned=np.array([bool(e and e.decoder_pts is not None) for e in entries], bool),
            decoder_pts=np.concatenate([np.zeros(0, np.int64), *decoded]).astype(np.int64),
            time_base=np.array(
                [
                    [e.time_base.numerator, e.time_base.denominator] if e else [0, 1]
                    for e in entries
                ],
                dtype=np.int64,
            ).reshape(-1, 2),
            fps=np.array([e.fps if e else 0.0 for e in entries], dtype=np.float64),
            has_audio=np.array([bool(e and e.has_audio) for e in entries], dtype=bool),
            stat=np.array(
                [[e.size, e.mtime_ns] if e else [0, 0] for e in entries], np.int64
            ).reshape(-1, 2),
        )


def _read_cache(path: str | os.PathLike[str]) -> tuple[list[str], list[_VideoEntry | None]]:
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["version"]) != _CACHE_VERSION:
                raise _StaleCacheError("video index cache of another version", path=path)
            paths = [str(p) for p in data["paths"]]
            lengths, pts = data["lengths"], data["pts"]
            keyframe_counts, keyframes, timed = (
                data["keyframe_counts"],
                data["keyframes"],
                data["timed"],
            )
            time_base, fps = data["time_base"], data["fps"]
            has_audio, stat = data["has_audio"], data["stat"]
            scanned, decoder_pts = data["scanned"], data["decoder_pts"]
    except (OSError, KeyError, ValueError) as e:
        if isinstance(e, DatasetError):
            raise
        raise DatasetError(f"cannot read video index cache: {e}", path=path) from e
    entries: list[_VideoEntry | None] = []
    offset = decoded_offset = 0
    keyframe_ends = np.cumsum(keyframe_counts)
    for i, n in enumerate(lengths.tolist()):
        if n < 0:
            entries.append(None)
            continue
        decoded = None
        if scanned[i]:
            decoded = compact_pts(decoder_pts[decoded_offset : decoded_offset + n])
            decoded_offset += n
        entries.append(
            _VideoEntry(
                compact_pts(pts[offset : offset + n].astype(np.int64)),
                keyframes[keyframe_ends[i] - keyframe_counts[i] : keyframe_ends[i]],
                bool(timed[i]),
                Fraction(int(time_base[i, 0]), int(time_base[i, 1])),
                float(fps[i]),
                bool(has_audio[i]),
                int(stat[i, 0]),
                int(stat[i, 1]),
                decoded,
            )
        )
        offset += n
    return paths, entries


def _load_cache(
    path: str | os.PathLike[str], video_paths: list[str]
) -> list[_VideoEntry | None] | None:
    """The cached entries if the cache is for these files, unchanged; else None (rebuild)."""
    if not os.path.exists(path):
        return None
    try:
        paths, entries = _read_cache(path)
    except _StaleCacheError:
        return None
    if paths != video_paths:
        return None
    for p, entry in zip(paths, entries, strict=True):
        if entry is None:
            continue
        try:
            stat = os.stat(p)
        except OSError:
            return None
        if (stat.st_size, stat.st_mtime_ns) != (entry.size, entry.mtime_ns):
            return None
    return entries


# --------------------------------------------------------------------- samplers


class RandomClipSampler(Sampler[int]):
    """Up to ``max_clips_per_video`` random clips from every video, in a random order.

    Example:
        >>> import tempfile, torch
        >>> from trivium.vision.io import write_video
        >>> path = tempfile.mkdtemp() + "/a.mp4"
        >>> write_video(path, torch.zeros(10, 3, 8, 8, dtype=torch.uint8), fps=10)
        >>> clips = VideoClips([path], clip_length_in_frames=2)
        >>> def sampler(seed):
        ...     return RandomClipSampler(clips, 3, generator=torch.Generator().manual_seed(seed))
        >>> len(sampler(0)), list(sampler(0)) == list(sampler(0)), len(set(sampler(0)))
        (3, True, 3)
    """

    def __init__(
        self,
        video_clips: VideoClips,
        max_clips_per_video: int,
        generator: torch.Generator | None = None,
    ) -> None:
        if max_clips_per_video < 1:
            raise ValueError(f"max_clips_per_video must be >= 1, got {max_clips_per_video}")
        self.counts = video_clips.num_clips_per_video.tolist()
        self.max_clips_per_video = max_clips_per_video
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        chosen = []
        start = 0
        for n in self.counts:
            picks = torch.randperm(n, generator=self.generator)[: self.max_clips_per_video]
            chosen.append(picks + start)
            start += n
        if not chosen:
            return iter([])
        flat = torch.cat(chosen)
        order = torch.randperm(len(flat), generator=self.generator)
        return iter(flat[order].tolist())

    def __len__(self) -> int:
        return sum(min(n, self.max_clips_per_video) for n in self.counts)


class UniformClipSampler(Sampler[int]):
    """``num_clips_per_video`` clips evenly spaced over every video (repeating in short ones).

    Example:
        >>> import tempfile, torch
        >>> from trivium.vision.io import write_video
        >>> path = tempfile.mkdtemp() + "/a.mp4"
        >>> write_video(path, torch.zeros(10, 3, 8, 8, dtype=torch.uint8), fps=10)
        >>> list(UniformClipSampler(VideoClips([path], clip_length_in_frames=2), 3))
        [0, 4, 8]
    """

    def __init__(self, video_clips: VideoClips, num_clips_per_video: int) -> None:
        if num_clips_per_video < 1:
            raise ValueError(f"num_clips_per_video must be >= 1, got {num_clips_per_video}")
        self.counts = video_clips.num_clips_per_video.tolist()
        self.num_clips_per_video = num_clips_per_video

    def __iter__(self) -> Iterator[int]:
        indices: list[int] = []
        start = 0
        for n in self.counts:
            if n > 0:
                picks = torch.linspace(start, start + n - 1, self.num_clips_per_video)
                indices += picks.floor().to(torch.int64).tolist()
            start += n
        return iter(indices)

    def __len__(self) -> int:
        return sum(self.num_clips_per_video for n in self.counts if n > 0)
