"""Faster R-CNN against torchvision's: same state dicts, detections, losses and gradients.

torchvision's detection models are its pure-Python code (see ``tests/peers.py``);
its ``nms`` and ``roi_align`` are C++ ops that do not load here, so the tests point
torchvision's Python code at the project's ``nms`` and ``roi_align``, which
``tests/vision/test_ops_boxes.py`` and ``tests/vision/test_ops_roi.py`` check equal to
torchvision's (against its kernels' arithmetic and its pure-Python ``_roi_align``).
Everything else in the comparison (anchors, RPN, sampling, RoI heads, losses,
postprocessing) is torchvision's own code against this project's.
"""

from __future__ import annotations

import sys

import pytest
import torch
from peers import require_torchvision

from trivium.vision import ops
from trivium.vision.models import detection
from trivium.vision.models.backbone_utils import BackboneWithFPN, resnet_fpn_backbone
from trivium.vision.ops import FrozenBatchNorm2d

pytestmark = pytest.mark.usefixtures("one_thread")

SMALL = {
    "min_size": 96,
    "max_size": 128,
    "rpn_pre_nms_top_n_train": 300,
    "rpn_post_nms_top_n_train": 150,
    "rpn_pre_nms_top_n_test": 300,
    "rpn_post_nms_top_n_test": 100,
    "box_batch_size_per_image": 64,
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


def _resnet18_fpn(tv=None, norm_layer=None) -> BackboneWithFPN:
    """A ResNet-18 FPN backbone from torchvision (``tv``) or from here, trainable throughout."""
    if tv is None:
        backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5)
    else:
        utils = tv.models.detection.backbone_utils
        backbone = utils.resnet_fpn_backbone(
            backbone_name="resnet18", weights=None, trainable_layers=5
        )
    if norm_layer is not None:  # the v2 models' FPN has BatchNorm; rebuild it so
        fpn_type = type(backbone.fpn)
        backbone.fpn = fpn_type([64, 128, 256, 512], 256, backbone.fpn.extra_blocks, norm_layer)
    return backbone


def _pair(tv, v2: bool = False):
    """torchvision's FasterRCNN on a ResNet-18 FPN (random init) and ours with its state dict."""
    tvd = tv.models.detection

    def heads(mod, rpn_head, conv_fc_head):
        if not v2:
            return {}
        return {
            "rpn_head": rpn_head(256, 3, conv_depth=2),
            "box_head": conv_fc_head((256, 7, 7), [32, 32], [128], norm_layer=torch.nn.BatchNorm2d),
            "box_predictor": mod.FastRCNNPredictor(128, 3),
        }

    norm = torch.nn.BatchNorm2d if v2 else None
    torch.manual_seed(0)
    tv_extra = heads(tvd.faster_rcnn, tvd.rpn.RPNHead, tvd.faster_rcnn.FastRCNNConvFCHead)
    classes = None if v2 else 3
    theirs = tvd.FasterRCNN(_resnet18_fpn(tv, norm), classes, **SMALL, **tv_extra)
    our_extra = heads(detection, detection.RPNHead, detection.FastRCNNConvFCHead)
    ours = detection.FasterRCNN(_resnet18_fpn(None, norm), classes, **SMALL, **our_extra)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return ours, theirs


@pytest.fixture(scope="module")
def pair(tv):
    return _pair(tv)


def _images(seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(3, 96, 128, generator=g), torch.rand(3, 112, 90, generator=g)]


def _targets() -> list[dict[str, torch.Tensor]]:
    return [
        {
            "boxes": torch.tensor([[8.0, 10.0, 60.0, 70.0], [50.0, 20.0, 120.0, 90.0]]),
            "labels": torch.tensor([1, 2]),
        },
        {"boxes": torch.tensor([[20.0, 30.0, 80.0, 100.0]]), "labels": torch.tensor([2])},
    ]


def test_module_names_and_state_dict_match_torchvision(pair):
    ours, theirs = pair
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    ours_state, tv_state = ours.state_dict(), theirs.state_dict()
    assert list(ours_state) == list(tv_state)
    assert all(ours_state[k].shape == v.shape for k, v in tv_state.items())


def _assert_same_detections(out, expected, images, atol=1e-4):
    assert len(out) == len(expected) == len(images)
    for got, want, image in zip(out, expected, images, strict=True):
        assert sorted(got) == sorted(want)
        assert len(want["boxes"]) > 5  # the comparison is not vacuous
        assert got["boxes"].shape == want["boxes"].shape
        torch.testing.assert_close(got["boxes"], want["boxes"], rtol=0, atol=atol)
        torch.testing.assert_close(got["scores"], want["scores"], rtol=0, atol=1e-5)
        assert torch.equal(got["labels"], want["labels"])
        h, w = image.shape[-2:]
        assert float(got["boxes"][:, 2].max()) <= w and float(got["boxes"][:, 3].max()) <= h


def test_eval_detections_match_torchvision(pair):
    ours, theirs = pair
    ours.eval(), theirs.eval()
    images = _images()
    with torch.inference_mode():
        _assert_same_detections(ours(images), theirs(images), images)


@pytest.mark.slow
def test_train_losses_and_gradients_match_torchvision(pair):
    ours, theirs = pair
    ours.train(), theirs.train()
    images = _images(1)
    targets = _targets()
    targets[1] = {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.int64)}
    # The same seed: the transform's size choice and the samplers' randperm draw alike.
    torch.manual_seed(5)
    losses = ours(images, targets)
    torch.manual_seed(5)
    expected = theirs(images, targets)
    assert (
        sorted(losses)
        == sorted(expected)
        == [
            "loss_box_reg",
            "loss_classifier",
            "loss_objectness",
            "loss_rpn_box_reg",
        ]
    )
    for key in expected:
        assert expected[key].item() > 0, key
        torch.testing.assert_close(losses[key], expected[key], rtol=1e-5, atol=1e-6)
    sum(losses.values()).backward()
    sum(expected.values()).backward()
    ours_params = dict(ours.named_parameters())
    compared = 0
    for name, param in theirs.named_parameters():
        if param.grad is not None:
            torch.testing.assert_close(ours_params[name].grad, param.grad, rtol=1e-3, atol=1e-5)
            compared += 1
    assert compared >= 40
    ours.zero_grad(), theirs.zero_grad()


def test_v2_heads_match_torchvision(tv):
    """The v2 parts (BatchNorm FPN, two-conv RPN head, conv+FC box head) in eval."""
    ours, theirs = _pair(tv, v2=True)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.eval(), theirs.eval()
    images = _images(2)
    with torch.inference_mode():
        _assert_same_detections(ours(images), theirs(images), images)


def test_mobilenet_320_builder_matches_torchvision(tv):
    kwargs = {"num_classes": 3, "min_size": 96, "max_size": 128, "box_score_thresh": 0.2}
    torch.manual_seed(0)
    theirs = tv.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, **kwargs
    )
    ours = detection.fasterrcnn_mobilenet_v3_large_320_fpn(**kwargs)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    ours.eval(), theirs.eval()
    images = _images(3)
    with torch.inference_mode():
        _assert_same_detections(ours(images), theirs(images), images)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2"])
def test_resnet50_builders_load_torchvision_checkpoints(tv, name, tmp_path):
    theirs = getattr(tv.models.detection, name)(weights=None, weights_backbone=None)
    ours = getattr(detection, name)()
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    ours.load_state_dict(theirs.state_dict(), strict=True)
    # A checkpoint file: the classes follow it, the backbone is frozen as torchvision's.
    path = tmp_path / f"{name}.pth"
    theirs_state = theirs.state_dict()
    torch.save(theirs_state, path)
    model = getattr(detection, name)(weights=path)
    assert model.roi_heads.box_predictor.cls_score.out_features == 91
    for key, value in model.state_dict().items():
        assert torch.equal(value, theirs_state[key]), key
    body = model.backbone.body
    trainable = {n.split(".")[0] for n, p in body.named_parameters() if p.requires_grad}
    assert trainable == {"layer2", "layer3", "layer4"}  # torchvision's default with weights
    frozen = [m for m in model.modules() if isinstance(m, FrozenBatchNorm2d)]
    if name == "fasterrcnn_resnet50_fpn":
        assert frozen and all(m.eps == 0.0 for m in frozen)  # torchvision's COCO_V1 setting
    else:
        assert not frozen  # v2 keeps BatchNorm2d, as torchvision's
    with pytest.raises(ValueError, match="num_classes=3 was given"):
        getattr(detection, name)(weights=path, num_classes=3)


def test_builders_refuse_downloads():
    with pytest.raises(ValueError, match="cannot be downloaded"):
        detection.fasterrcnn_resnet50_fpn(weights="COCO_V1")
    with pytest.raises(ValueError, match="pretrained=True"):
        detection.fasterrcnn_mobilenet_v3_large_fpn(pretrained=True)
    with pytest.raises(FileNotFoundError, match="no weights file"):
        detection.fasterrcnn_resnet50_fpn_v2(weights="missing.pth")


def test_mobilenet_builders_defaults():
    large = detection.fasterrcnn_mobilenet_v3_large_fpn(num_classes=2)
    small = detection.fasterrcnn_mobilenet_v3_large_320_fpn(num_classes=2, min_size=200)
    assert large.transform.min_size == (800,) and large.rpn.score_thresh == 0.05
    assert small.transform.min_size == (200,) and small.transform.max_size == 640
    assert small.eval().rpn.post_nms_top_n() == 150 and small.rpn.pre_nms_top_n() == 150
    assert large.rpn.anchor_generator.num_anchors_per_location() == [15, 15, 15]
    assert [n for n, _ in large.named_modules()] == [n for n, _ in small.named_modules()]


def test_constructor_argument_errors():
    backbone = _resnet18_fpn()
    with pytest.raises(ValueError, match="num_classes should not be None"):
        detection.FasterRCNN(backbone)
    with pytest.raises(ValueError, match="num_classes should be None"):
        detection.FasterRCNN(backbone, 3, box_predictor=detection.FastRCNNPredictor(1024, 3))
    with pytest.raises(ValueError, match="out_channels"):
        detection.FasterRCNN(torch.nn.Identity(), 3)
    with pytest.raises(TypeError, match="box_roi_pool"):
        detection.FasterRCNN(backbone, 3, box_roi_pool=torch.nn.Identity())
