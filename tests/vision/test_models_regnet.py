"""RegNetX and RegNetY against torchvision's.

RegNetY-400MF and RegNetX-400MF (with and without squeeze-and-excitation) are compared
in values; every builder structurally (keys, shapes, module names, repr) on the meta
device.
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
from trivium.vision.models.regnet import REGNET_BUILDERS, BlockParams

pytestmark = pytest.mark.usefixtures("one_thread")

SMALLEST = ["regnet_y_400mf", "regnet_x_400mf"]


@pytest.fixture
def tv_on_meta(tv, monkeypatch):
    """torchvision, whose RegNet builders compute their stage plan with tensors of the
    default device: on the meta device that plan is computed on the CPU instead."""
    params = tv.models.regnet.BlockParams
    plan = params.from_init_params.__func__

    def on_cpu(cls, *args, **kwargs):
        with torch.device("cpu"):
            return plan(cls, *args, **kwargs)

    monkeypatch.setattr(params, "from_init_params", classmethod(on_cpu))
    return tv


@pytest.mark.parametrize("name", REGNET_BUILDERS)
def test_structure_matches_torchvision(tv_on_meta, name):
    assert_same_structure(getattr(models, name), getattr(tv_on_meta.models, name))


def test_arguments_match_torchvision(tv_on_meta):
    kwargs = {"num_classes": 7, "stem_width": 16, "activation": torch.nn.SiLU}
    assert_same_structure(models.regnet_y_400mf, tv_on_meta.models.regnet_y_400mf, **kwargs)


@pytest.mark.parametrize(
    "design",
    [(16, 48, 27.89, 2.09, 8), (23, 320, 69.86, 2.0, 168), (27, 456, 160.83, 2.52, 264)],
)
def test_block_params_match_torchvision(tv, design):
    ours = BlockParams.from_init_params(*design, bottleneck_multiplier=2.0, se_ratio=0.25)
    theirs = tv.models.regnet.BlockParams.from_init_params(
        *design, bottleneck_multiplier=2.0, se_ratio=0.25
    )
    assert vars(ours) == vars(theirs)


@pytest.mark.parametrize("name", SMALLEST)
def test_same_seed_gives_torchvision_initial_weights(tv, name):
    assert_same_init(getattr(models, name), getattr(tv.models, name), num_classes=10)


@pytest.mark.parametrize("name", SMALLEST)
def test_torchvision_state_dict_loads_strict_and_gives_same_output(tv, name):
    theirs = randomize_norms(getattr(tv.models, name)(num_classes=10)).eval()
    ours = loaded_from(getattr(models, name), theirs, num_classes=10)
    with torch.no_grad():
        torch.testing.assert_close(ours(image()), theirs(image()), atol=1e-5, rtol=1e-4)
    assert_same_training_step(ours, theirs, image(n=4, size=48))  # no dropout in RegNet


def test_weights_and_bad_settings(tmp_path):
    state = models.regnet_x_400mf(num_classes=5).state_dict()
    torch.save(state, tmp_path / "x.pth")
    assert models.regnet_x_400mf(weights=tmp_path / "x.pth").fc.out_features == 5
    with pytest.raises(ValueError, match="num_classes=4 was given"):
        models.regnet_x_400mf(weights=state, num_classes=4)
    with pytest.raises(RuntimeError, match="Missing key"):
        models.regnet_y_400mf(weights=state)
    with pytest.raises(ValueError, match="w_0=20"):
        BlockParams.from_init_params(16, 20, 27.89, 2.09, 8)


@pytest.mark.slow  # compiles or runs long; the quick tier keeps smaller checks
def test_torch_compile_matches_eager():
    params = BlockParams([1, 2], [16, 32], [8, 8], [1.0, 1.0], [2, 2], se_ratio=0.25)
    model = randomize_norms(models.RegNet(params, num_classes=4)).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model)(x), model(x), atol=1e-5, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_torch_jit_script_matches_eager():
    model = randomize_norms(models.regnet_y_400mf(num_classes=4)).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.jit.script(model)(x), model(x))
