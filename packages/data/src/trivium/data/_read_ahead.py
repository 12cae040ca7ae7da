"""Reading Parquet row groups ahead on the shared thread pool, handed out in order.

A streaming pass of :class:`trivium.data.ParquetSource` reads its row groups one after
another through pyarrow's batch reader, where decoding (for a list column, mostly its
repetition and definition levels) keeps one CPU busy. :func:`read_ahead` runs the next
few row-group reads on :func:`trivium.core.threads.get_thread_pool` (pyarrow releases the
GIL) while the caller uses the ones before, as pyarrow's dataset scanner does, and
:func:`rebatch` cuts the row groups of a file into the batches pyarrow's
``ParquetFile.iter_batches`` makes (a batch may span row groups of one file), so a pass
yields the same batches either way.

Example:
    >>> list(read_ahead(lambda x: x * x, [1, 2, 3], cost=lambda x: 1, budget=2, depth=2))
    [1, 4, 9]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from trivium.core.threads import get_thread_pool

T = TypeVar("T")
R = TypeVar("R")

# The most decoded bytes of row groups read ahead of the caller: several row groups of
# usual sizes (tens of MB), while a pass over row groups larger than half of it streams
# batch by batch instead (pyarrow's batch reader holds one batch, not a row group).
READ_AHEAD_BYTES = 256 << 20

_END: Any = object()  # what next() gives when no item is left


def row_group_bytes(meta: pq.FileMetaData, group: int, columns: Sequence[str] | None) -> int:
    """The uncompressed bytes a row group's chunks of ``columns`` (all: ``None``) declare.

    Example:
        >>> import io, pyarrow as pa, pyarrow.parquet as pq
        >>> sink = io.BytesIO()
        >>> pq.write_table(pa.table({"a": [1, 2], "b": [3, 4]}), sink, compression="none")
        >>> meta = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata
        >>> row_group_bytes(meta, 0, ["a"]) < row_group_bytes(meta, 0, None)
        True
    """
    chunks = meta.row_group(group)
    wanted = None if columns is None else set(columns)
    total = 0
    for i in range(chunks.num_columns):
        chunk = chunks.column(i)
        if wanted is None or chunk.path_in_schema.split(".", 1)[0] in wanted:
            total += max(chunk.total_uncompressed_size, 0)
    return total


def read_ahead(
    read: Callable[[T], R],
    items: Iterable[T],
    cost: Callable[[T], int],
    budget: int,
    depth: int,
) -> Iterator[R]:
    """``read(item)`` for each item, in order, up to ``depth`` of them running ahead.

    Reads run on the shared thread pool while the caller uses earlier results; a read
    starts only while the ones not yet handed out add up to at most ``budget`` (by
    ``cost``; one always may). A read the pool has not started by the time its result
    is wanted runs in the calling thread, so a busy pool (or a caller running on it)
    never waits on itself. An exception is raised where its item's result would be.

    Example:
        >>> list(read_ahead(str, range(4), cost=lambda x: 10, budget=25, depth=3))
        ['0', '1', '2', '3']
    """
    pool = get_thread_pool()
    pending: deque[tuple[T, Future[R], int]] = deque()
    queued = 0
    todo = iter(items)
    upcoming = next(todo, _END)
    try:
        while True:
            while upcoming is not _END and len(pending) < depth:
                size = cost(upcoming)
                if pending and queued + size > budget:
                    break
                pending.append((upcoming, pool.submit(read, upcoming), size))
                queued += size
                upcoming = next(todo, _END)
            if not pending:
                return
            item, future, size = pending.popleft()
            queued -= size
            yield read(item) if future.cancel() else future.result()
    finally:
        for _, future, _ in pending:  # a pass left early: reads not begun never begin
            future.cancel()


def rebatch(tables: Iterable[pa.Table], batch_size: int) -> Iterator[pa.RecordBatch]:
    """The rows of ``tables`` (a file's row groups, in order) in batches of ``batch_size``.

    Every batch but the last has ``batch_size`` rows and may span tables, as the batches
    of ``pyarrow.parquet.ParquetFile.iter_batches``; a batch within one table is a
    zero-copy slice of it.

    Example:
        >>> parts = [pa.table({"x": [0, 1, 2]}), pa.table({"x": [3, 4]})]
        >>> [b["x"].to_pylist() for b in rebatch(parts, 2)]
        [[0, 1], [2, 3], [4]]
    """
    pending: list[pa.Table] = []
    held = 0
    for table in tables:
        start = 0
        if held:  # complete the batch the tables before began
            start = min(batch_size - held, table.num_rows)
            pending.append(table.slice(0, start))
            held += start
            if held < batch_size:
                continue
            yield _one_batch(pa.concat_tables(pending))
            pending, held = [], 0
        while table.num_rows - start >= batch_size:
            yield _one_batch(table.slice(start, batch_size))
            start += batch_size
        if start < table.num_rows:
            pending, held = [table.slice(start)], table.num_rows - start
    if held:
        yield _one_batch(pa.concat_tables(pending))


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    """The rows of a non-empty table as one RecordBatch (copied only where chunked)."""
    batches = table.to_batches()
    if len(batches) == 1:
        return batches[0]
    return table.combine_chunks().to_batches()[0]
