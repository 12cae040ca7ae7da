"""``generalized_box_iou_loss``: 1 - GIoU of paired boxes, as ``torchvision.ops``.

Example:
    >>> import torch
    >>> a = torch.tensor([[0.0, 0.0, 2.0, 2.0]])
    >>> generalized_box_iou_loss(a, a).tolist()
    [0.0]
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["generalized_box_iou_loss"]


def _paired_inter_union(boxes1: Tensor, boxes2: Tensor) -> tuple[Tensor, Tensor]:
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    width = (torch.min(x2, x2g) - torch.max(x1, x1g)).clamp(min=0)
    height = (torch.min(y2, y2g) - torch.max(y1, y1g)).clamp(min=0)
    inter = width * height
    union = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - inter
    return inter, union


def generalized_box_iou_loss(
    boxes1: Tensor, boxes2: Tensor, reduction: str = "none", eps: float = 1e-7
) -> Tensor:
    """``1 - GIoU`` of each pair ``boxes1[i], boxes2[i]`` (XYXY, shapes ``[..., 4]``).

    The loss is 0 for identical boxes and approaches 2 for distant ones; unlike an
    IoU loss it still has a gradient when the boxes do not overlap. ``reduction``
    is ``"none"``, ``"mean"`` or ``"sum"``; ``eps`` guards the divisions.

    Example:
        >>> import torch
        >>> a = torch.tensor([[0.0, 0.0, 1.0, 1.0]])
        >>> b = torch.tensor([[2.0, 0.0, 3.0, 1.0]])
        >>> round(float(generalized_box_iou_loss(a, b)), 3)  # IoU 0, hull 3, union 2
        1.333
    """
    check_loss_inputs(boxes1, boxes2, reduction)
    if not boxes1.is_floating_point():
        boxes1 = boxes1.float()
    if not boxes2.is_floating_point():
        boxes2 = boxes2.float()
    inter, union = _paired_inter_union(boxes1, boxes2)
    iou = inter / (union + eps)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    hull = (torch.max(x2, x2g) - torch.min(x1, x1g)) * (torch.max(y2, y2g) - torch.min(y1, y1g))
    loss = 1 - (iou - (hull - union) / (hull + eps))
    return reduce_loss(loss, reduction)


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """``loss`` reduced as torchvision's box losses do (the mean of none is 0, with a graph).

    Example:
        >>> import torch
        >>> reduce_loss(torch.tensor([1.0, 3.0]), "mean").item()
        2.0
    """
    if reduction == "mean":
        return loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def check_loss_inputs(boxes1: Tensor, boxes2: Tensor, reduction: str) -> None:
    """The reduction and box shapes the box losses accept."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    if boxes1.shape[-1:] != (4,) or boxes2.shape[-1:] != (4,):
        raise ValueError(
            f"boxes must have 4 coordinates in the last dimension, got {tuple(boxes1.shape)} "
            f"and {tuple(boxes2.shape)}"
        )
