"""Convolution along the last dimension, as torchaudio's: ``convolve``, ``fftconvolve``.

Leading dimensions broadcast; ``mode`` is ``"full"`` (length ``N + M - 1``),
``"valid"`` (``max(N, M) - min(N, M) + 1``) or ``"same"`` (``N``, centred on the
full result), ``N`` and ``M`` the lengths of ``x`` and ``y``.

Example:
    >>> import torch
    >>> x, y = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 1.0])
    >>> convolve(x, y), fftconvolve(x, y, "valid")
    (tensor([0., 1., 2., 3.]), tensor([1., 2.]))
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["convolve", "fftconvolve"]

_MODES = ("full", "valid", "same")


def convolve(x: Tensor, y: Tensor, mode: str = "full") -> Tensor:
    """Direct convolution of ``x [..., N]`` and ``y [..., M]`` (one grouped ``conv1d``).

    Example:
        >>> import torch
        >>> convolve(torch.ones(2, 3), torch.ones(1, 2), "same")
        tensor([[1., 2., 2.],
                [1., 2., 2.]])
    """
    _check(x, y, mode)
    n, m = x.shape[-1], y.shape[-1]
    longer, shorter = (x, y) if n >= m else (y, x)
    lead = torch.broadcast_shapes(x.shape[:-1], y.shape[:-1])
    signals = longer.expand(*lead, longer.shape[-1]).reshape(1, -1, longer.shape[-1])
    kernels = shorter.expand(*lead, shorter.shape[-1]).reshape(-1, 1, shorter.shape[-1])
    full = F.conv1d(signals, kernels.flip(-1), padding=kernels.shape[-1] - 1, groups=len(kernels))
    return _cut(full.reshape(*lead, -1), n, m, mode)


def fftconvolve(x: Tensor, y: Tensor, mode: str = "full") -> Tensor:
    """:func:`convolve` through the FFT: faster for long kernels, equal within float error.

    Example:
        >>> import torch
        >>> fftconvolve(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0])).round()
        tensor([1., 3., 2.])
    """
    _check(x, y, mode)
    n, m = x.shape[-1], y.shape[-1]
    size = n + m - 1
    spectrum = torch.fft.rfft(x, n=size) * torch.fft.rfft(y, n=size)
    return _cut(torch.fft.irfft(spectrum, n=size), n, m, mode)


def _check(x: Tensor, y: Tensor, mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    if x.ndim != y.ndim:
        raise ValueError(f"x and y need the same number of dimensions, got {x.ndim} and {y.ndim}")
    try:
        torch.broadcast_shapes(x.shape[:-1], y.shape[:-1])
    except RuntimeError as error:
        raise ValueError(
            f"the leading dimensions of x {tuple(x.shape)} and y {tuple(y.shape)} do not broadcast"
        ) from error


def _cut(full: Tensor, n: int, m: int, mode: str) -> Tensor:
    """The part of the full convolution that ``mode`` keeps."""
    if mode == "full":
        return full
    length = max(n, m) - min(n, m) + 1 if mode == "valid" else n
    first = (full.shape[-1] - length) // 2
    return full[..., first : first + length]
