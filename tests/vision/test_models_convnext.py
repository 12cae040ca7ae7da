"""ConvNeXt tiny/small/base/large against torchvision's.

ConvNeXt-T is compared in values (with layer scales and norms randomised, so every
block counts); every builder structurally (keys, shapes, module names, repr) on the
meta device.
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
from torch import nn

from trivium.vision import models
from trivium.vision.models.convnext import CONVNEXT_BUILDERS, CNBlockConfig
from trivium.vision.ops import StochasticDepth

pytestmark = pytest.mark.usefixtures("one_thread")


def randomized(model: nn.Module, seed: int = 0) -> nn.Module:
    """Norms and layer scales away from their initial values (1e-6 scales hide the blocks)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layer_scale"):
                p.copy_(torch.rand(p.shape, generator=g) * 0.5 + 0.25)
    return randomize_norms(model, seed)


@pytest.mark.parametrize("name", CONVNEXT_BUILDERS)
def test_structure_matches_torchvision(tv, name):
    assert_same_structure(getattr(models, name), getattr(tv.models, name))


def test_arguments_match_torchvision(tv):
    kwargs = {"num_classes": 7, "stochastic_depth_prob": 0.3, "layer_scale": 0.5}
    assert_same_structure(models.convnext_tiny, tv.models.convnext_tiny, **kwargs)


def test_same_seed_gives_torchvision_initial_weights(tv):
    assert_same_init(models.convnext_tiny, tv.models.convnext_tiny, num_classes=10)


def test_torchvision_state_dict_loads_strict_and_gives_same_output(tv):
    kwargs = {"num_classes": 10, "stochastic_depth_prob": 0.0}
    theirs = randomized(tv.models.convnext_tiny(**kwargs))
    ours = loaded_from(models.convnext_tiny, theirs.eval(), **kwargs)
    x = image()
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-4)
    assert_same_training_step(ours, theirs, image(n=4, size=64), atol=1e-4)


def test_stochastic_depth_rises_to_the_last_block():
    model = models.convnext_tiny()
    probs = [m.p for m in model.modules() if isinstance(m, StochasticDepth)]
    assert len(probs) == 18 and probs[0] == 0.0 and probs[-1] == pytest.approx(0.1)


def test_weights_and_bad_settings(tmp_path):
    with torch.device("meta"):
        keys = set(models.convnext_tiny().state_dict())
    assert "features.1.0.layer_scale" in keys and "classifier.0.weight" in keys
    small = models.ConvNeXt([CNBlockConfig(8, 16, 1), CNBlockConfig(16, None, 1)], num_classes=5)
    torch.save(small.state_dict(), tmp_path / "c.pth")
    with pytest.raises(RuntimeError, match="Missing key"):
        models.convnext_tiny(weights=tmp_path / "c.pth")
    with pytest.raises(ValueError, match="num_classes=4 was given"):
        models.convnext_tiny(weights=small.state_dict(), num_classes=4)
    with pytest.raises(ValueError, match="should not be empty"):
        models.ConvNeXt([])
    with pytest.raises(TypeError, match="CNBlockConfig"):
        models.ConvNeXt([(8, None, 1)])


@pytest.mark.slow  # compiles or runs long; the quick tier keeps smaller checks
def test_torch_compile_matches_eager():
    setting = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)]
    model = randomized(models.ConvNeXt(setting, num_classes=4)).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model)(x), model(x), atol=1e-5, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_torch_jit_script_matches_eager():
    setting = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 2)]
    model = randomized(models.ConvNeXt(setting, num_classes=4)).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.jit.script(model)(x), model(x))
