"""Filters over time and feature normalisation, as torchaudio's: ``compute_deltas``,
``preemphasis``, ``deemphasis``, ``contrast``, ``sliding_window_cmn``.

Example:
    >>> import torch
    >>> x = torch.tensor([0.5, 0.5, 0.5])
    >>> preemphasis(x, 0.5), deemphasis(preemphasis(x, 0.5), 0.5)
    (tensor([0.5000, 0.2500, 0.2500]), tensor([0.5000, 0.5000, 0.5000]))
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from trivium.audio.functional.iir import lfilter

__all__ = ["compute_deltas", "contrast", "deemphasis", "preemphasis", "sliding_window_cmn"]


def compute_deltas(specgram: Tensor, win_length: int = 5, mode: str = "replicate") -> Tensor:
    """Delta coefficients of ``[..., freq, time]`` features along time (torchaudio's formula).

    ``d[t] = sum_{n=1}^{N} n (c[t+n] - c[t-n]) / (2 sum_{n=1}^{N} n^2)`` with
    ``N = (win_length - 1) // 2``, the edges padded by ``mode`` (``F.pad``'s modes).

    Example:
        >>> import torch
        >>> compute_deltas(torch.arange(6.0).reshape(1, 6))
        tensor([[0.5000, 0.8000, 1.0000, 1.0000, 0.8000, 0.5000]])
    """
    if win_length < 3:
        raise ValueError(f"win_length must be >= 3, got {win_length}")
    n = (win_length - 1) // 2
    shape = specgram.shape
    flat = specgram.reshape(-1, 1, shape[-1])
    padded = F.pad(flat, (n, n), mode=mode)
    kernel = torch.arange(-n, n + 1, device=specgram.device, dtype=specgram.dtype)
    denominator = n * (n + 1) * (2 * n + 1) / 3  # 2 * sum of n^2
    deltas = F.conv1d(padded, kernel.reshape(1, 1, -1)) / denominator
    return deltas.reshape(shape)


def preemphasis(waveform: Tensor, coeff: float = 0.97) -> Tensor:
    """``y[t] = x[t] - coeff * x[t - 1]`` along the last dimension (``y[0] = x[0]``).

    Example:
        >>> import torch
        >>> preemphasis(torch.tensor([1.0, 1.0, 0.0]), 0.5)
        tensor([ 1.0000,  0.5000, -0.5000])
    """
    out = waveform.clone()
    out[..., 1:] -= coeff * waveform[..., :-1]
    return out


def deemphasis(waveform: Tensor, coeff: float = 0.97) -> Tensor:
    """Undo :func:`preemphasis`: ``y[t] = x[t] + coeff * y[t - 1]``, clamped to [-1, 1].

    The clamp is torchaudio's (its ``lfilter`` clamps by default).

    Example:
        >>> import torch
        >>> deemphasis(torch.tensor([0.5, 0.0, 0.0]), 0.5)
        tensor([0.5000, 0.2500, 0.1250])
    """
    a = torch.tensor([1.0, -coeff], dtype=waveform.dtype, device=waveform.device)
    b = torch.tensor([1.0, 0.0], dtype=waveform.dtype, device=waveform.device)
    return lfilter(waveform, a, b)


def contrast(waveform: Tensor, enhancement_amount: float = 75.0) -> Tensor:
    """SoX's ``contrast`` effect: louder-sounding audio, ``enhancement_amount`` in [0, 100].

    Example:
        >>> import torch
        >>> contrast(torch.tensor([0.0, 1.0]), 0.0)
        tensor([0., 1.])
    """
    if not 0 <= enhancement_amount <= 100:
        raise ValueError(f"enhancement_amount must be in [0, 100], got {enhancement_amount}")
    phase = waveform * (math.pi / 2)
    return torch.sin(phase + enhancement_amount / 750.0 * torch.sin(phase * 4))


def sliding_window_cmn(
    specgram: Tensor,
    cmn_window: int = 600,
    min_cmn_window: int = 100,
    center: bool = False,
    norm_vars: bool = False,
) -> Tensor:
    """Kaldi's sliding-window cepstral mean (and variance) normalisation of ``[..., time, freq]``.

    Each frame has the mean of a window of up to ``cmn_window`` frames subtracted:
    the frames before it (``center=False``, at least ``min_cmn_window`` at the start)
    or around it (``center=True``), the window moved inside the utterance at its
    edges. ``norm_vars`` also divides by the window's standard deviation.

    Example:
        >>> import torch
        >>> x = torch.tensor([[1.0], [3.0], [5.0]])
        >>> sliding_window_cmn(x, cmn_window=2, min_cmn_window=1).flatten()
        tensor([0., 1., 2.])
    """
    shape = specgram.shape
    frames = shape[-2]
    x = specgram.reshape(-1, frames, shape[-1])
    start, end = _cmn_windows(frames, cmn_window, min_cmn_window, center, x.device)
    zero = torch.zeros_like(x[:, :1])
    sums = torch.cat([zero, x.cumsum(1)], dim=1)
    count = (end - start).to(x.dtype)[None, :, None]
    mean = (sums[:, end] - sums[:, start]) / count
    out = x - mean
    if norm_vars:
        squares = torch.cat([zero, (x * x).cumsum(1)], dim=1)
        variance = (squares[:, end] - squares[:, start]) / count - mean * mean
        out = torch.where(count == 1, torch.zeros_like(out), out * variance.rsqrt())
    return out.reshape(shape)


def _cmn_windows(
    frames: int, window: int, min_window: int, center: bool, device: torch.device
) -> tuple[Tensor, Tensor]:
    """The ``[start, end)`` frames of each frame's window (Kaldi's rules at the edges)."""
    t = torch.arange(frames, device=device)
    if center:
        start = t - window // 2
        end = start + window
    else:
        start = t - window
        end = t + 1
    end = torch.where(start < 0, end - start, end)
    start = start.clamp(min=0)
    if not center:
        end = torch.where(end > t, torch.clamp(t + 1, min=min_window), end)
    start = torch.where(end > frames, (start - (end - frames)).clamp(min=0), start)
    end = end.clamp(max=frames)
    return start, end
