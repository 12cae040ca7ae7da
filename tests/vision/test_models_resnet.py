"""ResNet family, FrozenBatchNorm2d and IntermediateLayerGetter against torchvision's.

torchvision's models are its pure-Python code (see ``tests/peers.py``). Structure is
compared on the meta device (no memory, no init cost); values on small inputs.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from trivium.core.errors import DecodeError
from trivium.vision import models
from trivium.vision.models import IntermediateLayerGetter, ResNet, load_weights
from trivium.vision.ops import FrozenBatchNorm2d

BUILDERS = list(models.resnet.RESNET_BUILDERS)  # each is compared with torchvision's
# Forward passes are compared on these (both blocks, groups); the larger ones, built of
# the same blocks with other counts and widths, only structurally (time).
FORWARD_BUILDERS = ["resnet18", "resnet34", "resnet50", "resnext50_32x4d"]


pytestmark = pytest.mark.usefixtures("one_thread")


def shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def randomize_norms(model: nn.Module, seed: int = 0) -> nn.Module:
    """Non-trivial norm statistics and affine values, so eval outputs depend on every buffer."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d) or type(m).__name__ == "FrozenBatchNorm2d":
                c = m.running_mean.shape[0]
                m.weight.copy_(torch.rand(c, generator=g) + 0.5)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
    return model


def image(n: int = 1, size: int = 64, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def assert_same_output(a: nn.Module, b: nn.Module, x: torch.Tensor) -> None:
    with torch.no_grad():
        torch.testing.assert_close(a(x), b(x), atol=1e-5, rtol=1e-5)


def loaded(builder: Callable[..., nn.Module], state: dict, **kwargs) -> nn.Module:
    """``builder(**kwargs)`` with ``state`` loaded strictly, built without initialising
    (on the meta device, then the state's tensors assigned): half the cost of a model."""
    with torch.device("meta"):
        model = builder(**kwargs)
    model.load_state_dict(state, strict=True, assign=True)
    return model.eval()


# ------------------------------------------------------------------ structure and init


@pytest.mark.parametrize("name", BUILDERS)
def test_state_dict_keys_and_shapes_match_torchvision(tv, name):
    with torch.device("meta"):
        ours, theirs = getattr(models, name)(), getattr(tv.models, name)()
    assert list(shapes(ours).items()) == list(shapes(theirs).items())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize(
    ("name", "zero_init_residual"), [("resnet18", False), ("resnet18", True), ("resnet50", True)]
)
def test_same_seed_gives_torchvision_initial_weights(tv, name, zero_init_residual):
    torch.manual_seed(0)
    ours = getattr(models, name)(zero_init_residual=zero_init_residual)
    torch.manual_seed(0)
    theirs = getattr(tv.models, name)(zero_init_residual=zero_init_residual)
    theirs_state = theirs.state_dict()
    for key, value in ours.state_dict().items():
        assert torch.equal(value, theirs_state[key]), key


def test_init_scheme():
    torch.manual_seed(0)
    model = models.resnet50()
    conv = model.layer3[0].conv2  # 256 out channels, 3x3: fan_out = 2304
    assert abs(conv.weight.std().item() - (2 / (256 * 9)) ** 0.5) < 2e-3
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            assert torch.all(m.weight == 1) and torch.all(m.bias == 0)
    zeroed = models.resnet18(zero_init_residual=True)
    for block in [*zeroed.layer1, *zeroed.layer4]:
        assert torch.all(block.bn2.weight == 0) and torch.all(block.bn1.weight == 1)
    bottleneck = models.resnet50(zero_init_residual=True).layer2[1]
    assert torch.all(bottleneck.bn3.weight == 0) and torch.all(bottleneck.bn2.weight == 1)


# ------------------------------------------------------------------------ values


@pytest.mark.parametrize("name", FORWARD_BUILDERS)
def test_torchvision_state_dict_loads_strict_and_gives_same_eval_output(tv, name):
    theirs = randomize_norms(getattr(tv.models, name)()).eval()
    ours = loaded(getattr(models, name), theirs.state_dict())
    assert_same_output(ours, theirs, image())
    loaded(getattr(tv.models, name), ours.state_dict())  # and back, strictly


def test_training_step_matches_torchvision(tv):
    ours = models.resnet18(num_classes=7)
    theirs = tv.models.resnet18(num_classes=7)
    theirs.load_state_dict(ours.state_dict())
    x, y = image(2, 32), torch.tensor([0, 6])
    for model in (ours, theirs):
        nn.functional.cross_entropy(model(x), y).backward()
    their_params = dict(theirs.named_parameters())
    for key, p in ours.named_parameters():
        torch.testing.assert_close(p.grad, their_params[key].grad, atol=1e-5, rtol=1e-4)
    their_buffers = dict(theirs.named_buffers())
    for key, b in ours.named_buffers():  # batch statistics were updated the same way
        torch.testing.assert_close(b, their_buffers[key], atol=1e-6, rtol=1e-5)


def test_replace_stride_with_dilation(tv):
    dilation = [False, True, True]
    theirs = randomize_norms(tv.models.resnet50(replace_stride_with_dilation=dilation)).eval()
    ours = loaded(models.resnet50, theirs.state_dict(), replace_stride_with_dilation=dilation)
    assert_same_output(ours, theirs, image())
    assert ours.layer4[1].conv2.dilation == (4, 4) and ours.layer4[0].conv2.stride == (1, 1)
    body = IntermediateLayerGetter(ours, {"layer2": "c3", "layer4": "c5"})
    with torch.no_grad():
        out = body(image())
    assert out["c3"].shape[-2:] == out["c5"].shape[-2:] == (8, 8)  # output stride 8
    with pytest.raises(ValueError, match="3-element"):
        models.resnet50(replace_stride_with_dilation=[True])
    with pytest.raises(NotImplementedError, match="Dilation"):
        models.resnet18(replace_stride_with_dilation=[False, False, True])


def test_num_classes(tv):
    with torch.device("meta"):
        ours = models.resnet50(num_classes=10)
        ours.load_state_dict(tv.models.resnet50(num_classes=10).state_dict())
    assert ours.fc.out_features == 10 and ours.fc.in_features == 2048
    assert models.resnet18(num_classes=3).eval()(image()).shape == (1, 3)


def test_frozen_batchnorm_resnet_loads_torchvision_state_dicts(tv):
    theirs = randomize_norms(tv.models.resnet50()).eval()
    state = theirs.state_dict()
    assert any(key.endswith("num_batches_tracked") for key in state)
    # strict: FrozenBatchNorm2d drops num_batches_tracked, as torchvision's
    ours = models.resnet50(weights=state, norm_layer=FrozenBatchNorm2d).train()
    assert not any(isinstance(m, nn.BatchNorm2d) for m in ours.modules())
    frozen_tv = loaded(tv.models.resnet50, state, norm_layer=tv.ops.misc.FrozenBatchNorm2d)
    assert list(shapes(ours).items()) == list(shapes(frozen_tv).items())
    frozen_tv.load_state_dict(ours.state_dict(), strict=True)
    # the same arithmetic as torchvision's frozen model; training mode changes nothing
    assert_same_output(ours, frozen_tv, image())
    with torch.no_grad():  # BatchNorm2d's rounding differs a little over 50 layers
        torch.testing.assert_close(ours(image()), theirs(image()), atol=1e-3, rtol=1e-3)


def test_channels_last_gives_the_same_output():
    model = randomize_norms(models.resnet18()).eval()
    x = image(2)
    with torch.no_grad():
        expected = model(x)
        model = model.to(memory_format=torch.channels_last)
        x_cl = x.contiguous(memory_format=torch.channels_last)
        torch.testing.assert_close(model(x_cl), expected, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(model(x), expected, atol=1e-4, rtol=1e-4)
        features = IntermediateLayerGetter(model, {"layer3": "out"})(x_cl)["out"]
    assert features.is_contiguous(memory_format=torch.channels_last)


def test_torch_compile_matches_eager():
    model = randomize_norms(models.resnet18(num_classes=10)).eval()
    x = image(1, 32)
    compiled = torch.compile(model, fullgraph=True)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), atol=1e-4, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_torch_jit_script_matches_eager():
    model = randomize_norms(models.resnet18(norm_layer=FrozenBatchNorm2d)).eval()
    scripted = torch.jit.script(model)
    with torch.no_grad():
        torch.testing.assert_close(scripted(image()), model(image()))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_cuda_matches_cpu():
    model = randomize_norms(models.resnet50(norm_layer=FrozenBatchNorm2d)).eval()
    x = image(2)
    with torch.no_grad(), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        expected = model(x)
        model = model.cuda()
        torch.testing.assert_close(model(x.cuda()).cpu(), expected, atol=1e-3, rtol=1e-3)
        features = IntermediateLayerGetter(model, {"layer4": "c5"})(x.cuda())["c5"]
    assert features.device.type == "cuda"
    reloaded = models.resnet50(weights=model.state_dict(), norm_layer=FrozenBatchNorm2d)
    assert next(reloaded.parameters()).device.type == "cpu"  # weights never move the model


# ----------------------------------------------------------------------- weights=


def test_weights_from_file_and_dict(tv, tmp_path):
    theirs = randomize_norms(tv.models.resnet18(num_classes=5)).eval()
    state = theirs.state_dict()
    path = tmp_path / "resnet18.pth"
    torch.save(state, path)
    for weights in (path, str(path), state):
        model = models.resnet18(weights=weights, progress=False).eval()
        assert model.fc.out_features == 5  # num_classes follows the weights
        assert_same_output(model, theirs, image())
    assert models.resnet18(weights=path, num_classes=5).fc.out_features == 5
    # torchvision's first weight files predate BatchNorm's num_batches_tracked
    old = {k: v for k, v in state.items() if not k.endswith("num_batches_tracked")}
    assert_same_output(models.resnet18(weights=old).eval(), theirs, image())


def test_weights_num_classes_mismatch_names_both_sizes():
    state = models.resnet18(num_classes=1000).state_dict()
    with pytest.raises(ValueError, match=r"num_classes=10 was given.*fc has 1000 outputs"):
        models.resnet18(weights=state, num_classes=10)


def test_weights_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nowhere" / "resnet50.pth"
    with pytest.raises(FileNotFoundError, match=r"nowhere/resnet50\.pth") as info:
        models.resnet50(weights=missing)
    assert info.value.filename == str(missing)


@pytest.mark.parametrize(
    "weights",
    [
        "IMAGENET1K_V1",
        "DEFAULT",
        "ResNet50_Weights.IMAGENET1K_V2",
        "https://download.pytorch.org/models/resnet50-11ad3fa6.pth",
        True,
        1,
        b"resnet50.pth",
        torch.zeros(3),
    ],
)
def test_weights_that_are_not_a_path_or_state_dict_raise_value_error(weights):
    with pytest.raises(ValueError, match=r"local file path .* or a state dict") as info:
        models.resnet50(weights=weights)
    assert not isinstance(info.value, FileNotFoundError)


def test_weights_torchvision_enum_and_pretrained_raise_value_error(tv):
    with pytest.raises(ValueError, match="cannot be downloaded"):
        models.resnet50(weights=tv.models.ResNet50_Weights.IMAGENET1K_V1)
    with pytest.raises(ValueError, match="pretrained=True"):
        models.resnet50(pretrained=True)
    assert models.resnet18(pretrained=False).fc.out_features == 1000


def test_weights_bad_files_raise_decode_error_naming_the_file(tmp_path):
    garbage = tmp_path / "garbage.pth"
    garbage.write_bytes(b"not a checkpoint at all")
    with pytest.raises(DecodeError, match=r"garbage\.pth: resnet18: not a readable"):
        models.resnet18(weights=garbage)
    pickled = tmp_path / "pickled.pth"
    pickled.write_bytes(pickle.dumps(Path("x"), protocol=2))  # weights_only refuses objects
    with pytest.raises(DecodeError, match=r"pickled\.pth"):
        models.resnet18(weights=pickled)
    checkpoint = tmp_path / "checkpoint.pth"
    torch.save({"model": models.resnet18().state_dict(), "epoch": 3}, checkpoint)
    with pytest.raises(DecodeError, match=r"checkpoint\['model'\]"):
        models.resnet18(weights=checkpoint)
    torch.save([torch.zeros(1)], tmp_path / "list.pth")
    with pytest.raises(DecodeError, match="holds a list"):
        models.resnet18(weights=tmp_path / "list.pth")


def test_weights_of_another_architecture_fail_strict_load():
    with torch.device("meta"):
        state = models.resnet18().state_dict()
    with pytest.raises(RuntimeError, match="Missing key"):
        models.resnet50(weights=state)
    with pytest.raises(ValueError, match="not a state dict of tensors"):
        load_weights({"fc.weight": [1.0]}, "resnet18")


def test_builders_fix_their_architecture_arguments():
    with pytest.raises(ValueError, match="groups=8 was given, but resnext50_32x4d has 32"):
        models.resnext50_32x4d(groups=8)
    with torch.device("meta"):
        assert models.resnext50_32x4d(groups=32).groups == 32
    with pytest.raises(ValueError, match="BasicBlock only supports"):
        ResNet(models.BasicBlock, [1, 1, 1, 1], groups=2)


# ----------------------------------------------------------- FrozenBatchNorm2d, getter


def test_frozen_batchnorm_matches_torchvision(tv):
    theirs = randomize_norms(tv.ops.misc.FrozenBatchNorm2d(16, eps=1e-3))
    ours = FrozenBatchNorm2d(16, eps=1e-3)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    assert list(shapes(ours).items()) == list(shapes(theirs).items())
    assert list(ours.state_dict()) == ["weight", "bias", "running_mean", "running_var"]
    assert repr(ours) == repr(theirs) == "FrozenBatchNorm2d(16, eps=0.001)"
    assert list(ours.parameters()) == []
    x = torch.randn(2, 16, 8, 8, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(ours(x), theirs(x), atol=0, rtol=0)
    bn = randomize_norms(nn.BatchNorm2d(16, eps=1e-3)).eval()
    ours.load_state_dict(bn.state_dict(), strict=True)  # num_batches_tracked is dropped
    with torch.no_grad():
        torch.testing.assert_close(ours.train()(x), bn(x), atol=1e-5, rtol=1e-5)


def test_intermediate_layer_getter_matches_torchvision(tv):
    from torchvision.models._utils import IntermediateLayerGetter as TvGetter

    theirs_model = randomize_norms(tv.models.resnet50()).eval()
    ours_model = loaded(models.resnet50, theirs_model.state_dict())
    layers = {"layer1": "0", "layer2": "1", "layer3": "2", "layer4": "3"}
    ours, theirs = IntermediateLayerGetter(ours_model, layers), TvGetter(theirs_model, layers)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    with torch.no_grad():
        a, b = ours(image()), theirs(image())
    assert list(a) == list(b) == ["0", "1", "2", "3"]
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=1e-5, rtol=1e-5)
    assert a["3"].shape == (1, 2048, 2, 2)
    with pytest.raises(ValueError, match=r"not present in model: \['layer5'\]"):
        IntermediateLayerGetter(ours_model, {"layer5": "x"})
