"""Common Voice (Ardila et al., 2020), read from a language folder like torchaudio's.

``root/<tsv>`` (``train.tsv``, ``dev.tsv``, ``test.tsv``, ``validated.tsv``, ...: a
header then one tab-separated row per clip, the second column ``path``) and
``root/clips/<path>`` MP3 files. Common Voice needs accepting its terms at
https://commonvoice.mozilla.org/datasets, so it is not downloaded here.

Example:
    >>> import tempfile
    >>> try:
    ...     COMMONVOICE(tempfile.mkdtemp())
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, load_audio, read_rows
from trivium.core.errors import DatasetError

__all__ = ["COMMONVOICE"]

MANUAL = (
    "download a language's archive from https://commonvoice.mozilla.org/datasets (it "
    "needs accepting the terms) and pass its folder, the one holding the .tsv files and "
    "clips/, as root"
)

Item = tuple[Tensor, int, dict[str, str]]


class COMMONVOICE(Dataset):
    """Common Voice items ``(waveform, sample_rate, row)``, ``row`` the TSV row as a dict.

    ``tsv`` names the table to read in ``root``; its clips are ``root/clips/<path>``
    (``.mp3`` appended to a path not ending in it, as in torchaudio), decoded by
    libsndfile.

    Example:
        >>> import pathlib, tempfile, numpy as np, soundfile as sf
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "clips").mkdir()
        >>> sf.write(root / "clips" / "a.mp3", np.zeros(4800, "float32"), 48000)
        >>> _ = (root / "train.tsv").write_text("client_id\\tpath\\tsentence\\nc1\\ta.mp3\\tHi\\n")
        >>> COMMONVOICE(root)[0][1:]
        (48000, {'client_id': 'c1', 'path': 'a.mp3', 'sentence': 'Hi'})
    """

    _ext_txt = ".txt"
    _ext_audio = ".mp3"
    _folder_audio = "clips"

    def __init__(self, root: str | os.PathLike[str], tsv: str = "train.tsv") -> None:
        self._path = os.fspath(root)
        self._tsv = os.path.join(self._path, tsv)
        ensure_path(Path(self._tsv), "COMMONVOICE", None, False, manual=MANUAL)
        rows = read_rows(Path(self._tsv), "\t", quoting=csv.QUOTE_MINIMAL)
        if not rows or len(rows[0]) < 2 or rows[0][1] != "path":
            raise DatasetError("the header's second column is not 'path'", path=self._tsv)
        for lineno, row in enumerate(rows[1:], 2):
            if len(row) < 2:
                raise DatasetError(f"row {lineno} has no path: {row!r}", path=self._tsv)
        self._header, self._walker = rows[0], rows[1:]

    def __getitem__(self, n: int) -> Item:
        """Load item ``n``: ``(waveform, sample_rate, row)``."""
        line = self._walker[n]
        filename = os.path.join(self._path, self._folder_audio, line[1])
        if not filename.endswith(self._ext_audio):
            filename += self._ext_audio
        waveform, sample_rate = load_audio(filename)
        return waveform, sample_rate, dict(zip(self._header, line, strict=False))

    def __len__(self) -> int:
        return len(self._walker)
