"""Gain, DC shift, fades and noise, as torchaudio's: ``gain``, ``dcshift``, ``fade``, ``add_noise``.

Example:
    >>> import torch
    >>> gain(torch.full((1, 4), 0.5), 6.0206).max().item() > 0.99
    True
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from trivium.audio.functional.iir import lfilter

__all__ = ["FADE_SHAPES", "add_noise", "dcshift", "fade", "gain", "overdrive"]

FADE_SHAPES = ("quarter_sine", "half_sine", "linear", "logarithmic", "exponential")


def gain(waveform: Tensor, gain_db: float = 1.0) -> Tensor:
    """Multiply by ``10 ** (gain_db / 20)`` (no clipping; ``Vol`` clips).

    Example:
        >>> import torch
        >>> gain(torch.ones(2), -20.0)
        tensor([0.1000, 0.1000])
    """
    if gain_db == 0:
        return waveform
    return waveform * 10 ** (gain_db / 20)


def dcshift(waveform: Tensor, shift: float, limiter_gain: float | None = None) -> Tensor:
    """Add ``shift`` (in [-2, 2]) to every sample, clipped to [-1, 1] (SoX's ``dcshift``).

    With ``limiter_gain`` (about 0.05), samples that the shift would push past the
    limiter's threshold ``1 - (|shift| - limiter_gain)`` are compressed instead of
    clipped. The input is left unchanged.

    Example:
        >>> import torch
        >>> dcshift(torch.tensor([-0.5, 0.0, 0.9]), 0.2)
        tensor([-0.3000,  0.2000,  1.0000])
    """
    plain = (waveform + shift).clamp(-1.0, 1.0)
    if limiter_gain is None or shift == 0:
        return plain
    threshold = 1.0 - (abs(shift) - limiter_gain)
    side = 1.0 if shift > 0 else -1.0  # the limiter works on the side the shift pushes to
    over = waveform * side > threshold
    squeezed = (waveform * side - threshold) * limiter_gain / (1 - threshold)
    limited = (squeezed + threshold + abs(shift)).clamp(max=threshold) * side
    return torch.where(over, limited, plain)


def overdrive(waveform: Tensor, gain: float = 20, colour: float = 20) -> Tensor:
    """SoX's ``overdrive``: soft-clipping distortion of ``gain`` dB, ``colour`` (0-100)
    adding even harmonics; the result clamped to [-1, 1].

    The input driven through ``x - x^3 / 3`` (hard-limited at +-2/3) passes a DC
    blocker ``y[n] = t[n] - t[n-1] + 0.995 y[n-1]``, mixed with the dry signal.

    Example:
        >>> import torch
        >>> overdrive(torch.zeros(1, 3), colour=0).tolist()
        [[0.0, 0.0, 0.0]]
    """
    driven = waveform * 10 ** (gain / 20) + colour / 200
    shaped = torch.where(
        driven < -1, -2.0 / 3.0, torch.where(driven > 1, 2.0 / 3.0, driven - driven**3 / 3)
    )
    blocker_a = torch.tensor([1.0, -0.995], dtype=waveform.dtype, device=waveform.device)
    blocker_b = torch.tensor([1.0, -1.0], dtype=waveform.dtype, device=waveform.device)
    blocked = lfilter(shaped, blocker_a, blocker_b, clamp=False)
    return (waveform * 0.5 + blocked * 0.75).clamp(-1.0, 1.0)


def _fade_curve(length: int, fade_shape: str, rising: bool, like: Tensor) -> Tensor:
    x = torch.linspace(0, 1, length, device=like.device, dtype=like.dtype)
    if fade_shape == "linear":
        curve = x if rising else 1 - x
    elif fade_shape == "exponential":
        curve = torch.pow(2, (x - 1) * 5) if rising else torch.pow(2, -x * 5)
    elif fade_shape == "logarithmic":
        curve = torch.log10(0.1 + x) + 1 if rising else torch.log10(1.1 - x) + 1
    elif fade_shape == "quarter_sine":
        curve = torch.sin(x * math.pi / 2 + (0 if rising else math.pi / 2))
    elif fade_shape == "half_sine":
        curve = torch.sin(x * math.pi + (-math.pi / 2 if rising else math.pi / 2)) / 2 + 0.5
    else:
        raise ValueError(f"fade_shape must be one of {FADE_SHAPES}, got {fade_shape!r}")
    return curve.clamp(0, 1)


def fade(
    waveform: Tensor, fade_in_len: int = 0, fade_out_len: int = 0, fade_shape: str = "linear"
) -> Tensor:
    """Fade the first ``fade_in_len`` samples in and the last ``fade_out_len`` out.

    ``fade_shape`` is one of ``"quarter_sine"``, ``"half_sine"``, ``"linear"``,
    ``"logarithmic"`` or ``"exponential"`` (torchaudio's curves).

    Example:
        >>> import torch
        >>> fade(torch.ones(6), 3, 2)
        tensor([0.0000, 0.5000, 1.0000, 1.0000, 1.0000, 0.0000])
    """
    length = waveform.shape[-1]
    if fade_in_len < 0 or fade_out_len < 0:
        raise ValueError(f"fade lengths must be >= 0, got {fade_in_len}, {fade_out_len}")
    if fade_in_len > length or fade_out_len > length:
        raise ValueError(
            f"fade lengths ({fade_in_len}, {fade_out_len}) exceed the waveform length {length}"
        )
    like = waveform if waveform.is_floating_point() else waveform.float()
    envelope = torch.ones(length, device=like.device, dtype=like.dtype)
    if fade_in_len:
        envelope[:fade_in_len] = _fade_curve(fade_in_len, fade_shape, True, like)
    if fade_out_len:
        envelope[length - fade_out_len :] *= _fade_curve(fade_out_len, fade_shape, False, like)
    return waveform * envelope


def add_noise(
    waveform: Tensor, noise: Tensor, snr: Tensor, lengths: Tensor | None = None
) -> Tensor:
    """``waveform + k * noise`` with ``k`` chosen so the signal-to-noise ratio is ``snr`` dB.

    ``waveform`` and ``noise`` are ``[..., time]``; ``snr`` is ``[...]`` (one value per
    waveform, broadcastable); ``lengths`` ``[...]`` limits the energies to each example's
    valid samples. Same formula as ``torchaudio.functional.add_noise``.

    Example:
        >>> import torch
        >>> x = torch.ones(1, 100)
        >>> y = add_noise(x, torch.ones(1, 100), torch.tensor([20.0]))
        >>> round(float(10 * torch.log10(x.pow(2).sum() / (y - x).pow(2).sum())), 3)
        20.0
    """
    if waveform.shape[-1] != noise.shape[-1]:
        raise ValueError(
            f"waveform and noise must have the same length, got {waveform.shape[-1]} "
            f"and {noise.shape[-1]}"
        )
    if lengths is not None:
        valid = torch.arange(waveform.shape[-1], device=waveform.device) < lengths.unsqueeze(-1)
        waveform_e, noise_e = waveform * valid, noise * valid
    else:
        waveform_e, noise_e = waveform, noise
    energy_signal = waveform_e.pow(2).sum(-1)
    energy_noise = noise_e.pow(2).sum(-1)
    original_snr_db = 10 * (torch.log10(energy_signal) - torch.log10(energy_noise))
    scale = 10 ** ((original_snr_db - snr) / 20.0)
    return waveform + scale.unsqueeze(-1) * noise
