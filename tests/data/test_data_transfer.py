"""Batches leaving a loader worker: small tensors by value, the rest through shared memory.

The reference is the tensor before it crossed: after torch's multiprocessing pickler
and an unpickle, every tensor must be equal (dtype, shape, values) and a plain
tensor; only the small ones may have lost their shared-memory transfer.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import torch.multiprocessing  # registers torch's shared-memory pickling
from torch.utils.data import default_collate

from trivium.data import DataLoader, ParquetSource
from trivium.data.transfer import INLINE_MAX_BYTES, inline_small_tensors, worker_collate


def cross(batch: object) -> object:
    """What the main process receives: the worker's ForkingPickler, then pickle.loads."""
    buffer = io.BytesIO()
    ForkingPickler(buffer, pickle.HIGHEST_PROTOCOL).dump(batch)
    return pickle.loads(buffer.getvalue())


SMALL = {
    "int64": torch.arange(7),
    "bool": torch.tensor([True, False, True]),
    "bfloat16": torch.linspace(-2, 2, 5, dtype=torch.bfloat16),
    "complex": torch.tensor([1 + 2j, -3j], dtype=torch.complex64),
    "scalar": torch.tensor(2.5),
    "empty": torch.empty(0, 3, dtype=torch.int16),
    "strided": torch.arange(24, dtype=torch.float32).view(4, 6)[:, ::2],
    "conjugate view": torch.tensor([1 + 2j, 3 - 1j]).conj(),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_tensors_cross_by_value_and_equal(name: str) -> None:
    original = SMALL[name]
    marked = inline_small_tensors({"x": original})["x"]
    assert not isinstance(marked, torch.Tensor)  # marked to go by value
    got = cross(marked)
    assert type(got) is torch.Tensor and not got.is_shared()
    assert got.dtype == original.dtype and got.shape == original.shape
    assert torch.equal(got, original)


def test_containers_are_walked_and_others_left() -> None:
    label, big = torch.tensor([4, 2]), torch.zeros(INLINE_MAX_BYTES + 1, dtype=torch.uint8)
    shared = torch.zeros(8).share_memory_()
    batch = {"pair": (label, "x"), "list": [label], "big": big, "shared": shared, "n": 3}
    marked = inline_small_tensors(batch)
    assert marked["big"] is big and marked["shared"] is shared and marked["n"] == 3
    assert marked["pair"][1] == "x" and type(marked["pair"]) is tuple
    got = cross(marked)
    assert got["pair"][0].tolist() == [4, 2] and got["list"][0].tolist() == [4, 2]
    assert got["big"].is_shared() and got["shared"].is_shared()  # torch's path, as before
    assert torch.equal(got["big"], big)


def test_tensors_that_need_torch_pickling_are_left() -> None:
    grad = torch.ones(2, requires_grad=True)
    sparse = torch.eye(3).to_sparse()
    marked = inline_small_tensors([grad, sparse])
    assert marked[0] is grad and marked[1] is sparse


def test_loader_workers_send_labels_by_value(tmp_path) -> None:
    """Through real workers: the large column arrives in shared memory, the labels not."""
    n = 40
    table = pa.table(
        {
            "label": np.arange(n),
            "feat": pa.array([[float(i)] * 4096 for i in range(n)], pa.list_(pa.float32(), 4096)),
        }
    )
    pq.write_table(table, tmp_path / "part.parquet", row_group_size=8)
    pipe = ParquetSource(tmp_path).to_tensors()
    labels = []
    for batch in DataLoader(pipe, 16, shuffle=True, num_workers=2, seed=0):
        assert not batch["label"].is_shared() and batch["feat"].is_shared()
        assert torch.equal(batch["feat"][:, 0].long(), batch["label"])
        labels += batch["label"].tolist()
    assert sorted(labels) == list(range(n))


Pair = collections.namedtuple("Pair", ["label", "name"])


@dataclasses.dataclass
class Item:
    label: torch.Tensor


def test_namedtuples_and_dataclasses_are_walked_and_keep_their_type() -> None:
    marked = inline_small_tensors([Pair(torch.tensor([1]), "a"), Item(torch.tensor([2]))])
    assert type(marked[0]) is Pair and not isinstance(marked[0].label, torch.Tensor)
    assert type(marked[1]) is Item and not isinstance(marked[1].label, torch.Tensor)
    got = pickle.loads(pickle.dumps(marked))
    assert got[0].label.tolist() == [1] and got[0].name == "a" and got[1].label.tolist() == [2]


def assert_same(got: object, want: object) -> None:
    """Equal types, and tensors of equal dtype, shape and values, at any nesting."""
    assert type(got) is type(want)
    if isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert torch.equal(got, want)
    elif isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            assert_same(got[key], want[key])
    elif isinstance(want, list | tuple):
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            assert_same(a, b)
    else:
        assert got == want


def sample(i: int) -> dict[str, object]:
    """A sample of every kind default_collate stacks: Python scalars, tensors, arrays."""
    return {
        "id": i, "score": i / 3, "name": f"sample-{i}", "flag": i % 2 == 0,
        "small": torch.tensor([i, -i], dtype=torch.int16),
        "large": torch.full((64, 64), float(i)),  # a batch of them is past INLINE_MAX_BYTES
        "array": np.arange(3, dtype=np.uint8) + i,
        "pair": Pair(torch.tensor(float(i)), np.float32(i / 2)),
        "list": [i, torch.tensor([i])],
    }  # fmt: skip


SAMPLES = [sample(i) for i in range(8)]


class BothCollates(torch.utils.data.Dataset):
    """Item ``k``: ``(worker_collate, default_collate)`` of SAMPLES, made in a worker."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, k: int) -> tuple[object, object]:
        return worker_collate(SAMPLES), default_collate(SAMPLES)


def test_worker_collate_equals_default_collate_in_and_out_of_a_worker() -> None:
    assert_same(worker_collate(SAMPLES), default_collate(SAMPLES))
    loader = torch.utils.data.DataLoader(BothCollates(), batch_size=None, num_workers=1)
    for got, want in loader:
        assert_same(got, want)
    with pytest.raises(RuntimeError, match="equal size"):  # torch's error for ragged samples
        worker_collate([torch.zeros(2), torch.zeros(3)])


class Rows(torch.utils.data.Dataset):
    """pytorch#13246's samples: two int64s each; and one large tensor."""

    def __len__(self) -> int:
        return 40

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"row": torch.tensor([i, i % 10]), "large": torch.full((128, 128), i)}


def test_loader_workers_send_small_stacks_by_value_and_large_ones_in_shared_memory() -> None:
    want = list(DataLoader(Rows(), 8, shuffle=True, seed=4))
    got = list(DataLoader(Rows(), 8, shuffle=True, seed=4, num_workers=2))
    assert len(got) == len(want) == 5
    for a, b in zip(got, want, strict=True):
        assert_same(a, b)
        assert not a["row"].is_shared() and a["large"].is_shared()
