"""LibriSpeech with biasing word lists (Le et al., 2021), read like torchaudio's.

The LibriSpeech layout (see :class:`~trivium.audio.datasets.LIBRISPEECH`); each item
adds the words of a given biasing list that its transcript contains.

Example:
    >>> import tempfile
    >>> try:
    ...     LibriSpeechBiasing(tempfile.mkdtemp(), url="dev-clean")
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os

from torch import Tensor

from trivium.audio.datasets.common import load_audio
from trivium.audio.datasets.librispeech import FOLDER_IN_ARCHIVE, LIBRISPEECH, URL
from trivium.audio.datasets.openslr import LIBRI_SUBSETS

__all__ = ["LibriSpeechBiasing"]

Item = tuple[Tensor, int, str, int, int, int, list[str]]
Metadata = tuple[str, int, str, int, int, int, list[str]]


def biasing_words(transcript: str, blist: list[str] | None) -> list[str]:
    """The words of ``blist`` in ``transcript``, each once, in the transcript's order.

    Example:
        >>> biasing_words("THE ABBEY AND THE ABBOT", ["ABBOT", "ABBEY", "NUN"])
        ['ABBEY', 'ABBOT']
    """
    wanted = set(blist or ())
    found: list[str] = []
    for word in transcript.split():
        if word in wanted and word not in found:
            found.append(word)
    return found


class LibriSpeechBiasing(LIBRISPEECH):
    """LibriSpeech items plus the utterance's biasing words:
    ``(waveform, sample_rate, transcript, speaker_id, chapter_id, utterance_id, words)``.

    ``url`` is a LibriSpeech split name (``"dev-clean"``, ...), as in torchaudio;
    ``blist`` the biasing word list (``None``: none). ``download=True`` fetches the
    split from OpenSLR like :class:`~trivium.audio.datasets.LIBRISPEECH`.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> chapter = root / "LibriSpeech" / "dev-clean" / "84" / "121123"
        >>> chapter.mkdir(parents=True)
        >>> save(chapter / "84-121123-0000.flac", torch.zeros(1, 160), 16000)
        >>> _ = (chapter / "84-121123.trans.txt").write_text("84-121123-0000 GO DO YOU HEAR\\n")
        >>> LibriSpeechBiasing(root, "dev-clean", blist=["HEAR", "SEE"]).get_metadata(0)[2:]
        ('GO DO YOU HEAR', 84, 121123, 0, ['HEAR'])
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        url: str = URL,
        folder_in_archive: str = FOLDER_IN_ARCHIVE,
        download: bool = False,
        blist: list[str] | None = None,
    ) -> None:
        if url not in LIBRI_SUBSETS:
            raise ValueError(f"invalid url {url!r}: give one of {list(LIBRI_SUBSETS)}")
        super().__init__(root, url, folder_in_archive, download)
        self.blist = blist

    def get_metadata(self, n: int) -> Metadata:  # type: ignore[override]
        """Item ``n`` with the audio path (relative to ``root/folder_in_archive``) for audio.

        Example:
            >>> biasing_words("A B", None)
            []
        """
        metadata = super().get_metadata(n)
        return (*metadata, biasing_words(metadata[2], self.blist))

    def __getitem__(self, n: int) -> Item:  # type: ignore[override]
        """Load item ``n`` (see the class docstring for the fields)."""
        relpath, sample_rate, *rest = self.get_metadata(n)
        waveform, _ = load_audio(self._archive / relpath, sample_rate)
        return (waveform, sample_rate, *rest)  # type: ignore[return-value]
