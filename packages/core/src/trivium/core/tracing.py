"""Whether code runs eagerly or is traced into a graph: the one test every package uses.

Trivium keeps one eager implementation and, where it differs, one traceable
implementation of the same computation. The eager form may branch in Python on
tensor values, keep Python-side caches, draw from a ``torch.Generator`` or call
native code directly; a graph tracer sees none of that. :func:`is_tracing` says
which form must run, and :func:`ops_intercepted` whether a native shortcut that
bypasses torch's dispatcher is allowed. Call these two instead of
``torch.compiler.is_compiling()`` and friends, so that every package agrees on
what "traced" means.

Example:
    >>> import torch
    >>> def double(x):
    ...     if is_tracing():
    ...         return x * 2  # the traceable form
    ...     return x + x  # the eager form
    >>> double(torch.ones(2))  # under torch.compile: the same result from x * 2
    tensor([2., 2.])
"""

from __future__ import annotations

import torch

__all__ = ["is_tracing", "ops_intercepted"]


def is_tracing() -> bool:
    """Whether the calling code is traced into a graph instead of running eagerly.

    True under ``torch.compile`` and ``torch.export`` (strict and non-strict) and
    inside code compiled by ``torch.jit.script``. The code must then take its
    traceable form: no Python branch on a tensor's value, no Python-side cache,
    no ``torch.Generator`` (torch's default generator instead). False in eager
    code, also under ``torch.jit.trace`` and a ``TorchDispatchMode``, where the
    eager form runs as it is. Usable in scripted code.

    Example:
        >>> is_tracing()  # eager; inside torch.compile(fn) it is True while fn is traced
        False
    """
    if torch.jit.is_scripting():
        return True
    return torch.compiler.is_compiling()


def ops_intercepted() -> bool:
    """Whether something between Python and the kernels sees every torch op of the caller.

    True while :func:`is_tracing`, under ``torch.jit.trace``, and while a
    ``TorchDispatchMode`` is active (``FakeTensorMode``, ``make_fx``,
    ``FlopCounterMode``, ...). A shortcut that calls native code without going
    through torch's dispatcher would hide its work from them: take it only when
    this is False.

    Example:
        >>> import torch
        >>> from torch.utils.flop_counter import FlopCounterMode
        >>> ops_intercepted()
        False
        >>> with FlopCounterMode(display=False):
        ...     ops_intercepted()
        True
    """
    return is_tracing() or torch.jit.is_tracing() or bool(torch._C._len_torch_dispatch_stack())
