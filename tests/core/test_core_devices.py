"""Tests for trivium.core.devices: resolve_device, move_to, pin_memory, CUDAPrefetcher."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict, namedtuple

import pytest
import torch

from trivium.core import CUDAPrefetcher, move_to, pin_memory, resolve_device

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

Pair = namedtuple("Pair", ["left", "right"])


@dataclasses.dataclass(frozen=True)
class Sample:
    image: torch.Tensor
    label: int
    extras: dict
    cache: torch.Tensor = dataclasses.field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cache", self.image.sum())


def _nested() -> tuple[object, list[object]]:
    """A nested batch, and the non-tensor leaves that must come back as the same objects."""
    marker, name = object(), "sample-0"
    dd = defaultdict(list, {"t": torch.ones(3)})
    batch = {
        "od": OrderedDict([("z", torch.zeros(2)), ("a", [torch.ones(1), name])]),
        "dd": dd,
        "pair": Pair(torch.arange(3), (torch.ones(2, 2), marker)),
        "sample": Sample(torch.ones(2, 2), 7, {"mask": torch.zeros(2)}),
        "plain": 3.5,
    }
    return batch, [marker, name]


def _tensors(obj: object) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v)]
    if dataclasses.is_dataclass(obj):
        return [t for f in dataclasses.fields(obj) for t in _tensors(getattr(obj, f.name))]
    return []


def _check_moved(batch: object, out: object, leaves: list[object], device: str) -> None:
    assert type(out["od"]) is OrderedDict and list(out["od"]) == ["z", "a"]
    assert type(out["dd"]) is defaultdict and out["dd"].default_factory is list
    assert type(out["pair"]) is Pair and type(out["pair"].right) is tuple
    assert type(out["sample"]) is Sample and out["sample"] is not batch["sample"]
    assert out["sample"].label == 7
    assert out["od"]["a"][1] is leaves[1] and out["pair"].right[1] is leaves[0]
    moved = _tensors(out)
    assert len(moved) == len(_tensors(batch)) == 8  # the init=False field included
    assert all(t.device.type == device for t in moved)
    assert all(t.device.type == "cpu" for t in _tensors(batch))  # the input is not modified


def test_resolve_device_passes_through_and_validates() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert resolve_device("meta") == torch.device("meta")
    with pytest.raises(ValueError, match="nonsense"):
        resolve_device("nonsense")
    with pytest.raises(ValueError, match="cuda:x"):
        resolve_device("cuda:x")
    with pytest.raises(TypeError):
        resolve_device(3.0)  # type: ignore[arg-type]


def test_resolve_device_auto_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert resolve_device() == torch.device("cpu")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("AUTO").type == "cuda"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error")
def test_resolve_device_rejects_missing_cuda() -> None:
    with pytest.raises(ValueError, match="CUDA is not available"):
        resolve_device("cuda")


def test_move_to_nested_keeps_types_and_moves_every_tensor() -> None:
    batch, leaves = _nested()
    # The meta device needs no hardware, so the move is real on any machine.
    out = move_to(batch, "meta")
    _check_moved(batch, out, leaves, "meta")
    assert out["plain"] == 3.5


def test_move_to_cpu_keeps_values_and_leaves_non_tensors() -> None:
    batch, leaves = _nested()
    out = move_to(batch, torch.device("cpu"))
    _check_moved(batch, out, leaves, "cpu")
    for a, b in zip(_tensors(batch), _tensors(out), strict=True):
        assert torch.equal(a, b)
    assert move_to("text", "cpu") == "text" and move_to(None, "cpu") is None


@needs_cuda
@pytest.mark.cuda
def test_move_to_cuda_round_trip() -> None:
    batch, leaves = _nested()
    out = move_to(batch, "cuda")
    _check_moved(batch, out, leaves, "cuda")
    back = move_to(out, "cpu")
    for a, b in zip(_tensors(batch), _tensors(back), strict=True):
        assert torch.equal(a, b)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA behaviour")
def test_pin_memory_is_a_no_op_without_cuda() -> None:
    batch, _ = _nested()
    assert pin_memory(batch) is batch


@needs_cuda
@pytest.mark.cuda
def test_pin_memory_pins_every_cpu_tensor() -> None:
    batch, leaves = _nested()
    out = pin_memory(batch)
    _check_moved(batch, out, leaves, "cpu")
    assert all(t.is_pinned() for t in _tensors(out))
    for a, b in zip(_tensors(batch), _tensors(out), strict=True):
        assert torch.equal(a, b)
    pinned = out["pair"].left
    assert pin_memory([pinned])[0] is pinned  # already pinned: no copy


def _batches(n: int) -> list[dict[str, torch.Tensor]]:
    return [{"x": torch.full((4, 5), float(i)), "i": torch.tensor(i)} for i in range(n)]


def test_prefetcher_cpu_yields_moved_batches_and_restarts() -> None:
    source = _batches(5)
    prefetcher = CUDAPrefetcher(source, device="cpu")
    assert len(prefetcher) == 5
    for _ in range(2):  # every iter() starts over
        out = list(prefetcher)
        assert len(out) == 5
        for a, b in zip(source, out, strict=True):
            assert b["x"].device.type == "cpu" and torch.equal(a["x"], b["x"])


def test_prefetcher_other_device_and_unsized_source() -> None:
    prefetcher = CUDAPrefetcher((b for b in _batches(3)), device="meta")
    with pytest.raises(TypeError):
        len(prefetcher)
    out = list(prefetcher)
    assert [b["x"].device.type for b in out] == ["meta"] * 3


@needs_cuda
@pytest.mark.cuda
def test_prefetcher_cuda_values_and_device() -> None:
    source = _batches(20)
    loader = torch.utils.data.DataLoader(source, batch_size=None)
    prefetcher = CUDAPrefetcher(loader, device="cuda")
    assert len(prefetcher) == 20
    for _ in range(2):
        seen = []
        for batch in prefetcher:
            assert batch["x"].device.type == "cuda"
            # Compute on the consumer stream while the next copy is in flight.
            seen.append(float((batch["x"] @ batch["x"].T).sum() / 80.0))
            assert int(batch["i"]) == len(seen) - 1
        assert seen == [float(i * i) for i in range(20)]
