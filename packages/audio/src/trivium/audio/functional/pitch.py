"""Pitch detection, as torchaudio's ``detect_pitch_frequency``.

Example:
    >>> import math, torch
    >>> t = torch.arange(16000) / 16000
    >>> tone = torch.sin(2 * math.pi * 200 * t)
    >>> 190 < float(detect_pitch_frequency(tone, 16000).median()) < 210
    True
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["detect_pitch_frequency"]

_EPSILON = 1e-9


def detect_pitch_frequency(
    waveform: Tensor,
    sample_rate: int,
    frame_time: float = 10**-2,
    win_length: int = 30,
    freq_low: int = 85,
    freq_high: int = 3400,
) -> Tensor:
    """The pitch (Hz) of each ``frame_time`` frame of ``[..., time]``: ``[..., frames]``.

    Each frame's normalised cross-correlation with the signal ``lag`` samples later
    (lags up to ``sample_rate / freq_low``) peaks at the period; the shortest lag
    whose peak is within 1% of the best (from ``sample_rate / freq_high`` on, in the
    first half of the lags) wins, and a median over ``win_length`` frames smooths
    the periods.

    Example:
        >>> import torch
        >>> detect_pitch_frequency(torch.randn(2, 8000), 8000).shape
        torch.Size([2, 85])
    """
    shape = waveform.shape
    flat = waveform.reshape(-1, shape[-1])
    nccf = _nccf(flat, sample_rate, frame_time, freq_low)
    periods = _median(_best_lags(nccf, sample_rate, freq_high), win_length)
    frequency = sample_rate / (_EPSILON + periods.to(torch.float))
    return frequency.reshape(*shape[:-1], frequency.shape[-1])


def _nccf(waveform: Tensor, sample_rate: int, frame_time: float, freq_low: int) -> Tensor:
    """``[batch, frames, lags]``: each frame against itself ``lag`` samples later."""
    lags = math.ceil(sample_rate / freq_low)
    frame = math.ceil(sample_rate * frame_time)
    frames = math.ceil(waveform.shape[-1] / frame)
    padded = F.pad(waveform, (0, lags + frames * frame - waveform.shape[-1]))
    out = []
    for lag in range(1, lags + 1):
        now = padded[..., :-lag].unfold(-1, frame, frame)[..., :frames, :]
        later = padded[..., lag:].unfold(-1, frame, frame)[..., :frames, :]
        norms = (_EPSILON + torch.linalg.vector_norm(now, dim=-1)).pow(2) * (
            _EPSILON + torch.linalg.vector_norm(later, dim=-1)
        ).pow(2)
        out.append((now * later).sum(-1) / norms)
    return torch.stack(out, dim=-1)


def _best_lags(nccf: Tensor, sample_rate: int, freq_high: int) -> Tensor:
    """Per frame, the lag of the highest peak, or of the first half's if within 1% of it."""
    shortest = math.ceil(sample_rate / freq_high)
    best, best_lag = nccf[..., shortest:].max(-1)
    half, half_lag = nccf[..., shortest : nccf.shape[-1] // 2].max(-1)
    take_half = half > 0.99 * best
    lag = torch.where(take_half, half_lag, best_lag)
    return lag + shortest + 1  # the index is lag - 1, and one sample of calibration


def _median(lags: Tensor, win_length: int) -> Tensor:
    """The median over a window of ``win_length`` frames ending ``(win_length - 1) // 2``
    frames ahead, the start padded with the first frame's value."""
    pad = (win_length - 1) // 2
    padded = torch.cat([lags[..., :1].expand(*lags.shape[:-1], pad), lags], dim=-1)
    return padded.unfold(-1, win_length, 1).median(-1).values
