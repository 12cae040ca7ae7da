"""Generated row readers over memory-mapped Arrow columns (``ArrowDataset``'s ``ds[i]``).

Each column of each record batch gets a :class:`_Column`: a C-level getter or a NumPy
matrix over the mapped buffers, and the expression that reads row ``j`` from it. One
piece of Python source then reads a whole row as a dict display over those
expressions, compiled once per dataset (as ``collections.namedtuple`` builds its
code). :func:`row_class` makes that source the ``__getitem__`` of a subclass made for
one dataset, so that ``ds[i]`` runs a single Python frame: the index check, finding
the row's record batch (:func:`_locate`) and the columns' C calls.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import torch

from trivium.data.columnar import column_to_tensor

#: What a reader raises when a row's values fail to convert: ``failed(i, error)``.
Failure = Callable[[int, Exception], Exception]


class _Column(NamedTuple):
    """How a row reader reads row ``j`` of one record batch's column."""

    source: Any  # a getter, or a NumPy matrix viewing the mapped buffer
    template: str  # the expression for row j, "{}" standing for source


def _numeric_view(arr: pa.Array) -> np.ndarray | None:
    try:
        return arr.to_numpy(zero_copy_only=True)
    except (pa.ArrowInvalid, NotImplementedError):
        return None


def _is_number_matrix(arr: pa.Array) -> bool:
    kind = arr.type
    return (
        arr.null_count == 0
        and pa.types.is_fixed_size_list(kind)
        and (pa.types.is_integer(kind.value_type) or pa.types.is_floating(kind.value_type))
    )


def column(arr: pa.Array, format: str) -> _Column:
    """Row ``j`` of ``arr`` as C calls where the column allows.

    Numbers without nulls: Python ``int`` / ``float`` through ``ndarray.item``;
    fixed-size lists of numbers: a row of a NumPy matrix viewing the buffer (a tensor
    view with ``format="torch"``); binary: ``bytes`` of the row's slice; anything else
    pyarrow's ``as_py``.

    Example:
        >>> import pyarrow as pa
        >>> c = column(pa.array([3, 4]), "numpy")
        >>> c.template, c.source(1)
        ('{}(j)', 4)
    """
    kind = arr.type
    if arr.null_count == 0:
        if pa.types.is_integer(kind) or pa.types.is_floating(kind):
            view = _numeric_view(arr)
            if view is not None:
                return _Column(view.item, "{}(j)")  # a Python int / float
        if _is_number_matrix(arr):
            matrix = column_to_tensor(arr).numpy()  # a view of the mapped buffer
            # subscript syntax: the C slot directly (a bound __getitem__ costs more)
            return _Column(matrix, "_t({}[j])" if format == "torch" else "{}[j]")
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            offsets = np.frombuffer(
                arr.buffers()[1], np.int64 if pa.types.is_large_binary(kind) else np.int32
            )[arr.offset : arr.offset + len(arr) + 1]
            data = memoryview(arr.buffers()[2] or b"")
            return _Column(lambda j: bytes(data[offsets[j] : offsets[j + 1]]), "{}(j)")
    return _Column(lambda j: arr[j].as_py(), "{}(j)")


class _RowSource(NamedTuple):
    """The source lines that read row ``i`` and the globals they run with."""

    locate: str  # statements setting c (the record batch, when several) and j (its row)
    row: str  # the dict display of row j
    scope: dict[str, Any]


def _row_source(
    names: Sequence[str], batches: Sequence[Sequence[_Column]], starts: Sequence[int]
) -> _RowSource:
    per_column = [_same_template([batch[k] for batch in batches]) for k in range(len(names))]
    several = len(batches) > 1
    items = ", ".join(
        f"{name!r}: {columns[0].template.format(f'_c{k}[c]' if several else f'_c{k}')}"
        for k, (name, columns) in enumerate(zip(names, per_column, strict=True))
    )
    scope: dict[str, Any] = {"_t": torch.from_numpy, "_bisect": bisect.bisect_right}
    scope["_starts"] = list(starts)
    for k, columns in enumerate(per_column):
        sources = [c.source for c in columns]
        scope[f"_c{k}"] = sources if several else sources[0]
    return _RowSource(_locate(starts) if several else "j = i\n", f"{{{items}}}", scope)


#: Up to this many record batches of uneven lengths, a row's batch is found by a tree
#: of comparisons with constants (at most four); beyond, by a bisect.
TREE_BATCHES = 16


def _locate(starts: Sequence[int]) -> str:
    """Statements setting ``c``, the record batch holding row ``i``, and ``j``, its row there.

    ``starts`` are the batches' first rows and the row count; ``0 <= i < starts[-1]``.
    A division where every batch but the last has one length (as writers chunk a
    table), else comparisons with the starts (up to :data:`TREE_BATCHES` batches), else
    a bisect of ``starts``.

    Example:
        >>> _locate([0, 4, 8, 9]).splitlines()
        ['c = i // 4', 'j = i - _starts[c]']
        >>> print(_locate([0, 4, 6, 9]), end="")
        if i < 4:
            c = 0
            j = i
        elif i < 6:
            c = 1
            j = i - 4
        else:
            c = 2
            j = i - 6
        >>> _locate([*range(0, 70, 2), 69]).splitlines()  # 35 batches, 2 rows but the last
        ['c = i // 2', 'j = i - _starts[c]']
        >>> _locate([*range(0, 70, 2), 71]).splitlines()[0]  # the last longer: 35 uneven
        'c = _bisect(_starts, i) - 1'
    """
    lengths = [b - a for a, b in itertools.pairwise(starts)]
    size = lengths[0]
    if size > 0 and all(n == size for n in lengths[:-1]) and lengths[-1] <= size:
        return f"c = i // {size}\nj = i - _starts[c]\n"
    if len(lengths) <= TREE_BATCHES:
        return _compare_tree(starts, 0, len(lengths))
    return "c = _bisect(_starts, i) - 1\nj = i - _starts[c]\n"


def _compare_tree(starts: Sequence[int], lo: int, hi: int) -> str:
    """``_locate`` for a row of batches ``lo`` to ``hi - 1``, halving them per comparison."""
    if hi - lo == 1:
        return f"c = {lo}\nj = i{f' - {starts[lo]}' if starts[lo] else ''}\n"
    mid = (lo + hi) // 2
    left, right = _compare_tree(starts, lo, mid), _compare_tree(starts, mid, hi)
    if right.startswith("if "):
        return f"if i < {starts[mid]}:\n{_indent(left, 4)}el{right}"
    return f"if i < {starts[mid]}:\n{_indent(left, 4)}else:\n{_indent(right, 4)}"


def _define(name: str, code: str, scope: dict[str, Any], label: str) -> Callable[..., Any]:
    """The function ``name`` that ``code`` defines, its globals ``scope``."""
    exec(compile(code, f"<{label}>", "exec"), scope)
    return scope[name]


def _indent(lines: str, depth: int) -> str:
    return "".join(" " * depth + line + "\n" for line in lines.splitlines())


def _returning(row: str, failed: Failure | None, depth: int) -> str:
    """``return row``; with ``failed``, inside a ``try`` (free in CPython 3.11 until it raises)."""
    pad = " " * depth
    if failed is None:
        return f"{pad}return {row}\n"
    return (
        f"{pad}try:\n{pad}    return {row}\n"
        f"{pad}except Exception as e:\n{pad}    raise _failed(i, e) from e\n"
    )


def row_reader(
    names: Sequence[str],
    batches: Sequence[Sequence[_Column]],
    starts: Sequence[int],
    failed: Failure | None = None,
) -> Callable[[int], dict[str, Any]]:
    """One function ``i -> {name: column's row i, ...}`` over all record batches.

    ``i`` must be a row in ``range(starts[-1])``. A row costs one Python call, finding
    its record batch (:func:`_locate`, when there are several) and the columns' C
    calls, as a hand-written reader over the mapped columns would. ``_t`` in a
    template is ``torch.from_numpy``. Where a value fails to convert, the reader
    raises ``failed(i, error)`` (the error itself without ``failed``).

    Example:
        >>> import numpy as np
        >>> cols = [_Column(str, "{}(j)"), _Column(np.eye(2), "_t({}[j])")]
        >>> row_reader(["a", "b"], [cols], [0, 2])(1)
        {'a': '1', 'b': tensor([0., 1.], dtype=torch.float64)}
    """
    source = _row_source(names, batches, starts)
    code = f"def read(i):\n{_indent(source.locate, 4)}{_returning(source.row, failed, 4)}"
    return _define("read", code, source.scope | {"_failed": failed}, "ArrowDataset row reader")


def _same_template(columns: list[_Column]) -> list[_Column]:
    """``columns`` (one column's batches) with one template, calls where they differ."""
    if len({c.template for c in columns}) <= 1:
        return columns
    return [_Column(row_reader(["v"], [[c]], [0]), "{}(j)['v']") for c in columns]


def row_class(
    base: type,
    names: Sequence[str],
    batches: Sequence[Sequence[_Column]],
    starts: Sequence[int],
    rows: int,
    failed: Failure | None = None,
) -> type:
    """A subclass of ``base`` for one dataset: ``__getitem__`` reads its rows directly.

    ``ds[i]`` for an ``int`` in ``range(-rows, rows)`` is one Python frame: the check,
    the row's record batch and the columns' C calls, inlined. Any other index goes to
    ``base.__getitem__`` (slices, lists, the errors); a value that fails to convert
    raises ``failed(i, error)``, as :func:`row_reader`. The class keeps ``base`` as
    ``_public_class``; instances pickle as instances of ``base`` (its ``__reduce__``).

    Example:
        >>> import numpy as np
        >>> class Base:
        ...     def __getitem__(self, i):
        ...         raise IndexError(f"no row {i}")
        >>> Rows = row_class(Base, ["a"], [[_Column(np.arange(3).item, "{}(j)")]], [0, 3], 3)
        >>> Rows.__name__, Rows()[0], Rows()[-1], issubclass(Rows, Base)
        ('BaseRows', {'a': 0}, {'a': 2}, True)
        >>> Rows()[3]
        Traceback (most recent call last):
        IndexError: no row 3
    """
    source = _row_source(names, batches, starts)
    qualname = f"{base.__qualname__}Rows"
    # exactly (self, i), no defaults: CPython then runs ds[i] without a C-level call
    # (BINARY_SUBSCR_GETITEM). The common case, 0 <= i < rows, costs two comparisons.
    code = (
        "def __getitem__(self, i):\n"
        f"    if type(i) is int and i < {rows}:\n"
        "        if i < 0:\n"
        f"            if i < {-rows}:\n"
        "                return _index(self, i)\n"
        f"            i += {rows}\n"
        f"{_indent(source.locate, 8)}"
        f"{_returning(source.row, failed, 8)}"
        "    return _index(self, i)\n"
    )
    scope = source.scope | {"_index": base.__getitem__, "_failed": failed}
    getitem = _define("__getitem__", code, scope, f"{qualname}.__getitem__")
    getitem.__qualname__ = f"{qualname}.__getitem__"
    getitem.__module__ = base.__module__
    namespace = {
        "__getitem__": getitem,
        "__module__": base.__module__,
        "__qualname__": qualname,
        "__doc__": f"{base.__name__} whose ``ds[i]`` reads this dataset's rows directly.",
        "__slots__": (),
        "_public_class": base,
    }
    return type(qualname.rpartition(".")[2], (base,), namespace)
