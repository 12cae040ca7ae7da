"""FCOS against torchvision's: state dict, detections and losses (centre sampling, GIoU,
centerness), on small images.

torchvision's ``nms`` is a C++ op absent here; ``tests/detection_peers.py`` registers an
independent NumPy greedy NMS in its place.
"""

from __future__ import annotations

import pytest
import torch
from detection_peers import torchvision_with_nms
from model_parity import loaded_from

from trivium.vision.models import FCOS, fcos_resnet50_fpn

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tv():
    with torchvision_with_nms() as torchvision:
        yield torchvision


SIZES = {"min_size": 96, "max_size": 128}


def _images() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [torch.rand(3, 96, 128, generator=g), torch.rand(3, 112, 96, generator=g)]


def _targets() -> list[dict[str, torch.Tensor]]:
    # Boxes of several extents, so that points of several levels are foreground.
    return [
        {
            "boxes": torch.tensor(
                [[8.0, 10.0, 40.0, 50.0], [30.0, 5.0, 125.0, 94.0], [60.0, 60.0, 76.0, 74.0]]
            ),
            "labels": torch.tensor([1, 90, 4]),
        },
        {"boxes": torch.tensor([[20.0, 30.0, 70.0, 100.0]]), "labels": torch.tensor([7])},
    ]


@pytest.fixture(scope="module")
def pair(tv):
    torch.manual_seed(0)
    theirs = tv.models.detection.fcos_resnet50_fpn(
        weights=None, weights_backbone=None, score_thresh=0.05, **SIZES
    )
    with torch.no_grad():  # spread the logits (at init all sit at the 0.01 prior)
        g = torch.Generator().manual_seed(1)
        theirs.head.classification_head.cls_logits.weight.normal_(0.0, 0.05, generator=g)
        theirs.head.classification_head.cls_logits.bias.fill_(-2.0)
        theirs.head.regression_head.bbox_reg.weight.normal_(0.0, 0.02, generator=g)
    # Built on the meta device, torchvision's state dict assigned with strict=True.
    ours = loaded_from(fcos_resnet50_fpn, theirs, score_thresh=0.05, **SIZES)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    return ours, theirs


def test_eval_detections_match_torchvision(pair):
    ours, theirs = pair
    ours.eval(), theirs.eval()
    images = _images()
    with torch.inference_mode():
        out, expected = ours(images), theirs(images)
    for got, want in zip(out, expected, strict=True):
        assert len(want["boxes"]) > 10  # the comparison is not vacuous
        torch.testing.assert_close(got["boxes"], want["boxes"], rtol=0, atol=1e-3)
        torch.testing.assert_close(got["scores"], want["scores"], rtol=0, atol=1e-5)
        assert torch.equal(got["labels"], want["labels"])


def test_train_losses_and_matches_match_torchvision(pair):
    ours, theirs = pair
    ours.train(), theirs.train()
    images = _images()
    matches = {}
    for name, model in (("ours", ours), ("theirs", theirs)):
        head_compute = model.head.compute_loss

        def spy(targets, outputs, anchors, matched, _f=head_compute, _name=name):
            matches[_name] = [m.clone() for m in matched]
            return _f(targets, outputs, anchors, matched)

        model.head.compute_loss = spy
    try:
        losses, expected = ours(images, _targets()), theirs(images, _targets())
    finally:
        del ours.head.compute_loss, theirs.head.compute_loss
    assert (
        sorted(losses)
        == sorted(expected)
        == [
            "bbox_ctrness",
            "bbox_regression",
            "classification",
        ]
    )
    for got, want in zip(matches["ours"], matches["theirs"], strict=True):
        assert torch.equal(got, want)
    # Every box has foreground points, on more than one level.
    assert set(matches["theirs"][0].unique().tolist()) == {-1, 0, 1, 2}
    for key, value in expected.items():
        torch.testing.assert_close(losses[key], value, rtol=0, atol=1e-5)
    sum(losses.values()).backward()
    sum(expected.values()).backward()
    ours_params = dict(ours.named_parameters())
    for name, param in theirs.named_parameters():
        if name.startswith("head."):
            torch.testing.assert_close(ours_params[name].grad, param.grad, rtol=1e-4, atol=1e-6)
    ours.zero_grad(), theirs.zero_grad()


def test_image_without_boxes(pair):
    ours, theirs = pair
    ours.train(), theirs.train()
    images = _images()
    targets = _targets()
    targets[1] = {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.int64)}
    with torch.no_grad():
        losses, expected = ours(images, targets), theirs(images, targets)
    for key, value in expected.items():
        torch.testing.assert_close(losses[key], value, rtol=0, atol=1e-5)


def test_builder_weights_and_arguments(pair, tmp_path):
    _, theirs = pair
    path = tmp_path / "fcos_resnet50_fpn_coco.pth"
    torch.save(theirs.state_dict(), path)
    model = fcos_resnet50_fpn(weights=path, trainable_backbone_layers=2)
    assert isinstance(model, FCOS) and model.head.classification_head.num_classes == 91
    trainable = {
        n.split(".")[0] for n, p in model.backbone.body.named_parameters() if p.requires_grad
    }
    assert trainable == {"layer3", "layer4"}
    with pytest.raises(ValueError, match="num_classes=3 was given"):
        fcos_resnet50_fpn(weights=path, num_classes=3)
    with pytest.raises(ValueError, match="should be 1"):
        from trivium.vision.ops import AnchorGenerator

        FCOS(model.backbone, 3, anchor_generator=AnchorGenerator(((8, 16),), ((1.0,),)))
