"""Where the sample an op works on comes from, the report its skips go to, and its seed.

:class:`trivium.data.DataLoader` reads each batch inside :func:`reading`: as it hands
the ops a sample it sets *where* the sample comes from (:func:`set_where`: a
function of the row, for a RecordBatch, giving the
:class:`~trivium.core.skipping.Origin` (file and row) of that row), and the ops that
skip or recover samples record them in the batch's
:class:`~trivium.core.skipping.SkipReport`, which travels back from the worker with
the batch. The ops that call user code per sample seed each sample's
:func:`~trivium.core.seeding.sample_scope` from :func:`op_seed`, which follows from
the batch's seed and the op's place in the graph. Outside a loader there is no
reading: an op names a sample by the file its error names, or by the sample itself
when it is a path, and opens no scope.

Ops read :func:`current_where` right after taking an item from the op before them
(the pipes are lazy: the item taken is the last one produced); an op that keeps only
some rows of a batch, or turns a batch into rows, sets what the rows it yields come
from.

Example:
    >>> from trivium.core.skipping import Origin, SkipReport
    >>> report = SkipReport()
    >>> with reading(report):
    ...     set_where(lambda row: Origin("a.parquet", f"row {row}"))
    ...     str(current_where()(3)), report_or(None) is report
    ('a.parquet, row 3', True)
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable, Iterator
from typing import Any

from trivium.core.seeding import derive_seed
from trivium.core.skipping import Origin, SkipReport, describe_error, recovered_file

__all__ = [
    "Where",
    "current_where",
    "name_sample",
    "op_seed",
    "reading",
    "recovered_name",
    "report_or",
    "row_where",
    "rows_where",
    "set_where",
]

#: Where a sample comes from: called with the row of a batch (None for a single
#: sample), it gives the sample's origin, or None where it is not known.
Where = Callable[[int | None], Origin | None]


class _Reading:
    __slots__ = ("report", "seed", "where")

    def __init__(self, report: SkipReport, seed: int | None) -> None:
        self.report, self.seed = report, seed
        self.where: Where | None = None


_reading: contextvars.ContextVar[_Reading | None] = contextvars.ContextVar(
    "trivium_data_reading", default=None
)


@contextlib.contextmanager
def reading(report: SkipReport, seed: int | None = None) -> Iterator[None]:
    """Inside the block, ops record their skips and recoveries in ``report``.

    ``seed`` is the batch's: the ops seed their samples' scopes from it (:func:`op_seed`).

    Example:
        >>> from trivium.core.skipping import SkipReport
        >>> with reading(SkipReport()):
        ...     current_where() is None
        True
    """
    token = _reading.set(_Reading(report, seed))
    try:
        yield
    finally:
        _reading.reset(token)


def set_where(where: Where | None) -> None:
    """Say where the item now handed on comes from (nothing outside :func:`reading`).

    Example:
        >>> set_where(None)  # outside a loader: nothing to say
    """
    state = _reading.get()
    if state is not None:
        state.where = where


def current_where() -> Where | None:
    """Where the item last handed on comes from, or None (unknown, or outside a loader).

    Example:
        >>> current_where() is None
        True
    """
    state = _reading.get()
    return None if state is None else state.where


def op_seed(op: Any) -> int | None:
    """The seed of the sample scopes ``op`` opens in the batch being read (None outside one).

    It follows from the batch's seed and how many ops stand between ``op`` and the
    graph's source, so two random ops draw differently and the draws do not depend on
    which worker reads the batch.

    Example:
        >>> from trivium.core.skipping import SkipReport
        >>> class Op: source = None
        >>> with reading(SkipReport(), seed=7):
        ...     op_seed(Op()) == op_seed(Op())
        True
        >>> op_seed(Op()) is None
        True
    """
    state = _reading.get()
    if state is None or state.seed is None:
        return None
    depth, node = 0, op.source
    while node is not None and getattr(node, "source", None) is not None:
        depth, node = depth + 1, node.source
    return derive_seed(state.seed, depth)


def rows_where(where: Where | None, rows: list[int]) -> Where | None:
    """Where the rows of a batch cut to ``rows`` (of the batch ``where`` describes) come from.

    Example:
        >>> from trivium.core.skipping import Origin
        >>> cut = rows_where(lambda row: Origin("a.arrow", f"row {row}"), [4, 9])
        >>> str(cut(1))
        'a.arrow, row 9'
    """
    if where is None:
        return None
    return lambda row: where(None if row is None else rows[row])


def row_where(where: Where | None, row: int) -> Where | None:
    """Where row ``row`` of the batch ``where`` describes comes from, once it is an item itself.

    Example:
        >>> from trivium.core.skipping import Origin
        >>> str(row_where(lambda row: Origin("a.arrow", f"row {row}"), 5)(None))
        'a.arrow, row 5'
    """
    if where is None:
        return None
    return lambda _row: where(row)


def report_or(default: SkipReport | None) -> SkipReport | None:
    """The report of the batch being read, else ``default`` (an op's own).

    Example:
        >>> report_or(None) is None
        True
    """
    state = _reading.get()
    return default if state is None else state.report


def name_sample(
    error: BaseException | None, item: Any, where: Where | None, row: int | None, count: int
) -> str:
    """What a report calls a skipped sample: its file, as precisely as it is known.

    The file the error names; else the origin the loader gave (file and row); else
    the sample itself when it is a path; else ``"item {count}"`` (its place in the
    pipe's output).

    Example:
        >>> name_sample(KeyError("label"), "imgs/7.jpg", None, None, 3)
        'imgs/7.jpg'
        >>> name_sample(KeyError("label"), {"x": 1}, None, None, 3)
        'item 3'
    """
    path = None if error is None else describe_error(error)[0]
    if path is not None:
        return path
    return _origin_or_path(item, where, row) or f"item {count}"


def _origin_or_path(item: Any, where: Where | None, row: int | None) -> str | None:
    """The origin the loader gave for ``row``, else the sample itself when it is a path."""
    origin = None if where is None else where(row)
    if origin is not None:
        return str(origin)
    if isinstance(item, str | os.PathLike):
        return os.fspath(item)
    return None


def recovered_name(message: str, item: Any, where: Where | None, row: int | None) -> str:
    """What a report calls the file behind a ``DecodeWarning`` issued for a sample.

    The file the message starts with; else the origin the loader gave; else the
    sample itself when it is a path; else the message.

    Example:
        >>> recovered_name("returned a partial image", "imgs/7.jpg", None, None)
        'imgs/7.jpg'
    """
    known = recovered_file(message)
    if known != message:
        return known
    return _origin_or_path(item, where, row) or message
