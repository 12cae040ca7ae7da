"""The non-maximum suppression kernels and their ``torch.library`` custom ops.

Two ops, each with a fake kernel of data-dependent output size, so that
:func:`trivium.vision.ops.nms` and :func:`trivium.vision.ops.batched_nms` run
inside ``torch.compile``:

* ``trivium::nms(boxes, scores, iou_threshold)``: the indices kept, by decreasing score.
* ``trivium::batched_nms_keep(boxes, scores, idxs, iou_threshold)``: the indices
  kept when boxes suppress only boxes of their own category, in increasing index
  order (:func:`~trivium.vision.ops.batched_nms` orders them by score).

Both follow torchvision's CPU kernel exactly: a stable descending sort of the
scores (ties: lower index first), then greedy suppression of every later box whose
IoU with a kept box is strictly greater than the threshold. The IoU is computed in
the boxes' dtype (float16 and bfloat16 in float32) as ``inter / (area_i + area_j -
inter)`` and compared with the threshold as a double, so the same boxes are kept.

On any device :func:`nms_torch` does the work with tensor ops, block by block; on
the CPU the native kernel of ``trivium.vision._C`` does it when it is built.

Example:
    >>> import torch
    >>> boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]])
    >>> torch.ops.trivium.nms(boxes, torch.tensor([0.9, 0.8, 0.7]), 0.5).tolist()
    [0, 2]
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = ["batched_nms_keep_op", "nms_op", "nms_torch"]

# Candidates are resolved this many at a time: one IoU block against the boxes kept
# so far, then a fixed point inside the block (a few passes for real detections).
_BLOCK = 256


def _compute_dtype_boxes(boxes: Tensor) -> Tensor:
    """The boxes in the dtype the IoU is computed in (float16/bfloat16 in float32)."""
    if boxes.dtype in (torch.float32, torch.float64):
        return boxes
    return boxes.float()


def threshold_for(dtype: torch.dtype, iou_threshold: float) -> float:
    """The threshold ``t`` for which ``iou > t`` in ``dtype`` is ``iou > iou_threshold`` in double.

    torchvision compares the float IoU with the double threshold; comparing a float32
    tensor with a Python float rounds the threshold to float32 first, which differs
    when the rounding goes up. The largest float32 at most the threshold does not.

    Example:
        >>> threshold_for(torch.float32, 0.3) < 0.3
        True
        >>> threshold_for(torch.float32, 0.5)
        0.5
    """
    if dtype == torch.float64:
        return float(iou_threshold)
    t = np.float32(iou_threshold)
    if float(t) > iou_threshold:
        t = np.nextafter(t, np.float32(-np.inf))
    return float(t)


def _overlaps(
    boxes_a: Tensor, areas_a: Tensor, boxes_b: Tensor, areas_b: Tensor, threshold: float
) -> Tensor:
    """``iou(a_i, b_j) > threshold`` as a [A, B] bool matrix, in torchvision's arithmetic."""
    w = torch.minimum(boxes_a[:, None, 2], boxes_b[None, :, 2])
    w.sub_(torch.maximum(boxes_a[:, None, 0], boxes_b[None, :, 0])).clamp_(min=0)
    h = torch.minimum(boxes_a[:, None, 3], boxes_b[None, :, 3])
    h.sub_(torch.maximum(boxes_a[:, None, 1], boxes_b[None, :, 1])).clamp_(min=0)
    inter = w.mul_(h)
    union = areas_a[:, None] + areas_b[None, :]
    union.sub_(inter)
    return inter.div_(union) > threshold


def _greedy_in_block(over: Tensor, alive: Tensor) -> Tensor:
    """The greedy keep mask of one block: box i is kept if alive and no kept j < i overlaps it.

    ``over[j, i]`` (j < i only) says box j would suppress box i. The greedy answer is
    the one fixed point of ``keep = alive & ~any_j(keep_j & over[j])``; iterating from
    ``alive`` fixes one more leading box per pass at least, so the loop ends.
    """
    keep = alive
    while True:
        suppressed = (over & keep[:, None]).any(0)
        new = alive & ~suppressed
        if torch.equal(new, keep):
            return keep
        keep = new


def nms_torch(
    boxes: Tensor, scores: Tensor, iou_threshold: float, idxs: Tensor | None = None
) -> Tensor:
    """Greedy NMS with tensor ops on the boxes' device; indices kept, by decreasing score.

    With ``idxs``, a box suppresses only boxes of the same category (per-category
    NMS; the result is still ordered by the one global stable sort of the scores).

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]])
        >>> nms_torch(boxes, torch.tensor([0.8, 0.9, 0.7]), 0.5).tolist()
        [1, 2]
        >>> nms_torch(boxes, torch.tensor([0.8, 0.9, 0.7]), 0.5, torch.tensor([0, 1, 0])).tolist()
        [1, 0, 2]
    """
    n = boxes.shape[0]
    if n == 0:
        return torch.empty(0, dtype=torch.int64, device=boxes.device)
    order = torch.sort(scores, stable=True, descending=True).indices
    b = _compute_dtype_boxes(boxes)[order]
    cls = None if idxs is None else idxs[order]
    threshold = threshold_for(b.dtype, iou_threshold)
    areas = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    kept: list[Tensor] = []
    kept_pos = torch.empty(0, dtype=torch.int64, device=b.device)
    for start in range(0, n, _BLOCK):
        stop = min(n, start + _BLOCK)
        blk_boxes, blk_areas = b[start:stop], areas[start:stop]
        alive = torch.ones(stop - start, dtype=torch.bool, device=b.device)
        if kept_pos.numel():
            over = _overlaps(b[kept_pos], areas[kept_pos], blk_boxes, blk_areas, threshold)
            if cls is not None:
                over &= cls[kept_pos, None] == cls[None, start:stop]
            alive = ~over.any(0)
        inner = _overlaps(blk_boxes, blk_areas, blk_boxes, blk_areas, threshold).triu_(1)
        if cls is not None:
            inner &= cls[start:stop, None] == cls[None, start:stop]
        new = _greedy_in_block(inner, alive).nonzero().squeeze(1) + start
        kept.append(new)
        kept_pos = torch.cat((kept_pos, new))
    return order[kept_pos]


def _native_kernel():  # a pybind11 function, or None
    try:
        from trivium.vision import _C
    except ImportError:
        return None
    return getattr(_C, "nms", None)


def _nms_cpu(
    boxes: Tensor, scores: Tensor, iou_threshold: float, idxs: Tensor | None, ascending: bool
) -> Tensor:
    """NMS by the native kernel (kept indices by score, or increasing with ``ascending``)."""
    native = _native_kernel()
    if native is None:
        keep = nms_torch(boxes, scores, iou_threshold, idxs)
        return _ascending(keep) if ascending else keep
    b = _compute_dtype_boxes(boxes).contiguous().numpy()
    order = torch.sort(scores, stable=True, descending=True).indices
    classes = None if idxs is None else idxs.to(torch.int64).contiguous().numpy()
    return torch.from_numpy(native(b, order.numpy(), float(iou_threshold), classes, ascending))


def _check_shapes(boxes: Tensor, scores: Tensor) -> None:
    torch._check(boxes.dim() == 2, lambda: f"boxes should be a 2d tensor, got {boxes.dim()}D")
    torch._check(
        boxes.size(1) == 4,
        lambda: f"boxes should have 4 elements in dimension 1, got {boxes.size(1)}",
    )
    torch._check(scores.dim() == 1, lambda: f"scores should be a 1d tensor, got {scores.dim()}")
    torch._check(
        boxes.size(0) == scores.size(0),
        lambda: (
            "boxes and scores should have the same length, got "
            f"{boxes.size(0)} and {scores.size(0)}"
        ),
    )


@torch.library.custom_op("trivium::nms", mutates_args=())
def nms_op(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """NMS as a custom op (see :func:`trivium.vision.ops.nms`); tensor ops on any device."""
    return nms_torch(boxes.detach(), scores.detach(), iou_threshold)


@nms_op.register_kernel("cpu")
def _(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    return _nms_cpu(boxes.detach(), scores.detach(), iou_threshold, None, False)


@nms_op.register_fake
def _(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    _check_shapes(boxes, scores)
    num_to_keep = torch.library.get_ctx().new_dynamic_size()
    return boxes.new_empty(num_to_keep, dtype=torch.int64)


def _ascending(keep: Tensor) -> Tensor:
    return keep.sort().values


@torch.library.custom_op("trivium::batched_nms_keep", mutates_args=())
def batched_nms_keep_op(
    boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float
) -> Tensor:
    """Per-category NMS as a custom op: the indices kept, in increasing order."""
    return _ascending(nms_torch(boxes.detach(), scores.detach(), iou_threshold, idxs))


@batched_nms_keep_op.register_kernel("cpu")
def _(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    return _nms_cpu(boxes.detach(), scores.detach(), iou_threshold, idxs, True)


@batched_nms_keep_op.register_fake
def _(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    _check_shapes(boxes, scores)
    num_to_keep = torch.library.get_ctx().new_dynamic_size()
    return boxes.new_empty(num_to_keep, dtype=torch.int64)
