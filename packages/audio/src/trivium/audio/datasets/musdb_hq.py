"""MUSDB18-HQ (Rafii et al., 2019), read from its archive's layout like torchaudio's.

``root/musdb18hq/{train,test}/<artist - title>/{bass,drums,other,vocals,mixture}.wav``,
44.1 kHz stereo stems of equal length.

Example:
    >>> import tempfile
    >>> try:
    ...     MUSDB_HQ(tempfile.mkdtemp(), "test")
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, load_audio
from trivium.core.errors import DatasetError

__all__ = ["MUSDB_HQ"]

URL = "https://zenodo.org/record/3338373/files/musdb18hq.zip"
# SHA-256 of the archive (the digest torchaudio checks).
CHECKSUMS = {"musdb18hq.zip": "baac80d0483c61d74b2e5f3be75fa557eec52898339e6aa45c1fa48833c5d21d"}
SAMPLE_RATE = 44100
SOURCES = ["bass", "drums", "other", "vocals"]
# The songs of the training set held out for validation (torchaudio's list).
VALIDATION_SET = [
    "Actions - One Minute Smile",
    "Clara Berry And Wooldog - Waltz For My Victims",
    "Johnny Lokke - Promises & Lies",
    "Patrick Talbot - A Reason To Leave",
    "Triviul - Angelsaint",
    "Alexander Ross - Goodbye Bolero",
    "Fergessen - Nos Palpitants",
    "Leaf - Summerghost",
    "Skelpolu - Human Mistakes",
    "Young Griffo - Pennies",
    "ANiMAL - Rockshow",
    "James May - On The Line",
    "Meaxic - Take A Step",
    "Traffic Experiment - Sirens",
]

Item = tuple[torch.Tensor, int, int, str]


def _songs(path: Path, skip: set[str]) -> list[str]:
    """The leaf folders under ``path`` (relative names, sorted), hidden ones and ``skip`` aside."""
    names = []
    for folder, subfolders, _ in os.walk(path, followlinks=True):
        here = Path(folder)
        if here.name.startswith(".") or subfolders or here == path:
            continue
        name = str(here.relative_to(path))
        if name not in skip:
            names.append(name)
    return sorted(names)


class MUSDB_HQ(Dataset):
    """MUSDB18-HQ items ``(waveforms, sample_rate, num_frames, track_name)``.

    ``waveforms`` stacks the ``sources`` stems (default bass, drums, other, vocals;
    ``"mixture"`` is one too): ``[len(sources), channels, num_frames]``. ``subset``
    is ``"train"`` or ``"test"``; ``split`` cuts the training set into ``"train"``
    and ``"validation"`` (torchaudio's 14 songs). ``download=True`` fetches the zip
    (SHA-256 checked) into ``root``; an archive already there is extracted.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> song = root / "musdb18hq" / "test" / "Al James - Schoolboy Facination"
        >>> song.mkdir(parents=True)
        >>> for stem in ("bass", "drums", "other", "vocals"):
        ...     save(song / f"{stem}.wav", torch.zeros(2, 441), 44100)
        >>> waveforms, rate, frames, name = MUSDB_HQ(root, "test")[0]
        >>> waveforms.shape, rate, frames, name
        (torch.Size([4, 2, 441]), 44100, 441, 'Al James - Schoolboy Facination')
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        subset: str,
        sources: list[str] | None = None,
        split: str | None = None,
        download: bool = False,
    ) -> None:
        if subset not in ("test", "train"):
            raise ValueError(f"subset must be 'test' or 'train', got {subset!r}")
        if split is not None and split not in ("train", "validation"):
            raise ValueError(f"split must be None, 'train' or 'validation', got {split!r}")
        self.sources = list(sources) if sources else list(SOURCES)
        self.split = split
        archive = Path(root) / "musdb18hq.zip"
        base_path = Path(root) / "musdb18hq"
        self._path = base_path / subset
        ensure_path(
            self._path,
            "MUSDB_HQ",
            URL,
            download or archive.is_file(),
            archive=archive,
            extract_to=base_path,
            checksums=CHECKSUMS,
        )
        if split == "validation":
            self.names = list(VALIDATION_SET)
        else:
            self.names = _songs(self._path, set(VALIDATION_SET) if split else set())

    def _get_track(self, name: str, source: str) -> Path:
        return self._path / name / f"{source}.wav"

    def _load_sample(self, n: int) -> Item:
        name = self.names[n]
        wavs = []
        for source in self.sources:
            track = self._get_track(name, source)
            wav, _ = load_audio(track, SAMPLE_RATE)
            if wavs and wav.shape[-1] != wavs[0].shape[-1]:
                raise DatasetError(
                    f"{wav.shape[-1]} frames where {self.sources[0]}.wav has {wavs[0].shape[-1]}",
                    path=track,
                )
            wavs.append(wav)
        return torch.stack(wavs), SAMPLE_RATE, wavs[0].shape[-1], name

    def __getitem__(self, n: int) -> Item:
        """Load song ``n``: ``(waveforms, sample_rate, num_frames, track_name)``."""
        return self._load_sample(n)

    def __len__(self) -> int:
        return len(self.names)
