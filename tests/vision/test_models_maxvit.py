"""MaxViT-T against torchvision's.

Compared structurally at 224x224 on the meta device and in values at 64x64 (the
smallest size whose every stage divides into 2x2 partitions: a small MaxVit built
from torchvision's class and ours with the same arguments).
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

# maxvit_t's blocks, narrower, with 2x2 partitions so that 64x64 inputs fit.
SMALL = {
    "input_size": (64, 64),
    "stem_channels": 16,
    "partition_size": 2,
    "block_channels": [16, 32, 32, 64],
    "block_layers": [2, 1, 2, 1],
    "head_dim": 8,
    "stochastic_depth_prob": 0.0,
    "num_classes": 5,
}


def test_structure_matches_torchvision(tv):
    assert_same_structure(models.maxvit_t, tv.models.maxvit_t)
    assert_same_structure(models.maxvit_t, tv.models.maxvit_t, num_classes=7, mlp_dropout=0.1)
    assert_same_structure(models.MaxVit, tv.models.MaxVit, **SMALL)


def test_same_seed_gives_torchvision_initial_weights(tv):
    assert_same_init(models.MaxVit, tv.models.MaxVit, **SMALL)


def test_torchvision_state_dict_loads_strict_and_gives_same_output(tv):
    theirs = randomize_norms(tv.models.MaxVit(**SMALL)).eval()
    ours = loaded_from(models.MaxVit, theirs, **SMALL)
    x = image(size=64)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-4)
    assert_same_training_step(ours, theirs, image(n=4, size=64), atol=1e-4)


def test_maxvit_t_loads_torchvision_state_dict(tv):
    theirs = tv.models.maxvit_t(num_classes=3)
    ours = models.maxvit_t(weights=theirs.state_dict())
    assert ours.classifier[5].out_features == 3
    x = image(n=1, size=224)
    with torch.no_grad():
        torch.testing.assert_close(ours.eval()(x), theirs.eval()(x), atol=1e-5, rtol=1e-4)


def test_stochastic_depth_rises_linearly():
    model = models.maxvit_t()
    probs = [m.p for m in model.modules() if type(m).__name__ == "StochasticDepth"]
    # a layer's MBConv and both attentions share its probability (the first MBConv, at
    # p=0, has an identity instead, as in torchvision)
    assert probs[-1] == pytest.approx(0.2) and probs == sorted(probs)


def test_bad_settings_raise_value_error():
    with pytest.raises(ValueError, match="is not divisible by partition size 7"):
        models.maxvit_t(input_size=(64, 64))
    with pytest.raises(ValueError, match="feat_dim: 10 must be divisible by head_dim: 4"):
        models.maxvit.RelativePositionalMultiHeadAttention(10, 4, 4)
    with pytest.raises(ValueError, match="partition_type"):
        models.maxvit.PartitionAttentionLayer(
            8, 4, 2, "diagonal", (4, 4), 2, torch.nn.GELU, torch.nn.LayerNorm, 0.0, 0.0, 0.0
        )


@pytest.mark.slow  # minutes of compilation on a shared 2-core CPU
def test_torch_compile_matches_eager():
    small = {**SMALL, "block_channels": [16], "block_layers": [1], "input_size": (16, 16)}
    model = randomize_norms(models.MaxVit(**small)).eval()
    x = image(size=16)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model)(x), model(x), atol=1e-5, rtol=1e-4)
