"""Speech Commands (Warden, 2018), read from its archive's layout like torchaudio's.

``root/SpeechCommands/speech_commands_v0.02/<label>/<speaker>_nohash_<n>.wav`` with
``validation_list.txt`` and ``testing_list.txt`` (paths relative to that folder)
defining the validation and testing subsets; training is the rest. The
``_background_noise_`` folder holds no commands and is left out.

Example:
    >>> import tempfile
    >>> try:
    ...     SPEECHCOMMANDS(tempfile.mkdtemp())
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
from trivium.core.download import split_url
from trivium.core.errors import DatasetError

__all__ = ["SPEECHCOMMANDS"]

FOLDER_IN_ARCHIVE = "SpeechCommands"
URL = "speech_commands_v0.02"
BASE_URL = "http://download.tensorflow.org/data/"
HASH_DIVIDER = "_nohash_"
EXCEPT_FOLDER = "_background_noise_"
SAMPLE_RATE = 16000
SUBSETS = ("training", "validation", "testing")
# SHA-256 of the archives (the digests torchaudio checks).
CHECKSUMS = {
    "speech_commands_v0.01.tar.gz": (
        "743935421bb51cccdb6bdd152e04c5c70274e935c82119ad7faeec31780d811d"
    ),
    "speech_commands_v0.02.tar.gz": (
        "af14739ee7dc311471de98f5f9d2c9191b18aedfe957f4a6ff791c709868ff58"
    ),
}

Item = tuple[Tensor, int, str, str, int]
Metadata = tuple[str, int, str, str, int]


def _listed(path: Path, *names: str) -> list[str]:
    """The clips a split list names, as paths relative to ``path`` in the list's order."""
    return [
        os.path.normpath(line.strip())
        for name in names
        for line in read_lines(path / name)
        if line.strip()
    ]


def _commands(path: Path) -> list[str]:
    """Every ``<label>/<speaker>_nohash_<n>.wav`` under ``path``, sorted, background aside."""
    return sorted(
        os.path.relpath(p, path)
        for p in path.glob("*/*.wav")
        if HASH_DIVIDER in p.name and p.parent.name != EXCEPT_FOLDER
    )


def _metadata(relpath: str, version: str, path: Path) -> Metadata:
    label, filename = os.path.split(relpath)
    # The test-set archives name some files "xxx.wav.wav": strip the extension twice.
    stem = os.path.splitext(os.path.splitext(filename)[0])[0]
    speaker_id, sep, number = stem.partition(HASH_DIVIDER)
    if not sep or not number.isdigit():
        raise DatasetError(
            f"not a <speaker>{HASH_DIVIDER}<n> clip name: {filename!r}", path=path / relpath
        )
    return os.path.join(version, relpath), SAMPLE_RATE, label, speaker_id, int(number)


class SPEECHCOMMANDS(Dataset):
    """Speech Commands items ``(waveform, sample_rate, label, speaker_id, utterance_number)``.

    ``url`` is ``"speech_commands_v0.01"``, ``"speech_commands_v0.02"`` or a full
    archive URL; ``download=True`` fetches a missing version (SHA-256 checked) into
    ``root`` and extracts it to ``root/folder_in_archive/<version>``. ``subset`` is
    ``None`` (every clip), ``"validation"`` / ``"testing"`` (the clips the version's
    ``validation_list.txt`` / ``testing_list.txt`` name, in their order) or
    ``"training"`` (the others), as torchaudio's.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> version = root / "SpeechCommands" / "speech_commands_v0.02"
        >>> (version / "yes").mkdir(parents=True)
        >>> save(version / "yes" / "0a7c2a8d_nohash_1.wav", torch.zeros(1, 160), 16000)
        >>> ds = SPEECHCOMMANDS(root)
        >>> ds[0][1:], ds.get_metadata(0)[0]
        ((16000, 'yes', '0a7c2a8d', 1), 'speech_commands_v0.02/yes/0a7c2a8d_nohash_1.wav')
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        url: str = URL,
        folder_in_archive: str = FOLDER_IN_ARCHIVE,
        download: bool = False,
        subset: str | None = None,
    ) -> None:
        if subset is not None and subset not in SUBSETS:
            raise ValueError(f"subset must be None or one of {list(SUBSETS)}, got {subset!r}")
        if url in ("speech_commands_v0.01", "speech_commands_v0.02"):
            url = f"{BASE_URL}{url}.tar.gz"
        _, self._version, _ = split_url(url)
        self._archive = Path(root) / folder_in_archive
        self._path = self._archive / self._version
        ensure_path(
            self._path,
            "SPEECHCOMMANDS",
            url,
            download,
            archive=Path(root) / os.path.basename(split_url(url)[0]),
            extract_to=self._path,
            checksums=CHECKSUMS,
        )
        if subset == "validation":
            self._walker = _listed(self._path, "validation_list.txt")
        elif subset == "testing":
            self._walker = _listed(self._path, "testing_list.txt")
        else:
            walker = _commands(self._path)
            if subset == "training":
                held_out = set(_listed(self._path, "validation_list.txt", "testing_list.txt"))
                walker = [w for w in walker if w not in held_out]
            self._walker = walker

    def get_metadata(self, n: int) -> Metadata:
        """Item ``n`` with the clip's path (relative to ``root/folder_in_archive``) for audio.

        Example:
            >>> import pathlib, tempfile, torch
            >>> from trivium.audio.io import save
            >>> root = pathlib.Path(tempfile.mkdtemp())
            >>> (root / "SpeechCommands" / "speech_commands_v0.01" / "no").mkdir(parents=True)
            >>> clip = root / "SpeechCommands/speech_commands_v0.01/no/ab12_nohash_0.wav"
            >>> save(clip, torch.zeros(1, 16), 16000)
            >>> SPEECHCOMMANDS(root, "speech_commands_v0.01").get_metadata(0)
            ('speech_commands_v0.01/no/ab12_nohash_0.wav', 16000, 'no', 'ab12', 0)
        """
        return _metadata(self._walker[n], self._version, self._path)

    def __getitem__(self, n: int) -> Item:
        """Load item ``n``: ``(waveform, sample_rate, label, speaker_id, utterance_number)``."""
        relpath, sample_rate, label, speaker_id, number = self.get_metadata(n)
        waveform, _ = load_audio(self._archive / relpath, sample_rate)
        return waveform, sample_rate, label, speaker_id, number

    def __len__(self) -> int:
        return len(self._walker)
