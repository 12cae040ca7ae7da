"""The classic classifiers (AlexNet, SqueezeNet, ...) against torchvision's.

torchvision's models are its pure-Python code (see ``tests/peers.py``). Every builder
is compared in structure (meta device) and initial weights; each family's smallest
builder in eval outputs and a training step with torchvision's state dict loaded.
"""

from __future__ import annotations

import re

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

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    # torchvision's GoogLeNet warns that its default initialisation may change.
    pytest.mark.filterwarnings("ignore:The default weight initialization of GoogleNet"),
    pytest.mark.filterwarnings("ignore:The default weight initialization of inception_v3"),
]

FAMILIES = [
    "AlexNet",
    "SqueezeNet",
    "ShuffleNetV2",
    "MNASNet",
    "DenseNet",
    "GoogLeNet",
    "Inception3",
]
BUILDERS = [name for family in FAMILIES for name in models.CLASSIFICATION_FAMILIES[family]]
# Each family's smallest builder, and the arguments that take its randomness out in training.
SMALLEST = {
    "alexnet": {"dropout": 0.0},
    "squeezenet1_1": {"dropout": 0.0},
    "shufflenet_v2_x0_5": {},
    "mnasnet0_5": {"dropout": 0.0},
    "densenet121": {},
    "googlenet": {"dropout": 0.0, "aux_logits": False},
    "inception_v3": {"dropout": 0.0, "aux_logits": False},
}
# Seconds of backward: AlexNet's 61 M parameters, DenseNet-121's 121 layers.
HEAVY = {"alexnet", "densenet121", "inception_v3"}
# Initialised in seconds, and by the code of a smaller builder of their family.
LARGE_INIT = {"densenet161", "densenet169", "densenet201"}
# Inception v3 needs 75x75 inputs at least; in training, 139 keeps its last maps 3x3 (at
# 1x1, BatchNorm over two values makes the gradients ill-conditioned).
SIZE = {"inception_v3": 80}
TRAIN_SIZE = {"inception_v3": 139}
# Gradients of up to ~1e2 through 48 layers: the float noise of the sums' order is ~1e-5
# of the largest, so the absolute tolerance is scaled to it.
TRAIN_ATOL = {"inception_v3": 1e-3}
TRAINED = [pytest.param(n, marks=[pytest.mark.slow] if n in HEAVY else []) for n in SMALLEST]


@pytest.mark.parametrize("name", BUILDERS)
def test_structure_matches_torchvision(tv, name):
    assert_same_structure(getattr(models, name), getattr(tv.models, name), num_classes=7)


@pytest.mark.parametrize("name", [n for n in BUILDERS if n not in LARGE_INIT])
def test_same_seed_gives_torchvision_initial_weights(tv, name):
    assert_same_init(getattr(models, name), getattr(tv.models, name), num_classes=10)


@pytest.mark.parametrize("name", SMALLEST)
def test_torchvision_state_dict_loads_strict_and_gives_same_eval_output(tv, name):
    theirs = randomize_norms(getattr(tv.models, name)(num_classes=10)).eval()
    ours = loaded_from(getattr(models, name), theirs, num_classes=10)
    x = image(n=1, size=SIZE.get(name, 96))
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", TRAINED)
def test_training_step_matches_torchvision(tv, name):
    kwargs = {"num_classes": 3, **SMALLEST[name]}
    theirs = randomize_norms(getattr(tv.models, name)(**kwargs))
    ours = loaded_from(getattr(models, name), theirs, **kwargs)
    x = image(n=2, size=TRAIN_SIZE.get(name, 96))
    assert_same_training_step(ours, theirs, x, atol=TRAIN_ATOL.get(name, 1e-5))


def test_weights_fix_num_classes_and_refuse_downloads():
    builder = models.squeezenet1_1
    state = builder(num_classes=5).state_dict()
    model = builder(weights=state)
    assert all(model.state_dict()[k].equal(v) for k, v in state.items())
    with pytest.raises(ValueError, match="num_classes=4 was given"):
        builder(weights=state, num_classes=4)
    with pytest.raises(ValueError, match="cannot be downloaded"):
        builder(weights="IMAGENET1K_V1")
    with pytest.raises(ValueError, match="pretrained=True"):
        builder(pretrained=True)


def test_squeezenet_refuses_an_unknown_version():
    with pytest.raises(ValueError, match="1_0 or 1_1 expected"):
        models.SqueezeNet("1_2")


def test_mnasnet_loads_a_version_1_checkpoint_as_torchvision(tv):
    """A version-1 state dict (a fixed-width stem, as torchvision's mnasnet0_5 ImageNet
    weights) rebuilds the stem on load, as torchvision's does: the same model after."""
    state = _v1_checkpoint(tv)
    theirs, ours = tv.models.mnasnet0_5(num_classes=4), models.mnasnet0_5(num_classes=4)
    for model in (theirs, ours):
        with pytest.warns(UserWarning, match="new version of MNASNet"):
            model.load_state_dict(state, strict=True)
    assert ours._version == 1 and ours.layers[0].out_channels == 32
    assert ours.state_dict()._metadata[""]["version"] == 1
    theirs.eval(), ours.eval()
    x = image(n=1, size=64)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x))


def _v1_checkpoint(tv):
    """A version-1 mnasnet0_5 state dict, made by torchvision: loading a state dict marked
    version 1 rebuilds its stem (the load then fails on the old shapes)."""
    torch.manual_seed(3)
    donor = tv.models.mnasnet0_5(num_classes=4)
    state = donor.state_dict()
    state._metadata[""]["version"] = 1
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="size mismatch"):
        donor.load_state_dict(state)
    return randomize_norms(donor).state_dict()


def test_densenet_memory_efficient_gives_the_same_gradients():
    torch.manual_seed(0)
    plain = models.DenseNet(8, (2, 2, 2, 2), 16, num_classes=3)
    efficient = models.DenseNet(8, (2, 2, 2, 2), 16, num_classes=3, memory_efficient=True)
    efficient.load_state_dict(plain.state_dict())
    x = image(n=2, size=32)
    for model in (plain, efficient):
        model(x).square().sum().backward()
    for (key, a), b in zip(plain.named_parameters(), efficient.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, msg=key)


def test_densenet_weights_with_torchvision_file_key_names_load(tmp_path):
    """torchvision's ImageNet files name ``denselayer1.norm1`` as ``denselayer1.norm.1`` (and,
    older than BatchNorm's ``num_batches_tracked``, have none)."""
    state = models.densenet121(num_classes=3).state_dict()
    old_names = re.compile(r"(denselayer\d+\.(?:norm|relu|conv))([12])\.")
    old = {
        old_names.sub(r"\1.\2.", key): value
        for key, value in state.items()
        if not key.endswith("num_batches_tracked")
    }
    assert "features.denseblock1.denselayer1.norm.1.weight" in old
    torch.save(old, tmp_path / "densenet121.pth")
    loaded = models.densenet121(weights=tmp_path / "densenet121.pth").state_dict()
    assert list(loaded) == list(state)
    assert all(loaded[key].equal(value) for key, value in state.items())


def test_googlenet_auxiliary_outputs_in_training_match_torchvision(tv):
    kwargs = {"num_classes": 3, "dropout": 0.0, "dropout_aux": 0.0}
    torch.manual_seed(0)
    theirs = randomize_norms(tv.models.googlenet(**kwargs))
    ours = loaded_from(models.googlenet, theirs, **kwargs)
    x = image(n=2, size=64)
    a, b = ours.train()(x), theirs.train()(x)
    assert type(a).__name__ == "GoogLeNetOutputs" and a._fields == b._fields
    for ours_out, theirs_out in zip(a, b, strict=True):
        torch.testing.assert_close(ours_out, theirs_out, atol=1e-5, rtol=1e-4)


def test_googlenet_weights_as_torchvision_builder():
    """With weights, torchvision's googlenet turns on transform_input and drops the
    auxiliary heads unless asked for them."""
    state = models.googlenet(num_classes=4).state_dict()
    model = models.googlenet(weights=state)
    assert model.transform_input and not model.aux_logits and model.aux1 is None
    assert model.fc.out_features == 4
    kept = models.googlenet(weights=state, aux_logits=True, transform_input=False)
    assert kept.aux_logits and kept.aux2 is not None and not kept.transform_input
    without_aux = models.googlenet(weights=state).state_dict()
    assert models.googlenet(weights=without_aux).aux1 is None
    with pytest.raises(ValueError, match="no aux1"):
        models.googlenet(weights=without_aux, aux_logits=True)
    with pytest.raises(ValueError, match="num_classes=5 was given"):
        models.googlenet(weights=state, num_classes=5)
    with pytest.raises(ValueError, match="cannot be downloaded"):
        models.googlenet(weights="IMAGENET1K_V1")


@pytest.mark.slow  # a 299x299 image through Inception v3 in training, twice
def test_inception_v3_auxiliary_outputs_in_training_match_torchvision(tv):
    kwargs = {"num_classes": 3, "dropout": 0.0}
    torch.manual_seed(0)
    theirs = randomize_norms(tv.models.inception_v3(**kwargs))
    ours = loaded_from(models.inception_v3, theirs, **kwargs)
    x = image(n=2, size=299)
    a, b = ours.train()(x), theirs.train()(x)
    assert type(a).__name__ == "InceptionOutputs" and a._fields == b._fields
    for ours_out, theirs_out in zip(a, b, strict=True):
        torch.testing.assert_close(ours_out, theirs_out, atol=1e-5, rtol=1e-4)


def test_inception_v3_weights_as_torchvision_builder():
    """With weights, torchvision's inception_v3 turns on transform_input and keeps the
    auxiliary classifier unless aux_logits=False."""
    with torch.device("meta"):
        shapes = models.inception_v3(num_classes=4).state_dict()
    state = {k: torch.zeros_like(v, device="cpu") for k, v in shapes.items()}
    model = models.inception_v3(weights=state)
    assert model.transform_input and model.aux_logits and model.AuxLogits is not None
    dropped = models.inception_v3(weights=state, aux_logits=False)
    assert not dropped.aux_logits and dropped.AuxLogits is None
    without_aux = {k: v for k, v in state.items() if not k.startswith("AuxLogits.")}
    with pytest.raises(ValueError, match="no AuxLogits"):
        models.inception_v3(weights=without_aux)
    assert models.inception_v3(weights=without_aux, aux_logits=False).fc.out_features == 4
