"""A process-wide thread pool for native work that releases the GIL (decoding, encoding).

The pool is created on first use with :func:`get_num_threads` threads (the CPUs this
process may run on, one in a DataLoader worker, or ``TRIVIUM_NUM_THREADS``), resized by
:func:`set_num_threads`, and dropped in the child after ``os.fork`` (a forked DataLoader
worker gets its own).

Example:
    >>> from trivium.core.threads import parallel_map
    >>> parallel_map(len, ["a", "bb", "ccc"])
    [1, 2, 3]
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from torch.utils.data import get_worker_info

from trivium.core.forking import abandon

__all__ = ["get_num_threads", "get_thread_pool", "parallel_map", "set_num_threads"]

T = TypeVar("T")
R = TypeVar("R")

_ENV_VAR = "TRIVIUM_NUM_THREADS"

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_num_threads: int | None = None  # None: the default from the environment
_local = threading.local()  # .in_pool is True on the pool's own threads


def _check_num_threads(n: Any, what: str = "num_threads") -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{what} must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{what} must be >= 1, got {n}")
    return n


def _default_num_threads() -> int:
    env = os.environ.get(_ENV_VAR, "").strip()
    if env:
        try:
            return _check_num_threads(int(env), _ENV_VAR)
        except (TypeError, ValueError):
            raise ValueError(f"{_ENV_VAR} must be an integer >= 1, got {env!r}") from None
    if get_worker_info() is not None:  # the workers are the parallelism, as for torch's threads
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def get_num_threads() -> int:
    """Number of threads the shared pool uses.

    Set by :func:`set_num_threads`; otherwise ``TRIVIUM_NUM_THREADS``, else 1 inside a
    DataLoader worker (as torch sets its own threads there), else the number of CPUs
    this process may run on (``os.sched_getaffinity``, which respects cgroups/taskset).

    Example:
        >>> get_num_threads() >= 1
        True
    """
    n = _num_threads
    return n if n is not None else _default_num_threads()


def set_num_threads(n: int) -> None:
    """Resize the shared pool to ``n`` threads.

    Work already submitted to the old pool still runs to the end; new work goes to a
    new pool of ``n`` threads, created on first use.

    Example:
        >>> set_num_threads(2)
        >>> get_num_threads()
        2
    """
    global _pool, _num_threads
    n = _check_num_threads(n, "n")
    with _lock:
        old, _pool, _num_threads = _pool, None, n
    if old is not None:
        old.shutdown(wait=False)  # queued and running work still completes


def _mark_pool_thread() -> None:
    _local.in_pool = True


def _get_pool_locked() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(
            max_workers=get_num_threads(),
            thread_name_prefix="trivium",
            initializer=_mark_pool_thread,
        )
    return _pool


def get_thread_pool() -> ThreadPoolExecutor:
    """The shared ``ThreadPoolExecutor`` (created on first call).

    Example:
        >>> get_thread_pool().submit(sum, [1, 2]).result()
        3
    """
    with _lock:
        return _get_pool_locked()


def _reset_after_fork() -> None:
    # The parent's worker threads do not exist in the child: forget its pool (and a
    # lock another thread may have held at fork time) instead of waiting on them, and
    # never shut it down here.
    global _lock, _pool
    abandon(_pool)
    _lock = threading.Lock()
    _pool = None
    _local.in_pool = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


class _Job:
    """Shared state of one ``parallel_map`` call: runners take the next index until done."""

    def __init__(self, fn: Callable[[Any], Any], items: list[Any]) -> None:
        self.fn = fn
        self.items = items
        self.results: list[Any] = [None] * len(items)
        self.error: BaseException | None = None
        self._next = 0
        self._lock = threading.Lock()

    def _take(self) -> int | None:
        with self._lock:
            if self.error is not None or self._next >= len(self.items):
                return None
            index, self._next = self._next, self._next + 1
            return index

    def run(self) -> None:
        while (index := self._take()) is not None:
            try:
                self.results[index] = self.fn(self.items[index])
            except BaseException as e:
                with self._lock:
                    if self.error is None:
                        self.error = e
                return


def _submit(job: _Job, runners: int) -> tuple[list[Future], ThreadPoolExecutor | None]:
    """Start ``runners`` copies of ``job.run``; returns their futures and a pool to shut down.

    Each runs in its own copy of the caller's context, so what the caller's context
    variables hold (the sinks of ``watch_decode_warnings``) holds for its items too.
    """
    with _lock:  # so that set_num_threads cannot shut the pool down between get and submit
        shared = _get_pool_locked()
        if runners <= shared._max_workers:
            return [_submit_in_context(shared, job) for _ in range(runners)], None
    # More threads were asked for than the shared pool has: use a pool for this call.
    extra = ThreadPoolExecutor(max_workers=runners, thread_name_prefix="trivium-map")
    return [_submit_in_context(extra, job) for _ in range(runners)], extra


def _submit_in_context(pool: ThreadPoolExecutor, job: _Job) -> Future:
    # A context can be entered by one thread at a time: one copy per runner.
    return pool.submit(contextvars.copy_context().run, job.run)


def parallel_map(
    fn: Callable[[T], R], items: Iterable[T], num_threads: int | None = None
) -> list[R]:
    """``[fn(x) for x in items]`` computed on up to ``num_threads`` threads, in order.

    ``num_threads`` defaults to :func:`get_num_threads`. Runs inline when there are
    fewer than two items, when ``num_threads == 1``, or when called from a pool thread
    (nesting would deadlock the pool). If ``fn`` raises, no new items are started and
    the first exception raised is re-raised as is. ``fn`` sees the caller's context
    variables (each thread runs in a copy of the caller's context).

    Example:
        >>> parallel_map(lambda x: x * x, range(5), num_threads=2)
        [0, 1, 4, 9, 16]
    """
    items = list(items)
    n = get_num_threads() if num_threads is None else _check_num_threads(num_threads)
    workers = min(n, len(items))
    if workers <= 1 or getattr(_local, "in_pool", False):
        return [fn(x) for x in items]
    job = _Job(fn, items)
    # The calling thread is one of the workers: it would only wait otherwise.
    futures, extra = _submit(job, workers - 1)
    try:
        job.run()
        for future in futures:
            future.result()
    finally:
        if extra is not None:
            extra.shutdown(wait=False)
    if job.error is not None:
        raise job.error
    return job.results
