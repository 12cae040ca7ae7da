"""trivium.data.DataLoader: worker processes and the batch buffers they reuse.

At the end of an epoch whose batches have all arrived, the workers are told to exit and
the epoch ends without waiting for them; they are joined later, and none outlives the
loader. The processes are read from ``/proc`` (zombies included), not from the loader.

Batches made with ``empty_batch`` in a worker go out in reused shared-memory buffers
(``BatchSlots``): each worker's own in the first epoch, then buffers of the main process
that the forked workers inherit. A buffer is reused only once the main process holds no
tensor of it, so held batches keep their values; the segments are told apart by their
inodes in ``/proc/self/maps``.
"""

from __future__ import annotations

import gc
import multiprocessing.util
import os
import pathlib
import time

import pytest
import torch
from shared_memory import segment_inode

from trivium.core.batching import BatchSlots, empty_batch, lend_batch, stack_batch
from trivium.data import DataLoader

pytestmark = pytest.mark.skipif(
    not pathlib.Path("/proc/self/stat").exists(), reason="reads child processes from /proc"
)

SLOW_EXIT_S = 1.5


def child_processes() -> dict[int, str]:
    """This process's children, as pid -> state letter (``Z``: exited, not yet joined)."""
    me = os.getpid()
    children = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == me:
            children[int(entry.name)] = state
    return children


def exit_slowly(worker_id: int) -> None:
    """A worker_init_fn: the worker's exit (multiprocessing's finalizers) takes seconds."""
    multiprocessing.util.Finalize(None, time.sleep, args=(SLOW_EXIT_S,), exitpriority=100)


def test_epoch_ends_without_waiting_for_the_workers_to_exit() -> None:
    before = set(child_processes())
    loader = DataLoader(list(range(40)), 4, shuffle=True, num_workers=2, seed=0,
                        worker_init_fn=exit_slowly)  # fmt: skip
    seen = torch.cat(list(loader)).tolist()
    assert sorted(seen) == list(range(40))
    first_epoch = set(child_processes()) - before
    # torch would have joined them (up to 5 s each): they are still exiting here
    assert len(first_epoch) == 2, first_epoch
    loader.set_epoch(1)
    assert sorted(torch.cat(list(loader)).tolist()) == list(range(40))
    # the first epoch's workers were joined at the end of the second: not even zombies
    assert not first_epoch & set(child_processes())
    del loader
    gc.collect()
    assert set(child_processes()) <= before


def test_persistent_workers_stay_between_epochs() -> None:
    before = set(child_processes())
    loader = DataLoader(list(range(12)), 4, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    workers = set(child_processes()) - before
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert set(child_processes()) - before == workers
    assert all(state != "Z" for pid, state in child_processes().items() if pid in workers)
    del loader
    gc.collect()
    assert set(child_processes()) <= before


def test_a_loader_left_mid_epoch_stops_its_workers() -> None:
    before = set(child_processes())
    loader = DataLoader(list(range(40)), 4, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [0, 1, 2, 3]
    del it, loader
    gc.collect()
    assert set(child_processes()) <= before


# ---------------------------------------------------------------- reused batch buffers


def filled_batch(items: list[int]) -> torch.Tensor:
    """A collate_fn: each item's row filled with the item, in an ``empty_batch``."""
    out = empty_batch((len(items), 4096), torch.int64)  # 32 KiB per row
    out.copy_(torch.tensor(items)[:, None].expand(-1, 4096))
    return out


def test_held_batches_keep_their_values_while_buffers_are_reused() -> None:
    loader = DataLoader(list(range(300)), 10, shuffle=True, num_workers=2, seed=1,
                        collate_fn=filled_batch)  # fmt: skip
    kept = []  # some batches of each epoch, held to the end of all epochs
    for epoch in range(3):  # 0: each worker's own buffers; then the main process's
        loader.set_epoch(epoch)
        held = []
        for i, batch in enumerate(loader):
            ids = batch[:, 0].clone()
            assert torch.equal(batch, ids[:, None].expand(-1, 4096))
            if i % 3 == 0:
                held.append((ids, batch))  # kept to the epoch's end: not reused meanwhile
            if i % 11 == 0:
                kept.append((ids, batch[2:]))  # a view keeps the batch held too
        for ids, batch in held:
            assert torch.equal(batch, ids[:, None].expand(-1, 4096))
    for ids, batch in kept:
        assert torch.equal(batch, ids[2:, None].expand(-1, 4096))


def test_dropped_batches_buffers_are_reused() -> None:
    loader = DataLoader(list(range(400)), 10, num_workers=2, collate_fn=filled_batch)
    inodes = []
    for epoch in range(3):
        loader.set_epoch(epoch)
        inodes.append(set())
        for i, batch in enumerate(loader):
            assert torch.equal(batch[:, 0], torch.arange(10 * i, 10 * i + 10))
            inodes[-1].add(segment_inode(batch))
    # 40 batches in at most (prefetch_factor + 2) buffers per worker, not a segment each
    assert all(len(epoch) <= 2 * 4 for epoch in inodes), inodes
    # from the second epoch on, the main process's buffers, which outlive the workers
    assert inodes[1] == inodes[2] and not inodes[0] & inodes[1], inodes


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_workers_not_forked_make_their_own_buffers(context: str) -> None:
    rows = [torch.full((4096,), i) for i in range(60)]
    loader = DataLoader(rows, 10, shuffle=True, num_workers=2, seed=0, collate_fn=stack_batch,
                        multiprocessing_context=context)  # fmt: skip
    for epoch in range(2):
        loader.set_epoch(epoch)
        batches = list(loader)  # all held to the end
        ids = [b[:, 0].clone() for b in batches]
        assert sorted(torch.cat(ids).tolist()) == list(range(60))
        for i, b in zip(ids, batches, strict=True):
            assert torch.equal(b, i[:, None].expand(-1, 4096))


def test_batch_slots_outside_workers() -> None:
    with pytest.raises(ValueError, match="num_workers and slots must be >= 1"):
        BatchSlots(0)
    slots = BatchSlots(2, 3)
    assert slots.free() == 6
    t = empty_batch((2, 3), torch.uint8)  # the main process: a plain tensor
    assert not t.is_shared() and lend_batch(t) is t
