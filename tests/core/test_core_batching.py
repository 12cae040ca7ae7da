"""stack_batch: torch.stack's result, in shared memory inside DataLoader workers."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from trivium.core.batching import empty_batch, stack_batch


class _Stacks(Dataset):
    """Item i: a stacked batch of float32 samples (one of them non-contiguous)."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> tuple[torch.Tensor, bool]:
        samples = [torch.full((3, 4), float(i)), torch.arange(12.0).view(4, 3).t()]
        batch = stack_batch(samples)
        return batch, batch.is_shared()


def expected(i: int) -> torch.Tensor:
    return torch.stack([torch.full((3, 4), float(i)), torch.arange(12.0).view(4, 3).t()])


def test_stack_batch_in_workers_is_shared_and_equal() -> None:
    loader = DataLoader(_Stacks(), batch_size=None, num_workers=2)
    seen = 0
    for i, (batch, shared) in enumerate(loader):
        assert shared, "a worker's batch should be stacked into shared memory"
        assert batch.dtype == torch.float32 and torch.equal(batch, expected(i))
        seen += 1
    assert seen == 4


def test_stack_batch_outside_workers_is_torch_stack() -> None:
    batch = stack_batch([torch.ones(2, dtype=torch.uint8), torch.zeros(2, dtype=torch.uint8)])
    assert not batch.is_shared()
    assert torch.equal(batch, torch.tensor([[1, 1], [0, 0]], dtype=torch.uint8))
    with pytest.raises(ValueError, match="at least one"):
        stack_batch([])


class _ImageStacks(Dataset):
    """Item i: a batch of [C, H, W] views of [H, W, C] pixels, as image decoders return."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> torch.Tensor:
        return stack_batch(_hwc_views(i))


def _hwc_views(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    pixels = [torch.randint(0, 256, (5, 7, 3), dtype=torch.uint8, generator=g) for _ in range(3)]
    return [p.permute(2, 0, 1) for p in pixels]


@pytest.mark.parametrize("workers", [0, 2])
def test_stack_batch_keeps_channels_last_samples_channels_last(workers: int) -> None:
    loader = DataLoader(_ImageStacks(), batch_size=None, num_workers=workers)
    for i, batch in enumerate(loader):
        assert torch.equal(batch, torch.stack(_hwc_views(i)))
        assert batch.shape == (3, 3, 5, 7)
        assert batch.permute(0, 2, 3, 1).is_contiguous()  # [N, H, W, C] memory
        assert batch.is_shared() == (workers > 0)
    # samples in no dense order (a strided slice) stack as torch.stack does
    sliced = [v[:, ::2] for v in _hwc_views(0)]
    assert torch.equal(stack_batch(sliced), torch.stack(sliced))
    assert stack_batch(sliced).is_contiguous()


class _EmptyBatches(Dataset):
    """Item i: an empty_batch filled with i, and whether it is in shared memory."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> tuple[torch.Tensor, bool]:
        batch = empty_batch((3, 5, 2), torch.int16).fill_(i)
        return batch, batch.is_shared()


@pytest.mark.parametrize("workers", [0, 2])
def test_empty_batch_is_shared_inside_workers_only(workers: int) -> None:
    loader = DataLoader(_EmptyBatches(), batch_size=None, num_workers=workers)
    for i, (batch, shared) in enumerate(loader):
        assert shared == (workers > 0)
        assert batch.dtype == torch.int16 and batch.is_contiguous()
        assert torch.equal(batch, torch.full((3, 5, 2), i, dtype=torch.int16))


def test_trivium_core_exports_the_batch_slot_machinery() -> None:
    import trivium.core
    from trivium.core import batching

    for name in ("BatchSlots", "empty_batch", "lend_batch", "stack_batch"):
        assert name in trivium.core.__all__
        assert getattr(trivium.core, name) is getattr(batching, name)
