"""Band-limited resampling by windowed sinc interpolation (``torchaudio.functional.resample``).

The rates are reduced by their greatest common divisor to ``orig -> new``; output
sample ``j`` of every block of ``new`` is a dot product of the input with a sinc
kernel, low-passed at ``rolloff * min(orig, new) / 2`` and tapered by a Hann or Kaiser
window spanning ``lowpass_filter_width`` zero crossings on each side (torchaudio's
kernel, bit for bit). Of the kernel's ``2 * width + orig`` taps per output only the
``2 * width + 1`` around the output's position can be non-zero, so rather than one
strided convolution over all of them, runs of 16 to 64 consecutive outputs are each
computed from just the input window they share, all in one batched matrix product
over a strided view of the input (:func:`polyphase_weight`). The work per output stays
a small multiple of ``2 * width + 1`` whatever the ratio (at 44.1 -> 16 kHz, 77
multiply-adds of which 35 can be non-zero, where the full kernel has 475 taps). The
weights are computed once per rate pair, settings, dtype and device and cached.

Example:
    >>> import torch
    >>> resample(torch.zeros(2, 48000), 48000, 16000).shape
    torch.Size([2, 16000])
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from trivium.audio.functional.spectral import phase_vocoder

__all__ = [
    "apply_sinc_kernel",
    "apply_weight",
    "pitch_shift",
    "polyphase_weight",
    "resample",
    "sinc_resample_kernel",
    "speed",
]

_METHODS = ("sinc_interp_hann", "sinc_interp_kaiser")
_KAISER_BETA = 14.769656459379492  # torchaudio's (and resampy's "kaiser_best") default


def _check_rates(orig_freq: int, new_freq: int) -> None:
    for name, value in (("orig_freq", orig_freq), ("new_freq", new_freq)):
        if isinstance(value, bool) or int(value) != value or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


class _Settings(NamedTuple):
    """The filter settings, checked and in the types the kernel caches are keyed by."""

    lowpass_filter_width: int
    rolloff: float
    method: str
    beta: float | None


def _settings(
    method: str, lowpass_filter_width: int, rolloff: float, beta: float | None
) -> _Settings:
    if method not in _METHODS:
        raise ValueError(f"resampling_method must be one of {_METHODS}, got {method!r}")
    if lowpass_filter_width <= 0:
        raise ValueError(f"lowpass_filter_width must be positive, got {lowpass_filter_width}")
    if not 0 < rolloff <= 1:
        raise ValueError(f"rolloff must be in (0, 1], got {rolloff}")
    beta = None if beta is None else float(beta)
    return _Settings(int(lowpass_filter_width), float(rolloff), method, beta)


def sinc_resample_kernel(
    orig_freq: int,
    new_freq: int,
    gcd: int,
    lowpass_filter_width: int = 6,
    rolloff: float = 0.99,
    resampling_method: str = "sinc_interp_hann",
    beta: float | None = None,
    device: torch.device | str = "cpu",
    dtype: torch.dtype | None = None,
) -> tuple[Tensor, int]:
    """The resampling kernel ``[new, 1, 2 * width + orig]`` and ``width`` (computed in float64).

    ``orig`` and ``new`` are the rates divided by ``gcd``. The result is cached per
    arguments; treat it as read-only. ``dtype=None`` gives float32.

    Example:
        >>> kernel, width = sinc_resample_kernel(48000, 16000, 16000)
        >>> kernel.shape, width
        (torch.Size([1, 1, 41]), 19)
    """
    _check_rates(orig_freq, new_freq)
    settings = _settings(resampling_method, lowpass_filter_width, rolloff, beta)
    orig, new = int(orig_freq) // gcd, int(new_freq) // gcd
    return _kernel(orig, new, settings, torch.device(device), dtype or torch.float32)


@functools.lru_cache(maxsize=64)
def _kernel(
    orig: int, new: int, settings: _Settings, device: torch.device, dtype: torch.dtype
) -> tuple[Tensor, int]:
    lowpass_filter_width, rolloff, method, beta = settings
    base_freq = min(orig, new) * rolloff
    width = math.ceil(lowpass_filter_width * orig / base_freq)
    idx = torch.arange(-width, width + orig, dtype=torch.float64)[None, None] / orig
    t = torch.arange(0, -new, -1, dtype=torch.float64)[:, None, None] / new + idx
    t = (t * base_freq).clamp(-lowpass_filter_width, lowpass_filter_width)
    if method == "sinc_interp_hann":
        window = torch.cos(t * math.pi / lowpass_filter_width / 2) ** 2
    else:
        b = torch.tensor(_KAISER_BETA if beta is None else beta, dtype=torch.float64)
        window = torch.i0(b * torch.sqrt(1 - (t / lowpass_filter_width) ** 2)) / torch.i0(b)
    t = t * math.pi
    sinc = torch.where(t == 0, torch.ones_like(t), torch.sin(t) / t)
    kernel = sinc * window * (base_freq / orig)
    return kernel.to(device=device, dtype=dtype), width


@dataclass(frozen=True)
class _Plan:
    """How :func:`apply_weight` cuts the input for one gcd-reduced rate pair.

    A block of ``span = r * orig`` input samples gives ``outputs = r * new`` outputs, in
    ``groups`` runs of ``step`` consecutive outputs (the last run may be shorter). Each
    of the ``segments`` ``(first, count, offset)`` holds runs ``first`` to ``first +
    count - 1``; run ``first + i`` is computed from the ``size`` input samples that start
    ``offset + i * stride`` into the block (in the left-padded input): one batched matrix
    product over a strided view of the input per segment covers those runs of every
    block. (Runs start ``step * orig / new`` samples apart, a fraction more than
    ``stride``: segments keep that drift, which widens ``size``, small.)
    """

    span: int
    outputs: int
    step: int
    groups: int
    stride: int
    size: int
    segments: tuple[tuple[int, int, int], ...]

    @property
    def reach(self) -> int:
        """How far past the start of a block its runs read."""
        return max(offset + (n - 1) * self.stride for _, n, offset in self.segments) + self.size

    def base(self, run: int) -> int:
        """Where run ``run``'s window starts in a block."""
        for first, n, offset in self.segments:
            if run < first + n:
                return offset + (run - first) * self.stride
        raise IndexError(run)


def _make_plan(orig: int, new: int, width: int, r: int, step: int) -> _Plan:
    outputs = r * new
    groups = -(-outputs // step)
    stride = step * orig // new
    drift = step * orig / new - stride
    # At most this many runs per segment, so that the drift widens windows by <= 4.
    per_segment = groups if drift * groups <= 4 else max(1, int(4 / drift))
    segments = tuple(
        (first, min(per_segment, groups - first), first * step * orig // new)
        for first in range(0, groups, per_segment)
    )
    plan = _Plan(r * orig, outputs, step, groups, stride, 0, segments)
    # Output p's taps are zero (the sinc clamped to its zero crossing at
    # lowpass_filter_width) outside the 2 * width + 1 samples from p * orig // new.
    size = max(
        (min(outputs, (k + 1) * step) - 1) * orig // new + 2 * width + 1 - plan.base(k)
        for k in range(groups)
    )
    return _Plan(r * orig, outputs, step, groups, stride, size, segments)


def _cost(plan: _Plan) -> float:
    # Multiply-adds per output, plus the input and output traffic of every matrix row
    # (BLAS runs narrow products far below its peak), plus a little per product.
    work = plan.groups * (plan.step + 16) * (plan.size + 16) / plan.outputs
    return work + len(plan.segments) / 4


@functools.lru_cache(maxsize=256)
def _plan(orig: int, new: int, width: int) -> _Plan:
    """The cheapest blocks and runs for ``orig -> new`` (gcd-reduced) and ``width``.

    A view's rows are ``span`` apart, so it needs no copy where ``size <= span``.
    Runs of 16 to 64 outputs keep the products dense while covering only the taps that
    can be non-zero: about ``2 * width + 1`` per output, whatever the ratio.
    """
    best: tuple[tuple[float, int, int], _Plan] | None = None
    # Up to the first r whose block holds a run of 64 (larger r only repeat runs).
    for r in range(1, -(-64 // new) + -(-(2 * width + 1) // orig) + 2):
        for step in (16, 24, 32, 48, 64):
            plan = _make_plan(orig, new, width, r, step)
            if plan.size > plan.span:
                continue
            key = (_cost(plan), len(plan.segments), r)
            if best is None or key < best[0]:
                best = (key, plan)
    assert best is not None  # the largest r holds a run of 64 outputs
    return best[1]


def polyphase_weight(kernel: Tensor, orig: int) -> Tensor:
    """Rearrange a ``[new, 1, K]`` kernel into ``[runs, size, step]`` for :func:`apply_weight`.

    Output ``p`` of a block of ``new`` uses input samples ``q * orig + i`` for ``i`` in
    ``[0, K)``, but its windowed sinc is zero beyond ``width`` samples of the output's
    position: only ``2 * width + 1`` of the ``K = 2 * width + orig`` taps count. Runs of
    ``step`` consecutive outputs are gathered with just the input window they share,
    so the work per output is a small multiple of ``2 * width + 1`` rather than ``K``
    (at 44.1 -> 16 kHz, 77 multiply-adds instead of 475).

    Example:
        >>> kernel, _ = sinc_resample_kernel(44100, 16000, 100)
        >>> polyphase_weight(kernel, 441).shape
        torch.Size([10, 77, 16])
    """
    new, _, taps = kernel.shape
    width = (taps - orig) // 2
    plan = _plan(orig, new, width)
    weight = kernel.new_zeros(plan.groups, plan.size, plan.step)
    for p in range(plan.outputs):
        k, phase = p // plan.step, p % new
        column = p * orig // new - plan.base(k)
        first = phase * orig // new
        weight[k, column : column + 2 * width + 1, p % plan.step] = kernel[
            phase, 0, first : first + 2 * width + 1
        ]
    return weight


def apply_weight(waveform: Tensor, orig: int, new: int, weight: Tensor, width: int) -> Tensor:
    """Resample ``waveform`` ``[..., time]`` with a :func:`polyphase_weight` (rates gcd-reduced).

    The output has ``ceil(new * time / orig)`` samples, as torchaudio's.

    Example:
        >>> import torch
        >>> kernel, width = sinc_resample_kernel(2, 1, 1)
        >>> apply_weight(torch.ones(3, 10), 2, 1, polyphase_weight(kernel, 2), width).shape
        torch.Size([3, 5])
    """
    plan = _plan(orig, new, width)
    shape = waveform.shape
    length = shape[-1]
    target = -(-new * length // orig)  # ceil without float rounding
    batch = math.prod(shape[:-1])
    if batch == 0 or target == 0:
        return waveform.new_zeros((*shape[:-1], target))
    rows = -(-target // plan.outputs)
    # Every signal padded to `frames` blocks, laid end to end: one strided view covers
    # the whole batch (the frames past `rows` of each signal are computed and dropped).
    frames = rows + -(-plan.reach // plan.span)
    total = frames * plan.span
    flat = waveform.reshape(batch, length)
    if total - length - width >= 0:
        flat = torch.nn.functional.pad(flat, (width, total - length - width))
    else:  # the right padding torchaudio adds is never reached: trim instead
        flat = torch.nn.functional.pad(flat, (width, 0))[:, :total]
    line = flat.reshape(-1)
    count = (batch - 1) * frames + rows
    parts = [
        torch.bmm(
            line.as_strided(
                (n, count, plan.size),
                (plan.stride, plan.span, 1),
                line.storage_offset() + offset,
            ),
            weight[first : first + n],
        )
        for first, n, offset in plan.segments
    ]
    width_out = plan.groups * plan.step
    out = parts[0] if len(parts) == 1 else torch.cat(parts)
    out = out.transpose(0, 1).reshape(count, width_out)
    # Signal b's blocks are rows [b * frames, b * frames + rows) of `out`.
    out = out.as_strided((batch, rows, plan.outputs), (frames * width_out, width_out, 1))
    out = out.reshape(batch, rows * plan.outputs)[:, :target]
    return out.reshape((*shape[:-1], target))


def apply_sinc_kernel(waveform: Tensor, orig: int, new: int, kernel: Tensor, width: int) -> Tensor:
    """Resample with a torchaudio-layout kernel from :func:`sinc_resample_kernel`.

    ``orig`` and ``new`` are the gcd-reduced rates the kernel was made for.

    Example:
        >>> import torch
        >>> kernel, width = sinc_resample_kernel(2, 1, 1)
        >>> apply_sinc_kernel(torch.ones(3, 10), 2, 1, kernel, width).shape
        torch.Size([3, 5])
    """
    return apply_weight(waveform, orig, new, polyphase_weight(kernel, orig), width)


@functools.lru_cache(maxsize=64)
def _weight(
    orig: int, new: int, settings: _Settings, device: torch.device, dtype: torch.dtype
) -> tuple[Tensor, int]:
    kernel, width = _kernel(orig, new, settings, device, dtype)
    return polyphase_weight(kernel, orig), width


def resample(
    waveform: Tensor,
    orig_freq: int,
    new_freq: int,
    lowpass_filter_width: int = 6,
    rolloff: float = 0.99,
    resampling_method: str = "sinc_interp_hann",
    beta: float | None = None,
) -> Tensor:
    """Resample ``waveform`` ``[..., time]`` from ``orig_freq`` to ``new_freq`` Hz.

    Same algorithm, arguments and output length (``ceil(new * time / orig)``) as
    ``torchaudio.functional.resample``. ``resampling_method`` is
    ``"sinc_interp_hann"`` or ``"sinc_interp_kaiser"`` (``beta`` shapes the Kaiser
    window); a larger ``lowpass_filter_width`` gives a sharper, longer filter and
    ``rolloff`` sets the cutoff as a fraction of the lower Nyquist frequency.

    Example:
        >>> import torch
        >>> t = torch.arange(8000) / 8000
        >>> y = resample(torch.sin(2 * torch.pi * 440 * t), 8000, 11025)
        >>> y.shape
        torch.Size([11025])
    """
    if not isinstance(waveform, Tensor) or not waveform.is_floating_point():
        raise TypeError("resample: waveform must be a floating point tensor")
    _check_rates(orig_freq, new_freq)
    if orig_freq == new_freq:
        return waveform
    settings = _settings(resampling_method, lowpass_filter_width, rolloff, beta)
    gcd = math.gcd(int(orig_freq), int(new_freq))
    orig, new = int(orig_freq) // gcd, int(new_freq) // gcd
    weight, width = _weight(orig, new, settings, waveform.device, waveform.dtype)
    return apply_weight(waveform, orig, new, weight, width)


def speed(
    waveform: Tensor, orig_freq: int, factor: float, lengths: Tensor | None = None
) -> tuple[Tensor, Tensor | None]:
    """Play ``waveform`` ``factor`` times faster (pitch shifts too), as torchaudio's ``speed``.

    Resamples from ``int(factor * orig_freq)`` to ``orig_freq``; ``lengths`` (valid
    samples per example) are scaled the same way and returned beside the waveform.

    Example:
        >>> import torch
        >>> y, n = speed(torch.zeros(2, 16000), 16000, 1.1, torch.tensor([16000, 8000]))
        >>> y.shape, n.tolist()
        (torch.Size([2, 14546]), [14546, 7273])
    """
    if factor <= 0:
        raise ValueError(f"speed: factor must be > 0, got {factor}")
    source = int(factor * orig_freq)
    gcd = math.gcd(source, int(orig_freq))
    source, target = source // gcd, int(orig_freq) // gcd
    out = resample(waveform, source, target)
    if lengths is not None:
        lengths = torch.ceil(lengths * target / source).to(lengths.dtype)
    return out, lengths


def pitch_shift(
    waveform: Tensor,
    sample_rate: int,
    n_steps: int,
    bins_per_octave: int = 12,
    n_fft: int = 512,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
) -> Tensor:
    """Shift the pitch by ``n_steps`` of ``1 / bins_per_octave`` octave, keeping the duration.

    Stretches time by ``2 ** (n_steps / bins_per_octave)`` with a phase vocoder, then
    resamples back to the original length, as torchaudio's ``pitch_shift``.

    Example:
        >>> import torch
        >>> pitch_shift(torch.randn(1, 4000), 16000, 4).shape
        torch.Size([1, 4000])
    """
    win_length = n_fft if win_length is None else win_length
    hop_length = win_length // 4 if hop_length is None else hop_length
    if window is None:
        window = torch.hann_window(win_length, device=waveform.device)
    shape, length = waveform.shape, waveform.shape[-1]
    rate = 2.0 ** (-float(n_steps) / bins_per_octave)
    spec = torch.stft(
        waveform.reshape(-1, length), n_fft, hop_length, win_length, window,
        center=True, pad_mode="reflect", normalized=False, onesided=True, return_complex=True,
    )  # fmt: skip
    advance = torch.linspace(0, math.pi * hop_length, spec.shape[-2], device=spec.device)
    stretched = phase_vocoder(spec, rate, advance[..., None])
    stretched_length = round(length / rate)
    slower = torch.istft(stretched, n_fft, hop_length, win_length, window, length=stretched_length)
    shifted = resample(slower, int(sample_rate / rate), sample_rate)
    kept = shifted[..., :length]
    out = torch.nn.functional.pad(kept, (0, length - kept.shape[-1]))
    return out.reshape(*shape[:-1], length)
