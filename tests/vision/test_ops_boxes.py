"""Box operators against torchvision's (pure Python), dtype for dtype."""

from __future__ import annotations

import itertools

import pytest
import torch
from peers import require_torchvision

from trivium.vision import ops

FORMATS = ["xyxy", "xywh", "cxcywh"]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.int16]


@pytest.fixture(scope="module")
def tv_ops():
    return require_torchvision().ops


def make_boxes(*shape: int, dtype=torch.float32, seed: int = 0) -> torch.Tensor:
    """xyxy boxes with positive sides (and some empty ones), of any leading shape."""
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(*shape, 2, generator=g) * 100
    wh = torch.rand(*shape, 2, generator=g) * 40
    wh[..., :1][torch.rand(*shape, 1, generator=g) < 0.1] = 0
    boxes = torch.cat((xy, xy + wh), dim=-1)
    if not dtype.is_floating_point:
        boxes = boxes.round()
    return boxes.to(dtype)


def assert_same(got: torch.Tensor, expected: torch.Tensor) -> None:
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("in_fmt", "out_fmt"), list(itertools.product(FORMATS, FORMATS)))
def test_box_convert(tv_ops, dtype, in_fmt, out_fmt):
    boxes = make_boxes(3, 5, dtype=dtype)
    got = ops.box_convert(boxes, in_fmt, out_fmt)
    assert_same(got, tv_ops.box_convert(boxes, in_fmt, out_fmt))
    if in_fmt == out_fmt:
        assert got.data_ptr() != boxes.data_ptr()


@pytest.mark.parametrize("dtype", [*DTYPES, torch.uint8])
@pytest.mark.parametrize("fmt", FORMATS)
def test_box_area(tv_ops, dtype, fmt):
    boxes = make_boxes(40, dtype=dtype)
    assert_same(ops.box_area(boxes, fmt), tv_ops.box_area(boxes, fmt))


@pytest.mark.parametrize("dtype", [*DTYPES, torch.uint8])
@pytest.mark.parametrize("fmt", FORMATS)
def test_box_iou(tv_ops, dtype, fmt):
    a, b = make_boxes(30, dtype=dtype, seed=1), make_boxes(20, dtype=dtype, seed=2)
    assert_same(ops.box_iou(a, b, fmt), tv_ops.box_iou(a, b, fmt))


@pytest.mark.parametrize("dtype", DTYPES)
def test_generalized_box_iou(tv_ops, dtype):
    a, b = make_boxes(30, dtype=dtype, seed=3), make_boxes(25, dtype=dtype, seed=4)
    assert_same(ops.generalized_box_iou(a, b), tv_ops.generalized_box_iou(a, b))


def test_batched_leading_dims(tv_ops):
    a, b = make_boxes(2, 3, 7, seed=5), make_boxes(2, 3, 4, seed=6)
    assert_same(ops.box_iou(a, b), tv_ops.box_iou(a, b))
    assert_same(ops.generalized_box_iou(a, b), tv_ops.generalized_box_iou(a, b))
    assert ops.box_iou(a, b).shape == (2, 3, 7, 4)


def test_empty_sets(tv_ops):
    a, b = torch.zeros(0, 4), make_boxes(3)
    assert_same(ops.box_iou(a, b), tv_ops.box_iou(a, b))
    assert_same(ops.box_iou(b, a), tv_ops.box_iou(b, a))
    assert_same(ops.box_area(a), tv_ops.box_area(a))


@pytest.mark.parametrize("fn", ["box_iou", "generalized_box_iou"])
def test_gradients_equal_torchvision(tv_ops, fn):
    a, b = make_boxes(6, dtype=torch.float64, seed=7), make_boxes(5, dtype=torch.float64, seed=8)
    grads = []
    for lib in (ops, tv_ops):
        x, y = a.clone().requires_grad_(), b.clone().requires_grad_()
        (getattr(lib, fn)(x, y) * torch.arange(5.0, dtype=torch.float64)).sum().backward()
        grads.append((x.grad, y.grad))
    torch.testing.assert_close(grads[0], grads[1], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_clip_boxes_to_image(tv_ops, dtype):
    boxes = (make_boxes(4, 10, dtype=torch.float32) - 30).to(dtype)
    assert_same(
        ops.clip_boxes_to_image(boxes, (50, 60)), tv_ops.clip_boxes_to_image(boxes, (50, 60))
    )


@pytest.mark.parametrize("min_size", [0.0, 1.0, 10.0, 25.5])
def test_remove_small_boxes(tv_ops, min_size):
    boxes = make_boxes(100, seed=9)
    assert_same(ops.remove_small_boxes(boxes, min_size), tv_ops.remove_small_boxes(boxes, min_size))


def test_bad_input_raises():
    boxes = make_boxes(3)
    with pytest.raises(ValueError, match="in_fmt must be one of"):
        ops.box_convert(boxes, "yxyx", "xyxy")
    with pytest.raises(ValueError, match="out_fmt must be one of"):
        ops.box_convert(boxes, "xyxy", "yxyx")
    with pytest.raises(ValueError, match="fmt must be one of"):
        ops.box_area(boxes, "xyxyxyxy")
    with pytest.raises(ValueError, match=r"boxes2 must have shape \[..., 4\], got \[3, 5\]"):
        ops.box_iou(boxes, torch.zeros(3, 5))
    with pytest.raises(TypeError, match="boxes1 must be a tensor"):
        ops.generalized_box_iou([[0, 0, 1, 1]], boxes)
    with pytest.raises(ValueError, match=r"size must be \(height, width\)"):
        ops.clip_boxes_to_image(boxes, (10,))
    with pytest.raises(ValueError, match="boxes must have shape"):
        ops.remove_small_boxes(torch.zeros(4, 3), 1.0)


@pytest.mark.parametrize("fn", ["distance_box_iou", "complete_box_iou"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64])
def test_distance_and_complete_box_iou(tv_ops, fn, dtype):
    a, b = make_boxes(2, 30, dtype=dtype, seed=9), make_boxes(2, 25, dtype=dtype, seed=10)
    ours, theirs = getattr(ops, fn)(a, b), getattr(tv_ops, fn)(a, b)
    assert ours.shape == (2, 30, 25)
    assert_same(ours, theirs)
    assert_same(getattr(ops, fn)(a, b, eps=1e-3), getattr(tv_ops, fn)(a, b, eps=1e-3))


@pytest.mark.parametrize("fn", ["distance_box_iou", "complete_box_iou"])
def test_distance_and_complete_box_iou_gradients(tv_ops, fn):
    a, b = make_boxes(6, dtype=torch.float64, seed=11), make_boxes(5, dtype=torch.float64, seed=12)
    grads = []
    for lib in (ops, tv_ops):
        x, y = a.clone().requires_grad_(), b.clone().requires_grad_()
        (getattr(lib, fn)(x, y) * torch.arange(5.0, dtype=torch.float64)).sum().backward()
        grads.append((x.grad, y.grad))
    torch.testing.assert_close(grads[0], grads[1], rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.float32])
def test_masks_to_boxes(tv_ops, dtype):
    g = torch.Generator().manual_seed(13)
    masks = torch.zeros(6, 20, 30, dtype=dtype)
    for i in range(5):
        y, x = torch.randint(0, 15, (2,), generator=g).tolist()
        masks[i, y : y + 1 + i, x : x + 2 * i + 1] = 1  # mask 0 is one pixel; mask 5 is empty
    masks[3, 19, 29] = 1  # a stray pixel in the corner
    got = ops.masks_to_boxes(masks)
    assert_same(got, tv_ops.masks_to_boxes(masks))
    assert got[5].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert_same(ops.masks_to_boxes(masks[:0]), tv_ops.masks_to_boxes(masks[:0]))


def test_masks_to_boxes_rejects_bad_input():
    with pytest.raises(ValueError, match=r"\[N, H, W\]"):
        ops.masks_to_boxes(torch.ones(4, 4))
    with pytest.raises(TypeError, match="masks must be a tensor"):
        ops.masks_to_boxes([[1]])
