"""Spectrogram augmentation for speech recognition: new speakers and speaking rates.

:func:`augment_spectrogram` draws a vocal-tract-length warp of the frequency axis
(VTLP, Jaitly & Hinton 2013) and a tempo change of the time axis from one
generator, so a training step is reproducible. :func:`warp_frequency` and
:func:`stretch_time` are the two resamplings.

Example:
    >>> import torch
    >>> spec = torch.rand(40, 100)
    >>> out = augment_spectrogram(spec, torch.Generator().manual_seed(0), freq_warp=0.1,
    ...                           time_stretch=0.1)
    >>> out.shape[0], 90 <= out.shape[1] <= 110
    (40, True)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["augment_spectrogram", "stretch_time", "warp_frequency"]


def warp_frequency(specgram: Tensor, factor: float) -> Tensor:
    """Stretch the frequency axis of ``[..., freq, time]`` by ``factor``, same shape out.

    Output bin ``c`` reads input position ``c / factor`` (linear interpolation; past
    the top the last bin repeats): ``factor > 1`` moves formants up, as a shorter
    vocal tract does, ``factor < 1`` down.

    Example:
        >>> import torch
        >>> spec = torch.arange(5.0).view(5, 1)
        >>> warp_frequency(spec, 2.0).flatten().tolist()
        [0.0, 0.5, 1.0, 1.5, 2.0]
    """
    if factor <= 0:
        raise ValueError(f"warp_frequency: factor must be positive, got {factor}")
    bins = specgram.shape[-2]
    position = torch.arange(bins, device=specgram.device, dtype=torch.float32) / factor
    position = position.clamp(max=bins - 1)
    low = position.floor().long()
    high = (low + 1).clamp(max=bins - 1)
    weight = (position - low).to(specgram.dtype).unsqueeze(-1)
    return torch.lerp(specgram[..., low, :], specgram[..., high, :], weight)


def stretch_time(specgram: Tensor, factor: float) -> Tensor:
    """Resample the time axis of ``[..., freq, time]`` to ``round(time * factor)`` frames.

    ``factor > 1`` is slower speech (more frames), ``factor < 1`` faster; linear
    interpolation between frames, first and last frames kept.

    Example:
        >>> import torch
        >>> stretch_time(torch.tensor([[0.0, 1.0, 2.0]]), 5 / 3).tolist()
        [[0.0, 0.5, 1.0, 1.5, 2.0]]
    """
    if factor <= 0:
        raise ValueError(f"stretch_time: factor must be positive, got {factor}")
    frames = max(2, round(specgram.shape[-1] * factor))
    flat = specgram.reshape(-1, specgram.shape[-2], specgram.shape[-1])
    out = F.interpolate(flat, size=frames, mode="linear", align_corners=True)
    return out.reshape(*specgram.shape[:-1], frames)


def _uniform(generator: torch.Generator, half_width: float) -> float:
    """A draw from ``1 ± half_width``."""
    return 1.0 + (2.0 * float(torch.rand((), generator=generator)) - 1.0) * half_width


def augment_spectrogram(
    specgram: Tensor, generator: torch.Generator, freq_warp: float = 0.0, time_stretch: float = 0.0
) -> Tensor:
    """One random augmentation of a ``[freq, time]`` (log-mel) spectrogram.

    The frequency axis is warped by a factor drawn from ``1 ± freq_warp`` (a new
    speaker's formants), then the time axis stretched by one from ``1 ± time_stretch``
    (a new speaking rate). Zero turns a step off. Apply it to mel bands, before
    a DCT to MFCCs and before normalisation.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> augment_spectrogram(torch.ones(20, 50), g, freq_warp=0.2).shape
        torch.Size([20, 50])
    """
    if freq_warp:
        specgram = warp_frequency(specgram, _uniform(generator, freq_warp))
    if time_stretch:
        specgram = stretch_time(specgram, _uniform(generator, time_stretch))
    return specgram
