"""Tests for trivium.core.seeding."""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import random
import threading
from collections.abc import Iterator
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch

from trivium.core import RandomApply, make_generator, seed_everything, worker_init_fn
from trivium.core.seeding import (
    SampleScopes,
    derive_seed,
    sample_scope,
    scope_generator,
    transform_generator,
)


def _draw() -> tuple[float, float, list[float]]:
    return random.random(), float(np.random.rand()), torch.rand(3).tolist()


@pytest.fixture
def restore_determinism(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    flags = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
    )
    yield
    torch.use_deterministic_algorithms(flags[0], warn_only=flags[1])
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = flags[2:]


def test_seed_everything_is_reproducible(restore_determinism: None) -> None:
    assert seed_everything(123) == 123
    first = _draw()
    seed_everything(123)
    assert _draw() == first
    seed_everything(124)
    other = _draw()
    assert all(a != b for a, b in zip(first, other, strict=True))
    assert os.environ["PYTHONHASHSEED"] == "124"
    assert not torch.are_deterministic_algorithms_enabled()


def test_seed_everything_deterministic(restore_determinism: None) -> None:
    seed_everything(0, deterministic=True)
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.is_deterministic_algorithms_warn_only_enabled()
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"


@pytest.mark.parametrize(
    ("seed", "error"), [(-1, ValueError), (2**32, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_seed_everything_rejects_bad_seeds(seed: object, error: type) -> None:
    with pytest.raises(error, match="seed"):
        seed_everything(seed)  # type: ignore[arg-type]


class FirstDraws(torch.utils.data.Dataset):
    """Each item reports its worker's torch seed and the first draws after worker start."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> tuple[int, int, float, float]:
        info = torch.utils.data.get_worker_info()
        return info.id, torch.initial_seed(), random.random(), float(np.random.rand())


def _run_workers(seed: int) -> list[tuple[int, int, float, float]]:
    loader = torch.utils.data.DataLoader(
        FirstDraws(),
        batch_size=None,
        num_workers=2,
        worker_init_fn=worker_init_fn,
        generator=torch.Generator().manual_seed(seed),
        multiprocessing_context="fork",
    )
    return sorted((int(w), int(s), float(r), float(n)) for w, s, r, n in loader)


def test_worker_init_fn_gives_distinct_reproducible_worker_seeds() -> None:
    rows = _run_workers(0)
    assert [row[0] for row in rows] == [0, 1]
    (_, s0, r0, n0), (_, s1, r1, n1) = rows
    assert s0 != s1 and r0 != r1 and n0 != n1
    for _, seed, r, n in rows:  # derived from torch.initial_seed() as the torch docs say
        assert r == random.Random(seed).random()
        assert n == np.random.RandomState(seed % 2**32).rand()
    assert _run_workers(0) == rows
    assert _run_workers(1) != rows


def test_worker_init_fn_outside_a_worker_depends_on_worker_id() -> None:
    worker_init_fn(0)
    a = (random.random(), np.random.rand())
    worker_init_fn(1)
    b = (random.random(), np.random.rand())
    worker_init_fn(0)
    assert (random.random(), np.random.rand()) == a != b


def test_make_generator() -> None:
    a = torch.rand(5, generator=make_generator(42))
    assert torch.equal(a, torch.rand(5, generator=make_generator(42)))
    assert not torch.equal(a, torch.rand(5, generator=make_generator(43)))
    g1, g2 = make_generator(None), make_generator(None)
    assert g1.initial_seed() != g2.initial_seed()
    assert make_generator(2**63).initial_seed() == 2**63
    assert make_generator(0, device="cpu").device == torch.device("cpu")
    with pytest.raises(TypeError):
        make_generator("1")  # type: ignore[arg-type]


def test_derive_seed_is_stable_and_spreads() -> None:
    assert derive_seed(1, 2, 3) == derive_seed(1, 2, 3) < 2**64
    seeds = {derive_seed(0, 0, i) for i in range(1000)} | {
        derive_seed(0, 1, i) for i in range(1000)
    }
    assert len(seeds) == 2000
    # No per-process hash randomisation: every worker and run derives the same seed.
    assert derive_seed(0, 1, 2) == int.from_bytes(
        hashlib.blake2b(b"0,1,2", digest_size=8).digest(), "little"
    )


def test_sample_scope_overrides_every_generator_and_nests() -> None:
    own = torch.Generator().manual_seed(0)
    assert transform_generator(own) is own and transform_generator(None) is None
    with sample_scope(5):
        outer = scope_generator()
        assert transform_generator(own) is outer and transform_generator(None) is outer
        a = torch.rand(3, generator=outer)
        with sample_scope(6):
            assert scope_generator() is not outer
        assert scope_generator() is outer  # the outer stream goes on where it was
        b = torch.rand(3, generator=outer)
    assert scope_generator() is None
    assert torch.equal(torch.cat([a, b]), torch.rand(6, generator=make_generator(5)))


def test_sample_scope_belongs_to_its_thread() -> None:
    seen = []
    with sample_scope(1):
        thread = threading.Thread(target=lambda: seen.append(scope_generator()))
        thread.start()
        thread.join()
    assert seen == [None]


def test_transforms_draw_from_the_scope() -> None:
    flip = RandomApply([lambda x: -x], p=0.5, generator=torch.Generator().manual_seed(0))
    free = RandomApply([lambda x: -x], p=0.5)
    runs = []
    for _ in range(2):
        with sample_scope(11):
            runs.append([flip(1) for _ in range(20)] + [free(1) for _ in range(20)])
    assert runs[0] == runs[1] and len(set(runs[0])) == 2


def test_generators_cross_to_spawned_processes_with_their_state() -> None:
    g = torch.Generator().manual_seed(3)
    torch.rand(5, generator=g)
    buffer = io.BytesIO()
    ForkingPickler(buffer).dump([g, g])  # what a spawn or forkserver worker receives
    a, b = pickle.loads(buffer.getvalue())
    assert a is b and a.initial_seed() == 3
    assert torch.equal(torch.rand(4, generator=a), torch.rand(4, generator=g))


def test_a_scope_keyed_by_several_keys_draws_from_their_derived_seed():
    with sample_scope(3, 1, 4):
        keyed = torch.rand(4, generator=scope_generator())
    with sample_scope(derive_seed(3, 1, 4)):
        derived = torch.rand(4, generator=scope_generator())
    with sample_scope(3):
        single = torch.rand(4, generator=scope_generator())
    assert torch.equal(keyed, derived)
    assert not torch.equal(keyed, single)
    with pytest.raises(TypeError, match="takes a seed"):
        sample_scope()


def test_sample_scopes_draw_as_a_scope_per_sample_and_restore_the_outer_one() -> None:
    def draws() -> torch.Tensor:
        return torch.rand(2, generator=scope_generator())

    keys = [(3, 0, p) for p in range(5)] + [(9,)]
    want = []
    for k in keys:
        with sample_scope(*k):
            want.append(draws())
    seen = []
    with sample_scope(1):
        outer = scope_generator()
        with SampleScopes() as scopes:
            got = []
            for k in keys:
                scopes.start(*k)
                got.append(draws())
            thread = threading.Thread(target=lambda: seen.append(scope_generator()))
            thread.start()
            thread.join()
        assert scope_generator() is outer  # the scope around the block goes on
    assert seen == [None]  # another thread is outside every scope
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    assert scope_generator() is None
