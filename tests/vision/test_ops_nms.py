"""nms and batched_nms against a NumPy greedy reference and torchvision's batched_nms."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from peers import require_torchvision

from trivium.vision.ops import batched_nms, nms
from trivium.vision.ops.boxes import _coordinate_trick
from trivium.vision.ops.nms_kernels import nms_torch

THRESHOLDS = [0.0, 0.3, 0.5, 0.7, 1.0]


def reference_nms(
    boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float, classes=None
) -> list[int]:
    """torchvision's CPU kernel, written out in NumPy: stable descending order, IoU > threshold.

    The IoU is computed in the boxes' dtype (float16 in float32) and compared with
    the threshold as a double, as the C++ kernel does.
    """
    b = (boxes.float() if boxes.dtype not in (torch.float32, torch.float64) else boxes).numpy()
    order = np.argsort(-scores.double().numpy(), kind="stable")
    x1, y1, x2, y2 = b.T
    areas = (x2 - x1) * (y2 - y1)
    zero = b.dtype.type(0)
    suppressed = np.zeros(len(b), dtype=bool)
    keep = []
    for pos, i in enumerate(order):
        if suppressed[i]:
            continue
        keep.append(int(i))
        rest = order[pos + 1 :]
        w = np.maximum(zero, np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]))
        h = np.maximum(zero, np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]))
        inter = w * h
        with np.errstate(invalid="ignore", divide="ignore"):
            iou = inter / (areas[i] + areas[rest] - inter)
        hit = iou.astype(np.float64) > iou_threshold
        if classes is not None:
            hit &= classes[rest] == classes[i]
        suppressed[rest[hit]] = True
    return keep


def reference_batched_nms(boxes, scores, idxs, iou_threshold) -> list[int]:
    """Per-category NMS, the kept indices ordered by decreasing score (ties: lower index)."""
    keep = reference_nms(boxes, scores, iou_threshold, classes=idxs.numpy())
    return sorted(keep, key=lambda i: (-float(scores[i]), i))


def assert_same_keep(keep: torch.Tensor, expected: list[int], scores: torch.Tensor) -> None:
    """The same indices, by decreasing score; equal scores in any order.

    Above 1000 boxes on the CPU torchvision orders the kept boxes with an unstable
    sort, so ties come in the order that sort leaves (compared with torchvision
    itself in test_batched_nms_equals_torchvision).
    """
    assert sorted(keep.tolist()) == sorted(expected)
    kept_scores = scores[keep]
    assert bool((kept_scores[:-1] >= kept_scores[1:]).all())


def tied_boxes(n: int, seed: int, dtype=torch.float32, grid: int = 6):
    """Boxes on a coarse integer grid (duplicates, exact IoU ties) and scores with many ties."""
    g = torch.Generator().manual_seed(seed)
    xy = torch.randint(0, grid, (n, 2), generator=g)
    wh = torch.randint(0, 4, (n, 2), generator=g)  # zero width or height too
    boxes = torch.cat((xy, xy + wh), dim=1).to(dtype)
    scores = torch.randint(0, 5, (n,), generator=g).float() / 4
    return boxes, scores


def random_boxes(n: int, seed: int, dtype=torch.float32):
    """Clustered boxes with continuous coordinates and distinct scores."""
    g = torch.Generator().manual_seed(seed)
    centers = torch.rand(max(1, n // 10), 2, generator=g) * 100
    xy = centers[torch.randint(0, centers.shape[0], (n,), generator=g)]
    xy = xy + torch.randn(n, 2, generator=g) * 3
    wh = torch.rand(n, 2, generator=g) * 20 + 5
    boxes = torch.cat((xy - wh / 2, xy + wh / 2), dim=1).to(dtype)
    return boxes, torch.rand(n, generator=g)


@pytest.mark.parametrize("threshold", THRESHOLDS)
@pytest.mark.parametrize("n", [2, 17, 300, 600])
def test_nms_equals_reference_with_ties(n, threshold):
    for seed in range(3):
        boxes, scores = tied_boxes(n, seed)
        expected = reference_nms(boxes, scores, threshold)
        assert nms(boxes, scores, threshold).tolist() == expected
        assert nms_torch(boxes, scores, threshold).tolist() == expected


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("threshold", [0.1, 0.3, 0.55, 0.7])
def test_nms_equals_reference_on_clusters(dtype, threshold):
    boxes, scores = random_boxes(700, seed=1, dtype=dtype)
    expected = reference_nms(boxes, scores, threshold)
    keep = nms(boxes, scores, threshold)
    assert keep.dtype == torch.int64
    assert keep.tolist() == expected
    assert nms_torch(boxes, scores, threshold).tolist() == expected


def test_nms_threshold_compared_as_double():
    # IoU exactly float32(0.3) = 0.30000001 is above the double 0.3: suppressed.
    boxes = torch.tensor([[0.0, 0.0, 10.0, 1.0], [0.0, 0.0, 3.0, 1.0]])
    iou = torch.tensor(3.0) / torch.tensor(10.0)
    assert iou.item() > 0.3
    scores = torch.tensor([1.0, 0.5])
    assert nms(boxes, scores, 0.3).tolist() == [0] == reference_nms(boxes, scores, 0.3)
    assert nms_torch(boxes, scores, 0.3).tolist() == [0]


def test_nms_edge_cases():
    empty = nms(torch.zeros(0, 4), torch.zeros(0), 0.5)
    assert empty.dtype == torch.int64 and empty.shape == (0,)
    assert nms(torch.tensor([[1.0, 1, 2, 2]]), torch.tensor([0.3]), 0.5).tolist() == [0]
    # Identical zero-area boxes: IoU is 0/0 (NaN), never above the threshold.
    points = torch.tensor([[1.0, 1, 1, 1]] * 3)
    assert nms(points, torch.tensor([0.1, 0.3, 0.2]), 0.0).tolist() == [1, 2, 0]
    # Equal scores and equal boxes: the lower index is kept.
    same = torch.tensor([[0.0, 0, 4, 4]] * 4)
    assert nms(same, torch.ones(4), 0.5).tolist() == [0]
    assert nms(same, torch.ones(4), 1.0).tolist() == [0, 1, 2, 3]


def test_nms_ignores_grad_and_accepts_integer_scores():
    boxes, scores = random_boxes(50, seed=3)
    expected = reference_nms(boxes, scores, 0.5)
    assert nms(boxes.requires_grad_(), scores.requires_grad_(), 0.5).tolist() == expected
    int_scores = torch.randint(0, 10, (50,))
    assert nms(boxes.detach(), int_scores, 0.5).tolist() == reference_nms(
        boxes.detach(), int_scores, 0.5
    )


@pytest.mark.parametrize(
    ("boxes", "scores", "error", "match"),
    [
        (torch.zeros(3, 5), torch.zeros(3), ValueError, r"boxes must have shape \[N, 4\]"),
        (torch.zeros(3, 4, 1), torch.zeros(3), ValueError, "boxes must have shape"),
        (torch.zeros(3, 4), torch.zeros(3, 1), ValueError, r"scores must have shape \[N\]"),
        (torch.zeros(3, 4), torch.zeros(2), ValueError, "same length, got 3 and 2"),
        (torch.zeros(3, 4, dtype=torch.int64), torch.zeros(3), TypeError, "floating-point"),
        ([[0.0, 0, 1, 1]], torch.zeros(1), TypeError, "must be tensors"),
    ],
)
def test_nms_rejects_bad_input(boxes, scores, error, match):
    with pytest.raises(error, match=match):
        nms(boxes, scores, 0.5)
    idxs = torch.zeros(3, dtype=torch.int64)
    with pytest.raises(error, match=match):
        batched_nms(boxes, scores, idxs, 0.5)


def test_batched_nms_rejects_bad_idxs():
    boxes, scores = random_boxes(4, seed=0)
    with pytest.raises(ValueError, match=r"idxs must have shape \[N\] with N = 4"):
        batched_nms(boxes, scores, torch.zeros(3, dtype=torch.int64), 0.5)
    with pytest.raises(TypeError, match="integer categories"):
        batched_nms(boxes, scores, torch.zeros(4), 0.5)
    with pytest.raises(TypeError, match="iou_threshold must be a number"):
        nms(boxes, scores, "0.5")


@pytest.mark.parametrize("n", [0, 1, 200, 1500])
@pytest.mark.parametrize("threshold", [0.0, 0.5, 0.8])
def test_batched_nms_equals_reference(n, threshold):
    boxes, scores = tied_boxes(n, seed=n, grid=12)
    idxs = torch.randint(0, 7, (n,), generator=torch.Generator().manual_seed(5))
    keep = batched_nms(boxes, scores, idxs, threshold)
    assert keep.dtype == torch.int64
    expected = reference_batched_nms(boxes, scores, idxs, threshold)
    if n <= 1000:
        assert keep.tolist() == expected
    else:
        assert_same_keep(keep, expected, scores)


@pytest.mark.parametrize("n", [300, 1200, 3000])
def test_batched_nms_equals_torchvision(monkeypatch, n):
    """torchvision's batched_nms (both of its strategies) driven by our nms: the same indices."""
    tv = require_torchvision()
    monkeypatch.setattr(tv.ops.boxes, "nms", nms)
    g = torch.Generator().manual_seed(n)
    for boxes, scores in (random_boxes(n, seed=n), tied_boxes(n, seed=n, grid=20)):
        idxs = torch.randint(0, 80, (n,), generator=g)
        for threshold in (0.3, 0.5, 0.7):
            expected = tv.ops.boxes.batched_nms(boxes, scores, idxs, threshold)
            torch.testing.assert_close(batched_nms(boxes, scores, idxs, threshold), expected)


def test_nms_and_batched_nms_under_torch_compile():
    boxes, scores = random_boxes(400, seed=7)
    idxs = torch.randint(0, 5, (400,), generator=torch.Generator().manual_seed(0))

    def detect(boxes, scores, idxs):
        keep = nms(boxes, scores, 0.5)
        per_class = batched_nms(boxes, scores, idxs, 0.5)
        return boxes[keep] * 2, per_class

    compiled = torch.compile(detect, fullgraph=False)
    for b, s, i in ((boxes, scores, idxs), (boxes[:300], scores[:300], idxs[:300])):
        got, expected = compiled(b, s, i), detect(b, s, i)
        torch.testing.assert_close(got[0], expected[0], rtol=0, atol=0)
        torch.testing.assert_close(got[1], expected[1])


def test_op_fake_kernel_has_data_dependent_size():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    with FakeTensorMode(shape_env=ShapeEnv()):
        keep = torch.ops.trivium.nms(torch.empty(10, 4), torch.empty(10), 0.5)
    assert keep.dtype == torch.int64 and keep.dim() == 1
    assert isinstance(keep.shape[0], torch.SymInt)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_cuda_matches_cpu(dtype):
    for n in (0, 1, 300, 5000):
        boxes, scores = random_boxes(n, seed=n, dtype=dtype)
        idxs = torch.randint(0, 80, (n,), generator=torch.Generator().manual_seed(n))
        for threshold in (0.3, 0.5, 0.7):
            expected = nms(boxes, scores, threshold)
            got = nms(boxes.cuda(), scores.cuda(), threshold)
            assert got.device.type == "cuda"
            torch.testing.assert_close(got.cpu(), expected)
            # Up to 25000 boxes torchvision (and so ours) offsets the boxes by category on CUDA.
            expected = _coordinate_trick(boxes, scores, idxs, threshold)
            got = batched_nms(boxes.cuda(), scores.cuda(), idxs.cuda(), threshold)
            torch.testing.assert_close(got.cpu(), expected)
        big = 30_000
        boxes, scores = random_boxes(big, seed=big, dtype=dtype)
        idxs = torch.randint(0, 80, (big,), generator=torch.Generator().manual_seed(big))
        expected = batched_nms(boxes, scores, idxs, 0.5)
        got = batched_nms(boxes.cuda(), scores.cuda(), idxs.cuda(), 0.5)
        torch.testing.assert_close(got.cpu(), expected)
    boxes, scores = tied_boxes(2000, seed=3)
    got = nms(boxes.cuda(), scores.cuda(), 0.5).cpu().tolist()
    assert got == reference_nms(boxes, scores, 0.5)


def test_native_kernel_equals_reference_and_checks_its_input():
    native = getattr(pytest.importorskip("trivium.vision._C"), "nms", None)
    if native is None:
        pytest.skip("trivium.vision._C was built without nms")
    boxes, scores = tied_boxes(400, seed=11, grid=10)
    classes = torch.randint(0, 4, (400,), generator=torch.Generator().manual_seed(2))
    order = torch.sort(scores, stable=True, descending=True).indices.numpy()
    for dtype in (torch.float32, torch.float64):
        b = boxes.to(dtype).numpy()
        assert native(b, order, 0.5).tolist() == reference_nms(boxes.to(dtype), scores, 0.5)
        expected = reference_nms(boxes.to(dtype), scores, 0.5, classes=classes.numpy())
        assert native(b, order, 0.5, classes.numpy()).tolist() == expected
        assert native(b, order, 0.5, classes.numpy(), ascending=True).tolist() == sorted(expected)
    b = boxes.numpy()
    with pytest.raises(ValueError, match="permutation"):
        native(b, order * 0, 0.5)
    with pytest.raises(ValueError, match=r"\[N, 4\]"):
        native(b[:, :3].copy(), order, 0.5)
    with pytest.raises(ValueError, match="classes must be"):
        native(b, order, 0.5, classes.numpy()[:5])
    with pytest.raises(TypeError, match="float32 or float64"):
        native(b.astype("float16"), order, 0.5)
