"""Checks that a model of ``trivium.vision.models`` is torchvision's, shared by the model tests.

Structure is compared on the meta device (no memory, no init cost); values on small
inputs with torchvision's state dict loaded into ours with ``strict=True``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

__all__ = [
    "assert_same_init",
    "assert_same_structure",
    "assert_same_training_step",
    "image",
    "loaded_from",
    "randomize_norms",
    "shapes",
]

_NORMS = (nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)


def shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def assert_same_structure(
    ours: Callable[..., nn.Module], theirs: Callable[..., nn.Module], **kwargs: Any
) -> None:
    """Same state-dict keys (in order) and shapes, module names and repr."""
    with torch.device("meta"):
        a, b = ours(**kwargs), theirs(**kwargs)
    assert list(shapes(a).items()) == list(shapes(b).items())
    assert [n for n, _ in a.named_modules()] == [n for n, _ in b.named_modules()]
    assert repr(a) == repr(b)


def assert_same_init(
    ours: Callable[..., nn.Module], theirs: Callable[..., nn.Module], seed: int = 0, **kwargs: Any
) -> None:
    """Built from the same seed, the same initial weights (same draws in the same order)."""
    torch.manual_seed(seed)
    a = ours(**kwargs)
    torch.manual_seed(seed)
    b = theirs(**kwargs)
    for (key, x), y in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        torch.testing.assert_close(x, y, atol=0, rtol=0, msg=key)


def randomize_norms(model: nn.Module, seed: int = 0) -> nn.Module:
    """Non-trivial norm statistics and affine values, so outputs depend on every buffer."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, _NORMS) and getattr(m, "weight", None) is not None:
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
            if isinstance(m, nn.BatchNorm2d):
                c = m.running_mean.shape[0]
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
    return model


def image(n: int = 2, size: int = 64, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def loaded_from(ours: Callable[..., nn.Module], theirs: nn.Module, **kwargs: Any) -> nn.Module:
    """``ours(**kwargs)`` built on the meta device with ``theirs``' state dict assigned
    (``strict=True``): half the cost of initialising a model."""
    with torch.device("meta"):
        model = ours(**kwargs)
    state = {k: v.clone() for k, v in theirs.state_dict().items()}
    model.load_state_dict(state, strict=True, assign=True)
    return model.train(theirs.training)


def assert_same_training_step(
    a: nn.Module, b: nn.Module, x: torch.Tensor, atol: float = 1e-5
) -> None:
    """In train mode (no randomness left in the models): same outputs, same gradients of a
    loss, same BatchNorm running statistics after the step."""
    a.train(), b.train()
    target = torch.arange(x.shape[0]) % 3
    out_a, out_b = a(x), b(x)
    torch.testing.assert_close(out_a, out_b, atol=atol, rtol=1e-4)
    nn.functional.cross_entropy(out_a, target).backward()
    nn.functional.cross_entropy(out_b, target).backward()
    grads_b = dict(b.named_parameters())
    for name, p in a.named_parameters():
        q = grads_b[name]
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:
            torch.testing.assert_close(p.grad, q.grad, atol=atol, rtol=1e-3, msg=name)
    for (name, buf), other in zip(a.named_buffers(), b.buffers(), strict=True):
        torch.testing.assert_close(buf, other, atol=1e-6, rtol=1e-5, msg=name)
