"""What the torchaudio-layout datasets share: finding or downloading a root, reading tables.

``ensure_path`` makes sure a dataset's folder (or file) is there: it downloads and
extracts the archive when asked (known digests looked up by archive name, a
``#sha256=`` fragment on the URL winning), and otherwise raises
:class:`~trivium.core.PathNotFoundError` saying what to fetch and where to put it.
``read_lines`` / ``read_rows`` read a dataset's text files, naming the file when it
is missing or malformed; ``load_audio`` decodes a clip and checks its sample rate.

Example:
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "list.txt"
    >>> _ = p.write_text("a|b\\n\\nc|d\\n")
    >>> read_rows(p, "|", fields=2)
    [['a', 'b'], ['c', 'd']]
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from pathlib import Path

from torch import Tensor

from trivium.audio.io import load
from trivium.core.download import extract_archive, fetch, split_url
from trivium.core.errors import NO_SUCH_PATH, DatasetError, PathNotFoundError

__all__ = [
    "ensure_path",
    "load_audio",
    "read_chapter_transcripts",
    "read_lines",
    "read_rows",
]


def ensure_path(
    path: Path,
    dataset: str,
    url: str | None,
    download: bool,
    *,
    archive: Path | None = None,
    extract_to: Path | None = None,
    checksums: Mapping[str, str] | None = None,
    manual: str = "",
) -> None:
    """Make sure ``path`` exists: download ``url`` when ``download``, else explain.

    ``archive`` is where the download goes (default: beside ``path``, named as the
    URL names it); it is extracted into ``extract_to`` (``None``: the download is the
    file itself). ``url=None`` marks a dataset that is not downloadable: ``manual``
    says where to get it. The missing ``path`` raises
    :class:`~trivium.core.PathNotFoundError` naming it and what to do.

    Example:
        >>> import pathlib, tempfile
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> try:
        ...     ensure_path(d / "wavs", "X", "http://h/x.tar.gz", False, extract_to=d)
        ... except FileNotFoundError as e:
        ...     print(str(e).split("; ")[1][:30])
        X: pass download=True to fetch
    """
    if path.exists():
        return
    if url is None:
        raise PathNotFoundError(f"{NO_SUCH_PATH}; {dataset}: {manual}", path=path)
    base, _, _ = split_url(url)
    if archive is None:
        archive = path.parent / os.path.basename(base)
    if extract_to is None:
        hint = f"place the file {archive.name} at {path}."
    else:
        hint = f"extract {archive.name} into {extract_to} so that {path} exists."
    if not download:
        raise PathNotFoundError(
            f"{NO_SUCH_PATH}; {dataset}: pass download=True to fetch {url}, or {hint}", path=path
        )
    fetch(url, archive, sha256=(checksums or {}).get(archive.name), manual_hint=hint)
    if extract_to is not None:
        extract_archive(archive, extract_to)
    if not path.exists():
        raise DatasetError(f"the download from {url} did not contain the expected path", path=path)


def read_lines(path: Path, encoding: str = "utf-8", keepends: bool = False) -> list[str]:
    """The lines of a text file (without their line ends unless ``keepends``).

    A missing file raises :class:`~trivium.core.PathNotFoundError` naming it.

    Example:
        >>> import pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
        >>> _ = p.write_text("x\\ny\\n")
        >>> read_lines(p)
        ['x', 'y']
    """
    try:
        with open(path, encoding=encoding, newline=None) as f:
            return f.readlines() if keepends else f.read().splitlines()
    except FileNotFoundError:
        raise PathNotFoundError(path=path) from None
    except UnicodeDecodeError as e:
        raise DatasetError(f"not {encoding} text: {e}", path=path) from None


def read_rows(
    path: Path,
    delimiter: str,
    fields: int | None = None,
    quoting: int = csv.QUOTE_NONE,
) -> list[list[str]]:
    """The non-blank rows of a delimited text file, each checked to have ``fields`` fields.

    A row with another count raises :class:`~trivium.core.DatasetError` naming the
    file and the line.

    Example:
        >>> import pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.tsv"
        >>> _ = p.write_text("path\\tsentence\\na.mp3\\thi\\n")
        >>> read_rows(p, "\\t")
        [['path', 'sentence'], ['a.mp3', 'hi']]
    """
    rows = []
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter=delimiter, quoting=quoting)
            for row in reader:
                if not row:
                    continue
                if fields is not None and len(row) != fields:
                    raise DatasetError(
                        f"line {reader.line_num} has {len(row)} fields, expected {fields}: "
                        f"{delimiter.join(row)!r}",
                        path=path,
                    )
                rows.append(row)
    except FileNotFoundError:
        raise PathNotFoundError(path=path) from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise DatasetError(f"unreadable table: {e}", path=path) from None
    return rows


def read_chapter_transcripts(folder: Path) -> dict[str, str]:
    """``{utterance id: transcript}`` from every ``<spk>/<chapter>/*.trans.txt`` in ``folder``.

    The LibriSpeech layout: one ``<speaker>-<chapter>.trans.txt`` per chapter holding
    ``<id> <TRANSCRIPT>`` lines. A line without a transcript raises
    :class:`~trivium.core.DatasetError` naming the file and line.

    Example:
        >>> import pathlib, tempfile
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> (d / "1" / "2").mkdir(parents=True)
        >>> _ = (d / "1" / "2" / "1-2.trans.txt").write_text("1-2-0000 HELLO THERE\\n")
        >>> read_chapter_transcripts(d)
        {'1-2-0000': 'HELLO THERE'}
    """
    transcripts: dict[str, str] = {}
    for trans in sorted(folder.glob("*/*/*.trans.txt")):
        for lineno, line in enumerate(read_lines(trans), 1):
            line = line.strip()
            if not line:
                continue
            utt_id, sep, text = line.partition(" ")
            if not sep:
                raise DatasetError(f"line {lineno} has no transcript: {line!r}", path=trans)
            transcripts[utt_id] = text
    return transcripts


def load_audio(path: str | os.PathLike[str], sample_rate: int | None = None) -> tuple[Tensor, int]:
    """Decode ``path``; when ``sample_rate`` is given, a file at another rate is an error.

    Example:
        >>> import pathlib, tempfile, torch
        >>> from trivium.audio.io import save
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.wav"
        >>> save(p, torch.zeros(1, 80), 8000)
        >>> load_audio(p, 8000)[1]
        8000
    """
    waveform, rate = load(path)
    if sample_rate is not None and rate != sample_rate:
        raise DatasetError(
            f"sample rate {rate} differs from the dataset's {sample_rate}", path=os.fspath(path)
        )
    return waveform, rate
