"""SpecAugment masking (``torchaudio.functional.mask_along_axis`` / ``mask_along_axis_iid``).

A mask covers ``[start, start + width)`` along the frequency or time axis, with
``width ~ U[0, mask_param)`` (``mask_param`` capped at ``p * size``) and
``start ~ U[0, size - width)``. Random numbers come from ``generator``.

Example:
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> spec = torch.ones(2, 1, 20, 30)
    >>> out = mask_along_axis_iid(spec, 10, 0.0, axis=3, generator=g)
    >>> out.shape, bool((out == 0).any())
    (torch.Size([2, 1, 20, 30]), True)
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["mask_along_axis", "mask_along_axis_iid"]


def _axis_and_param(specgram: Tensor, axis: int, mask_param: int, p: float) -> tuple[int, int]:
    if specgram.dim() < 2:
        raise ValueError(
            f"expected a spectrogram [..., freq, time], got shape {tuple(specgram.shape)}"
        )
    axis = axis % specgram.dim()
    if axis < specgram.dim() - 2:
        raise ValueError(f"axis must be the frequency (-2) or time (-1) axis, got {axis}")
    if mask_param < 0:
        raise ValueError(f"mask_param must be >= 0, got {mask_param}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    size = specgram.shape[axis]
    return axis, min(mask_param, int(size * p)) if p < 1.0 else mask_param


def _mask(specgram: Tensor, axis: int, value: Tensor, start: Tensor, mask_value: float) -> Tensor:
    """Fill ``[start, start + value)`` along ``axis``; value and start broadcast to the batch."""
    size = specgram.shape[axis]
    begin = start.long().to(specgram.device)
    end = begin + value.long().to(specgram.device)
    idx = torch.arange(size, device=specgram.device)
    mask = (idx >= begin[..., None]) & (idx < end[..., None])  # [..., size]
    mask = mask.unsqueeze(-1) if axis == specgram.dim() - 2 else mask.unsqueeze(-2)
    return specgram.masked_fill(mask, mask_value)


def _random_mask(
    specgram: Tensor,
    mask_param: int,
    mask_value: float,
    axis: int,
    p: float,
    generator: torch.Generator | None,
    shared: bool,
) -> Tensor:
    """Draw widths and starts, then mask: one mask for all (``shared``), else one per example."""
    axis, mask_param = _axis_and_param(specgram, axis, mask_param, p)
    if mask_param < 1:
        return specgram
    draws = (1,) if shared else specgram.shape[:-2]
    device = "cpu" if generator is None else generator.device
    value = torch.rand(draws, generator=generator, device=device) * mask_param
    start = torch.rand(draws, generator=generator, device=device) * (specgram.shape[axis] - value)
    if shared:
        value, start = value.reshape(()), start.reshape(())
    return _mask(specgram, axis, value, start, mask_value)


def mask_along_axis(
    specgram: Tensor,
    mask_param: int,
    mask_value: float,
    axis: int,
    p: float = 1.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Apply one mask, shared by every example and channel, along ``axis`` (-2 freq, -1 time).

    ``axis`` may also be given as torchaudio does for ``[channel, freq, time]``
    input (1 or 2). ``p`` caps the mask width at ``p`` times the axis size.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> out = mask_along_axis(torch.ones(1, 8, 10), 5, 0.0, axis=2, generator=g)
        >>> bool((out == 0).all(dim=-2).any())  # whole time columns are masked
        True
    """
    return _random_mask(specgram, mask_param, mask_value, axis, p, generator, shared=True)


def mask_along_axis_iid(
    specgrams: Tensor,
    mask_param: int,
    mask_value: float,
    axis: int,
    p: float = 1.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Apply an independent mask to every example and channel (all leading dimensions).

    Input is ``[..., freq, time]``; ``axis`` picks the frequency or time axis
    (negative, or torchaudio's 2 / 3 for ``[batch, channel, freq, time]``).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(1)
        >>> out = mask_along_axis_iid(torch.ones(4, 1, 8, 50), 20, 0.0, axis=-1, generator=g)
        >>> len({tuple(m) for m in (out[:, 0, 0] == 0).tolist()}) > 1  # masks differ
        True
    """
    return _random_mask(specgrams, mask_param, mask_value, axis, p, generator, shared=False)
