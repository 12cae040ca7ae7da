"""Seeding for reproducible runs and distinct randomness in DataLoader workers.

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

import os
import random

import numpy as np
import torch

__all__ = ["make_generator", "seed_everything", "worker_init_fn"]

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
