"""Fetch a dataset's files, verify their checksums and extract archives safely.

The one download path of every dataset (vision and audio). URLs may carry the
expected digest pip-style, ``https://host/data.tar.gz#sha256=HEX``; otherwise the
digest (SHA-256, or the MD5 that torchvision and torchaudio publish) comes from the
dataset's table of known files. An interrupted download keeps its ``.part`` file and
the next call resumes it with an HTTP range request. Without a network, or when the
server cannot be reached, a :class:`trivium.core.DatasetError` says so and how to
place the files by hand. Extraction refuses members that would land outside the
target folder.

Example:
    >>> split_url("http://example.org/x/dev-clean.tar.gz#sha256=abc")
    ('http://example.org/x/dev-clean.tar.gz', 'dev-clean', 'abc')
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trivium.core.errors import DatasetError
from trivium.core.progress import progress

__all__ = [
    "download_and_extract",
    "download_url",
    "extract_archive",
    "fetch",
    "file_digest",
    "split_url",
]

_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")
_CHUNK = 1 << 20


def split_url(url: str) -> tuple[str, str, str | None]:
    """``(url without fragment, archive name without suffix, sha256 from #sha256= or None)``.

    Example:
        >>> split_url("https://host/a/train-clean-100.tar.gz")
        ('https://host/a/train-clean-100.tar.gz', 'train-clean-100', None)
    """
    base, _, fragment = url.partition("#")
    sha256 = None
    if fragment:
        key, _, value = fragment.partition("=")
        if key != "sha256" or not value:
            raise ValueError(f"unsupported URL fragment {fragment!r}: only #sha256=HEX is known")
        sha256 = value.lower()
    filename = os.path.basename(urllib.parse.urlparse(base).path)
    if not filename:
        raise ValueError(f"{url}: the URL does not name a file")
    stem = filename
    for suffix in _ARCHIVE_SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return base, stem, sha256


def file_digest(path: str | os.PathLike[str], algorithm: str = "sha256") -> str:
    """Hex digest of a file (``"sha256"`` or ``"md5"``), read in 1 MiB chunks.

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "x")
        >>> _ = open(p, "wb").write(b"abc")
        >>> file_digest(p)[:16], file_digest(p, "md5")[:16]
        ('ba7816bf8f01cfea', '900150983cd24fb0')
    """
    if algorithm not in ("sha256", "md5"):
        raise ValueError(f"file_digest: algorithm must be 'sha256' or 'md5', got {algorithm!r}")
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _mismatch(path: Path, sha256: str | None, md5: str | None) -> str | None:
    """``"expected <algo> X, got Y"`` when ``path`` fails a given digest, else None."""
    for algorithm, expected in (("sha256", sha256), ("md5", md5)):
        if expected is not None:
            actual = file_digest(path, algorithm)
            if actual != expected.lower():
                return f"expected {algorithm} {expected}, got {actual}"
    return None


def _network_error(url: str, dest: Path, manual_hint: str, error: BaseException) -> DatasetError:
    return DatasetError(
        f"could not download {url}: {error}. There may be no network connection, or the "
        f"server cannot be reached from this machine; what arrived is kept in {dest}.part "
        f"and the next try resumes it. Or download the file elsewhere and place it at "
        f"{dest}, or {manual_hint}",
        path=str(dest),
    )


def _open(url: str, offset: int, timeout: float) -> Any:
    """The response for ``url`` from byte ``offset`` on (a range request when offset > 0)."""
    request = urllib.request.Request(url)
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    return urllib.request.urlopen(request, timeout=timeout)


def _fetch(url: str, partial: Path, timeout: float) -> None:
    """Write ``url`` into ``partial``, resuming from its size where the server allows."""
    offset = partial.stat().st_size if partial.is_file() else 0
    try:
        response = _open(url, offset, timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and offset:  # the part already holds every byte
            return
        raise
    with response:
        resumed = offset and response.status == 206
        total = response.headers.get("Content-Length")
        total = int(total) + (offset if resumed else 0) if total else None
        with (
            open(partial, "ab" if resumed else "wb") as out,
            progress(
                total=total,
                initial=offset if resumed else 0,
                desc=partial.name[:-5],
                unit="B",
                unit_scale=True,
            ) as bar,
        ):
            while chunk := response.read(_CHUNK):
                out.write(chunk)
                bar.update(len(chunk))
    # A connection closed early ends the reads quietly: only the size tells.
    received = partial.stat().st_size
    if total is not None and received < total:
        raise ConnectionError(f"the connection closed after {received:,} of {total:,} bytes")


def download_url(
    url: str,
    dest: str | os.PathLike[str],
    sha256: str | None = None,
    timeout: float = 30.0,
    manual_hint: str = "extract it yourself into the dataset root.",
    *,
    md5: str | None = None,
) -> Path:
    """Download ``url`` to the file ``dest`` (atomically, with a progress bar), checking digests.

    The bytes go to ``dest`` + ``.part`` first; an interrupted download keeps it and
    the next call resumes from its end (a server that ignores the range request
    sends the whole file again). A digest mismatch deletes the download and raises
    :class:`DatasetError` with both digests; network failures raise
    :class:`DatasetError` saying how to proceed by hand.

    Example:
        >>> import tempfile, os, pathlib
        >>> src = pathlib.Path(tempfile.mkdtemp()) / "a.bin"
        >>> _ = src.write_bytes(b"abc")
        >>> out = download_url(src.as_uri(), src.with_name("b.bin"), file_digest(src))
        >>> out.read_bytes()
        b'abc'
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".part")
    try:
        _fetch(url, partial, timeout)
    except urllib.error.HTTPError as e:
        raise DatasetError(
            f"could not download {url}: HTTP {e.code} {e.reason}", path=str(dest)
        ) from None
    except (TimeoutError, urllib.error.URLError, OSError, http.client.HTTPException) as e:
        raise _network_error(url, dest, manual_hint, getattr(e, "reason", e)) from None
    mismatch = _mismatch(partial, sha256, md5)
    if mismatch is not None:
        partial.unlink(missing_ok=True)
        raise DatasetError(
            f"checksum mismatch for {url}: {mismatch}; the download is corrupt or not the "
            "expected file and was deleted",
            path=str(dest),
        )
    os.replace(partial, dest)
    return dest


def fetch(
    urls: str | Sequence[str],
    dest: str | os.PathLike[str],
    *,
    sha256: str | None = None,
    md5: str | None = None,
    manual_hint: str = "extract it yourself into the dataset root.",
) -> Path:
    """``dest``, downloaded from the first of ``urls`` (mirrors) that serves it unless present.

    A file already at ``dest`` is checked against the digests and used as it is; one
    that fails raises :class:`DatasetError` naming it (a file present is never
    overwritten). A ``#sha256=`` fragment on a URL wins over ``sha256``. When every
    mirror fails, the error lists each failure.

    Example:
        >>> import pathlib, tempfile
        >>> src = pathlib.Path(tempfile.mkdtemp()) / "labels.txt"
        >>> _ = src.write_text("cat")
        >>> out = fetch([src.parent.as_uri() + "/nope", src.as_uri()], src.with_name("b.txt"))
        >>> out.read_text()
        'cat'
    """
    dest = Path(dest)
    mirrors = [split_url(url) for url in ([urls] if isinstance(urls, str) else urls)]
    sha256 = next((pinned for _, _, pinned in mirrors if pinned), sha256)
    if dest.is_file():
        mismatch = _mismatch(dest, sha256, md5)
        if mismatch is not None:
            raise DatasetError(
                f"checksum mismatch of the file present: {mismatch}; delete it to download again",
                path=str(dest),
            )
        return dest
    failures = []
    for base, _, _ in mirrors:
        try:
            return download_url(base, dest, sha256, manual_hint=manual_hint, md5=md5)
        except DatasetError as e:
            if len(mirrors) == 1:
                raise
            failures.append(f"{base}: {e.reason}")
    raise DatasetError("could not download it: " + "; ".join(failures), path=str(dest))


def _inside(root: Path, name: str) -> bool:
    target = (root / name).resolve()
    return target == root or root in target.parents


def extract_archive(archive: str | os.PathLike[str], dest: str | os.PathLike[str]) -> Path:
    """Extract a tar (any compression) or zip archive into ``dest``; refuse unsafe members.

    Example:
        >>> import tarfile, tempfile, io, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> with tarfile.open(d / "a.tar.gz", "w:gz") as t:
        ...     info = tarfile.TarInfo("x/hello.txt"); info.size = 2
        ...     t.addfile(info, io.BytesIO(b"hi"))
        >>> (extract_archive(d / "a.tar.gz", d) / "x" / "hello.txt").read_text()
        'hi'
    """
    archive, dest = Path(archive), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                bad = [n for n in z.namelist() if not _inside(root, n)]
                if bad:
                    raise DatasetError(f"unsafe member path {bad[0]!r} in archive", path=archive)
                z.extractall(dest)
        else:
            with tarfile.open(archive) as t:
                t.extractall(dest, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, EOFError) as e:
        raise DatasetError(f"cannot extract archive: {e}", path=archive) from None
    return dest


def download_and_extract(
    url: str,
    root: str | os.PathLike[str],
    sha256: str | None,
    manual_hint: str,
    *,
    md5: str | None = None,
) -> Path:
    """Download ``url`` into ``root`` (unless the archive is already there), verify, extract.

    An archive already present is verified too (when a digest is known) before use.

    Example:
        >>> import tarfile, tempfile, io, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> with tarfile.open(d / "src.tar.gz", "w:gz") as t:
        ...     info = tarfile.TarInfo("ds/a.txt"); info.size = 1
        ...     t.addfile(info, io.BytesIO(b"1"))
        >>> out = download_and_extract((d / "src.tar.gz").as_uri(), d / "root", None, "")
        >>> (out / "ds" / "a.txt").read_text()
        '1'
    """
    root = Path(root)
    archive = root / os.path.basename(urllib.parse.urlparse(split_url(url)[0]).path)
    fetch(url, archive, sha256=sha256, md5=md5, manual_hint=manual_hint)
    return extract_archive(archive, root)
