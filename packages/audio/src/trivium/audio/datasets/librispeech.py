"""LibriSpeech (Panayotov et al., 2015), read from its standard layout like torchaudio's.

``root/LibriSpeech/<split>/<speaker>/<chapter>/<speaker>-<chapter>-<utt>.flac`` with
one ``<speaker>-<chapter>.trans.txt`` per chapter holding ``<id> <TRANSCRIPT>`` lines.

Example:
    >>> import tempfile
    >>> try:
    ...     LIBRISPEECH(tempfile.mkdtemp(), url="dev-clean")
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.datasets.common import read_chapter_transcripts
from trivium.audio.datasets.openslr import list_split
from trivium.audio.io import load
from trivium.core.errors import DatasetError

__all__ = ["LIBRISPEECH", "utterance_metadata"]

URL = "train-clean-100"
FOLDER_IN_ARCHIVE = "LibriSpeech"
SAMPLE_RATE = 16000
BASE_URL = "http://www.openslr.org/resources/12/"
# SHA-256 of the OpenSLR archives (the digests torchaudio checks).
CHECKSUMS = {
    "dev-clean.tar.gz": "76f87d090650617fca0cac8f88b9416e0ebf80350acb97b343a85fa903728ab3",
    "dev-other.tar.gz": "12661c48e8c3fe1de2c1caa4c3e135193bfb1811584f11f569dd12645aa84365",
    "test-clean.tar.gz": "39fde525e59672dc6d1551919b1478f724438a95aa55f874b576be21967e6c23",
    "test-other.tar.gz": "d09c181bba5cf717b3dee7d4d592af11a3ee3a09e08ae025c5506f6ebe961c29",
    "train-clean-100.tar.gz": "d4ddd1d5a6ab303066f14971d768ee43278a5f2a0aa43dc716b0e64ecbbbf6e2",
    "train-clean-360.tar.gz": "146a56496217e96c14334a160df97fffedd6e0a04e66b9c5af0d40be3c792ecf",
    "train-other-500.tar.gz": "ddb22f27f96ec163645d53215559df6aa36515f26e01dd70798188350adcb6d2",
}

Item = tuple[Tensor, int, str, int, int, int]
Metadata = tuple[str, int, str, int, int, int]


def utterance_metadata(
    fileid: str, folder: str, transcripts: Mapping[str, str], root: Path
) -> Metadata:
    """``(path, sample_rate, transcript, speaker, chapter, utterance)`` of a LibriSpeech id.

    ``path`` is ``folder/<speaker>/<chapter>/<fileid>.flac``, relative to ``root``;
    the transcript comes from ``transcripts`` (see :func:`read_chapter_transcripts`).

    Example:
        >>> from pathlib import Path
        >>> utterance_metadata("84-121-3", "dev-clean", {"84-121-3": "HI"}, Path("r"))
        ('dev-clean/84/121/84-121-3.flac', 16000, 'HI', 84, 121, 3)
    """
    speaker_id, chapter_id, utterance_id = fileid.split("-")
    relpath = os.path.join(folder, speaker_id, chapter_id, fileid + ".flac")
    transcript = transcripts.get(fileid)
    if transcript is None:
        raise DatasetError(
            f"no transcript for {fileid} in {speaker_id}-{chapter_id}.trans.txt",
            path=root / relpath,
        )
    return relpath, SAMPLE_RATE, transcript, int(speaker_id), int(chapter_id), int(utterance_id)


class LIBRISPEECH(Dataset):
    """LibriSpeech: ``(waveform, sample_rate, transcript, speaker_id, chapter_id, utterance_id)``.

    ``url`` is a split (``"dev-clean"``, ``"train-clean-100"``, ...) or a full archive
    URL (a mirror; ``#sha256=HEX`` may be appended), as torchaudio's. With
    ``download=True`` a missing split is downloaded into ``root``, its SHA-256 checked
    and extracted; without it a missing split raises :class:`DatasetError` saying
    what to put where. ``waveform`` is ``[1, time]`` float32.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> chapter = root / "LibriSpeech" / "dev-clean" / "84" / "121123"
        >>> chapter.mkdir(parents=True)
        >>> save(chapter / "84-121123-0000.flac", torch.zeros(1, 1600), 16000)
        >>> _ = (chapter / "84-121123.trans.txt").write_text("84-121123-0000 GO DO YOU HEAR\\n")
        >>> ds = LIBRISPEECH(root, url="dev-clean")
        >>> waveform, sr, text, speaker, chapter_id, utt = ds[0]
        >>> waveform.shape, sr, text, speaker, chapter_id, utt
        (torch.Size([1, 1600]), 16000, 'GO DO YOU HEAR', 84, 121123, 0)
    """

    _ext_txt = ".trans.txt"
    _ext_audio = ".flac"

    def __init__(
        self,
        root: str | os.PathLike[str],
        url: str = URL,
        folder_in_archive: str = FOLDER_IN_ARCHIVE,
        download: bool = False,
    ) -> None:
        split, self._path, self._walker = list_split(
            root,
            url,
            folder_in_archive,
            download,
            BASE_URL,
            CHECKSUMS,
            "LIBRISPEECH",
            self._ext_audio,
        )
        self._url = split.name
        self._archive = self._path.parent
        self._transcripts = read_chapter_transcripts(self._path)

    def get_metadata(self, n: int) -> Metadata:
        """Item ``n`` with the audio path (relative to ``root/folder_in_archive``) for the waveform.

        Example:
            >>> import pathlib, tempfile, torch
            >>> from trivium.audio.io import save
            >>> root = pathlib.Path(tempfile.mkdtemp())
            >>> chapter = root / "LibriSpeech" / "test-clean" / "1" / "2"
            >>> chapter.mkdir(parents=True)
            >>> save(chapter / "1-2-0003.flac", torch.zeros(1, 16), 16000)
            >>> _ = (chapter / "1-2.trans.txt").write_text("1-2-0003 HI\\n")
            >>> LIBRISPEECH(root, "test-clean").get_metadata(0)
            ('test-clean/1/2/1-2-0003.flac', 16000, 'HI', 1, 2, 3)
        """
        return utterance_metadata(self._walker[n], self._url, self._transcripts, self._archive)

    def __getitem__(self, n: int) -> Item:
        """Load item ``n``: ``(waveform, sample_rate, transcript, speaker, chapter, utterance)``."""
        relpath, _, transcript, speaker_id, chapter_id, utterance_id = self.get_metadata(n)
        waveform, sample_rate = load(self._archive / relpath)
        return waveform, sample_rate, transcript, speaker_id, chapter_id, utterance_id

    def __len__(self) -> int:
        return len(self._walker)
