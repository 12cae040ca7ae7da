"""The decompression-bomb guard of the Arrow readers: declared sizes checked before reading.

A compressed Parquet row group, or a record batch of an Arrow IPC file or stream with
compressed buffers, may expand a thousandfold: a few kilobytes of Brotli or ZSTD can
declare gigabytes of zeros. Every reader in :mod:`trivium.data` (``ParquetSource``,
``ArrowIPCSource``, ``ArrowDataset``) adds up what a piece *declares* it expands to
before it reads it, and refuses a piece over the limit with a
:class:`~trivium.core.errors.DecodeError` naming the file, the size and the limit:

- a Parquet row group: the ``total_uncompressed_size`` of its column chunks (from
  the footer) and, for local files, the ``uncompressed_page_size`` of every page
  header of the row group (read without decompressing anything), whichever is
  larger;
- an IPC record batch or dictionary batch with compressed buffers: the uncompressed
  length each compressed buffer starts with.

The limit applies per piece (what one read decompresses at once), is
:func:`get_max_uncompressed_bytes` (2 GiB by default, above the row groups writers
make: pyarrow's at most 64 Mi rows, Spark's 128 MiB) unless a reader is given its own
``max_uncompressed_bytes``, and ``None`` turns it off.

A file whose sizes *lie* (declare little, expand to more) is bounded by what it
declares all the same: the Parquet reader decompresses each page into a buffer of
the size its header declares (checked here) and refuses a page whose data would
expand beyond it, and an IPC buffer is decompressed into the length it declares.

Example:
    >>> get_max_uncompressed_bytes() == 2 << 30
    True
    >>> resolve_max_uncompressed_bytes(...) == get_max_uncompressed_bytes()
    True
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trivium.core.errors import DecodeError

__all__ = [
    "DEFAULT_MAX_UNCOMPRESSED_BYTES",
    "check_ipc",
    "check_parquet",
    "get_max_uncompressed_bytes",
    "resolve_max_uncompressed_bytes",
    "set_max_uncompressed_bytes",
]

#: The process-wide limit at import: 2 GiB declared by one row group / record batch.
DEFAULT_MAX_UNCOMPRESSED_BYTES = 2 << 30
_max_bytes: int | None = DEFAULT_MAX_UNCOMPRESSED_BYTES

LIMIT_NAME = "max_uncompressed_bytes"


def get_max_uncompressed_bytes() -> int | None:
    """The most bytes one Parquet row group or IPC record batch may declare (None: no limit).

    Example:
        >>> get_max_uncompressed_bytes()
        2147483648
    """
    return _max_bytes


def set_max_uncompressed_bytes(limit: int | None) -> None:
    """Set the process-wide decompression-bomb limit of the Arrow readers.

    Readers made with ``max_uncompressed_bytes=...`` (their default) read it when they
    read; ``None`` turns the check off.

    Example:
        >>> set_max_uncompressed_bytes(8 << 30)
        >>> get_max_uncompressed_bytes()
        8589934592
        >>> set_max_uncompressed_bytes(DEFAULT_MAX_UNCOMPRESSED_BYTES)
    """
    global _max_bytes
    if limit is not None and (isinstance(limit, bool) or int(limit) <= 0):
        raise ValueError(f"max_uncompressed_bytes must be a positive int or None, got {limit!r}")
    _max_bytes = None if limit is None else int(limit)


def resolve_max_uncompressed_bytes(limit: Any) -> int | None:
    """A reader's ``max_uncompressed_bytes`` as a number: ``...`` is the process-wide one.

    Example:
        >>> resolve_max_uncompressed_bytes(1000), resolve_max_uncompressed_bytes(None)
        (1000, None)
        >>> resolve_max_uncompressed_bytes(0)
        Traceback (most recent call last):
        ...
        ValueError: max_uncompressed_bytes must be a positive int, None or ..., got 0
    """
    if limit is ...:
        return _max_bytes
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise ValueError(
            f"max_uncompressed_bytes must be a positive int, None or ..., got {limit!r}"
        )
    return limit


def _refuse(path: str, what: str, size: int, limit: int) -> DecodeError:
    return DecodeError(
        f"{what} declares {size:,} bytes uncompressed, over the limit "
        f"{LIMIT_NAME}={limit:,} (a decompression bomb? If the file is trusted, "
        f"pass a larger {LIMIT_NAME}, or None)",
        path=path,
    )


# ---- Parquet


def check_parquet(
    metadata: pq.FileMetaData,
    path: str,
    limit: int | None,
    source: pa.NativeFile | None = None,
    row_groups: list[int] | None = None,
) -> None:
    """Refuse a row group whose declared sizes are negative or over ``limit``.

    ``row_groups`` (default all) are checked from the footer's column chunk sizes
    and, when ``source`` (the open file) is given, from their page headers too.
    Negative row counts or sizes are refused whatever the limit.

    Example:
        >>> import io, pyarrow as pa, pyarrow.parquet as pq
        >>> sink = io.BytesIO()
        >>> pq.write_table(pa.table({"x": [0] * 1000}), sink, use_dictionary=False)
        >>> meta = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata
        >>> check_parquet(meta, "t.parquet", 100)
        Traceback (most recent call last):
        ...
        trivium.core.errors.DecodeError: t.parquet: row group 0 declares 8,... bytes \
uncompressed, over the limit max_uncompressed_bytes=100 (a decompression bomb? ...)
    """
    groups = range(metadata.num_row_groups) if row_groups is None else row_groups
    for i in groups:
        group = metadata.row_group(i)
        if group.num_rows < 0:
            raise DecodeError(f"row group {i} declares {group.num_rows} rows", path=path)
        # only sizes and offsets: reading a chunk's codec aborts on an unknown one
        chunks = [group.column(j) for j in range(group.num_columns)]
        sizes = [c.total_uncompressed_size for c in chunks]
        if any(s < 0 for s in sizes) or any(c.total_compressed_size < 0 for c in chunks):
            raise DecodeError(f"row group {i} declares a negative size", path=path)
        declared = sum(sizes)
        if limit is not None and declared > limit:
            raise _refuse(path, f"row group {i}", declared, limit)
        if source is not None and limit is not None:
            paged = sum(_page_bytes(source, c, path, i) for c in chunks)
            if paged > limit:
                raise _refuse(path, f"row group {i} (its page headers)", paged, limit)


def _page_bytes(source: pa.NativeFile, chunk: Any, path: str, group: int) -> int:
    """The uncompressed sizes the page headers of one column chunk declare, added up."""
    start = chunk.data_page_offset
    if chunk.has_dictionary_page and 0 < chunk.dictionary_page_offset < start:
        start = chunk.dictionary_page_offset
    end = start + chunk.total_compressed_size
    if start < 0 or end > source.size():
        raise DecodeError(f"row group {group}: a column chunk lies outside the file", path=path)
    total, at = 0, start
    while at < end:
        header = source.read_at(min(_MAX_PAGE_HEADER, end - at), at)
        try:
            uncompressed, compressed, length = _page_header(header)
        except (IndexError, ValueError, struct.error):
            raise DecodeError(
                f"row group {group}: unreadable page header at byte {at}", path=path
            ) from None
        if uncompressed < 0 or compressed < 0:
            raise DecodeError(
                f"row group {group}: a page header at byte {at} declares a negative size",
                path=path,
            )
        total += uncompressed
        at += length + compressed
    return total


# Parquet's reader refuses page headers over 16 MiB by default; real ones take bytes.
_MAX_PAGE_HEADER = 1 << 16


def _page_header(data: pa.Buffer) -> tuple[int, int, int]:
    """``(uncompressed_page_size, compressed_page_size, header length)`` of a Thrift PageHeader."""
    reader = _CompactReader(memoryview(data))
    fields = reader.struct_fields()
    return fields.get(2, -1), fields.get(3, -1), reader.at


class _CompactReader:
    """The Thrift compact protocol, as far as skipping a struct and reading its ints."""

    def __init__(self, data: memoryview) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        value = self.data[self.at]
        self.at += 1
        return value

    def varint(self) -> int:
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
            if shift > 70:
                raise ValueError("varint too long")

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def struct_fields(self, depth: int = 0) -> dict[int, int]:
        """Skip a struct; the values of its top-level integer fields by field id."""
        if depth > 16:
            raise ValueError("structs nested too deep")
        ints: dict[int, int] = {}
        field = 0
        while True:
            head = self.byte()
            if head == 0:
                return ints
            kind, delta = head & 0x0F, head >> 4
            field = field + delta if delta else self.zigzag()
            if kind in (4, 5, 6):  # i16, i32, i64
                ints[field] = self.zigzag()
            else:
                self.skip(kind, depth)

    def skip(self, kind: int, depth: int, element: bool = False) -> None:
        if kind in (1, 2):  # a boolean field lives in its header; a list's takes a byte
            self.at += element
            return
        if kind == 3:
            self.at += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.at += 8
        elif kind == 8:
            length = self.varint()  # read before self.at is: `self.at += ...` reads it first
            self.at += length
        elif kind in (9, 10):  # list, set
            head = self.byte()
            count, item = head >> 4, head & 0x0F
            if count == 15:
                count = self.varint()
            for _ in range(count):
                self.skip(item, depth + 1, element=True)
        elif kind == 11:  # map
            count = self.varint()
            if count:
                types = self.byte()
                for _ in range(count):
                    self.skip(types >> 4, depth + 1, element=True)
                    self.skip(types & 0x0F, depth + 1, element=True)
        elif kind == 12:
            self.struct_fields(depth + 1)
        else:
            raise ValueError(f"unknown Thrift type {kind}")
        if self.at > len(self.data):
            raise IndexError("past the end of the header")


# ---- Arrow IPC

_RECORD_BATCH, _DICTIONARY_BATCH = 3, 2


def check_ipc(source: pa.NativeFile, path: str, limit: int | None) -> None:
    """Refuse an IPC file or stream one of whose batches declares more than ``limit``.

    Reads the messages from where ``source`` stands (the start of a stream, or the
    8 bytes after an IPC file's magic) without decompressing their bodies; batches
    without buffer compression are read as stored and are not counted. Leaves
    ``source`` at its start.

    Example:
        >>> import io, numpy as np, pyarrow as pa
        >>> sink = io.BytesIO()
        >>> t = pa.table({"x": np.zeros(100_000)})
        >>> options = pa.ipc.IpcWriteOptions(compression="zstd")
        >>> with pa.ipc.new_stream(sink, t.schema, options=options) as w:
        ...     w.write_table(t)
        >>> check_ipc(pa.BufferReader(sink.getvalue()), "t.arrows", 1000)
        Traceback (most recent call last):
        ...
        trivium.core.errors.DecodeError: t.arrows: record batch 0 declares 800,000 bytes \
uncompressed, over the limit max_uncompressed_bytes=1,000 (a decompression bomb? ...)
    """
    if limit is None:
        return
    start = source.tell()
    if source.read(6) != b"ARROW1":
        source.seek(start)
    else:
        source.seek(start + 8)
    try:
        for n, (what, declared) in enumerate(_declared_batches(source)):
            if declared > limit:
                raise _refuse(path, f"{what} {n}", declared, limit)
    finally:
        source.seek(start)


def _declared_batches(source: pa.NativeFile) -> Iterator[tuple[str, int]]:
    """``(kind, declared uncompressed bytes)`` of each compressed batch message."""
    while True:
        try:
            message = pa.ipc.read_message(source)
        except (EOFError, pa.ArrowException, OSError):
            return  # the end, or damage the reader itself will name
        if message is None:
            return
        if message.type not in ("record batch", "dictionary"):
            continue
        declared = _declared_size(message.metadata, message.body)
        if declared is not None:
            yield ("record batch" if message.type == "record batch" else "dictionary"), declared


def _declared_size(metadata: pa.Buffer, body: pa.Buffer | None) -> int | None:
    """What a batch message's compressed buffers declare, or None if it is not compressed."""
    try:
        fb = memoryview(metadata)
        message = _fb_table(fb, _u32(fb, 0))
        kind = _fb_scalar(fb, message, 1, "<B")
        batch = _fb_offset(fb, message, 2)
        if batch is None:
            return None
        if kind == _DICTIONARY_BATCH:
            batch = _fb_offset(fb, _fb_table(fb, batch), 1)
            if batch is None:
                return None
        elif kind != _RECORD_BATCH:
            return None
        table = _fb_table(fb, batch)
        if _fb_offset(fb, table, 3) is None:  # no BodyCompression: stored as is
            return None
        buffers = _fb_offset(fb, table, 2)
        count = 0 if buffers is None else _u32(fb, buffers)
        if count * 16 > len(fb):
            return None  # damage: left to the reader
        body_view = memoryview(body) if body is not None else memoryview(b"")
        total = 0
        for k in range(count):
            offset, length = struct.unpack_from("<qq", fb, buffers + 4 + 16 * k)
            if length < 8:
                continue
            (size,) = struct.unpack_from("<q", body_view, offset)
            total += length - 8 if size == -1 else size
        return total
    except (IndexError, struct.error, ValueError):
        return None


def _u32(fb: memoryview, at: int) -> int:
    return struct.unpack_from("<I", fb, at)[0]


def _fb_table(fb: memoryview, at: int) -> tuple[int, int, int]:
    """A flatbuffers table at ``at``: (its position, its vtable's, the vtable's length)."""
    vtable = at - struct.unpack_from("<i", fb, at)[0]
    return at, vtable, struct.unpack_from("<H", fb, vtable)[0]


def _fb_field(fb: memoryview, table: tuple[int, int, int], index: int) -> int | None:
    at, vtable, size = table
    slot = 4 + 2 * index
    if slot + 2 > size:
        return None
    offset = struct.unpack_from("<H", fb, vtable + slot)[0]
    return at + offset if offset else None


def _fb_scalar(fb: memoryview, table: tuple[int, int, int], index: int, fmt: str) -> int:
    where = _fb_field(fb, table, index)
    return 0 if where is None else struct.unpack_from(fmt, fb, where)[0]


def _fb_offset(fb: memoryview, table: tuple[int, int, int], index: int) -> int | None:
    where = _fb_field(fb, table, index)
    return None if where is None else where + _u32(fb, where)
