"""``write_parquet``: rows or Arrow batches to a folder of Parquet shards.

Example:
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> paths = write_parquet(({"x": i} for i in range(5)), out, rows_per_file=2)
    >>> [p.rsplit("/", 1)[-1] for p in paths]
    ['part-00000.parquet', 'part-00001.parquet', 'part-00002.parquet']
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trivium.core.errors import DatasetError

__all__ = ["write_parquet"]

Item = Mapping[str, Any] | pa.RecordBatch | pa.Table


def _batches(
    items: Iterable[Item], schema: pa.Schema | None, chunk: int
) -> Iterator[pa.RecordBatch]:
    """RecordBatches from a mix of rows (buffered ``chunk`` at a time) and batches."""
    rows: list[Mapping[str, Any]] = []

    def flush() -> Iterator[pa.RecordBatch]:
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=schema)
            rows.clear()

    for item in items:
        if isinstance(item, pa.Table):
            yield from flush()
            yield from item.to_batches()
        elif isinstance(item, pa.RecordBatch):
            yield from flush()
            yield item
        elif isinstance(item, Mapping):
            rows.append(item)
            if len(rows) >= chunk:
                yield from flush()
        else:
            raise TypeError(
                "write_parquet: expected dict rows or pyarrow RecordBatches, "
                f"got {type(item).__name__}"
            )
    yield from flush()


class _ShardWriter:
    def __init__(self, out_dir: str, schema: pa.Schema | None, options: dict[str, Any]) -> None:
        self.out_dir, self.schema, self.options = out_dir, schema, options
        self.writer: pq.ParquetWriter | None = None
        self.paths: list[str] = []
        self.rows_in_file = 0

    def open(self, schema: pa.Schema) -> None:
        path = os.path.join(self.out_dir, f"part-{len(self.paths):05d}.parquet")
        self.writer = pq.ParquetWriter(path, schema, **self.options)
        self.paths.append(path)
        self.rows_in_file = 0

    def write(self, batch: pa.RecordBatch, row_group_size: int) -> None:
        if self.schema is None:
            self.schema = batch.schema
        elif not batch.schema.equals(self.schema):
            raise DatasetError(
                f"write_parquet: a batch has schema {batch.schema}, expected {self.schema}"
            )
        if self.writer is None:
            self.open(self.schema)
        assert self.writer is not None
        self.writer.write_batch(batch, row_group_size=row_group_size)
        self.rows_in_file += batch.num_rows

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def write_parquet(
    rows_or_batches: Iterable[Item],
    out_dir: str | os.PathLike[str],
    rows_per_file: int = 100_000,
    row_group_size: int = 1_024,
    compression: str | None = "zstd",
    *,
    schema: pa.Schema | None = None,
    use_dictionary: bool | Sequence[str] = True,
) -> list[str]:
    """Write dict rows and/or RecordBatches/Tables as ``out_dir/part-NNNNN.parquet`` shards.

    Each file holds at most ``rows_per_file`` rows in row groups of at most
    ``row_group_size`` rows (the unit :class:`trivium.data.ParquetSource` shards and
    shuffles). ``schema`` fixes the column types (inferred from the first rows
    otherwise); every batch must match it. ``use_dictionary`` is pyarrow's: dictionary
    encoding for every column, none, or the columns named (leave out columns of
    unique values, such as encoded images: their dictionary only costs time and
    memory). Returns the paths written, in order.

    Example:
        >>> import tempfile, pyarrow as pa, pyarrow.parquet as pq
        >>> out = tempfile.mkdtemp()
        >>> [path] = write_parquet([pa.record_batch({"x": [1, 2, 3]})], out, row_group_size=2)
        >>> pq.ParquetFile(path).metadata.num_row_groups
        2
    """
    for name, value in (("rows_per_file", rows_per_file), ("row_group_size", row_group_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"write_parquet: {name} must be a positive int, got {value!r}")
    out = os.fspath(out_dir)
    os.makedirs(out, exist_ok=True)
    options = {"compression": compression, "use_dictionary": use_dictionary}
    shards = _ShardWriter(out, schema, options)
    try:
        for batch in _batches(rows_or_batches, schema, row_group_size):
            while batch.num_rows:
                room = rows_per_file - shards.rows_in_file if shards.writer else rows_per_file
                head, batch = batch.slice(0, room), batch.slice(room)
                shards.write(head, row_group_size)
                if shards.rows_in_file >= rows_per_file:
                    shards.close()
    finally:
        shards.close()
    return shards.paths
