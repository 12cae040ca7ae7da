"""Rotated boxes (XYWHR, CXCYWHR, XYXYXYXY): formats, clamping, kernels, IoU vs torchvision."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from peers import require_torchvision
from scipy.spatial import ConvexHull

from trivium.vision import ops, tv_tensors
from trivium.vision.transforms import functional as F

ROTATED = ["CXCYWHR", "XYWHR", "XYXYXYXY"]
H, W = 48, 64


def random_cxcywhr(n: int = 40, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Boxes with centres up to 20 % past the canvas, some at angles near 0, 90 and 180 degrees."""
    g = torch.Generator().manual_seed(seed)
    centre = (torch.rand(n, 2, generator=g) * 1.4 - 0.2) * torch.tensor([W, H])
    sides = torch.rand(n, 2, generator=g) * 24 + 2
    angle = torch.rand(n, generator=g) * 360 - 180
    special = torch.tensor([0.0, 90.0, 180.0, -90.0, 1e-3, 89.999, 179.99, -179.99, 45.0, 270.0])
    angle[: min(n, len(special))] = special[:n]
    return torch.cat((centre, sides, angle[:, None]), dim=1).to(dtype)


def in_format(cxcywhr: torch.Tensor, name: str) -> torch.Tensor:
    tv = require_torchvision()
    return tv.transforms.v2.functional.convert_bounding_box_format(
        cxcywhr, old_format="CXCYWHR", new_format=name
    )


def tv_boxes(tv, boxes: torch.Tensor, name: str, canvas=(H, W), mode="soft"):
    return tv.tv_tensors.BoundingBoxes(boxes, format=name, canvas_size=canvas, clamping_mode=mode)


def our_boxes(boxes: torch.Tensor, name: str, canvas=(H, W), mode="soft"):
    return tv_tensors.BoundingBoxes(boxes, format=name, canvas_size=canvas, clamping_mode=mode)


def assert_same_boxes(ours, theirs, atol: float = 1e-4) -> None:
    assert type(ours) is tv_tensors.BoundingBoxes
    assert ours.format.value == theirs.format.value
    assert tuple(ours.canvas_size) == tuple(theirs.canvas_size)
    plain = ours.as_subclass(torch.Tensor)
    torch.testing.assert_close(plain, theirs.as_subclass(torch.Tensor), atol=atol, rtol=1e-5)


# The type and the formats.


def test_rotated_boxes_have_5_or_8_numbers_and_are_floating():
    assert tv_tensors.is_rotated_bounding_format("XYXYXYXY")
    assert not tv_tensors.is_rotated_bounding_format(tv_tensors.BoundingBoxFormat.XYWH)
    boxes = our_boxes(torch.zeros(5), "CXCYWHR")
    assert boxes.shape == (1, 5) and boxes.format is tv_tensors.BoundingBoxFormat.CXCYWHR
    with pytest.raises(ValueError, match="expected 8 numbers"):
        our_boxes(torch.zeros(2, 5), "XYXYXYXY")
    with pytest.raises(ValueError, match="expected 4 numbers"):
        our_boxes(torch.zeros(2, 5), "XYXY")
    with pytest.raises(ValueError, match="floating point"):
        our_boxes(torch.zeros(2, 5, dtype=torch.int64), "XYWHR")


@pytest.mark.parametrize(("old", "new"), list(itertools.product(ROTATED, ROTATED)))
def test_conversions_equal_torchvision(old, new):
    tv = require_torchvision()
    boxes = in_format(random_cxcywhr(), old)
    theirs = tv.transforms.v2.functional.convert_bounding_box_format(boxes, old, new)
    ours = F.convert_bounding_box_format(boxes, old, new)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)
    typed = F.convert_bounding_box_format(our_boxes(boxes, old), new_format=new)
    assert typed.format.value == new and typed.shape[-1] == ours.shape[-1]


@pytest.mark.parametrize(("old", "new"), list(itertools.permutations(ROTATED, 2)))
def test_conversions_round_trip(old, new):
    boxes = in_format(random_cxcywhr(dtype=torch.float64), old)
    back = F.convert_bounding_box_format(F.convert_bounding_box_format(boxes, old, new), new, old)
    if old == "XYXYXYXY":
        torch.testing.assert_close(back, boxes, atol=1e-9, rtol=0)
    else:  # the angle may come back as a turn away (atan2 is in (-180, 180])
        torch.testing.assert_close(back[:, :4], boxes[:, :4], atol=1e-9, rtol=0)
        turns = (back[:, 4] - boxes[:, 4]) / 360
        torch.testing.assert_close(turns, turns.round(), atol=1e-9, rtol=0)


def test_rotated_and_axis_aligned_do_not_convert_into_each_other():
    with pytest.raises(ValueError, match="rotated and axis-aligned"):
        F.convert_bounding_box_format(torch.zeros(1, 5), "CXCYWHR", "XYXY")
    with pytest.raises(NotImplementedError, match="rotated and axis-aligned"):
        ops.box_convert(torch.zeros(1, 4), "xyxy", "xywhr")
    with pytest.raises(ValueError, match=r"\[\.\.\., 5\]"):
        ops.box_convert(torch.zeros(1, 4), "cxcywhr", "xywhr")


@pytest.mark.parametrize(("old", "new"), list(itertools.permutations(ROTATED, 2)))
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_ops_box_convert_equals_torchvision(old, new, dtype):
    tv = require_torchvision()
    boxes = in_format(random_cxcywhr(dtype=torch.float64), old).mul(4).to(dtype)
    old, new = old.lower(), new.lower()
    theirs = tv.ops.box_convert(boxes, old, new)
    ours = ops.box_convert(boxes, old, new)
    assert ours.dtype == theirs.dtype
    torch.testing.assert_close(ours, theirs, atol=1e-4 if dtype.is_floating_point else 1, rtol=0)


# Clamping.


@pytest.mark.parametrize("name", ROTATED)
@pytest.mark.parametrize("mode", ["soft", "hard", None])
def test_clamp_equals_torchvision(name, mode):
    tv = require_torchvision()
    boxes = in_format(random_cxcywhr(dtype=torch.float64), name)
    theirs = tv.transforms.v2.functional.clamp_bounding_boxes(
        boxes, format=name, canvas_size=(H, W), clamping_mode=mode
    )
    ours = F.clamp_bounding_boxes(boxes, format=name, canvas_size=(H, W), clamping_mode=mode)
    torch.testing.assert_close(ours, theirs, atol=1e-9, rtol=0, equal_nan=True)
    typed = F.clamp_bounding_boxes(our_boxes(boxes, name, mode=mode))
    torch.testing.assert_close(typed.as_subclass(torch.Tensor), ours, equal_nan=True)


def test_hard_clamp_keeps_the_corners_on_the_canvas():
    boxes = torch.tensor([[60.0, 20.0, 20.0, 10.0, 30.0], [10.0, 40.0, 16.0, 30.0, -60.0]])
    corners = F.convert_bounding_box_format(
        F.clamp_bounding_boxes(boxes, "CXCYWHR", (H, W), "hard"), "CXCYWHR", "XYXYXYXY"
    )
    assert corners[:, 0::2].min() >= -1e-4 and corners[:, 0::2].max() <= W + 1e-4
    assert corners[:, 1::2].min() >= -1e-4 and corners[:, 1::2].max() <= H + 1e-4


# IoU.


def cross(a: np.ndarray, b: np.ndarray) -> float:
    return float(a[0] * b[1] - a[1] * b[0])


def reference_iou(a: list[float], b: list[float]) -> float:
    """The IoU of two CXCYWHR boxes from the hull of their overlap's corners (float64)."""

    def corners(box):
        cx, cy, w, h, r = box
        c, s = np.cos(np.radians(r)), np.sin(np.radians(r))
        u, v = np.array([w * c, -w * s]) / 2, np.array([h * s, h * c]) / 2
        centre = np.array([cx, cy])
        return [centre - u - v, centre + u - v, centre + u + v, centre - u + v]

    def inside(p, poly):
        signs = [cross(poly[(i + 1) % 4] - poly[i], p - poly[i]) for i in range(4)]
        return all(s >= -1e-9 for s in signs) or all(s <= 1e-9 for s in signs)

    pa, pb = corners(a), corners(b)
    points = [p for p in pa if inside(p, pb)] + [p for p in pb if inside(p, pa)]
    for i, j in itertools.product(range(4), range(4)):
        p, r = pa[i], pa[(i + 1) % 4] - pa[i]
        q, s = pb[j], pb[(j + 1) % 4] - pb[j]
        den = cross(r, s)
        if abs(den) > 1e-12:
            t, u = cross(q - p, s) / den, cross(q - p, r) / den
            if 0 <= t <= 1 and 0 <= u <= 1:
                points.append(p + t * r)
    inter = ConvexHull(np.array(points)).volume if len(points) > 2 else 0.0
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def test_rotated_iou_equals_the_polygon_overlap():
    first, second = random_cxcywhr(16, seed=1, dtype=torch.float64), random_cxcywhr(12, seed=2)
    second = torch.cat((second.double(), first[:3]))  # identical boxes too
    second[-1, :2] += 3.0
    ours = ops.box_iou(first, second, fmt="cxcywhr")
    expected = [[reference_iou(a, b) for b in second.tolist()] for a in first.tolist()]
    torch.testing.assert_close(ours, torch.tensor(expected, dtype=torch.float64), atol=1e-6, rtol=0)
    assert (ours > 0).sum() > 10  # the draw has overlaps
    for name in ("xywhr", "xyxyxyxy"):
        a = ops.box_convert(first, "cxcywhr", name)
        b = ops.box_convert(second, "cxcywhr", name)
        torch.testing.assert_close(ops.box_iou(a, b, fmt=name), ours, atol=1e-6, rtol=0)


def test_rotated_iou_edge_cases():
    square = torch.tensor([[5.0, 5.0, 4.0, 4.0, 0.0]])
    others = torch.tensor(
        [
            [5.0, 5.0, 4.0, 4.0, 90.0],  # the same square
            [9.0, 5.0, 4.0, 4.0, 0.0],  # touching along an edge
            [5.0, 5.0, 0.0, 4.0, 0.0],  # no area
            [50.0, 50.0, 4.0, 4.0, 10.0],  # far away
        ]
    )
    torch.testing.assert_close(
        ops.box_iou(square, others, "cxcywhr"),
        torch.tensor([[1.0, 0.0, 0.0, 0.0]]),
        atol=1e-6,
        rtol=0,
    )
    batched = ops.box_iou(others[None].expand(2, -1, -1), square[None].expand(2, -1, -1), "cxcywhr")
    assert batched.shape == (2, 4, 1)
    with pytest.raises(TypeError, match="floating point"):
        ops.box_iou(square.long(), square.long(), "cxcywhr")
