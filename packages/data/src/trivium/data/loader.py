"""``DataLoader``: torch's ``DataLoader``, sharded exactly over workers and ranks, resumable.

It takes torch's arguments in torch's order (``dataset, batch_size, shuffle, sampler,
batch_sampler, num_workers, collate_fn, ...``) and gives the same batches for the
same dataset, sampler and batch sampler, so a script changes only its import. What
it adds: the epoch's order follows from ``seed`` and the epoch alone, is split
exactly over workers and ranks, and ``state_dict()`` / ``load_state_dict()`` resume
mid-epoch on any number of workers, ranks or batch size, repeating and losing
nothing (:mod:`trivium.data.sharding` tells how). torchdata's ``StatefulDataLoader``
keeps a state per worker and cannot change their number; the state here is one
number.

What it reads (:mod:`trivium.data.epoch_stream` runs it in the workers):

- a map-style dataset (``ArrowDataset``, ``MapPipe``, a list, any ``Dataset`` with
  ``__len__``), in the epoch's order, a ``sampler``'s or a ``batch_sampler``'s;
- an ``IterPipe``: its graph runs as built, one batch of its source at a time. A
  source with random access (``MapPipe.to_iter_pipe()``, ``from_iterable`` of a
  list, an Arrow source) is read in the epoch's order (shuffled with
  ``shuffle=True``); another source is read in its own order, every worker keeping
  its own batches. A pipe that batches (``pipe.batch(n)``) with ``batch_size=None``
  yields its batches; an op that carries items from batch to batch (``shuffle``,
  ``header``...) is refused, its error naming the exact alternative;
- any other ``IterableDataset``, as torch runs one (each worker iterates it and
  splits with ``get_worker_info()``); resumable on the same number of workers when
  it has ``state_dict`` and ``load_state_dict``.

An Arrow source gives each batch as one ``RecordBatch`` (turn it into tensors with
``to_tensors``), or rows after ``to_rows()`` (collated with ``collate_fn``). A
``filter`` (or ``on_error="skip"``) makes a batch smaller, never changes the number
of batches; a batch left empty is not yielded.

Random transforms: each sample is read (``dataset[i]``) and mapped inside its own
:func:`trivium.core.seeding.sample_scope`, seeded from ``(seed, epoch, the sample's
position)``, so every sample, worker and epoch draws differently, the draws follow
from ``seed`` alone, do not depend on the number of workers, and a resumed epoch
repeats the augmentations of an uninterrupted one (with the same batch size and
number of ranks: the ops' streams are keyed by the batch's first position).

Example:
    >>> from trivium.data import DataLoader
    >>> loader = DataLoader(list(range(10)), batch_size=4, shuffle=True, seed=0)
    >>> batches = [b.tolist() for b in loader]
    >>> sorted(sum(batches, [])) == list(range(10)), len(batches)
    (True, 3)
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import functools
import hashlib
import multiprocessing
import os
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from trivium.core.batching import BatchSlots
from trivium.core.devices import CUDAPrefetcher
from trivium.core.seeding import derive_seed
from trivium.core.skipping import SkipReport, check_on_error, name_some
from trivium.data.epoch_stream import (
    END,
    Batching,
    EpochStream,
    Graph,
    IterableStream,
    WorkerError,
)
from trivium.data.pipes import SkippedSamplesWarning
from trivium.data.sharding import (
    BatchesPlan,
    EpochPlan,
    SamplerOrder,
    StreamPlan,
    epoch_order,
)
from trivium.data.workers import ThreadWorkers, check_worker_type

# The Arrow sources' machinery is imported where an Arrow source uses it: a loader over a
# map-style dataset never imports pyarrow (and pandas with it: ~80 MiB a process).
if TYPE_CHECKING:
    from trivium.data.shared_cache import ReadAhead, SharedReadCache

__all__ = ["DataLoader"]

_STATE_VERSION = 2
DEFAULT_ARROW_WINDOW = 16_384
_MAX_CACHED_FRAGMENTS = 256

Plan = EpochPlan | BatchesPlan | StreamPlan


class DataLoader:
    """Batches of a dataset, as torch's ``DataLoader``; sharded exactly, resumable mid-epoch.

    The arguments up to ``in_order`` are torch's, in its order, with its meaning
    (``shuffle=True`` and ``sampler`` or ``batch_sampler`` exclude each other, as
    there); the rest are Trivium's.

    Args:
        batch_size: samples per batch, or ``None`` to yield the items of a dataset
            whose items already are batches (``pipe.batch(n)``), unbatched, as torch
            does: each is passed through ``collate_fn`` (default torch's
            ``default_convert``, NumPy arrays to tensors). Sharding, ``drop_last``,
            equal counts per rank and resume then count the dataset's items.
        shuffle: a new order every epoch, which follows from ``seed`` and the epoch.
            An iteration reads :meth:`set_epoch`'s epoch; once an epoch has been read
            to its end, the next iteration reads the next epoch (as torch draws a new
            order per iteration).
        sampler: the indices of each epoch, as in torch (``len(sampler)`` of them).
            Resumable: the state holds the sampler's ``state_dict()`` where it has one,
            else the epoch's indices.
        batch_sampler: the batches of indices of each epoch, as in torch.
        generator: seeds the order (its first draw is the ``seed``) when ``seed`` is
            not given.
        in_order: accepted for torch's signature; batches always come in order
            (the exact order is what resume counts on).
        seed: fixes the order of every epoch, and what every random transform draws
            for each sample (see the module docstring). Default: from ``generator``,
            else 0.
        shuffle_window: for an Arrow source, rows are shuffled within windows of this
            many rows after the fragments are permuted (default 16384). Map-style
            data is fully permuted.
        rank: this process's rank (default: from ``torch.distributed`` when
            initialised, else 0; with a ``sampler`` or ``batch_sampler``, which split
            ranks themselves as ``DistributedSampler`` does, 0).
        world_size: the number of ranks (default: as ``rank``, the matching count).
        device: move each batch there, overlapping the copy with compute on CUDA
            (``trivium.core.CUDAPrefetcher``).
        shared_cache: with workers over an Arrow source, read each fragment once
            into shared memory, where every worker maps it (default); under
            ``torchrun`` with several ranks on a machine (``LOCAL_WORLD_SIZE``), one
            cache serves all of them, so each fragment is read once per machine.
            When the whole dataset is one shuffle window, the fragments stay cached
            from one epoch to the next (read once for all epochs).
            ``False``: each worker reads and caches the fragments its batches need
            (:mod:`trivium.data.shared_cache`).
        on_error: ``"raise"`` (default): a sample that cannot be read or collated
            raises, naming its file; ``"skip"``: it is dropped and named in
            :attr:`skip_report` (batches keep their count; a batch left empty is not
            yielded).
        worker_type: ``"process"`` (default): the ``num_workers`` workers are processes,
            as torch's; ``"thread"``: threads of this process, running the same plan
            (the same batches in the same order, sharding, resume and per-sample
            seeds), each batch assembled in place and handed back without pickling
            or copies (:mod:`trivium.data.workers`). Threads suit datasets whose work
            releases the GIL (Trivium's decoders and tensor transforms); pure-Python
            per-sample work holds it, and runs faster in processes.

    ``persistent_workers`` (torch's option) keeps the worker processes from one epoch
    to the next: the workers keep the dataset and the loader's settings as they were
    in the first epoch; ``set_epoch`` and ``load_state_dict`` still apply. Without it,
    once an epoch's last batch is out its workers are told to exit and joined later:
    the epoch does not wait for them.

    Worker threads (``worker_type="thread"``) start with each iteration
    (``persistent_workers`` changes nothing there: there is no process start to
    save); ``worker_init_fn(id)`` runs in each thread as it starts, and
    :func:`trivium.data.get_worker_info` (not torch's) says which worker a thread is.
    ``timeout`` bounds the wait for each batch, as with processes. Each thread gets
    ``cpus // num_workers`` torch intra-op threads; the decoders' pool is shared.

    In worker processes, batches made with :func:`trivium.core.empty_batch` (the fused
    decodes, :func:`trivium.core.stack_batch`) go out in shared-memory buffers that are
    reused once the main process holds no tensor of them
    (:class:`trivium.core.batching.BatchSlots`, ``prefetch_factor + 2`` per worker).

    Errors name the sample's file (and row of an Arrow file) whatever raised them:
    the dataset, an op, or ``collate_fn`` (a fused decode of a batch), and keep
    their type and ``path`` when they come from a worker process. With
    ``on_error="skip"``, a sample of a map-style dataset whose reading or collating
    raises a data error (a ``trivium.core`` error or ``OSError``; a bug in a
    transform still raises) is dropped. ``skipped`` counts the samples dropped by
    the loader and by ``on_error="skip"`` ops; :attr:`skip_report` names them, and
    the files recovered from damage (a ``DecodeWarning`` while loading them); a
    :class:`~trivium.data.pipes.SkippedSamplesWarning` names the first few at the
    end of each epoch.

    Example:
        >>> loader = DataLoader(list(range(6)), batch_size=2, seed=0)
        >>> it = iter(loader)
        >>> next(it).tolist()
        [0, 1]
        >>> state = loader.state_dict()
        >>> resumed = DataLoader(list(range(6)), batch_size=2, seed=0)
        >>> resumed.load_state_dict(state)
        >>> [b.tolist() for b in resumed]
        [[2, 3], [4, 5]]

        A pipe that batches, and a batch sampler:

        >>> from trivium.data import IterPipe
        >>> pipe = IterPipe.from_iterable(range(5)).map(lambda x: x * 10).batch(2)
        >>> list(DataLoader(pipe, batch_size=None))
        [[0, 10], [20, 30], [40]]
        >>> list(DataLoader(list("abcde"), batch_sampler=[[4], [0, 1]]))
        [['e'], ['a', 'b']]
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Iterable[int] | None = None,
        batch_sampler: Iterable[list[int]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: torch.Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
        seed: int | None = None,
        shuffle_window: int | None = None,
        rank: int | None = None,
        world_size: int | None = None,
        device: str | torch.device | None = None,
        shared_cache: bool = True,
        on_error: str = "raise",
        worker_type: str = "process",
    ) -> None:
        shuffle = bool(shuffle)
        self.worker_type = check_worker_type(worker_type)
        _check_torch_options(batch_size, shuffle, sampler, batch_sampler, drop_last)
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        check_on_error(on_error)
        self.dataset, self.on_error = dataset, on_error
        self._graph = Graph(dataset, on_error)
        _check_kind(self._graph, batch_size, shuffle, sampler, batch_sampler)
        self.batch_size = None if batch_sampler is not None else batch_size
        self._unbatched = batch_size is None  # the dataset's items are the batches
        self.shuffle, self.sampler, self.batch_sampler = shuffle, sampler, batch_sampler
        self.num_workers, self.collate_fn = num_workers, collate_fn
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.drop_last, self.timeout = drop_last, timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator, self.in_order = generator, in_order
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.seed = _first_seed(seed, generator)
        self.shuffle_window = shuffle_window
        self.device = device
        self.shared_cache = shared_cache
        own_ranks = sampler is None and batch_sampler is None
        dist_rank, dist_world = _distributed() if own_ranks else (0, 1)
        self.rank = dist_rank if rank is None else rank
        self.world_size = dist_world if world_size is None else world_size
        if batch_sampler is not None and self.world_size > 1:
            raise ValueError(
                "DataLoader(batch_sampler=...) over several ranks: the batch sampler gives "
                "each rank's batches itself (as over a DistributedSampler); leave rank and "
                "world_size unset"
            )
        self.epoch = 0
        self.skipped = 0
        self._report = SkipReport()
        self._epoch_report = SkipReport()
        self._announced: set[str] = set()  # the dataset's own skips already warned of
        self._advance = False  # an epoch ended: the next iteration takes the next one
        self._resume = 0  # positions already consumed when the next iteration starts
        self._plan: Plan | None = None
        self._yielded = 0
        self._num_samples: int | None = None
        self._order: SamplerOrder | None = None  # the sampler's order of this epoch
        self._sampler_state: Any = None  # the sampler's state before it gave that order
        self._iterable = _IterableState()
        self._workers: tuple[Any, torch.utils.data.DataLoader] | None = None
        self._retired: list[Iterator[Any]] = []  # workers told to exit, not yet joined
        self._batch_slots: BatchSlots | None = None
        self._read_cache: SharedReadCache | None = None
        self._reader: ReadAhead | None = None

    def __repr__(self) -> str:
        return (
            f"DataLoader(batch_size={self.batch_size}, shuffle={self.shuffle}, "
            f"num_workers={self.num_workers}, rank={self.rank}/{self.world_size}, "
            f"seed={self.seed}, epoch={self.epoch})"
        )

    @property
    def num_samples(self) -> int:
        """Positions in one epoch (all ranks together): the sampler's indices, else the samples."""
        if self._order is not None:
            return len(self._order.indices)
        if self.sampler is not None:
            return len(self.sampler)  # type: ignore[arg-type]
        return self._dataset_size()

    def _dataset_size(self) -> int:
        if self._num_samples is None:
            self._num_samples = self._graph.num_samples()
        return self._num_samples

    @property
    def _chunk(self) -> int:
        """Positions of the source per batch: ``batch_size`` items of the graph's output."""
        per_output = 1 if self._graph.columnar else self._graph.items_per_output or 1
        return (self.batch_size or 1) * per_output

    def _new_plan(self) -> Plan:
        if self._graph.kind == "stream":
            return StreamPlan(self._chunk, self.world_size, self.rank, self._resume, self.drop_last)
        if self.batch_sampler is not None:
            order = self._order or self._draw_order()
            return BatchesPlan(order.bounds, self._resume)  # type: ignore[arg-type]
        return EpochPlan(
            num_samples=self.num_samples,
            batch_size=self._chunk,
            world_size=self.world_size,
            rank=self.rank,
            start=self._resume,
            drop_last=self.drop_last,
        )

    def __len__(self) -> int:
        if self._graph.kind == "iterable":
            n = len(self._graph.source)
            size = self.batch_size or 1
            return n // size if self.drop_last else -(-n // size)
        if self._graph.kind == "stream":
            raise TypeError("len(DataLoader): its pipe's source has no length known in advance")
        if self.batch_sampler is not None:
            return len(self.batch_sampler)  # type: ignore[arg-type]
        return self._new_plan().num_batches  # type: ignore[union-attr]

    def set_epoch(self, epoch: int) -> None:
        """Use the order of epoch ``epoch``; a resume point of another epoch is dropped.

        Without it, an iteration after an epoch read to its end takes the next epoch.

        Example:
            >>> loader = DataLoader(list(range(4)), batch_size=4, shuffle=True, seed=3)
            >>> loader.set_epoch(0); a = next(iter(loader)).tolist()
            >>> loader.set_epoch(0); a == next(iter(loader)).tolist()
            True
        """
        if epoch != self.epoch:
            self._resume, self._order = 0, None
        self.epoch, self._advance = epoch, False

    def _draw_order(self) -> SamplerOrder:
        """The sampler's (or batch sampler's) indices for this epoch, kept until it ends."""
        sampler = self.batch_sampler if self.batch_sampler is not None else self.sampler
        self._sampler_state = _state_of(sampler)
        if self.batch_sampler is not None:
            self._order = SamplerOrder.of_batches(self.batch_sampler)
        else:
            self._order = SamplerOrder.of(self.sampler)  # type: ignore[arg-type]
        return self._order

    def _window(self) -> int | None:
        if not self._graph.columnar:
            return None
        return self.shuffle_window or DEFAULT_ARROW_WINDOW

    def _batching(self) -> Batching:
        return Batching(self.collate_fn, self._unbatched, self._graph.columnar)

    @property
    def _processes(self) -> bool:
        """Whether the workers are processes (there are some, and not threads)."""
        return self.num_workers > 0 and self.worker_type == "process"

    def _stream(self, plan: Plan | None) -> EpochStream | IterableStream:
        if self._processes and self._batch_slots is None:
            self._batch_slots = BatchSlots(self.num_workers, (self.prefetch_factor or 2) + 2)
        if self._graph.kind == "iterable":
            return IterableStream(
                self._graph, self._batching(), self.batch_size or 1, self.drop_last,
                self._batch_slots,
            )  # fmt: skip
        window = self._window()
        if self._graph.columnar:
            from trivium.data.arrow_sources import fragments_for_window

            rows = self._graph.fragment_rows()
            cached = fragments_for_window(rows, window if self.shuffle else self._chunk)
            self._graph.root.cache_fragments = min(cached + 1, _MAX_CACHED_FRAGMENTS)
            self._graph.root.read_cache = self._shared_cache()
        return EpochStream(self._graph, plan, window, self._batching(), self._batch_slots)

    def _shared_cache(self) -> SharedReadCache | None:
        """The cache the workers share, when they read an Arrow source.

        Under torchrun with several ranks on this machine, one cache for all of them.
        """
        if not (self.shared_cache and self._graph.columnar and self._processes):
            return None
        if self._read_cache is None:
            from trivium.data.shared_cache import SharedReadCache

            cache = self._read_cache = SharedReadCache(name=self._machine_cache_name())
            # The source holds it too (and may outlive the loader): let go with the loader.
            weakref.finalize(self, _drop_cache, cache)
        return self._read_cache

    def _machine_cache_name(self) -> str | None:
        """The name of the cache this machine's ranks share, or None for one per rank.

        The same for every local rank of the job reading the same source: a hash of
        torchrun's job variables and the source's fragments, columns and filter.
        """
        if len(_local_ranks(self.rank, self.world_size)) < 2:
            return None
        root = self._graph.root
        job = [os.environ.get(k, "") for k in ("TORCHELASTIC_RUN_ID", "MASTER_ADDR",
                                               "MASTER_PORT", "GROUP_RANK")]  # fmt: skip
        fragments = [(f.path, f.index) for f in root.fragments]
        what = repr((job, type(root).__name__, fragments, root.columns, str(root.filter)))
        return "machine-" + hashlib.sha256(what.encode()).hexdigest()[:20]

    def _fragment_uses(
        self, order: np.ndarray, plan: EpochPlan, rows: list[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """First and last batch using each fragment, over every rank sharing the cache.

        Batch ``k`` of one rank stands for batch ``k`` of all of them (ranks in step,
        as DDP keeps them): a fragment is freed once every local rank is past it.
        """
        from trivium.data.shared_cache import fragment_uses

        ranks = [self.rank]
        if self._read_cache is not None and self._read_cache.shared:
            ranks = _local_ranks(self.rank, self.world_size)
        uses = [fragment_uses(order, dataclasses.replace(plan, rank=r), rows) for r in ranks]
        first = np.minimum.reduce([u[0] for u in uses])
        last = np.maximum.reduce([u[1] for u in uses])
        return first, last

    def _start_reading(self, plan: Plan | None) -> None:
        """Read the epoch's fragments ahead of the workers, first batches first.

        Started before the workers are forked, so the first batches' fragments are
        being read while the workers start.
        """
        cache = self._read_cache
        if plan is None or cache is None or self._graph.root.read_cache is not cache:
            return
        rows = self._graph.fragment_rows()
        order = epoch_order(
            rows, seed=self.seed, epoch=self.epoch, shuffle=self.shuffle, window=self._window()
        )
        first, last = self._fragment_uses(order, plan, rows)
        in_flight = self.num_workers * (self.prefetch_factor or 2)
        source = copy.copy(self._graph.root)  # its own open files, not the workers'
        keep = self._keeps_cache()
        from trivium.data.shared_cache import ReadAhead

        self._reader = ReadAhead(cache, source, first, last, in_flight, free=not keep)
        self._reader.start()

    def _keeps_cache(self) -> bool:
        """Whether the read cache keeps its fragments from one epoch to the next.

        When the whole dataset is one shuffle window, every epoch reads every fragment
        again and the cache holds all of them during an epoch anyway: kept, they are
        read once for all epochs, in the same memory (one window). Not for a cache
        shared by several ranks, whose plans free fragments together.
        """
        cache = self._read_cache
        window = self._window()
        return (
            cache is not None
            and not cache.shared
            and self.shuffle
            and window is not None
            and self.num_samples <= window
        )

    def _stop_reading(self, failed: bool) -> None:
        """Stop the reader and free the cache (remove it after a failure, unless shared)."""
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
        cache = self._read_cache
        if cache is None:
            return
        if failed and not self.persistent_workers:
            cache.close()
            self._read_cache = None
        elif not cache.shared and not self._keeps_cache():  # shared: other ranks read on
            cache.clear()

    def _forks(self) -> bool:
        """Whether the workers start with ``fork`` (they inherit the main process's memory)."""
        context = self.multiprocessing_context
        if isinstance(context, str):
            return context == "fork"
        if context is None:
            return multiprocessing.get_start_method() == "fork"
        return context.get_start_method() == "fork"

    def _thread_workers(self, stream: Any) -> ThreadWorkers:
        pin = None
        if self.pin_memory and torch.cuda.is_available():
            device = self.pin_memory_device or None
            pin = functools.partial(torch.utils.data._utils.pin_memory.pin_memory, device=device)
        return ThreadWorkers(
            stream, self.num_workers, self.prefetch_factor, self.timeout, self.worker_init_fn,
            seed=derive_seed(self.seed, self.epoch), dataset=self.dataset, pin=pin,
        )  # fmt: skip

    def _torch_loader(self, stream: Any) -> torch.utils.data.DataLoader | ThreadWorkers:
        if self.num_workers > 0 and self.worker_type == "thread":
            return self._thread_workers(stream)
        extra: dict[str, Any] = {}
        if self.num_workers > 0:
            extra = {
                # Workers' torch, random and NumPy seeds then follow from (seed, epoch) too.
                "generator": torch.Generator().manual_seed(derive_seed(self.seed, self.epoch)),
                "prefetch_factor": self.prefetch_factor,
                "persistent_workers": self.persistent_workers,
                "multiprocessing_context": self.multiprocessing_context,
                "worker_init_fn": functools.partial(_as_users_worker, self.worker_init_fn),
                "timeout": self.timeout,
            }
        pin = self.pin_memory and torch.cuda.is_available()
        if pin and self.pin_memory_device:
            extra["pin_memory_device"] = self.pin_memory_device
        return torch.utils.data.DataLoader(
            stream, batch_size=None, num_workers=self.num_workers, pin_memory=pin, **extra
        )

    def _epoch_loader(self, plan: Plan | None) -> torch.utils.data.DataLoader:
        """Torch's loader for this epoch: a new one, or the one whose workers persist.

        ``plan`` is None for an IterableDataset, which its workers split themselves.
        """
        start = 0 if plan is None else plan.start
        if self._workers is None:
            stream = self._stream(plan)
            if stream.slots is not None:  # new worker processes: only held batches stay lent
                stream.slots.reset(fork=self._forks())
            if isinstance(stream, IterableStream):
                stream.resume = self._iterable.take_resume()
            stream.start_epoch(self.seed, self.epoch, self.shuffle, start, self._order)
            self._start_reading(plan)
            loader = self._torch_loader(stream)
            if self.persistent_workers:
                stream.share_memory()
                self._workers = stream, loader
        else:
            stream, loader = self._workers
            stream.start_epoch(self.seed, self.epoch, self.shuffle, start, self._order)
            self._start_reading(plan)
        return loader

    def _batches(self, plan: Plan) -> Iterator[tuple[int, Any]]:
        """``(batches consumed, batch)`` in plan order, whatever order the workers finish in."""
        pending: dict[int, tuple[Any, Any]] = {}
        next_k, total = 0, getattr(plan, "num_batches", None)
        _reap(self._retired, wait=False)
        try:
            workers = iter(self._epoch_loader(plan))
        except BaseException:
            self._stop_reading(failed=True)
            raise
        try:
            for k, report, batch in workers:
                if k is None:  # a stream source's end: the rank's number of batches
                    total = report
                else:
                    pending[k] = (report, batch)
                while next_k in pending:
                    report, batch = pending.pop(next_k)
                    if isinstance(report, WorkerError):
                        report.raise_it()
                    next_k += 1
                    if self._reader is not None:
                        self._reader.consumed(next_k)
                    self._count_skips(report)
                    yield next_k, batch
                if next_k == total and not self.persistent_workers:
                    break  # every batch is out: the workers need not be waited for
            for report, _ in pending.values():  # an error past a stream's end
                if isinstance(report, WorkerError):
                    report.raise_it()
        except BaseException:
            if not self.persistent_workers:
                _shut_down(workers)
            self._stop_reading(failed=True)
            raise
        if next_k == total and not self.persistent_workers:
            _reap(self._retired, wait=True)  # the previous epoch's, long gone by now
            retired = _retire(workers)
            if retired is not None:
                self._retired.append(retired)
        self._stop_reading(failed=False)

    def _iterable_batches(self) -> Iterator[tuple[int, Any]]:
        """An IterableDataset's batches in torch's order: its workers in turn, from the
        one after the last batch consumed."""
        state = self._iterable
        state.begin()
        queues: dict[int, collections.deque[Any]] = collections.defaultdict(collections.deque)
        workers = iter(self._epoch_loader(None))
        try:
            for worker, sent, batch in workers:
                if worker == -1:
                    sent.raise_it()
                if sent == END:
                    state.ended.add(worker)
                else:
                    queues[worker].append((sent, batch))
                while (turn := state.turn_with(queues, max(1, self.num_workers))) is not None:
                    sent, batch = queues[turn].popleft()
                    state.consumed(turn, sent, max(1, self.num_workers))
                    yield state.batches, batch
        except BaseException:
            if not self.persistent_workers:
                _shut_down(workers)
            raise

    def __iter__(self) -> Iterator[Any]:
        if self._advance:  # torch draws a new order per iteration: the next epoch
            self.epoch, self._resume, self._order = self.epoch + 1, 0, None
        self._advance = False
        self._epoch_report = SkipReport()
        if self._graph.kind == "iterable":
            self._plan, self._yielded = None, 0
            batches = self._iterable_batches()
        else:
            if self.sampler is not None or self.batch_sampler is not None:
                self._order = self._order or self._draw_order()
            plan = self._new_plan()
            self._plan, self._yielded, self._resume = plan, 0, 0
            batches = self._batches(plan)
        if self.device is not None:
            batches = iter(CUDAPrefetcher(batches, self.device))
        for done, batch in batches:
            self._yielded = done  # counted before the caller sees it: it is consumed
            if batch is not None:
                yield batch[0] if self._unbatched else batch
        self._end_epoch()

    def _count_skips(self, report: SkipReport | None) -> None:
        if report is not None:
            self._report.update(report)
            self._epoch_report.update(report)
            self.skipped += report.skipped_samples

    def _end_epoch(self) -> None:
        report = self._epoch_report
        names, count = list(report.skipped), report.skipped_samples
        own = getattr(self._graph.root, "skip_report", None)
        if isinstance(own, SkipReport):  # a dataset's own skips, found in any worker
            found = [name for name in own.skipped if name not in self._announced]
            self._announced.update(found)
            names, count = names + found, count + len(found)
        if count:
            warnings.warn(
                f"epoch {self.epoch}: {count} samples skipped "
                f"(on_error='skip'): {name_some(names, len(names))}; "
                "loader.skip_report lists them all",
                SkippedSamplesWarning,
                stacklevel=3,
            )
        self._order, self._advance = None, True  # the next epoch draws its own

    @property
    def skip_report(self) -> SkipReport:
        """The files skipped and recovered so far, in every worker and epoch.

        What ``on_error="skip"`` dropped (the loader's, a ``map``'s or a
        ``map_batches``'s, or a dataset's own such as ``ImageFolder(on_error="skip")``)
        and the files whose decoders issued a ``DecodeWarning`` while being loaded,
        each named once: its file, and the row of an Arrow file.

        Example:
            >>> loader = DataLoader(list(range(4)), batch_size=2)
            >>> _ = list(loader)
            >>> loader.skip_report.summary()
            'no file skipped or recovered'
        """
        report = SkipReport()
        report.update(self._report)
        own = getattr(self._graph.root, "skip_report", None)
        if isinstance(own, SkipReport):
            report.update(own)
        return report

    def _consumed(self) -> int:
        """Positions of the epoch consumed by all ranks (an IterableDataset's: batches)."""
        if self._graph.kind == "iterable":
            return self._iterable.batches
        plan = self._plan
        return self._resume if plan is None else plan.consumed_after(self._yielded)

    def _identity(self) -> int | None:
        """What a state must match: the dataset's number of samples (unknown for a stream)."""
        return None if self._graph.kind in ("stream", "iterable") else self._dataset_size()

    def state_dict(self) -> dict[str, Any]:
        """Where the epoch stands: seed, epoch and positions consumed by all ranks together.

        Example:
            >>> DataLoader([1, 2, 3], batch_size=2).state_dict()["samples_consumed"]
            0
        """
        state: dict[str, Any] = {
            "version": _STATE_VERSION,
            "seed": self.seed,
            "epoch": self.epoch,
            "shuffle": self.shuffle,
            "shuffle_window": self.shuffle_window,
            "num_samples": self._identity(),
            "samples_consumed": self._consumed(),
            "skipped": self.skipped,
        }
        if self._order is not None:
            if self._sampler_state is not None:
                state["sampler_state"] = self._sampler_state
            else:  # a sampler without state: its order of this epoch
                state["sampler_order"] = self._order.to_state()
        if self._graph.kind == "iterable":
            state["iterable"] = self._iterable.state(self._graph.source, max(1, self.num_workers))
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state``: the next iteration reads exactly the unseen samples.

        Example:
            >>> loader = DataLoader([1, 2, 3], batch_size=1)
            >>> loader.load_state_dict({**loader.state_dict(), "samples_consumed": 2})
            >>> [b.tolist() for b in loader]
            [[3]]
        """
        if state.get("version") != _STATE_VERSION:
            raise ValueError(f"unknown DataLoader state version {state.get('version')!r}")
        if state["num_samples"] != self._identity():
            raise ValueError(
                f"the state is of a dataset of {state['num_samples']} samples, "
                f"this one has {self._identity()}"
            )
        consumed = int(state["samples_consumed"])
        self.seed, self.epoch, self.shuffle = state["seed"], state["epoch"], state["shuffle"]
        self.shuffle_window, self.skipped = state["shuffle_window"], state["skipped"]
        self._order, self._sampler_state = None, None
        self._restore_sampler(state)
        if (
            not 0
            <= consumed
            <= max(self.num_samples if self._identity() is not None else consumed, 0)
        ):
            raise ValueError(f"samples_consumed out of range: {consumed}")
        if self._graph.kind == "iterable":
            self._iterable.load(state["iterable"], max(1, self.num_workers), consumed)
        self._plan, self._yielded, self._resume = None, 0, consumed
        self._advance = False
        if self._workers is not None:  # persistent workers hold the old state: new ones
            _shut_down(iter(self._workers[1]))
            self._workers = None

    def _restore_sampler(self, state: dict[str, Any]) -> None:
        sampler = self.batch_sampler if self.batch_sampler is not None else self.sampler
        if "sampler_order" in state:
            self._order = SamplerOrder.from_state(state["sampler_order"])
        elif "sampler_state" in state:
            sampler.load_state_dict(state["sampler_state"])  # type: ignore[union-attr]
            self._draw_order()


class _IterableState:
    """Where an IterableDataset's epoch stands: each worker's dataset state and whose turn it is.

    Torch takes one batch from each worker in turn, passing over the exhausted ones;
    resuming continues the turns where they stopped, each worker from its state.
    """

    def __init__(self) -> None:
        self.batches, self.turn = 0, 0
        self.ended: set[int] = set()
        self.states: dict[int, Any] = {}
        self.resume: list[Any] | None = None  # the workers' states to load, once

    def begin(self) -> None:
        """A new iteration: from the start, unless a loaded state says where."""
        if self.resume is None:
            self.__init__()  # type: ignore[misc]

    def turn_with(self, queues: dict[int, Any], workers: int) -> int | None:
        """The worker whose batch comes next, if it has arrived (None: wait for it)."""
        for step in range(workers):
            worker = (self.turn + step) % workers
            if queues[worker]:
                self.turn = worker
                return worker
            if worker not in self.ended:
                return None
        return None

    def consumed(self, worker: int, state: Any, workers: int) -> None:
        self.states[worker] = state
        self.batches += 1
        self.turn = (worker + 1) % workers

    def take_resume(self) -> list[Any] | None:
        resume, self.resume = self.resume, None
        return resume

    def state(self, dataset: Any, workers: int) -> dict[str, Any]:
        if self.batches and len(self.ended) < workers and not hasattr(dataset, "state_dict"):
            raise TypeError(
                f"DataLoader.state_dict(): {type(dataset).__name__} is an IterableDataset "
                "without state_dict(), so the loader cannot say where it stands mid-epoch. "
                "Give it state_dict() and load_state_dict(), or read a map-style dataset "
                "(or an IterPipe), which resume exactly on any number of workers"
            )
        states = [self.states.get(w) for w in range(workers)]
        return {"workers": workers, "turn": self.turn, "ended": sorted(self.ended),
                "states": states}  # fmt: skip

    def load(self, saved: dict[str, Any], workers: int, consumed: int) -> None:
        self.__init__()  # type: ignore[misc]
        if not consumed:
            return
        if saved["workers"] != workers:
            raise ValueError(
                f"the state is of {saved['workers']} DataLoader workers, this loader has "
                f"{workers}: an IterableDataset splits itself over its workers, so it resumes "
                "on as many. A map-style dataset or an IterPipe resumes on any number"
            )
        self.batches, self.turn = consumed, saved["turn"]
        self.ended = set(saved["ended"])
        self.resume = list(saved["states"])


def _check_torch_options(
    batch_size: int | None, shuffle: bool, sampler: Any, batch_sampler: Any, drop_last: bool
) -> None:
    """Torch's rules for how batch size, shuffle, sampler and batch sampler combine."""
    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    ):
        raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (
        batch_size != 1 or shuffle or sampler is not None or drop_last
    ):
        raise ValueError(
            "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
            "and drop_last"
        )


def _check_worker_options(
    num_workers: int, timeout: float, prefetch_factor: int | None, persistent: bool
) -> None:
    if num_workers < 0:
        raise ValueError(f"num_workers must be >= 0, got {num_workers}")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing: let "
            "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None"
        )
    if persistent and num_workers == 0:
        raise ValueError("persistent_workers needs num_workers > 0")


def _check_kind(graph: Graph, batch_size: int | None, shuffle: bool, sampler: Any,
                batch_sampler: Any) -> None:  # fmt: skip
    """What each kind of source allows (torch's rules for an IterableDataset, and ours)."""
    if graph.kind in ("iterable", "stream"):
        for name, value in (("shuffle", shuffle), ("sampler", sampler),
                            ("batch_sampler", batch_sampler)):  # fmt: skip
            if value:
                what = (
                    "IterableDataset" if graph.kind == "iterable" else "pipe without random access"
                )
                raise ValueError(
                    f"DataLoader with {what}: expected unspecified {name} option, but got "
                    f"{name}={value!r}. Shuffling and sampling need random access: a map-style "
                    "dataset, or a pipe over MapPipe.to_iter_pipe(), from_iterable(a list) "
                    "or an Arrow source"
                )
    if graph.columnar and batch_size is None:
        raise ValueError(
            "DataLoader(batch_size=None) over an Arrow source: the loader shards its rows, "
            "not the source's RecordBatches; pass batch_size=N to get N-row batches"
        )
    if graph.columnar and (sampler is not None or batch_sampler is not None):
        raise ValueError(
            "DataLoader over an Arrow source reads its rows in the epoch's order; a sampler "
            "needs a map-style dataset (an ArrowDataset gives random access to Arrow files)"
        )


def _first_seed(seed: int | None, generator: torch.Generator | None) -> int:
    if seed is None:
        if generator is None:
            return 0
        return int(torch.randint(0, 2**62, (), generator=generator))
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be in [0, 2**63) (an int64), got {seed!r}")
    return seed


def _as_users_worker(worker_init_fn: Callable[[int], None] | None, worker_id: int) -> None:
    """Start a worker as torch starts one for the user's dataset, then run ``worker_init_fn``.

    Torch's worker info names the dataset it iterates, the loader's stream: in
    ``worker_init_fn`` and the dataset's ``__iter__``, ``get_worker_info().dataset``
    is the user's dataset (this worker's copy), as with torch's loader.
    """
    info = torch.utils.data.get_worker_info()
    if info is not None and hasattr(info.dataset, "graph"):
        users = dataclasses.replace(info, dataset=info.dataset.graph.dataset)
        torch.utils.data._utils.worker._worker_info = users  # what get_worker_info() returns
    if worker_init_fn is not None:
        worker_init_fn(worker_id)


def _state_of(sampler: Any) -> Any:
    """A sampler's ``state_dict()`` (None if it keeps none): restored, it gives the same order."""
    state_dict = getattr(sampler, "state_dict", None)
    return copy.deepcopy(state_dict()) if callable(state_dict) else None


def _shut_down(workers: Iterator[Any]) -> None:
    """Stop the worker processes of torch's loader iterator now.

    An exception's traceback keeps the iterator alive in a reference cycle. The next
    loader's workers, forked before the cycle is collected, would inherit it, and their
    garbage collector would run its ``__del__``, which asserts that it is in the parent
    ("can only test a child process"). Once shut down, ``__del__`` does nothing.
    """
    shutdown = getattr(workers, "_shutdown_workers", None)  # torch's iterator, private
    if shutdown is not None:
        shutdown()


def _retire(workers: Iterator[Any]) -> Iterator[Any] | None:
    """Tell the worker processes of torch's loader iterator to exit, without waiting.

    For the end of an epoch whose batches have all arrived: torch would wait there for
    each worker process to end (tens of milliseconds each). The workers get their stop
    signal now and exit while the main process goes on; :func:`_reap` joins them later.
    Returns the iterator to reap, or None when it was shut down here (an iterator
    with a pin-memory thread, or no worker processes).
    """
    if getattr(workers, "_workers_done_event", None) is None or hasattr(
        workers, "_pin_memory_thread"
    ):
        _shut_down(workers)
        return None
    workers._workers_done_event.set()  # torch's private shutdown protocol, as _shut_down
    for worker_id, running in enumerate(workers._workers_status):
        if running:
            workers._mark_worker_as_unavailable(worker_id, shutdown=True)
    if workers._worker_pids_set:  # every batch arrived: how the workers end is not an error
        torch.utils.data._utils.signal_handling._remove_worker_pids(id(workers))
        workers._worker_pids_set = False
    return workers


def _reap(retired: list[Iterator[Any]], wait: bool) -> None:
    """Join the workers of retired iterators: all of them, or (``wait=False``) the exited ones."""
    for workers in list(retired):
        if wait or not any(w.is_alive() for w in workers._workers):
            _shut_down(workers)
            retired.remove(workers)


def _drop_cache(cache: SharedReadCache) -> None:
    """A loader's end: free its cache's fragments (kept between epochs) and let go of it.

    The files go at once; the directory goes with its last holder (the loader of
    another rank sharing it; worker processes do not hold it).
    """
    if not cache.shared:  # a shared one: the other ranks' loaders free theirs
        cache.clear()
    cache.close()


def _local_ranks(rank: int, world_size: int) -> list[int]:
    """The ranks on this machine, from torchrun's ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``."""
    try:
        local_rank = int(os.environ["LOCAL_RANK"])
        local_size = int(os.environ["LOCAL_WORLD_SIZE"])
    except (KeyError, ValueError):
        return [rank]
    first = rank - local_rank
    ranks = [r for r in range(first, first + local_size) if 0 <= r < world_size]
    return ranks if rank in ranks else [rank]


def _distributed() -> tuple[int, int]:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1
