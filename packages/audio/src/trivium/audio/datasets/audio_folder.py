"""``AudioFolder``: one sub-folder per class, like torchvision's ``ImageFolder``.

Example:
    >>> import pathlib, tempfile, torch
    >>> from trivium.audio.io import save
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for label in ("dog", "cat"):
    ...     (root / label).mkdir()
    ...     save(root / label / "1.wav", torch.zeros(1, 10), 8000)
    >>> ds = AudioFolder(root)
    >>> ds.classes, ds[0][1:], ds[1][1:]
    (['cat', 'dog'], (8000, 0), (8000, 1))
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.io import load
from trivium.core.errors import DatasetError, TriviumError
from trivium.core.folders import class_folders
from trivium.core.skipping import SkipsUnreadable, check_on_error, with_path

__all__ = ["AUDIO_EXTENSIONS", "AudioFolder"]

AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aiff", ".aif", ".au")


class AudioFolder(SkipsUnreadable, Dataset):
    """Items ``(waveform, sample_rate, class_index)`` from ``root/<class>/**/<file>``.

    Classes are the sorted sub-folder names (``classes``, ``class_to_idx``); files
    are those with one of ``extensions`` (case-insensitive), sorted, in ``samples``
    as ``(path, class_index)``. ``transform`` is applied to the waveform and
    ``target_transform`` to the class index; ``loader`` (path -> (waveform, rate))
    defaults to :func:`trivium.audio.load`.

    Errors: a missing ``root`` raises :class:`~trivium.core.errors.PathNotFoundError`.
    A file that cannot be read (empty, truncated, corrupt) raises a
    ``trivium.core`` error naming it when its item is loaded (``on_error="raise"``).

    ``on_error="skip"``: as vision's ``ImageFolder``, a bad sample is *replaced* by
    the next readable one in index order (wrapping around), and reported once with
    a :class:`~trivium.core.errors.SkippedSamplesWarning` naming the file. The
    bad files found are kept in shared memory, so ``skipped`` / ``skipped_files``
    count those found by any DataLoader worker. Only data errors are skipped
    (``trivium.core`` errors and ``OSError``); if no file reads, a ``DatasetError``
    is raised.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "yes").mkdir()
        >>> save(root / "yes" / "a.flac", torch.zeros(1, 100), 16000)
        >>> waveform, sr, label = AudioFolder(root, transform=lambda w: w[..., :50])[0]
        >>> waveform.shape, sr, label
        (torch.Size([1, 50]), 16000, 0)
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        extensions: Sequence[str] = AUDIO_EXTENSIONS,
        transform: Callable[[Tensor], Any] | None = None,
        target_transform: Callable[[int], Any] | None = None,
        loader: Callable[[Path], tuple[Tensor, int]] = load,
        *,
        on_error: str = "raise",
    ) -> None:
        check_on_error(on_error)
        self.root = Path(root)
        self.extensions = tuple(e.lower() for e in extensions)
        self.classes = class_folders(self.root)
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self.samples = [
            (path, self.class_to_idx[name])
            for name in self.classes
            for path in sorted((self.root / name).rglob("*"))
            if path.is_file() and path.suffix.lower() in self.extensions
        ]
        if not self.samples:
            raise DatasetError(f"no files with extensions {self.extensions} found", path=self.root)
        self.targets = [target for _, target in self.samples]
        self.transform = transform
        self.target_transform = target_transform
        self.loader = loader
        self.start_skipping(on_error, len(self.samples))

    def __getitem__(self, index: int) -> tuple[Any, int, Any]:
        """Load ``(waveform, sample_rate, class_index)`` number ``index``.

        Example:
            >>> import pathlib, tempfile, torch, warnings
            >>> from trivium.audio.io import save
            >>> root = pathlib.Path(tempfile.mkdtemp())
            >>> (root / "yes").mkdir()
            >>> _ = (root / "yes" / "a.wav").write_bytes(b"")
            >>> save(root / "yes" / "b.wav", torch.zeros(1, 8), 8000)
            >>> ds = AudioFolder(root, on_error="skip")
            >>> with warnings.catch_warnings(record=True):
            ...     waveform, sr, label = ds[0]  # a.wav is empty: b.wav takes its place
            >>> waveform.shape, [p.name for p in ds.skipped_files]
            (torch.Size([1, 8]), ['a.wav'])
        """
        return self.get_item(index)

    def load_item(self, index: int) -> tuple[Any, int, Any]:
        """Item ``index``, or a ``trivium.core`` error naming its file.

        Example:
            >>> import pathlib, tempfile
            >>> from trivium.core.errors import TriviumError
            >>> root = pathlib.Path(tempfile.mkdtemp())
            >>> (root / "yes").mkdir()
            >>> _ = (root / "yes" / "cut.wav").write_bytes(b"RIFF")  # a truncated header
            >>> try:
            ...     AudioFolder(root).load_item(0)
            ... except TriviumError as e:  # a trivium.core error naming the file
            ...     print(type(e).__name__, pathlib.Path(e.path).name)
            UnsupportedFormatError cut.wav
        """
        path, target = self.samples[index]
        try:
            waveform, sample_rate = self.loader(path)
        except (TriviumError, OSError) as e:
            raise with_path(e, path) from e
        if self.transform is not None:
            waveform = self.transform(waveform)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return waveform, sample_rate, target

    def item_path(self, index: int) -> Path:
        """The file of item ``index``.

        Example:
            >>> import pathlib, tempfile
            >>> root = pathlib.Path(tempfile.mkdtemp())
            >>> for label, name in (("no", "x.wav"), ("yes", "y.wav")):
            ...     (root / label).mkdir()
            ...     (root / label / name).touch()  # not read until its item is loaded
            >>> AudioFolder(root).item_path(1).relative_to(root).as_posix()
            'yes/y.wav'
        """
        return self.samples[index][0]

    def __len__(self) -> int:
        return len(self.samples)
