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

from trivium.data import DataLoader, ParquetSource
from trivium.data.transfer import INLINE_MAX_BYTES, inline_small_tensors


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
