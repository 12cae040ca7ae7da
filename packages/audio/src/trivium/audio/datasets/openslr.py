"""Locating (and optionally downloading) an OpenSLR split such as LibriSpeech ``dev-clean``.

Example:
    >>> split = resolve_split("dev-clean", "http://www.openslr.org/resources/12/", ("dev-clean",))
    >>> split.name, split.url
    ('dev-clean', 'http://www.openslr.org/resources/12/dev-clean.tar.gz')
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from trivium.core.download import download_and_extract, split_url
from trivium.core.errors import NO_SUCH_PATH, DatasetError, PathNotFoundError

__all__ = ["LIBRI_SUBSETS", "Split", "ensure_split", "list_split", "resolve_split"]

# The splits LibriSpeech and LibriTTS both publish.
LIBRI_SUBSETS = (
    "dev-clean",
    "dev-other",
    "test-clean",
    "test-other",
    "train-clean-100",
    "train-clean-360",
    "train-other-500",
)


@dataclass(frozen=True)
class Split:
    """A dataset split: its name (the archive's stem) and the URL it downloads from.

    Example:
        >>> Split("dev-clean", "http://host/dev-clean.tar.gz").name
        'dev-clean'
    """

    name: str
    url: str


def resolve_split(url: str, base_url: str, subsets: Sequence[str]) -> Split:
    """A split name from ``subsets`` (downloaded from ``base_url``) or a full archive URL.

    A full URL (a mirror, a local ``file://`` copy) names the split by its archive
    stem, as in torchaudio: ``https://mirror/dev-clean.tar.gz`` is ``dev-clean``.

    Example:
        >>> resolve_split("https://mirror/x/test-clean.tar.gz", "unused", ()).name
        'test-clean'
    """
    if url in subsets:
        return Split(url, f"{base_url}{url}.tar.gz")
    if "://" not in url:
        raise ValueError(f"invalid url {url!r}: give one of {list(subsets)} or a full archive URL")
    _, name, _ = split_url(url)
    return Split(name, url)


def ensure_split(
    split: Split,
    root: str | os.PathLike[str],
    path: Path,
    download: bool,
    checksums: Mapping[str, str],
    dataset: str,
) -> None:
    """Make sure ``path`` (the split's folder) exists: download it if asked, else explain.

    Known digests are looked up by archive file name in ``checksums``; a
    ``#sha256=`` fragment on the URL wins.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> ensure_split(Split("x", "http://h/x.tar.gz"), d, d, False, {}, "LIBRISPEECH")
    """
    if path.is_dir():
        return
    base, _, _ = split_url(split.url)
    archive_name = os.path.basename(base)
    hint = f"extract {archive_name} into {os.fspath(root)} so that {path} exists."
    if not download:
        raise PathNotFoundError(
            f"{NO_SUCH_PATH}; {dataset} split {split.name!r}: pass download=True to fetch "
            f"{split.url}, or {hint}",
            path=str(path),
        )
    download_and_extract(split.url, root, checksums.get(archive_name), hint)
    if not path.is_dir():
        raise DatasetError(
            f"the archive from {split.url} did not contain the expected folder", path=str(path)
        )


def list_split(
    root: str | os.PathLike[str],
    url: str,
    folder_in_archive: str,
    download: bool,
    base_url: str,
    checksums: Mapping[str, str],
    dataset: str,
    ext: str,
) -> tuple[Split, Path, list[str]]:
    """Resolve ``url``, make sure the split is there, and list its utterances.

    Returns the split, its folder (``root/folder_in_archive/<split>``) and the sorted
    stems of the ``<speaker>/<chapter>/*<ext>`` files in it: the LibriSpeech and LibriTTS
    layout.

    Example:
        >>> import tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "L" / "dev-clean" / "1" / "2").mkdir(parents=True)
        >>> _ = (root / "L" / "dev-clean" / "1" / "2" / "1-2-0.flac").write_bytes(b"")
        >>> list_split(root, "dev-clean", "L", False, "http://h/", {}, "X", ".flac")[2]
        ['1-2-0']
    """
    split = resolve_split(url, base_url, LIBRI_SUBSETS)
    path = Path(root) / folder_in_archive / split.name
    ensure_split(split, root, path, download, checksums, dataset)
    return split, path, sorted(p.stem for p in path.glob("*/*/*" + ext))
