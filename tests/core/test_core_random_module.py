"""Tests for trivium.core.RandomModule: the seeded randomness Transform and CallTransform share."""

from __future__ import annotations

import pytest
import torch

import trivium.core as tc
from trivium.core.seeding import sample_scope, scope_generator
from trivium.core.transform import RandomModule, Transform


class Noise(RandomModule):
    """A module with its own call signature (data plus an option), drawing by the rule."""

    def __init__(self, amount: float, generator: torch.Generator | None = None) -> None:
        super().__init__(generator)
        self.amount = amount

    def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        return x + scale * self.amount * self._rand(x.shape)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_helpers_draw_what_torch_draws_from_the_same_seed() -> None:
    m = Noise(1.0, generator=_gen(3))
    ref = _gen(3)
    assert torch.equal(m._rand((4,)), torch.rand(4, generator=ref))
    assert torch.equal(m._randint(0, 9, (5,)), torch.randint(0, 9, (5,), generator=ref))
    assert m._randperm(6) == torch.randperm(6, generator=ref).tolist()
    assert m._uniform(2.0, 4.0) == 2.0 + 2.0 * float(torch.rand((), generator=ref))
    assert torch.equal(m(torch.zeros(3), scale=2.0), 2.0 * torch.rand(3, generator=ref))


def test_a_sample_scope_takes_over_from_the_generator() -> None:
    m = Noise(1.0, generator=_gen(0))
    with sample_scope(7):
        assert m.active_generator() is scope_generator()
        inside = m._rand((3,))
    with sample_scope(7):
        assert torch.equal(inside, torch.rand(3, generator=scope_generator()))
    assert m.active_generator() is m.generator


def test_transform_and_call_module_share_one_base() -> None:
    class Shift(Transform):
        def make_params(self, inputs: list) -> dict:
            return {"shift": self._rand((3,))}

        def transform(self, inpt: torch.Tensor, params: dict) -> torch.Tensor:
            return inpt + params["shift"]

    assert tc.RandomModule is RandomModule and issubclass(Transform, RandomModule)
    # Same seed, same draws, whether the module takes a sample or data plus options.
    assert torch.equal(
        Shift(generator=_gen(5))(torch.zeros(3)), Noise(1.0, _gen(5))(torch.zeros(3))
    )


def test_generator_check_and_repr() -> None:
    with pytest.raises(
        TypeError, match=r"Noise: generator must be a torch\.Generator or None, got int"
    ):
        Noise(1.0, generator=0)  # type: ignore[arg-type]
    assert repr(Noise(0.5)) == "Noise(amount=0.5)"
    assert repr(Noise(0.5, _gen(0))) == "Noise(amount=0.5, generator=torch.Generator(device='cpu'))"
