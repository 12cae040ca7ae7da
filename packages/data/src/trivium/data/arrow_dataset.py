"""``ArrowDataset``: random access over memory-mapped Arrow IPC files.

The table is never loaded: an IPC file is memory-mapped, and each column gets a
getter over a NumPy view of its buffers, so ``ds[i]`` touches only row ``i``'s bytes.
DataLoader workers therefore share the page cache instead of each copying the data
(reopened by path when pickled into a worker). A Parquet input is converted once to
an IPC file in ``cache_dir`` (keyed by the file's path, size, modification time and
the columns) and memory-mapped from there; see :func:`default_cache_dir` for where
that is and how to move it.

What ``ds[i]`` returns (a dict, one entry per column): Python ``int`` / ``float`` /
``bool`` / ``str`` / ``bytes`` for scalars, a NumPy *view* of the mapped file for
fixed-size lists of numbers (a tensor view with ``format="torch"``), and Python
objects otherwise. The file is mapped copy-on-write: writing into a row view changes
that page for this dataset object only, never the file.

Example:
    >>> import os, tempfile, pyarrow as pa
    >>> path = os.path.join(tempfile.mkdtemp(), "t.arrow")
    >>> vectors = pa.array([[1.0, 2.0]] * 3, pa.list_(pa.float32(), 2))
    >>> table = pa.table({"x": [1, 2, 3], "v": vectors})
    >>> with pa.ipc.new_file(path, table.schema) as w:
    ...     w.write_table(table)
    >>> ds = ArrowDataset(path)
    >>> len(ds), ds[1]["x"], ds[1]["v"]
    (3, 2, array([1., 2.], dtype=float32))
    >>> ArrowDataset(path, format="torch")[1]["v"]
    tensor([1., 2.])
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from trivium.core.errors import (
    DatasetError,
    DecodeError,
    EmptyInputError,
    PathNotFoundError,
    TriviumError,
)
from trivium.core.skipping import Origin
from trivium.data._row_readers import column, row_class, row_reader
from trivium.data.batches import take_arrow
from trivium.data.columnar import to_tensors
from trivium.data.limits import check_ipc, check_parquet, resolve_max_uncompressed_bytes
from trivium.data.pipes import MapPipe
from trivium.data.sharding import epoch_rng

__all__ = ["ArrowDataset", "TrainTestSplit", "default_cache_dir"]

#: The files an ``ArrowDataset`` directory contributes (hidden and ``_``-prefixed skipped).
DATASET_SUFFIXES = (".arrow", ".arrows", ".feather", ".ipc", ".parquet")


def default_cache_dir() -> str:
    """Where :class:`ArrowDataset` keeps Parquet inputs converted to Arrow IPC.

    The first that is set of:

    1. ``$TRIVIUM_CACHE_DIR/arrow``;
    2. ``$XDG_CACHE_HOME/trivium/arrow``;
    3. ``~/.cache/trivium/arrow``.

    Each converted file is named ``<stem>-<key>.arrow``; deleting the folder is safe
    (files are converted again when next opened).

    Example:
        >>> import os
        >>> os.environ["TRIVIUM_CACHE_DIR"] = os.path.join("scratch", "cache")
        >>> default_cache_dir() == os.path.join("scratch", "cache", "arrow")
        True
        >>> del os.environ["TRIVIUM_CACHE_DIR"]
    """
    root = os.environ.get("TRIVIUM_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (
            xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
        )
        root = os.path.join(base, "trivium")
    return os.path.join(os.path.expanduser(root), "arrow")


def _dataset_files(path: str) -> list[str]:
    """``path`` itself, or the Arrow / Parquet files under a directory, sorted."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise PathNotFoundError(path=path)
    found = sorted(
        os.path.join(root, name)
        for root, _, names in os.walk(path, followlinks=True)
        for name in names
        if name.endswith(DATASET_SUFFIXES) and not name.startswith((".", "_"))
    )
    if not found:
        raise DatasetError(f"no {'/'.join(DATASET_SUFFIXES)} files in directory", path=path)
    return found


class TrainTestSplit(NamedTuple):
    """What :meth:`ArrowDataset.train_test_split` returns: ``(train, test)``.

    A tuple, so ``train, test = ds.train_test_split(...)`` binds the datasets; also
    indexable by ``"train"`` / ``"test"`` and with ``keys()`` / ``items()``, as the
    dict of HF ``datasets`` (iterating it yields the datasets, not the keys).

    Example:
        >>> import pyarrow as pa
        >>> ds = ArrowDataset.from_table(pa.table({"x": list(range(4))}))
        >>> train, test = ds.train_test_split(test_size=1, shuffle=False)
        >>> len(train), len(test), ds.train_test_split(test_size=1)["test"] is not None
        (3, 1, True)
    """

    train: ArrowDataset
    test: ArrowDataset

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            if key not in self._fields:
                raise KeyError(f"{key!r}: a split is 'train' or 'test'")
            return getattr(self, key)
        return tuple.__getitem__(self, key)

    def keys(self) -> tuple[str, ...]:
        """``("train", "test")``."""
        return self._fields

    def items(self) -> Iterator[tuple[str, ArrowDataset]]:
        """``("train", train)`` and ``("test", test)``."""
        return iter(zip(self._fields, self, strict=True))


def _cache_path(path: str, columns: list[str] | None, cache_dir: str) -> str:
    stat = os.stat(path)
    key = f"{os.path.abspath(path)}|{stat.st_size}|{stat.st_mtime_ns}|{columns}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.join(cache_dir, f"{stem}-{digest}.arrow")


def select_columns(schema: pa.Schema, columns: list[str] | None, path: str) -> pa.Schema:
    """``schema`` cut to ``columns``; a missing or ambiguous (duplicated) one names the file.

    Example:
        >>> import pyarrow as pa
        >>> select_columns(pa.schema([("a", pa.int8()), ("a", pa.int8())]), ["a"], "t.arrow")
        Traceback (most recent call last):
        ...
        trivium.core.errors.DatasetError: t.arrow: column 'a' appears 2 times (columns are ...
    """
    if columns is None:
        return schema
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise DatasetError(f"no column {missing} (columns are {schema.names})", path=path)
    for name in columns:
        count = schema.names.count(name)
        if count > 1:
            raise DatasetError(
                f"column {name!r} appears {count} times (columns are {schema.names}); "
                "rename the duplicates to select it",
                path=path,
            )
    return pa.schema([schema.field(c) for c in columns])


def _convert_parquet(path: str, columns: list[str] | None, out: str, limit: int | None) -> None:
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = f"{out}.{os.getpid()}.tmp"
    try:
        source = pa.memory_map(path)
        reader = pq.ParquetFile(source, page_checksum_verification=True)
        check_parquet(reader.metadata, path, limit, source)  # before anything is decompressed
        schema = select_columns(reader.schema_arrow, columns, path)
        with pa.ipc.new_file(tmp, schema) as writer:
            for batch in reader.iter_batches(batch_size=65_536, columns=columns):
                writer.write_batch(batch)
        os.replace(tmp, out)  # atomic: concurrent converters never see half a file
    except (pa.ArrowException, OSError, ValueError) as e:
        if isinstance(e, TriviumError):
            raise
        raise DecodeError(f"cannot convert Parquet to Arrow IPC: {e}", path=path) from e
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _open_mapped(path: str, name: str, limit: int | None) -> pa.Table:
    """The IPC file (or stream) at ``path`` as a table whose buffers point into a private map.

    Copy-on-write (``MAP_PRIVATE``): rows handed out are views of the file's pages, and
    a user writing into one gets a private copy of that page instead of a crash on a
    read-only map; the file never changes. Errors name ``name`` (the user's file,
    where ``path`` is its converted copy). Batches with compressed buffers are
    decompressed into memory, once their declared sizes pass ``limit``.
    """
    try:
        with open(path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        buffer = pa.py_buffer(mapped)
        check_ipc(pa.BufferReader(buffer), name, limit)
        try:
            reader = pa.ipc.open_file(buffer)
        except pa.ArrowInvalid:  # not the file format: an IPC stream
            reader = pa.ipc.open_stream(buffer)
        table = reader.read_all()  # buffers point into the map
        table.validate()
        return table
    except FileNotFoundError:
        raise PathNotFoundError(path=name) from None
    except (pa.ArrowException, OSError, ValueError) as e:
        if isinstance(e, TriviumError):
            raise
        raise DecodeError(f"not a readable Arrow IPC file or stream: {e}", path=name) from e


class ArrowDataset(MapPipe):
    """Map-style dataset over memory-mapped Arrow IPC files (Parquet converted once).

    Args:
        paths: an Arrow IPC file (``.arrow``) or Parquet file, a directory (its
            ``.arrow`` / ``.feather`` / ``.ipc`` / ``.parquet`` files, recursively, in
            sorted order, as :class:`~trivium.data.ParquetSource`), or a list of
            these (their schemas must agree).
        columns: the columns to keep (all by default).
        cache_dir: where Parquet inputs are converted to (default
            :func:`default_cache_dir`).
        format: ``"numpy"`` gives fixed-size lists as NumPy views (torch's
            ``default_collate`` turns them into tensors), ``"torch"`` as tensor views
            (a tensor per row costs about twice the time of the whole NumPy lookup).
        max_uncompressed_bytes: the most bytes a Parquet row group or a compressed IPC
            record batch may declare it expands to (``...``: the process-wide
            :func:`trivium.data.get_max_uncompressed_bytes`, 2 GiB unless set;
            ``None``: no limit); a larger one is refused before it is decompressed.

    ``ds[i]`` gives a dict (see the module docstring) and ``len(ds)`` the row count.
    ``ds[a:b]`` and ``ds[[i, j, ...]]`` give those rows: a ``pyarrow.Table`` (zero
    copy for a step-1 slice) with ``format="numpy"``, a dict of column tensors (as
    :func:`trivium.data.to_tensors`) with ``format="torch"``. It works with any
    sampler and with :class:`trivium.data.DataLoader`.

    A dataset over whole files is an instance of a subclass made for its columns
    (``ArrowDatasetRows``; ``MyDatasetRows`` for your subclass ``MyDataset``), whose
    ``__getitem__`` reads a row in a single Python call: test the type with
    ``isinstance``. It pickles and copies as the class you made it with, and a
    subclass that overrides ``__getitem__`` keeps its own.

    Errors name the file, and the row where one is known: a missing path raises
    :class:`~trivium.core.errors.PathNotFoundError`, an empty file
    :class:`~trivium.core.errors.EmptyInputError`, a file pyarrow cannot read (or
    over ``max_uncompressed_bytes``) :class:`~trivium.core.errors.DecodeError`, and a
    row whose value has no Python form (a date beyond year 9999, a duration beyond
    ``timedelta``'s range) a ``DecodeError`` naming the file, row and column. Rows are
    dicts, so a file whose columns share a name is refused (``DatasetError``) unless
    ``columns`` leaves the duplicates out. :meth:`item_origin` names the file and row
    of an item.

    Example:
        >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
        >>> root = tempfile.mkdtemp()
        >>> pq.write_table(pa.table({"x": [10, 20, 30]}), os.path.join(root, "t.parquet"))
        >>> ds = ArrowDataset(os.path.join(root, "t.parquet"), cache_dir=root)
        >>> [ds[i]["x"] for i in range(len(ds))], ds[1:3]["x"].to_pylist()
        ([10, 20, 30], [20, 30])
    """

    def __init__(
        self,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        columns: Sequence[str] | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        format: str = "numpy",
        max_uncompressed_bytes: int | Any | None = ...,
    ) -> None:
        resolve_max_uncompressed_bytes(max_uncompressed_bytes)  # checked now, read when opening
        self.max_uncompressed_bytes = max_uncompressed_bytes
        if format not in ("torch", "numpy"):
            raise ValueError(f"format must be 'torch' or 'numpy', got {format!r}")
        self.format = format
        if isinstance(paths, bytes):
            raise TypeError("ArrowDataset takes paths (str or os.PathLike), not bytes")
        items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        if not items:
            raise ValueError("ArrowDataset: no paths given")
        self.paths = [f for p in items for f in _dataset_files(os.fspath(p))]
        self.columns = None if columns is None else list(columns)
        self.cache_dir = os.fspath(cache_dir) if cache_dir is not None else default_cache_dir()
        self._ipc_paths = [self._as_ipc(p) for p in self.paths]
        self._indices: np.ndarray | None = None
        self._open()

    # ---- opening
    def _as_ipc(self, path: str) -> str:
        try:
            with open(path, "rb") as f:
                magic = f.read(4)
        except FileNotFoundError:
            raise PathNotFoundError(path=path) from None
        if not magic:
            raise EmptyInputError(path=path)
        if magic != b"PAR1":
            return path
        out = _cache_path(path, self.columns, self.cache_dir)
        if not os.path.exists(out):
            _convert_parquet(path, self.columns, out, self._limit())
        return out

    def _limit(self) -> int | None:
        return resolve_max_uncompressed_bytes(getattr(self, "max_uncompressed_bytes", ...))

    def _open(self) -> None:
        tables = []
        for path, ipc in zip(self.paths, self._ipc_paths, strict=True):
            table = _open_mapped(ipc, path, self._limit())
            select_columns(table.schema, self.columns, path)
            if self.columns is not None:
                table = table.select(self.columns)
            _check_unique_names(table.schema, path)
            if tables and not table.schema.equals(tables[0].schema):
                raise DatasetError(
                    f"schema differs from {self.paths[0]}: {table.schema} != {tables[0].schema}",
                    path=path,
                )
            tables.append(table)
        self._file_starts = np.cumsum([0] + [t.num_rows for t in tables]).tolist()
        self._set_table(pa.concat_tables(tables) if len(tables) > 1 else tables[0])

    def _set_table(self, table: pa.Table) -> None:
        self.table = table
        names = table.schema.names
        self._names = names
        self._num_rows = table.num_rows
        self._offsets: list[int] = [0]
        batches = []
        chunked = [table.column(n) for n in names]
        for c in range(table.column(0).num_chunks if names else 0):
            chunks = [col.chunk(c) for col in chunked]
            batches.append([column(a, self.format) for a in chunks])
            self._offsets.append(self._offsets[-1] + len(chunks[0]))
        if not batches:  # no record batch (a schema only): no row to read
            self._read = _no_rows
            self._direct_rows = 0
            return
        failed = _RowFailure(table, list(getattr(self, "paths", [])), self._file_starts_or_none())
        self._read = row_reader(names, batches, self._offsets, failed)
        # rows ds[i] reads directly: none in a select() view (its rows go through _indices)
        self._direct_rows = self._num_rows if self._indices is None else 0
        public = _public_class(self)
        if self._indices is None and public.__getitem__ is ArrowDataset.__getitem__:
            # ds[i] in one Python frame (a subclass that overrides __getitem__ keeps it)
            self.__class__ = row_class(
                public, names, batches, self._offsets, self._num_rows, failed
            )

    def _file_starts_or_none(self) -> list[int] | None:
        return getattr(self, "_file_starts", None)

    def item_origin(self, index: int) -> Origin:
        """The file item ``index`` comes from and its row there.

        What errors and skip reports name (:func:`trivium.core.skipping.item_origin`).

        Example:
            >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
            >>> root = tempfile.mkdtemp()
            >>> for name, rows in (("a", 3), ("b", 2)):
            ...     pq.write_table(pa.table({"x": range(rows)}), f"{root}/{name}.parquet")
            >>> ds = ArrowDataset(root, cache_dir=root)
            >>> origin = ds.item_origin(4)
            >>> os.path.basename(origin.path), origin.detail
            ('b.parquet', 'row 1')
        """
        return _origin(self.paths, self._file_starts_or_none(), self._resolve(index))

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt as the public class: the class row_class made exists in this process only
        return object.__new__, (_public_class(self),), self.__getstate__()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for key in ("table", "_read", "_offsets", "_names", "_num_rows", "_direct_rows"):
            state.pop(key, None)  # a worker maps the file again instead of copying it
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._open()

    # ---- access
    @property
    def data(self) -> pa.Table:  # type: ignore[override]
        """The memory-mapped ``pyarrow.Table`` (all rows, before ``select``)."""
        return self.table

    @property
    def column_names(self) -> list[str]:
        """The column names, as in HF ``datasets``."""
        return list(self._names)

    def __len__(self) -> int:
        return self.table.num_rows if self._indices is None else len(self._indices)

    def _row(self, i: int) -> dict[str, Any]:
        return self._read(i)

    def _resolve(self, index: int) -> int:
        n = len(self)
        if isinstance(index, bool) or not isinstance(index, int | np.integer):
            kind = type(index).__name__
            raise TypeError(
                f"ArrowDataset indices must be int or slice (or a list of ints), got {kind}"
            )
        if not -n <= index < n:
            raise IndexError(f"index {index} out of range for {n} rows")
        index = int(index) % n
        return index if self._indices is None else int(self._indices[index])

    def __getitem__(self, index: int | slice | Sequence[int]) -> Any:
        if type(index) is int and 0 <= index < self._direct_rows:
            return self._read(index)  # the common case, kept short
        if isinstance(index, slice | list | np.ndarray | torch.Tensor):
            rows = self._rows_table(index)
            return to_tensors(rows) if self.format == "torch" else rows
        return self._row(self._resolve(index))

    def _rows_table(self, index: slice | Sequence[int] | np.ndarray) -> pa.Table:
        if isinstance(index, slice):
            if self._indices is None:
                start, stop, step = index.indices(len(self))
                if step == 1:
                    return self.table.slice(start, max(0, stop - start))
            rows = np.arange(len(self))[index]
        else:
            rows = np.asarray(index).reshape(-1)
            if rows.dtype == np.bool_ or not (
                rows.size == 0 or np.issubdtype(rows.dtype, np.integer)
            ):
                raise TypeError(f"ArrowDataset row lists must hold ints, got {rows.dtype}")
            n = len(self)
            if rows.size and (rows.min() < -n or rows.max() >= n):
                raise IndexError(f"row indices out of range for {n} rows")
            rows = rows.astype(np.int64) % max(n, 1)
        return take_arrow(self.table, self._base(rows))

    def __getitems__(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        """Rows ``indices`` as a list of dicts (torch's DataLoader fetches batches so)."""
        read, direct = self._read, self._direct_rows
        return [
            read(i) if type(i) is int and 0 <= i < direct else self._row(self._resolve(i))
            for i in indices
        ]

    def _base(self, rows: np.ndarray) -> np.ndarray:
        return rows if self._indices is None else self._indices[rows]

    # ---- views
    def select(self, indices: Sequence[int] | np.ndarray) -> ArrowDataset:
        """A view of rows ``indices`` (in that order), sharing the mapped data.

        Example:
            >>> import pyarrow as pa
            >>> ds = ArrowDataset.from_table(pa.table({"x": [1, 2, 3]}))
            >>> [r["x"] for r in ds.select([2, 0])]
            [3, 1]
        """
        rows = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = len(self)
        if len(rows) and (rows.min() < -n or rows.max() >= n):
            raise IndexError(f"select: indices out of range for {n} rows")
        out = object.__new__(_public_class(self))  # its rows go through _indices
        out.__dict__.update(self.__dict__)
        out._indices = self._base(rows % max(n, 1))
        out._direct_rows = 0
        return out

    def shuffle(self, seed: int | None = None) -> ArrowDataset:
        """A view with the rows in a random order (reproducible with ``seed``).

        Example:
            >>> import pyarrow as pa
            >>> ds = ArrowDataset.from_table(pa.table({"x": list(range(5))}))
            >>> a = [r["x"] for r in ds.shuffle(seed=1)]
            >>> a == [r["x"] for r in ds.shuffle(seed=1)], sorted(a)
            (True, [0, 1, 2, 3, 4])
        """
        rng = np.random.default_rng() if seed is None else epoch_rng(seed, 0)
        return self.select(rng.permutation(len(self)))

    def train_test_split(
        self,
        test_size: float | int = 0.25,
        *,
        shuffle: bool = True,
        seed: int | None = None,
    ) -> TrainTestSplit:
        """``(train, test)`` views (``test_size``: a fraction or a count).

        The result is a :class:`TrainTestSplit`: unpack it (``train, test = ...``) or
        index it by name (``split["train"]``, ``split.test``).

        Example:
            >>> import pyarrow as pa
            >>> ds = ArrowDataset.from_table(pa.table({"x": list(range(10))}))
            >>> train, test = ds.train_test_split(test_size=0.2, seed=0)
            >>> split = ds.train_test_split(test_size=0.2, seed=0)
            >>> len(train), len(test), len(split["train"]), len(split.test)
            (8, 2, 8, 2)
        """
        n = len(self)
        n_test = round(test_size * n) if isinstance(test_size, float) else int(test_size)
        if not 0 < n_test < n:
            raise ValueError(f"test_size {test_size!r} leaves an empty split of {n} rows")
        rows = np.arange(n)
        if shuffle:
            rng = np.random.default_rng() if seed is None else epoch_rng(seed, 0)
            rows = rng.permutation(n)
        return TrainTestSplit(self.select(rows[: n - n_test]), self.select(rows[n - n_test :]))

    @staticmethod
    def from_table(table: pa.Table) -> ArrowDataset:
        """An ArrowDataset over an in-memory table (not memory-mapped; for small data).

        Example:
            >>> import pyarrow as pa
            >>> ArrowDataset.from_table(pa.table({"x": [1]}))[0]
            {'x': 1}
        """
        out = object.__new__(_InMemoryArrowDataset)
        out.format = "numpy"
        out.paths, out.columns, out.cache_dir, out._ipc_paths = [], None, "", []
        out.max_uncompressed_bytes = ...
        out._indices = None
        out._set_table(table)
        return out

    def __repr__(self) -> str:
        return f"ArrowDataset(num_rows={len(self)}, columns={self._names})"


def _check_unique_names(schema: pa.Schema, path: str) -> None:
    twice = sorted({n for n in schema.names if schema.names.count(n) > 1})
    if twice:
        raise DatasetError(
            f"columns {twice} appear more than once (columns are {schema.names}): rows are "
            "dicts by column name; pass columns=[...] without them, or rename them",
            path=path,
        )


def _no_rows(i: int) -> dict[str, Any]:
    raise IndexError(f"index {i} out of range for 0 rows")


def _origin(paths: list[str], starts: list[int] | None, row: int) -> Origin:
    """The file of global row ``row`` and the row there (an in-memory table has no file)."""
    if not paths or starts is None:
        return Origin("<in-memory table>", f"row {row}")
    k = max(0, int(np.searchsorted(starts, row, side="right")) - 1)
    return Origin(paths[min(k, len(paths) - 1)], f"row {row - starts[k]}")


class _RowFailure:
    """What a row reader raises when a value of global row ``i`` has no Python form.

    pyarrow's ``as_py`` raises ``OverflowError`` for a date beyond year 9999 or a
    duration beyond ``timedelta``, among others: the error names the file, the row
    in it and the column, and the row's original error is its cause. It holds the
    table, not the dataset (no reference cycle through the generated class).
    """

    def __init__(self, table: pa.Table, paths: list[str], starts: list[int] | None) -> None:
        self.table, self.paths, self.starts = table, paths, starts

    def __call__(self, i: int, error: Exception) -> DecodeError:
        names = self.table.schema.names
        column = next((n for k, n in enumerate(names) if not _converts(self.table, k, i)), None)
        where = _origin(self.paths, self.starts, i)
        what = f"{where.detail}" + (f", column {column!r}" if column is not None else "")
        reason = f"{what}: {type(error).__name__}: {error} (the value has no Python form)"
        failure = DecodeError(reason, path=where.path if self.paths else None)
        failure.__cause__ = error
        return failure


def _converts(table: pa.Table, k: int, i: int) -> bool:
    try:
        table.column(k)[i].as_py()
        return True
    except Exception:
        return False


def _public_class(ds: ArrowDataset) -> type[ArrowDataset]:
    """The class ``ds`` was made as (``ArrowDataset``, or a user's subclass of it).

    Example:
        >>> import pyarrow as pa
        >>> ds = ArrowDataset.from_table(pa.table({"x": [1]}))
        >>> type(ds).__name__, _public_class(ds).__name__
        ('_InMemoryArrowDatasetRows', '_InMemoryArrowDataset')
    """
    cls = type(ds)
    return cls.__dict__.get("_public_class", cls)


class _InMemoryArrowDataset(ArrowDataset):
    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy() | {"_read": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._set_table(self.table)
