"""LibriTTS (Zen et al., 2019), read from its standard layout like torchaudio's.

``root/LibriTTS/<split>/<speaker>/<chapter>/<utterance>.wav`` beside
``<utterance>.original.txt`` and ``<utterance>.normalized.txt``, where an utterance id
looks like ``84_121123_000007_000001``.

Example:
    >>> import tempfile
    >>> try:
    ...     LIBRITTS(tempfile.mkdtemp(), url="dev-clean")
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.datasets.openslr import list_split
from trivium.audio.io import load
from trivium.core.errors import NO_SUCH_PATH, DatasetError, PathNotFoundError

__all__ = ["LIBRITTS"]

URL = "train-clean-100"
FOLDER_IN_ARCHIVE = "LibriTTS"
BASE_URL = "http://www.openslr.org/resources/60/"
# SHA-256 of the OpenSLR archives (the digests torchaudio checks).
CHECKSUMS = {
    "dev-clean.tar.gz": "da0864e1bd26debed35da8a869dd5c04dfc27682921936de7cff9c8a254dbe1a",
    "dev-other.tar.gz": "d413eda26f3a152ac7c9cf3658ef85504dfb1b625296e5fa83727f5186cca79c",
    "test-clean.tar.gz": "234ea5b25859102a87024a4b9b86641f5b5aaaf1197335c95090cde04fe9a4f5",
    "test-other.tar.gz": "33a5342094f3bba7ccc2e0500b9e72d558f72eb99328ac8debe1d9080402f10d",
    "train-clean-100.tar.gz": "c5608bf1ef74bb621935382b8399c5cdd51cd3ee47cec51f00f885a64c6c7f6b",
    "train-clean-360.tar.gz": "ce7cff44dcac46009d18379f37ef36551123a1dc4e5c8e4eb73ae57260de4886",
    "train-other-500.tar.gz": "e35f7e34deeb2e2bdfe4403d88c8fdd5fbf64865cae41f027a185a6965f0a5df",
}

Item = tuple[Tensor, int, str, str, int, int, str]


def _first_line(path: Path) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline()
    except FileNotFoundError:
        raise PathNotFoundError(f"{NO_SUCH_PATH}; the utterance's transcript", path=path) from None


class LIBRITTS(Dataset):
    """LibriTTS items ``(waveform, sample_rate, original_text, normalized_text, speaker_id,
    chapter_id, utterance_id)`` (``utterance_id`` is the full id string, as torchaudio's).

    ``url`` and ``download`` work as in :class:`~trivium.audio.datasets.LIBRISPEECH`.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> chapter = root / "LibriTTS" / "dev-clean" / "84" / "121123"
        >>> chapter.mkdir(parents=True)
        >>> uid = "84_121123_000007_000001"
        >>> save(chapter / f"{uid}.wav", torch.zeros(1, 2400), 24000)
        >>> _ = (chapter / f"{uid}.original.txt").write_text("Go, do you hear?")
        >>> _ = (chapter / f"{uid}.normalized.txt").write_text("Go, do you hear?")
        >>> LIBRITTS(root, url="dev-clean")[0][1:]
        (24000, 'Go, do you hear?', 'Go, do you hear?', 84, 121123, '84_121123_000007_000001')
    """

    _ext_original_txt = ".original.txt"
    _ext_normalized_txt = ".normalized.txt"
    _ext_audio = ".wav"

    def __init__(
        self,
        root: str | os.PathLike[str],
        url: str = URL,
        folder_in_archive: str = FOLDER_IN_ARCHIVE,
        download: bool = False,
    ) -> None:
        _, self._path, self._walker = list_split(
            root, url, folder_in_archive, download, BASE_URL, CHECKSUMS, "LIBRITTS", self._ext_audio
        )

    def __getitem__(self, n: int) -> Item:
        """Load item ``n`` (see the class docstring for the fields)."""
        fileid = self._walker[n]
        parts = fileid.split("_")
        if len(parts) != 4:
            raise DatasetError(f"unexpected utterance id {fileid!r}", path=self._path)
        speaker_id, chapter_id = parts[0], parts[1]
        folder = self._path / speaker_id / chapter_id
        waveform, sample_rate = load(folder / (fileid + self._ext_audio))
        original = _first_line(folder / (fileid + self._ext_original_txt))
        normalized = _first_line(folder / (fileid + self._ext_normalized_txt))
        return (
            waveform,
            sample_rate,
            original,
            normalized,
            int(speaker_id),
            int(chapter_id),
            fileid,
        )

    def __len__(self) -> int:
        return len(self._walker)
