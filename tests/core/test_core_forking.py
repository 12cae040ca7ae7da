"""ForkSafe and abandon: a forked child drops its parent's handles without touching them."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from trivium.core import ForkSafe, abandon, forking, threads
from trivium.core.forking import own_file


class Pipe(ForkSafe):
    """A handle that can tell whether a process other than its creator closed it."""

    _fork_handles = ("_end",)

    def __init__(self) -> None:
        read_end, write_end = os.pipe()
        self._read = os.fdopen(read_end, "rb", buffering=0)
        self._end: Any = os.fdopen(write_end, "wb", buffering=0)
        self.opened_in = [os.getpid()]

    def send(self, data: bytes) -> None:
        if self._end is None:  # a forked child: an end of its own (to nowhere)
            self._end = open(os.devnull, "wb")  # noqa: SIM115 - the object owns it
            self.opened_in.append(os.getpid())
        self._end.write(data)


class WithHook(ForkSafe):
    def __init__(self) -> None:
        self.forked = False

    def _after_fork(self) -> None:
        super()._after_fork()
        self.forked = True


def _in_forked_child(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a child made by fork; its result or exception comes back."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_run, args=(queue, fn, args))
    child.start()
    try:
        ok, value = queue.get(timeout=60)  # turns a hang into a failure
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    if not ok:
        raise AssertionError(f"in the child: {value}")
    return value


def _run(queue: Any, fn: Any, args: tuple) -> None:
    try:
        queue.put((True, fn(*args)))
    except BaseException as e:
        queue.put((False, repr(e)))


def _child_view(pipe: Pipe, parents: Any) -> tuple[bool, bool, bool, bool, list[int]]:
    dropped = pipe._end is None
    pipe.send(b"child")  # goes to the child's own handle, not the parent's pipe
    abandoned = any(h is parents for h in forking._abandoned)
    return dropped, pipe._end is not parents, abandoned, parents.closed, pipe.opened_in


def test_forked_child_drops_the_handle_and_opens_its_own() -> None:
    pipe = Pipe()
    pipe.send(b"parent:")
    dropped, own, abandoned, closed, opened_in = _in_forked_child(_child_view, pipe, pipe._end)
    assert dropped and own and abandoned and not closed
    assert opened_in[0] == os.getpid() and len(opened_in) == 2 and opened_in[1] != os.getpid()
    pipe.send(b"again")  # the parent's handle is still its own, and open
    pipe._end.close()
    assert pipe._read.read() == b"parent:again"


def test_after_fork_hook_runs_in_the_child_only() -> None:
    obj = WithHook()
    assert _in_forked_child(getattr, obj, "forked") is True
    assert obj.forked is False


def test_pickling_leaves_the_handles_out() -> None:
    pipe = Pipe()
    state = pipe.__getstate__()
    assert state["_end"] is None and state["opened_in"] == [os.getpid()]
    assert pipe._end is not None  # the object itself keeps its handle
    assert pickle.loads(pickle.dumps(WithHook())).forked is False


def test_copies_and_unpickled_objects_are_made_fork_safe_too() -> None:
    import copy

    obj = copy.copy(WithHook())
    assert _in_forked_child(getattr, obj, "forked") is True


def test_abandon_skips_none_and_keeps_handles() -> None:
    before = len(forking._abandoned)
    handle = object()
    abandon(None, handle)
    assert forking._abandoned[before:] == [handle]


def test_abandoned_handle_is_never_finalised_even_at_interpreter_exit() -> None:
    # A plain os.fork child that exits normally runs interpreter shutdown, which clears
    # module globals: the abandoned handle's destructor must still never run there.
    script = textwrap.dedent(
        """
        import os, sys
        from trivium.core import ForkSafe

        class Handle:
            def __del__(self):
                print(f"finalised in {'child' if os.getpid() != parent else 'parent'}", flush=True)

        class Holder(ForkSafe):
            _fork_handles = ("handle",)
            def __init__(self):
                self.handle = Handle()

        parent = os.getpid()
        holder = Holder()
        pid = os.fork()
        if pid == 0:
            assert holder.handle is None
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
        del holder
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["child exit 0", "finalised in parent"]


def _pool_state(parents: Any) -> tuple[bool, bool, list[int]]:
    dropped = threads._pool is None
    result = threads.parallel_map(lambda x: x + 1, range(4), num_threads=2)
    return dropped, any(h is parents for h in forking._abandoned), result


def test_thread_pool_is_abandoned_in_a_forked_child() -> None:
    threads.set_num_threads(2)
    assert threads.parallel_map(lambda x: x, range(4)) == [0, 1, 2, 3]  # the pool is live
    parent_pool = threads._pool
    assert parent_pool is not None
    dropped, abandoned, result = _in_forked_child(_pool_state, parent_pool)
    assert dropped and abandoned and result == [1, 2, 3, 4]
    assert threads._pool is parent_pool  # the parent's pool is untouched
    assert threads.parallel_map(lambda x: 2 * x, range(4)) == [0, 2, 4, 6]


@pytest.fixture(autouse=True)
def _default_threads() -> Any:
    yield
    threads._num_threads = None


def _own_bytes(file: Any) -> Any:
    return own_file(file, origin=1)


def test_own_file_reads_an_inherited_file_without_moving_its_offset() -> None:
    import tempfile

    with tempfile.TemporaryFile() as f:  # no name: read with pread
        f.write(b"0123456789")
        f.seek(3)
        assert _in_forked_child(_own_bytes, f) == b"123456789"
        assert f.tell() == 3 and f.read(2) == b"34"
    with tempfile.NamedTemporaryFile() as f:
        assert own_file(f) == f.name and own_file(f, origin=1) == b""
