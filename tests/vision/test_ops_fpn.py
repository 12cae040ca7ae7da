"""FeaturePyramidNetwork, its extra blocks and resnet_fpn_backbone against torchvision's."""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch
from torch import nn

from trivium.vision.models.backbone_utils import BackboneWithFPN, resnet_fpn_backbone
from trivium.vision.ops import FrozenBatchNorm2d
from trivium.vision.ops.feature_pyramid_network import (
    ExtraFPNBlock,
    FeaturePyramidNetwork,
    LastLevelMaxPool,
    LastLevelP6P7,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def _features(channels: list[int], sizes: list[int]) -> OrderedDict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return OrderedDict(
        (f"feat{i}", torch.rand(2, c, s, s + 3, generator=g))
        for i, (c, s) in enumerate(zip(channels, sizes, strict=True))
    )


def _pair(tv, extra: str | None, norm: bool):
    channels = [8, 16, 32]
    norm_ours = nn.BatchNorm2d if norm else None
    norm_tv = nn.BatchNorm2d if norm else None
    tv_fpn = tv.ops.feature_pyramid_network

    def block(lib):
        max_pool = LastLevelMaxPool if lib == "ours" else tv_fpn.LastLevelMaxPool
        p6p7 = LastLevelP6P7 if lib == "ours" else tv_fpn.LastLevelP6P7
        return {
            None: lambda: None,
            "maxpool": max_pool,
            "p6p7_c5": lambda: p6p7(32, 12),
            "p6p7_p5": lambda: p6p7(12, 12),
        }[extra]()

    # Same seed, same order of draws (extra block first): same initial weights.
    torch.manual_seed(0)
    ours = FeaturePyramidNetwork(channels, 12, extra_blocks=block("ours"), norm_layer=norm_ours)
    torch.manual_seed(0)
    theirs = tv.ops.FeaturePyramidNetwork(
        channels, 12, extra_blocks=block("tv"), norm_layer=norm_tv
    )
    return ours, theirs


@pytest.mark.parametrize("extra", [None, "maxpool", "p6p7_c5", "p6p7_p5"])
@pytest.mark.parametrize("norm", [False, True])
def test_fpn_matches_torchvision(tv, extra, norm):
    ours, theirs = _pair(tv, extra, norm)
    # Same names, shapes and (same seed) initial values.
    ours_state, tv_state = ours.state_dict(), theirs.state_dict()
    assert list(ours_state) == list(tv_state)
    for key, value in tv_state.items():
        torch.testing.assert_close(ours_state[key], value, rtol=0, atol=0, msg=key)
    ours.load_state_dict(tv_state, strict=True)
    ours.eval(), theirs.eval()
    x = _features([8, 16, 32], [32, 16, 7])
    out, expected = ours(OrderedDict(x)), theirs(OrderedDict(x))
    assert list(out) == list(expected)
    for key in expected:
        torch.testing.assert_close(out[key], expected[key], rtol=0, atol=0)


def test_fpn_loads_version1_keys(tv):
    # Old torchvision checkpoints have bare convolutions: inner_blocks.0.weight.
    ours, theirs = _pair(tv, "maxpool", norm=False)
    old = OrderedDict(
        (k.replace(".0.weight", ".weight").replace(".0.bias", ".bias"), v)
        for k, v in theirs.state_dict().items()
    )
    old._metadata = {"": {"version": 1}}
    ours.load_state_dict(old, strict=True)
    for key, value in theirs.state_dict().items():
        assert torch.equal(ours.state_dict()[key], value)


def test_fpn_bad_input():
    with pytest.raises(ValueError, match="in_channels=0"):
        FeaturePyramidNetwork([0, 4], 8)
    with pytest.raises(TypeError, match="ExtraFPNBlock"):
        FeaturePyramidNetwork([4], 8, extra_blocks=nn.ReLU())
    fpn = FeaturePyramidNetwork([4, 8], 8)
    with pytest.raises(ValueError, match="built for 2 feature maps, got 1"):
        fpn({"a": torch.rand(1, 4, 8, 8)})
    assert isinstance(LastLevelMaxPool(), ExtraFPNBlock)


def test_p6p7_bfloat16_gradients_of_a_1x1_map_are_finite_and_right():
    """oneDNN's bfloat16 weight gradient of a stride-2 conv over 1x1 reads garbage (torch 2.13).

    Memory full of NaN is freed before each step, so that garbage would show.
    """
    torch.manual_seed(0)
    block = LastLevelP6P7(16, 16)
    reference = LastLevelP6P7(16, 16)
    reference.load_state_dict(block.state_dict())
    for _ in range(20):
        junk = [torch.full((n,), float("nan"), dtype=torch.bfloat16) for n in (64, 4608, 36864)]
        del junk
        c5 = torch.randn(4, 16, 1, 1).bfloat16().float()  # autocast's rounding: none
        with torch.autocast("cpu", dtype=torch.bfloat16):
            p, _ = block([c5], [c5], ["0"])
        sum(t.float().sum() for t in p[1:]).backward()
        q, _ = reference([c5], [c5], ["0"])
        sum(t.sum() for t in q[1:]).backward()
        pairs = zip(block.named_parameters(), reference.parameters(), strict=True)
        for (name, ours), theirs in pairs:
            assert torch.isfinite(ours.grad).all(), name
            torch.testing.assert_close(ours.grad, theirs.grad, rtol=0.05, atol=0.05, msg=name)
        block.zero_grad()
        reference.zero_grad()


@pytest.mark.parametrize(
    ("name", "trainable", "returned"),
    [
        ("resnet18", 0, None),
        ("resnet18", 3, [2, 3, 4]),
        ("resnet50", 5, None),
        ("resnet34", 1, [4]),
    ],
)
def test_resnet_fpn_backbone_matches_torchvision(tv, name, trainable, returned):
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone as tv_backbone

    torch.manual_seed(0)
    ours = resnet_fpn_backbone(
        backbone_name=name, weights=None, trainable_layers=trainable, returned_layers=returned
    )
    torch.manual_seed(0)
    theirs = tv_backbone(
        backbone_name=name, weights=None, trainable_layers=trainable, returned_layers=returned
    )
    assert isinstance(ours, BackboneWithFPN) and ours.out_channels == theirs.out_channels
    trainable_ours = {n: p.requires_grad for n, p in ours.named_parameters()}
    trainable_tv = {n: p.requires_grad for n, p in theirs.named_parameters()}
    assert trainable_ours == trainable_tv
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert all(isinstance(m, FrozenBatchNorm2d) for m in ours.modules() if "bn" in type(m).__name__)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    if name == "resnet18":  # one forward comparison (the blocks are tested elsewhere)
        x = torch.rand(1, 3, 96, 64, generator=torch.Generator().manual_seed(0))
        out, expected = ours(x), theirs(x)
        assert list(out) == list(expected)
        for key in expected:
            torch.testing.assert_close(out[key], expected[key], rtol=0, atol=0)


def test_resnet_fpn_backbone_weights_and_bad_arguments(tmp_path):
    from trivium.vision.models import resnet18

    source = resnet18()
    path = tmp_path / "r18.pth"
    torch.save(source.state_dict(), path)
    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=str(path))
    assert torch.equal(backbone.body.conv1.weight, source.conv1.weight)
    with pytest.raises(ValueError, match="range \\[0,5\\]"):
        resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=6)
    with pytest.raises(ValueError, match="range \\[1,4\\]"):
        resnet_fpn_backbone(backbone_name="resnet18", weights=None, returned_layers=[0, 1])
    with pytest.raises(ValueError, match="backbone_name must be one of"):
        resnet_fpn_backbone(backbone_name="vgg16", weights=None)
    with pytest.raises(ValueError, match="cannot be downloaded"):
        resnet_fpn_backbone(backbone_name="resnet18", weights="IMAGENET1K_V1")
