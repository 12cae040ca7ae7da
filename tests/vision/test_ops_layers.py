"""The building-block layers against torchvision's: state dicts load with ``strict=True``
and give equal outputs; the random layers draw the same under the same seed."""

from __future__ import annotations

import pytest
import torch
from peers import require_torchvision
from torch import nn

from trivium.vision import ops


@pytest.fixture(scope="module")
def tv_ops():
    return require_torchvision().ops


def _load_and_compare(ours: nn.Module, theirs: nn.Module, x: torch.Tensor, train: bool = False):
    """torchvision's state dict into ours (strict), then the same output."""
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    ours.load_state_dict(theirs.state_dict(), strict=True)
    ours.train(train)
    theirs.train(train)
    torch.testing.assert_close(ours(x.clone()), theirs(x.clone()), rtol=0, atol=0)
    assert repr(ours).split("(", 1)[1] == repr(theirs).split("(", 1)[1]


def _randomise(module: nn.Module, seed: int) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for t in [*module.parameters(), *module.buffers()]:
            if t.is_floating_point():
                t.copy_(torch.rand(t.shape, generator=g) + 0.5)
    return module


CONV2D_CASES = [
    {},
    {"kernel_size": 1, "stride": 2},
    {"kernel_size": (3, 5), "dilation": (1, 2), "groups": 2},
    {"kernel_size": 3, "dilation": 2, "activation_layer": nn.SiLU, "inplace": None},
    {"norm_layer": None, "activation_layer": nn.Hardswish},
    {"norm_layer": None, "activation_layer": None, "bias": False, "padding": 0},
    {"padding": "same"},
]


@pytest.mark.parametrize("kwargs", CONV2D_CASES)
def test_conv2d_norm_activation(tv_ops, kwargs):
    ours = _randomise(ops.Conv2dNormActivation(4, 6, **kwargs), 0)
    theirs = _randomise(tv_ops.Conv2dNormActivation(4, 6, **kwargs), 1)
    assert ours.out_channels == theirs.out_channels
    _load_and_compare(ours, theirs, torch.randn(2, 4, 9, 11))


@pytest.mark.parametrize("kwargs", [{}, {"kernel_size": (1, 3, 3), "stride": (1, 2, 2)}])
def test_conv3d_norm_activation(tv_ops, kwargs):
    ours = _randomise(ops.Conv3dNormActivation(3, 4, **kwargs), 0)
    theirs = _randomise(tv_ops.Conv3dNormActivation(3, 4, **kwargs), 1)
    _load_and_compare(ours, theirs, torch.randn(1, 3, 4, 7, 7))


def test_conv_norm_activation_base_warns(tv_ops):
    from trivium.vision.ops.misc import ConvNormActivation

    with pytest.warns(UserWarning, match="Conv2dNormActivation"):
        ConvNormActivation(3, 4)


@pytest.mark.parametrize(
    "kwargs", [{}, {"activation": nn.SiLU, "scale_activation": nn.Hardsigmoid}]
)
def test_squeeze_excitation(tv_ops, kwargs):
    ours = _randomise(ops.SqueezeExcitation(8, 3, **kwargs), 0)
    theirs = _randomise(tv_ops.SqueezeExcitation(8, 3, **kwargs), 1)
    _load_and_compare(ours, theirs, torch.randn(2, 8, 5, 5))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"norm_layer": nn.LayerNorm, "activation_layer": nn.GELU, "bias": False},
        {"dropout": 0.5, "inplace": False},
    ],
)
def test_mlp(tv_ops, kwargs):
    ours = _randomise(ops.MLP(5, [7, 6, 3], **kwargs), 0)
    theirs = _randomise(tv_ops.MLP(5, [7, 6, 3], **kwargs), 1)
    _load_and_compare(ours, theirs, torch.randn(4, 5))
    if kwargs.get("dropout"):  # dropout in training draws the same under one seed
        ours.train()
        theirs.train()
        x = torch.randn(4, 5)
        torch.manual_seed(3)
        a = ours(x)
        torch.manual_seed(3)
        torch.testing.assert_close(a, theirs(x), rtol=0, atol=0)


def test_mlp_rejects_no_layers():
    with pytest.raises(ValueError, match="hidden_channels"):
        ops.MLP(3, [])


def test_permute(tv_ops):
    x = torch.randn(2, 3, 4, 5)
    assert torch.equal(ops.Permute([0, 2, 3, 1])(x), tv_ops.Permute([0, 2, 3, 1])(x))
    assert ops.Permute([0, 2, 3, 1])(x).data_ptr() == x.data_ptr()  # a view


def test_frozen_batch_norm(tv_ops):
    ours = _randomise(ops.FrozenBatchNorm2d(6), 0)
    theirs = _randomise(tv_ops.FrozenBatchNorm2d(6), 1)
    _load_and_compare(ours, theirs, torch.randn(2, 6, 3, 3))


# -- random layers ------------------------------------------------------------------------------


@pytest.mark.parametrize(("p", "mode"), [(0.3, "row"), (0.5, "batch"), (1.0, "row"), (0.0, "row")])
def test_stochastic_depth_equals_torchvision(tv_ops, p, mode):
    x = torch.randn(16, 3, 4)
    for seed in range(4):
        torch.manual_seed(seed)
        ours = ops.stochastic_depth(x, p, mode)
        torch.manual_seed(seed)
        theirs = tv_ops.stochastic_depth(x, p, mode)
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    # Rows are kept whole, scaled by 1 / (1 - p), or zeroed.
    kept = ours.flatten(1).ne(0).any(1)
    scale = 1 / (1 - p) if p < 1 else 0.0
    torch.testing.assert_close(ours[kept], x[kept] * scale)
    assert torch.equal(ops.stochastic_depth(x, p, mode, training=False), x)


def test_stochastic_depth_module(tv_ops):
    ours, theirs = ops.StochasticDepth(0.4, "row"), tv_ops.StochasticDepth(0.4, "row")
    assert repr(ours) == repr(theirs)
    x = torch.randn(8, 2)
    torch.manual_seed(0)
    a = ours(x)
    torch.manual_seed(0)
    torch.testing.assert_close(a, theirs(x))
    assert torch.equal(ours.eval()(x), x)


@pytest.mark.parametrize(
    ("fn", "shape", "block_size"),
    [
        ("drop_block2d", (2, 3, 10, 12), 3),
        ("drop_block2d", (1, 2, 5, 6), 7),  # the block shrinks to the map's side
        ("drop_block3d", (2, 2, 5, 6, 7), 3),
    ],
)
@pytest.mark.parametrize("inplace", [False, True])
def test_drop_block_equals_torchvision(tv_ops, fn, shape, block_size, inplace):
    x = torch.randn(shape)
    for seed in range(3):
        a, b = x.clone(), x.clone()
        torch.manual_seed(seed)
        ours = getattr(ops, fn)(a, 0.3, block_size, inplace=inplace)
        torch.manual_seed(seed)
        theirs = getattr(tv_ops, fn)(b, 0.3, block_size, inplace=inplace)
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
        assert (ours.data_ptr() == a.data_ptr()) == inplace
    assert torch.equal(getattr(ops, fn)(x, 0.3, block_size, training=False), x)


def test_drop_block_modules(tv_ops):
    for name, x in (
        ("DropBlock2d", torch.randn(2, 2, 8, 8)),
        ("DropBlock3d", torch.randn(1, 2, 5, 5, 5)),
    ):
        ours, theirs = getattr(ops, name)(0.2, 3), getattr(tv_ops, name)(0.2, 3)
        assert repr(ours) == repr(theirs)
        torch.manual_seed(1)
        a = ours(x)
        torch.manual_seed(1)
        torch.testing.assert_close(a, theirs(x), rtol=0, atol=0)
        assert torch.equal(ours.eval()(x), x)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ops.stochastic_depth(torch.ones(2), 1.5, "row"), "between 0 and 1"),
        (lambda: ops.stochastic_depth(torch.ones(2), 0.5, "col"), "mode"),
        (lambda: ops.drop_block2d(torch.ones(1, 1, 5, 5), -0.1, 3), "between 0 and 1"),
        (lambda: ops.drop_block2d(torch.ones(1, 5, 5), 0.1, 3), "4 dimensional"),
        (lambda: ops.drop_block3d(torch.ones(1, 1, 5, 5), 0.1, 3), "5 dimensional"),
        (lambda: ops.drop_block2d(torch.ones(1, 1, 5, 5), 0.1, 2), "odd"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
