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
from trivium.core.errors import DatasetError

__all__ = ["AUDIO_EXTENSIONS", "AudioFolder"]

AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aiff", ".aif", ".au")


class AudioFolder(Dataset):
    """Items ``(waveform, sample_rate, class_index)`` from ``root/<class>/**/<file>``.

    Classes are the sorted sub-folder names (``classes``, ``class_to_idx``); files
    are those with one of ``extensions`` (case-insensitive), sorted, in ``samples``
    as ``(path, class_index)``. ``transform`` is applied to the waveform and
    ``target_transform`` to the class index; ``loader(path) -> (waveform, sample_rate)``
    defaults to :func:`trivium.audio.load`.

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
    ) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise DatasetError("AudioFolder root is not a folder", path=self.root)
        self.extensions = tuple(e.lower() for e in extensions)
        self.classes = sorted(e.name for e in os.scandir(self.root) if e.is_dir())
        if not self.classes:
            raise DatasetError("no class sub-folders found", path=self.root)
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

    def __getitem__(self, index: int) -> tuple[Any, int, Any]:
        """Load ``(waveform, sample_rate, class_index)`` number ``index``."""
        path, target = self.samples[index]
        waveform, sample_rate = self.loader(path)
        if self.transform is not None:
            waveform = self.transform(waveform)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return waveform, sample_rate, target

    def __len__(self) -> int:
        return len(self.samples)
