"""VCTK 0.92 (Yamagishi et al., 2019), read from its archive's layout like torchaudio's.

``root/VCTK-Corpus-0.92/txt/<speaker>/<speaker>_<utt>.txt`` and
``root/VCTK-Corpus-0.92/wav48_silence_trimmed/<speaker>/<speaker>_<utt>_mic{1,2}.flac``.

Example:
    >>> import tempfile
    >>> try:
    ...     VCTK_092(tempfile.mkdtemp())
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
from trivium.core.errors import DatasetError, PathNotFoundError

__all__ = ["VCTK_092"]

URL = "https://datashare.is.ed.ac.uk/bitstream/handle/10283/3443/VCTK-Corpus-0.92.zip"
# SHA-256 of the archive (the digest torchaudio checks).
CHECKSUMS = {
    "VCTK-Corpus-0.92.zip": "f96258be9fdc2cbff6559541aae7ea4f59df3fcaf5cf963aae5ca647357e359c"
}
MICS = ("mic1", "mic2")

SampleType = tuple[Tensor, int, str, str, str]


def _utterances(txt_dir: Path, audio_dir: Path, mic_id: str, audio_ext: str) -> list[list[str]]:
    """``[speaker, utterance]`` for each transcript, speakers and files sorted.

    p280 has no mic2 recordings and p362 misses some: those are left out, as in torchaudio.
    """
    try:
        speakers = sorted(os.listdir(txt_dir))
    except FileNotFoundError:
        raise PathNotFoundError(path=txt_dir) from None
    samples = []
    for speaker_id in speakers:
        if speaker_id == "p280" and mic_id == "mic2":
            continue
        for name in sorted(f for f in os.listdir(txt_dir / speaker_id) if f.endswith(".txt")):
            utterance_id = os.path.splitext(name)[0]
            audio = audio_dir / speaker_id / f"{utterance_id}_{mic_id}{audio_ext}"
            if speaker_id == "p362" and not audio.is_file():
                continue
            parts = utterance_id.split("_")
            if len(parts) != 2:
                raise DatasetError("not a <speaker>_<utterance>.txt name", path=txt_dir / name)
            samples.append(parts)
    return samples


class VCTK_092(Dataset):
    """VCTK 0.92 items ``(waveform, sample_rate, transcript, speaker_id, utterance_id)``.

    ``mic_id`` picks the recordings of ``"mic1"`` or ``"mic2"``; ``transcript`` is the
    transcript file's first line as stored (with its line end), as torchaudio's.
    ``download=True`` fetches the zip from ``url`` (SHA-256 checked) and extracts it
    into ``root/VCTK-Corpus-0.92``.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp()) / "VCTK-Corpus-0.92"
        >>> (root / "txt" / "p225").mkdir(parents=True)
        >>> (root / "wav48_silence_trimmed" / "p225").mkdir(parents=True)
        >>> _ = (root / "txt" / "p225" / "p225_001.txt").write_text("Please call Stella.\\n")
        >>> wav = root / "wav48_silence_trimmed" / "p225" / "p225_001_mic2.flac"
        >>> save(wav, torch.zeros(1, 480), 48000)
        >>> VCTK_092(root.parent)[0][1:]
        (48000, 'Please call Stella.\\n', 'p225', '001')
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        mic_id: str = "mic2",
        download: bool = False,
        url: str = URL,
        audio_ext: str = ".flac",
    ) -> None:
        if mic_id not in MICS:
            raise ValueError(f'mic_id must be "mic1" or "mic2", got {mic_id!r}')
        self._path = Path(root) / "VCTK-Corpus-0.92"
        self._txt_dir = self._path / "txt"
        self._audio_dir = self._path / "wav48_silence_trimmed"
        self._mic_id = mic_id
        self._audio_ext = audio_ext
        ensure_path(
            self._path,
            "VCTK_092",
            url,
            download,
            archive=Path(root) / "VCTK-Corpus-0.92.zip",
            extract_to=self._path,
            checksums=CHECKSUMS,
        )
        self._sample_ids = _utterances(self._txt_dir, self._audio_dir, mic_id, audio_ext)

    def _load_sample(self, speaker_id: str, utterance_id: str, mic_id: str) -> SampleType:
        name = f"{speaker_id}_{utterance_id}"
        lines = read_lines(self._txt_dir / speaker_id / f"{name}.txt", keepends=True)
        if not lines:
            raise DatasetError("empty transcript", path=self._txt_dir / speaker_id / f"{name}.txt")
        audio = self._audio_dir / speaker_id / f"{name}_{mic_id}{self._audio_ext}"
        waveform, sample_rate = load_audio(audio)
        return waveform, sample_rate, lines[0], speaker_id, utterance_id

    def __getitem__(self, n: int) -> SampleType:
        """Load item ``n``: ``(waveform, sample_rate, transcript, speaker_id, utterance_id)``."""
        speaker_id, utterance_id = self._sample_ids[n]
        return self._load_sample(speaker_id, utterance_id, self._mic_id)

    def __len__(self) -> int:
        return len(self._sample_ids)
