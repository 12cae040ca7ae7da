"""The SNIPS spoken language understanding set (Saade et al., 2018), read like torchaudio's.

``root/SNIPS/{train,valid,test}/<speaker>-snips-<subset>-<n>.{mp3,wav}`` (synthesised with 16
voices) and ``root/SNIPS/all.iob.snips.txt``, one utterance a line:
``<id> BOS <words> EOS<TAB>O <IOB tags> <intent>``. The set is given out on request,
so it is not downloaded here.

Example:
    >>> import tempfile
    >>> try:
    ...     Snips(tempfile.mkdtemp(), "test")
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, load_audio, read_lines
from trivium.core.errors import DatasetError

__all__ = ["Snips"]

SAMPLE_RATE = 16000
SUBSETS = ("train", "valid", "test")
SPEAKERS = [
    "Aditi", "Amy", "Brian", "Emma", "Geraint", "Ivy", "Joanna", "Joey",
    "Justin", "Kendra", "Kimberly", "Matthew", "Nicole", "Raveena", "Russell", "Salli",
]  # fmt: skip
MANUAL = "request the SNIPS audio from Sonos and extract it so that root holds SNIPS/"

Item = tuple[Tensor, int, str, str, str, str]
Metadata = tuple[str, int, str, str, str, str]


def parse_labels(lines: list[str], subset: str, path: Path) -> dict[str, tuple[str, str, str]]:
    """``{id: (transcript, iob, intent)}`` for the ids containing ``subset``.

    Example:
        >>> line = "Amy-snips-test-1 BOS play jazz EOS\\tO O B-genre PlayMusic"
        >>> parse_labels([line], "test", "all.iob.snips.txt")
        {'Amy-snips-test-1': ('play jazz', 'O B-genre', 'PlayMusic')}
    """
    labels = {}
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        index, _, rest = raw.strip().partition(" ")
        parts = rest.split("\t")
        if len(parts) != 2:
            raise DatasetError(f"line {lineno} is not '<id> <words><TAB><tags>'", path=path)
        words, tags = parts
        if index and subset in index:
            transcript = " ".join(words.split(" ")[1:-1])  # BOS and EOS go
            iob = " ".join(tags.split(" ")[1:-1])
            labels[index] = (transcript, iob, tags.split(" ")[-1])
    return labels


class Snips(Dataset):
    """SNIPS items ``(waveform, sample_rate, file_name, transcript, iob, intent)``.

    ``subset`` is ``"train"``, ``"valid"`` or ``"test"``; ``speakers`` the voices to
    keep (default all 16); ``audio_format`` ``"mp3"`` or ``"wav"``.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "SNIPS" / "test").mkdir(parents=True)
        >>> save(root / "SNIPS" / "test" / "Amy-snips-test-1.wav", torch.zeros(1, 16), 16000)
        >>> line = "Amy-snips-test-1 BOS play jazz EOS\\tO O B-genre PlayMusic\\n"
        >>> _ = (root / "SNIPS" / "all.iob.snips.txt").write_text(line)
        >>> Snips(root, "test", audio_format="wav").get_metadata(0)[1:]
        (16000, 'Amy-snips-test-1', 'play jazz', 'O B-genre', 'PlayMusic')
    """

    _trans_file = "all.iob.snips.txt"

    def __init__(
        self,
        root: str | os.PathLike[str],
        subset: str,
        speakers: list[str] | None = None,
        audio_format: str = "mp3",
    ) -> None:
        if subset not in SUBSETS:
            raise ValueError(f"subset must be one of {list(SUBSETS)}, got {subset!r}")
        if audio_format not in ("mp3", "wav"):
            raise ValueError(f"audio_format must be 'mp3' or 'wav', got {audio_format!r}")
        self._path = Path(root) / "SNIPS"
        self.audio_path = self._path / subset
        ensure_path(self._path, "Snips", None, False, manual=MANUAL)
        keep = set(SPEAKERS if speakers is None else speakers)
        self.data = [
            p
            for p in sorted(self.audio_path.glob(f"*.{audio_format}"))
            if p.name.split("-")[0] in keep
        ]
        transcripts = self._path / self._trans_file
        self.labels = parse_labels(read_lines(transcripts), subset, transcripts)

    def get_metadata(self, n: int) -> Metadata:
        """Item ``n`` with the audio path (relative to ``root/SNIPS``) for the waveform.

        Example:
            >>> Snips.get_metadata.__name__
            'get_metadata'
        """
        audio_path = self.data[n]
        file_name = audio_path.with_suffix("").name
        label = self.labels.get(file_name)
        if label is None:
            raise DatasetError(f"no line for {file_name} in {self._trans_file}", path=audio_path)
        relpath = os.path.relpath(audio_path, self._path)
        return relpath, SAMPLE_RATE, file_name, *label

    def __getitem__(self, n: int) -> Item:
        """Load item ``n``: ``(waveform, sample_rate, file_name, transcript, iob, intent)``."""
        metadata = self.get_metadata(n)
        waveform, _ = load_audio(self._path / metadata[0], metadata[1])
        return (waveform, *metadata[1:])

    def __len__(self) -> int:
        return len(self.data)
