"""Rotated boxes (XYWHR, CXCYWHR, XYXYXYXY): formats, clamping, kernels, IoU vs torchvision."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from peers import require_torchvision
from scipy.spatial import ConvexHull

from trivium.vision import ops, tv_tensors
from trivium.vision import transforms as T
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


# Geometry kernels, on plain boxes with their format.

CORNERS = [[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]]
MOVED = [[3, 2], [W - 5, 1], [W - 2, H - 4], [1, H - 6]]
DISPLACEMENT = torch.randn(1, H, W, 2, generator=torch.Generator().manual_seed(0)) * 0.05

KERNELS = {
    "hflip": lambda m, b, f: m.horizontal_flip_bounding_boxes(b, f, (H, W)),
    "vflip": lambda m, b, f: m.vertical_flip_bounding_boxes(b, f, (H, W)),
    "resize": lambda m, b, f: m.resize_bounding_boxes(b, (H, W), [30, 90], format=f)[0],
    "crop": lambda m, b, f: m.crop_bounding_boxes(b, f, 5, -3, 30, 50, clamping_mode="hard")[0],
    "pad": lambda m, b, f: m.pad_bounding_boxes(b, f, (H, W), [2, 3, 4, 5])[0],
    "center_crop": lambda m, b, f: m.center_crop_bounding_boxes(b, f, (H, W), [20, 30])[0],
    "resized_crop": lambda m, b, f: m.resized_crop_bounding_boxes(b, f, 4, 6, 30, 40, [60, 50])[0],
    "affine": lambda m, b, f: m.affine_bounding_boxes(
        b, f, (H, W), 30.0, [3, -4], 1.2, [10.0, 5.0]
    ),
    "rotate": lambda m, b, f: m.rotate_bounding_boxes(b, f, (H, W), -57.0, center=[10.0, 20.0])[0],
    "perspective": lambda m, b, f: m.perspective_bounding_boxes(b, f, (H, W), CORNERS, MOVED),
    "elastic": lambda m, b, f: m.elastic_bounding_boxes(b, f, (H, W), DISPLACEMENT),
}


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_kernels_equal_torchvision(kernel):
    tv = require_torchvision()
    for name in ROTATED:
        boxes = in_format(random_cxcywhr(), name)
        fmt = tv.tv_tensors.BoundingBoxFormat[name]
        theirs = KERNELS[kernel](tv.transforms.v2.functional, boxes, fmt)
        ours = KERNELS[kernel](F, boxes, name)
        torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-5, equal_nan=True)


FUNCTIONALS = {
    "horizontal_flip": lambda m, b: m.horizontal_flip(b),
    "vertical_flip": lambda m, b: m.vertical_flip(b),
    "resize": lambda m, b: m.resize(b, [70, 50]),
    "crop": lambda m, b: m.crop(b, 4, 8, 30, 40),
    "center_crop": lambda m, b: m.center_crop(b, [30, 40]),
    "resized_crop": lambda m, b: m.resized_crop(b, 4, 8, 30, 40, [64, 64]),
    "pad": lambda m, b: m.pad(b, [3, 5]),
    "affine": lambda m, b: m.affine(b, angle=20.0, translate=[2, 1], scale=0.9, shear=[5.0]),
    "rotate": lambda m, b: m.rotate(b, 75.0),
    "perspective": lambda m, b: m.perspective(b, CORNERS, MOVED),
    "elastic": lambda m, b: m.elastic(b, DISPLACEMENT),
}


@pytest.mark.parametrize("mode", ["hard"])  # "soft", the default, in the kernel tests
def test_functionals_on_rotated_bounding_boxes_equal_torchvision(mode):
    tv = require_torchvision()
    for name, call in FUNCTIONALS.items():
        boxes = in_format(random_cxcywhr(12, seed=3), "XYWHR")
        theirs = call(tv.transforms.v2.functional, tv_boxes(tv, boxes, "XYWHR", mode=mode))
        ours = call(F, our_boxes(boxes, "XYWHR", mode=mode))
        assert ours.clamping_mode == mode, name
        assert_same_boxes(ours, theirs)


@pytest.mark.parametrize("angle", [33.0, 90.0, -57.0])
def test_rotate_expand_puts_rotated_boxes_on_the_rotated_image(angle):
    # The canvas is the rotated image's (as for axis-aligned boxes); torchvision's
    # box canvas can be a pixel wider, and its boxes sit up to half a pixel away.
    tv = require_torchvision()
    boxes = in_format(random_cxcywhr(dtype=torch.float64), "CXCYWHR")
    ours, size = F.rotate_bounding_boxes(
        boxes, "CXCYWHR", (H, W), angle, expand=True, clamping_mode=None
    )
    assert size == tuple(F.rotate(torch.zeros(1, H, W), angle, expand=True).shape[-2:])
    theirs, _ = tv.transforms.v2.functional.rotate_bounding_boxes(
        boxes, tv.tv_tensors.BoundingBoxFormat.CXCYWHR, (H, W), angle, expand=True,
        clamping_mode=None,
    )  # fmt: skip
    torch.testing.assert_close(ours, theirs, atol=0.5, rtol=0)


def test_rotated_boxes_are_checked_by_the_kernels():
    with pytest.raises(ValueError, match=r"\[\.\.\., 5\]"):
        F.affine_bounding_boxes(torch.zeros(2, 4), "CXCYWHR", (H, W), 10.0, [0, 0], 1.0, 0.0)
    with pytest.raises(TypeError, match="floating"):
        F.rotate_bounding_boxes(torch.zeros(2, 8, dtype=torch.int32), "XYXYXYXY", (H, W), 10.0)
    with pytest.raises(ValueError, match=r"\[\.\.\., 8\]"):
        F.horizontal_flip_bounding_boxes(torch.zeros(2, 5), "XYXYXYXY", (H, W))


# Sanitizing, and the transforms that take boxes.


def test_sanitize_keeps_rotated_boxes_with_their_sides_and_corners_on_the_canvas():
    boxes = torch.tensor(
        [
            [20.0, 20.0, 10.0, 6.0, 0.0],
            [20.0, 20.0, 10.0, 6.0, 90.0],  # torchvision 0.28 drops this one (see _valid_boxes)
            [20.0, 20.0, 10.0, 0.5, 30.0],  # too thin
            [2.0, 20.0, 10.0, 6.0, 30.0],  # a corner left of the canvas
            [30.0, 30.0, 8.0, 8.0, 45.0],  # a corner below the canvas
            [20.0, 20.0, 12.0, 12.0, -30.0],
        ]
    )
    expected = [True, True, False, False, False, True]
    sample = {"boxes": our_boxes(boxes, "CXCYWHR", canvas=(35, 40)), "labels": torch.arange(6)}
    out = T.SanitizeBoundingBoxes()(sample)
    assert out["labels"].tolist() == [i for i, keep in enumerate(expected) if keep]
    corners = F.convert_bounding_box_format(out["boxes"], new_format="XYXYXYXY")
    assert corners.min() >= 0 and corners[:, 0::2].max() <= 40 and corners[:, 1::2].max() <= 35
    tv = require_torchvision()  # where its side rule does not matter, the same boxes
    agree = boxes[[0, 3, 4, 5]]
    theirs = tv.transforms.v2.SanitizeBoundingBoxes()(
        {"boxes": tv_boxes(tv, agree, "CXCYWHR", (35, 40)), "labels": torch.arange(4)}
    )
    ours = T.SanitizeBoundingBoxes()(
        {"boxes": our_boxes(agree, "CXCYWHR", (35, 40)), "labels": torch.arange(4)}
    )
    assert ours["labels"].tolist() == theirs["labels"].tolist() == [0, 3]


def test_random_iou_crop_refuses_rotated_boxes_as_torchvision():
    boxes = our_boxes(random_cxcywhr(4), "CXCYWHR")
    t = T.RandomIoUCrop(sampler_options=[0.5], trials=1)
    with pytest.raises(ValueError, match="rotated"):
        t(tv_tensors.Image(torch.zeros(3, H, W)), boxes)


def test_a_pipeline_equals_torchvision():
    tv = require_torchvision()
    v2 = tv.transforms.v2
    image = torch.rand(3, H, W, generator=torch.Generator().manual_seed(5))
    boxes = random_cxcywhr(10, seed=4)
    theirs = v2.Compose(
        [v2.RandomRotation((25.0, 25.0)), v2.RandomHorizontalFlip(1.0), v2.Resize([40, 56])]
    )(tv.tv_tensors.Image(image), tv_boxes(tv, boxes, "CXCYWHR"))
    ours = T.Compose(
        [T.RandomRotation((25.0, 25.0)), T.RandomHorizontalFlip(1.0), T.Resize([40, 56])]
    )(tv_tensors.Image(image), our_boxes(boxes, "CXCYWHR"))
    torch.testing.assert_close(
        ours[0].as_subclass(torch.Tensor), theirs[0].as_subclass(torch.Tensor), atol=1e-4, rtol=0
    )
    assert_same_boxes(ours[1], theirs[1])


@pytest.mark.slow  # the first torch.compile of a process takes seconds
def test_the_kernels_compile():
    boxes = in_format(random_cxcywhr(8), "XYWHR")

    def chain(b: torch.Tensor) -> torch.Tensor:
        flipped = F.horizontal_flip_bounding_boxes(b, "XYWHR", (H, W))
        return F.resize_bounding_boxes(flipped, (H, W), [24, 48], format="XYWHR")[0]

    compiled = torch.compile(chain, backend="eager")  # resize clamps: the whole rotated path
    torch.testing.assert_close(compiled(boxes), chain(boxes), equal_nan=True)


def test_zoom_out_moves_rotated_boxes_with_the_image():
    image = tv_tensors.Image(torch.ones(1, H, W))
    boxes = our_boxes(random_cxcywhr(6, seed=7), "CXCYWHR")
    out_image, out_boxes = T.RandomZoomOut(
        side_range=(1.5, 2.0), p=1.0, generator=torch.Generator()
    )(image, boxes)
    ys, xs = out_image[0].as_subclass(torch.Tensor).nonzero(as_tuple=True)
    top, left = int(ys.min()), int(xs.min())
    bottom, right = out_image.shape[-2] - H - top, out_image.shape[-1] - W - left
    expected = F.pad(boxes, [left, top, right, bottom])
    assert out_boxes.canvas_size == tuple(out_image.shape[-2:]) == expected.canvas_size
    torch.testing.assert_close(
        out_boxes.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor)
    )


def test_convert_and_clamp_transforms_equal_torchvision():
    tv = require_torchvision()
    boxes = in_format(random_cxcywhr(10, seed=8), "XYWHR")
    for ours_t, theirs_t in (
        (
            T.ConvertBoundingBoxFormat("XYXYXYXY"),
            tv.transforms.v2.ConvertBoundingBoxFormat("XYXYXYXY"),
        ),
        (T.ClampBoundingBoxes("hard"), tv.transforms.v2.ClampBoundingBoxes("hard")),
    ):
        ours = ours_t(our_boxes(boxes, "XYWHR"))
        theirs = theirs_t(tv_boxes(tv, boxes, "XYWHR"))
        assert_same_boxes(ours, theirs)
