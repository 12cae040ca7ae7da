"""The workers of :class:`trivium.data.DataLoader` run as threads of the main process.

``DataLoader(..., worker_type="thread")`` runs the same epoch plan as its worker
processes (the same batches, order, sharding, resume and per-sample seeds), on
``num_workers`` threads: each batch is assembled in place in the main process and
handed back as it is, with no pickling and no copy through shared memory, and the
workers start in microseconds. The batches come back in torch's order (one from each
worker in turn, passing over the exhausted ones).

Inside a worker thread, :func:`get_worker_info` says which worker it is (torch's
``torch.utils.data.get_worker_info()`` only knows worker processes): an
``IterableDataset`` that shards itself over the workers calls it in ``__iter__``.
Each thread iterates its own shallow copy of such a dataset (and of an Arrow source),
as each process iterates its own; a map-style dataset is shared by the threads, so
its ``__getitem__`` must be thread-safe (reading files and decoding are).

CPU: each worker thread runs torch's intra-op work on
:func:`intra_op_threads` threads (the process's CPUs divided among the workers;
torch's setting is per thread), and the decoders' shared pool
(:mod:`trivium.core.threads`, one thread per CPU) serves every worker thread
together, so ``num_workers`` threads do not multiply the threads the CPUs run.

Example:
    >>> get_worker_info() is None  # in the main thread, outside a worker
    True
"""

from __future__ import annotations

import copy
import os
import queue
import threading
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data._utils.worker import WorkerInfo

__all__ = ["WORKER_TYPES", "ThreadWorkers", "check_worker_type", "get_worker_info",
           "intra_op_threads"]  # fmt: skip

#: The values of ``DataLoader(worker_type=...)``.
WORKER_TYPES = ("process", "thread")

_local = threading.local()  # .info: the WorkerInfo of this worker thread
_POLL_S = 0.1  # how often a blocked worker thread checks whether it should stop


def get_worker_info() -> WorkerInfo | None:
    """The current DataLoader worker's ``id``, ``num_workers``, ``seed`` and ``dataset``.

    torch's ``get_worker_info()``, which also answers in the worker threads of
    ``DataLoader(worker_type="thread")`` (there ``worker_method`` is ``"thread"``
    and ``dataset`` is the thread's copy of an ``IterableDataset``). None outside a
    worker. An ``IterableDataset`` that shards itself calls this one, so that it
    shards under both kinds of workers.

    Example:
        >>> import torch
        >>> from trivium.data import DataLoader
        >>> class Numbers(torch.utils.data.IterableDataset):
        ...     def __iter__(self):
        ...         info = get_worker_info()
        ...         worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        ...         return iter(range(worker, 6, workers))
        >>> loader = DataLoader(Numbers(), batch_size=3, num_workers=2, worker_type="thread")
        >>> [b.tolist() for b in loader]
        [[0, 2, 4], [1, 3, 5]]
    """
    info = getattr(_local, "info", None)
    if info is None:
        return torch.utils.data.get_worker_info()
    _local.asked = True
    return info


def current_worker() -> WorkerInfo | None:
    """:func:`get_worker_info`, not counted as the dataset's asking (for the loader's own use)."""
    info = getattr(_local, "info", None)
    return info if info is not None else torch.utils.data.get_worker_info()


def warn_if_unsharded(dataset: Any) -> None:
    """Warn when ``dataset``, iterated in one of several worker threads, never asked which.

    torch's ``get_worker_info()`` is None in a thread: a dataset that shards itself with
    it would have every thread yield all of its items.
    """
    info = getattr(_local, "info", None)
    if info is None or info.num_workers < 2 or getattr(_local, "asked", True):
        return
    _local.asked = True  # once per thread and epoch
    warnings.warn(
        f"DataLoader(worker_type='thread'): {type(dataset).__name__} is an IterableDataset "
        "that did not call trivium.data.get_worker_info() in its worker thread, so each of "
        f"the {info.num_workers} threads yields all of its items (torch's get_worker_info() "
        "is None in a thread). Shard it by trivium.data.get_worker_info()",
        stacklevel=2,
    )


def in_worker_thread() -> bool:
    """Whether this code runs in a worker thread (not a process, not the main thread)."""
    return getattr(_local, "info", None) is not None


def check_worker_type(worker_type: object) -> str:
    """``worker_type`` if it is one of :data:`WORKER_TYPES`, else a ``ValueError`` naming it.

    Example:
        >>> check_worker_type("thread")
        'thread'
    """
    if worker_type not in WORKER_TYPES:
        raise ValueError(f"worker_type must be 'process' or 'thread', got {worker_type!r}")
    return worker_type  # type: ignore[return-value]


def intra_op_threads(num_workers: int) -> int:
    """torch's intra-op threads in each of ``num_workers`` worker threads: the CPUs shared out.

    Example:
        >>> intra_op_threads(10_000)
        1
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus // max(1, num_workers))


class ThreadWorkers:
    """``num_workers`` threads iterating their copies of ``stream``, read back in torch's order.

    Iterable as torch's ``DataLoader`` over the same stream is: each iteration starts
    the threads (on its first item), each thread setting its :func:`get_worker_info`,
    its torch threads and running ``worker_init_fn(id)``; each has up to
    ``prefetch_factor`` items made or in the making ahead of the consumer, as torch's
    worker processes have. ``timeout`` (seconds, 0: none) bounds the wait for an item,
    as in torch.

    Example:
        >>> class Stream(torch.utils.data.IterableDataset):
        ...     def __iter__(self):
        ...         info = get_worker_info()
        ...         return iter([(info.id, 0), (info.id, 1)])
        >>> list(ThreadWorkers(Stream(), num_workers=2))
        [(0, 0), (1, 0), (0, 1), (1, 1)]
    """

    def __init__(
        self,
        stream: Any,
        num_workers: int,
        prefetch_factor: int | None = None,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        seed: int = 0,
        dataset: Any = None,
        pin: Callable[[Any], Any] | None = None,
    ) -> None:
        self.stream, self.num_workers = stream, num_workers
        self.prefetch_factor = prefetch_factor or 2
        self.timeout, self.worker_init_fn = timeout, worker_init_fn
        self.seed, self.dataset, self.pin = seed, dataset, pin

    def __iter__(self) -> _ThreadsIter:
        return _ThreadsIter(self)


_END = object()  # a worker's stream is exhausted


class _Failed:
    """What a worker thread sends when iterating its stream raised."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _ThreadsIter:
    """One iteration of :class:`ThreadWorkers`: the threads, their queues, whose turn it is."""

    def __init__(self, workers: ThreadWorkers) -> None:
        self.workers = workers
        self.queues: list[queue.Queue[Any]] = []
        self.slots: list[threading.Semaphore] = []  # per worker: items it may still make
        self.threads: list[threading.Thread] = []
        self.active: list[int] = []
        self.turn = 0
        self.stop = threading.Event()
        self.first_done: list[threading.Event] = []  # set once each worker sent its first item
        self.waits = True  # whether shutting down joins the threads

    def __iter__(self) -> _ThreadsIter:
        return self

    def _start(self) -> None:
        n = self.workers.num_workers
        self.queues = [queue.Queue() for _ in range(n)]
        self.slots = [threading.Semaphore(self.workers.prefetch_factor) for _ in range(n)]
        self.active = list(range(n))
        self.first_done = [threading.Event() for _ in range(n)]
        for w in range(n):
            stream = _thread_copy(self.workers.stream)
            thread = threading.Thread(
                target=self._work, args=(w, stream), name=f"trivium-loader-{w}", daemon=True
            )
            self.threads.append(thread)
            thread.start()

    def _work(self, worker: int, stream: Any) -> None:
        spec = self.workers
        dataset = getattr(stream, "users_dataset", spec.dataset)
        _local.info = WorkerInfo(
            id=worker, num_workers=spec.num_workers, seed=spec.seed + worker,
            dataset=dataset, worker_method="thread",
        )  # fmt: skip
        _local.asked = False  # whether the dataset asked which worker it is in
        torch.set_num_threads(intra_op_threads(spec.num_workers))  # this thread's only
        try:
            if spec.worker_init_fn is not None:
                spec.worker_init_fn(worker)
            if not self._wait_turn_to_start(worker):
                return
            items = iter(stream)
            while self._room(worker):
                item = next(items, _END)
                self._put(worker, item)
                if item is _END:
                    return
        except BaseException as error:  # handed to the main thread, raised there
            self._put(worker, _Failed(error))
        finally:
            self.first_done[worker].set()  # never holds the next worker back
            _local.info = None

    def _wait_turn_to_start(self, worker: int) -> bool:
        """Wait until the previous worker has sent its first item; False once shutting down.

        Started together, the threads would share the cores over all their first items
        and each would finish late; staggered, the first batch (worker 0's) comes as soon
        as one worker alone makes it, and the others follow before the consumer needs them.
        """
        if worker == 0:
            return True
        previous = self.first_done[worker - 1]
        while not previous.wait(_POLL_S):
            if self.stop.is_set():
                return False
        return True

    def _room(self, worker: int) -> bool:
        """Wait until ``worker`` may make another item; False once shutting down."""
        while not self.stop.is_set():
            if self.slots[worker].acquire(timeout=_POLL_S):
                return True
        return False

    def _put(self, worker: int, item: Any) -> None:
        self.queues[worker].put(item)  # never full: the item took its slot to be made
        self.first_done[worker].set()

    def __next__(self) -> Any:
        if not self.threads:
            self._start()
        while self.active:
            self.turn %= len(self.active)
            worker = self.active[self.turn]
            item = self._get(worker)
            if item is _END:
                self.active.remove(worker)
                continue  # the next active worker now stands at this turn
            if isinstance(item, _Failed):
                self._shutdown_workers()
                raise item.error
            self.turn += 1
            return item if self.workers.pin is None else self.workers.pin(item)
        self._shutdown_workers()
        raise StopIteration

    def _get(self, worker: int) -> Any:
        timeout = self.workers.timeout
        try:
            item = self.queues[worker].get(timeout=timeout or None)
        except queue.Empty:
            self._shutdown_workers(wait=False)  # the late thread may never return
            raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
        self.slots[worker].release()
        return item

    def _shutdown_workers(self, wait: bool = True) -> None:
        """Stop the threads (each ends at its next item) and, with ``wait``, join them."""
        self.stop.set()
        self.waits = self.waits and wait  # once left behind, never waited for
        current = threading.current_thread()
        for thread in self.threads if self.waits else ():
            if thread is not current:
                thread.join()
        for q in self.queues:  # what they made and no one will take
            while not q.empty():
                q.get_nowait()

    def __del__(self) -> None:
        self.stop.set()


def _thread_copy(stream: Any) -> Any:
    """A worker thread's own copy of ``stream`` (its own copy of an iterated source)."""
    thread_copy = getattr(stream, "for_thread", None)
    return thread_copy() if callable(thread_copy) else copy.copy(stream)
