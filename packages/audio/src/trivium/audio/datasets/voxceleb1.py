"""VoxCeleb1 (Nagrani et al., 2017) identification and verification, read like torchaudio's.

``root/wav/<speaker id>/<youtube id>/<utterance>.wav`` (16 kHz) with the split
lists beside: ``root/iden_split.txt`` (``<1|2|3> <path>`` for train, dev, test)
and ``root/veri_test.txt`` (``<0|1> <path> <path>``, 1 for the same speaker).

Example:
    >>> import tempfile
    >>> try:
    ...     VoxCeleb1Identification(tempfile.mkdtemp())
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    PathNotFoundError
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from torch import Tensor
from torch.utils.data import Dataset

from trivium.audio.datasets.common import ensure_path, load_audio, read_lines
from trivium.core.download import extract_archive, fetch
from trivium.core.errors import NO_SUCH_PATH, DatasetError, PathNotFoundError

__all__ = ["VoxCeleb1Identification", "VoxCeleb1Verification"]

SAMPLE_RATE = 16000
_BASE = "https://thor.robots.ox.ac.uk/~vgg/data/voxceleb/vox1a/"
# Each archive as (URL, SHA-256) parts: the dev zip is served in four pieces that
# are joined before extraction (torchaudio's URLs and digests).
_DEV_SHA256 = (
    "21ec6ca843659ebc2fdbe04b530baa4f191ad4b0971912672d92c158f32226a0",
    "311d21e0c8cbf33573a4fce6c80e5a279d80736274b381c394319fc557159a04",
    "92b64465f2b2a3dc0e4196ae8dd6828cbe9ddd1f089419a11e4cbfe2e1750df0",
    "00e6190c770b27f27d2a3dd26ee15596b17066b715ac111906861a7d09a211a5",
)
ARCHIVES = {
    "vox1_dev_wav.zip": [
        (f"{_BASE}vox1_dev_wav_part{part}", sha256)
        for part, sha256 in zip(("aa", "ab", "ac", "ad"), _DEV_SHA256, strict=True)
    ],
    "vox1_test_wav.zip": [
        (
            f"{_BASE}vox1_test_wav.zip",
            "8de57f347fe22b2c24526e9f444f689ecf5096fc2a92018cf420ff6b5b15eaea",
        )
    ],
}
IDEN_SPLIT_URL = "https://www.robots.ox.ac.uk/~vgg/data/voxceleb/meta/iden_split.txt"
VERI_TEST_URL = "https://www.robots.ox.ac.uk/~vgg/data/voxceleb/meta/veri_test.txt"
SUBSETS = {"train": 1, "dev": 2, "test": 3}


def _download_archive(root: Path, name: str, parts: list[tuple[str, str]]) -> Path:
    """The archive ``root/name``, downloaded (its parts joined) unless it is there."""
    archive = root / name
    if archive.is_file():
        return archive
    hint = f"place {name} in {root} and extract it there so that {root / 'wav'} exists."
    pieces = [
        fetch(url, root / os.path.basename(url), sha256=sha256, manual_hint=hint)
        for url, sha256 in parts
    ]
    if pieces == [archive]:
        return archive
    joined = archive.with_name(archive.name + ".part")
    with open(joined, "wb") as out:
        for piece in pieces:
            with open(piece, "rb") as f:
                shutil.copyfileobj(f, out)
    os.replace(joined, archive)
    return archive


def _ensure_wavs(root: Path, download: bool) -> Path:
    path = root / "wav"
    if path.is_dir():
        return path
    if not download:
        raise PathNotFoundError(
            f"{NO_SUCH_PATH}; VoxCeleb1: pass download=True to fetch {', '.join(ARCHIVES)} "
            f"into {root}, or extract them there yourself",
            path=path,
        )
    # Every archive is fetched and checked before any is extracted: a wav/ from the
    # dev zip alone would pass for the whole dataset next time.
    archives = [_download_archive(root, name, parts) for name, parts in ARCHIVES.items()]
    for archive in archives:
        extract_archive(archive, root)
    if not path.is_dir():
        raise DatasetError("the VoxCeleb1 archives did not contain wav/", path=path)
    return path


def _file_id(file_path: str) -> str:
    """``id10001/1zcIwhmdeo4/00001.wav`` -> ``id10001-1zcIwhmdeo4-00001``."""
    parts = file_path.split("/")[-3:]
    if len(parts) != 3:
        raise DatasetError(f"not a <speaker>/<video>/<n>.wav path: {file_path!r}")
    speaker_id, youtube_id, utterance = parts
    return "-".join([speaker_id, youtube_id, utterance.replace(".wav", "")])


def _meta_list(root: Path, meta_url: str, download: bool, form: str) -> list[list[str]]:
    """The split list's lines as fields (downloaded when missing and ``download``).

    Each line must have ``form``'s fields, the first a number.
    """
    path = root / os.path.basename(meta_url)
    ensure_path(path, "VoxCeleb1", meta_url, download)
    rows = []
    for lineno, line in enumerate(read_lines(path), 1):
        row = line.split()
        if not row:
            continue
        if len(row) != len(form.split()) or not row[0].isdigit():
            raise DatasetError(f"line {lineno} is not '{form}': {line!r}", path=path)
        rows.append(row)
    return rows


class VoxCeleb1Identification(Dataset):
    """VoxCeleb1 speaker identification items ``(waveform, sample_rate, speaker_id, file_id)``.

    ``subset`` is ``"train"``, ``"dev"`` or ``"test"`` of ``iden_split.txt``;
    ``speaker_id`` the number after ``id1`` (``id10001`` is 1), ``file_id``
    ``<speaker>-<video>-<n>``.
    ``download=True`` fetches the wav archives and the split list (from
    ``meta_url``) when missing; unlike torchaudio, a missing list is not fetched
    without it.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "wav" / "id10001" / "1zcIwhmdeo4").mkdir(parents=True)
        >>> save(root / "wav/id10001/1zcIwhmdeo4/00001.wav", torch.zeros(1, 16), 16000)
        >>> _ = (root / "iden_split.txt").write_text("3 id10001/1zcIwhmdeo4/00001.wav\\n")
        >>> VoxCeleb1Identification(root, "test").get_metadata(0)
        ('id10001/1zcIwhmdeo4/00001.wav', 16000, 1, 'id10001-1zcIwhmdeo4-00001')
    """

    _ext_audio = ".wav"

    def __init__(
        self,
        root: str | os.PathLike[str],
        subset: str = "train",
        meta_url: str = IDEN_SPLIT_URL,
        download: bool = False,
    ) -> None:
        if subset not in SUBSETS:
            raise ValueError(f"subset must be one of {list(SUBSETS)}, got {subset!r}")
        self._path = _ensure_wavs(Path(root), download)
        rows = _meta_list(Path(root), meta_url, download, "<1|2|3> <path>")
        self._flist = sorted(path for index, path in rows if int(index) == SUBSETS[subset])

    def get_metadata(self, n: int) -> tuple[str, int, int, str]:
        """Item ``n`` with the audio path (relative to ``root/wav``) for the waveform.

        Example:
            >>> _file_id("id10001/1zcIwhmdeo4/00001.wav")
            'id10001-1zcIwhmdeo4-00001'
        """
        file_path = self._flist[n]
        file_id = _file_id(file_path)
        return file_path, SAMPLE_RATE, int(file_id.split("-")[0][3:]), file_id

    def __getitem__(self, n: int) -> tuple[Tensor, int, int, str]:
        """Load item ``n``: ``(waveform, sample_rate, speaker_id, file_id)``."""
        metadata = self.get_metadata(n)
        waveform, _ = load_audio(self._path / metadata[0], metadata[1])
        return (waveform, *metadata[1:])

    def __len__(self) -> int:
        return len(self._flist)


class VoxCeleb1Verification(Dataset):
    """VoxCeleb1 verification pairs ``(waveform_spk1, waveform_spk2, sample_rate, label,
    file_id_spk1, file_id_spk2)``, ``label`` 1 for the same speaker, 0 for two.

    The pairs are ``veri_test.txt``'s, from ``meta_url``; ``download`` as in
    :class:`VoxCeleb1Identification`.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> for clip in ("id10270/x6uYqmx31kE/00001.wav", "id10270/8jEAjG6SegY/00008.wav"):
        ...     (root / "wav" / clip).parent.mkdir(parents=True)
        ...     save(root / "wav" / clip, torch.zeros(1, 16), 16000)
        >>> line = "1 id10270/x6uYqmx31kE/00001.wav id10270/8jEAjG6SegY/00008.wav\\n"
        >>> _ = (root / "veri_test.txt").write_text(line)
        >>> VoxCeleb1Verification(root)[0][2:]
        (16000, 1, 'id10270-x6uYqmx31kE-00001', 'id10270-8jEAjG6SegY-00008')
    """

    _ext_audio = ".wav"

    def __init__(
        self,
        root: str | os.PathLike[str],
        meta_url: str = VERI_TEST_URL,
        download: bool = False,
    ) -> None:
        self._path = _ensure_wavs(Path(root), download)
        rows = _meta_list(Path(root), meta_url, download, "<0|1> <path> <path>")
        self._flist = [(label, path1, path2) for label, path1, path2 in rows]

    def get_metadata(self, n: int) -> tuple[str, str, int, int, str, str]:
        """Pair ``n`` with the two audio paths (relative to ``root/wav``) for the waveforms.

        Example:
            >>> VoxCeleb1Verification.get_metadata.__name__
            'get_metadata'
        """
        label, path1, path2 = self._flist[n]
        return path1, path2, SAMPLE_RATE, int(label), _file_id(path1), _file_id(path2)

    def __getitem__(self, n: int) -> tuple[Tensor, Tensor, int, int, str, str]:
        """Load pair ``n`` (see the class docstring for the fields)."""
        path1, path2, sample_rate, *rest = self.get_metadata(n)
        waveform1, _ = load_audio(self._path / path1, sample_rate)
        waveform2, _ = load_audio(self._path / path2, sample_rate)
        return (waveform1, waveform2, sample_rate, *rest)  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self._flist)
