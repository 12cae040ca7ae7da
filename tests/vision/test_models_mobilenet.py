"""MobileNetV2 and MobileNetV3 (large, small) against torchvision's.

torchvision's models are its pure-Python code (see ``tests/peers.py``).
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

pytestmark = pytest.mark.usefixtures("one_thread")

BUILDERS = ["mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small"]


@pytest.mark.parametrize("name", BUILDERS)
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"num_classes": 7, "width_mult": 0.75}, {"dropout": 0.5}],
    ids=["default", "narrow", "dropout"],
)
def test_structure_matches_torchvision(tv, name, kwargs):
    assert_same_structure(getattr(models, name), getattr(tv.models, name), **kwargs)


@pytest.mark.parametrize("name", ["mobilenet_v3_large", "mobilenet_v3_small"])
@pytest.mark.parametrize("kwargs", [{"reduced_tail": True}, {"dilated": True}])
def test_v3_detection_and_segmentation_variants_match_torchvision(tv, name, kwargs):
    assert_same_structure(getattr(models, name), getattr(tv.models, name), **kwargs)
    ours = getattr(models, name)(**kwargs)
    dilations = [m.dilation for m in ours.modules() if isinstance(m, torch.nn.Conv2d)]
    theirs = getattr(tv.models, name)(**kwargs)
    assert dilations == [m.dilation for m in theirs.modules() if isinstance(m, torch.nn.Conv2d)]


@pytest.mark.parametrize("name", BUILDERS)
def test_same_seed_gives_torchvision_initial_weights(tv, name):
    assert_same_init(getattr(models, name), getattr(tv.models, name), num_classes=10)


@pytest.mark.parametrize("name", BUILDERS)
def test_torchvision_state_dict_loads_strict_and_gives_same_eval_output(tv, name):
    theirs = randomize_norms(getattr(tv.models, name)(num_classes=10)).eval()
    ours = loaded_from(getattr(models, name), theirs, num_classes=10)
    x = image()
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ["mobilenet_v2", "mobilenet_v3_small"])
def test_training_step_matches_torchvision(tv, name):
    theirs = randomize_norms(getattr(tv.models, name)(num_classes=3, dropout=0.0))
    ours = loaded_from(getattr(models, name), theirs, num_classes=3, dropout=0.0)
    assert_same_training_step(ours, theirs, image(n=4, size=48))


def test_weights_fix_num_classes_and_refuse_downloads(tmp_path):
    model = models.mobilenet_v3_small(num_classes=5)
    torch.save(model.state_dict(), tmp_path / "m.pth")
    loaded = models.mobilenet_v3_small(weights=tmp_path / "m.pth")
    assert loaded.classifier[3].out_features == 5
    with pytest.raises(ValueError, match="num_classes=4 was given"):
        models.mobilenet_v3_small(weights=model.state_dict(), num_classes=4)
    with pytest.raises(ValueError, match="cannot be downloaded"):
        models.mobilenet_v2(weights="IMAGENET1K_V2")
    with pytest.raises(ValueError, match="pretrained=True"):
        models.mobilenet_v3_large(pretrained=True)
    with pytest.raises(RuntimeError, match="Missing key"):
        models.mobilenet_v3_large(weights=model.state_dict())


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="inverted_residual_setting"):
        models.MobileNetV2(inverted_residual_setting=[[1, 16, 1]])
    with pytest.raises(ValueError, match="stride should be 1 or 2"):
        models.mobilenetv2.InvertedResidual(8, 8, 3, 6)
    with pytest.raises(ValueError, match="should not be empty"):
        models.MobileNetV3([], 16)
    with pytest.raises(ValueError, match="activation"):
        models.mobilenetv3.InvertedResidualConfig(8, 3, 8, 8, False, "GELU", 1, 1, 1.0)


@pytest.mark.slow  # compiles or runs long; the quick tier keeps smaller checks
def test_torch_compile_matches_eager():
    model = randomize_norms(models.mobilenet_v3_small(num_classes=4)).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model)(x), model(x), atol=1e-5, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("name", ["mobilenet_v2", "mobilenet_v3_small"])
def test_torch_jit_script_matches_eager(name):
    model = randomize_norms(getattr(models, name)(num_classes=4)).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.jit.script(model)(x), model(x))
