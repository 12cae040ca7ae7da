"""``distance_box_iou_loss`` and ``complete_box_iou_loss`` of paired boxes, as
``torchvision.ops``.

Example:
    >>> import torch
    >>> a = torch.tensor([[0.0, 0.0, 2.0, 2.0]])
    >>> distance_box_iou_loss(a, a).tolist()
    [0.0]
"""

from __future__ import annotations

import torch
from torch import Tensor

from trivium.vision.ops.giou_loss import _paired_inter_union, check_loss_inputs, reduce_loss

__all__ = ["complete_box_iou_loss", "distance_box_iou_loss"]


def _upcast_non_float(t: Tensor) -> Tensor:
    # As torchvision's losses: anything but float32/float64 (float16 too) in float32.
    return t if t.dtype in (torch.float32, torch.float64) else t.float()


def _diou_iou_loss(boxes1: Tensor, boxes2: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """``(1 - distance IoU, IoU)`` of each pair, in torchvision's arithmetic."""
    inter, union = _paired_inter_union(boxes1, boxes2)
    iou = inter / (union + eps)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    diagonal_squared = (
        ((torch.max(x2, x2g) - torch.min(x1, x1g)) ** 2)
        + ((torch.max(y2, y2g) - torch.min(y1, y1g)) ** 2)
        + eps
    )
    centers_squared = (((x2 + x1) / 2 - (x1g + x2g) / 2) ** 2) + (
        ((y2 + y1) / 2 - (y1g + y2g) / 2) ** 2
    )
    return 1 - iou + centers_squared / diagonal_squared, iou


def distance_box_iou_loss(
    boxes1: Tensor, boxes2: Tensor, reduction: str = "none", eps: float = 1e-7
) -> Tensor:
    """``1 - DIoU`` of each pair ``boxes1[i], boxes2[i]`` (XYXY, shapes ``[..., 4]``).

    The IoU loss plus the squared distance between the centres over the squared
    diagonal of the smallest enclosing box, so distant boxes are pulled together.

    Args:
        boxes1: predicted boxes, [..., 4].
        boxes2: target boxes, [..., 4].
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.
        eps: guards the divisions.

    Example:
        >>> import torch
        >>> a = torch.tensor([[0.0, 0.0, 1.0, 1.0]])
        >>> round(float(distance_box_iou_loss(a, torch.tensor([[1.0, 0.0, 2.0, 1.0]]))), 4)
        1.2
    """
    check_loss_inputs(boxes1, boxes2, reduction)
    boxes1, boxes2 = _upcast_non_float(boxes1), _upcast_non_float(boxes2)
    loss, _ = _diou_iou_loss(boxes1, boxes2, eps)
    return reduce_loss(loss, reduction)


def complete_box_iou_loss(
    boxes1: Tensor, boxes2: Tensor, reduction: str = "none", eps: float = 1e-7
) -> Tensor:
    """``1 - CIoU`` of each pair ``boxes1[i], boxes2[i]`` (XYXY, shapes ``[..., 4]``).

    :func:`distance_box_iou_loss` plus ``alpha * v``: ``v`` the squared difference of
    the aspect angles, ``alpha = v / (1 - IoU + v + eps)`` (a constant for the gradient).

    Args:
        boxes1: predicted boxes, [..., 4].
        boxes2: target boxes, [..., 4].
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.
        eps: guards the divisions.

    Example:
        >>> import torch
        >>> a = torch.tensor([[0.0, 0.0, 1.0, 1.0]])
        >>> round(float(complete_box_iou_loss(a, torch.tensor([[0.0, 0.0, 2.0, 1.0]]))), 4)
        0.5532
    """
    check_loss_inputs(boxes1, boxes2, reduction)
    boxes1, boxes2 = _upcast_non_float(boxes1), _upcast_non_float(boxes2)
    diou_loss, iou = _diou_iou_loss(boxes1, boxes2, eps)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    v = (4 / (torch.pi**2)) * torch.pow(
        torch.atan((x2g - x1g) / (y2g - y1g)) - torch.atan((x2 - x1) / (y2 - y1)), 2
    )
    with torch.no_grad():
        alpha = v / (1 - iou + v + eps)
    return reduce_loss(diou_loss + alpha * v, reduction)
