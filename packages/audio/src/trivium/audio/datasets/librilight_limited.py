"""Libri-light's limited supervision sets (Kahn et al., 2020), read like torchaudio's.

``root/librispeech_finetuning/1h/<0..5>/{clean,other}/<spk>/<chapter>/*.flac`` and
``.../9h/{clean,other}/...``, each chapter with its LibriSpeech ``.trans.txt``.
``"10min"`` is ``1h/0``, ``"1h"`` the six ``1h/*`` folds, ``"10h"`` those and ``9h``.

Example:
    >>> import tempfile
    >>> try:
    ...     LibriLightLimited(tempfile.mkdtemp())
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, load_audio, read_chapter_transcripts
from trivium.audio.datasets.librispeech import utterance_metadata

__all__ = ["LibriLightLimited"]

ARCHIVE_NAME = "librispeech_finetuning"
URL = "https://dl.fbaipublicfiles.com/librilight/data/librispeech_finetuning.tgz"
# SHA-256 of the archive (the digest torchaudio checks).
CHECKSUMS = {
    "librispeech_finetuning.tgz": (
        "5d1efdc777b548194d7e09ba89126e2188026df9fd57aa57eb14408d2b2342af"
    )
}
SUBSETS = {"10min": ["1h/0"], "1h": ["1h/*"], "10h": ["1h/*", "9h"]}

Item = tuple[Tensor, int, str, int, int, int]


def _fileids(path: Path, patterns: list[str]) -> list[tuple[str, str]]:
    """``(folder, utterance id)`` of each flac, folder being e.g. ``1h/0/clean``.

    Sorted on the folder and id run together, as torchaudio sorts them.
    """
    found = []
    for pattern in patterns:
        for p in path.glob(f"{pattern}/*/*/*/*.flac"):
            found.append((str(p.relative_to(path).parent.parent.parent), p.stem))
    return sorted(found, key=lambda x: x[0] + x[1])


class LibriLightLimited(Dataset):
    """Libri-light limited items, LibriSpeech's tuple
    ``(waveform, sample_rate, transcript, speaker_id, chapter_id, utterance_id)``.

    ``subset`` is ``"10min"``, ``"1h"`` or ``"10h"``. ``download=True`` fetches the
    archive (SHA-256 checked) into ``root`` and extracts it there.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> chapter = root / "librispeech_finetuning" / "1h" / "0" / "clean" / "19" / "198"
        >>> chapter.mkdir(parents=True)
        >>> save(chapter / "19-198-0001.flac", torch.zeros(1, 160), 16000)
        >>> _ = (chapter / "19-198.trans.txt").write_text("19-198-0001 NORTHANGER ABBEY\\n")
        >>> LibriLightLimited(root)[0][1:]
        (16000, 'NORTHANGER ABBEY', 19, 198, 1)
    """

    _ext_txt = ".trans.txt"
    _ext_audio = ".flac"

    def __init__(
        self, root: str | os.PathLike[str], subset: str = "10min", download: bool = False
    ) -> None:
        if subset not in SUBSETS:
            raise ValueError(f"subset must be one of {list(SUBSETS)}, got {subset!r}")
        self._path = Path(root) / ARCHIVE_NAME
        ensure_path(
            self._path,
            "LibriLightLimited",
            URL,
            download,
            archive=Path(root) / f"{ARCHIVE_NAME}.tgz",
            extract_to=Path(root),
            checksums=CHECKSUMS,
        )
        self._fileids_paths = _fileids(self._path, SUBSETS[subset])
        self._transcripts = {
            folder: read_chapter_transcripts(self._path / folder)
            for folder in sorted({folder for folder, _ in self._fileids_paths})
        }

    def __getitem__(self, n: int) -> Item:
        """Load item ``n`` (LibriSpeech's tuple)."""
        folder, fileid = self._fileids_paths[n]
        metadata = utterance_metadata(fileid, folder, self._transcripts[folder], self._path)
        waveform, _ = load_audio(self._path / metadata[0])
        return (waveform, *metadata[1:])

    def __len__(self) -> int:
        return len(self._fileids_paths)
