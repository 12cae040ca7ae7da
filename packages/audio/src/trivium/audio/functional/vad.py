"""SoX's voice activity detector (``vad``), as torchaudio's port of it.

The measurements of all frames are computed together: the windowed spectra in one
FFT, the smoothed spectrum and the adaptive noise estimate in one short loop over
frames (they do not depend on the trigger), the cepstral power in a second FFT.
Only the trigger logic walks frame by frame, on numbers, as SoX does.

Example:
    >>> import torch
    >>> vad(torch.zeros(1, 16000), 16000).shape
    torch.Size([1, 0])
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["vad"]

_CHUNK_FRAMES = 16


@dataclass(frozen=True)
class _Plan:
    """Lengths and windows derived from ``vad``'s parameters (SoX's ``start``)."""

    measure_len: int
    dft_len: int
    period: int
    measures_len: int
    gap_len: int
    pre_trigger_len: int
    spectrum: tuple[int, int]
    cepstrum: tuple[int, int]
    boot_count_max: int

    @property
    def samples_len(self) -> int:
        """Samples kept before the trigger: the fixed pre-trigger, the search window, a frame."""
        return self.pre_trigger_len + self.measures_len * self.period + self.measure_len


def _plan(
    sample_rate: int, measure_freq: float, measure_duration: float | None, search_time: float,
    allowed_gap: float, pre_trigger_time: float, boot_time: float,
    filter_freqs: tuple[float, float], lifter_freqs: tuple[float, float],
) -> _Plan:  # fmt: skip
    if sample_rate <= 0 or measure_freq <= 0:
        raise ValueError(
            f"sample_rate and measure_freq must be > 0, got {sample_rate} and {measure_freq}"
        )
    duration = 2.0 / measure_freq if measure_duration is None else measure_duration
    measure_len = int(sample_rate * duration + 0.5)
    if measure_len < 1:
        raise ValueError(f"measure_duration must cover at least one sample, got {duration}")
    dft_len = 16
    while dft_len < measure_len:
        dft_len *= 2
    spectrum_start = max(int(filter_freqs[0] / sample_rate * dft_len + 0.5), 1)
    spectrum_end = min(int(filter_freqs[1] / sample_rate * dft_len + 0.5), dft_len // 2)
    if spectrum_end <= spectrum_start:
        raise ValueError(
            f"hp_filter_freq ({filter_freqs[0]}) must be below lp_filter_freq ({filter_freqs[1]}) "
            f"by at least one frequency bin"
        )
    cepstrum_start = math.ceil(sample_rate * 0.5 / lifter_freqs[1])
    cepstrum_end = min(math.floor(sample_rate * 0.5 / lifter_freqs[0]), dft_len // 4)
    if cepstrum_end <= cepstrum_start:
        raise ValueError(
            "Expected cepstrum_start to be smaller than cepstrum_end."
            f"Found: cepstrum_start: {cepstrum_start}, cepstrum_end: {cepstrum_end}."
        )
    return _Plan(
        measure_len=measure_len,
        dft_len=dft_len,
        period=int(sample_rate / measure_freq + 0.5),
        measures_len=math.ceil(search_time * measure_freq),
        gap_len=int(allowed_gap * measure_freq + 0.5),
        pre_trigger_len=int(pre_trigger_time * sample_rate + 0.5),
        spectrum=(spectrum_start, spectrum_end),
        cepstrum=(cepstrum_start, cepstrum_end),
        boot_count_max=int(boot_time * measure_freq - 0.5),
    )


def _scaled_hann(length: int, device: torch.device) -> Tensor:
    """SoX's analysis window: a Hann window scaled by ``2 / sqrt(length)``."""
    scale = torch.full((length,), 2.0 / math.sqrt(float(length)), device=device)
    return scale * torch.hann_window(length, device=device, dtype=torch.float)


class _Measurer:
    """Cepstral power of frames, chunk by chunk, with the smoothed spectrum and the
    adaptive noise estimate carried from chunk to chunk."""

    def __init__(
        self, plan: _Plan, channels: int, device: torch.device, noise_reduction_amount: float,
        smooth_mult: float, noise_mults: tuple[float, float],
    ) -> None:  # fmt: skip
        lo, hi = plan.spectrum
        self.plan, self.reduction, self.smooth_mult = plan, noise_reduction_amount, smooth_mult
        self.window = _scaled_hann(plan.measure_len, device)
        self.lifter_window = _scaled_hann(hi - lo, device)
        self.spectrum = torch.zeros(channels, hi - lo, device=device)
        self.noise = torch.zeros_like(self.spectrum)
        self.up, self.down = (torch.tensor(m, device=device) for m in noise_mults)
        self.frame = 0

    def _denoised(self, magnitude: Tensor) -> Tensor:
        """Per frame, the smoothed spectrum less the noise estimate (SoX's order of updates)."""
        cleaned = torch.empty_like(magnitude)
        for f in range(magnitude.shape[1]):
            boot = self.frame <= self.plan.boot_count_max
            mult = self.frame / (1.0 + self.frame) if boot else self.smooth_mult
            self.spectrum = self.spectrum * mult + magnitude[:, f] * (1 - mult)
            power = self.spectrum**2
            if boot:
                noise_mult = torch.zeros_like(power)
            else:
                noise_mult = torch.where(power > self.noise, self.up, self.down)
            self.noise = self.noise * noise_mult + power * (1 - noise_mult)
            cleaned[:, f] = torch.sqrt(torch.clamp(power - self.reduction * self.noise, min=0))
            self.frame += 1
        return cleaned

    def levels(self, frames: Tensor) -> Tensor:
        """``[channels, frames, measure_len]`` samples: ``[channels, frames]`` levels (float64)."""
        lo, hi = self.plan.spectrum
        magnitude = torch.fft.rfft(frames * self.window, n=self.plan.dft_len).abs()[..., lo:hi]
        cleaned = self._denoised(magnitude)
        lifter = torch.zeros(*cleaned.shape[:2], self.plan.dft_len // 2, device=frames.device)
        lifter[..., lo:hi] = cleaned * self.lifter_window
        c_lo, c_hi = self.plan.cepstrum
        power = torch.fft.rfft(lifter)[..., c_lo:c_hi].abs().pow(2).sum(-1).double()
        level = torch.where(power > 0, torch.log(power / (c_hi - c_lo)), -math.inf)
        return torch.clamp(21 + level, min=0)


def _flush_count(measures: Tensor, index: int, trigger_level: float, gap_len: int) -> int:
    """SoX's search back from the trigger for quieter bursts: the measures to keep."""
    n = measures.shape[0]
    j_trigger = j_zero = n
    k = index
    values = measures.tolist()
    for j in range(n):
        if values[k] >= trigger_level and j <= j_trigger + gap_len:
            j_zero = j_trigger = j
        elif values[k] == 0 and j_trigger >= j_zero:
            j_zero = j
        k = (k + n - 1) % n
    return min(n - 1, j_zero)


class _Trigger:
    """SoX's trigger: the smoothed level of each channel, and the recent measures."""

    def __init__(self, plan: _Plan, channels: int, trigger_level: float, mult: float) -> None:
        self.plan, self.level, self.mult = plan, trigger_level, mult
        self.mean = torch.zeros(channels)
        self.measures = torch.zeros(channels, plan.measures_len)

    def step(self, frame: int, levels: list[float]) -> int | None:
        """The measures to flush if ``frame`` (one level per channel) triggers, else None."""
        index = frame % self.plan.measures_len
        triggered, flush = False, 0
        for c, level in enumerate(levels):
            self.measures[c, index] = level
            self.mean[c] = self.mean[c] * self.mult + level * (1.0 - self.mult)
            triggered = triggered or bool(self.mean[c] >= self.level)
            if triggered:
                j = _flush_count(self.measures[c], index, self.level, self.plan.gap_len)
                flush = min(max(flush, j), self.plan.measures_len)
        return flush if triggered else None


def vad(
    waveform: Tensor,
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
) -> Tensor:
    """Trim silence and quiet noise from the front of a recording (SoX's ``vad``).

    Measures the cepstral power of overlapping frames against an adaptive noise
    estimate; once its smoothed level reaches ``trigger_level``, searches back up to
    ``search_time`` seconds for quieter bursts no more than ``allowed_gap`` apart and
    returns the audio from there, ``pre_trigger_time`` seconds earlier. Trims the front
    only: reverse the audio to trim its end. Equal to ``torchaudio.functional.vad``.

    Args:
        waveform: ``[time]`` or ``[channels, time]``; the channels are one recording and
            are trimmed together, at the earliest activity in any of them (leading
            dimensions beyond two are taken as more channels, with a warning, as torchaudio).
        sample_rate: the sample rate in Hz.
        trigger_level: the measurement level that triggers detection.
        trigger_time: the time constant (s) that helps ignore short bursts.
        search_time: how far (s) to search back for quieter bursts before the trigger.
        allowed_gap: the longest gap (s) between bursts included before the trigger.
        pre_trigger_time: audio (s) kept before the trigger and the bursts found.
        boot_time: the time (s) of the initial noise estimate.
        noise_up_time: the noise estimator's time constant (s) when the noise rises.
        noise_down_time: its time constant (s) when the noise falls.
        noise_reduction_amount: how much of the noise estimate is taken off.
        measure_freq: measurements per second.
        measure_duration: the length (s) of a measurement; twice the period when None.
        measure_smooth_time: the time constant (s) smoothing the spectra.
        hp_filter_freq: the brick-wall high-pass frequency (Hz) of the detector's input.
        lp_filter_freq: the brick-wall low-pass frequency (Hz) of the detector's input.
        hp_lifter_freq: the brick-wall high-pass frequency (Hz) of its lifter.
        lp_lifter_freq: the brick-wall low-pass frequency (Hz) of its lifter.

    Returns:
        The waveform from the detected start: ``[..., time']``.

    Example:
        >>> import torch
        >>> t = torch.arange(16000) / 16000
        >>> tone = torch.sin(2 * torch.pi * 200 * t) * (t > 0.5) * (1 + torch.sin(40 * t))
        >>> vad(tone, 16000).shape[-1] < 16000
        True
    """
    if waveform.ndim == 0:
        raise ValueError("waveform must be [time] or [channels, time], got a scalar")
    if waveform.ndim > 2:
        warnings.warn(
            f"vad takes [time] or [channels, time]; the {waveform.ndim}-d input is treated "
            "as one recording whose leading dimensions are channels (as torchaudio does)",
            stacklevel=2,
        )
    plan = _plan(
        sample_rate, measure_freq, measure_duration, search_time, allowed_gap,
        pre_trigger_time, boot_time, (hp_filter_freq, lp_filter_freq),
        (hp_lifter_freq, lp_lifter_freq),
    )  # fmt: skip
    flat = waveform.reshape(-1, waveform.shape[-1])
    length = flat.shape[-1]
    positions = range(plan.measure_len, length, plan.period)
    if len(positions) == 0:
        return _untriggered(waveform, flat, plan, 0)
    frames = flat.unfold(-1, plan.measure_len, plan.period)[:, : len(positions)]
    noise_mults = (
        math.exp(-1.0 / (noise_up_time * measure_freq)),
        math.exp(-1.0 / (noise_down_time * measure_freq)),
    )
    smooth_mult = math.exp(-1.0 / (measure_smooth_time * measure_freq))
    measurer = _Measurer(
        plan, flat.shape[0], flat.device, noise_reduction_amount, smooth_mult, noise_mults
    )
    trigger = _Trigger(
        plan, flat.shape[0], trigger_level, math.exp(-1.0 / (trigger_time * measure_freq))
    )
    # Chunks of frames: speech usually starts early, and SoX stops measuring there.
    for first in range(0, len(positions), _CHUNK_FRAMES):
        chunk = frames[:, first : first + _CHUNK_FRAMES].float()
        levels = measurer.levels(chunk).cpu().T.tolist()
        for frame, frame_levels in enumerate(levels, first):
            flush = trigger.step(frame, frame_levels)
            if flush is not None:
                flushed = (plan.measures_len - flush) * plan.period
                start = max(positions[frame] - plan.samples_len + flushed, 0)
                return flat[:, start:].reshape(*waveform.shape[:-1], -1)
    return _untriggered(waveform, flat, plan, positions[-1])


def _untriggered(waveform: Tensor, flat: Tensor, plan: _Plan, last_position: int) -> Tensor:
    """No activity: the fixed pre-trigger audio, or (shorter input) torchaudio's fallback."""
    if waveform.shape[-1] >= plan.pre_trigger_len:
        return waveform[..., : plan.pre_trigger_len]
    start = max(last_position - plan.samples_len, 0)
    return flat[:, start:].reshape(*waveform.shape[:-1], -1)
