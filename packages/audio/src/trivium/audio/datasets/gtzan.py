"""GTZAN (Tzanetakis and Cook, 2002), read from its archive's layout like torchaudio's.

``root/genres/<genre>/<genre>.<5 digits>.wav``, 30 s clips of ten genres. ``subset``
picks the filtered split of :mod:`~trivium.audio.datasets.gtzan_splits`.

Example:
    >>> import tempfile
    >>> try:
    ...     GTZAN(tempfile.mkdtemp())
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, load_audio
from trivium.audio.datasets.gtzan_splits import (
    FILTERED_TEST,
    FILTERED_TRAIN,
    FILTERED_VALID,
    GENRES,
)

__all__ = ["GTZAN"]

URL = "http://opihi.cs.uvic.ca/sound/genres.tar.gz"
FOLDER_IN_ARCHIVE = "genres"
# SHA-256 of the archive (the digest torchaudio checks).
CHECKSUMS = {"genres.tar.gz": "24347e0223d2ba798e0a558c4c172d9d4a19c00bb7963fe055d183dadb4ef2c6"}
_SUBSETS = {"training": FILTERED_TRAIN, "validation": FILTERED_VALID, "testing": FILTERED_TEST}

Item = tuple[Tensor, int, str]


def _is_clip(name: str) -> bool:
    """Whether ``name`` (no extension) is ``<genre>.<5 digits>``."""
    genre, dot, number = name.partition(".")
    return bool(dot) and genre in GENRES and len(number) == 5 and number.isdigit()


def _clips(path: Path) -> list[str]:
    """The clips in each genre's folder, genre by genre, each folder sorted by name."""
    walker = []
    for genre in GENRES:
        folder = path / genre
        if not folder.is_dir():
            continue
        for filename in sorted(os.listdir(folder)):
            name, ext = os.path.splitext(filename)
            if ext.lower() == ".wav" and _is_clip(name):
                walker.append(name)
    return walker


class GTZAN(Dataset):
    """GTZAN items ``(waveform, sample_rate, label)``, ``label`` the genre.

    ``subset=None`` lists the ``<genre>.<nnnnn>.wav`` files present under each genre's
    folder (so a trimmed or relabelled copy works); ``"training"``, ``"validation"``
    and ``"testing"`` are the filtered split's fixed lists. ``download=True`` fetches
    a missing archive from ``url`` (SHA-256 checked) into ``root``; the original
    host has been unreachable since 2022, so pass a mirror's ``url``.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "genres" / "jazz").mkdir(parents=True)
        >>> save(root / "genres" / "jazz" / "jazz.00007.wav", torch.zeros(1, 220), 22050)
        >>> GTZAN(root)[0][1:]
        (22050, 'jazz')
    """

    _ext_audio = ".wav"

    def __init__(
        self,
        root: str | os.PathLike[str],
        url: str = URL,
        folder_in_archive: str = FOLDER_IN_ARCHIVE,
        download: bool = False,
        subset: str | None = None,
    ) -> None:
        if subset is not None and subset not in _SUBSETS:
            raise ValueError(f"subset must be None or one of {list(_SUBSETS)}, got {subset!r}")
        self.root = os.fspath(root)
        self.url = url
        self.folder_in_archive = folder_in_archive
        self.download = download
        self.subset = subset
        self._path = Path(root) / folder_in_archive
        ensure_path(self._path, "GTZAN", url, download, extract_to=Path(root), checksums=CHECKSUMS)
        self._walker = _clips(self._path) if subset is None else list(_SUBSETS[subset])

    def __getitem__(self, n: int) -> Item:
        """Load item ``n``: ``(waveform, sample_rate, label)``."""
        fileid = self._walker[n]
        label = fileid.split(".")[0]
        waveform, sample_rate = load_audio(self._path / label / (fileid + self._ext_audio))
        return waveform, sample_rate, label

    def __len__(self) -> int:
        return len(self._walker)
