"""Fluent Speech Commands (Lugosch et al., 2019), read from its release's layout like torchaudio's.

``root/fluent_speech_commands_dataset/data/{train,valid,test}_data.csv`` (columns
``,path,speakerId,transcription,action,object,location``) and
``.../wavs/speakers/<speakerId>/<name>.wav``. The corpus is given out on request
(https://fluent.ai/fluent-speech-commands-a-dataset-for-spoken-language-understanding-research/),
so it is not downloaded here.

Example:
    >>> import tempfile
    >>> try:
    ...     FluentSpeechCommands(tempfile.mkdtemp())
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

__all__ = ["FluentSpeechCommands"]

SAMPLE_RATE = 16000
SUBSETS = ("train", "valid", "test")
MANUAL = (
    "request the corpus from Fluent.ai and extract it so that root holds "
    "fluent_speech_commands_dataset/"
)

Item = tuple[Tensor, int, str, str, str, str, str, str]
Metadata = tuple[str, int, str, str, str, str, str, str]


class FluentSpeechCommands(Dataset):
    """Fluent Speech Commands items ``(waveform, sample_rate, file_name, speaker_id,
    transcription, action, object, location)``.

    ``subset`` is ``"train"``, ``"valid"`` or ``"test"``.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> base = pathlib.Path(tempfile.mkdtemp()) / "fluent_speech_commands_dataset"
        >>> (base / "data").mkdir(parents=True)
        >>> (base / "wavs" / "speakers" / "2BqVo8kVB2Skwgyb").mkdir(parents=True)
        >>> save(base / "wavs/speakers/2BqVo8kVB2Skwgyb/0a3129c0.wav", torch.zeros(1, 16), 16000)
        >>> _ = (base / "data" / "test_data.csv").write_text(
        ...     ",path,speakerId,transcription,action,object,location\\n"
        ...     "0,wavs/speakers/2BqVo8kVB2Skwgyb/0a3129c0.wav,2BqVo8kVB2Skwgyb,Louder,"
        ...     "increase,volume,none\\n")
        >>> FluentSpeechCommands(base.parent, "test").get_metadata(0)[1:]
        (16000, '0a3129c0', '2BqVo8kVB2Skwgyb', 'Louder', 'increase', 'volume', 'none')
    """

    def __init__(self, root: str | os.PathLike[str], subset: str = "train") -> None:
        if subset not in SUBSETS:
            raise ValueError(f"subset must be one of {list(SUBSETS)}, got {subset!r}")
        self._path = Path(root) / "fluent_speech_commands_dataset"
        ensure_path(self._path, "FluentSpeechCommands", None, False, manual=MANUAL)
        table = self._path / "data" / f"{subset}_data.csv"
        rows = read_rows(table, ",", fields=7, quoting=csv.QUOTE_MINIMAL)
        if not rows or "path" not in rows[0]:
            raise DatasetError("the header has no 'path' column", path=table)
        self.header, self.data = rows[0], rows[1:]
        self._path_column = self.header.index("path")

    def get_metadata(self, n: int) -> Metadata:
        """Item ``n`` with the audio path (relative to the dataset folder) for the waveform.

        Example:
            >>> FluentSpeechCommands.get_metadata.__name__
            'get_metadata'
        """
        sample = self.data[n]
        file_name = sample[self._path_column].split("/")[-1].split(".")[0]
        speaker_id, transcription, action, obj, location = sample[2:]
        file_path = os.path.join("wavs", "speakers", speaker_id, f"{file_name}.wav")
        return file_path, SAMPLE_RATE, file_name, speaker_id, transcription, action, obj, location

    def __getitem__(self, n: int) -> Item:
        """Load item ``n`` (see the class docstring for the fields)."""
        metadata = self.get_metadata(n)
        waveform, _ = load_audio(self._path / metadata[0], metadata[1])
        return (waveform, *metadata[1:])

    def __len__(self) -> int:
        return len(self.data)
