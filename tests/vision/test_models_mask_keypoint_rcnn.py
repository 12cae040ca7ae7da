"""Mask R-CNN and Keypoint R-CNN against torchvision's; bad targets of the R-CNN detectors.

As in ``test_models_faster_rcnn.py``, torchvision's Python models run on the
project's ``nms`` and ``roi_align`` in place of its C++ ops (which do not load here;
``tests/vision/test_ops_boxes.py`` and ``tests/vision/test_ops_roi.py`` check them
equal to torchvision's). The models are small (a ResNet-18 FPN, narrow mask and
keypoint heads, few detections) so that the comparison is quick; the heads' code is
the same at any width.
"""

from __future__ import annotations

import sys

import pytest
import torch
from peers import require_torchvision

from trivium.vision import ops
from trivium.vision.models import detection
from trivium.vision.models.backbone_utils import resnet_fpn_backbone
from trivium.vision.ops import FrozenBatchNorm2d

pytestmark = pytest.mark.usefixtures("one_thread")

SMALL = {
    "min_size": 96,
    "max_size": 128,
    "rpn_pre_nms_top_n_train": 300,
    "rpn_post_nms_top_n_train": 100,
    "rpn_pre_nms_top_n_test": 300,
    "rpn_post_nms_top_n_test": 100,
    "box_batch_size_per_image": 64,
    "box_detections_per_img": 12,
}


@pytest.fixture(scope="module")
def tv():
    torchvision = require_torchvision()
    with pytest.MonkeyPatch.context() as mp:
        # The C++ ops replaced by the project's equal implementations (see the docstring).
        mp.setattr(sys.modules["torchvision.ops.boxes"], "nms", ops.nms)
        mp.setattr(sys.modules["torchvision.ops.poolers"], "roi_align", ops.roi_align)
        roi_heads = sys.modules["torchvision.models.detection.roi_heads"]
        mp.setattr(roi_heads, "roi_align", ops.roi_align)
        yield torchvision


def _backbone(tv=None):
    if tv is None:
        return resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5)
    return tv.models.detection.backbone_utils.resnet_fpn_backbone(
        backbone_name="resnet18", weights=None, trainable_layers=5
    )


def _mask_model(lib, backbone):
    return lib.MaskRCNN(
        backbone,
        box_predictor=lib.faster_rcnn.FastRCNNPredictor(1024, 3),
        mask_head=lib.mask_rcnn.MaskRCNNHeads(256, (32, 32), 1),
        mask_predictor=lib.mask_rcnn.MaskRCNNPredictor(32, 16, 3),
        **SMALL,
    )


def _keypoint_model(lib, backbone):
    return lib.KeypointRCNN(
        backbone,
        box_predictor=lib.faster_rcnn.FastRCNNPredictor(1024, 2),
        keypoint_head=lib.keypoint_rcnn.KeypointRCNNHeads(256, (32, 32)),
        keypoint_predictor=lib.keypoint_rcnn.KeypointRCNNPredictor(32, 4),
        box_score_thresh=0.0,
        **SMALL,
    )


def _pair(tv, build):
    torch.manual_seed(0)
    theirs = build(tv.models.detection, _backbone(tv))
    ours = build(detection, _backbone())
    ours.load_state_dict(theirs.state_dict(), strict=True)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    return ours, theirs


@pytest.fixture(scope="module")
def mask_pair(tv):
    return _pair(tv, _mask_model)


@pytest.fixture(scope="module")
def keypoint_pair(tv):
    return _pair(tv, _keypoint_model)


def _images(seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(3, 96, 128, generator=g), torch.rand(3, 112, 90, generator=g)]


BOXES = [
    torch.tensor([[8.0, 10.0, 60.0, 70.0], [50.0, 20.0, 120.0, 90.0]]),
    torch.tensor([[20.0, 30.0, 80.0, 100.0]]),
]


def _mask_targets() -> list[dict[str, torch.Tensor]]:
    targets = []
    for boxes, (h, w), labels in zip(BOXES, [(96, 128), (112, 90)], [[1, 2], [2]], strict=True):
        masks = torch.zeros(len(boxes), h, w, dtype=torch.uint8)
        for m, (x1, y1, x2, y2) in zip(masks, boxes.int().tolist(), strict=True):
            m[y1 + 5 : y2 - 5, x1 : (x1 + x2) // 2] = 1  # not the whole box
        targets.append({"boxes": boxes, "labels": torch.tensor(labels), "masks": masks})
    return targets


def _keypoint_targets() -> list[dict[str, torch.Tensor]]:
    targets = []
    g = torch.Generator().manual_seed(4)
    for boxes in BOXES:
        lo, hi = boxes[:, None, :2], boxes[:, None, 2:]
        xy = lo + torch.rand(len(boxes), 4, 2, generator=g) * (hi - lo)
        visible = torch.tensor([1.0, 2.0, 0.0, 1.0]).expand(len(boxes), 4)[..., None]
        keypoints = torch.cat([xy, visible], dim=2)
        targets.append(
            {
                "boxes": boxes,
                "labels": torch.ones(len(boxes), dtype=torch.int64),
                "keypoints": keypoints,
            }
        )
    return targets


def _assert_same(out, expected, keys):
    for got, want in zip(out, expected, strict=True):
        assert sorted(got) == sorted(want) == sorted(keys)
        assert len(want["boxes"]) > 2  # the comparison is not vacuous
        assert torch.equal(got["labels"], want["labels"])
        torch.testing.assert_close(got["boxes"], want["boxes"], rtol=0, atol=1e-4)
        for key in keys:
            if key not in ("boxes", "labels"):
                torch.testing.assert_close(got[key], want[key], rtol=0, atol=1e-4, msg=key)


def _assert_same_training(ours, theirs, images, targets, loss_key):
    ours.train(), theirs.train()
    torch.manual_seed(7)  # the same draws: transform size, both samplers
    losses = ours(images, targets)
    torch.manual_seed(7)
    expected = theirs(images, targets)
    assert loss_key in expected and sorted(losses) == sorted(expected)
    for key in expected:
        torch.testing.assert_close(losses[key], expected[key], rtol=1e-5, atol=1e-6, msg=key)
    assert expected[loss_key].item() > 0
    sum(losses.values()).backward()
    sum(expected.values()).backward()
    ours_params = dict(ours.named_parameters())
    for name, param in theirs.named_parameters():
        if name.startswith("roi_heads.") and param.grad is not None:
            torch.testing.assert_close(ours_params[name].grad, param.grad, rtol=1e-3, atol=1e-5)
    head = "mask_head.0.0" if loss_key == "loss_mask" else "keypoint_head.0"
    assert ours_params[f"roi_heads.{head}.weight"].grad.abs().sum() > 0  # the branch learns
    ours.zero_grad(), theirs.zero_grad()


def test_mask_rcnn_eval_matches_torchvision(mask_pair):
    ours, theirs = mask_pair
    ours.eval(), theirs.eval()
    images = _images()
    with torch.inference_mode():
        out, expected = ours(images), theirs(images)
    _assert_same(out, expected, ["boxes", "labels", "scores", "masks"])
    for got, image in zip(out, images, strict=True):
        assert got["masks"].shape[1:] == (1, *image.shape[-2:])  # pasted into the input image


@pytest.mark.slow
def test_mask_rcnn_training_matches_torchvision(mask_pair):
    _assert_same_training(*mask_pair, _images(1), _mask_targets(), "loss_mask")


def test_keypoint_rcnn_eval_matches_torchvision(keypoint_pair):
    ours, theirs = keypoint_pair
    ours.eval(), theirs.eval()
    images = _images(2)
    with torch.inference_mode():
        out, expected = ours(images), theirs(images)
    _assert_same(out, expected, ["boxes", "labels", "scores", "keypoints", "keypoints_scores"])
    assert out[0]["keypoints"].shape[1:] == (4, 3)


@pytest.mark.slow
def test_keypoint_rcnn_training_matches_torchvision(keypoint_pair):
    _assert_same_training(*keypoint_pair, _images(3), _keypoint_targets(), "loss_keypoint")


def test_paste_masks_and_heatmaps_match_torchvision(tv):
    roi_heads = tv.models.detection.roi_heads
    g = torch.Generator().manual_seed(1)
    masks = torch.rand(6, 1, 28, 28, generator=g)
    xy = torch.rand(6, 2, generator=g) * 60 - 10
    boxes = torch.cat([xy, xy + 5 + torch.rand(6, 2, generator=g) * 50], dim=1)
    torch.testing.assert_close(
        detection.paste_masks_in_image(masks, boxes, (50, 70)),
        roi_heads.paste_masks_in_image(masks, boxes, (50, 70)),
        rtol=0,
        atol=0,
    )
    empty = detection.paste_masks_in_image(masks[:0], boxes[:0], (50, 70))
    assert empty.shape == (0, 1, 50, 70)
    maps = torch.randn(6, 3, 56, 56, generator=g)
    for got, want in zip(
        detection.heatmaps_to_keypoints(maps, boxes),
        roi_heads.heatmaps_to_keypoints(maps, boxes),
        strict=True,
    ):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.fixture(scope="module")
def small_mask():
    torch.manual_seed(0)
    return _mask_model(detection, _backbone())


@pytest.fixture(scope="module")
def small_keypoint():
    torch.manual_seed(0)
    return _keypoint_model(detection, _backbone())


BAD_TARGETS = [
    (lambda t: t[0].pop("labels"), ValueError, r"targets\[0\] has no 'labels'"),
    (
        lambda t: t[1].update(boxes=torch.tensor([[30.0, 20.0, 10.0, 90.0]])),
        ValueError,
        r"positive height and width.*index 1",
    ),
    (lambda t: t[0].update(labels=torch.tensor([1, 3])), ValueError, r"in \[0, 3\)"),
    (lambda t: t[0].update(boxes=torch.tensor([[8, 8, 60, 50]])), TypeError, "floating point"),
    (lambda t: t[1].pop("masks"), ValueError, r"targets\[1\] has no 'masks'"),
    (
        lambda t: t[0].update(masks=torch.zeros(1, 96, 128)),
        ValueError,
        r"masks of shape \[2, H, W\]",
    ),
    (lambda t: t.pop(), ValueError, "2 images, got 1"),
]


@pytest.mark.parametrize(("change", "error", "message"), BAD_TARGETS)
def test_mask_rcnn_refuses_bad_targets(small_mask, change, error, message):
    model = small_mask.train()
    targets = _mask_targets()
    change(targets)
    with pytest.raises(error, match=message):
        model(_images(), targets)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda t: t[0].pop("keypoints"), ValueError, r"targets\[0\] has no 'keypoints'"),
        (
            lambda t: t[1].update(keypoints=torch.zeros(1, 3, 3)),
            ValueError,
            r"keypoints of shape \[1, 4, 3\]",
        ),
        (
            lambda t: t[0].update(keypoints=t[0]["keypoints"].double()),
            TypeError,
            "float32",
        ),
    ],
)
def test_keypoint_rcnn_refuses_bad_targets(small_keypoint, change, error, message):
    model = small_keypoint.train()
    targets = _keypoint_targets()
    change(targets)
    with pytest.raises(error, match=message):
        model(_images(), targets)
    with pytest.raises(ValueError, match="targets should not be none"):
        model(_images())


@pytest.mark.slow
def test_mask_rcnn_trains_on_an_image_without_objects(small_mask):
    model = small_mask.train()
    targets = _mask_targets()
    targets[1] = {
        "boxes": torch.zeros(0, 4),
        "labels": torch.zeros(0, dtype=torch.int64),
        "masks": torch.zeros(0, 112, 90, dtype=torch.uint8),
    }
    losses = model(_images(), targets)
    assert all(torch.isfinite(v) for v in losses.values())
    sum(losses.values()).backward()
    small_mask.zero_grad()


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2", "keypointrcnn_resnet50_fpn"]
)
def test_resnet50_builders_load_torchvision_checkpoints(tv, name, tmp_path):
    theirs = getattr(tv.models.detection, name)(weights=None, weights_backbone=None)
    ours = getattr(detection, name)()
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    ours.load_state_dict(theirs.state_dict(), strict=True)
    path = tmp_path / f"{name}.pth"
    state = theirs.state_dict()
    torch.save(state, path)
    model = getattr(detection, name)(weights=path)
    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key]), key
    frozen = [m for m in model.modules() if isinstance(m, FrozenBatchNorm2d)]
    assert bool(frozen) == (not name.endswith("_v2"))
    assert all(m.eps == 0.0 for m in frozen)
    if name.startswith("keypoint"):
        assert model.roi_heads.keypoint_predictor.out_channels == 17
        assert model.roi_heads.box_predictor.cls_score.out_features == 2
        with pytest.raises(ValueError, match="num_keypoints=5 was given"):
            detection.keypointrcnn_resnet50_fpn(weights=path, num_keypoints=5)
    else:
        assert model.roi_heads.mask_predictor.mask_fcn_logits.out_channels == 91
