"""What the training pipelines share: optimizer, learning-rate schedule, autocast, DDP.

Each function takes the pipeline's config object and reads only the fields named
in its docstring, so classification and detection configs both work.

Example:
    >>> from types import SimpleNamespace
    >>> c = SimpleNamespace(epochs=2, lr_warmup_epochs=0, lr_warmup_decay=0.01,
    ...                     lr_scheduler="constant", lr_gamma=0.1, lr_step_size=1)
    >>> lr_factor(c, 3, 2)
    1.0
"""

from __future__ import annotations

import contextlib
import math
import os
from typing import Any

import torch
from torch import nn

__all__ = ["autocast", "distributed", "lr_factor", "make_optimizer"]


def make_optimizer(config: Any, model: nn.Module) -> torch.optim.Optimizer:
    """SGD (``momentum``) or AdamW from ``config.opt``, ``lr`` and ``weight_decay``.

    Only parameters that require gradients are optimised (a detection backbone
    freezes some).

    Example:
        >>> from types import SimpleNamespace
        >>> c = SimpleNamespace(opt="adamw", lr=1e-3, weight_decay=0.0, momentum=0.9)
        >>> type(make_optimizer(c, nn.Linear(2, 2))).__name__
        'AdamW'
    """
    params = [p for p in model.parameters() if p.requires_grad]
    if config.opt == "adamw":
        return torch.optim.AdamW(params, config.lr, weight_decay=config.weight_decay)
    return torch.optim.SGD(
        params, config.lr, momentum=config.momentum, weight_decay=config.weight_decay
    )


def lr_factor(config: Any, step: int, steps_per_epoch: int) -> float:
    """The learning rate at iteration ``step`` as a fraction of ``config.lr``.

    Linear warm-up over ``lr_warmup_epochs`` from ``lr_warmup_decay``, then
    ``lr_scheduler``: ``"cosine"`` to zero at ``epochs``, ``"step"`` (times
    ``lr_gamma`` every ``lr_step_size`` epochs) or ``"constant"``.

    Example:
        >>> from types import SimpleNamespace
        >>> c = SimpleNamespace(epochs=2, lr_warmup_epochs=1, lr_warmup_decay=0.1,
        ...                     lr_scheduler="cosine", lr_gamma=0.1, lr_step_size=1)
        >>> [round(lr_factor(c, s, 2), 3) for s in range(4)]
        [0.1, 0.55, 1.0, 0.5]
    """
    warm = config.lr_warmup_epochs * steps_per_epoch
    if step < warm:
        return config.lr_warmup_decay + (1 - config.lr_warmup_decay) * step / warm
    if config.lr_scheduler == "constant":
        return 1.0
    if config.lr_scheduler == "step":
        return config.lr_gamma ** (step // (config.lr_step_size * steps_per_epoch))
    total = max(1, config.epochs * steps_per_epoch - warm)
    return 0.5 * (1 + math.cos(math.pi * (step - warm) / total))


def autocast(device: torch.device, enabled: bool) -> contextlib.AbstractContextManager:
    """Mixed precision when ``enabled``: float16 on CUDA, bfloat16 elsewhere.

    Example:
        >>> with autocast(torch.device("cpu"), False):
        ...     pass
    """
    if not enabled:
        return contextlib.nullcontext()
    dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    return torch.autocast(device.type, dtype=dtype)


def distributed() -> tuple[int, int]:
    """``(rank, world_size)``, joining the process group ``torchrun`` describes.

    gloo on CPU, NCCL on CUDA; ``(0, 1)`` outside ``torchrun``.

    Example:
        >>> distributed()
        (0, 1)
    """
    dist = torch.distributed
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1
