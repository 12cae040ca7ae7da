"""QUESST 2014 query-by-example search (Anguera et al., 2015), read like torchaudio's.

``root/quesst14Database/`` with the recordings (8 kHz) and
``scoring/language_key_{utterances,dev,eval}.lst`` listing ``<path> <language>`` for
the documents and the dev and eval queries.

Example:
    >>> import tempfile
    >>> try:
    ...     QUESST14(tempfile.mkdtemp(), "docs")
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch
from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, load_audio, read_lines
from trivium.core.errors import DatasetError

__all__ = ["QUESST14"]

URL = "https://speech.fit.vutbr.cz/files/quesst14Database.tgz"
SAMPLE_RATE = 8000
# SHA-256 of the archive (the digest torchaudio checks).
CHECKSUMS = {
    "quesst14Database.tgz": "4f869e06bc066bbe9c5dde31dbd3909a0870d70291110ebbb38878dcbc2fc5e4"
}
LANGUAGES = ["albanian", "basque", "czech", "nnenglish", "romanian", "slovak"]
_LISTS = {
    "docs": "language_key_utterances.lst",
    "dev": "language_key_dev.lst",
    "eval": "language_key_eval.lst",
}


def filter_audio_paths(path: Path, language: str | None, lst_name: str) -> list[Path]:
    """The files ``scoring/<lst_name>`` lists (for ``language``, or all), under ``path``.

    A listed path's first folder (the database's own name) is dropped.

    Example:
        >>> import pathlib, tempfile
        >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "scoring").mkdir()
        >>> lines = "db/Audio/q_1.wav basque\\ndb/Audio/q_2.wav czech\\n"
        >>> _ = (d / "scoring" / "k.lst").write_text(lines)
        >>> [p.relative_to(d).as_posix() for p in filter_audio_paths(d, "czech", "k.lst")]
        ['Audio/q_2.wav']
    """
    listing = path / "scoring" / lst_name
    audio_paths = []
    for lineno, line in enumerate(read_lines(listing), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2:
            raise DatasetError(f"line {lineno} is not '<path> <language>': {line!r}", path=listing)
        audio_path, lang = fields
        if language is None or lang == language:
            audio_paths.append(path / re.sub(r"^.*?/", "", audio_path))
    return audio_paths


class QUESST14(Dataset):
    """QUESST 2014 items ``(waveform, sample_rate, file_name)``.

    ``subset`` is ``"docs"`` (the documents searched), ``"dev"`` or ``"eval"`` (the
    queries); ``language`` one of ``LANGUAGES`` or ``None`` for all. ``download=True``
    fetches the archive (SHA-256 checked) into ``root``; one already there is extracted.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> db = root / "quesst14Database"
        >>> (db / "Audio").mkdir(parents=True); (db / "scoring").mkdir()
        >>> save(db / "Audio" / "quesst14_00001.wav", torch.zeros(1, 80), 8000)
        >>> line = "quesst14Database/Audio/quesst14_00001.wav nnenglish\\n"
        >>> _ = (db / "scoring" / "language_key_utterances.lst").write_text(line)
        >>> QUESST14(root, "docs").get_metadata(0)
        ('Audio/quesst14_00001.wav', 8000, 'quesst14_00001')
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        subset: str,
        language: str | None = "nnenglish",
        download: bool = False,
    ) -> None:
        if subset not in _LISTS:
            raise ValueError(f"subset must be one of {list(_LISTS)}, got {subset!r}")
        if language is not None and language not in LANGUAGES:
            raise ValueError(f"language must be None or one of {LANGUAGES}, got {language!r}")
        archive = Path(root) / "quesst14Database.tgz"
        self._path = Path(root) / "quesst14Database"
        ensure_path(
            self._path,
            "QUESST14",
            URL,
            download or archive.is_file(),
            archive=archive,
            extract_to=Path(root),
            checksums=CHECKSUMS,
        )
        self.data = filter_audio_paths(self._path, language, _LISTS[subset])

    def get_metadata(self, n: int) -> tuple[str, int, str]:
        """Item ``n`` with the audio path (relative to ``root/quesst14Database``).

        Example:
            >>> QUESST14.get_metadata.__name__
            'get_metadata'
        """
        audio_path = self.data[n]
        return os.path.relpath(audio_path, self._path), SAMPLE_RATE, audio_path.with_suffix("").name

    def __getitem__(self, n: int) -> tuple[torch.Tensor, int, str]:
        """Load item ``n``: ``(waveform, sample_rate, file_name)``."""
        metadata = self.get_metadata(n)
        waveform, _ = load_audio(self._path / metadata[0], metadata[1])
        return (waveform, *metadata[1:])

    def __len__(self) -> int:
        return len(self.data)
