"""Vision Transformers (ViT-B/16 .. H/14) against torchvision's.

ViT-B/32 at 64 pixels (four patches) is compared in values; every builder
structurally (keys, shapes, module names, repr) on the meta device.
"""

from __future__ import annotations

from collections import OrderedDict

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
from trivium.vision.models.vision_transformer import VIT_BUILDERS, ConvStemConfig

pytestmark = pytest.mark.usefixtures("one_thread")


def randomized(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """The zero-initialised head and class token given values, norms randomised."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in (model.heads.head.weight, model.heads.head.bias, model.class_token):
            p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    return randomize_norms(model, seed)


@pytest.mark.parametrize("name", VIT_BUILDERS)
def test_structure_matches_torchvision(tv, name):
    assert_same_structure(getattr(models, name), getattr(tv.models, name))


def test_arguments_match_torchvision(tv):
    kwargs = {"num_classes": 7, "image_size": 96, "dropout": 0.1, "attention_dropout": 0.2}
    assert_same_structure(models.vit_b_32, tv.models.vit_b_32, **kwargs)
    stem = [ConvStemConfig(16, 3, 2), ConvStemConfig(32, 3, 2)]
    kwargs = {"conv_stem_configs": stem, "representation_size": 24}
    assert_same_structure(
        models.VisionTransformer, tv.models.VisionTransformer, **kwargs,
        image_size=32, patch_size=4, num_layers=1, num_heads=2, hidden_dim=16, mlp_dim=32,
    )  # fmt: skip


def test_same_seed_gives_torchvision_initial_weights(tv):
    assert_same_init(models.vit_b_32, tv.models.vit_b_32, num_classes=10, image_size=64)
    kwargs = {
        "image_size": 32, "patch_size": 4, "num_layers": 1, "num_heads": 2, "hidden_dim": 16,
        "mlp_dim": 32, "representation_size": 24, "conv_stem_configs": [ConvStemConfig(8, 3, 4)],
    }  # fmt: skip
    assert_same_init(models.VisionTransformer, tv.models.VisionTransformer, **kwargs)


def test_torchvision_state_dict_loads_strict_and_gives_same_output(tv):
    theirs = randomized(tv.models.vit_b_32(num_classes=10, image_size=64)).eval()
    ours = loaded_from(models.vit_b_32, theirs, num_classes=10, image_size=64)
    x = image(size=64)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-4)
    assert_same_training_step(ours, theirs, image(n=4, size=64), atol=1e-4)


def test_weights_set_image_size_and_num_classes(tmp_path):
    state = models.vit_b_32(num_classes=5, image_size=96).state_dict()
    torch.save(state, tmp_path / "vit.pth")
    model = models.vit_b_32(weights=tmp_path / "vit.pth")
    assert (model.image_size, model.heads.head.out_features) == (96, 5)
    with pytest.raises(ValueError, match=r"image_size=224 was given, but .* for 96-pixel images"):
        models.vit_b_32(weights=state, image_size=224)


def test_older_mlp_key_names_load():
    model = models.vit_b_32(num_classes=3, image_size=32)
    state = model.state_dict()
    renamed = OrderedDict(
        (k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."), v)
        for k, v in state.items()
    )
    renamed._metadata = OrderedDict(
        (k, {**v, "version": 1} if k.endswith(".mlp") else v) for k, v in state._metadata.items()
    )
    assert "encoder.layers.encoder_layer_0.mlp.linear_1.weight" in renamed
    other = models.vit_b_32(num_classes=3, image_size=32)
    other.load_state_dict(renamed, strict=True)
    assert other.encoder.layers[0].mlp[0].weight.equal(model.encoder.layers[0].mlp[0].weight)


def test_bad_input_and_settings_raise():
    with pytest.raises(ValueError, match="image_size=30 is not a multiple of patch_size=4"):
        models.VisionTransformer(30, 4, 1, 1, 8, 16)
    model = models.VisionTransformer(16, 4, 1, 1, 8, 16)
    with pytest.raises(AssertionError, match="Wrong image height! Expected 16 but got 32"):
        model(torch.zeros(1, 3, 32, 16))


@pytest.mark.slow  # compiles or runs long; the quick tier keeps smaller checks
def test_torch_compile_matches_eager():
    model = randomized(models.VisionTransformer(32, 8, 2, 2, 32, 64, num_classes=4)).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model)(x), model(x), atol=1e-5, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_torch_jit_script_matches_eager():
    model = randomized(models.VisionTransformer(32, 8, 2, 2, 32, 64, num_classes=4)).eval()
    x = image(size=32)
    with torch.no_grad():
        torch.testing.assert_close(torch.jit.script(model)(x), model(x))
