"""Convert folders of images or audio files into Parquet shards (``trivium-data convert``).

The layout is torchvision's ``ImageFolder``: ``ROOT/<class>/<file>``; the label is the
index of the class folder in sorted order. The encoded bytes are stored as they are
(no re-encoding), with what the header says: width and height for images (from
``trivium.vision.io.image_info``), sample rate, frames and channels for audio (from
``trivium.audio.io.info``). Read the shards back with
:class:`trivium.data.ParquetSource` and decode in ``parallel_map``.

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

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from trivium.core.errors import DatasetError, TriviumError
from trivium.core.progress import progress
from trivium.data.writers import write_parquet

__all__ = ["ConversionSummary", "convert_audio_folder", "convert_image_folder"]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".mp3", ".opus")

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
    bytes_in: int = 0
    seconds: float = 0.0

    def __str__(self) -> str:
        lines = [
            f"{self.rows} rows, {len(self.classes)} classes -> {len(self.files)} Parquet files "
            f"({self.bytes_in / 1e6:.1f} MB of encoded data) in {self.seconds:.1f} s",
        ]
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)} files:")
            lines += [f"  {path}: {reason}" for path, reason in self.skipped[:20]]
            if len(self.skipped) > 20:
                lines.append(f"  ... and {len(self.skipped) - 20} more")
        return "\n".join(lines)


def _image_header() -> Callable[[bytes, str], dict[str, Any]]:
    try:
        from trivium.vision.io import image_info
    except ImportError as e:
        raise ImportError(
            "convert image-folder needs trivium-vision: pip install 'trivium-data[vision]'"
        ) from e

    def header(data: bytes, path: str) -> dict[str, Any]:
        info = image_info(data, path=path)
        return {"format": info.format, "width": info.width, "height": info.height}

    return header


def _audio_header() -> Callable[[bytes, str], dict[str, Any]]:
    try:
        from trivium.audio.io import info as audio_info
    except ImportError as e:
        raise ImportError(
            "convert audio-folder needs trivium-audio: pip install 'trivium-data[audio]'"
        ) from e

    def header(data: bytes, path: str) -> dict[str, Any]:
        meta = audio_info(data)
        return {
            "sample_rate": meta.sample_rate,
            "num_frames": meta.num_frames,
            "num_channels": meta.num_channels,
        }

    return header


def find_classes(root: str) -> list[str]:
    """The class folders of ``root``, sorted (as torchvision's ``ImageFolder``).

    Example:
        >>> import os, tempfile
        >>> root = tempfile.mkdtemp()
        >>> for name in ("dog", "cat"):
        ...     os.makedirs(os.path.join(root, name))
        >>> find_classes(root)
        ['cat', 'dog']
    """
    if not os.path.isdir(root):
        raise DatasetError("no such directory", path=root)
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith("."))
    if not classes:
        raise DatasetError("no class folders (expected ROOT/<class>/<file>)", path=root)
    return classes


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
    root: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    kind: str,
    column: str,
    schema: pa.Schema,
    header: Callable[[bytes, str], dict[str, Any]],
    extensions: tuple[str, ...],
    rows_per_file: int,
    row_group_size: int,
    compression: str | None,
    on_error: str,
    progress_bar: bool | None,
) -> ConversionSummary:
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    start = time.perf_counter()
    root = os.fspath(root)
    classes = find_classes(root)
    files = _files(root, classes, extensions)
    summary = ConversionSummary(classes=classes)

    def rows() -> Iterator[dict[str, Any]]:
        disable = None if progress_bar is None else not progress_bar
        for path, label in progress(files, desc=f"convert {kind}", unit="file", disable=disable):
            try:
                with open(path, "rb") as f:
                    data = f.read()
                meta = header(data, path)
            except (TriviumError, OSError, ValueError, RuntimeError) as e:
                if on_error == "raise":
                    if isinstance(e, TriviumError) and e.path:
                        raise
                    raise DatasetError(f"cannot convert: {e}", path=path) from e
                summary.skipped.append((path, str(e)))
                continue
            summary.rows += 1
            summary.bytes_in += len(data)
            rel = os.path.relpath(path, root)
            yield {column: data, "label": label, "class_name": classes[label], "path": rel, **meta}

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
    progress_bar: bool | None = None,
) -> ConversionSummary:
    """Write ``ROOT/<class>/<image>`` as Parquet shards of (image bytes, label, size, ...).

    Columns: ``image`` (the file's bytes), ``label`` (class index), ``class_name``,
    ``path`` (relative to ``root``), ``format``, ``width``, ``height``. Files whose
    header cannot be read raise :class:`trivium.core.DatasetError` /
    ``DecodeError`` naming them, or with ``on_error="skip"`` are listed in the
    summary. JPEG/PNG bytes do not compress further, hence no compression by default.

    Example:
        >>> import tempfile
        >>> try:
        ...     convert_image_folder(tempfile.mkdtemp(), tempfile.mkdtemp())
        ... except OSError as e:
        ...     print(type(e).__name__)
        DatasetError
    """
    return _convert(
        root,
        out_dir,
        kind="images",
        column="image",
        schema=IMAGE_SCHEMA,
        header=_image_header(),
        extensions=IMAGE_EXTENSIONS,
        rows_per_file=rows_per_file,
        row_group_size=row_group_size,
        compression=compression,
        on_error=on_error,
        progress_bar=progress_bar,
    )


def convert_audio_folder(
    root: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    rows_per_file: int = 10_000,
    row_group_size: int = 256,
    compression: str | None = None,
    *,
    on_error: str = "raise",
    progress_bar: bool | None = None,
) -> ConversionSummary:
    """Write ``ROOT/<class>/<audio file>`` as Parquet shards of (audio bytes, label, info).

    Columns: ``audio`` (the file's bytes), ``label``, ``class_name``, ``path``,
    ``sample_rate``, ``num_frames``, ``num_channels``. See
    :func:`convert_image_folder` for errors and ``on_error``.

    Example:
        >>> import os, tempfile, numpy as np, soundfile as sf
        >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(root, "yes"))
        >>> sf.write(os.path.join(root, "yes", "a.wav"), np.zeros(80), 8000)
        >>> str(convert_audio_folder(root, out, progress_bar=False)).split(" in ")[0]
        '1 rows, 1 classes -> 1 Parquet files (0.0 MB of encoded data)'
    """
    return _convert(
        root,
        out_dir,
        kind="audio",
        column="audio",
        schema=AUDIO_SCHEMA,
        header=_audio_header(),
        extensions=AUDIO_EXTENSIONS,
        rows_per_file=rows_per_file,
        row_group_size=row_group_size,
        compression=compression,
        on_error=on_error,
        progress_bar=progress_bar,
    )
