"""Arrow sources: Parquet, Arrow IPC and CSV files as pipes of ``pyarrow.RecordBatch``.

A source lists its files (local paths, directories, URIs such as ``s3://bucket/dir``
or a ``pyarrow.dataset.FileSystemDataset``) and cuts them into *fragments*: a
Parquet row group, a record batch of an Arrow IPC file, a whole IPC stream or CSV
file. Fragments are the unit of sharding and shuffling: ``shard()`` (and plain
iteration inside a torch DataLoader worker) hands whole fragments to each shard, so a
shard reads only its own row groups. :class:`trivium.data.DataLoader` reads rows
of the fragments by global row id (see :mod:`trivium.data.sharding`).

Every file is checked when the fragments are listed: a file pyarrow cannot read,
a missing (or duplicated) column, a schema that disagrees with the first file, or
a piece declaring more than ``max_uncompressed_bytes`` (see
:mod:`trivium.data.limits`) raises :class:`trivium.core.DatasetError` /
:class:`trivium.core.DecodeError` naming it.

Example:
    >>> import os, tempfile
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pq.write_table(pa.table({"x": list(range(5))}), path, row_group_size=2)
    >>> src = ParquetSource(path, batch_size=4)
    >>> [b.num_rows for b in src], len(src.fragments)
    ([4, 1], 3)
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
import os
import pickle
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

# pyarrow.array(ndarray), which take() runs on every batch, looks up numpy.ma, which
# NumPy 2 imports lazily: imported here, in the parent, it is not imported again
# (20-100 ms) by every DataLoader worker that an epoch starts.
import numpy.ma
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as pds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from torch.utils.data import get_worker_info

from trivium.core.errors import (
    DatasetError,
    DecodeError,
    EmptyInputError,
    PathNotFoundError,
    TriviumError,
)
from trivium.core.forking import ForkSafe, abandon
from trivium.core.skipping import Origin
from trivium.core.threads import get_num_threads
from trivium.data._read_ahead import READ_AHEAD_BYTES, read_ahead, rebatch, row_group_bytes
from trivium.data.batches import take_arrow
from trivium.data.limits import check_ipc, check_parquet, resolve_max_uncompressed_bytes
from trivium.data.pipes.base import IterPipe
from trivium.data.shared_cache import SharedReadCache

__all__ = ["ArrowIPCSource", "ArrowSource", "CSVSource", "Fragment", "ParquetSource", "list_shards"]

PathInput = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | pds.FileSystemDataset


@dataclass(frozen=True)
class Fragment:
    """A piece of a file read as a whole: ``index`` is the row group / record batch.

    Example:
        >>> Fragment("a.parquet", 0, 10).num_rows
        10
    """

    path: str
    index: int
    num_rows: int


@contextmanager
def _arrow_errors(what: str, path: str) -> Iterator[None]:
    """Arrow, OS and value errors inside as ``DecodeError("{what}: {e}")`` naming ``path``."""
    try:
        yield
    except (pa.ArrowException, OSError, ValueError) as e:
        if isinstance(e, TriviumError):
            raise  # names its file already
        raise DecodeError(f"{what}: {e}", path=path) from e


def _split_uri(path: str, filesystem: pafs.FileSystem | None) -> tuple[pafs.FileSystem, str]:
    if filesystem is not None:
        if "://" in path:  # the caller's filesystem takes "bucket/key"
            path = path.split("://", 1)[1]
        return filesystem, path
    if "://" in path:
        try:
            return pafs.FileSystem.from_uri(path)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise DatasetError(f"cannot open filesystem: {e}", path=path) from e
    return pafs.LocalFileSystem(), os.path.abspath(path)


def _own_copy(fs: pafs.FileSystem | None) -> pafs.FileSystem | None:
    """A remote filesystem rebuilt from its options (a client of this process's own).

    The one it replaces is the parent's (inherited through fork): abandoned, never freed
    here, as freeing it would close the parent's connections.
    """
    if fs is None or isinstance(fs, pafs.LocalFileSystem):
        return fs
    abandon(fs)
    return pickle.loads(pickle.dumps(fs))


def list_shards(
    paths: PathInput, filesystem: pafs.FileSystem | None, suffixes: tuple[str, ...]
) -> tuple[pafs.FileSystem, list[str]]:
    """The filesystem and the files a source reads from ``paths``, as the sources list them.

    ``paths``: files, folders (their files ending in ``suffixes``, recursively, sorted by
    path, hidden ``.``/``_`` files left out), ``s3://`` URIs or a
    ``pyarrow.dataset.FileSystemDataset``. An empty file or a folder without matching
    files raises :class:`trivium.core.DatasetError` naming it.

    Example:
        >>> import os, tempfile
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> root = tempfile.mkdtemp()
        >>> for name in ("b.parquet", "a.parquet"):
        ...     pq.write_table(pa.table({"x": [1]}), os.path.join(root, name))
        >>> _, files = list_shards(root, None, (".parquet",))
        >>> [os.path.basename(f) for f in files]
        ['a.parquet', 'b.parquet']
    """
    if isinstance(paths, pds.FileSystemDataset):
        return paths.filesystem, list(paths.files)
    if isinstance(paths, bytes):
        raise TypeError("expected paths (str or os.PathLike), not bytes")
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    if not items:
        raise DatasetError("no paths given")
    fs_out: pafs.FileSystem | None = None
    files: list[str] = []
    for item in items:
        fs, path = _split_uri(os.fspath(item), filesystem)
        fs_out = fs_out or fs
        try:
            info = fs.get_file_info(path)
        except (pa.ArrowException, OSError) as e:
            raise DatasetError(f"cannot stat: {e}", path=os.fspath(item)) from e
        if info.type == pafs.FileType.File:
            if info.size == 0:
                raise EmptyInputError(path=os.fspath(item))
            files.append(path)
        elif info.type == pafs.FileType.Directory:
            found = fs.get_file_info(pafs.FileSelector(path, recursive=True))
            names = sorted(
                f.path
                for f in found
                if f.type == pafs.FileType.File
                and f.path.endswith(suffixes)
                and not os.path.basename(f.path).startswith((".", "_"))
            )
            empty = [f.path for f in found if f.path in names and f.size == 0]
            if empty:
                raise EmptyInputError(path=empty[0])
            if not names:
                raise DatasetError(f"no {'/'.join(suffixes)} files in directory", path=path)
            files += names
        else:
            raise PathNotFoundError(path=os.fspath(item))
    assert fs_out is not None
    return fs_out, files


class ArrowSource(ForkSafe, IterPipe):
    """Base of the Arrow sources: files → fragments → ``pyarrow.RecordBatch``es.

    Args:
        paths: a file, directory or URI, a list of them, or a
            ``pyarrow.dataset.FileSystemDataset``.
        columns: the columns to read (all by default), in this order.
        filter: a ``pyarrow.compute`` expression; only matching rows are read.
        batch_size: the most rows per yielded RecordBatch (default: one batch per
            fragment; a Parquet batch may span row groups of one file).
        filesystem: a ``pyarrow.fs.FileSystem`` to read ``paths`` with (for example an
            ``S3FileSystem`` with your endpoint and credentials).
        max_uncompressed_bytes: the most bytes one Parquet row group or compressed
            IPC record batch may declare it expands to (``...``: the process-wide
            :func:`trivium.data.get_max_uncompressed_bytes`, 2 GiB unless set;
            ``None``: no limit); a larger one is refused, naming the file, before it
            is decompressed (:mod:`trivium.data.limits`).

    Sources are fork-safe: in a forked DataLoader worker the parent's open file (and a
    remote filesystem's client, with its connections) is left alone and the worker
    opens its own; a pickled source (spawn / forkserver) goes without them.

    Example:
        >>> issubclass(ParquetSource, ArrowSource)
        True
    """

    suffixes: tuple[str, ...] = ()
    format_name = "Arrow"
    _fork_handles = ("_open_file", "_open_handle")

    def __init__(
        self,
        paths: PathInput,
        columns: Sequence[str] | None = None,
        filter: pds.Expression | None = None,
        batch_size: int | None = None,
        *,
        filesystem: pafs.FileSystem | None = None,
        max_uncompressed_bytes: int | Any | None = ...,
    ) -> None:
        resolve_max_uncompressed_bytes(max_uncompressed_bytes)  # checked now, read when reading
        self.max_uncompressed_bytes = max_uncompressed_bytes
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if filter is not None and not isinstance(filter, pds.Expression):
            raise TypeError(f"filter must be a pyarrow.compute.Expression, got {type(filter)}")
        self.paths = paths
        self.columns = None if columns is None else list(columns)
        self.filter = filter
        self.batch_size = batch_size
        self.filesystem = filesystem
        self._shard: tuple[int, int] | None = None
        self._fragments: list[Fragment] | None = None
        self._schema: pa.Schema | None = None
        self._fs: pafs.FileSystem | None = None
        self._filtered_rows: list[int] | None = None
        self._cache: OrderedDict[int, pa.Table] = OrderedDict()
        self.cache_fragments = 2
        # Set by the DataLoader: fragments read once per machine into shared memory.
        self.read_cache: SharedReadCache | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.paths!r}, columns={self.columns})"

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_cache"] = OrderedDict()  # workers read their own fragments
        return state

    def _after_fork(self) -> None:
        super()._after_fork()
        # A remote filesystem's client (connections, threads) is the parent's: the child
        # reads through a copy made from its options on first use (not here, where the
        # child has not run any code of its own yet).
        self._fs_from_parent = True

    def _filesystem(self) -> pafs.FileSystem:
        """The filesystem the files are read with (this process's own after a fork)."""
        if self._fs is None:
            self._list()
        elif self.__dict__.pop("_fs_from_parent", False):
            self._fs = _own_copy(self._fs)
        assert self._fs is not None
        return self._fs

    # ---- listing
    @property
    def fragments(self) -> list[Fragment]:
        """All fragments, in file order (files sorted within a directory)."""
        if self._fragments is None:
            self._list()
        assert self._fragments is not None
        return self._fragments

    @property
    def schema(self) -> pa.Schema:
        """The schema of the rows read (after ``columns``)."""
        if self._schema is None:
            self._list()
        assert self._schema is not None
        return self._schema

    def _list(self) -> None:
        forked = self.__dict__.pop("_fs_from_parent", False)
        filesystem = _own_copy(self.filesystem) if forked else self.filesystem
        fs, files = list_shards(self.paths, filesystem, self.suffixes)
        if forked and isinstance(self.paths, pds.FileSystemDataset):
            fs = _own_copy(fs)
        self._fs = fs
        fragments: list[Fragment] = []
        schema = None
        for path in files:
            file_schema, rows = self._inspect(fs, path)
            file_schema = self._project(file_schema, path)
            if schema is None:
                schema, first = file_schema, path
            elif not file_schema.equals(schema):
                raise DatasetError(
                    f"schema differs from the first file {first}: "
                    + _schema_diff(schema, file_schema),
                    path=path,
                )
            fragments += [Fragment(path, i, n) for i, n in enumerate(rows)]
        self._fragments, self._schema = fragments, schema

    def _project(self, schema: pa.Schema, path: str) -> pa.Schema:
        from trivium.data.arrow_dataset import select_columns

        return select_columns(schema, self.columns, path)

    def _limit(self) -> int | None:
        """The decompression-bomb limit in force (``...`` reads the process-wide one)."""
        return resolve_max_uncompressed_bytes(getattr(self, "max_uncompressed_bytes", ...))

    def _inspect(self, fs: pafs.FileSystem, path: str) -> tuple[pa.Schema, list[int]]:
        """The file's schema and the row count of each of its fragments."""
        raise NotImplementedError

    def _read(self, fragment: Fragment) -> pa.Table:
        """The fragment's rows (``columns`` and ``filter`` applied)."""
        raise NotImplementedError

    def read_fragment(self, fragment: Fragment) -> pa.Table:
        """Read one fragment; errors name the file.

        Example:
            >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
            >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
            >>> pq.write_table(pa.table({"x": [1, 2]}), path)
            >>> src = ParquetSource(path)
            >>> src.read_fragment(src.fragments[0]).num_rows
            2
        """
        self._filesystem()
        with self._read_errors(fragment):
            return self._read(fragment)

    @contextmanager
    def _read_errors(self, fragment: Fragment) -> Iterator[None]:
        """Errors reading ``fragment`` as ``DecodeError``s naming its file and index."""
        try:
            yield
        except (pa.ArrowException, OSError, ValueError) as e:
            if isinstance(e, TriviumError):
                raise
            where = f"{self.format_name} {_fragment_name(self)} {fragment.index}"
            raise DecodeError(f"cannot read {where}: {e}", path=fragment.path) from e

    # ---- iteration
    def shard(self, num_shards: int, shard_index: int) -> ArrowSource:
        """A copy reading only fragments ``shard_index, shard_index + num_shards, ...``.

        Example:
            >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
            >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
            >>> pq.write_table(pa.table({"x": list(range(6))}), path, row_group_size=2)
            >>> [b["x"].to_pylist() for b in ParquetSource(path).shard(2, 1)]
            [[2, 3]]
        """
        if not 0 <= shard_index < num_shards:
            raise ValueError(f"shard_index must be in [0, {num_shards}), got {shard_index}")
        out = copy.copy(self)
        out._cache = OrderedDict()
        out.__dict__.pop("_open_file", None)
        out.__dict__.pop("_open_handle", None)
        out._shard = (num_shards, shard_index)
        out.read_cache = None
        return out

    @property
    def sharded(self) -> bool:
        """Whether this source reads only a shard of its fragments (made by :meth:`shard`).

        Example:
            >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
            >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
            >>> pq.write_table(pa.table({"x": [1, 2]}), path)
            >>> ParquetSource(path).sharded, ParquetSource(path).shard(2, 0).sharded
            (False, True)
        """
        return self._shard is not None

    def _my_fragments(self) -> list[Fragment]:
        shard = self._shard
        info = get_worker_info()
        if shard is None and info is not None:  # plain torch DataLoader: split by worker
            shard = (info.num_workers, info.id)
        return self.fragments if shard is None else self.fragments[shard[1] :: shard[0]]

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for fragment in self._my_fragments():
            table = self.read_fragment(fragment)
            yield from table.to_batches(max_chunksize=self.batch_size)

    # ---- random access by global row id (for the DataLoader)
    def fragment_rows(self) -> list[int]:
        """Rows of each fragment after ``filter`` (the filter is evaluated once, cached).

        Example:
            >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
            >>> import pyarrow.compute as pc
            >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
            >>> pq.write_table(pa.table({"x": list(range(6))}), path, row_group_size=4)
            >>> ParquetSource(path, filter=pc.field("x") > 2).fragment_rows()
            [1, 2]
        """
        if self.filter is None:
            return [f.num_rows for f in self.fragments]
        if self._filtered_rows is None:
            self._filtered_rows = [self._count(f) for f in self.fragments]
        return self._filtered_rows

    def _count(self, fragment: Fragment) -> int:
        return self.read_fragment(fragment).num_rows

    def row_origin(self, row_id: int) -> Origin:
        """The file of global row ``row_id`` (as :meth:`take` numbers rows) and where in it.

        Example:
            >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
            >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
            >>> pq.write_table(pa.table({"x": list(range(6))}), path, row_group_size=4)
            >>> ParquetSource(path).row_origin(5).detail
            'row group 1, row 1'
        """
        rows = self.fragment_rows()
        starts = np.concatenate([[0], np.cumsum(rows)])
        k = int(np.searchsorted(starts, row_id, side="right")) - 1
        fragment = self.fragments[min(max(k, 0), len(self.fragments) - 1)]
        where = f"{_fragment_name(self)} {fragment.index}"
        if self.filter is None:  # with a filter, rows are counted after it
            where += f", row {row_id - int(starts[k])}"
        return Origin(fragment.path, where)

    def _cached(self, index: int) -> pa.Table:
        table = self._cache.get(index)
        if table is None:
            if self.read_cache is not None:
                table = self.read_cache.load(self, index)
            else:
                table = self.read_fragment(self.fragments[index]).combine_chunks()
            self._cache[index] = table
            while len(self._cache) > self.cache_fragments:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(index)
        return table

    def _load(self, indices: list[int]) -> None:
        """Bring fragments ``indices`` into the per-process cache, all in one go.

        Through the shared read cache, the missing ones are read together
        (:meth:`SharedReadCache.load_many`), not one by one as the rows ask for them.
        """
        missing = [i for i in indices if i not in self._cache]
        if self.read_cache is None or len(missing) < 2:
            return
        for index in indices:
            if index in self._cache:
                self._cache.move_to_end(index)
        self._cache.update(self.read_cache.load_many(self, missing))
        while len(self._cache) > max(self.cache_fragments, len(indices)):
            self._cache.popitem(last=False)

    def release_fragments(self, done: np.ndarray) -> None:
        """Drop cached fragments for which ``done[index]`` is true (no batch needs them).

        Example:
            >>> import os, tempfile, numpy as np, pyarrow as pa, pyarrow.parquet as pq
            >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
            >>> pq.write_table(pa.table({"x": list(range(4))}), path, row_group_size=2)
            >>> src = ParquetSource(path); _ = src.take(np.array([0, 3]))
            >>> src.release_fragments(np.array([True, False])); list(src._cache)
            [1]
        """
        for index in [i for i in self._cache if done[i]]:
            del self._cache[index]

    def take(self, ids: np.ndarray) -> pa.RecordBatch:
        """The rows with global ids ``ids`` (in that order), as one RecordBatch.

        Example:
            >>> import os, tempfile, numpy as np, pyarrow as pa, pyarrow.parquet as pq
            >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
            >>> pq.write_table(pa.table({"x": list(range(6))}), path, row_group_size=2)
            >>> ParquetSource(path).take(np.array([5, 0, 3]))["x"].to_pylist()
            [5, 0, 3]
        """
        ids = np.asarray(ids, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(self.fragment_rows())])
        which = np.searchsorted(starts, ids, side="right") - 1
        if len(ids) and (ids.min() < 0 or ids.max() >= starts[-1]):
            raise IndexError(f"row ids out of range [0, {starts[-1]})")
        if not len(ids):
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        local = ids - starts[which]
        # Runs of consecutive rows of one fragment: each becomes a zero-copy slice.
        breaks = np.flatnonzero((np.diff(ids) != 1) | (np.diff(which) != 0)) + 1
        fragments = dict.fromkeys(which.tolist())
        self._load(list(fragments))
        if len(breaks) + 1 <= _SLICES_PER_TAKE * len(fragments):
            run_starts = np.concatenate([[0], breaks]).tolist()
            run_ends = [*breaks.tolist(), len(ids)]
            parts = [
                self._cached(int(which[a])).slice(int(local[a]), b - a)
                for a, b in zip(run_starts, run_ends, strict=True)
            ]
            return _to_batch(pa.concat_tables(parts), self)
        # Rows scattered over few fragments: one take per fragment, then back in order.
        parts, order = [], []
        for frag in fragments:
            mask = which == frag
            parts.append(take_arrow(self._cached(frag), local[mask]))
            order.append(np.flatnonzero(mask))
        table = pa.concat_tables(parts)
        if len(parts) > 1:
            positions = np.concatenate(order)
            table = take_arrow(table, np.argsort(positions, kind="stable"))
        return _to_batch(table, self)


# A run of rows is sliced (a few microseconds) while a fragment's rows are gathered
# with one ``take`` (tens of microseconds): slices win up to a few runs per fragment.
_SLICES_PER_TAKE = 4


def _to_batch(table: pa.Table, source: ArrowSource) -> pa.RecordBatch:
    batches = table.to_batches()
    if len(batches) == 1:
        return batches[0]
    if not batches:
        return pa.RecordBatch.from_pylist([], schema=source.schema)
    return table.combine_chunks().to_batches()[0]


def _fragment_name(source: ArrowSource) -> str:
    return "row group" if isinstance(source, ParquetSource) else "record batch"


def _schema_diff(a: pa.Schema, b: pa.Schema) -> str:
    diffs = []
    for field in a:
        if field.name not in b.names:
            diffs.append(f"column {field.name!r} missing")
        elif not b.field(field.name).type.equals(field.type):
            diffs.append(f"column {field.name!r} is {b.field(field.name).type}, not {field.type}")
    diffs += [f"extra column {n!r}" for n in b.names if n not in a.names]
    return "; ".join(diffs) or f"{b} != {a}"


class ParquetSource(ArrowSource):
    """Parquet files as RecordBatches; a fragment is one row group.

    ``filter`` is pushed down to the scan (row-group statistics skip what cannot
    match). Page checksums, where the writer stored them, are verified unless
    ``verify_checksums=False``. See :class:`ArrowSource` for the other arguments.

    A pass decodes the next row groups on the shared thread pool
    (:mod:`trivium.core.threads`) while the caller uses the ones before, up to one per
    pool thread and 256 MiB of decoded row groups ahead; the batches are those of
    ``pyarrow.parquet.ParquetFile.iter_batches`` (with ``batch_size``, a batch may span
    row groups of a file), in the same order. With one pool thread (a DataLoader worker
    process) or larger row groups, it streams through ``iter_batches`` itself.

    Example:
        >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
        >>> root = tempfile.mkdtemp()
        >>> pq.write_table(pa.table({"x": [1, 2], "y": [3, 4]}), os.path.join(root, "a.parquet"))
        >>> [b.to_pydict() for b in ParquetSource(root, columns=["y"])]
        [{'y': [3, 4]}]
    """

    suffixes = (".parquet", ".parq", ".pq")
    format_name = "Parquet"

    def __init__(
        self,
        paths: PathInput,
        columns: Sequence[str] | None = None,
        filter: pds.Expression | None = None,
        batch_size: int | None = None,
        *,
        filesystem: pafs.FileSystem | None = None,
        verify_checksums: bool = True,
        max_uncompressed_bytes: int | Any | None = ...,
    ) -> None:
        super().__init__(
            paths,
            columns,
            filter,
            batch_size,
            filesystem=filesystem,
            max_uncompressed_bytes=max_uncompressed_bytes,
        )
        self.verify_checksums = verify_checksums
        self._open_file: tuple[str, pq.ParquetFile] | None = None

    def _inspect(self, fs: pafs.FileSystem, path: str) -> tuple[pa.Schema, list[int]]:
        with _arrow_errors("not a readable Parquet file", path), fs.open_input_file(path) as handle:
            meta = pq.ParquetFile(handle).metadata
            schema = meta.schema.to_arrow_schema()
        check_parquet(meta, path, self._limit())  # the footer's sizes; the pages' when read
        return schema, [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]

    def _check_pages(self, path: str) -> None:
        """The page headers' sizes of a local file, once per file and process, before a read.

        Not for remote files: a request per page would cost more than the read (their
        footer's sizes are checked when listed). A file that passed (the same path,
        size, modification time and inode, under the same limit) is not checked again
        by another source in this process.
        """
        if not isinstance(self._filesystem(), pafs.LocalFileSystem):
            return
        key = _file_key(path, self._limit())
        if key is not None and key in _PAGES_PASSED:
            return
        reader = self._file(path)
        with _arrow_errors("cannot read the Parquet page headers", path):
            check_parquet(reader.metadata, path, self._limit(), self._open_handle)
        if key is not None:
            if len(_PAGES_PASSED) >= _PAGES_PASSED_MAX:  # a bound on memory, not on checks
                _PAGES_PASSED.clear()
            _PAGES_PASSED.add(key)

    def _fragment(self, fragment: Fragment) -> pds.Fragment:
        options = pds.ParquetFragmentScanOptions(page_checksum_verification=self.verify_checksums)
        fmt = pds.ParquetFileFormat(default_fragment_scan_options=options)
        return fmt.make_fragment(fragment.path, self._filesystem(), row_groups=[fragment.index])

    def _read(self, fragment: Fragment) -> pa.Table:
        self._check_pages(fragment.path)
        return self._read_group(self._file(fragment.path), fragment)

    def _read_group(self, reader: pq.ParquetFile, fragment: Fragment) -> pa.Table:
        """The fragment's rows through ``reader``, a reader of its file."""
        if self.filter is not None:  # the dataset scanner pushes it down to row groups/pages
            return self._fragment(fragment).to_table(columns=self.columns, filter=self.filter)
        return reader.read_row_group(fragment.index, columns=self.columns, use_threads=False)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        mine = self._my_fragments()
        if self._reads_ahead(mine):
            yield from self._iter_ahead(mine)
        elif self.filter is not None or self.batch_size is None:
            yield from super().__iter__()
        else:
            yield from self._iter_streaming(mine)

    def _reads_ahead(self, mine: list[Fragment]) -> bool:
        """Whether a pass reads row groups ahead on the thread pool (:meth:`_iter_ahead`).

        Not with one thread (as in a DataLoader worker process) or one row group, nor
        where two of the first file's row groups would exceed the read-ahead budget.
        """
        if get_num_threads() < 2 or len(mine) < 2:
            return False
        path = mine[0].path
        try:
            self._check_pages(path)
            meta = self._file(path).metadata
        except (pa.ArrowException, OSError, ValueError):
            return False  # the one-at-a-time pass reports it as it always has
        groups = [f.index for f in mine if f.path == path]
        largest = max(row_group_bytes(meta, g, self.columns) for g in groups)
        return 2 * largest <= READ_AHEAD_BYTES

    def _iter_ahead(self, mine: list[Fragment]) -> Iterator[pa.RecordBatch]:
        """The pass with the next row groups (of this file or the next) read on the pool.

        The batches are those of the one-at-a-time pass: row groups of a file are cut as
        ``iter_batches`` cuts them (:func:`rebatch`), or each into its own batches with a
        filter or without ``batch_size``; an error comes where it would come there.
        """

        threads = get_num_threads()

        def jobs() -> Iterator[_Job]:
            for path, run in itertools.groupby(mine, key=lambda f: f.path):
                yield from self._jobs(path, list(run), threads)

        def read(job: _Job) -> pa.Table:
            with self._read_errors(job[0]):
                return job[1]()

        self._filesystem()
        tables = read_ahead(read, jobs(), lambda job: job[2], READ_AHEAD_BYTES, threads)
        for _, run in itertools.groupby(mine, key=lambda f: f.path):
            # exactly this file's tables: its last batch is out before the next file's read
            # is asked for (and raises, if it fails)
            groups = itertools.islice(tables, len(list(run)))
            if self.filter is None and self.batch_size is not None:
                yield from rebatch(groups, self.batch_size)
            else:
                for table in groups:
                    yield from table.to_batches(max_chunksize=self.batch_size)

    def _jobs(self, path: str, run: list[Fragment], threads: int) -> Iterator[_Job]:
        """``(fragment, read, bytes)`` for each of a file's row groups, ``read()`` its table.

        Where every row group of ``run`` but the last has one length, row group ``k`` is
        the next batch of stream ``k % threads``, a batch reader over every
        ``threads``-th row group (a reader streaming several row groups reuses its
        buffers, where one reader per row group grows them again: ~7% of a pass);
        :func:`read_ahead` never runs two reads of one stream at once, as the row groups
        in flight are fewer than ``threads`` apart. Otherwise, a reader per row group.
        """
        try:
            with _arrow_errors("not a readable Parquet file", path):
                self._check_pages(path)
                meta = self._file(path).metadata  # opens self._open_handle
        except TriviumError as e:
            for fragment in run:  # raised when its first row group is due, not before
                yield fragment, functools.partial(_raise, e), 0
            return
        # A reader per stream or read: one reader's pre-buffered ranges are not for sharing.
        open_reader = functools.partial(
            pq.ParquetFile,
            self._open_handle,
            metadata=meta,
            page_checksum_verification=self.verify_checksums,
        )
        rows = [f.num_rows for f in run]
        streams = []
        if (
            self.filter is None
            and self.batch_size is not None
            and all(r == rows[0] for r in rows[:-1])
            and 0 < rows[-1] <= rows[0]
        ):
            streams = [
                open_reader().iter_batches(
                    batch_size=rows[0],
                    row_groups=[f.index for f in run[t::threads]],
                    columns=self.columns,
                )
                for t in range(min(threads, len(run)))
            ]
        for k, fragment in enumerate(run):
            if streams:
                read = functools.partial(_next_group, streams[k % len(streams)], fragment)
            else:
                read = functools.partial(self._read_new, open_reader, fragment)
            yield fragment, read, row_group_bytes(meta, fragment.index, self.columns)

    def _read_new(self, open_reader: Callable[[], pq.ParquetFile], fragment: Fragment) -> pa.Table:
        return self._read_group(open_reader(), fragment)

    def _iter_streaming(self, mine: list[Fragment]) -> Iterator[pa.RecordBatch]:
        """Each file's run of row groups through pyarrow's own batch reader, one at a time."""
        for path, run in itertools.groupby(mine, key=lambda f: f.path):
            groups = [f.index for f in run]
            self._check_pages(path)
            with _arrow_errors(f"cannot read Parquet row groups {groups}", path):
                yield from self._file(path).iter_batches(
                    batch_size=self.batch_size, row_groups=groups, columns=self.columns
                )

    def _file(self, path: str) -> pq.ParquetFile:
        """An open reader per file (its footer parsed once), kept for the next row group."""
        cached = getattr(self, "_open_file", None)
        if cached is None or cached[0] != path:
            handle = _open_input(self._filesystem(), path)
            reader = pq.ParquetFile(handle, page_checksum_verification=self.verify_checksums)
            self._open_file = cached = (path, reader)
            self._open_handle = handle
        return cached[1]

    def _count(self, fragment: Fragment) -> int:
        self._check_pages(fragment.path)
        with _arrow_errors(f"cannot read Parquet row group {fragment.index}", fragment.path):
            return self._fragment(fragment).count_rows(filter=self.filter)


# Local Parquet files whose page headers passed the size check: _file_key of each.
_PAGES_PASSED: set[tuple[str, int, int, int, int | None]] = set()
_PAGES_PASSED_MAX = 1 << 16


def _file_key(path: str, limit: int | None) -> tuple[str, int, int, int, int | None] | None:
    """What identifies a local file's contents for the page check (``None``: cannot stat)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return path, info.st_size, info.st_mtime_ns, info.st_ino, limit


# A row group to read ahead: the fragment, the read giving its table, its decoded bytes.
_Job = tuple[Fragment, Callable[[], pa.Table], int]


def _raise(error: BaseException) -> NoReturn:
    raise error


def _next_group(stream: Iterator[pa.RecordBatch], fragment: Fragment) -> pa.Table:
    """The next batch of a stream whose batches are whole row groups: ``fragment``'s rows."""
    batch = next(stream, None)
    if batch is None or batch.num_rows != fragment.num_rows:
        got = 0 if batch is None else batch.num_rows
        raise DecodeError(
            f"Parquet row group {fragment.index} gave {got} rows, its footer declares "
            f"{fragment.num_rows}",
            path=fragment.path,
        )
    return pa.Table.from_batches([batch])


def _open_input(fs: pafs.FileSystem, path: str) -> pa.NativeFile:
    """A random-access file: memory-mapped when local (reading it copies nothing)."""
    if isinstance(fs, pafs.LocalFileSystem):
        return pa.memory_map(path)
    return fs.open_input_file(path)


def _open_ipc(fs: pafs.FileSystem, path: str) -> Any:
    """An IPC file reader (random access) or, failing that, a stream reader."""
    source = _open_input(fs, path)
    try:
        return pa.ipc.open_file(source)
    except pa.ArrowInvalid:
        source.seek(0)
        return pa.ipc.open_stream(source)


class ArrowIPCSource(ArrowSource):
    """Arrow IPC files (``.arrow``, memory-mapped when local) and streams (``.arrows``).

    A fragment is one record batch of an IPC file, or a whole IPC stream. See
    :class:`ArrowSource` for the arguments.

    Example:
        >>> import os, tempfile, pyarrow as pa
        >>> path = os.path.join(tempfile.mkdtemp(), "t.arrow")
        >>> with pa.ipc.new_file(path, pa.schema([("x", pa.int8())])) as w:
        ...     w.write_table(pa.table({"x": pa.array([1, 2], pa.int8())}))
        >>> [b.to_pydict() for b in ArrowIPCSource(path)]
        [{'x': [1, 2]}]
    """

    suffixes = (".arrow", ".arrows", ".feather", ".ipc")
    format_name = "Arrow IPC"

    def _inspect(self, fs: pafs.FileSystem, path: str) -> tuple[pa.Schema, list[int]]:
        with _arrow_errors("not a readable Arrow IPC file or stream", path):
            check_ipc(_open_input(fs, path), path, self._limit())  # before any decompression
            reader = _open_ipc(fs, path)
            if isinstance(reader, pa.ipc.RecordBatchFileReader):
                rows = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
            else:
                rows = [reader.read_all().num_rows]
            return reader.schema, rows

    def _read(self, fragment: Fragment) -> pa.Table:
        reader = _open_ipc(self._filesystem(), fragment.path)
        if isinstance(reader, pa.ipc.RecordBatchFileReader):
            table = pa.Table.from_batches([reader.get_batch(fragment.index)])
        else:
            table = reader.read_all()
        table.validate(full=True)  # fuzzed files may decode into inconsistent buffers
        return _select_filter(table, self.columns, self.filter)


def _select_filter(
    table: pa.Table, columns: list[str] | None, expression: pds.Expression | None
) -> pa.Table:
    if expression is not None:
        table = table.filter(expression)
    return table if columns is None else table.select(columns)


class CSVSource(ArrowSource):
    """CSV files as RecordBatches (types inferred by pyarrow); a fragment is one file.

    See :class:`ArrowSource` for the arguments; ``read_options``, ``parse_options`` and
    ``convert_options`` go to ``pyarrow.csv.read_csv``.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "t.csv")
        >>> with open(path, "w") as f:
        ...     _ = f.write("a,b\\n1,x\\n2,y\\n")
        >>> [b.to_pydict() for b in CSVSource(path)]
        [{'a': [1, 2], 'b': ['x', 'y']}]
    """

    suffixes = (".csv", ".tsv", ".csv.gz")
    format_name = "CSV"

    def __init__(
        self,
        paths: PathInput,
        columns: Sequence[str] | None = None,
        filter: pds.Expression | None = None,
        batch_size: int | None = None,
        *,
        filesystem: pafs.FileSystem | None = None,
        read_options: pacsv.ReadOptions | None = None,
        parse_options: pacsv.ParseOptions | None = None,
        convert_options: pacsv.ConvertOptions | None = None,
    ) -> None:
        super().__init__(paths, columns, filter, batch_size, filesystem=filesystem)
        self.options = {
            "read_options": read_options,
            "parse_options": parse_options,
            "convert_options": convert_options,
        }

    def _read_file(self, fs: pafs.FileSystem, path: str) -> pa.Table:
        compression = "gzip" if path.endswith(".gz") else None
        with (
            _arrow_errors("not a readable CSV file", path),
            fs.open_input_stream(path, compression=compression) as stream,
        ):
            return pacsv.read_csv(stream, **self.options)

    def _inspect(self, fs: pafs.FileSystem, path: str) -> tuple[pa.Schema, list[int]]:
        table = self._read_file(fs, path)
        return table.schema, [table.num_rows]

    def _read(self, fragment: Fragment) -> pa.Table:
        table = self._read_file(self._filesystem(), fragment.path)
        return _select_filter(table, self.columns, self.filter)


def fragments_for_window(rows: Sequence[int], window: int | None) -> int:
    """How many fragments a window of ``window`` rows may touch (for the read cache).

    Example:
        >>> fragments_for_window([10, 10, 10], 15)
        3
    """
    if not rows:
        return 1
    smallest = max(1, min(r for r in rows if r) if any(rows) else 1)
    total = sum(rows)
    span = total if window is None else min(window, total)
    return min(len(rows), math.ceil(span / smallest) + 1)
