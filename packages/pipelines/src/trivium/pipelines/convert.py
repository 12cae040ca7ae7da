"""Convert folders of images or audio files into Parquet shards (``trivium-data convert``).

The layout is torchvision's ``ImageFolder``: ``ROOT/<class>/<file>``; the label is the
index of the class folder in sorted order. The encoded bytes are stored as they are
(no re-encoding), with what the header says: width and height for images (from
``trivium.vision.io.image_info``), sample rate, frames and channels for audio (from
``trivium.audio.io.info``). Only headers are read by default, so a file cut short
after a whole header (a truncated JPEG) converts and fails when decoded at training
time; ``verify=True`` (``--verify``) decodes every file in full first, on the
``trivium.core`` thread pool, and refuses those that do not decode; damaged files that
decode all the same (as Pillow decodes them) are written and listed, counted, in the
summary's ``recovered`` and as a warning in its report. Read the shards
back with :class:`trivium.data.ParquetSource` and decode in ``parallel_map``.

Example:
    >>> import os, tempfile, torch
    >>> from trivium.vision.io import encode_jpeg
    >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(root, "cat"))
    >>> data = encode_jpeg(torch.zeros(3, 8, 12, dtype=torch.uint8)).numpy().tobytes()
    >>> with open(os.path.join(root, "cat", "a.jpg"), "wb") as f:
    ...     _ = f.write(data)
    >>> summary = convert_image_folder(root, out, progress_bar=False)
    >>> summary.rows, summary.classes
    (1, ['cat'])
"""

from __future__ import annotations

import io
import os
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from trivium.core.errors import DatasetError, DecodeError, DecodeWarning, TriviumError
from trivium.core.folders import class_folders
from trivium.core.progress import progress
from trivium.core.skipping import check_on_error
from trivium.core.threads import parallel_map
from trivium.data.writers import write_parquet

__all__ = ["ConversionSummary", "convert_audio_folder", "convert_image_folder"]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".mp3", ".opus")
_BATCH = 64  # files read (and verified) together on the thread pool
_Check = Callable[[bytes, str], dict[str, Any]]

IMAGE_SCHEMA = pa.schema(
    [
        ("image", pa.binary()),
        ("label", pa.int64()),
        ("class_name", pa.string()),
        ("path", pa.string()),
        ("format", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
    ]
)
AUDIO_SCHEMA = pa.schema(
    [
        ("audio", pa.binary()),
        ("label", pa.int64()),
        ("class_name", pa.string()),
        ("path", pa.string()),
        ("sample_rate", pa.int32()),
        ("num_frames", pa.int64()),
        ("num_channels", pa.int32()),
    ]
)


@dataclass
class ConversionSummary:
    """What a conversion wrote and what it skipped (with the reason for each file).

    Example:
        >>> ConversionSummary(rows=2, classes=["a"]).rows
        2
    """

    rows: int = 0
    classes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Files ``verify`` found damaged but readable (written, decoded as Pillow decodes
    #: them, with a DecodeWarning), with the damage.
    recovered: list[tuple[str, str]] = field(default_factory=list)
    bytes_in: int = 0
    seconds: float = 0.0
    verified: bool = False

    def __str__(self) -> str:
        lines = [
            f"{self.rows} rows, {len(self.classes)} classes -> {len(self.files)} Parquet files "
            f"({self.bytes_in / 1e6:.1f} MB of encoded data) in {self.seconds:.1f} s",
        ]
        if self.skipped:
            if self.verified:
                seen = self.rows + len(self.skipped)
                lines.append(f"refused {len(self.skipped)} of {seen} files (full decode):")
            else:
                lines.append(f"skipped {len(self.skipped)} files:")
            lines += _listed(self.skipped)
        if self.recovered:
            lines.append(
                f"warning: {len(self.recovered)} damaged files decode as Pillow decodes them "
                "and were written:"
            )
            lines += _listed(self.recovered)
        return "\n".join(lines)


def _listed(files: list[tuple[str, str]], most: int = 20) -> list[str]:
    """One line per ``(path, reason)``, the first ``most`` of them."""
    lines = [f"  {path}: {reason}" for path, reason in files[:most]]
    if len(files) > most:
        lines.append(f"  ... and {len(files) - most} more")
    return lines


def _image_header() -> Callable[[bytes, str], dict[str, Any]]:
    try:
        from trivium.vision.io import image_info
    except ImportError as e:
        raise ImportError(
            "convert image-folder needs trivium-vision: pip install --find-links dist "
            "trivium-vision (dist: the wheels make wheels builds)"
        ) from e

    def header(data: bytes, path: str) -> dict[str, Any]:
        info = image_info(data, path=path)
        return {"format": info.format, "width": info.width, "height": info.height}

    return header


def _image_decode(data: bytes, path: str) -> dict[str, Any]:
    """Decode in full: raises for what does not decode by default, and reports in
    ``_RECOVERED`` the damage of a file that does (DecodeWarnings are off meanwhile)."""
    import torch

    from trivium.vision.io import decode_image

    encoded = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    try:
        decode_image(encoded, path=path, strict=True)
    except DecodeError as damage:
        decode_image(encoded, path=path)  # raises where the default rule refuses it
        return {_RECOVERED: damage.reason}
    return {}


def _audio_header() -> Callable[[bytes, str], dict[str, Any]]:
    try:
        from trivium.audio.io import info as audio_info
    except ImportError as e:
        raise ImportError(
            "convert audio-folder needs trivium-audio: pip install --find-links dist "
            "trivium-audio (dist: the wheels make wheels builds)"
        ) from e

    def header(data: bytes, path: str) -> dict[str, Any]:
        meta = audio_info(_named(data, path))
        return {
            "sample_rate": meta.sample_rate,
            "num_frames": meta.num_frames,
            "num_channels": meta.num_channels,
        }

    return header


def _named(data: bytes, path: str) -> io.BytesIO:
    """``data`` as a file object that audio errors name ``path`` by."""
    if not data:
        raise DecodeError("empty input (0 bytes)", path=path)
    buffer = io.BytesIO(data)
    buffer.name = path
    return buffer


def _audio_decode(data: bytes, path: str) -> dict[str, Any]:
    from trivium.audio.io import load

    load(_named(data, path))
    return {}


@dataclass(frozen=True)
class _Kind:
    """What a folder of one kind of file converts to: its column, schema and readers."""

    name: str  # in the progress bar
    column: str  # the column of the file's bytes
    schema: pa.Schema
    extensions: tuple[str, ...]
    header: Callable[[], _Check]  # imports the reader on first use
    decode: _Check  # the full decode of verify=True


_IMAGES = _Kind("images", "image", IMAGE_SCHEMA, IMAGE_EXTENSIONS, _image_header, _image_decode)
_AUDIO = _Kind("audio", "audio", AUDIO_SCHEMA, AUDIO_EXTENSIONS, _audio_header, _audio_decode)


_RECOVERED = "_recovered"  # the damage of a file that decodes all the same


def _examine(path: str, header: _Check, decode: _Check | None) -> tuple[bytes, Any]:
    """The file's bytes and its header fields, or the error that refused it."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        meta = header(data, path)
        if decode is not None:
            meta = {**meta, **decode(data, path)}
    except (TriviumError, OSError, ValueError, RuntimeError) as e:
        return b"", e
    return data, meta


def _named_error(e: Exception, path: str) -> TriviumError:
    """``e`` as a ``trivium.core`` error naming ``path`` (once)."""
    if isinstance(e, TriviumError):
        return e if e.path == path else type(e)(e.reason, path=path)
    return DatasetError(f"cannot convert: {e}", path=path)


def find_classes(root: str) -> list[str]:
    """The class folders of ``root``, sorted as torchvision's ``ImageFolder``, hidden ones left out.

    Example:
        >>> import os, tempfile
        >>> root = tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(root, "cat", ".thumbnails"))
        >>> os.makedirs(os.path.join(root, ".git"))
        >>> find_classes(root)
        ['cat']
    """
    return class_folders(root, skip_hidden=True)


def _files(root: str, classes: list[str], extensions: tuple[str, ...]) -> list[tuple[str, int]]:
    found = []
    for label, name in enumerate(classes):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, name)):
            dirnames.sort()
            found += [
                (os.path.join(dirpath, f), label)
                for f in sorted(filenames)
                if f.lower().endswith(extensions) and not f.startswith(".")
            ]
    if not found:
        raise DatasetError(f"no {'/'.join(extensions)} files under the class folders", path=root)
    return found


def _convert(
    kind: _Kind,
    root: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    rows_per_file: int,
    row_group_size: int,
    compression: str | None,
    *,
    on_error: str,
    verify: bool,
    progress_bar: bool | None,
) -> ConversionSummary:
    check_on_error(on_error)
    header, decode = kind.header(), kind.decode if verify else None
    start = time.perf_counter()
    root = os.fspath(root)
    classes = find_classes(root)
    files = _files(root, classes, kind.extensions)
    summary = ConversionSummary(classes=classes, verified=verify)
    column, schema = kind.column, kind.schema

    def rows() -> Iterator[dict[str, Any]]:
        disable = None if progress_bar is None else not progress_bar
        desc = f"{'verify and ' if decode else ''}convert {kind.name}"
        with progress(total=len(files), desc=desc, unit="file", disable=disable) as bar:
            for first in range(0, len(files), _BATCH):
                batch = files[first : first + _BATCH]
                with warnings.catch_warnings():  # verify reports the damage itself
                    warnings.simplefilter("ignore", DecodeWarning)
                    examined = parallel_map(lambda f: _examine(f[0], header, decode), batch)
                for (path, label), (data, meta) in zip(batch, examined, strict=True):
                    bar.update(1)
                    if isinstance(meta, Exception):
                        error = _named_error(meta, path)
                        if on_error == "raise":
                            raise error from meta
                        summary.skipped.append((path, error.reason))
                        continue
                    if _RECOVERED in meta:
                        summary.recovered.append((path, meta.pop(_RECOVERED)))
                    summary.rows += 1
                    summary.bytes_in += len(data)
                    rel = os.path.relpath(path, root)
                    yield {column: data, "label": label, "class_name": classes[label],
                           "path": rel, **meta}  # fmt: skip

    summary.files = write_parquet(
        rows(),
        out_dir,
        rows_per_file,
        row_group_size,
        compression,
        schema=schema,
        use_dictionary=[name for name in schema.names if name != column],  # not the bytes
    )
    summary.seconds = time.perf_counter() - start
    return summary


def convert_image_folder(
    root: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    rows_per_file: int = 10_000,
    row_group_size: int = 256,
    compression: str | None = None,
    *,
    on_error: str = "raise",
    verify: bool = False,
    progress_bar: bool | None = None,
) -> ConversionSummary:
    """Write ``ROOT/<class>/<image>`` as Parquet shards of (image bytes, label, size, ...).

    Columns: ``image`` (the file's bytes), ``label`` (class index), ``class_name``,
    ``path`` (relative to ``root``), ``format``, ``width``, ``height``. Files whose
    header cannot be read raise :class:`trivium.core.DatasetError` /
    ``DecodeError`` naming them, or with ``on_error="skip"`` are listed in the
    summary. Only headers are read unless ``verify=True``: then every file is decoded
    in full (on the ``trivium.core`` thread pool) and one that does not decode, such
    as a truncated JPEG, is refused in the same way. JPEG/PNG bytes do not compress
    further, hence no compression by default.

    Example:
        >>> import tempfile
        >>> try:
        ...     convert_image_folder(tempfile.mkdtemp(), tempfile.mkdtemp())
        ... except OSError as e:
        ...     print(type(e).__name__)
        DatasetError
    """
    options = {"on_error": on_error, "verify": verify, "progress_bar": progress_bar}
    return _convert(_IMAGES, root, out_dir, rows_per_file, row_group_size, compression, **options)


def convert_audio_folder(
    root: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    rows_per_file: int = 10_000,
    row_group_size: int = 256,
    compression: str | None = None,
    *,
    on_error: str = "raise",
    verify: bool = False,
    progress_bar: bool | None = None,
) -> ConversionSummary:
    """Write ``ROOT/<class>/<audio file>`` as Parquet shards of (audio bytes, label, info).

    Columns: ``audio`` (the file's bytes), ``label``, ``class_name``, ``path``,
    ``sample_rate``, ``num_frames``, ``num_channels``. See
    :func:`convert_image_folder` for errors, ``on_error`` and ``verify``.

    Example:
        >>> import os, tempfile, numpy as np, soundfile as sf
        >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(root, "yes"))
        >>> sf.write(os.path.join(root, "yes", "a.wav"), np.zeros(80), 8000)
        >>> str(convert_audio_folder(root, out, progress_bar=False)).split(" in ")[0]
        '1 rows, 1 classes -> 1 Parquet files (0.0 MB of encoded data)'
    """
    options = {"on_error": on_error, "verify": verify, "progress_bar": progress_bar}
    return _convert(_AUDIO, root, out_dir, rows_per_file, row_group_size, compression, **options)
