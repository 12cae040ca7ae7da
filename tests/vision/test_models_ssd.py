"""SSD and SSDlite against torchvision's: state dicts, detections, matches and losses.

The SSD class is compared on a small backbone (ssd300_vgg16's VGG-16 at 300 px is slow
on a CPU); ssd300_vgg16's structure and strict loading of torchvision's state dict are
checked on the meta device. torchvision's ``nms`` is a C++ op absent here:
``tests/detection_peers.py`` registers an independent NumPy greedy NMS in its place.
"""

from __future__ import annotations

import copy
from collections import OrderedDict

import pytest
import torch
from detection_peers import torchvision_with_nms
from model_parity import loaded_from, randomize_norms
from torch import nn

from trivium.vision.models import SSD, ssd300_vgg16, ssdlite320_mobilenet_v3_large
from trivium.vision.ops import DefaultBoxGenerator

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tv():
    with torchvision_with_nms() as torchvision:
        yield torchvision


class _TwoMaps(nn.Module):
    """Two feature maps (stride 8 and 16) of a 96 px image."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(3, 16, 3, stride=8, padding=1), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
        self.out_channels = [16, 32]

    def forward(self, x: torch.Tensor) -> OrderedDict[str, torch.Tensor]:
        a = self.a(x)
        return OrderedDict([("0", a), ("1", self.b(a))])


ARGS = {"aspect_ratios": [[2], [2, 3]], "min_ratio": 0.2, "max_ratio": 0.9}


def _images() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [torch.rand(3, 96, 128, generator=g), torch.rand(3, 112, 96, generator=g)]


def _targets() -> list[dict[str, torch.Tensor]]:
    return [
        {
            "boxes": torch.tensor([[8.0, 10.0, 60.0, 80.0], [50.0, 20.0, 120.0, 90.0]]),
            "labels": torch.tensor([1, 4]),
        },
        {"boxes": torch.tensor([[20.0, 30.0, 70.0, 100.0]]), "labels": torch.tensor([3])},
    ]


@pytest.fixture(scope="module")
def pair(tv):
    torch.manual_seed(0)
    backbone = _TwoMaps()
    theirs = tv.models.detection.ssd.SSD(
        copy.deepcopy(backbone),
        tv.models.detection.anchor_utils.DefaultBoxGenerator(**ARGS),
        (96, 96),
        num_classes=5,
    )
    ours = SSD(backbone, DefaultBoxGenerator(**ARGS), (96, 96), num_classes=5)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return ours, theirs


def test_default_boxes_match_torchvision(tv):
    from trivium.vision.ops import ImageList

    kwargs = {
        "aspect_ratios": [[2], [2, 3], [2]],
        "scales": [0.07, 0.15, 0.33, 1.05],
        "steps": [8, 16, 32],
    }
    ours = DefaultBoxGenerator(**kwargs)
    theirs = tv.models.detection.anchor_utils.DefaultBoxGenerator(**kwargs)
    assert repr(ours) == repr(theirs)
    assert ours.num_anchors_per_location() == theirs.num_anchors_per_location()
    maps = [torch.zeros(2, 1, 12, 10), torch.zeros(2, 1, 6, 5), torch.zeros(2, 1, 3, 3)]
    images = ImageList(torch.zeros(2, 3, 96, 80), [(96, 80), (90, 70)])
    for got, want in zip(ours(images, maps), theirs(images, maps), strict=True):
        assert torch.equal(got, want)
    for clip in (True, False):
        a, b = (
            DefaultBoxGenerator([[2, 3]] * 3, clip=clip),
            theirs.__class__([[2, 3]] * 3, clip=clip),
        )
        assert torch.equal(a(images, maps)[0], b(images, maps)[0])


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


def test_train_losses_match_torchvision(pair):
    ours, theirs = pair
    ours.train(), theirs.train()
    images = _images()
    # The logits of random weights give distinct losses: no ties in the hard negative sort.
    losses, expected = ours(images, _targets()), theirs(images, _targets())
    assert sorted(losses) == sorted(expected) == ["bbox_regression", "classification"]
    for key, value in expected.items():
        torch.testing.assert_close(losses[key], value, rtol=0, atol=1e-5)
    sum(losses.values()).backward()
    sum(expected.values()).backward()
    ours_params = dict(ours.named_parameters())
    for name, param in theirs.named_parameters():
        torch.testing.assert_close(ours_params[name].grad, param.grad, rtol=1e-4, atol=1e-6)
    ours.zero_grad(), theirs.zero_grad()
    empty = _targets()
    empty[1] = {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.int64)}
    with torch.no_grad():
        losses, expected = ours(images, empty), theirs(images, empty)
    for key, value in expected.items():
        torch.testing.assert_close(losses[key], value, rtol=0, atol=1e-5)


def test_hard_negatives_against_a_plain_reference(pair):
    ours, _ = pair
    g = torch.Generator().manual_seed(0)
    cls_loss = torch.rand(2, 50, generator=g)
    foreground = torch.zeros(2, 50, dtype=torch.bool)
    foreground[0, [3, 7]] = True
    foreground[1, 10] = True
    mask = ours._hard_negatives(cls_loss, foreground)
    for row in range(2):
        k = int(3 * foreground[row].sum())
        losses = cls_loss[row].masked_fill(foreground[row], -float("inf"))
        expected = set(losses.argsort(descending=True)[:k].tolist())
        assert set(torch.where(mask[row])[0].tolist()) == expected


def test_ssd300_vgg16_structure_and_strict_load(tv):
    with torch.device("meta"):
        theirs = tv.models.detection.ssd300_vgg16(weights=None, weights_backbone=None)
        ours = ssd300_vgg16()
    assert [(k, v.shape) for k, v in ours.state_dict().items()] == [
        (k, v.shape) for k, v in theirs.state_dict().items()
    ]
    assert repr(ours) == repr(theirs)
    ours.load_state_dict(theirs.state_dict(), strict=True, assign=True)
    assert ours.transform.fixed_size == (300, 300)
    with pytest.warns(UserWarning, match="already fixed"), torch.device("meta"):
        ssd300_vgg16(size=(512, 512))


@pytest.mark.slow
def test_ssd300_vgg16_matches_torchvision(tv):
    torch.manual_seed(0)
    theirs = tv.models.detection.ssd300_vgg16(weights=None, weights_backbone=None).eval()
    ours = ssd300_vgg16(weights=theirs.state_dict()).eval()
    image = [_images()[0]]
    with torch.inference_mode():
        got, want = ours(image)[0], theirs(image)[0]
    torch.testing.assert_close(got["boxes"], want["boxes"], rtol=0, atol=1e-3)
    torch.testing.assert_close(got["scores"], want["scores"], rtol=0, atol=1e-5)
    ours.train(), theirs.train()
    targets = _targets()[:1]
    losses, expected = ours(image, targets), theirs(image, targets)
    for key, value in expected.items():
        torch.testing.assert_close(losses[key], value, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def lite_pair(tv):
    torch.manual_seed(0)
    theirs = tv.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=6
    )
    randomize_norms(theirs)
    # Built on the meta device, torchvision's state dict assigned with strict=True.
    ours = loaded_from(ssdlite320_mobilenet_v3_large, theirs, num_classes=6)
    assert repr(ours) == repr(theirs)
    return ours, theirs


def test_ssdlite_matches_torchvision(lite_pair):
    ours, theirs = lite_pair
    ours.eval(), theirs.eval()
    images = _images()
    with torch.inference_mode():
        out, expected = ours(images), theirs(images)
    for got, want in zip(out, expected, strict=True):
        assert len(want["boxes"]) > 10  # the comparison is not vacuous
        torch.testing.assert_close(got["boxes"], want["boxes"], rtol=0, atol=1e-3)
        torch.testing.assert_close(got["scores"], want["scores"], rtol=0, atol=1e-5)
        assert torch.equal(got["labels"], want["labels"])
    ours.train(), theirs.train()
    targets = _targets()
    losses, expected_losses = ours(images, targets), theirs(images, targets)
    for key, value in expected_losses.items():
        torch.testing.assert_close(losses[key], value, rtol=1e-5, atol=1e-5)
    ours.eval(), theirs.eval()


def test_ssdlite_builder_weights(lite_pair, tmp_path):
    _, theirs = lite_pair
    path = tmp_path / "ssdlite320_mobilenet_v3_large_coco.pth"
    torch.save(theirs.state_dict(), path)
    with pytest.raises(ValueError, match="num_classes=3 was given"):
        ssdlite320_mobilenet_v3_large(weights=path, num_classes=3)
    model = ssdlite320_mobilenet_v3_large(weights=path)  # strict load inside
    assert model.head.classification_head.num_columns == 6
    for (key, a), b in zip(model.state_dict().items(), theirs.state_dict().values(), strict=True):
        assert torch.equal(a, b), key
