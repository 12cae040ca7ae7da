"""Band-limited resampling by windowed sinc interpolation (``torchaudio.functional.resample``).

The rates are reduced by their greatest common divisor to ``orig -> new``; output
sample ``j`` of every block of ``new`` is a dot product of the input with a sinc
kernel, low-passed at ``rolloff * min(orig, new) / 2`` and tapered by a Hann or Kaiser
window spanning ``lowpass_filter_width`` zero crossings on each side (torchaudio's
kernel, bit for bit). The kernels are applied as a few dense matrix products over
blocks of input (:func:`polyphase_weight`) rather than one strided convolution, and
are computed once per rate pair, settings, dtype and device and cached.

Example:
    >>> import torch
    >>> resample(torch.zeros(2, 48000), 48000, 16000).shape
    torch.Size([2, 16000])
"""

from __future__ import annotations

import functools
import math

import torch
from torch import Tensor

__all__ = [
    "apply_sinc_kernel",
    "apply_weight",
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


def _check_settings(method: str, lowpass_filter_width: int, rolloff: float) -> None:
    if method not in _METHODS:
        raise ValueError(f"resampling_method must be one of {_METHODS}, got {method!r}")
    if lowpass_filter_width <= 0:
        raise ValueError(f"lowpass_filter_width must be positive, got {lowpass_filter_width}")
    if not 0 < rolloff <= 1:
        raise ValueError(f"rolloff must be in (0, 1], got {rolloff}")


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
    _check_settings(resampling_method, lowpass_filter_width, rolloff)
    return _kernel(
        int(orig_freq) // gcd,
        int(new_freq) // gcd,
        int(lowpass_filter_width),
        float(rolloff),
        resampling_method,
        None if beta is None else float(beta),
        torch.device(device),
        dtype or torch.float32,
    )


@functools.lru_cache(maxsize=64)
def _kernel(
    orig: int,
    new: int,
    lowpass_filter_width: int,
    rolloff: float,
    method: str,
    beta: float | None,
    device: torch.device,
    dtype: torch.dtype,
) -> tuple[Tensor, int]:
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


def polyphase_weight(kernel: Tensor, orig: int) -> Tensor:
    """Rearrange a ``[new, 1, K]`` kernel into ``[T, S, r * new]`` blocks for :func:`apply_weight`.

    ``r`` blocks of ``orig`` input samples (``S = r * orig`` samples) produce ``r * new``
    outputs, each a dot product with ``T`` consecutive blocks of ``S`` samples. One
    strided 1-channel convolution becomes ``T`` dense matrix products, which is much
    faster on CPU and GPU; ``r`` is chosen so that ``T <= 2`` and the products are at
    least about 64 wide.

    Example:
        >>> kernel, _ = sinc_resample_kernel(48000, 16000, 16000)
        >>> polyphase_weight(kernel, 3).shape
        torch.Size([2, 66, 22])
    """
    new, _, taps = kernel.shape
    new = kernel.shape[0]
    r = max(1, -(-taps // orig) - 2, -(-64 // max(orig, new)))
    span = r * orig
    blocks = -(-((r - 1) * orig + taps) // span)
    weight = kernel.new_zeros(r, new, blocks * span)
    for q in range(r):
        weight[q, :, q * orig : q * orig + taps] = kernel[:, 0, :]
    # [r, new, T * S] -> [T, S, r * new]
    return weight.reshape(r * new, blocks, span).permute(1, 2, 0).contiguous()


def apply_weight(waveform: Tensor, orig: int, new: int, weight: Tensor, width: int) -> Tensor:
    """Resample ``waveform`` ``[..., time]`` with a :func:`polyphase_weight` (rates gcd-reduced).

    The output has ``ceil(new * time / orig)`` samples, as torchaudio's.

    Example:
        >>> import torch
        >>> kernel, width = sinc_resample_kernel(2, 1, 1)
        >>> apply_weight(torch.ones(3, 10), 2, 1, polyphase_weight(kernel, 2), width).shape
        torch.Size([3, 5])
    """
    shape = waveform.shape
    length = shape[-1]
    blocks, span, outs = weight.shape
    target = -(-new * length // orig)  # ceil without float rounding
    rows = -(-target // outs)
    total = (rows + blocks - 1) * span
    flat = waveform.reshape(-1, length)
    if total - length - width >= 0:
        flat = torch.nn.functional.pad(flat, (width, total - length - width))
    else:  # the right padding torchaudio adds is never reached: trim instead
        flat = torch.nn.functional.pad(flat, (width, 0))[:, :total]
    framed = flat.reshape(flat.shape[0], rows + blocks - 1, span)
    out = torch.matmul(framed[:, :rows], weight[0])
    for t in range(1, blocks):
        out = out + torch.matmul(framed[:, t : t + rows], weight[t])
    out = out.reshape(flat.shape[0], rows * outs)[:, :target]
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
    orig: int,
    new: int,
    lowpass_filter_width: int,
    rolloff: float,
    method: str,
    beta: float | None,
    device: torch.device,
    dtype: torch.dtype,
) -> tuple[Tensor, int]:
    kernel, width = _kernel(orig, new, lowpass_filter_width, rolloff, method, beta, device, dtype)
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
    _check_settings(resampling_method, lowpass_filter_width, rolloff)
    gcd = math.gcd(int(orig_freq), int(new_freq))
    orig, new = int(orig_freq) // gcd, int(new_freq) // gcd
    weight, width = _weight(
        orig,
        new,
        int(lowpass_filter_width),
        float(rolloff),
        resampling_method,
        None if beta is None else float(beta),
        waveform.device,
        waveform.dtype,
    )
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
