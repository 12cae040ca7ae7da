"""Tests for trivium.core.transform: the Transform base and its containers."""

from __future__ import annotations

import itertools
import pickle
from collections import Counter, namedtuple

import pytest
import torch
from torch import nn

from trivium.core import Compose, RandomApply, RandomChoice, RandomOrder, Transform


class RandomShift(Transform):
    """Adds a random offset and a random integer; params shared by every input."""

    def __init__(self, scale: float = 1.0, generator: torch.Generator | None = None) -> None:
        super().__init__(generator)
        self.scale = scale
        self.calls = 0

    def make_params(self, inputs: list) -> dict:
        self.calls += 1
        return {
            "shift": self._uniform(-self.scale, self.scale),
            "k": int(self._randint(0, 100)),
            "noise": self._rand((2,)),
        }

    def transform(self, inpt: torch.Tensor, params: dict) -> torch.Tensor:
        return inpt + params["shift"] + params["k"]


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _draws(t: Transform, n: int = 50) -> list[float]:
    return [float(t(torch.zeros(()))) for _ in range(n)]


def test_same_seed_same_outputs_and_different_seeds_differ() -> None:
    a = _draws(RandomShift(generator=_gen(0)))
    b = _draws(RandomShift(generator=_gen(0)))
    c = _draws(RandomShift(generator=_gen(1)))
    assert a == b
    assert sum(x != y for x, y in zip(a, c, strict=True)) >= 45
    assert len(set(a)) > 40  # really random, not a constant


def test_pickled_transform_continues_the_same_stream() -> None:
    t = RandomShift(generator=_gen(3))
    _draws(t, 5)
    clone = pickle.loads(pickle.dumps(t))  # what a spawned DataLoader worker gets
    assert _draws(clone) == _draws(t)


def test_without_generator_uses_the_global_seed() -> None:
    torch.manual_seed(5)
    a = _draws(RandomShift())
    torch.manual_seed(5)
    assert _draws(RandomShift()) == a


def test_forward_shares_params_across_inputs_and_keeps_structure() -> None:
    t = RandomShift(generator=_gen(0))
    x, y = torch.zeros(3), torch.ones(3)
    out = t(x, y)
    assert type(out) is tuple and t.calls == 1
    assert torch.equal(out[1] - out[0], torch.ones(3))
    out_list = t([x, y])
    assert type(out_list) is list and torch.equal(out_list[1] - out_list[0], torch.ones(3))
    Pair = namedtuple("Pair", ["image", "mask"])
    out_pair = t(Pair(x, y))
    assert type(out_pair) is Pair and torch.equal(out_pair.mask - out_pair.image, torch.ones(3))
    assert isinstance(t(x), torch.Tensor) and t.calls == 4
    with pytest.raises(TypeError, match="RandomShift"):
        t()


def test_base_transform_defaults() -> None:
    assert Transform().make_params([1]) == {}
    with pytest.raises(NotImplementedError):
        Transform()(torch.zeros(1))
    with pytest.raises(TypeError, match=r"RandomShift.*generator"):
        RandomShift(generator=0)  # type: ignore[arg-type]


class _TwoForms(Transform):
    """Adds 1 eagerly; its traced form adds 2, so the result tells which form ran."""

    def transform(self, inpt, params):
        return inpt + 1

    def transform_traced(self, inpt, params):
        return inpt + 2


class _OneForm(Transform):
    def transform(self, inpt, params):
        return inpt * 3


def test_forward_runs_transform_eagerly_and_transform_traced_when_compiled() -> None:
    x = torch.zeros(2)
    assert _TwoForms()(x).tolist() == [1.0, 1.0]
    compiled = torch.compile(_TwoForms(), fullgraph=True, backend="eager")
    assert compiled(x, x + 1)[1].tolist() == [3.0, 3.0]  # every input takes the traced form
    one = torch.compile(_OneForm(), fullgraph=True, backend="eager")
    assert one(torch.ones(2)).tolist() == [3.0, 3.0]  # no traced form: transform itself
    t = _TwoForms()
    assert t.active_transform() == t.transform


def test_compose_chains_and_registers_modules() -> None:
    linear = nn.Linear(2, 2)
    t = Compose([linear, lambda x: x * 0 + 1])
    assert isinstance(t.transforms, nn.ModuleList) and len(t.transforms) == 2
    assert t.transforms[0] is linear
    assert set(t.state_dict()) == {"transforms.0.weight", "transforms.0.bias"}
    assert torch.equal(t(torch.zeros(4, 2)), torch.ones(4, 2))
    t.to("meta")
    assert linear.weight.device.type == "meta"


def test_compose_passes_several_inputs_through_with_shared_params() -> None:
    t = Compose([RandomShift(generator=_gen(0)), RandomShift(generator=_gen(1))])
    a, b = t(torch.zeros(2), torch.full((2,), 10.0))
    assert torch.allclose(b - a, torch.full((2,), 10.0))
    assert Compose([lambda x: x + 1, lambda x: x * 10])(1) == 20


def test_compose_calls_every_transform_and_its_hooks() -> None:
    """Core's Compose fuses nothing: each transform is called, so each hook sees its call."""
    seen = []
    first, second = RandomShift(generator=_gen(0)), RandomShift(generator=_gen(1))
    second.register_forward_hook(lambda module, args, out: seen.append(out.item()))
    out = Compose([first, second])(torch.zeros(()))
    assert seen == [out.item()] and first.calls == second.calls == 1


def test_flatten_inputs_and_check_probability_are_public() -> None:
    from trivium.core import transform

    leaves, rebuild = transform.flatten_inputs(Compose([abs]), ({"a": 1, "b": (2, 3)},))
    assert leaves == [1, 2, 3] and rebuild([4, 5, 6]) == {"a": 4, "b": (5, 6)}
    assert transform.flatten_inputs(Compose([abs]), (1, 2))[1]([3, 4]) == (3, 4)
    with pytest.raises(TypeError, match="Compose expects at least one input"):
        transform.flatten_inputs(Compose([abs]), ())
    assert transform.check_probability("T", 0) == 0.0
    with pytest.raises(TypeError, match="T: p must be a number"):
        transform.check_probability("T", True)
    assert transform._flatten is transform.flatten_inputs  # the old names stay as aliases
    assert transform._check_probability is transform.check_probability


def test_random_apply_probability() -> None:
    t = RandomApply([lambda x: x + 1], p=0.3, generator=_gen(0))
    hits = sum(t(0) for _ in range(2000))
    # Binomial(2000, 0.3): mean 600, sd 20.5; +-5 sd.
    assert 500 < hits < 700
    again = RandomApply([lambda x: x + 1], p=0.3, generator=_gen(0))
    assert sum(again(0) for _ in range(2000)) == hits
    assert sum(RandomApply([lambda x: x + 1], p=0.0)(0) for _ in range(200)) == 0
    assert sum(RandomApply([lambda x: x + 1], p=1.0)(0) for _ in range(200)) == 200


def test_random_apply_applies_the_whole_list_or_nothing() -> None:
    t = RandomApply([lambda x: x + 1, lambda x: x * 10], p=0.5, generator=_gen(2))
    outs = Counter(t(1) for _ in range(400))
    assert set(outs) == {1, 20}
    a, b = RandomApply([lambda x, y: (x + 1, y + 1)], p=1.0)(1, 2)
    assert (a, b) == (2, 3)
    assert RandomApply([lambda x, y: (x + 1, y + 1)], p=0.0)(1, 2) == (1, 2)


def test_random_choice_weights() -> None:
    fns = [lambda x, i=i: i for i in range(3)]
    t = RandomChoice(fns, p=[1, 2, 7], generator=_gen(0))
    assert t.p == pytest.approx([0.1, 0.2, 0.7])
    counts = Counter(t(None) for _ in range(3000))
    for i, expected in enumerate([0.1, 0.2, 0.7]):
        assert abs(counts[i] / 3000 - expected) < 0.04
    never = RandomChoice(fns, p=[0, 1, 1], generator=_gen(1))
    assert 0 not in {never(None) for _ in range(500)}
    uniform_choice = RandomChoice(fns, generator=_gen(2))
    uniform = Counter(uniform_choice(None) for _ in range(3000))
    assert all(abs(uniform[i] / 3000 - 1 / 3) < 0.05 for i in range(3))


def test_random_order_covers_all_permutations() -> None:
    t = RandomOrder([lambda s, c=c: s + c for c in "abc"], generator=_gen(0))
    counts = Counter(t("") for _ in range(600))
    assert set(counts) == {"".join(p) for p in itertools.permutations("abc")}
    assert all(50 < n < 150 for n in counts.values())  # about 100 each


@pytest.mark.parametrize("cls", [RandomApply, RandomChoice, RandomOrder])
def test_random_containers_reproducible(cls: type) -> None:
    fns = [lambda s, c=c: s + c for c in "abcd"]
    runs = [[cls(fns, generator=_gen(s))("") for _ in range(100)] for s in (9, 9, 10)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


@pytest.mark.parametrize(
    ("make", "error", "pattern"),
    [
        (lambda: Compose([]), ValueError, "Compose: transforms must not be empty"),
        (lambda: Compose(lambda x: x), TypeError, "Compose: transforms must be a sequence"),
        (lambda: Compose([1]), TypeError, r"Compose: transforms\[0\] is not callable"),
        (lambda: RandomApply([abs], p=-0.1), ValueError, r"RandomApply: p must be in \[0, 1\]"),
        (lambda: RandomApply([abs], p=1.5), ValueError, "RandomApply: p"),
        (lambda: RandomApply([abs], p=float("nan")), ValueError, "RandomApply: p"),
        (lambda: RandomApply([abs], p="0.5"), TypeError, "RandomApply: p must be a number"),
        (lambda: RandomApply([], p=0.5), ValueError, "RandomApply: transforms"),
        (lambda: RandomChoice([abs, abs], p=[1.0]), ValueError, "RandomChoice: p must be"),
        (lambda: RandomChoice([abs, abs], p=[1, -1]), ValueError, "RandomChoice: weights"),
        (lambda: RandomChoice([abs, abs], p=[0, 0]), ValueError, "RandomChoice: weights"),
        (lambda: RandomOrder("ab"), TypeError, "RandomOrder: transforms must be a sequence"),
    ],
)
def test_argument_validation(make, error: type, pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        make()


def test_repr_lists_settings() -> None:
    r = repr(RandomApply([RandomShift(scale=2.0)], p=0.3, generator=_gen(0)))
    assert "p=0.3, generator=torch.Generator(device='cpu')" in r
    assert "RandomShift(scale=2.0, calls=0)" in r
    assert "p=[0.25, 0.75]" in repr(RandomChoice([abs, round], p=[1, 3]))
    assert "abs" in repr(Compose([abs]))
