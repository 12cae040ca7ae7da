"""Learning-rate schedules defined by the run's length, so a resumed run can extend it.

Example:
    >>> import torch
    >>> opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = warmup_cosine(opt, num_steps=10, warmup_steps=2)
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(round(opt.param_groups[0]["lr"], 3))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.5, 1.0, 1.0, 0.964]
"""

from __future__ import annotations

import math

import torch

__all__ = ["warmup_cosine"]


def warmup_cosine(
    optimizer: torch.optim.Optimizer, num_steps: int, warmup_steps: int, final: float = 0.05
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up over ``warmup_steps``, then a cosine decay to ``final`` x the peak.

    The factor is a function of the step and ``num_steps`` only: a checkpoint resumed
    with a larger ``num_steps`` continues on the longer schedule.
    """
    warmup_steps = max(1, warmup_steps)
    num_steps = max(num_steps, warmup_steps + 1)

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / (num_steps - warmup_steps))
        return final + (1 - final) * 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
