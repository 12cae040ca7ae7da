"""YesNo (the OpenSLR 1 corpus), read from its archive's layout like torchaudio's.

``root/waves_yesno/<l0>_<l1>_..._<l7>.wav``: 8 kHz recordings of one man saying
"yes" (1) or "no" (0) eight times, the labels in the file name.

Example:
    >>> import tempfile
    >>> try:
    ...     YESNO(tempfile.mkdtemp())
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
from trivium.core.errors import DatasetError

__all__ = ["YESNO"]

URL = "http://www.openslr.org/resources/1/waves_yesno.tar.gz"
FOLDER_IN_ARCHIVE = "waves_yesno"
# SHA-256 of the archive (the digest torchaudio checks).
CHECKSUMS = {
    "waves_yesno.tar.gz": "c3f49e0cca421f96b75b41640749167b52118f232498667ca7a5f9416aef8e73"
}

Item = tuple[Tensor, int, list[int]]


class YESNO(Dataset):
    """YesNo items ``(waveform, sample_rate, labels)``, ``labels`` eight 0 (no) / 1 (yes).

    ``download=True`` fetches a missing archive from ``url`` (SHA-256 checked) and
    extracts it into ``root``.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "waves_yesno").mkdir()
        >>> save(root / "waves_yesno" / "0_1_0_0_1_0_1_1.wav", torch.zeros(1, 80), 8000)
        >>> YESNO(root)[0][1:]
        (8000, [0, 1, 0, 0, 1, 0, 1, 1])
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        url: str = URL,
        folder_in_archive: str = FOLDER_IN_ARCHIVE,
        download: bool = False,
    ) -> None:
        self._path = Path(root) / folder_in_archive
        ensure_path(self._path, "YESNO", url, download, extract_to=Path(root), checksums=CHECKSUMS)
        self._walker = sorted(p.stem for p in self._path.glob("*.wav"))

    def __getitem__(self, n: int) -> Item:
        """Load item ``n``: ``(waveform, sample_rate, labels)``."""
        fileid = self._walker[n]
        path = self._path / (fileid + ".wav")
        labels = fileid.split("_")
        if not all(label in ("0", "1") for label in labels):
            raise DatasetError("the name is not 0s and 1s joined by '_'", path=path)
        waveform, sample_rate = load_audio(path)
        return waveform, sample_rate, [int(label) for label in labels]

    def __len__(self) -> int:
        return len(self._walker)
