"""Resampling transforms, as torchaudio's.

``Resample``, ``Speed``, ``SpeedPerturbation`` and ``PitchShift``.

Example:
    >>> import torch
    >>> Resample(48000, 16000)(torch.zeros(2, 4800)).shape
    torch.Size([2, 1600])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from trivium.audio.functional.resampling import (
    apply_weight,
    pitch_shift,
    polyphase_weight,
    sinc_resample_kernel,
    speed,
)
from trivium.audio.transforms.base import CallTransform
from trivium.core.transform import Transform

__all__ = ["PitchShift", "Resample", "Speed", "SpeedPerturbation"]


class Resample(Transform):
    """Resample ``[..., time]`` waveforms from ``orig_freq`` to ``new_freq`` (windowed sinc).

    The kernel is computed once, at construction, and kept in the ``kernel`` buffer
    (torchaudio's layout) and, rearranged for fast application, in ``weight``; both
    follow ``.to(device)``. ``dtype`` picks their precision (float32 by default).
    See :func:`trivium.audio.functional.resample` for the settings.

    Example:
        >>> import torch
        >>> r = Resample(16000, 8000, resampling_method="sinc_interp_kaiser")
        >>> r(torch.zeros(3, 1, 1000)).shape
        torch.Size([3, 1, 500])
    """

    def __init__(
        self,
        orig_freq: int = 16000,
        new_freq: int = 16000,
        resampling_method: str = "sinc_interp_hann",
        lowpass_filter_width: int = 6,
        rolloff: float = 0.99,
        beta: float | None = None,
        *,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.orig_freq = int(orig_freq)
        self.new_freq = int(new_freq)
        self.gcd = math.gcd(self.orig_freq, self.new_freq)
        self.resampling_method = resampling_method
        self.lowpass_filter_width = lowpass_filter_width
        self.rolloff = rolloff
        self.beta = beta
        kernel, self.width = sinc_resample_kernel(
            self.orig_freq,
            self.new_freq,
            self.gcd,
            lowpass_filter_width,
            rolloff,
            resampling_method,
            beta,
            dtype=dtype,
        )
        self.register_buffer("kernel", kernel.clone(), persistent=False)
        orig = self.orig_freq // self.gcd
        self.register_buffer("weight", polyphase_weight(kernel, orig), persistent=False)

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Resample one waveform tensor."""
        if self.orig_freq == self.new_freq:
            return inpt
        if not inpt.is_floating_point():
            raise TypeError(f"Resample: expected a floating point waveform, got {inpt.dtype}")
        return apply_weight(
            inpt,
            self.orig_freq // self.gcd,
            self.new_freq // self.gcd,
            self.weight.to(inpt.dtype),
            self.width,
        )


class Speed(CallTransform):
    """Play ``factor`` times faster (the pitch shifts too): ``speed(waveform, lengths=None)``.

    Returns the waveform and the scaled ``lengths`` (None when none are given), as
    torchaudio's ``Speed``.

    Example:
        >>> import torch
        >>> out, lengths = Speed(16000, 2.0)(torch.zeros(1, 16000), torch.tensor([16000]))
        >>> out.shape, lengths.tolist()
        (torch.Size([1, 8000]), [8000])
    """

    def __init__(self, orig_freq: int, factor: float) -> None:
        super().__init__()
        if factor <= 0:
            raise ValueError(f"factor must be > 0, got {factor}")
        self.orig_freq, self.factor = orig_freq, factor

    def forward(
        self, waveform: Tensor, lengths: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """``waveform [..., time]`` played faster, and its ``lengths`` scaled."""
        return speed(waveform, self.orig_freq, self.factor, lengths)


class SpeedPerturbation(CallTransform):
    """Change speed by a factor drawn uniformly from ``factors`` (Ko et al., 2015).

    Call it as ``perturb(waveform, lengths=None)``; it returns ``(waveform, lengths)``
    like torchaudio's. The factor comes from ``generator``.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> sp = SpeedPerturbation(16000, [0.9, 1.0, 1.1], generator=g)
        >>> y, n = sp(torch.zeros(2, 16000), torch.tensor([16000, 12000]))
        >>> y.shape[-1] in (17778, 16000, 14546)
        True
    """

    def __init__(
        self,
        orig_freq: int,
        factors: Sequence[float],
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator)
        if len(factors) == 0 or any(f <= 0 for f in factors):
            raise ValueError(f"factors must be a non-empty sequence of positive numbers: {factors}")
        self.orig_freq = orig_freq
        self.factors = list(factors)

    def forward(
        self, waveform: Tensor, lengths: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """Perturb ``waveform`` ``[..., time]``; ``lengths`` ``[...]`` are scaled alike."""
        factor = self.factors[int(self._draw_index())]
        if factor == 1.0:
            return waveform, lengths
        return speed(waveform, self.orig_freq, factor, lengths)

    def _draw_index(self) -> Tensor:
        """Which of ``factors`` to use, drawn on the generator's device."""
        generator = self.active_generator()
        device = "cpu" if generator is None else generator.device
        return torch.randint(0, len(self.factors), (), generator=generator, device=device)


class PitchShift(Transform):
    """Shift the pitch of ``[..., time]`` audio by ``n_steps``, keeping its duration.

    See :func:`~trivium.audio.functional.pitch_shift`.

    Example:
        >>> import torch
        >>> PitchShift(16000, -2)(torch.randn(2, 4000)).shape
        torch.Size([2, 4000])
    """

    def __init__(
        self,
        sample_rate: int,
        n_steps: int,
        bins_per_octave: int = 12,
        n_fft: int = 512,
        win_length: int | None = None,
        hop_length: int | None = None,
        window_fn: Callable[..., Tensor] = torch.hann_window,
        wkwargs: dict | None = None,
    ) -> None:
        super().__init__()
        self.sample_rate, self.n_steps, self.bins_per_octave = sample_rate, n_steps, bins_per_octave
        self.n_fft = n_fft
        self.win_length = n_fft if win_length is None else win_length
        self.hop_length = self.win_length // 4 if hop_length is None else hop_length
        self.register_buffer("window", window_fn(self.win_length, **(wkwargs or {})))

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Shift one waveform's pitch."""
        return pitch_shift(
            inpt, self.sample_rate, self.n_steps, self.bins_per_octave, self.n_fft,
            self.hop_length, self.win_length, self.window,
        )  # fmt: skip
