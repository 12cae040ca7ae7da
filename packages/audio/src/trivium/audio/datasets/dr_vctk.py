"""Device Recorded VCTK (Sarfjoo and Yamagishi, 2018), read from its archive like torchaudio's.

``root/DR-VCTK/DR-VCTK/clean_<subset>set_wav_16k/<name>.wav`` beside the same
utterance played and re-recorded on a device in
``device-recorded_<subset>set_wav_16k/``, and ``configurations/<subset>_ch_log.txt``
(a header, then ``<name><TAB><source><TAB><channel>`` lines).

Example:
    >>> import tempfile
    >>> try:
    ...     DR_VCTK(tempfile.mkdtemp())
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

__all__ = ["DR_VCTK"]

URL = "https://datashare.ed.ac.uk/bitstream/handle/10283/3038/DR-VCTK.zip"
# SHA-256 of the archive (the digest torchaudio checks).
CHECKSUMS = {"DR-VCTK.zip": "781f12f4406ed36ed27ae3bce55da47ba176e2d8bae67319e389e07b2c9bd769"}
SUBSETS = ("train", "test")

Item = tuple[Tensor, int, Tensor, int, str, str, str, int]


def _load_config(path: Path, header_lines: int) -> dict[str, tuple[str, int]]:
    """``{file name: (source, channel id)}`` from a channel log."""
    config = {}
    for lineno, line in enumerate(read_lines(path), 1):
        if lineno <= header_lines or not line.strip():
            continue
        fields = line.strip().split("\t")
        if len(fields) != 3 or not fields[2].lstrip("-").isdigit():
            raise DatasetError(f"line {lineno} is not '<name> <source> <channel>'", path=path)
        filename, source, channel_id = fields
        config[filename] = (source, int(channel_id))
    return config


class DR_VCTK(Dataset):
    """DR-VCTK items ``(waveform_clean, sample_rate_clean, waveform_noisy, sample_rate_noisy,
    speaker_id, utterance_id, source, channel_id)``.

    ``subset`` is ``"train"`` or ``"test"``. ``download=True`` fetches the zip from
    ``url`` (SHA-256 checked) into ``root``; one already there is extracted.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> base = pathlib.Path(tempfile.mkdtemp()) / "DR-VCTK" / "DR-VCTK"
        >>> for folder in ("clean_testset_wav_16k", "device-recorded_testset_wav_16k"):
        ...     (base / folder).mkdir(parents=True)
        ...     save(base / folder / "p232_001.wav", torch.zeros(1, 16), 16000)
        >>> (base / "configurations").mkdir()
        >>> log = "File Name\\tSource\\tChannel\\np232_001.wav\\tiPhone\\t2\\n"
        >>> _ = (base / "configurations" / "test_ch_log.txt").write_text(log)
        >>> DR_VCTK(base.parent.parent, "test")[0][4:]
        ('p232', '001', 'iPhone', 2)
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        subset: str = "train",
        *,
        download: bool = False,
        url: str = URL,
    ) -> None:
        if subset not in SUBSETS:
            raise ValueError(f"subset must be 'train' or 'test', got {subset!r}")
        root = Path(root).expanduser()
        archive = root / "DR-VCTK.zip"
        self._subset = subset
        self._path = root / "DR-VCTK" / "DR-VCTK"
        self._clean_audio_dir = self._path / f"clean_{subset}set_wav_16k"
        self._noisy_audio_dir = self._path / f"device-recorded_{subset}set_wav_16k"
        self._config_filepath = self._path / "configurations" / f"{subset}_ch_log.txt"
        ensure_path(
            self._path,
            "DR_VCTK",
            url,
            download or archive.is_file(),
            archive=archive,
            extract_to=root,
            checksums=CHECKSUMS,
        )
        self._config = _load_config(self._config_filepath, 2 if subset == "train" else 1)
        self._filename_list = sorted(self._config)

    def _load_dr_vctk_item(self, filename: str) -> Item:
        parts = filename.split(".")[0].split("_")
        if len(parts) != 2:
            raise DatasetError(
                "not a <speaker>_<utterance> name", path=self._clean_audio_dir / filename
            )
        speaker_id, utterance_id = parts
        source, channel_id = self._config[filename]
        clean, clean_rate = load_audio(self._clean_audio_dir / filename)
        noisy, noisy_rate = load_audio(self._noisy_audio_dir / filename)
        return clean, clean_rate, noisy, noisy_rate, speaker_id, utterance_id, source, channel_id

    def __getitem__(self, n: int) -> Item:
        """Load item ``n`` (see the class docstring for the fields)."""
        return self._load_dr_vctk_item(self._filename_list[n])

    def __len__(self) -> int:
        return len(self._filename_list)
