"""``DataLoader(batch_size=None)`` against torch's ``DataLoader(batch_size=None)``.

The source is a list of items that already are batches (dicts of NumPy arrays and
tensors, of uneven sizes); torch's loader over the same list is the reference.
"""

from __future__ import annotations

import collections
import itertools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from trivium.data import DataLoader, MapPipe, ParquetSource

N = 23


def source() -> list[dict[str, object]]:
    """Pre-batched items: ids as a NumPy array (converted), features as a tensor."""
    items = []
    for i in range(N):
        rows = np.arange(i * 10, i * 10 + 1 + i % 4)
        items.append({"ids": rows, "feat": torch.full((len(rows), 2), float(i)), "n": i})
    return items


def item_key(item: dict[str, object]) -> int:
    return int(item["n"])


def assert_same_items(ours: list[dict], theirs: list[dict]) -> None:
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            assert type(a[key]) is type(b[key]), key
            if isinstance(a[key], torch.Tensor):
                assert a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]), key
            else:
                assert a[key] == b[key], key


@pytest.mark.parametrize(
    ("num_workers", "context"), [(0, None), (2, "fork"), (2, "spawn")], ids=str
)
def test_same_items_in_the_same_order_as_torch(num_workers: int, context: str | None) -> None:
    extra = {"multiprocessing_context": context, "timeout": 120} if num_workers else {}
    theirs = list(
        torch.utils.data.DataLoader(source(), batch_size=None, num_workers=num_workers, **extra)
    )
    loader = DataLoader(source(), batch_size=None, num_workers=num_workers, **extra)
    ours = list(loader)
    assert len(loader) == N
    assert isinstance(ours[0]["ids"], torch.Tensor)  # default_convert, as torch
    assert_same_items(ours, theirs)
    assert loader.state_dict()["samples_consumed"] == N


def test_collate_fn_applies_to_each_item_as_in_torch() -> None:
    def count(item: dict) -> int:
        return len(item["ids"])

    theirs = list(torch.utils.data.DataLoader(source(), batch_size=None, collate_fn=count))
    assert list(DataLoader(source(), batch_size=None, collate_fn=count)) == theirs


def test_a_none_item_is_yielded_and_a_filtered_one_is_not() -> None:
    items = [1, None, 3]
    assert list(DataLoader(items, batch_size=None)) == list(
        torch.utils.data.DataLoader(items, batch_size=None)
    )
    pipe = MapPipe(list(range(6))).to_iter_pipe().filter(lambda x: x % 2 == 0)
    assert list(DataLoader(pipe, batch_size=None)) == [0, 2, 4]


@pytest.mark.parametrize("world_size", [2, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_ranks_get_equal_counts_and_cover_every_item(world_size: int, shuffle: bool) -> None:
    per_rank = [
        [item_key(x) for x in DataLoader(source(), None, shuffle, rank=r, world_size=world_size)]
        for r in range(world_size)
    ]
    assert len({len(r) for r in per_rank}) == 1  # equal counts: no rank waits on another
    counts = collections.Counter(itertools.chain.from_iterable(per_rank))
    assert set(counts) == set(range(N))
    assert sum(counts.values()) == -(-N // world_size) * world_size  # padded by wrapping
    dropped = [
        list(DataLoader(source(), None, rank=r, world_size=world_size, drop_last=True))
        for r in range(world_size)
    ]
    assert all(len(r) == N // world_size for r in dropped)


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("stop", [1, 7, N - 1])
def test_a_mid_epoch_resume_yields_each_item_exactly_once(num_workers: int, stop: int) -> None:
    loader = DataLoader(source(), batch_size=None, shuffle=True, seed=5, num_workers=num_workers)
    loader.set_epoch(2)
    first = [item_key(x) for x in itertools.islice(loader, stop)]
    state = loader.state_dict()
    assert state["samples_consumed"] == stop
    resumed = DataLoader(source(), batch_size=None, shuffle=True, num_workers=2 - num_workers)
    resumed.load_state_dict(state)
    rest = [item_key(x) for x in resumed]
    assert sorted(first + rest) == list(range(N))
    whole = DataLoader(source(), batch_size=None, shuffle=True, seed=5)
    whole.set_epoch(2)
    assert first + rest == [item_key(x) for x in whole]


def test_what_cannot_be_exact_is_refused_with_what_to_do(tmp_path) -> None:
    pipe = MapPipe([1, 2]).to_iter_pipe().flatmap(lambda x: [x, x])
    with pytest.raises(ValueError, match=r"flatmap.*batch_size=N"):
        list(DataLoader(pipe, batch_size=None))
    pq.write_table(pa.table({"x": [1, 2, 3]}), tmp_path / "t.parquet")
    with pytest.raises(ValueError, match=r"Arrow source.*batch_size=N"):
        DataLoader(ParquetSource(tmp_path / "t.parquet"), batch_size=None)
    with pytest.raises(ValueError, match="positive int or None"):
        DataLoader(source(), batch_size=0)
