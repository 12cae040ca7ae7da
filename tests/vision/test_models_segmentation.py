"""FCN, DeepLabV3 and LRASPP against torchvision's segmentation models.

torchvision's models are its pure-Python code (see ``tests/peers.py``). Structure is
compared on the meta device for every builder; outputs and a training step once per
family (the ResNet-101 builders share the ResNet-50 ones' code).
"""

from __future__ import annotations

import pytest
import torch
from model_parity import assert_same_structure, image, loaded_from, randomize_norms
from torch import nn

from trivium.vision.models import segmentation

pytestmark = pytest.mark.usefixtures("one_thread")

WITH_AUX = [
    "fcn_resnet50",
    "fcn_resnet101",
    "deeplabv3_resnet50",
    "deeplabv3_resnet101",
    "deeplabv3_mobilenet_v3_large",
]
BUILDERS = [*WITH_AUX, "lraspp_mobilenet_v3_large"]
# One builder per family for values: the heads, backbones and feature taps differ.
FAMILIES = ["fcn_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]


def _kwargs(name: str, **kwargs):
    if name.startswith("lraspp"):
        kwargs.pop("aux_loss", None)
    return kwargs


@pytest.mark.parametrize("name", BUILDERS)
@pytest.mark.parametrize("aux_loss", [None, True])
def test_structure_matches_torchvision(tv, name, aux_loss):
    kwargs = _kwargs(name, num_classes=5, aux_loss=aux_loss, weights_backbone=None)
    ours, theirs = getattr(segmentation, name), getattr(tv.models.segmentation, name)
    assert_same_structure(ours, theirs, **kwargs)


def _pair(tv, name: str, **kwargs):
    torch.manual_seed(0)
    kwargs = _kwargs(name, num_classes=4, weights_backbone=None, **kwargs)
    theirs = randomize_norms(getattr(tv.models.segmentation, name)(**kwargs))
    return loaded_from(getattr(segmentation, name), theirs, **kwargs), theirs


@pytest.mark.parametrize("name", FAMILIES)
def test_torchvision_state_dict_gives_same_eval_output(tv, name):
    ours, theirs = _pair(tv, name, aux_loss=True)
    ours.eval(), theirs.eval()
    x = image(n=1, size=72)  # not a multiple of the output stride: the upsampling is exercised
    with torch.no_grad():
        a, b = ours(x), theirs(x)
    assert list(a) == list(b) == (["out"] if name.startswith("lraspp") else ["out", "aux"])
    for key in a:
        assert a[key].shape == (1, 4, 72, 72)
        torch.testing.assert_close(a[key], b[key], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("fcn_resnet50", marks=pytest.mark.slow),  # a ResNet-50's backward
        "deeplabv3_mobilenet_v3_large",
        "lraspp_mobilenet_v3_large",
    ],
)
def test_training_step_matches_torchvision(tv, name):
    """Same outputs (the same dropout draws from the same seed), loss gradients and
    BatchNorm statistics after one step in train mode."""
    ours, theirs = _pair(tv, name, aux_loss=True)
    x = image(n=2, size=64)
    target = torch.randint(0, 4, (2, 64, 64), generator=torch.Generator().manual_seed(1))
    for model in (ours, theirs):
        model.train()
        torch.manual_seed(2)
        out = model(x)
        loss = sum(
            w * nn.functional.cross_entropy(out[k], target)
            for k, w in [("out", 1.0), ("aux", 0.5)]
            if k in out
        )
        loss.backward()
    grads = dict(theirs.named_parameters())
    for key, p in ours.named_parameters():
        assert (p.grad is None) == (grads[key].grad is None), key
        if p.grad is not None:
            torch.testing.assert_close(p.grad, grads[key].grad, atol=1e-5, rtol=1e-3, msg=key)
    for (key, a), b in zip(ours.named_buffers(), theirs.buffers(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5, msg=key)


def test_backbones_are_dilated():
    """The features the heads read: output stride 8 on the ResNets, 16 (out) and 8 (aux) on
    MobileNetV3, as in torchvision."""
    with torch.device("meta"):  # shapes only
        x = torch.zeros(1, 3, 64, 64)
        fcn = segmentation.fcn_resnet50(aux_loss=True).eval()
        assert {k: v.shape[-1] for k, v in fcn.backbone(x).items()} == {"aux": 8, "out": 8}
        dl = segmentation.deeplabv3_mobilenet_v3_large(aux_loss=True).eval()
        assert {k: v.shape[-1] for k, v in dl.backbone(x).items()} == {"aux": 8, "out": 4}


def test_weights_fix_num_classes_and_aux_loss(tmp_path):
    model = segmentation.lraspp_mobilenet_v3_large(num_classes=3)
    torch.save(model.state_dict(), tmp_path / "lraspp.pth")
    loaded = segmentation.lraspp_mobilenet_v3_large(weights=tmp_path / "lraspp.pth")
    assert loaded.classifier.low_classifier.out_channels == 3
    with pytest.raises(ValueError, match="num_classes=21 was given"):
        segmentation.lraspp_mobilenet_v3_large(weights=model.state_dict(), num_classes=21)

    with torch.device("meta"):
        state = segmentation.deeplabv3_mobilenet_v3_large(num_classes=2, aux_loss=True).state_dict()
    state = {k: torch.zeros_like(v, device="cpu") for k, v in state.items()}
    loaded = segmentation.deeplabv3_mobilenet_v3_large(weights=state)
    assert loaded.aux_classifier is not None and loaded.classifier[4].out_channels == 2
    with pytest.raises(ValueError, match="aux_loss=False was given"):
        segmentation.deeplabv3_mobilenet_v3_large(weights=state, aux_loss=False)
    without_aux = {k: v for k, v in state.items() if not k.startswith("aux_classifier.")}
    assert segmentation.deeplabv3_mobilenet_v3_large(weights=without_aux).aux_classifier is None


def test_weights_backbone_loads_the_backbone(tmp_path):
    from trivium.vision.models import mobilenet_v3_large

    backbone = mobilenet_v3_large(dilated=True)
    torch.save(backbone.state_dict(), tmp_path / "backbone.pth")
    model = segmentation.lraspp_mobilenet_v3_large(weights_backbone=tmp_path / "backbone.pth")
    for key, value in model.backbone.state_dict().items():
        assert value.equal(backbone.features.state_dict()[key]), key


def test_bad_arguments():
    with pytest.raises(ValueError, match="cannot be downloaded"):
        segmentation.fcn_resnet50(weights="COCO_WITH_VOC_LABELS_V1")
    with pytest.raises(ValueError, match="cannot be downloaded"):
        segmentation.deeplabv3_resnet50(weights_backbone="IMAGENET1K_V1")
    with pytest.raises(ValueError, match="pretrained_backbone=True"):
        segmentation.deeplabv3_resnet50(pretrained_backbone=True)
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['dropout'\\]"):
        segmentation.fcn_resnet50(dropout=0.2)
    with pytest.raises(NotImplementedError, match="aux_loss"):
        segmentation.lraspp_mobilenet_v3_large(aux_loss=True)
    with pytest.raises(FileNotFoundError):
        segmentation.lraspp_mobilenet_v3_large(weights="missing.pth")


def test_subpackage_is_an_attribute_of_models():
    from trivium.vision import models

    assert models.segmentation.fcn_resnet50 is segmentation.fcn_resnet50
    assert set(segmentation.__all__) >= {"FCN", "DeepLabV3", "LRASPP"}
