"""Seeding for reproducible runs and distinct randomness in DataLoader workers.

Where a random transform draws from (the one rule; :class:`trivium.core.Transform`
asks :func:`transform_generator` at every draw):

1. Inside a :func:`sample_scope`, from the scope's stream. ``trivium.data.DataLoader``
   opens one per sample, seeded from ``(seed, epoch, the sample's place in the
   epoch)``: every sample, worker and epoch draws differently, the whole run follows
   from the loader's ``seed``, a resumed run repeats the augmentations of an
   uninterrupted one, and the number of workers changes nothing.
2. Otherwise from the transform's own ``generator``. Inside a worker of torch's
   ``DataLoader`` a transform built in the parent holds a copy of the parent's
   generator, so that copy is first rebound, once per worker, to a seed mixed from
   its own seed and the worker's seed (torch draws a new one per worker and epoch,
   from ``seed_everything`` or the loader's ``generator``): workers and epochs
   differ, and a seeded run repeats. A transform built inside the worker keeps its
   generator as given.
3. With no generator, from torch's global generator (seeded per worker by torch).

Example:
    >>> import torch
    >>> from trivium.core.seeding import seed_everything
    >>> _ = seed_everything(0)
    >>> a = torch.rand(2)
    >>> _ = seed_everything(0)
    >>> bool(torch.equal(a, torch.rand(2)))
    True
"""

from __future__ import annotations

import hashlib
import multiprocessing.reduction
import os
import random
import threading
import weakref
from contextlib import AbstractContextManager

import numpy as np
import torch
from torch.utils.data import get_worker_info

__all__ = [
    "SampleScopes",
    "derive_seed",
    "keep_in_worker",
    "make_generator",
    "sample_scope",
    "scope_generator",
    "seed_everything",
    "transform_generator",
    "worker_init_fn",
]

_MAX_SEED = 2**32 - 1  # NumPy's legacy seeding accepts 32-bit seeds only


def _check_seed(seed: object, max_seed: int = _MAX_SEED) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed <= max_seed:
        raise ValueError(f"seed must be in [0, {max_seed}], got {seed}")
    return seed


def seed_everything(seed: int, deterministic: bool = False) -> int:
    """Seed Python's ``random``, NumPy, and torch (CPU and every CUDA device); return ``seed``.

    Also sets ``PYTHONHASHSEED`` (for subprocesses started afterwards). With
    ``deterministic=True`` torch uses deterministic algorithms (warning where there
    are none), cuDNN autotuning is off, and ``CUBLAS_WORKSPACE_CONFIG`` is set if unset.
    With ``deterministic=False`` those settings are left as they are.

    Example:
        >>> import random
        >>> _ = seed_everything(7)
        >>> a = random.random()
        >>> _ = seed_everything(7)
        >>> a == random.random()
        True
    """
    seed = _check_seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)  # lazy: a no-op without CUDA
    if deterministic:
        # cuBLAS is only deterministic with a fixed workspace; must be set before it starts.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    return seed


def worker_init_fn(worker_id: int) -> None:
    """DataLoader ``worker_init_fn`` giving each worker its own ``random`` and NumPy seeds.

    Torch already seeds each worker with ``base_seed + worker_id`` (a new base seed
    every epoch); this derives the other generators from ``torch.initial_seed()``, as
    the PyTorch reproducibility notes recommend. Outside a worker, ``worker_id`` is
    added to the seed so that different ids still differ.

    Example:
        >>> import torch
        >>> loader = torch.utils.data.DataLoader(
        ...     range(4), num_workers=2, worker_init_fn=worker_init_fn
        ... )
        >>> sorted(int(x) for x in loader)
        [0, 1, 2, 3]
    """
    seed = torch.initial_seed()
    if torch.utils.data.get_worker_info() is None:
        seed += worker_id
    random.seed(seed)
    np.random.seed(seed % 2**32)


def make_generator(seed: int | None, device: str | torch.device = "cpu") -> torch.Generator:
    """A ``torch.Generator`` seeded with ``seed`` (a non-deterministic seed when ``None``).

    Example:
        >>> import torch
        >>> a = torch.rand(2, generator=make_generator(0))
        >>> bool(torch.equal(a, torch.rand(2, generator=make_generator(0))))
        True
    """
    generator = torch.Generator(device=device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(_check_seed(seed, 2**64 - 1))
    return generator


def derive_seed(*keys: int) -> int:
    """A 64-bit seed mixed from integer ``keys``: the same on every run and process.

    Nearby keys give unrelated seeds (a hash, not a sum), so ``(seed, epoch, i)``
    and ``(seed, epoch, i + 1)`` start unrelated streams.

    Example:
        >>> derive_seed(0, 1, 2) == derive_seed(0, 1, 2)
        True
        >>> derive_seed(0, 1, 2) == derive_seed(0, 2, 1)
        False
    """
    text = ",".join(str(int(k)) for k in keys).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


class _Scope(threading.local):
    # The innermost scope's seed: an int, or the keys it is derived from on the first draw.
    seed: int | tuple[int, ...] | None = None
    generator: torch.Generator | None = None


_scope = _Scope()


class _SampleScope:
    """The block :func:`sample_scope` opens (a class: the loader enters one per sample)."""

    __slots__ = ("outer", "seed")

    def __init__(self, seed: int | tuple[int, ...]) -> None:
        self.seed = seed

    def __enter__(self) -> None:
        self.outer = _scope.seed, _scope.generator
        _scope.seed, _scope.generator = self.seed, None

    def __exit__(self, *exc: object) -> None:
        _scope.seed, _scope.generator = self.outer


def sample_scope(*keys: int) -> AbstractContextManager[None]:
    """Within the block (in this thread), every random transform draws from one stream.

    The stream's seed is ``keys[0]`` when one key is given, else ``derive_seed(*keys)``,
    computed on the first draw (a block in which nothing draws costs no hash).
    ``trivium.data.DataLoader`` opens one per sample, keyed ``(seed, epoch, position)``;
    open one yourself to make a piece of code draw reproducibly whatever generators
    its transforms hold. Scopes nest; the innermost one counts.

    Example:
        >>> import torch
        >>> from trivium.core import RandomApply
        >>> flip = RandomApply([lambda x: -x], p=0.5, generator=torch.Generator().manual_seed(1))
        >>> with sample_scope(7):
        ...     a = [flip(1) for _ in range(8)]
        >>> with sample_scope(7):
        ...     b = [flip(1) for _ in range(8)]
        >>> a == b
        True
        >>> with sample_scope(0, 1, 2):  # the same stream as sample_scope(derive_seed(0, 1, 2))
        ...     c = [flip(1) for _ in range(8)]
    """
    if not keys:
        raise TypeError("sample_scope() takes a seed, or the keys to derive one from")
    # The keys as given: derive_seed converts them on the first draw (one scope per sample).
    return _SampleScope(int(keys[0]) if len(keys) == 1 else keys)


class SampleScopes:
    """Sample scopes one after another in a loop, each begun by :meth:`start`.

    Inside ``with SampleScopes() as scopes:``, ``scopes.start(*keys)`` makes what runs
    next draw from the stream of ``sample_scope(*keys)``, until the next ``start``;
    leaving the block restores the scope around it. The same streams as a ``with
    sample_scope(*keys):`` block per sample, at a fraction of its cost, for loops
    that run nothing but samples in their scopes (the DataLoader reading the samples
    of a map-style dataset that no op follows).

    Example:
        >>> import torch
        >>> with sample_scope(4):
        ...     a = torch.rand(1, generator=scope_generator())
        >>> with SampleScopes() as scopes:
        ...     scopes.start(9)
        ...     _ = torch.rand(1, generator=scope_generator())
        ...     scopes.start(4)
        ...     b = torch.rand(1, generator=scope_generator())
        >>> bool(torch.equal(a, b)), scope_generator() is None
        (True, True)
    """

    __slots__ = ("outer", "state")

    def __enter__(self) -> SampleScopes:
        self.outer = _scope.seed, _scope.generator
        self.state = _scope.__dict__  # this thread's: set directly, it costs less
        return self

    def start(self, *keys: int) -> None:
        """Begin the stream of ``sample_scope(*keys)`` (as :func:`sample_scope` takes keys)."""
        state = self.state
        state["seed"] = keys if len(keys) != 1 else int(keys[0])
        state["generator"] = None

    def __exit__(self, *exc: object) -> None:
        _scope.seed, _scope.generator = self.outer


def scope_generator() -> torch.Generator | None:
    """The generator of the innermost :func:`sample_scope` of this thread (None outside one).

    Use it for your own draws so that they follow the same rule as the transforms.

    Example:
        >>> import torch
        >>> scope_generator() is None
        True
        >>> with sample_scope(3):
        ...     a = torch.rand(2, generator=scope_generator())
        >>> with sample_scope(3):
        ...     bool(torch.equal(a, torch.rand(2, generator=scope_generator())))
        True
    """
    if _scope.seed is None:
        return None
    if _scope.generator is None:  # made on the first draw: scopes without draws stay cheap
        seed = _scope.seed
        _scope.generator = torch.Generator().manual_seed(
            seed if isinstance(seed, int) else derive_seed(*seed)
        )
    return _scope.generator


# Generators already rebound in this worker process, with the worker seed they were rebound to.
_rebound: weakref.WeakKeyDictionary[torch.Generator, int] = weakref.WeakKeyDictionary()


def keep_in_worker(generator: torch.Generator | None) -> None:
    """Leave ``generator`` as it is in this DataLoader worker: it was made here, not copied.

    ``Transform.__init__`` calls it, so a transform built inside a worker draws from
    exactly the generator it was given. Outside a worker it does nothing.

    Example:
        >>> import torch
        >>> keep_in_worker(torch.Generator())  # not in a worker: nothing to do
    """
    info = get_worker_info()
    if info is not None and generator is not None:
        _rebound[generator] = info.seed


def transform_generator(generator: torch.Generator | None) -> torch.Generator | None:
    """The generator a transform holding ``generator`` draws from now (see the module rule).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> transform_generator(g) is g  # not in a scope, not in a DataLoader worker
        True
        >>> with sample_scope(5):
        ...     transform_generator(g) is scope_generator()
        True
    """
    scoped = scope_generator()
    if scoped is not None:
        return scoped
    if generator is None:
        return None
    info = get_worker_info()
    if info is not None and _rebound.get(generator) != info.seed:
        # A copy of the parent's generator: without this every worker draws the same.
        generator.manual_seed(derive_seed(generator.initial_seed(), info.seed))
        _rebound[generator] = info.seed
    return generator


def _rebuild_generator(device: str, state: bytes) -> torch.Generator:
    generator = torch.Generator(device=device)
    generator.set_state(torch.frombuffer(bytearray(state), dtype=torch.uint8))
    return generator


def _reduce_generator(generator: torch.Generator) -> tuple:
    return _rebuild_generator, (str(generator.device), generator.get_state().numpy().tobytes())


# torch sends a generator's state to spawned processes as a shared-memory tensor that the
# child fails to map ("unable to resize file"), so a transform holding a generator
# could not reach a spawn or forkserver DataLoader worker; the state travels as bytes.
multiprocessing.reduction.ForkingPickler.register(torch.Generator, _reduce_generator)
