"""CMU ARCTIC (Kominek and Black, 2003), read from its archives' layout like torchaudio's.

``root/ARCTIC/cmu_us_<speaker>_arctic/etc/txt.done.data`` holding
``( arctic_a0001 "Author of the danger trail, Philip Steels, etc." )`` lines, and
the recordings in ``.../wav/arctic_a0001.wav``.

Example:
    >>> import tempfile
    >>> try:
    ...     CMUARCTIC(tempfile.mkdtemp())
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

__all__ = ["CMUARCTIC"]

URL = "aew"
FOLDER_IN_ARCHIVE = "ARCTIC"
BASE_URL = "http://www.festvox.org/cmu_arctic/packed/"
SPEAKERS = (
    "aew", "ahw", "aup", "awb", "axb", "bdl", "clb", "eey", "fem",
    "gka", "jmk", "ksp", "ljm", "lnh", "rms", "rxr", "slp", "slt",
)  # fmt: skip
# SHA-256 of the archives (the digests torchaudio lists).
CHECKSUMS = {
    f"cmu_us_{speaker}_arctic.tar.bz2": digest
    for speaker, digest in zip(
        SPEAKERS,
        (
            "645cb33c0f0b2ce41384fdd8d3db2c3f5fc15c1e688baeb74d2e08cab18ab406",
            "024664adeb892809d646a3efd043625b46b5bfa3e6189b3500b2d0d59dfab06c",
            "2c55bc3050caa996758869126ad10cf42e1441212111db034b3a45189c18b6fc",
            "d74a950c9739a65f7bfc4dfa6187f2730fa03de5b8eb3f2da97a51b74df64d3c",
            "dd65c3d2907d1ee52f86e44f578319159e60f4bf722a9142be01161d84e330ff",
            "26b91aaf48b2799b2956792b4632c2f926cd0542f402b5452d5adecb60942904",
            "3f16dc3f3b97955ea22623efb33b444341013fc660677b2e170efdcc959fa7c6",
            "8a0ee4e5acbd4b2f61a4fb947c1730ab3adcc9dc50b195981d99391d29928e8a",
            "3fcff629412b57233589cdb058f730594a62c4f3a75c20de14afe06621ef45e2",
            "dc82e7967cbd5eddbed33074b0699128dbd4482b41711916d58103707e38c67f",
            "3a37c0e1dfc91e734fdbc88b562d9e2ebca621772402cdc693bbc9b09b211d73",
            "8029cafce8296f9bed3022c44ef1e7953332b6bf6943c14b929f468122532717",
            "b23993765cbf2b9e7bbc3c85b6c56eaf292ac81ee4bb887b638a24d104f921a0",
            "4faf34d71aa7112813252fb20c5433e2fdd9a9de55a00701ffcbf05f24a5991a",
            "c6dc11235629c58441c071a7ba8a2d067903dfefbaabc4056d87da35b72ecda4",
            "1fa4271c393e5998d200e56c102ff46fcfea169aaa2148ad9e9469616fbfdd9b",
            "54345ed55e45c23d419e9a823eef427f1cc93c83a710735ec667d068c916abf1",
            "7c173297916acf3cc7fcab2713be4c60b27312316765a90934651d367226b4ea",
        ),
        strict=True,
    )
}

Item = tuple[Tensor, int, str, str]


def _parse(line: str, text: Path, lineno: int) -> tuple[str, str]:
    """``(utterance_id, transcript)`` from ``( arctic_a0001 "Text." )``."""
    parts = line.strip().split(" ", 2)
    if len(parts) != 3 or parts[0] != "(" or "_" not in parts[1] or not parts[2].endswith('" )'):
        raise DatasetError(f'line {lineno} is not ( <id> "<text>" ): {line!r}', path=text)
    # The quotes and the closing parenthesis around the text go, as in torchaudio.
    return parts[1], parts[2][1:-3]


class CMUARCTIC(Dataset):
    """CMU ARCTIC items ``(waveform, sample_rate, transcript, utterance_id)``.

    ``url`` is a speaker (``"aew"``, ``"slt"``, ...; see ``SPEAKERS``) or a full
    archive URL; ``download=True`` fetches a missing speaker's archive into
    ``root/folder_in_archive`` (SHA-256 checked) and extracts it there.
    ``utterance_id`` is the id without its ``arctic_`` prefix (``"a0001"``).

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> speaker = root / "ARCTIC" / "cmu_us_slt_arctic"
        >>> (speaker / "etc").mkdir(parents=True); (speaker / "wav").mkdir()
        >>> _ = (speaker / "etc" / "txt.done.data").write_text('( arctic_a0001 "Hi there." )\\n')
        >>> save(speaker / "wav" / "arctic_a0001.wav", torch.zeros(1, 160), 16000)
        >>> CMUARCTIC(root, url="slt")[0][1:]
        (16000, 'Hi there.', 'a0001')
    """

    _file_text = "txt.done.data"
    _folder_text = "etc"
    _ext_audio = ".wav"
    _folder_audio = "wav"

    def __init__(
        self,
        root: str | os.PathLike[str],
        url: str = URL,
        folder_in_archive: str = FOLDER_IN_ARCHIVE,
        download: bool = False,
    ) -> None:
        if url in SPEAKERS:
            url = f"{BASE_URL}cmu_us_{url}_arctic.tar.bz2"
        elif "://" not in url:
            raise ValueError(f"invalid url {url!r}: give one of {list(SPEAKERS)} or a full URL")
        folder = Path(root) / folder_in_archive
        self._path = folder / split_url(url)[1].split(".")[0]
        ensure_path(self._path, "CMUARCTIC", url, download, extract_to=folder, checksums=CHECKSUMS)
        self._text = self._path / self._folder_text / self._file_text
        self._walker = [
            _parse(line, self._text, lineno)
            for lineno, line in enumerate(read_lines(self._text), 1)
            if line.strip()
        ]

    def __getitem__(self, n: int) -> Item:
        """Load item ``n``: ``(waveform, sample_rate, transcript, utterance_id)``."""
        utterance_id, transcript = self._walker[n]
        path = self._path / self._folder_audio / (utterance_id + self._ext_audio)
        waveform, sample_rate = load_audio(path)
        return waveform, sample_rate, transcript, utterance_id.split("_")[1]

    def __len__(self) -> int:
        return len(self._walker)
