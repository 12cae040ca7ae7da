"""Bounding-box operators, named and computed as in ``torchvision.ops.boxes``.

Boxes are ``[..., 4]`` tensors; ``"xyxy"`` is ``(x1, y1, x2, y2)`` with the top-left
corner first. Results equal torchvision's, dtype for dtype: integer boxes are
computed in int32/int64 and float16/bfloat16 in float32 where torchvision upcasts.

Example:
    >>> import torch
    >>> a = torch.tensor([[0.0, 0.0, 10.0, 10.0]])
    >>> b = torch.tensor([[5.0, 5.0, 15.0, 15.0]])
    >>> round(box_iou(a, b).item(), 4)
    0.1429
"""

from __future__ import annotations

import numbers

import torch
from torch import Tensor

from trivium.vision.ops.nms_kernels import batched_nms_keep_op, nms_op

__all__ = [
    "batched_nms",
    "box_area",
    "box_convert",
    "box_iou",
    "clip_boxes_to_image",
    "complete_box_iou",
    "distance_box_iou",
    "generalized_box_iou",
    "masks_to_boxes",
    "nms",
    "remove_small_boxes",
]

_FORMATS = ("xyxy", "xywh", "cxcywh")


def _upcast(t: Tensor) -> Tensor:
    # Protects products from overflow, as torchvision: int8/16 -> int32, float16 -> float32.
    if t.is_floating_point():
        return t if t.dtype in (torch.float32, torch.float64) else t.float()
    return t if t.dtype in (torch.int32, torch.int64) else t.int()


def _check_boxes(boxes: Tensor, name: str = "boxes") -> None:
    if not isinstance(boxes, Tensor):
        raise TypeError(f"{name} must be a tensor, got {type(boxes).__name__}")
    if boxes.dim() == 0 or boxes.shape[-1] != 4:
        raise ValueError(f"{name} must have shape [..., 4], got {list(boxes.shape)}")


def _check_format(fmt: str, name: str) -> None:
    if fmt not in _FORMATS:
        raise ValueError(f"{name} must be one of {_FORMATS}, got {fmt!r}")


def _xyxy_to_cxcywh(boxes: Tensor) -> Tensor:
    x1, y1, x2, y2 = boxes.unbind(-1)
    return torch.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)


def _cxcywh_to_xyxy(boxes: Tensor) -> Tensor:
    cx, cy, w, h = boxes.unbind(-1)
    return torch.stack((cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h), dim=-1)


def _xywh_to_xyxy(boxes: Tensor) -> Tensor:
    x, y, w, h = boxes.unbind(-1)
    return torch.stack([x, y, x + w, y + h], dim=-1)


def _xyxy_to_xywh(boxes: Tensor) -> Tensor:
    x1, y1, x2, y2 = boxes.unbind(-1)
    return torch.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """Convert ``[..., 4]`` boxes between ``"xyxy"``, ``"xywh"`` and ``"cxcywh"``.

    ``"xywh"`` is the top-left corner, width and height; ``"cxcywh"`` the centre,
    width and height. The same format in and out returns a copy.

    Example:
        >>> import torch
        >>> box_convert(torch.tensor([[10.0, 20.0, 4.0, 6.0]]), "cxcywh", "xyxy").tolist()
        [[8.0, 17.0, 12.0, 23.0]]
    """
    _check_boxes(boxes)
    _check_format(in_fmt, "in_fmt")
    _check_format(out_fmt, "out_fmt")
    if in_fmt == out_fmt:
        return boxes.clone()
    if in_fmt == "xywh":
        boxes = _xywh_to_xyxy(boxes)
    elif in_fmt == "cxcywh":
        boxes = _cxcywh_to_xyxy(boxes)
    if out_fmt == "xywh":
        boxes = _xyxy_to_xywh(boxes)
    elif out_fmt == "cxcywh":
        boxes = _xyxy_to_cxcywh(boxes)
    return boxes


def box_area(boxes: Tensor, fmt: str = "xyxy") -> Tensor:
    """The area of every box of ``boxes`` ``[..., 4]`` given in format ``fmt``.

    Example:
        >>> import torch
        >>> box_area(torch.tensor([[0, 0, 4, 3], [1, 1, 2, 2]])).tolist()
        [12, 1]
    """
    _check_boxes(boxes)
    _check_format(fmt, "fmt")
    boxes = _upcast(boxes)
    if fmt == "xyxy":
        return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    return boxes[..., 2] * boxes[..., 3]


def _as_xyxy(boxes: Tensor, fmt: str) -> Tensor:
    """The corners torchvision's IoU uses: in the boxes' own dtype, not upcast."""
    if fmt == "xywh":
        return torch.cat((boxes[..., :2], boxes[..., :2] + boxes[..., 2:]), dim=-1)
    if fmt == "cxcywh":
        half = boxes[..., 2:] / 2
        return torch.cat((boxes[..., :2] - half, boxes[..., :2] + half), dim=-1)
    return boxes


def _side_overlap(boxes1: Tensor, boxes2: Tensor, lo: int, hi: int) -> Tensor:
    """``max(0, min(hi1, hi2) - max(lo1, lo2))`` for every pair: [..., N, M]."""
    a, b = boxes1[..., :, None, :], boxes2[..., None, :, :]
    side = torch.minimum(a[..., hi], b[..., hi]) - torch.maximum(a[..., lo], b[..., lo])
    return _upcast(side).clamp(min=0)


def _needs_graph(*tensors: Tensor) -> bool:
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def _inter_union(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy") -> tuple[Tensor, Tensor]:
    area1 = box_area(boxes1, fmt=fmt)
    area2 = box_area(boxes2, fmt=fmt)
    corners1, corners2 = _as_xyxy(boxes1, fmt), _as_xyxy(boxes2, fmt)
    # One pass per side instead of torchvision's [N, M, 2] corners: the same values.
    inter = _side_overlap(corners1, corners2, 0, 2) * _side_overlap(corners1, corners2, 1, 3)
    union = area1[..., :, None] + area2[..., None, :]
    if _needs_graph(boxes1, boxes2) or union.dtype != inter.dtype:
        return inter, union - inter
    return inter, union.sub_(inter)


def box_iou(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy") -> Tensor:
    """Intersection over union of every pair of boxes: ``[..., N, M]``.

    ``boxes1`` is ``[..., N, 4]``, ``boxes2`` ``[..., M, 4]``; ``fmt`` is the format
    of both sets (``"xyxy"``, ``"xywh"`` or ``"cxcywh"``).

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 0.0, 3.0, 2.0]])
        >>> box_iou(boxes, boxes).tolist()
        [[1.0, 0.3333333432674408], [0.3333333432674408, 1.0]]
    """
    _check_boxes(boxes1, "boxes1")
    _check_boxes(boxes2, "boxes2")
    _check_format(fmt, "fmt")
    inter, union = _inter_union(boxes1, boxes2, fmt)
    if inter.is_floating_point() and not _needs_graph(boxes1, boxes2):
        return inter.div_(union)
    return inter / union


def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """Generalized IoU of every pair of ``"xyxy"`` boxes: ``[..., N, M]``, in [-1, 1].

    IoU minus the share of the smallest enclosing box that the union leaves empty.

    Example:
        >>> import torch
        >>> a = torch.tensor([[0.0, 0.0, 1.0, 1.0]])
        >>> generalized_box_iou(a, torch.tensor([[2.0, 0.0, 3.0, 1.0]])).tolist()
        [[-0.3333333432674408]]
    """
    _check_boxes(boxes1, "boxes1")
    _check_boxes(boxes2, "boxes2")
    inter, union = _inter_union(boxes1, boxes2)
    iou = inter / union
    a, b = boxes1[..., :, None, :], boxes2[..., None, :, :]
    enclosing_w = _upcast(torch.maximum(a[..., 2], b[..., 2]) - torch.minimum(a[..., 0], b[..., 0]))
    enclosing_h = _upcast(torch.maximum(a[..., 3], b[..., 3]) - torch.minimum(a[..., 1], b[..., 1]))
    area = enclosing_w.clamp(min=0) * enclosing_h.clamp(min=0)
    return iou - (area - union) / area


def _diou_iou(boxes1: Tensor, boxes2: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """``(distance IoU, IoU)`` of every pair, in torchvision's arithmetic."""
    iou = box_iou(boxes1, boxes2)
    a, b = boxes1[..., :, None, :], boxes2[..., None, :, :]
    whi = _upcast(torch.max(a[..., 2:], b[..., 2:]) - torch.min(a[..., :2], b[..., :2])).clamp(
        min=0
    )
    diagonal_squared = (whi[..., 0] ** 2) + (whi[..., 1] ** 2) + eps
    x_p = (boxes1[..., 0] + boxes1[..., 2]) / 2
    y_p = (boxes1[..., 1] + boxes1[..., 3]) / 2
    x_g = (boxes2[..., 0] + boxes2[..., 2]) / 2
    y_g = (boxes2[..., 1] + boxes2[..., 3]) / 2
    centers_squared = (_upcast(x_p[..., None] - x_g[..., None, :]) ** 2) + (
        _upcast(y_p[..., None] - y_g[..., None, :]) ** 2
    )
    return iou - centers_squared / diagonal_squared, iou


def distance_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    """Distance IoU of every pair of ``"xyxy"`` boxes: ``[..., N, M]``, as torchvision's.

    IoU less the squared distance between the centres over the squared diagonal of
    the smallest enclosing box (``eps`` added to the diagonal).

    Args:
        boxes1: [..., N, 4] boxes.
        boxes2: [..., M, 4] boxes.
        eps: guards the division.

    Example:
        >>> import torch
        >>> a = torch.tensor([[0.0, 0.0, 1.0, 1.0]])
        >>> round(distance_box_iou(a, torch.tensor([[1.0, 0.0, 2.0, 1.0]])).item(), 4)
        -0.2
    """
    _check_boxes(boxes1, "boxes1")
    _check_boxes(boxes2, "boxes2")
    boxes1, boxes2 = _upcast(boxes1), _upcast(boxes2)
    return _diou_iou(boxes1, boxes2, eps)[0]


def complete_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    """Complete IoU of every pair of ``"xyxy"`` boxes: ``[..., N, M]``, as torchvision's.

    Distance IoU less ``alpha * v``, ``v`` the squared difference of the aspect
    angles (``4 / pi^2 * (atan(w1 / h1) - atan(w2 / h2))^2``) and ``alpha = v / (1 -
    IoU + v + eps)``, taken as a constant for the gradient.

    Args:
        boxes1: [..., N, 4] boxes.
        boxes2: [..., M, 4] boxes.
        eps: guards the divisions.

    Example:
        >>> import torch
        >>> a = torch.tensor([[0.0, 0.0, 1.0, 1.0]])
        >>> round(complete_box_iou(a, torch.tensor([[0.0, 0.0, 2.0, 1.0]])).item(), 4)
        0.4468
    """
    _check_boxes(boxes1, "boxes1")
    _check_boxes(boxes2, "boxes2")
    boxes1, boxes2 = _upcast(boxes1), _upcast(boxes2)
    diou, iou = _diou_iou(boxes1, boxes2, eps)
    w_pred = boxes1[..., None, 2] - boxes1[..., None, 0]
    h_pred = boxes1[..., None, 3] - boxes1[..., None, 1]
    w_gt = boxes2[..., None, :, 2] - boxes2[..., None, :, 0]
    h_gt = boxes2[..., None, :, 3] - boxes2[..., None, :, 1]
    v = (4 / (torch.pi**2)) * torch.pow(torch.atan(w_pred / h_pred) - torch.atan(w_gt / h_gt), 2)
    with torch.no_grad():
        alpha = v / (1 - iou + v + eps)
    return diou - alpha * v


def masks_to_boxes(masks: Tensor) -> Tensor:
    """The ``"xyxy"`` box around each mask, as torchvision's: [N, 4] float32.

    ``x2`` / ``y2`` are the last column / row that is set (inclusive), so a
    one-pixel mask gives ``x1 == x2``; an empty mask gives ``[0, 0, 0, 0]``.

    Args:
        masks: [N, H, W]; any nonzero value is inside.

    Example:
        >>> import torch
        >>> m = torch.zeros(1, 4, 5, dtype=torch.bool)
        >>> m[0, 1:3, 2:5] = True
        >>> masks_to_boxes(m).tolist()
        [[2.0, 1.0, 4.0, 2.0]]
    """
    if not isinstance(masks, Tensor):
        raise TypeError(f"masks must be a tensor, got {type(masks).__name__}")
    if masks.numel() == 0:
        return torch.zeros((0, 4), device=masks.device, dtype=torch.float)
    if masks.dim() != 3:
        raise ValueError(f"masks must have shape [N, H, W], got {list(masks.shape)}")
    _, h, w = masks.shape
    inside = masks.bool()
    rows = inside.any(dim=2)
    cols = inside.any(dim=1)
    empty = ~rows.any(dim=1)
    rows_f, cols_f = rows.float(), cols.float()
    y1 = rows_f.argmax(dim=1)
    x1 = cols_f.argmax(dim=1)
    y2 = (h - 1) - rows_f.flip(dims=[1]).argmax(dim=1)
    x2 = (w - 1) - cols_f.flip(dims=[1]).argmax(dim=1)
    boxes = torch.stack([x1, y1, x2, y2], dim=1).float()
    boxes[empty] = 0
    return boxes


def clip_boxes_to_image(boxes: Tensor, size: tuple[int, int]) -> Tensor:
    """Clip ``"xyxy"`` boxes ``[..., 4]`` to an image of ``size`` ``(height, width)``.

    Example:
        >>> import torch
        >>> clip_boxes_to_image(torch.tensor([[-5.0, 2.0, 30.0, 40.0]]), (20, 25)).tolist()
        [[0.0, 2.0, 25.0, 20.0]]
    """
    _check_boxes(boxes)
    if len(size) != 2:
        raise ValueError(f"size must be (height, width), got {size!r}")
    height, width = size
    boxes_x = boxes[..., 0::2].clamp(min=0, max=width)
    boxes_y = boxes[..., 1::2].clamp(min=0, max=height)
    return torch.stack((boxes_x, boxes_y), dim=boxes.dim()).reshape(boxes.shape)


def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
    """Indices of the ``"xyxy"`` boxes whose width and height are both at least ``min_size``.

    Example:
        >>> import torch
        >>> remove_small_boxes(torch.tensor([[0.0, 0, 1, 5], [0, 0, 3, 3]]), 2.0).tolist()
        [1]
    """
    _check_boxes(boxes)
    ws, hs = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    keep = (ws >= min_size) & (hs >= min_size)
    return torch.where(keep)[0]


def _check_nms_inputs(boxes: Tensor, scores: Tensor, iou_threshold: float) -> None:
    if not isinstance(boxes, Tensor) or not isinstance(scores, Tensor):
        raise TypeError(
            "boxes and scores must be tensors, got "
            f"{type(boxes).__name__} and {type(scores).__name__}"
        )
    if boxes.dim() != 2 or boxes.shape[1] != 4:
        raise ValueError(f"boxes must have shape [N, 4], got {list(boxes.shape)}")
    if scores.dim() != 1:
        raise ValueError(f"scores must have shape [N], got {list(scores.shape)}")
    if boxes.shape[0] != scores.shape[0]:
        raise ValueError(
            "boxes and scores must have the same length, got "
            f"{boxes.shape[0]} and {scores.shape[0]}"
        )
    if not boxes.is_floating_point():
        raise TypeError(f"boxes must be a floating-point tensor, got {boxes.dtype}")
    if scores.is_complex() or scores.dtype == torch.bool:
        raise TypeError(f"scores must be real numbers, got {scores.dtype}")
    if boxes.device != scores.device:
        raise ValueError(
            f"boxes and scores must be on one device, got {boxes.device} and {scores.device}"
        )
    if isinstance(iou_threshold, bool) or not isinstance(iou_threshold, numbers.Real):
        raise TypeError(f"iou_threshold must be a number, got {type(iou_threshold).__name__}")


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Non-maximum suppression: the indices of the boxes kept, by decreasing score (int64).

    Boxes are ``"xyxy"`` ``[N, 4]`` (floating point) with ``scores`` ``[N]``. In
    order of decreasing score (ties: the lower index first), a box is kept unless a
    kept box overlaps it with an IoU greater than ``iou_threshold``. The result is
    torchvision's CPU kernel's, ties included, on every device; it is the custom op
    ``torch.ops.trivium.nms``, so it runs inside ``torch.compile``.

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]])
        >>> nms(boxes, torch.tensor([0.8, 0.9, 0.7]), iou_threshold=0.5).tolist()
        [1, 2]
    """
    _check_nms_inputs(boxes, scores, iou_threshold)
    return nms_op(boxes, scores, float(iou_threshold))


def _check_idxs(idxs: Tensor, n: int, device: torch.device) -> None:
    if not isinstance(idxs, Tensor):
        raise TypeError(f"idxs must be a tensor, got {type(idxs).__name__}")
    if idxs.dim() != 1 or idxs.shape[0] != n:
        raise ValueError(f"idxs must have shape [N] with N = {n} boxes, got {list(idxs.shape)}")
    if idxs.is_floating_point() or idxs.is_complex():
        raise TypeError(f"idxs must hold integer categories, got {idxs.dtype}")
    if idxs.device != device:
        raise ValueError(f"idxs must be on the boxes' device {device}, got {idxs.device}")


def _coordinate_trick(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    # Offsetting each category's boxes past the others' makes one NMS do them all.
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    return nms_op(boxes + offsets[:, None], scores, iou_threshold)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """NMS per category: boxes of different categories (``idxs`` ``[N]``) never suppress each other.

    The indices kept, by decreasing score. The results equal torchvision's: like it,
    small inputs (up to 1000 boxes on the CPU, 25000 elsewhere) go through one NMS
    on boxes offset by category, larger ones through per-category suppression
    (here one pass of the kernel that skips pairs of different categories).

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]])
        >>> scores = torch.tensor([0.8, 0.9, 0.7])
        >>> batched_nms(boxes, scores, torch.tensor([0, 1, 0]), 0.5).tolist()
        [1, 0, 2]
    """
    _check_nms_inputs(boxes, scores, iou_threshold)
    _check_idxs(idxs, boxes.shape[0], boxes.device)
    iou_threshold = float(iou_threshold)
    # torchvision's switch between the two strategies, kept for identical float results.
    if boxes.numel() > (4000 if boxes.device.type == "cpu" else 100_000):
        keep = batched_nms_keep_op(boxes, scores, idxs, iou_threshold)
        return keep[scores[keep].sort(descending=True)[1]]
    return _coordinate_trick(boxes, scores, idxs, iou_threshold)
