"""TED-LIUM releases 1-3 (Rousseau et al., 2012-2018), read from their archives like torchaudio's.

``root/<release folder>/<subset>/stm/<talk>.stm`` (one segment a line:
``<talk> <channel> <speaker> <start> <end> <label> <transcript>``) and
``.../sph/<talk>.sph`` (NIST SPHERE, 16 kHz); release 3's training set is
``TEDLIUM_release-3/data/``, its dev and test sets ``TEDLIUM_release-3/legacy/<subset>``.
Each item is one segment, cut from the talk's recording.

Example:
    >>> import tempfile
    >>> try:
    ...     TEDLIUM(tempfile.mkdtemp())
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, read_lines
from trivium.audio.io import load
from trivium.core.errors import DatasetError, PathNotFoundError

__all__ = ["TEDLIUM"]


@dataclass(frozen=True)
class Release:
    """Where a TED-LIUM release comes from and how it is laid out.

    Example:
        >>> RELEASES["release3"].folder_in_archive
        'TEDLIUM_release-3'
    """

    folder_in_archive: str
    url: str
    sha256: str
    data_path: str
    dictionary: str


RELEASES = {
    "release1": Release(
        "TEDLIUM_release1",
        "http://www.openslr.org/resources/7/TEDLIUM_release1.tar.gz",
        "30301975fd8c5cac4040c261c0852f57cfa8adbbad2ce78e77e4986957445f27",
        "",
        "TEDLIUM.150K.dic",
    ),
    "release2": Release(
        "TEDLIUM_release2",
        "http://www.openslr.org/resources/19/TEDLIUM_release2.tar.gz",
        "93281b5fcaaae5c88671c9d000b443cb3c7ea3499ad12010b3934ca41a7b9c58",
        "",
        "TEDLIUM.152k.dic",
    ),
    "release3": Release(
        "TEDLIUM_release-3",
        "http://www.openslr.org/resources/51/TEDLIUM_release-3.tgz",
        "ad1e454d14d1ad550bc2564c462d87c7a7ec83d4dc2b9210f22ab4973b9eccdb",
        "data/",
        "TEDLIUM.152k.dic",
    ),
}
SUBSETS = ("train", "test", "dev")
SAMPLE_RATE = 16000

Item = tuple[Tensor, int, str, str, str, str]
# talk id, speaker id, start and end (seconds, as written), label, transcript
Segment = tuple[str, str, str, str, str, str]


def _segments(stm: Path) -> list[Segment]:
    """The segments of one talk's ``.stm`` file; the transcript keeps its line end."""
    segments = []
    for lineno, line in enumerate(read_lines(stm, keepends=True), 1):
        if not line.strip():
            continue
        fields = line.split(" ", 6)
        if len(fields) != 7:
            raise DatasetError(f"line {lineno} has {len(fields)} of 7 fields: {line!r}", path=stm)
        talk_id, _, speaker_id, start, end, identifier, transcript = fields
        segments.append((talk_id, speaker_id, start, end, identifier, transcript))
    return segments


class TEDLIUM(Dataset):
    """TED-LIUM segments ``(waveform, sample_rate, transcript, talk_id, speaker_id, identifier)``.

    ``release`` is ``"release1"``, ``"release2"`` or ``"release3"``; ``subset``
    ``"train"``, ``"dev"`` or ``"test"``. ``transcript`` keeps the line end the
    ``.stm`` line has, as torchaudio's. ``download=True`` fetches the release
    (SHA-256 checked) into ``root`` and extracts it there. ``phoneme_dict`` reads
    the release's pronunciation dictionary.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> dev = root / "TEDLIUM_release1" / "dev"
        >>> (dev / "stm").mkdir(parents=True); (dev / "sph").mkdir()
        >>> save(dev / "sph" / "Talk1.sph", torch.zeros(1, 32000), 16000, format="NIST")
        >>> line = "Talk1 1 Talk1 0.50 1.25 <o,f0,male> hello world\\n"
        >>> _ = (dev / "stm" / "Talk1.stm").write_text(line)
        >>> waveform, *rest = TEDLIUM(root, subset="dev")[0]
        >>> waveform.shape, rest
        (torch.Size([1, 12000]), [16000, 'hello world\\n', 'Talk1', 'Talk1', '<o,f0,male>'])
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        release: str = "release1",
        subset: str = "train",
        download: bool = False,
        audio_ext: str = ".sph",
    ) -> None:
        if release not in RELEASES:
            raise ValueError(f"release must be one of {list(RELEASES)}, got {release!r}")
        subset = subset or "train"
        if subset not in SUBSETS:
            raise ValueError(f"subset must be one of {list(SUBSETS)}, got {subset!r}")
        config = RELEASES[release]
        self._ext_audio = audio_ext
        folder = Path(root) / config.folder_in_archive
        if release == "release3":
            self._path = folder / ("data" if subset == "train" else f"legacy/{subset}")
        else:
            self._path = folder / subset
        ensure_path(
            self._path,
            "TEDLIUM",
            config.url,
            download,
            archive=Path(root) / os.path.basename(config.url),
            extract_to=Path(root),
            checksums={os.path.basename(config.url): config.sha256},
        )
        stm_dir = self._path / "stm"
        try:
            names = sorted(os.listdir(stm_dir))
        except FileNotFoundError:
            raise PathNotFoundError(path=stm_dir) from None
        self._filelist: list[tuple[str, Segment]] = [
            (name[: -len(".stm")], segment)
            for name in names
            if name.endswith(".stm")
            for segment in _segments(stm_dir / name)
        ]
        self._dict_path = folder / config.dictionary
        self._phoneme_dict: dict[str, tuple[str, ...]] | None = None

    def _load_audio(
        self, path: Path, start_time: str, end_time: str, sample_rate: int = SAMPLE_RATE
    ) -> tuple[Tensor, int]:
        """The frames from ``start_time`` to ``end_time`` (seconds) of ``path``."""
        try:
            start = int(float(start_time) * sample_rate)
            end = int(float(end_time) * sample_rate)
        except ValueError:
            raise DatasetError(
                f"segment times {start_time!r} {end_time!r} are not numbers", path=path
            ) from None
        if end < start:
            raise DatasetError(f"segment ends ({end_time}) before it starts", path=path)
        return load(path, frame_offset=start, num_frames=end - start)

    def __getitem__(self, n: int) -> Item:
        """Load segment ``n``: ``(waveform, sample_rate, transcript, talk, speaker, label)``."""
        fileid, (talk_id, speaker_id, start, end, identifier, transcript) = self._filelist[n]
        path = self._path / "sph" / (fileid + self._ext_audio)
        waveform, sample_rate = self._load_audio(path, start, end)
        return waveform, sample_rate, transcript, talk_id, speaker_id, identifier

    def __len__(self) -> int:
        return len(self._filelist)

    @property
    def phoneme_dict(self) -> dict[str, tuple[str, ...]]:
        """``{word: phonemes}`` from the release's dictionary (some words have none)."""
        if self._phoneme_dict is None:
            entries = (line.split() for line in read_lines(self._dict_path))
            self._phoneme_dict = {words[0]: tuple(words[1:]) for words in entries if words}
        return self._phoneme_dict.copy()
