"""Stochastic depth (Huang et al.), as ``torchvision.ops.stochastic_depth``.

Draws from torch's global generator exactly as torchvision does, so under the same
``torch.manual_seed`` both drop the same rows.

Example:
    >>> import torch
    >>> stochastic_depth(torch.ones(4, 2), 0.5, "row", training=False).sum().item()
    8.0
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["StochasticDepth", "stochastic_depth"]


def stochastic_depth(input: Tensor, p: float, mode: str, training: bool = True) -> Tensor:
    """Zero the whole input (``"batch"``) or random rows of it (``"row"``) with probability p.

    What survives is scaled by ``1 / (1 - p)``, so the expectation is unchanged; out of
    training (or with ``p == 0``) the input is returned as is.

    Args:
        input: [N, ...], the batch first.
        p: the probability of dropping, in [0, 1].
        mode: ``"batch"`` (one draw for the whole input) or ``"row"`` (one per row).
        training: apply it; False returns ``input``.

    Returns:
        The input, dropped and rescaled.

    Example:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> stochastic_depth(torch.ones(4, 1), 0.5, "row").flatten().tolist()
        [0.0, 0.0, 2.0, 0.0]
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    rows = input.shape[0] if mode == "row" else 1
    size = [rows] + [1] * (input.ndim - 1)
    noise = torch.empty(size, dtype=input.dtype, device=input.device).bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class StochasticDepth(nn.Module):
    """:func:`stochastic_depth` as a module, active in training mode only.

    Args:
        p: the probability of dropping.
        mode: ``"batch"`` or ``"row"``.

    Example:
        >>> import torch
        >>> StochasticDepth(0.2, "row").eval()(torch.ones(2, 3)).sum().item()
        6.0
    """

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input: Tensor) -> Tensor:
        """``input`` through :func:`stochastic_depth` (in training mode)."""
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"
