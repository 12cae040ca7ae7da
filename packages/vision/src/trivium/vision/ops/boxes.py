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
from trivium.vision.tv_tensors import BoundingBoxFormat

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
_ROTATED = ("xywhr", "cxcywhr", "xyxyxyxy")
_SIZES = {"xywhr": 5, "cxcywhr": 5, "xyxyxyxy": 8}


def _upcast(t: Tensor) -> Tensor:
    # Protects products from overflow, as torchvision: int8/16 -> int32, float16 -> float32.
    if t.is_floating_point():
        return t if t.dtype in (torch.float32, torch.float64) else t.float()
    return t if t.dtype in (torch.int32, torch.int64) else t.int()


def _check_boxes(boxes: Tensor, name: str = "boxes", fmt: str = "xyxy") -> None:
    if not isinstance(boxes, Tensor):
        raise TypeError(f"{name} must be a tensor, got {type(boxes).__name__}")
    size = _SIZES.get(fmt, 4)
    if boxes.dim() == 0 or boxes.shape[-1] != size:
        raise ValueError(
            f"{name} must have shape [..., {size}], got {list(boxes.shape)} (format {fmt!r})"
        )


def _check_format(fmt: str, name: str, formats: tuple[str, ...] = _FORMATS) -> None:
    if fmt not in formats:
        raise ValueError(f"{name} must be one of {formats}, got {fmt!r}")


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


def _rotated_step(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """One conversion through the transforms' format math; integer boxes round, as torchvision."""
    # Imported here: the transforms package is large, and only rotated formats need it.
    from trivium.vision.transforms.functional.geometry import _convert

    work = boxes.clone() if boxes.is_floating_point() else boxes.to(torch.get_default_dtype())
    out = _convert(work, BoundingBoxFormat[in_fmt.upper()], BoundingBoxFormat[out_fmt.upper()])
    return out if boxes.is_floating_point() else out.round_().to(boxes.dtype)


def _convert_rotated(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    if "xywhr" in (in_fmt, out_fmt):
        return _rotated_step(boxes, in_fmt, out_fmt)
    return _rotated_step(_rotated_step(boxes, in_fmt, "xywhr"), "xywhr", out_fmt)


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """Convert boxes between ``"xyxy"``, ``"xywh"``, ``"cxcywh"`` (``[..., 4]``) or between
    the rotated ``"xywhr"``, ``"cxcywhr"`` (``[..., 5]``) and ``"xyxyxyxy"`` (``[..., 8]``).

    ``"xywh"`` is the top-left corner, width and height; ``"cxcywh"`` the centre,
    width and height; ``r`` an angle in degrees, counter-clockwise; ``"xyxyxyxy"``
    the 4 corners. The same format in and out returns a copy. Rotated and
    axis-aligned formats do not convert into each other (``NotImplementedError``,
    as torchvision).

    Example:
        >>> import torch
        >>> box_convert(torch.tensor([[10.0, 20.0, 4.0, 6.0]]), "cxcywh", "xyxy").tolist()
        [[8.0, 17.0, 12.0, 23.0]]
        >>> corners = box_convert(torch.tensor([[0.0, 0.0, 4.0, 2.0, 90.0]]), "xywhr", "xyxyxyxy")
        >>> [round(v) for v in corners[0].tolist()]
        [0, 0, 0, -4, 2, -4, 2, 0]
    """
    _check_format(in_fmt, "in_fmt", _FORMATS + _ROTATED)
    _check_format(out_fmt, "out_fmt", _FORMATS + _ROTATED)
    _check_boxes(boxes, fmt=in_fmt)
    if in_fmt == out_fmt:
        return boxes.clone()
    if (in_fmt in _ROTATED) != (out_fmt in _ROTATED):
        raise NotImplementedError(
            f"box_convert: no conversion between {in_fmt!r} and {out_fmt!r} "
            "(rotated and axis-aligned formats do not convert into each other)"
        )
    if in_fmt in _ROTATED:
        return _convert_rotated(boxes, in_fmt, out_fmt)
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

    ``boxes1`` is ``[..., N, K]``, ``boxes2`` ``[..., M, K]``; ``fmt`` is the format
    of both sets: ``"xyxy"``, ``"xywh"``, ``"cxcywh"`` (K = 4) or the rotated
    ``"cxcywhr"``, ``"xywhr"`` (K = 5) and ``"xyxyxyxy"`` (K = 8), whose IoU is the
    area of the overlapping polygon over the union (floating boxes; as torchvision,
    0 where a box has no area).

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 0.0, 3.0, 2.0]])
        >>> box_iou(boxes, boxes).tolist()
        [[1.0, 0.3333333432674408], [0.3333333432674408, 1.0]]
        >>> square = torch.tensor([[0.0, 0.0, 2.0, 2.0, 0.0]])
        >>> round(box_iou(square, torch.tensor([[0.0, 0.0, 2.0, 2.0, 45.0]]), "cxcywhr").item(), 4)
        0.7071
    """
    _check_format(fmt, "fmt", _FORMATS + _ROTATED)
    _check_boxes(boxes1, "boxes1", fmt)
    _check_boxes(boxes2, "boxes2", fmt)
    if fmt in _ROTATED:
        return _rotated_iou(boxes1, boxes2, fmt)
    inter, union = _inter_union(boxes1, boxes2, fmt)
    if inter.is_floating_point() and not _needs_graph(boxes1, boxes2):
        return inter.div_(union)
    return inter / union


# Rotated IoU: the overlap of two boxes is one box clipped by the 4 edge lines of the
# other (Sutherland-Hodgman), for all pairs at once; polygons hold at most 8 corners.


def _corner_offsets(boxes: Tensor) -> Tensor:
    """The corners of ``cxcywhr`` boxes [..., 5] about their centres: [..., 4, 2]."""
    w, h = boxes[..., 2], boxes[..., 3]
    radians = boxes[..., 4] * (torch.pi / 180.0)
    cos, sin = radians.cos(), radians.sin()
    along_w = torch.stack((w * cos, -w * sin), dim=-1) / 2
    along_h = torch.stack((h * sin, h * cos), dim=-1) / 2
    return torch.stack(
        (-along_w - along_h, along_w - along_h, along_w + along_h, along_h - along_w), dim=-2
    )


def _cross(a: Tensor, b: Tensor) -> Tensor:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _next(points: Tensor, count: Tensor) -> tuple[Tensor, Tensor]:
    """The index of each corner's successor (cyclic within ``count``) and that corner."""
    index = (torch.arange(points.shape[1], device=points.device) + 1) % count.clamp(min=1)[:, None]
    return index, points.gather(1, index[..., None].expand(-1, -1, 2))


def _clip(points: Tensor, count: Tensor, start: Tensor, end: Tensor) -> tuple[Tensor, Tensor]:
    """Polygons [B, K, 2] (``count`` corners each) cut to the left of the lines start -> end."""
    size = points.shape[1]
    valid = torch.arange(size, device=points.device) < count[:, None]
    index, following = _next(points, count)
    side = _cross((end - start)[:, None], points - start[:, None])
    side_next = side.gather(1, index)
    inside, inside_next = side >= 0, side_next >= 0
    t = side / torch.where(inside != inside_next, side - side_next, torch.ones_like(side))
    crossing = points + t[..., None] * (following - points)
    candidates = torch.stack((points, crossing), dim=2).reshape(points.shape[0], 2 * size, 2)
    keep = torch.stack((valid & inside, valid & (inside != inside_next)), dim=2).flatten(1)
    order = torch.sort((~keep).to(torch.uint8), dim=1, stable=True).indices[:, : size + 1]
    return candidates.gather(1, order[..., None].expand(-1, -1, 2)), keep.sum(dim=1)


def _polygon_area(points: Tensor, count: Tensor) -> Tensor:
    _, following = _next(points, count)
    valid = torch.arange(points.shape[1], device=points.device) < count[:, None]
    return (_cross(points, following) * valid).sum(dim=1).abs() / 2


def _rotated_iou(boxes1: Tensor, boxes2: Tensor, fmt: str) -> Tensor:
    if not (boxes1.is_floating_point() and boxes2.is_floating_point()):
        raise TypeError(f"box_iou: rotated boxes must be floating point, got {boxes1.dtype}")
    if fmt != "cxcywhr":
        boxes1, boxes2 = box_convert(boxes1, fmt, "cxcywhr"), box_convert(boxes2, fmt, "cxcywhr")
    a, b = torch.broadcast_tensors(boxes1[..., :, None, :], boxes2[..., None, :, :])
    shape, a, b = a.shape[:-1], a.reshape(-1, 5), b.reshape(-1, 5)
    # About the midpoint of the two centres, for precision (as torchvision).
    half_gap = (a[:, :2] - b[:, :2]) / 2
    clipped, outline = (
        _corner_offsets(a) + half_gap[:, None],
        _corner_offsets(b) - half_gap[:, None],
    )
    # Keep the inside of each edge of the second box, whichever way its corners turn.
    turn = _cross(outline[:, 1] - outline[:, 0], outline[:, 2] - outline[:, 1])
    outline = torch.where((turn < 0)[:, None, None], outline.flip(1), outline)
    count = torch.full((a.shape[0],), 4, device=a.device)
    for k in range(4):
        clipped, count = _clip(clipped, count, outline[:, k], outline[:, (k + 1) % 4])
    inter = torch.where(count > 2, _polygon_area(clipped, count), torch.zeros_like(a[:, 0]))
    area1, area2 = a[:, 2] * a[:, 3], b[:, 2] * b[:, 3]
    union = area1 + area2 - inter
    iou = torch.where(union > 1e-14, inter / union, torch.zeros_like(inter)).clamp(0, 1)
    iou = torch.where((area1 < 1e-14) | (area2 < 1e-14), torch.zeros_like(iou), iou)
    return iou.reshape(shape)


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
