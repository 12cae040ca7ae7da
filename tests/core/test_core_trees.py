"""trivium.core.trees.map_tensors: the one walker over nested tensors (devices, training, data)."""

from __future__ import annotations

import dataclasses
import types
from collections import OrderedDict, UserDict, defaultdict, namedtuple

import torch

from trivium.core.trees import map_tensors

Pair = namedtuple("Pair", ["left", "right"])


class Tagged(dict):
    """A dict subclass with an attribute of its own."""


class Row(list):
    pass


@dataclasses.dataclass(frozen=True)
class Sample:
    image: torch.Tensor
    name: str
    cache: torch.Tensor | None = dataclasses.field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cache", self.image + 1)


def test_every_tensor_is_mapped_and_the_rest_kept() -> None:
    name = object()
    tagged = Tagged(t=torch.ones(1))
    tagged.note = "kept"
    tree = {
        "pair": Pair(torch.ones(2), [torch.zeros(1), name]),
        "od": OrderedDict([("z", torch.ones(1)), ("a", 3)]),
        "dd": defaultdict(list, {"t": torch.ones(3)}),
        "tagged": tagged,
        "user": UserDict(t=torch.ones(1)),
        "proxy": types.MappingProxyType({"t": torch.ones(1)}),
        "row": Row([torch.ones(1)]),
        "size": torch.Size([2, 3]),
        "sample": Sample(torch.zeros(2), "a"),
        "none": None,
    }
    out = map_tensors(lambda t: t.double() * 2, tree)
    assert type(out["pair"]) is Pair and out["pair"].left.tolist() == [2.0, 2.0]
    assert out["pair"].right[1] is name and out["pair"].right[0].dtype == torch.float64
    assert type(out["od"]) is OrderedDict and list(out["od"]) == ["z", "a"] and out["od"]["a"] == 3
    assert type(out["dd"]) is defaultdict and out["dd"].default_factory is list
    assert type(out["tagged"]) is Tagged and out["tagged"].note == "kept"
    assert out["tagged"]["t"].dtype == torch.float64
    assert type(out["user"]) is UserDict and out["user"]["t"].dtype == torch.float64
    assert out["proxy"]["t"].dtype == torch.float64
    assert type(out["row"]) is Row and out["row"][0].dtype == torch.float64
    assert out["size"] == torch.Size([2, 3])
    sample = out["sample"]
    assert type(sample) is Sample and sample.name == "a"
    assert sample.image.tolist() == [0.0, 0.0] and sample.cache.tolist() == [2.0, 2.0]
    assert out["none"] is None
    assert tree["sample"].image.dtype == torch.float32  # the input is not changed


def test_a_lone_tensor_and_a_leaf() -> None:
    assert map_tensors(torch.neg, torch.ones(1)).tolist() == [-1.0]
    assert map_tensors(torch.neg, "text") == "text"


def test_tensor_subclasses_are_tensors() -> None:
    class Typed(torch.Tensor):
        pass

    typed = torch.ones(2).as_subclass(Typed)
    seen = []
    map_tensors(lambda t: seen.append(type(t)) or t, [typed])
    assert seen == [Typed]
