"""Waveform effects: ``Fade``, ``Vol``, ``AddNoise`` and ``Vad`` (torchaudio's).

Example:
    >>> import torch
    >>> Vol(0.5)(torch.ones(2, 3))
    tensor([[0.5000, 0.5000, 0.5000],
            [0.5000, 0.5000, 0.5000]])
"""

from __future__ import annotations

import math
from typing import Any

from torch import Tensor

from trivium.audio.functional.effects import FADE_SHAPES, add_noise, fade, gain
from trivium.audio.functional.vad import vad
from trivium.audio.transforms.base import CallTransform
from trivium.core.transform import Transform

__all__ = ["AddNoise", "Fade", "Vad", "Vol"]


class Fade(Transform):
    """Fade a ``[..., time]`` waveform in over ``fade_in_len`` and out over ``fade_out_len``.

    Example:
        >>> import torch
        >>> Fade(fade_in_len=2, fade_out_len=2, fade_shape="linear")(torch.ones(5))
        tensor([0., 1., 1., 1., 0.])
    """

    def __init__(
        self, fade_in_len: int = 0, fade_out_len: int = 0, fade_shape: str = "linear"
    ) -> None:
        super().__init__()
        if fade_shape not in FADE_SHAPES:
            raise ValueError(f"fade_shape must be one of {FADE_SHAPES}, got {fade_shape!r}")
        self.fade_in_len = fade_in_len
        self.fade_out_len = fade_out_len
        self.fade_shape = fade_shape

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Fade one waveform tensor."""
        return fade(inpt, self.fade_in_len, self.fade_out_len, self.fade_shape)


class Vol(Transform):
    """Scale the volume and clip to [-1, 1].

    ``gain_type`` ``"amplitude"`` multiplies by ``gain``, ``"db"`` by
    ``10 ** (gain / 20)`` and ``"power"`` by ``sqrt(gain)``.

    Example:
        >>> import torch
        >>> Vol(20.0, "db")(torch.tensor([0.05, 0.5]))
        tensor([0.5000, 1.0000])
    """

    def __init__(self, gain: float, gain_type: str = "amplitude") -> None:
        super().__init__()
        if gain_type not in ("amplitude", "db", "power"):
            raise ValueError(f"gain_type must be 'amplitude', 'db' or 'power', got {gain_type!r}")
        if gain_type in ("amplitude", "power") and gain < 0:
            raise ValueError(f"gain must be >= 0 for gain_type={gain_type!r}, got {gain}")
        self.gain = gain
        self.gain_type = gain_type

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Scale one waveform tensor."""
        if self.gain_type == "amplitude":
            out = inpt * self.gain
        elif self.gain_type == "db":
            out = gain(inpt, self.gain)
        else:
            out = gain(inpt, 10 * math.log10(self.gain))
        return out.clamp(-1, 1)


class AddNoise(CallTransform):
    """Add ``noise`` scaled to a signal-to-noise ratio of ``snr`` dB.

    Call it as ``add(waveform, noise, snr, lengths=None)`` with ``waveform`` and
    ``noise`` ``[..., time]`` and ``snr`` ``[...]``; deterministic given its inputs.

    Example:
        >>> import torch
        >>> x, n = torch.ones(2, 50), torch.randn(2, 50)
        >>> AddNoise()(x, n, torch.tensor([10.0, 20.0])).shape
        torch.Size([2, 50])
    """

    def forward(
        self, waveform: Tensor, noise: Tensor, snr: Tensor, lengths: Tensor | None = None
    ) -> Tensor:
        """Mix ``noise`` into ``waveform`` at ``snr`` dB."""
        return add_noise(waveform, noise, snr, lengths)


class Vad(Transform):
    """Trim silence and quiet noise from the front of a recording (SoX's ``vad``).

    Takes :func:`~trivium.audio.functional.vad`'s parameters (after the waveform) and
    applies it to ``[time]`` or ``[channels, time]`` (the channels trimmed together).

    Example:
        >>> import torch
        >>> Vad(16000)(torch.zeros(2, 16000)).shape
        torch.Size([2, 0])
    """

    def __init__(
        self,
        sample_rate: int,
        trigger_level: float = 7.0,
        trigger_time: float = 0.25,
        search_time: float = 1.0,
        allowed_gap: float = 0.25,
        pre_trigger_time: float = 0.0,
        boot_time: float = 0.35,
        noise_up_time: float = 0.1,
        noise_down_time: float = 0.01,
        noise_reduction_amount: float = 1.35,
        measure_freq: float = 20.0,
        measure_duration: float | None = None,
        measure_smooth_time: float = 0.4,
        hp_filter_freq: float = 50.0,
        lp_filter_freq: float = 6000.0,
        hp_lifter_freq: float = 150.0,
        lp_lifter_freq: float = 2000.0,
    ) -> None:
        super().__init__()
        self.sample_rate = sample_rate
        self.trigger_level, self.trigger_time = trigger_level, trigger_time
        self.search_time, self.allowed_gap = search_time, allowed_gap
        self.pre_trigger_time, self.boot_time = pre_trigger_time, boot_time
        self.noise_up_time, self.noise_down_time = noise_up_time, noise_down_time
        self.noise_reduction_amount = noise_reduction_amount
        self.measure_freq, self.measure_duration = measure_freq, measure_duration
        self.measure_smooth_time = measure_smooth_time
        self.hp_filter_freq, self.lp_filter_freq = hp_filter_freq, lp_filter_freq
        self.hp_lifter_freq, self.lp_lifter_freq = hp_lifter_freq, lp_lifter_freq

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """The waveform from its detected start."""
        return vad(
            inpt, self.sample_rate, self.trigger_level, self.trigger_time, self.search_time,
            self.allowed_gap, self.pre_trigger_time, self.boot_time, self.noise_up_time,
            self.noise_down_time, self.noise_reduction_amount, self.measure_freq,
            self.measure_duration, self.measure_smooth_time, self.hp_filter_freq,
            self.lp_filter_freq, self.hp_lifter_freq, self.lp_lifter_freq,
        )  # fmt: skip
