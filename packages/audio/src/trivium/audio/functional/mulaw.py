"""Mu-law companding, as ``torchaudio.functional.mu_law_encoding`` / ``mu_law_decoding``.

Example:
    >>> import torch
    >>> from trivium.audio.functional import mu_law_decoding, mu_law_encoding
    >>> codes = mu_law_encoding(torch.tensor([-1.0, 0.0, 1.0]), 256)
    >>> codes
    tensor([  0, 128, 255])
    >>> mu_law_decoding(codes, 256).abs().max() <= 1
    tensor(True)
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["mu_law_decoding", "mu_law_encoding"]


def _check_channels(fn: str, quantization_channels: object) -> float:
    if isinstance(quantization_channels, bool) or not isinstance(quantization_channels, int):
        raise TypeError(
            f"{fn}: quantization_channels must be an int, "
            f"got {type(quantization_channels).__name__}"
        )
    if quantization_channels < 2:
        raise ValueError(f"{fn}: quantization_channels must be >= 2, got {quantization_channels}")
    return quantization_channels - 1.0


def mu_law_encoding(x: Tensor, quantization_channels: int) -> Tensor:
    """Encode a signal in [-1, 1] with mu-law companding into ``int64`` codes.

    Same formula and results as ``torchaudio.functional.mu_law_encoding``:
    ``floor((sign(x) * log1p(mu * |x|) / log1p(mu) + 1) / 2 * mu + 0.5)`` with
    ``mu = quantization_channels - 1``, computed in ``x``'s dtype on ``x``'s device.
    Values outside [-1, 1] are clipped first, so codes are always in
    ``[0, quantization_channels - 1]``. ``x`` must be floating point.

    Example:
        >>> import torch
        >>> mu_law_encoding(torch.tensor([[0.5, -0.5]]), 256)
        tensor([[239,  16]])
    """
    mu = _check_channels("mu_law_encoding", quantization_channels)
    if not isinstance(x, Tensor) or not x.is_floating_point():
        kind = x.dtype if isinstance(x, Tensor) else type(x).__name__
        raise TypeError(f"mu_law_encoding: x must be a floating point tensor, got {kind}")
    mu_t = torch.tensor(mu, dtype=x.dtype)
    x = x.clamp(-1.0, 1.0)
    x_mu = torch.sign(x) * torch.log1p(mu_t * torch.abs(x)) / torch.log1p(mu_t)
    return ((x_mu + 1) / 2 * mu_t + 0.5).to(torch.int64)


def mu_law_decoding(x_mu: Tensor, quantization_channels: int) -> Tensor:
    """Decode mu-law codes (integers in ``[0, quantization_channels - 1]``) back to [-1, 1].

    Same formula and results as ``torchaudio.functional.mu_law_decoding``: integer
    codes give ``float32``; floating codes keep their dtype. Works on any shape and device.

    Example:
        >>> import torch
        >>> mu_law_decoding(torch.tensor([0, 255]), 256)
        tensor([-1.,  1.])
    """
    mu = _check_channels("mu_law_decoding", quantization_channels)
    if not isinstance(x_mu, Tensor):
        raise TypeError(f"mu_law_decoding: x_mu must be a tensor, got {type(x_mu).__name__}")
    if not x_mu.is_floating_point():
        x_mu = x_mu.to(torch.float)
    mu_t = torch.tensor(mu, dtype=x_mu.dtype)
    x = (x_mu / mu_t) * 2 - 1.0
    return torch.sign(x) * (torch.exp(torch.abs(x) * torch.log1p(mu_t)) - 1.0) / mu_t
