"""Multi-channel beamforming, as torchaudio's: ``psd``, ``mvdr_weights_souden``,
``mvdr_weights_rtf``, ``rtf_evd``, ``rtf_power`` and ``apply_beamforming``.

Spectrograms are complex ``[..., channel, freq, time]``; power spectral density (PSD)
matrices ``[..., freq, channel, channel]``; beamforming weights and relative transfer
functions (RTF) ``[..., freq, channel]``.

Example:
    >>> import torch
    >>> spec = torch.randn(2, 3, 5, dtype=torch.cfloat)  # 2 channels, 3 bins, 5 frames
    >>> psd(spec).shape
    torch.Size([3, 2, 2])
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "apply_beamforming",
    "mvdr_weights_rtf",
    "mvdr_weights_souden",
    "psd",
    "rtf_evd",
    "rtf_power",
]


def psd(
    specgram: Tensor, mask: Tensor | None = None, normalize: bool = True, eps: float = 1e-10
) -> Tensor:
    """The PSD matrix of each frequency: the sum over frames of ``x x^H``, weighted by ``mask``.

    ``mask [..., freq, time]`` (a time-frequency mask of the source) is divided by its
    sum over time first when ``normalize``.

    Example:
        >>> import torch
        >>> x = torch.ones(2, 1, 4, dtype=torch.cfloat)
        >>> psd(x)[0].real
        tensor([[4., 4.],
                [4., 4.]])
    """
    spec = specgram.transpose(-3, -2)  # [..., freq, channel, time]
    outer = torch.einsum("...ct,...et->...tce", spec, spec.conj())  # [..., freq, time, c, c]
    if mask is not None:
        if normalize:
            mask = mask / (mask.sum(dim=-1, keepdim=True) + eps)
        outer = outer * mask[..., None, None]
    return outer.sum(dim=-3)


def _trace(matrices: Tensor) -> Tensor:
    return matrices.diagonal(dim1=-2, dim2=-1).sum(-1)


def _loaded(psd_n: Tensor, reg: float, eps: float = 1e-8) -> Tensor:
    """Tikhonov regularisation: ``reg`` times the trace (plus ``eps``) added to the diagonal."""
    load = _trace(psd_n).real[..., None, None] * reg + eps
    return psd_n + load * torch.eye(psd_n.shape[-1], dtype=psd_n.dtype, device=psd_n.device)


def _pick(weights: Tensor, reference_channel: int | Tensor) -> Tensor:
    """Column ``reference_channel`` of ``[..., freq, channel, channel]``, or a one-hot mix."""
    if isinstance(reference_channel, int):
        return weights[..., reference_channel]
    one_hot = reference_channel.to(weights.dtype)
    return torch.einsum("...c,...c->...", weights, one_hot[..., None, None, :])


def mvdr_weights_souden(
    psd_s: Tensor,
    psd_n: Tensor,
    reference_channel: int | Tensor,
    diagonal_loading: bool = True,
    diag_eps: float = 1e-7,
    eps: float = 1e-8,
) -> Tensor:
    """MVDR weights by Souden's formula: ``(Phi_n^-1 Phi_s) / tr(Phi_n^-1 Phi_s) u``.

    ``reference_channel`` is an index, or a one-hot (or soft) ``[..., channel]``
    tensor; ``diagonal_loading`` regularises ``psd_n`` by ``diag_eps`` times its trace.

    Example:
        >>> import torch
        >>> eye = torch.eye(2, dtype=torch.cdouble).expand(3, 2, 2)
        >>> mvdr_weights_souden(eye, eye, 0).shape
        torch.Size([3, 2])
    """
    if diagonal_loading:
        psd_n = _loaded(psd_n, diag_eps)
    numerator = torch.linalg.solve(psd_n, psd_s)
    weights = numerator / (_trace(numerator)[..., None, None] + eps)
    return _pick(weights, reference_channel)


def mvdr_weights_rtf(
    rtf: Tensor,
    psd_n: Tensor,
    reference_channel: int | Tensor | None = None,
    diagonal_loading: bool = True,
    diag_eps: float = 1e-7,
    eps: float = 1e-8,
) -> Tensor:
    """MVDR weights from the relative transfer function: ``Phi_n^-1 v / (v^H Phi_n^-1 v)``.

    With ``reference_channel`` they are scaled by the conjugate of the RTF there.

    Example:
        >>> import torch
        >>> rtf = torch.ones(3, 2, dtype=torch.cdouble)
        >>> eye = torch.eye(2, dtype=torch.cdouble).expand(3, 2, 2)
        >>> mvdr_weights_rtf(rtf, eye)[0].real
        tensor([0.5000, 0.5000], dtype=torch.float64)
    """
    if diagonal_loading:
        psd_n = _loaded(psd_n, diag_eps)
    numerator = torch.linalg.solve(psd_n, rtf.unsqueeze(-1)).squeeze(-1)
    denominator = torch.einsum("...d,...d->...", rtf.conj(), numerator)
    weights = numerator / (denominator.real.unsqueeze(-1) + eps)
    if reference_channel is None:
        return weights
    if isinstance(reference_channel, int):
        scale = rtf[..., reference_channel].conj()
    else:
        one_hot = reference_channel.to(psd_n.dtype)
        scale = torch.einsum("...c,...c->...", rtf.conj(), one_hot[..., None, :])
    return weights * scale[..., None]


def rtf_evd(psd_s: Tensor) -> Tensor:
    """The RTF as the principal eigenvector of the source's PSD.

    Example:
        >>> import torch
        >>> rtf_evd(torch.eye(2, dtype=torch.cdouble).expand(3, 2, 2)).shape
        torch.Size([3, 2])
    """
    _, vectors = torch.linalg.eigh(psd_s)
    return vectors[..., -1]


def rtf_power(
    psd_s: Tensor,
    psd_n: Tensor,
    reference_channel: int | Tensor,
    n_iter: int = 3,
    diagonal_loading: bool = True,
    diag_eps: float = 1e-7,
) -> Tensor:
    """The RTF by ``n_iter`` power iterations of ``Phi_n^-1 Phi_s`` from the reference channel.

    Example:
        >>> import torch
        >>> eye = torch.eye(2, dtype=torch.cdouble).expand(3, 2, 2)
        >>> rtf_power(eye, eye, 0).shape
        torch.Size([3, 2])
    """
    if n_iter <= 0:
        raise ValueError(f"n_iter must be positive, got {n_iter}")
    if diagonal_loading:
        psd_n = _loaded(psd_n, diag_eps)
    phi = torch.linalg.solve(psd_n, psd_s)
    rtf = _pick(phi, reference_channel)
    if n_iter >= 2:
        for _ in range(n_iter - 2):
            rtf = torch.matmul(phi, rtf.unsqueeze(-1)).squeeze(-1)
        rtf = torch.matmul(psd_s, rtf.unsqueeze(-1)).squeeze(-1)
    else:
        rtf = torch.matmul(psd_n, rtf.unsqueeze(-1)).squeeze(-1)
    return rtf


def apply_beamforming(beamform_weights: Tensor, specgram: Tensor) -> Tensor:
    """The beamformed spectrogram ``[..., freq, time]``: ``w^H x`` in each bin.

    Example:
        >>> import torch
        >>> w = torch.full((3, 2), 0.5, dtype=torch.cfloat)
        >>> apply_beamforming(w, torch.ones(2, 3, 4, dtype=torch.cfloat)).real[0]
        tensor([1., 1., 1., 1.])
    """
    return torch.einsum("...fc,...cft->...ft", beamform_weights.conj(), specgram)
