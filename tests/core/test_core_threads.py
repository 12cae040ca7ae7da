"""Tests for trivium.core.threads: the shared pool and parallel_map."""

from __future__ import annotations

import multiprocessing
import os
import random
import threading
import time
from collections.abc import Iterator

import pytest
import torch
import torch.utils.data

from trivium.core import threads
from trivium.core.threads import get_num_threads, get_thread_pool, parallel_map, set_num_threads


@pytest.fixture(autouse=True)
def _restore_pool_size() -> Iterator[None]:
    saved = threads._num_threads
    yield
    with threads._lock:
        old, threads._pool, threads._num_threads = threads._pool, None, saved
    if old is not None:
        old.shutdown(wait=True)


def _slow_double(x: int) -> int:
    time.sleep(random.random() * 0.002)  # finish out of order
    return 2 * x


def _meet(barrier: threading.Barrier) -> str:
    barrier.wait()  # only returns when two calls run at the same time
    return threading.current_thread().name


def test_parallel_map_preserves_order() -> None:
    items = list(range(200))
    assert parallel_map(_slow_double, items, num_threads=4) == [2 * x for x in items]
    assert parallel_map(_slow_double, iter(items)) == [2 * x for x in items]
    assert parallel_map(_slow_double, []) == []


@pytest.mark.parametrize("num_threads", [None, 2, 8])
def test_parallel_map_runs_concurrently(num_threads: int | None) -> None:
    if num_threads is None:
        set_num_threads(2)
    barrier = threading.Barrier(2, timeout=10)
    names = parallel_map(lambda _: _meet(barrier), range(2), num_threads=num_threads)
    assert len(set(names)) == 2


def test_parallel_map_runs_inline_when_it_should() -> None:
    main = threading.current_thread().name
    assert parallel_map(lambda _: threading.current_thread().name, range(5), 1) == [main] * 5
    assert parallel_map(lambda _: threading.current_thread().name, [0], 8) == [main]


def test_nested_parallel_map_does_not_deadlock() -> None:
    set_num_threads(2)
    out = parallel_map(lambda x: parallel_map(lambda y: x * y, range(3)), range(4))
    assert out == [[x * y for y in range(3)] for x in range(4)]


def test_parallel_map_reraises_the_original_exception() -> None:
    raised: list[Exception] = []

    def fn(x: int) -> int:
        if x == 7:
            raised.append(KeyError(f"item {x}"))
            raise raised[-1]
        return x

    with pytest.raises(KeyError) as info:
        parallel_map(fn, range(50), num_threads=4)
    assert len(raised) == 1 and info.value is raised[0]


def test_an_error_stops_new_items_from_starting() -> None:
    started: list[int] = []

    def fn(x: int) -> int:
        started.append(x)
        if x == 0:
            raise RuntimeError("boom")
        time.sleep(0.001)
        return x

    with pytest.raises(RuntimeError, match="boom"):
        parallel_map(fn, range(1000), num_threads=2)
    assert len(started) < 1000


def test_set_num_threads_resizes_the_pool() -> None:
    set_num_threads(3)
    assert get_num_threads() == 3
    old = get_thread_pool()
    assert old._max_workers == 3
    pending = old.submit(time.sleep, 0.05)
    set_num_threads(5)
    assert get_num_threads() == 5
    new = get_thread_pool()
    assert new is not old and new._max_workers == 5
    assert get_thread_pool() is new
    assert pending.result(timeout=5) is None  # work on the old pool still finishes
    with pytest.raises(ValueError, match=">= 1"):
        set_num_threads(0)
    with pytest.raises(TypeError):
        set_num_threads("2")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        parallel_map(abs, [1, 2], num_threads=0)


def test_default_num_threads_from_affinity_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_num_threads", None)
    monkeypatch.delenv("TRIVIUM_NUM_THREADS", raising=False)
    assert get_num_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("TRIVIUM_NUM_THREADS", "7")
    assert get_num_threads() == 7
    monkeypatch.setenv("TRIVIUM_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="TRIVIUM_NUM_THREADS"):
        get_num_threads()


class _WorkerThreads(torch.utils.data.Dataset):
    """Item i: the pool size a DataLoader worker gets by default."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> int:
        return get_num_threads()


def test_dataloader_workers_default_to_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_num_threads", None)
    monkeypatch.delenv("TRIVIUM_NUM_THREADS", raising=False)
    loader = torch.utils.data.DataLoader(_WorkerThreads(), batch_size=None, num_workers=2)
    assert list(loader) == [1, 1]
    monkeypatch.setenv("TRIVIUM_NUM_THREADS", "3")  # the environment still wins
    assert list(loader) == [3, 3]


def _child(queue: multiprocessing.Queue) -> None:
    barrier = threading.Barrier(2, timeout=10)
    try:
        names = parallel_map(lambda _: _meet(barrier), range(2), num_threads=2)
        queue.put((parallel_map(_slow_double, range(20)), len(set(names))))
    except BaseException as e:  # report instead of hanging the parent
        queue.put(repr(e))


def test_forked_child_gets_a_fresh_pool() -> None:
    set_num_threads(2)
    assert parallel_map(_slow_double, range(10)) == [2 * x for x in range(10)]  # pool is live
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    try:
        result = queue.get(timeout=30)
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    assert result == ([2 * x for x in range(20)], 2)
    assert child.exitcode == 0
