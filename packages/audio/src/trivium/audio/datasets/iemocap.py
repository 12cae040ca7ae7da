"""IEMOCAP (Busso et al., 2008) emotion labels, read from the release's layout like torchaudio's.

``root/IEMOCAP/Session<n>/sentences/wav/<dialog>/<utterance>.wav`` and the
evaluations in ``root/IEMOCAP/Session<n>/dialog/EmoEvaluation/<dialog>.txt``, whose
``[start - end]<TAB><utterance><TAB><label><TAB>[V, A, D]`` lines give each
utterance's label. Utterances labelled neu, hap, ang, sad, exc or fru are kept.
The corpus is licensed on request (https://sail.usc.edu/iemocap/), so it is not
downloaded here.

Example:
    >>> import tempfile
    >>> try:
    ...     IEMOCAP(tempfile.mkdtemp())
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, load_audio, read_lines
from trivium.core.errors import DatasetError

__all__ = ["IEMOCAP"]

SAMPLE_RATE = 16000
LABELS = ("neu", "hap", "ang", "sad", "exc", "fru")
_QUERIES = {None: "*.txt", "scripted": "*script*.txt", "improvised": "*impro*.txt"}
MANUAL = (
    "request the corpus at https://sail.usc.edu/iemocap/ and extract it so that root holds IEMOCAP/"
)

Item = tuple[Tensor, int, str, str, str]
Metadata = tuple[str, int, str, str, str]


def _evaluations(label_dir: Path, query: str) -> dict[str, str]:
    """``{utterance: label}`` from the evaluation files matching ``query``."""
    labels = {}
    for path in sorted(label_dir.glob(query)):
        for lineno, line in enumerate(read_lines(path), 1):
            if not line.startswith("["):
                continue
            fields = re.split("[\t\n]", line)
            if len(fields) < 3:
                raise DatasetError(f"line {lineno} has no utterance and label: {line!r}", path=path)
            labels[fields[1]] = fields[2]
    return labels


class IEMOCAP(Dataset):
    """IEMOCAP items ``(waveform, sample_rate, file_name, label, speaker)``.

    ``sessions`` picks ``Session1`` .. ``Session5`` (each must be present);
    ``utterance_type`` is ``"scripted"``, ``"improvised"`` or ``None`` (both).
    ``speaker`` is the name's first part (``Ses01F``).

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> session = pathlib.Path(tempfile.mkdtemp()) / "IEMOCAP" / "Session1"
        >>> (session / "sentences/wav/Ses01F_impro01").mkdir(parents=True)
        >>> save(session / "sentences/wav/Ses01F_impro01/Ses01F_impro01_F000.wav",
        ...      torch.zeros(1, 16), 16000)
        >>> (session / "dialog" / "EmoEvaluation").mkdir(parents=True)
        >>> line = "[6.2901 - 8.2357]\\tSes01F_impro01_F000\\tneu\\t[2.5000, 2.5000, 2.5000]\\n"
        >>> _ = (session / "dialog/EmoEvaluation/Ses01F_impro01.txt").write_text(line)
        >>> IEMOCAP(session.parent.parent, sessions=(1,)).get_metadata(0)[1:]
        (16000, 'Ses01F_impro01_F000', 'neu', 'Ses01F')
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        sessions: Sequence[int | str] = (1, 2, 3, 4, 5),
        utterance_type: str | None = None,
    ) -> None:
        self._path = Path(root) / "IEMOCAP"
        ensure_path(self._path, "IEMOCAP", None, False, manual=MANUAL)
        if utterance_type not in _QUERIES:
            raise ValueError(
                f"utterance_type must be 'scripted', 'improvised' or None, got {utterance_type!r}"
            )
        self.data: list[str] = []
        self.mapping: dict[str, dict[str, str]] = {}
        seen: set[str] = set()
        for session in sessions:
            session_dir = self._path / f"Session{session}"
            ensure_path(session_dir, "IEMOCAP", None, False, manual=MANUAL)
            wavs = sorted(session_dir.glob("sentences/wav/*/*.wav"))
            seen.update(p.stem for p in wavs)
            labels = _evaluations(
                session_dir / "dialog" / "EmoEvaluation", _QUERIES[utterance_type]
            )
            for stem, label in labels.items():
                if stem in seen and label in LABELS:
                    self.mapping[stem] = {"label": label}
            for wav in wavs:
                if wav.stem in self.mapping:
                    self.data.append(wav.stem)
                    self.mapping[wav.stem]["path"] = str(wav.relative_to(self._path))

    def get_metadata(self, n: int) -> Metadata:
        """Item ``n`` with the audio path (relative to ``root/IEMOCAP``) for the waveform.

        Example:
            >>> IEMOCAP.get_metadata.__name__
            'get_metadata'
        """
        wav_stem = self.data[n]
        entry = self.mapping[wav_stem]
        return entry["path"], SAMPLE_RATE, wav_stem, entry["label"], wav_stem.split("_")[0]

    def __getitem__(self, n: int) -> Item:
        """Load item ``n``: ``(waveform, sample_rate, file_name, label, speaker)``."""
        metadata = self.get_metadata(n)
        waveform, _ = load_audio(self._path / metadata[0], metadata[1])
        return (waveform, *metadata[1:])

    def __len__(self) -> int:
        return len(self.data)
