"""The focal loss of RetinaNet, as ``torchvision.ops.sigmoid_focal_loss``.

Example:
    >>> import torch
    >>> logits = torch.tensor([2.0, -1.0])
    >>> sigmoid_focal_loss(logits, torch.tensor([1.0, 0.0]), reduction="sum").shape
    torch.Size([])
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["sigmoid_focal_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def sigmoid_focal_loss(
    inputs: Tensor,
    targets: Tensor,
    alpha: float = 0.25,
    gamma: float = 2,
    reduction: str = "none",
) -> Tensor:
    """Focal loss (Lin et al., 2017) on logits ``inputs`` against 0/1 ``targets`` of the same shape.

    ``ce * (1 - p_t) ** gamma``, weighted by ``alpha`` for positives and ``1 - alpha``
    for negatives (``alpha=-1``: no weighting); ``reduction`` is ``"none"``,
    ``"mean"`` or ``"sum"``. The same arithmetic as torchvision, in the same order.

    Example:
        >>> import torch
        >>> loss = sigmoid_focal_loss(torch.tensor([0.0]), torch.tensor([1.0]))
        >>> round(loss.item(), 5)  # 0.25 * ln(2) * 0.5 ** 2
        0.04332
    """
    if not (0 <= alpha <= 1) and alpha != -1:
        raise ValueError(f"alpha must be in [0, 1], or -1 for no weighting; got {alpha}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if inputs.shape != targets.shape:
        raise ValueError(
            f"inputs and targets must have the same shape, got {list(inputs.shape)} "
            f"and {list(targets.shape)}"
        )
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss
