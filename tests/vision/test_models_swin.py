"""Swin Transformer T/S/B and V2 T/S/B against torchvision's.

Swin-T and Swin-V2-T are compared in values at 64x64 (16x16 tokens in the first
stage: padded, shifted and masked windows); every builder structurally (keys, shapes,
module names, repr) on the meta device.
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
from trivium.vision.models.swin_transformer import SWIN_BUILDERS, shifted_window_attention

pytestmark = pytest.mark.usefixtures("one_thread")

SMALLEST = ["swin_t", "swin_v2_t"]


@pytest.mark.parametrize("name", SWIN_BUILDERS)
def test_structure_matches_torchvision(tv, name):
    assert_same_structure(getattr(models, name), getattr(tv.models, name))


@pytest.mark.parametrize("name", SMALLEST)
def test_arguments_match_torchvision(tv, name):
    kwargs = {"num_classes": 7, "mlp_ratio": 2.0, "dropout": 0.1, "attention_dropout": 0.2}
    assert_same_structure(getattr(models, name), getattr(tv.models, name), **kwargs)


def without_stochastic_depth(model: torch.nn.Module) -> torch.nn.Module:
    """torchvision's Swin builders fix the drop probability: set it to 0 afterwards."""
    for m in model.modules():
        if type(m).__name__ == "StochasticDepth":
            m.p = 0.0
    return model


@pytest.mark.parametrize("name", SMALLEST)
def test_same_seed_gives_torchvision_initial_weights(tv, name):
    assert_same_init(getattr(models, name), getattr(tv.models, name), num_classes=10)


@pytest.mark.parametrize("name", SMALLEST)
def test_torchvision_state_dict_loads_strict_and_gives_same_output(tv, name):
    theirs = randomize_norms(without_stochastic_depth(getattr(tv.models, name)(num_classes=10)))
    ours = loaded_from(getattr(models, name), theirs.eval(), num_classes=10)
    without_stochastic_depth(ours)
    x = image(size=64)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-4)
    assert_same_training_step(ours, theirs, image(n=2, size=64), atol=1e-4)


@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("size", [(6, 5), (8, 8)])
def test_shifted_window_attention_matches_torchvision(tv, v2, size):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, *size, 8, generator=g)
    args = (torch.randn(24, 8, generator=g), torch.randn(8, 8, generator=g))
    bias = torch.randn(1, 2, 9, 9, generator=g)
    kwargs = {"qkv_bias": torch.randn(24, generator=g), "proj_bias": torch.randn(8, generator=g)}
    if v2:
        kwargs["logit_scale"] = torch.rand(2, 1, 1, generator=g) * 5
    ours = shifted_window_attention(x, *args, bias, [3, 3], 2, [1, 1], **kwargs)
    theirs = tv.models.swin_transformer.shifted_window_attention(
        x, *args, bias, [3, 3], 2, [1, 1], **kwargs
    )
    torch.testing.assert_close(ours, theirs)


def test_stochastic_depth_rises_to_the_builders_value():
    probs = [m.p for m in models.swin_t().modules() if type(m).__name__ == "StochasticDepth"]
    assert len(probs) == 12 and probs[0] == 0.0 and probs[-1] == pytest.approx(0.2)
    model = models.swin_t(stochastic_depth_prob=0.5)
    assert model.features[7][1].stochastic_depth.p == pytest.approx(0.5)


def test_weights_and_bad_settings(tmp_path):
    state = models.swin_t(num_classes=5).state_dict()
    torch.save(state, tmp_path / "swin.pth")
    assert models.swin_t(weights=tmp_path / "swin.pth").head.out_features == 5
    with pytest.raises(ValueError, match="num_classes=4 was given"):
        models.swin_t(weights=state, num_classes=4)
    with pytest.raises(RuntimeError, match="Missing key"):
        models.swin_v2_t(weights=state)
    with pytest.raises(ValueError, match="window_size and shift_size must be of length 2"):
        models.swin_transformer.ShiftedWindowAttention(8, [7], [0, 0], 2)


@pytest.mark.slow  # minutes of compilation on a shared 2-core CPU
def test_torch_compile_matches_eager():
    # One stage of a plain and a shifted block: compiling more takes minutes on a CPU.
    model = models.SwinTransformer([4, 4], 16, [2], [2], [2, 2], num_classes=4)
    model = randomize_norms(model).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model)(x), model(x), atol=1e-5, rtol=1e-4)
