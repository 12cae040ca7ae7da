"""A read cache shared by the processes of one loader: each fragment read once, held once.

Without it every DataLoader worker reads every fragment (row group) its batches
touch, which in a shuffled window is every fragment of the window: N workers read
the data N times and hold N copies of the window. With it:

- a fragment is read from storage by whichever process needs it first: a reader
  thread in the main process that runs ahead of the workers in the epoch's order
  (:class:`ReadAhead`), or a worker that gets there before it. The reader takes a
  lock file's ``flock``, reads the fragment and writes it as an Arrow IPC file
  into a directory in shared memory (``/dev/shm``); everyone else waits on the same
  lock and then maps the file. A ``flock`` is released by the kernel when its holder
  dies, so a killed reader never blocks the others: the next one reads it;
- workers memory-map the IPC files: the rows of a batch are zero-copy slices of
  pages that every process shares, so the window is held in memory once;
- the main process knows the epoch's plan, so it knows the last batch that needs
  each fragment: once that batch has arrived, the file is unlinked (the pages go
  when the last worker unmaps them, which a worker does after its last batch that
  uses the fragment). The reader thread reads ahead only the fragments first needed
  by the batches the workers are building: memory is one shuffle window plus the
  fragments of the next few batches, whatever the number of workers;
- the directory (``trivium-data-<pid>-<random>``) is emptied at the end of each
  epoch (unless the whole dataset is one shuffle window: the loader then keeps the
  fragments for the next epoch, ``ReadAhead(free=False)``, and empties it when it
  goes) and whenever the epoch stops on an error (a worker killed, an exception),
  and removed with the loader. A process that holds a directory keeps a shared
  ``flock`` on its ``owner.lock``; the last holder removes it, and any new cache
  removes directories no live process holds (a main process killed with ``SIGKILL``);
- ranks of one machine (``torchrun``: ``LOCAL_RANK`` / ``LOCAL_WORLD_SIZE``) share
  one directory, ``trivium-data-machine-<hash>``, named from the job's variables and
  the source: each rank's read-ahead and workers read into it under the same locks,
  so a fragment is read once per machine. Every rank knows every local rank's plan
  (the order depends on the seed and epoch only), so a fragment is unlinked once all
  of them are past its last batch, counting batch ``k`` of one rank as batch ``k`` of
  the others (DDP keeps ranks in step; a rank far behind reads again what was freed).

Set ``TRIVIUM_SHM_DIR`` to put the directories elsewhere (default ``/dev/shm`` when
writable, else the temp directory).

Example:
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from trivium.data import ParquetSource
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pq.write_table(pa.table({"x": list(range(6))}), path, row_group_size=2)
    >>> cache = SharedReadCache()
    >>> cache.load(ParquetSource(path), 1)["x"].to_pylist()
    [2, 3]
    >>> sorted(n for n in os.listdir(cache.path) if n.endswith(".arrow"))
    ['1.arrow']
    >>> cache.close(); os.path.exists(cache.path)
    False
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from trivium.data.sharding import EpochPlan


class ArrowSource(Protocol):
    """What the cache reads: the fragments of an Arrow source (``ParquetSource``, ...)."""

    @property
    def fragments(self) -> Sequence[Any]: ...

    def read_fragment(self, fragment: Any) -> pa.Table: ...


__all__ = ["ReadAhead", "SharedReadCache", "fragment_uses", "shm_root"]

SHM_ENV = "TRIVIUM_SHM_DIR"
_PREFIX = "trivium-data-"
_OWNER = "owner.lock"
_UNOWNED_GRACE_S = 60.0  # a directory without its owner lock yet: being created


def shm_root() -> str:
    """Where cache directories go: ``$TRIVIUM_SHM_DIR``, ``/dev/shm`` or the temp dir.

    Example:
        >>> os.path.isdir(shm_root())
        True
    """
    env = os.environ.get(SHM_ENV)
    if env:
        return env
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


def _owner_gone(path: str) -> bool:
    """Whether no live process holds the directory's owner lock."""
    lock = os.path.join(path, _OWNER)
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        try:
            return time.time() - os.stat(path).st_mtime > _UNOWNED_GRACE_S
        except FileNotFoundError:
            return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing drops a lock taken here
    return True


def sweep_stale(root: str | None = None) -> list[str]:
    """Remove the cache directories under ``root`` whose owning process is gone.

    Example:
        >>> isinstance(sweep_stale(), list)
        True
    """
    root = root or shm_root()
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(root, name)
        if name.startswith(_PREFIX) and os.path.isdir(path) and _owner_gone(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _map(path: str) -> pa.Table | None:
    """The IPC file at ``path`` as a table over its memory map, or None if absent."""
    try:
        source = pa.memory_map(path)
    except FileNotFoundError:
        return None
    return pa.ipc.open_file(source).read_all()


def _write(table: pa.Table, path: str) -> None:
    """Write ``table`` to ``path`` as one IPC record batch, atomically (temp + rename)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max(table.num_rows, 1))
    os.rename(tmp, path)


# Held by a reader thread while it reads: a fork waits for the read to finish, so a
# child never inherits pyarrow's allocator or a file in the middle of a read.
_fork_lock = threading.Lock()


def _new_fork_lock() -> None:
    global _fork_lock
    _fork_lock = threading.Lock()


def _acquire_fork_lock() -> None:
    _fork_lock.acquire()


def _release_fork_lock() -> None:
    _fork_lock.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_acquire_fork_lock,
        after_in_parent=_release_fork_lock,
        after_in_child=_new_fork_lock,
    )


# The owner-lock descriptors of this process's caches (each a list: emptied once let go).
_holds: list[list[int]] = []


def _drop_inherited_holds() -> None:
    """In a forked child: close the owner locks' descriptors it inherited.

    A ``flock`` belongs to the open file, which a fork shares: a worker process keeping
    its copy would hold the directory until it exits, after the loader that made the
    cache let go, and no one would be left to remove it. Closing a copy (never
    ``LOCK_UN``) leaves the parent's lock as it is.
    """
    for owner in _holds:
        while owner:
            os.close(owner.pop())
    _holds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_inherited_holds)


def _hold(path: str) -> list[int]:
    """Take a shared lock on the directory's owner lock: it is in use while held.

    Returns the descriptor in a list that :func:`_let_go` empties.
    """
    fd = os.open(os.path.join(path, _OWNER), os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    owner = [fd]
    _holds.append(owner)
    return owner


def _let_go(path: str, owner: list[int]) -> None:
    """Drop this process's hold on ``path``; remove the directory if no one holds it."""
    _holds[:] = [held for held in _holds if held is not owner]
    while owner:
        os.close(owner.pop())
    try:
        fd = os.open(os.path.join(path, _OWNER), os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        shutil.rmtree(path, ignore_errors=True)
    except BlockingIOError:  # another loader still holds it
        pass
    finally:
        os.close(fd)


class SharedReadCache:
    """Fragments of an Arrow source as IPC files in shared memory (see the module docstring).

    Picklable (it travels as its path). The process that made it holds the directory
    (a shared ``flock`` on ``owner.lock``) until ``close``, garbage collection or
    exit, and the last holder removes it. With ``name``, the directory is
    ``trivium-data-<name>``, which every loader given that name joins: the ranks of
    one machine share one cache that way (see :class:`trivium.data.DataLoader`).

    Example:
        >>> cache = SharedReadCache()
        >>> os.path.basename(cache.path).startswith("trivium-data-")
        True
        >>> cache.close()
    """

    def __init__(self, root: str | None = None, name: str | None = None) -> None:
        root = root or shm_root()
        sweep_stale(root)
        #: Whether the directory is shared by several loaders (``name`` given).
        self.shared = name is not None
        if name is None:
            self.path = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=root)
        else:
            self.path = os.path.join(root, f"{_PREFIX}{name}")
            os.makedirs(self.path, mode=0o700, exist_ok=True)
        owner = _hold(self.path)
        self._finalizer = weakref.finalize(self, _let_go, self.path, owner)

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "shared": self.shared}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path, self.shared = state["path"], state["shared"]
        self._finalizer = None

    def _file(self, index: int) -> str:
        return os.path.join(self.path, f"{index}.arrow")

    def load(self, source: ArrowSource, index: int) -> pa.Table:
        """Fragment ``index`` of ``source``: mapped if cached, else read once and cached."""
        path = self._file(index)
        table = _map(path)
        if table is not None:
            return table
        return self.fill(source, index, want=True)

    def load_many(self, source: ArrowSource, indices: Sequence[int]) -> dict[int, pa.Table]:
        """Fragments ``indices`` of ``source``, each read at most once by anyone.

        Mapped where cached; the missing ones are read from the last down, so that a
        reader going up through them (the main process's :class:`ReadAhead`) and this
        process read different fragments at the same time instead of waiting on each
        other's locks. A fragment being read by someone else is taken last.

        Example:
            >>> import tempfile, pyarrow as pa, pyarrow.parquet as pq
            >>> from trivium.data import ParquetSource
            >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
            >>> pq.write_table(pa.table({"x": list(range(6))}), path, row_group_size=2)
            >>> cache = SharedReadCache()
            >>> tables = cache.load_many(ParquetSource(path), [2, 0])
            >>> [tables[i]["x"].to_pylist() for i in (2, 0)]
            [[4, 5], [0, 1]]
            >>> cache.close()
        """
        tables = {index: _map(self._file(index)) for index in indices}
        busy = []
        for index in sorted((i for i, t in tables.items() if t is None), reverse=True):
            table = self.fill(source, index, want=True, wait=False)
            if table is None:
                busy.append(index)
            tables[index] = table
        for index in busy:
            tables[index] = self.load(source, index)
        return tables

    def fill(
        self, source: ArrowSource, index: int, want: bool = False, wait: bool = True
    ) -> pa.Table | None:
        """Read fragment ``index`` into the cache unless someone has; return it if ``want``.

        ``wait=False``: return None at once when another process is reading it.
        """
        path = self._file(index)
        try:
            fd = os.open(f"{path}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        except FileNotFoundError:  # the directory is gone (the epoch stopped): read privately
            return source.read_fragment(source.fragments[index]).combine_chunks() if want else None
        try:
            try:  # released by the kernel if this process dies
                fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None
            table = _map(path)
            if table is None:
                table = source.read_fragment(source.fragments[index]).combine_chunks()
                try:
                    _write(table, path)
                except FileNotFoundError:  # cleared meanwhile: keep the private copy
                    return table if want else None
                table = _map(path) if want else None
            return table if want else None
        finally:
            os.close(fd)

    def discard(self, index: int) -> None:
        """Unlink fragment ``index``'s file (mapped pages stay until unmapped)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._file(index))

    def clear(self) -> None:
        """Unlink every fragment file (the directory and its owner lock stay)."""
        try:
            names = os.listdir(self.path)
        except FileNotFoundError:
            return
        for name in names:
            if name != _OWNER:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.path, name))

    def nbytes(self) -> int:
        """Bytes held in the cache's files now.

        Example:
            >>> cache = SharedReadCache(); cache.nbytes()
            0
            >>> cache.close()
        """
        total = 0
        try:
            with os.scandir(self.path) as entries:
                for entry in entries:
                    try:
                        total += entry.stat().st_size
                    except FileNotFoundError:
                        continue
        except FileNotFoundError:
            return 0
        return total

    def close(self) -> None:
        """Let go of the directory; it is removed once no loader holds it.

        Only the processes that made or joined it hold it, not the workers.
        """
        if self._finalizer is not None:
            self._finalizer()


def fragment_uses(
    order: np.ndarray, plan: EpochPlan, fragment_rows: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """The first and last local batch of ``plan`` that read each fragment.

    A fragment no batch reads has first ``num_batches`` and last ``-1``.

    Example:
        >>> from trivium.data.sharding import EpochPlan
        >>> plan = EpochPlan(num_samples=6, batch_size=2)
        >>> first, last = fragment_uses(np.array([4, 5, 0, 1, 2, 3]), plan, [2, 2, 2])
        >>> first.tolist(), last.tolist()
        ([1, 2, 0], [1, 2, 0])
    """
    rows = np.asarray(fragment_rows, dtype=np.int64)
    first = np.full(len(rows), plan.num_batches, dtype=np.int64)
    last = np.full(len(rows), -1, dtype=np.int64)
    n = len(order)
    if plan.num_batches == 0 or n == 0:
        return first, last
    local = np.arange(plan.local_samples, dtype=np.int64)
    positions = plan.start + local * plan.world_size + plan.rank
    starts = np.concatenate([[0], np.cumsum(rows)])
    fragment = np.searchsorted(starts, order[positions % n], side="right") - 1
    batch = local // plan.batch_size
    np.minimum.at(first, fragment, batch)
    np.maximum.at(last, fragment, batch)
    return first, last


class ReadAhead:
    """The main process's reader: fills the cache in the epoch's order, frees what is done.

    ``consumed(k)`` tells it that batches ``0 .. k-1`` have arrived: the fragments no
    later batch needs are unlinked (unless ``free=False``: the loader keeps them for
    the next epoch), and it reads the fragments first needed by the batches up to
    ``k + lookahead``.

    Example:
        >>> import tempfile, pyarrow as pa, pyarrow.parquet as pq
        >>> from trivium.data import ParquetSource
        >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
        >>> pq.write_table(pa.table({"x": list(range(4))}), path, row_group_size=2)
        >>> cache = SharedReadCache()
        >>> reader = ReadAhead(cache, ParquetSource(path), np.array([0, 1]), np.array([0, 1]), 0)
        >>> reader.start(); reader.consumed(2); reader.stop()  # both batches arrived
        >>> sorted(n for n in os.listdir(cache.path) if n.endswith(".arrow"))
        []
        >>> cache.close()
    """

    def __init__(
        self,
        cache: SharedReadCache,
        source: ArrowSource,
        first_use: np.ndarray,
        last_use: np.ndarray,
        lookahead: int,
        free: bool = True,
    ) -> None:
        self.cache, self.source = cache, source
        self.free = free
        self.first_use, self.last_use = first_use, last_use
        self.lookahead = lookahead
        used = np.flatnonzero(last_use >= 0)
        self._to_read = used[np.argsort(first_use[used], kind="stable")].tolist()
        self._to_free = used[np.argsort(last_use[used], kind="stable")].tolist()
        self._freed = 0
        self._done = 0  # batches arrived in the main process
        self._stopped = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="trivium-read-ahead", daemon=True)

    def start(self) -> None:
        """Start reading ahead in a background thread."""
        self._thread.start()

    def _next(self) -> int | None:
        """The next fragment to read, once the workers are close enough to need it."""
        with self._cond:
            while self._to_read:
                index = self._to_read[0]
                if self._stopped:
                    return None
                if self.last_use[index] < self._done:  # the workers read it already
                    self._to_read.pop(0)
                    continue
                if self.first_use[index] <= self._done + self.lookahead:
                    return self._to_read.pop(0)
                self._cond.wait()
            return None

    def _run(self) -> None:
        while (index := self._next()) is not None:
            try:
                with _fork_lock:  # a fragment a worker is reading is left to it
                    self.cache.fill(self.source, index, wait=False)
            except Exception:  # the worker that needs it reads it and raises, naming the file
                return
            with self._cond:
                if self.free and self.last_use[index] < self._done:  # freed while being read
                    self.cache.discard(index)

    def consumed(self, batches: int) -> None:
        """Batches ``0 .. batches - 1`` have arrived: free what only they needed."""
        with self._cond:
            self._done = batches
            while self.free and self._freed < len(self._to_free):
                index = self._to_free[self._freed]
                if self.last_use[index] >= batches:
                    break
                self.cache.discard(index)
                self._freed += 1
            self._cond.notify_all()

    def stop(self) -> None:
        """Stop reading and wait for the thread."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join()
