"""Anchors, box coder, matcher and focal loss against torchvision's pure-Python classes."""

from __future__ import annotations

import importlib
import math

import pytest
import torch
from peers import require_torchvision

from trivium.vision import ops


@pytest.fixture(scope="module")
def tv_detection():
    require_torchvision()
    return (
        importlib.import_module("torchvision.models.detection.anchor_utils"),
        importlib.import_module("torchvision.models.detection._utils"),
        importlib.import_module("torchvision.models.detection.image_list"),
    )


def random_boxes(n: int, seed: int, dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g) * 200
    wh = torch.rand(n, 2, generator=g) * 100 + 1
    return torch.cat((xy, xy + wh), dim=1).to(dtype)


def assert_equal(got, expected) -> None:
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


RETINANET_SIZES = tuple((x, int(x * 2 ** (1 / 3)), int(x * 2 ** (2 / 3))) for x in (32, 64, 128))


@pytest.mark.parametrize(
    ("sizes", "ratios"),
    [
        (((128, 256, 512),), ((0.5, 1.0, 2.0),)),
        (RETINANET_SIZES, ((0.5, 1.0, 2.0),) * 3),
        ((16, 32, 64), (0.5, 1.0)),  # flat: one size per map, the same ratios for all
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_anchor_generator_equals_torchvision(tv_detection, sizes, ratios, dtype):
    anchor_utils, _, image_list = tv_detection
    ours, theirs = ops.AnchorGenerator(sizes, ratios), anchor_utils.AnchorGenerator(sizes, ratios)
    assert ours.num_anchors_per_location() == theirs.num_anchors_per_location()
    images = torch.zeros(2, 3, 96, 128)
    sizes_hw = [(96, 120), (90, 128)]
    grids = [(12, 16), (6, 8), (3, 4)][: len(ours.cell_anchors)]
    maps = [torch.zeros(2, 4, h, w, dtype=dtype) for h, w in grids]
    got = ours(ops.ImageList(images, sizes_hw), maps)
    expected = theirs(image_list.ImageList(images, sizes_hw), maps)
    assert len(got) == len(expected) == 2
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == dtype
        assert_equal(a, b)
    got[0].add_(1)  # one tensor per image
    assert not torch.equal(got[0], got[1])


def test_anchor_generator_rejects_mismatched_maps():
    gen = ops.AnchorGenerator(((32,), (64,)), ((1.0,), (1.0,)))
    with pytest.raises(ValueError, match="got 1 feature maps for anchors of 2"):
        gen(ops.ImageList(torch.zeros(1, 3, 32, 32), [(32, 32)]), [torch.zeros(1, 1, 4, 4)])
    with pytest.raises(ValueError, match="one entry per feature map, got 2 and 3"):
        ops.AnchorGenerator(((32,), (64,)), ((1.0,), (1.0,), (2.0,)))


def test_image_list():
    images = ops.ImageList(torch.zeros(2, 3, 8, 8), [(8, 6), (7, 8)])
    moved = images.to("cpu")
    assert isinstance(moved, ops.ImageList)
    assert moved.image_sizes == [(8, 6), (7, 8)]
    assert moved.tensors.shape == (2, 3, 8, 8)


@pytest.mark.parametrize("weights", [(1.0, 1.0, 1.0, 1.0), (10.0, 10.0, 5.0, 5.0)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_box_coder_equals_torchvision(tv_detection, weights, dtype):
    _, det_utils, _ = tv_detection
    ours, theirs = ops.BoxCoder(weights), det_utils.BoxCoder(weights)
    gt, anchors = random_boxes(500, 1, dtype), random_boxes(500, 2, dtype)
    assert_equal(ours.encode_single(gt, anchors), theirs.encode_single(gt, anchors))
    split = [gt[:200], gt[200:]], [anchors[:200], anchors[200:]]
    for a, b in zip(ours.encode(*split), theirs.encode(*split), strict=True):
        assert_equal(a, b)
    codes = torch.randn(500, 8, generator=torch.Generator().manual_seed(3), dtype=dtype) * 3
    codes[0, 2] = 50.0  # clamped at bbox_xform_clip before exp
    assert_equal(ours.decode_single(codes, anchors), theirs.decode_single(codes, anchors))
    per_image = [anchors[:300], anchors[300:]]
    assert_equal(ours.decode(codes, per_image), theirs.decode(codes, per_image))


def test_box_coder_round_trip_and_clip():
    coder = ops.BoxCoder((10.0, 10.0, 5.0, 5.0), bbox_xform_clip=math.log(2.0))
    gt, anchors = random_boxes(50, 4, torch.float64), random_boxes(50, 5, torch.float64)
    small = ops.BoxCoder((10.0, 10.0, 5.0, 5.0))
    torch.testing.assert_close(small.decode_single(small.encode_single(gt, anchors), anchors), gt)
    wide = coder.decode_single(
        torch.tensor([[0.0, 0.0, 100.0, 0.0]]), torch.tensor([[0.0, 0, 4, 4]])
    )
    assert wide.tolist() == [[-2.0, 0.0, 6.0, 4.0]]  # width 4 * exp(log 2)
    with pytest.raises(ValueError, match="same shape"):
        coder.encode_single(gt, anchors[:10])
    with pytest.raises(TypeError, match="list or tuple"):
        coder.decode(torch.zeros(1, 4), anchors)


@pytest.mark.parametrize("allow_low", [False, True])
@pytest.mark.parametrize(("high", "low"), [(0.5, 0.4), (0.7, 0.3), (0.5, 0.5)])
def test_matcher_equals_torchvision(tv_detection, allow_low, high, low):
    _, det_utils, _ = tv_detection
    ours, theirs = ops.Matcher(high, low, allow_low), det_utils.Matcher(high, low, allow_low)
    assert (ours.BELOW_LOW_THRESHOLD, ours.BETWEEN_THRESHOLDS) == (-1, -2)
    assert ops.Matcher.BELOW_LOW_THRESHOLD == -1 and ops.Matcher.BETWEEN_THRESHOLDS == -2
    for seed in range(3):
        quality = ops.box_iou(random_boxes(7, seed), random_boxes(400, seed + 10))
        quality[:, 5] = quality[:, 3]  # ties between predictions
        assert_equal(ours(quality.clone()), theirs(quality.clone()))
    quantised = (torch.rand(5, 300, generator=torch.Generator().manual_seed(1)) * 10).floor() / 10
    assert_equal(ours(quantised.clone()), theirs(quantised.clone()))


def test_matcher_rejects_bad_input():
    with pytest.raises(ValueError, match=r"low_threshold \(0.6\) must be <= high_threshold"):
        ops.Matcher(0.5, 0.6)
    matcher = ops.Matcher(0.5, 0.4)
    with pytest.raises(ValueError, match="No ground-truth boxes"):
        matcher(torch.zeros(0, 5))
    with pytest.raises(ValueError, match="No proposal boxes"):
        matcher(torch.zeros(3, 0))
    with pytest.raises(ValueError, match="must be \\[ground truths, predictions\\]"):
        matcher(torch.zeros(3))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize(("alpha", "gamma"), [(0.25, 2), (-1, 2), (0.5, 0), (1.0, 1.5)])
def test_sigmoid_focal_loss_equals_torchvision(reduction, alpha, gamma):
    tv = require_torchvision()
    g = torch.Generator().manual_seed(0)
    inputs = torch.randn(64, 91, generator=g, dtype=torch.float64) * 4
    targets = (torch.rand(64, 91, generator=g) < 0.1).to(torch.float64)
    grads = []
    for fn in (ops.sigmoid_focal_loss, tv.ops.sigmoid_focal_loss):
        x = inputs.clone().requires_grad_()
        loss = fn(x, targets, alpha=alpha, gamma=gamma, reduction=reduction)
        loss.sum().backward()
        grads.append((loss.detach(), x.grad))
    assert_equal(grads[0], grads[1])


def test_sigmoid_focal_loss_rejects_bad_input():
    x = torch.zeros(3)
    with pytest.raises(ValueError, match="alpha must be in"):
        ops.sigmoid_focal_loss(x, x, alpha=1.5)
    with pytest.raises(ValueError, match="reduction must be one of"):
        ops.sigmoid_focal_loss(x, x, reduction="max")
    with pytest.raises(ValueError, match=r"same shape, got \[3\] and \[4\]"):
        ops.sigmoid_focal_loss(x, torch.zeros(4))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_generalized_box_iou_loss_equals_torchvision(reduction):
    tv = require_torchvision()
    g = torch.Generator().manual_seed(0)
    xy = torch.rand(200, 2, generator=g, dtype=torch.float64) * 50
    wh = torch.rand(200, 2, generator=g, dtype=torch.float64) * 30
    a = torch.cat([xy, xy + wh], dim=1)
    b = a + torch.randn(200, 4, generator=g, dtype=torch.float64) * 10  # disjoint, degenerate
    b[:5] = a[:5]  # identical pairs: loss 0
    results = []
    for fn in (ops.generalized_box_iou_loss, tv.ops.generalized_box_iou_loss):
        x = a.clone().requires_grad_()
        loss = fn(x, b, reduction=reduction)
        loss.sum().backward()
        results.append((loss.detach(), x.grad))
    torch.testing.assert_close(results[0], results[1], rtol=1e-12, atol=1e-12)


def test_generalized_box_iou_loss_rejects_bad_input():
    with pytest.raises(ValueError, match="reduction must be"):
        ops.generalized_box_iou_loss(torch.zeros(1, 4), torch.zeros(1, 4), reduction="max")
    with pytest.raises(ValueError, match="4 coordinates"):
        ops.generalized_box_iou_loss(torch.zeros(1, 3), torch.zeros(1, 3))


@pytest.mark.parametrize("name", ["distance_box_iou_loss", "complete_box_iou_loss"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_distance_and_complete_box_iou_loss_equal_torchvision(name, reduction):
    tv = require_torchvision()
    g = torch.Generator().manual_seed(1)
    xy = torch.rand(200, 2, generator=g, dtype=torch.float64) * 50
    wh = torch.rand(200, 2, generator=g, dtype=torch.float64) * 30 + 0.1
    a = torch.cat([xy, xy + wh], dim=1)
    b = a + torch.randn(200, 4, generator=g, dtype=torch.float64) * 10
    b[:5] = a[:5]
    results = []
    for fn in (getattr(ops, name), getattr(tv.ops, name)):
        x, y = a.clone().requires_grad_(), b.clone().requires_grad_()
        loss = fn(x, y, reduction=reduction)
        loss.sum().backward()
        results.append((loss.detach(), x.grad, y.grad))
    torch.testing.assert_close(results[0], results[1], rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", ["distance_box_iou_loss", "complete_box_iou_loss"])
def test_distance_and_complete_box_iou_loss_dtypes_and_empty(name):
    tv = require_torchvision()
    a = torch.tensor([[0, 0, 4, 4], [1, 1, 3, 5]])
    b = torch.tensor([[1, 0, 5, 3], [0, 0, 2, 2]])
    for x, y in ((a, b), (a.half(), b.half()), (a[:0].float(), b[:0].float())):
        for reduction in ("none", "mean"):
            ours = getattr(ops, name)(x, y, reduction=reduction)
            theirs = getattr(tv.ops, name)(x, y, reduction=reduction)
            assert ours.dtype == theirs.dtype
            torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    with pytest.raises(ValueError, match="reduction must be"):
        getattr(ops, name)(a, b, reduction="max")
    with pytest.raises(ValueError, match="4 coordinates"):
        getattr(ops, name)(a[:, :3], b[:, :3])
