"""``pad_collate``: batch variable-length audio for a ``DataLoader``.

Example:
    >>> import torch
    >>> batch, lengths = pad_collate([torch.ones(1, 3), torch.ones(1, 5)])
    >>> batch.shape, lengths.tolist()
    (torch.Size([2, 1, 5]), [3, 5])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

__all__ = ["pad_collate", "pad_sequence_last"]


def pad_sequence_last(tensors: Sequence[Tensor], padding_value: float = 0.0) -> Tensor:
    """Stack tensors that differ only in their last dimension, padding it at the end.

    Example:
        >>> import torch
        >>> pad_sequence_last([torch.tensor([1, 2]), torch.tensor([3])])
        tensor([[1, 2],
                [3, 0]])
    """
    if not tensors:
        raise ValueError("pad_sequence_last: no tensors to stack")
    lead = tensors[0].shape[:-1]
    for i, t in enumerate(tensors):
        if t.shape[:-1] != lead:
            raise ValueError(
                f"item {i} has shape {tuple(t.shape)}; all items must share every dimension "
                f"but the last ({tuple(lead)} + [time])"
            )
    longest = max(t.shape[-1] for t in tensors)
    out = tensors[0].new_full((len(tensors), *lead, longest), padding_value)
    for i, t in enumerate(tensors):
        out[i, ..., : t.shape[-1]] = t
    return out


def _collate_field(values: list[Any], padding_value: float) -> Any:
    first = values[0]
    if isinstance(first, Tensor):
        return pad_sequence_last(values, padding_value)
    if isinstance(first, (list, tuple)) and first and isinstance(first[0], Tensor):
        # e.g. LibriMix sources: [source, ...] per item -> [batch, n_sources, ..., time]
        counts = {len(v) for v in values}
        if len(counts) != 1:
            raise ValueError(f"items hold different numbers of tensors: {sorted(counts)}")
        flat = [t for v in values for t in v]
        padded = pad_sequence_last(flat, padding_value)
        return padded.reshape(len(values), len(first), *padded.shape[1:])
    if isinstance(first, bool):
        return torch.tensor(values, dtype=torch.bool)
    if isinstance(first, int):
        return torch.tensor(values, dtype=torch.int64)
    if isinstance(first, float):
        return torch.tensor(values, dtype=torch.float64)
    return list(values)


def pad_collate(batch: Sequence[Any], padding_value: float = 0.0) -> tuple[Any, ...]:
    """Collate items whose tensors differ in length (time, the last dimension) by padding.

    Items are tensors, or tuples/lists such as the datasets' items. Each field is
    collated on its own: tensors are padded at the end to the longest and stacked,
    lists of tensors (LibriMix sources) become ``[batch, n, ..., time]``, ints and
    floats become tensors, anything else (transcripts, ids) a list. The result is
    the tuple of collated fields followed by ``lengths`` (int64 ``[batch]``), the
    original last-dimension lengths of the first tensor field; for plain tensors
    that is ``(batch, lengths)``.

    Example:
        >>> import torch
        >>> items = [(torch.ones(1, 4), 16000, "A"), (torch.ones(1, 2), 16000, "B C")]
        >>> waveforms, rates, texts, lengths = pad_collate(items)
        >>> waveforms.shape, rates.tolist(), texts, lengths.tolist()
        (torch.Size([2, 1, 4]), [16000, 16000], ['A', 'B C'], [4, 2])
    """
    if len(batch) == 0:
        raise ValueError("pad_collate: empty batch")
    if isinstance(batch[0], Tensor):
        fields: list[list[Any]] = [list(batch)]
    else:
        width = len(batch[0])
        if any(len(item) != width for item in batch):
            raise ValueError("pad_collate: items have different numbers of fields")
        fields = [[item[i] for item in batch] for i in range(width)]
    lengths = None
    for values in fields:
        first = values[0]
        if isinstance(first, Tensor):
            lengths = torch.tensor([v.shape[-1] for v in values], dtype=torch.int64)
            break
        if isinstance(first, (list, tuple)) and first and isinstance(first[0], Tensor):
            lengths = torch.tensor([v[0].shape[-1] for v in values], dtype=torch.int64)
            break
    if lengths is None:
        raise ValueError("pad_collate: the items hold no tensor to pad")
    return (*(_collate_field(values, padding_value) for values in fields), lengths)
