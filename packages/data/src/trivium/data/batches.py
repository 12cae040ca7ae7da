"""What a batch is to the per-sample ops, and how they take it apart and put it back.

Two kinds of item stand for many samples at once: a ``pyarrow.RecordBatch`` (or
``Table``), what Arrow sources yield, and a :class:`TensorBatch`, what
``to_tensors()`` makes of one (a dict of columns, each a tensor ``[rows, ...]`` or a
list of ``rows`` values). ``map``, ``filter`` and ``flatmap`` work on their samples
one by one; ``map_batches`` is the op that sees a whole batch.

Example:
    >>> import torch
    >>> batch = TensorBatch({"x": torch.tensor([1, 2, 3]), "name": ["a", "b", "c"]})
    >>> len(batch), sample(batch, 1)
    (3, {'x': tensor(2), 'name': 'b'})
    >>> take_rows(batch, [0, 2])
    TensorBatch({'x': tensor([1, 3]), 'name': ['a', 'c']})
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from trivium.core import stack_batch

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["TensorBatch", "collate_column", "is_batch", "rows_of", "sample", "take_rows"]


class TensorBatch(dict):
    """A dict of columns with one row per sample: tensors ``[rows, ...]`` or lists of ``rows``.

    ``to_tensors()`` yields these; ``len(batch)`` is the number of rows (not of
    columns, as for a plain dict). Per-sample ops (``map``, ``filter``) see one
    row at a time.

    Example:
        >>> import torch
        >>> len(TensorBatch({"a": torch.zeros(4, 2), "b": torch.ones(4)}))
        4
    """

    def __len__(self) -> int:
        for column in self.values():
            return len(column)
        return 0

    def num_columns(self) -> int:
        """How many columns the batch holds.

        Example:
            >>> TensorBatch({"a": [1], "b": [2]}).num_columns()
            2
        """
        return dict.__len__(self)

    def __repr__(self) -> str:
        return f"TensorBatch({dict.__repr__(self)})"

    def __reduce__(self) -> Any:
        return TensorBatch, (dict(self),)


def is_batch(item: Any) -> bool:
    """Whether ``item`` holds many samples (a RecordBatch, Table or :class:`TensorBatch`).

    Example:
        >>> import pyarrow as pa
        >>> is_batch(pa.record_batch({"x": [1]})), is_batch({"x": [1]})
        (True, False)
    """
    return isinstance(item, (TensorBatch, _arrow_batch_types()))


def _arrow_batch_types() -> tuple[type, ...]:
    """pyarrow's RecordBatch and Table; none before pyarrow is imported (nothing can be one).

    A loader over a map-style dataset never imports pyarrow (and pandas with it).
    """
    pa = sys.modules.get("pyarrow")
    return () if pa is None else (pa.RecordBatch, pa.Table)


def sample(batch: TensorBatch, index: int) -> dict[str, Any]:
    """Row ``index`` of ``batch`` as a dict (tensors are views of the batch's rows).

    Example:
        >>> import torch
        >>> sample(TensorBatch({"x": torch.arange(6).view(3, 2)}), 2)
        {'x': tensor([4, 5])}
    """
    return {name: column[index] for name, column in batch.items()}


def rows_of(batch: Any) -> list[Any]:
    """The samples of a batch: dicts of a RecordBatch's rows, or of a TensorBatch's.

    Example:
        >>> import pyarrow as pa
        >>> rows_of(pa.record_batch({"x": [1, 2]}))
        [{'x': 1}, {'x': 2}]
    """
    if isinstance(batch, TensorBatch):
        return [sample(batch, i) for i in range(len(batch))]
    return batch.to_pylist()


def take_arrow(data: pa.Table | pa.RecordBatch, rows: Any) -> Any:
    """``data.take(rows)``, also where pyarrow's take has no kernel for a column's type.

    pyarrow 26 cannot take from view types (``binary_view``, ``string_view``) that
    its IPC reader reads: those rows are gathered as one-row slices, joined.

    Example:
        >>> import pyarrow as pa
        >>> t = pa.table({"b": pa.array([b"x", b"yy", b"z"], pa.binary_view())})
        >>> take_arrow(t, [2, 0])["b"].to_pylist()
        [b'z', b'x']
    """
    import pyarrow as pa

    indices = pa.array(rows, pa.int64())
    try:
        return data.take(indices)
    except pa.ArrowNotImplementedError:
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        parts = [table.slice(int(i), 1) for i in indices.to_numpy()]
        out = pa.concat_tables(parts) if parts else table.slice(0, 0)
        if isinstance(data, pa.Table):
            return out
        columns = [pa.concat_arrays(c.chunks) for c in out.columns]  # one chunk at least
        return pa.RecordBatch.from_arrays(columns, schema=out.schema)


def take_rows(batch: Any, rows: Sequence[int]) -> Any:
    """The batch made of only ``rows`` (in that order); the same object when all are kept.

    Example:
        >>> import pyarrow as pa
        >>> take_rows(pa.record_batch({"x": [5, 6, 7]}), [2]).to_pydict()
        {'x': [7]}
    """
    rows = list(rows)
    if rows == list(range(len(batch))):
        return batch
    if not isinstance(batch, TensorBatch):
        return take_arrow(batch, rows)
    index = torch.tensor(rows, dtype=torch.int64)
    return TensorBatch(
        {
            name: column.index_select(0, index)
            if isinstance(column, torch.Tensor)
            else [column[i] for i in rows]
            for name, column in batch.items()
        }
    )


def collate_column(values: Sequence[Any]) -> Any:
    """One column from the samples' values: stacked when they are tensors of one shape.

    Numbers become a tensor too; anything else (tensors of different shapes,
    strings, ...) stays a list. Stacking goes into shared memory inside a DataLoader
    worker (``trivium.core.stack_batch``).

    Example:
        >>> import torch
        >>> collate_column([torch.zeros(2), torch.ones(2)]).shape
        torch.Size([2, 2])
        >>> collate_column([3, 4]), collate_column(["a", torch.zeros(1)])
        (tensor([3, 4]), ['a', tensor([0.])])
    """
    values = list(values)
    if values and all(isinstance(v, torch.Tensor) for v in values):
        first = values[0]
        if all(v.shape == first.shape and v.dtype == first.dtype for v in values):
            return stack_batch(values)
    if values and all(isinstance(v, numbers.Number) and not isinstance(v, complex) for v in values):
        return torch.tensor(values)
    return values
