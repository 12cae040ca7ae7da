"""Loudness in LUFS (ITU-R BS.1770-4), as torchaudio's ``loudness``.

Example:
    >>> import math, torch
    >>> t = torch.arange(48000) / 48000
    >>> tone = 0.5 * torch.sin(2 * math.pi * 1000 * t).expand(2, -1)  # stereo, 1 kHz
    >>> round(float(loudness(tone, 48000)))  # a 1 kHz sine at -6 dBFS
    -6
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from trivium.audio.functional.iir import highpass_biquad, treble_biquad

__all__ = ["loudness"]

_BLOCK_SECONDS, _OVERLAP = 0.4, 0.75  # the gating blocks
_ABSOLUTE_GATE, _RELATIVE_GATE = -70.0, -10.0  # LUFS, and LU below the gated loudness
_OFFSET = -0.691  # makes a 1 kHz sine's loudness its level in dBFS
_CHANNEL_WEIGHTS = (1.0, 1.0, 1.0, 1.41, 1.41)  # L, R, C, Ls, Rs


def loudness(waveform: Tensor, sample_rate: int) -> Tensor:
    """The integrated loudness (LUFS) of ``waveform [..., channels, time]``, up to 5 channels.

    K-weighting (a high-shelf and a high-pass biquad), mean squares over 400 ms blocks
    every 100 ms, weighted over channels, then the blocks quieter than -70 LUFS and
    then those more than 10 LU below the loudness of the rest are left out.

    Example:
        >>> import torch
        >>> quiet, loud = torch.full((1, 16000), 0.01), torch.full((1, 16000), 0.1)
        >>> bool(loudness(loud, 16000) > loudness(quiet, 16000))
        True
    """
    channels = waveform.shape[-2]
    if channels > len(_CHANNEL_WEIGHTS):
        raise ValueError(f"loudness takes up to 5 channels, got {channels}")
    weighted = treble_biquad(waveform, sample_rate, 4.0, 1500.0, 1 / math.sqrt(2))
    weighted = highpass_biquad(weighted, sample_rate, 38.0, 0.5)
    size = round(_BLOCK_SECONDS * sample_rate)
    step = round(size * (1 - _OVERLAP))
    power = weighted.square().unfold(-1, size, step).mean(-1)  # [..., channels, blocks]
    g = torch.tensor(_CHANNEL_WEIGHTS[:channels], dtype=power.dtype, device=power.device)
    block_loudness = _OFFSET + 10 * torch.log10((g[:, None] * power).sum(-2))
    kept = block_loudness > _ABSOLUTE_GATE
    gate = _loudness_of(power, kept, g) + _RELATIVE_GATE
    kept = kept & (block_loudness > gate[..., None])
    return _loudness_of(power, kept, g)


def _loudness_of(power: Tensor, kept: Tensor, g: Tensor) -> Tensor:
    """The loudness of the mean power of the ``kept`` blocks, weighted over channels."""
    mask = kept.unsqueeze(-2).to(power.dtype)
    mean = (power * mask).sum(-1) / kept.sum(-1, keepdim=True)  # [..., channels]
    return _OFFSET + 10 * torch.log10((g * mean).sum(-1))
