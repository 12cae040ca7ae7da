"""Fork safety for objects that hold native handles (containers, processes, files, pools).

A handle inherited through ``os.fork`` (a DataLoader worker started by ``fork``) is the
parent's: a decoder's threads do not exist in the child, a pipe or file offset is
shared with the parent, a process is the parent's child. Closing, flushing, reading or
waiting on it in the child hangs or corrupts the parent's work. So a child drops such
handles without touching them (:func:`abandon`) and opens its own on first use; a
pickled object (``spawn`` / ``forkserver`` workers) travels without its handles.

:class:`ForkSafe` does both for a class that lists its handle attributes;
:func:`own_file` reads a file object without moving the offset it shares with the parent.

Example:
    >>> import copy, io
    >>> class Reader(ForkSafe):
    ...     _fork_handles = ("_file",)
    ...     def __init__(self, data):
    ...         self.data, self._file = data, None
    ...     def read(self):
    ...         if self._file is None:  # first use, or first use after a fork or unpickling
    ...             self._file = io.BytesIO(self.data)
    ...         return self._file.read()
    >>> reader = Reader(b"abc")
    >>> reader.read(), reader._file is None
    (b'abc', False)
    >>> twin = copy.copy(reader)  # goes through __getstate__, as pickling does
    >>> twin._file is None, twin.read()
    (True, b'abc')
"""

from __future__ import annotations

import os
import sys
import traceback
import weakref
from typing import Any, ClassVar

__all__ = ["ForkSafe", "abandon", "own_file"]

# Handles inherited from the parent, kept referenced so that they are never finalised here.
_abandoned: list[Any] = []
# Every live ForkSafe object, by id (ids need no __hash__ of the objects).
_live: weakref.WeakValueDictionary[int, ForkSafe] = weakref.WeakValueDictionary()


def abandon(*handles: Any) -> None:
    """Keep ``handles`` alive and untouched until this process ends: never close or free them.

    For handles a forked child inherited from its parent: their destructors would close
    the parent's container, kill its process or join threads that do not exist here.
    ``None`` is skipped.

    Example:
        >>> import io
        >>> inherited = io.BytesIO(b"the parent's")
        >>> abandon(inherited, None)
        >>> del inherited  # the last name goes, the object stays (and stays open)
        >>> _abandoned[-1].closed
        False
    """
    for handle in handles:
        if handle is None:
            continue
        _abandoned.append(handle)
        # Interpreter shutdown clears module globals (and so this list): a reference
        # nobody owns keeps the handle's destructor from ever running in this process.
        _leak_reference(handle)


def _leak_reference(obj: Any) -> None:
    try:
        import ctypes

        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    except (ImportError, AttributeError):  # not CPython: the list is all there is
        pass


def own_file(file: Any, origin: int = 0) -> Any:
    """``file`` (a binary file object) as this process can read it without moving another's offset.

    A file object over a descriptor inherited through fork shares its offset with the
    parent: reading it moves the parent's position. This gives its path where it is a
    named regular file read from the start (``origin`` 0), else its bytes from
    ``origin`` on, read with ``os.pread`` (which moves no offset). An in-memory file
    object (no descriptor, e.g. ``io.BytesIO``) is this process's own copy: it comes
    back as is, positioned at ``origin``.

    Example:
        >>> import io, tempfile
        >>> with tempfile.NamedTemporaryFile() as f:
        ...     _ = f.write(b"data")
        ...     f.flush()
        ...     own_file(f) == f.name, own_file(f, origin=2)
        (True, b'ta')
        >>> own_file(io.BytesIO(b"abc"), origin=1).read()
        b'bc'
    """
    try:
        fd = file.fileno()
    except (OSError, ValueError, AttributeError):  # in memory
        file.seek(origin)
        return file
    name = getattr(file, "name", None)
    if origin == 0 and isinstance(name, str) and os.path.isfile(name):
        return name
    return os.pread(fd, max(os.fstat(fd).st_size - origin, 0), origin)


class ForkSafe:
    """Base of classes holding native handles: a forked child and a pickle go without them.

    A subclass names the attributes holding handles in ``_fork_handles`` and opens a
    handle wherever it finds ``None`` there (lazily). In a child made by ``os.fork``,
    before any of the child's own code runs, each of those attributes is handed to
    :func:`abandon` and set to ``None``: the child opens its own handle on first use
    and never closes, reads or waits on the parent's. Pickled (``spawn`` and
    ``forkserver`` workers), the attributes go as ``None``. Override :meth:`_after_fork`
    for anything more (and call ``super()._after_fork()``).

    Example:
        >>> import os, subprocess, sys
        >>> class Process(ForkSafe):
        ...     _fork_handles = ("proc",)
        ...     def __init__(self):
        ...         self.proc = None
        ...     def start(self):
        ...         if self.proc is None:  # in a forked child: a process of its own
        ...             self.proc = subprocess.Popen([sys.executable, "-c", "pass"])
        ...         return self.proc
        >>> p = Process()
        >>> parents = p.start()
        >>> pid = os.fork()
        >>> if pid == 0:  # the child: the parent's process is not its to wait on
        ...     os._exit(0 if p.proc is None and p.start().wait() == 0 else 1)
        >>> os.waitpid(pid, 0)[1], parents.wait()
        (0, 0)
    """

    _fork_handles: ClassVar[tuple[str, ...]] = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # Here rather than in __init__: unpickled and copied objects are registered too.
        self = super().__new__(cls)
        _live[id(self)] = self
        return self

    def _after_fork(self) -> None:
        """In a forked child: abandon every handle of ``_fork_handles`` and set it to None."""
        for name in self._fork_handles:
            abandon(self.__dict__.get(name))
            if name in self.__dict__:
                self.__dict__[name] = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in self._fork_handles:
            if name in state:
                state[name] = None
        return state


def _after_fork_in_child() -> None:
    for obj in list(_live.values()):
        try:
            obj._after_fork()
        except Exception:  # one broken object must not leave the others' handles in place
            print(f"trivium: cannot reset {type(obj).__name__} after fork:", file=sys.stderr)
            traceback.print_exc()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
