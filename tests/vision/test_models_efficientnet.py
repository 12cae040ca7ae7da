"""EfficientNet B0-B7 and EfficientNetV2 S/M/L against torchvision's.

B0 and V2-S (the smallest of each kind of block) are compared in values; every
builder structurally (keys, shapes, module names, repr) on the meta device.
"""

from __future__ import annotations

import pytest
import torch
from model_parity import (
    assert_same_init,
    assert_same_structure,
    assert_same_training_step,
    image,
    loaded_from,
    randomize_norms,
)

from trivium.vision import models
from trivium.vision.models.efficientnet import EFFICIENTNET_BUILDERS
from trivium.vision.ops import StochasticDepth, stochastic_depth

pytestmark = pytest.mark.usefixtures("one_thread")

SMALLEST = ["efficientnet_b0", "efficientnet_v2_s"]


@pytest.mark.parametrize("name", EFFICIENTNET_BUILDERS)
def test_structure_matches_torchvision(tv, name):
    assert_same_structure(getattr(models, name), getattr(tv.models, name))


@pytest.mark.parametrize("name", SMALLEST)
def test_arguments_match_torchvision(tv, name):
    kwargs = {"num_classes": 7, "dropout": 0.1, "stochastic_depth_prob": 0.3}
    assert_same_structure(getattr(models, name), getattr(tv.models, name), **kwargs)


@pytest.mark.parametrize("name", SMALLEST)
def test_same_seed_gives_torchvision_initial_weights(tv, name):
    assert_same_init(getattr(models, name), getattr(tv.models, name), num_classes=10)


@pytest.mark.parametrize("name", SMALLEST)
def test_torchvision_state_dict_loads_strict_and_gives_same_eval_output(tv, name):
    theirs = randomize_norms(getattr(tv.models, name)(num_classes=10)).eval()
    ours = loaded_from(getattr(models, name), theirs, num_classes=10)
    x = image()
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", SMALLEST)
def test_training_step_matches_torchvision(tv, name):
    kwargs = {"num_classes": 3, "dropout": 0.0, "stochastic_depth_prob": 0.0}
    theirs = randomize_norms(getattr(tv.models, name)(**kwargs))
    ours = loaded_from(getattr(models, name), theirs, **kwargs)
    assert_same_training_step(ours, theirs, image(n=4, size=48))


def test_stochastic_depth_rises_over_the_blocks_and_drops_rows_in_training():
    model = models.efficientnet_b0(stochastic_depth_prob=0.4)
    probs = [m.p for m in model.modules() if isinstance(m, StochasticDepth)]
    assert probs[0] == 0.0 and probs == sorted(probs) and probs[-1] == pytest.approx(0.4 * 15 / 16)
    block = model.features[2][1]  # a residual block
    x = torch.randn(64, 24, 4, 4)
    block.stochastic_depth.p = 0.5
    branch = block.block.eval()(x)  # the branch alone, norms in eval
    block.train()
    block.block.eval()
    torch.manual_seed(0)
    diff = (block(x) - x).flatten(1)
    kept = diff.abs().sum(1) > 0
    assert 0 < kept.sum() < 64  # rows dropped independently
    torch.testing.assert_close(diff[kept], 2 * branch.flatten(1)[kept])  # scaled by 1 / (1 - p)


def test_weights_fix_num_classes(tmp_path):
    state = models.efficientnet_b0(num_classes=5).state_dict()
    torch.save(state, tmp_path / "b0.pth")
    assert models.efficientnet_b0(weights=tmp_path / "b0.pth").classifier[1].out_features == 5
    with pytest.raises(ValueError, match="num_classes=4 was given"):
        models.efficientnet_b0(weights=state, num_classes=4)
    with pytest.raises(ValueError, match="cannot be downloaded"):
        models.efficientnet_v2_s(weights="EfficientNet_V2_S_Weights.IMAGENET1K_V1")


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="should not be empty"):
        models.EfficientNet([], dropout=0.2)
    with pytest.raises(TypeError, match="MBConvConfig"):
        models.EfficientNet([[1, 3, 1, 32, 16, 1]], dropout=0.2)
    cnf = models.efficientnet.MBConvConfig(6, 3, 3, 16, 24, 1)
    with pytest.raises(ValueError, match="stride"):
        models.efficientnet.MBConv(cnf, 0.0, torch.nn.BatchNorm2d)
    with pytest.raises(ValueError, match="drop probability"):
        stochastic_depth(torch.ones(2), 1.5, "row")


@pytest.mark.slow  # compiles or runs long; the quick tier keeps smaller checks
def test_torch_compile_matches_eager():
    # Both kinds of block, in fewer stages than B0 (compiling B0 takes minutes on a CPU).
    eff = models.efficientnet
    stages = [eff.FusedMBConvConfig(1, 3, 1, 16, 16, 2), eff.MBConvConfig(4, 3, 2, 16, 24, 2)]
    model = randomize_norms(models.EfficientNet(stages, dropout=0.2, num_classes=4)).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model)(x), model(x), atol=1e-5, rtol=1e-4)


@pytest.mark.slow  # compiles or runs long; the quick tier keeps smaller checks
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_torch_jit_script_matches_eager():
    model = randomize_norms(models.efficientnet_v2_s(num_classes=4)).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.jit.script(model)(x), model(x))
