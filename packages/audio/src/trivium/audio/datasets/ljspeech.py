"""LJSpeech 1.1 (Ito and Johnson, 2017), read from its archive's layout like torchaudio's.

``root/LJSpeech-1.1/metadata.csv`` (``<id>|<transcript>|<normalized transcript>``
lines, in the corpus's order) and ``root/LJSpeech-1.1/wavs/<id>.wav``.

Example:
    >>> import tempfile
    >>> try:
    ...     LJSPEECH(tempfile.mkdtemp())
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, load_audio, read_rows
from trivium.core.download import split_url

__all__ = ["LJSPEECH"]

URL = "https://data.keithito.com/data/speech/LJSpeech-1.1.tar.bz2"
FOLDER_IN_ARCHIVE = "wavs"
# SHA-256 of the archive (the digest torchaudio checks).
CHECKSUMS = {
    "LJSpeech-1.1.tar.bz2": "be1a30453f28eb8dd26af4101ae40cbf2c50413b1bb21936cbcdc6fae3de8aa5"
}

Item = tuple[Tensor, int, str, str]


class LJSPEECH(Dataset):
    """LJSpeech items ``(waveform, sample_rate, transcript, normalized_transcript)``.

    ``download=True`` fetches a missing archive from ``url`` (SHA-256 checked) and
    extracts it into ``root``; ``metadata.csv`` lines without three ``|``-separated
    fields raise :class:`~trivium.core.DatasetError` naming the line.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> base = root / "LJSpeech-1.1"
        >>> (base / "wavs").mkdir(parents=True)
        >>> save(base / "wavs" / "LJ001-0001.wav", torch.zeros(1, 220), 22050)
        >>> _ = (base / "metadata.csv").write_text("LJ001-0001|Dr. No|Doctor No\\n")
        >>> LJSPEECH(root)[0][1:]
        (22050, 'Dr. No', 'Doctor No')
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        url: str = URL,
        folder_in_archive: str = FOLDER_IN_ARCHIVE,
        download: bool = False,
    ) -> None:
        _, basename, _ = split_url(url)
        self._path = Path(root) / basename / folder_in_archive
        ensure_path(
            self._path,
            "LJSPEECH",
            url,
            download,
            archive=Path(root) / os.path.basename(split_url(url)[0]),
            extract_to=Path(root),
            checksums=CHECKSUMS,
        )
        self._metadata_path = Path(root) / basename / "metadata.csv"
        self._flist = read_rows(self._metadata_path, "|", fields=3)

    def __getitem__(self, n: int) -> Item:
        """Load item ``n``: ``(waveform, sample_rate, transcript, normalized_transcript)``."""
        fileid, transcript, normalized_transcript = self._flist[n]
        waveform, sample_rate = load_audio(self._path / (fileid + ".wav"))
        return waveform, sample_rate, transcript, normalized_transcript

    def __len__(self) -> int:
        return len(self._flist)
