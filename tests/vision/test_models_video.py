"""VideoResNet (R3D, MC3, R(2+1)D) and S3D against torchvision's video models.

torchvision's models are its pure-Python code (see ``tests/peers.py``). Structure is
compared on the meta device for every builder; values once per family on small clips
(the three ResNets share their code; S3D needs 14x224x224 clips for its full forward,
which the slow test runs).
"""

from __future__ import annotations

import pytest
import torch
from model_parity import (
    assert_same_init,
    assert_same_structure,
    assert_same_training_step,
    loaded_from,
    randomize_norms,
)
from torch import nn

from trivium.vision.models import video

pytestmark = pytest.mark.usefixtures("one_thread")

BUILDERS = ["r3d_18", "mc3_18", "r2plus1d_18", "s3d"]


def clip(n: int = 1, frames: int = 4, size: int = 64, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, frames, size, size, generator=g)


def _randomize_norms_3d(model: nn.Module, seed: int = 0) -> nn.Module:
    """Non-trivial BatchNorm3d statistics and affine values (``randomize_norms`` is 2D)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm3d):
                c = m.num_features
                m.weight.copy_(torch.rand(c, generator=g) + 0.5)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
    return randomize_norms(model, seed)


@pytest.mark.parametrize("name", BUILDERS)
def test_structure_matches_torchvision(tv, name):
    ours, theirs = getattr(video, name), getattr(tv.models.video, name)
    assert_same_structure(ours, theirs, num_classes=7)


@pytest.mark.parametrize("name", ["r2plus1d_18", "s3d"])
def test_same_seed_gives_torchvision_initial_weights(tv, name):
    assert_same_init(getattr(video, name), getattr(tv.models.video, name), num_classes=5)


def _pair(tv, name: str, **kwargs):
    torch.manual_seed(0)
    theirs = _randomize_norms_3d(getattr(tv.models.video, name)(**kwargs))
    return loaded_from(getattr(video, name), theirs, **kwargs), theirs


@pytest.mark.parametrize("name", ["mc3_18", "r2plus1d_18"])
def test_video_resnet_eval_output_matches_torchvision(tv, name):
    ours, theirs = _pair(tv, name, num_classes=6)
    ours.eval(), theirs.eval()
    x = clip()
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-4)


def test_video_resnet_training_step_matches_torchvision(tv):
    ours, theirs = _pair(tv, "r2plus1d_18", num_classes=3)
    assert_same_training_step(ours, theirs, clip(n=2, frames=2, size=32))


def test_s3d_features_and_head_match_torchvision(tv):
    """The features on a small clip, then the classifier and the mean (the 2x7x7 average
    pool needs 224-pixel clips: see the slow test)."""
    ours, theirs = _pair(tv, "s3d", num_classes=6)
    ours.eval(), theirs.eval()
    x = clip(frames=8, size=64)
    with torch.no_grad():
        a, b = ours.features(x), theirs.features(x)
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
        head_a = ours.classifier(a).mean(dim=(2, 3, 4))
        torch.testing.assert_close(head_a, theirs.classifier(b).mean(dim=(2, 3, 4)))


@pytest.mark.slow  # a 14x224x224 clip through S3D, forward and backward, twice
def test_s3d_full_clip_and_training_step_match_torchvision(tv):
    ours, theirs = _pair(tv, "s3d", num_classes=3, dropout=0.0)
    x = clip(frames=14, size=224)
    ours.eval(), theirs.eval()
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-4)
    assert_same_training_step(ours, theirs, x)


def test_zero_init_residual_zeroes_the_last_norm_of_every_block():
    model = video.r3d_18(zero_init_residual=True)
    blocks = [m for m in model.modules() if isinstance(m, video.resnet.BasicBlock)]
    assert len(blocks) == 8
    assert all(block.conv2[1].weight.abs().sum() == 0 for block in blocks)
    assert model.stem[1].weight.abs().sum() > 0


def test_weights_fix_num_classes_and_refuse_downloads(tmp_path):
    model = video.s3d(num_classes=4)
    torch.save(model.state_dict(), tmp_path / "s3d.pth")
    loaded = video.s3d(weights=tmp_path / "s3d.pth")
    assert loaded.classifier[1].out_channels == 4
    assert loaded.classifier[1].weight.equal(model.classifier[1].weight)
    with pytest.raises(ValueError, match="num_classes=400 was given"):
        video.s3d(weights=model.state_dict(), num_classes=400)
    with pytest.raises(ValueError, match="cannot be downloaded"):
        video.r3d_18(weights="KINETICS400_V1")
    with pytest.raises(ValueError, match="pretrained=True"):
        video.mc3_18(pretrained=True)
    with pytest.raises(RuntimeError, match="Missing key"):
        video.mc3_18(weights=video.s3d(num_classes=2).state_dict())


def test_bad_arguments():
    with pytest.raises(ValueError, match="4 stages"):
        video.VideoResNet(
            video.resnet.BasicBlock,
            [video.resnet.Conv3DSimple] * 3,
            [1, 1, 1],
            video.resnet.BasicStem,
        )


def test_subpackage_is_an_attribute_of_models():
    from trivium.vision import models

    assert models.video.r3d_18 is video.r3d_18
