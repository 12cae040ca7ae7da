"""Filter transforms, as torchaudio's: ``ComputeDeltas``, ``Preemphasis``, ``Deemphasis``,
``SlidingWindowCmn``, ``SpectralCentroid``, ``Loudness``, ``Convolve``, ``FFTConvolve``.

Example:
    >>> import torch
    >>> Preemphasis(0.5)(torch.tensor([1.0, 1.0]))
    tensor([1.0000, 0.5000])
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from trivium.audio.functional import beamforming, convolution, filtering, spectral
from trivium.audio.functional.loudness import loudness
from trivium.audio.transforms.base import CallTransform
from trivium.audio.transforms.spectral import WindowFn, _set_stft
from trivium.core.transform import Transform

__all__ = [
    "PSD",
    "ComputeDeltas",
    "Convolve",
    "Deemphasis",
    "FFTConvolve",
    "Loudness",
    "Preemphasis",
    "SlidingWindowCmn",
    "SoudenMVDR",
    "SpectralCentroid",
]


class ComputeDeltas(Transform):
    """Delta coefficients of ``[..., freq, time]`` features along time.

    See :func:`~trivium.audio.functional.compute_deltas`.

    Example:
        >>> import torch
        >>> ComputeDeltas(win_length=3)(torch.arange(4.0).reshape(1, 4))
        tensor([[0.5000, 1.0000, 1.0000, 0.5000]])
    """

    def __init__(self, win_length: int = 5, mode: str = "replicate") -> None:
        super().__init__()
        self.win_length, self.mode = win_length, mode

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """The deltas of one feature tensor."""
        return filtering.compute_deltas(inpt, self.win_length, self.mode)


class Preemphasis(Transform):
    """``y[t] = x[t] - coeff * x[t - 1]`` (:func:`~trivium.audio.functional.preemphasis`).

    Example:
        >>> import torch
        >>> Preemphasis()(torch.ones(2))
        tensor([1.0000, 0.0300])
    """

    def __init__(self, coeff: float = 0.97) -> None:
        super().__init__()
        self.coeff = coeff

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Pre-emphasise one waveform."""
        return filtering.preemphasis(inpt, self.coeff)


class Deemphasis(Preemphasis):
    """Undo :class:`Preemphasis` (:func:`~trivium.audio.functional.deemphasis`, clamped to [-1, 1]).

    Example:
        >>> import torch
        >>> Deemphasis()(Preemphasis()(torch.full((3,), 0.5)))
        tensor([0.5000, 0.5000, 0.5000])
    """

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """De-emphasise one waveform."""
        return filtering.deemphasis(inpt, self.coeff)


class SlidingWindowCmn(Transform):
    """Sliding-window mean (and variance) normalisation of ``[..., time, freq]`` features.

    See :func:`~trivium.audio.functional.sliding_window_cmn`.

    Example:
        >>> import torch
        >>> SlidingWindowCmn(cmn_window=4)(torch.ones(5, 2)).abs().max().item()
        0.0
    """

    def __init__(
        self,
        cmn_window: int = 600,
        min_cmn_window: int = 100,
        center: bool = False,
        norm_vars: bool = False,
    ) -> None:
        super().__init__()
        self.cmn_window, self.min_cmn_window = cmn_window, min_cmn_window
        self.center, self.norm_vars = center, norm_vars

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Normalise one feature tensor."""
        return filtering.sliding_window_cmn(
            inpt, self.cmn_window, self.min_cmn_window, self.center, self.norm_vars
        )


class SpectralCentroid(Transform):
    """The spectral centroid (Hz) of each frame of a ``[..., time]`` waveform: ``[..., frames]``.

    Example:
        >>> import torch
        >>> SpectralCentroid(16000)(torch.randn(1, 1600)).shape
        torch.Size([1, 9])
    """

    def __init__(
        self,
        sample_rate: int,
        n_fft: int = 400,
        win_length: int | None = None,
        hop_length: int | None = None,
        pad: int = 0,
        window_fn: WindowFn = torch.hann_window,
        wkwargs: dict | None = None,
    ) -> None:
        super().__init__()
        self.sample_rate, self.pad = sample_rate, pad
        _set_stft(self, n_fft, win_length, hop_length, window_fn, wkwargs)

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """The centroids of one waveform."""
        return spectral.spectral_centroid(
            inpt, self.sample_rate, self.pad, self.window, self.n_fft, self.hop_length,
            self.win_length,
        )  # fmt: skip


class Loudness(Transform):
    """Integrated loudness (LUFS, ITU-R BS.1770-4) of ``[..., channels, time]`` audio.

    See :func:`~trivium.audio.functional.loudness`.

    Example:
        >>> import torch
        >>> Loudness(16000)(torch.zeros(1, 16000) + 0.1).shape
        torch.Size([])
    """

    def __init__(self, sample_rate: int) -> None:
        super().__init__()
        self.sample_rate = sample_rate

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """The loudness of one waveform tensor."""
        return loudness(inpt, self.sample_rate)


class Convolve(CallTransform):
    """``convolve(x, y)`` of two signals (:func:`~trivium.audio.functional.convolve`).

    Example:
        >>> import torch
        >>> Convolve("valid")(torch.ones(4), torch.ones(2))
        tensor([2., 2., 2.])
    """

    def __init__(self, mode: str = "full") -> None:
        super().__init__()
        if mode not in ("full", "valid", "same"):
            raise ValueError(f"mode must be 'full', 'valid' or 'same', got {mode!r}")
        self.mode = mode

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        """Convolve ``x [..., N]`` with ``y [..., M]``."""
        return convolution.convolve(x, y, self.mode)


class FFTConvolve(Convolve):
    """``fftconvolve(x, y)`` (:func:`~trivium.audio.functional.fftconvolve`).

    Example:
        >>> import torch
        >>> FFTConvolve("same")(torch.ones(4), torch.ones(2)).round()
        tensor([1., 2., 2., 2.])
    """

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        """Convolve ``x [..., N]`` with ``y [..., M]`` through the FFT."""
        return convolution.fftconvolve(x, y, self.mode)


class PSD(CallTransform):
    """Power spectral density matrices ``[..., freq, channel, channel]`` of a complex
    ``[..., channel, freq, time]`` spectrogram: ``psd(specgram, mask=None)``.

    ``multi_mask`` averages a ``[..., channel, freq, time]`` mask over channels first.
    See :func:`~trivium.audio.functional.psd`.

    Example:
        >>> import torch
        >>> PSD()(torch.ones(2, 3, 4, dtype=torch.cfloat)).shape
        torch.Size([3, 2, 2])
    """

    def __init__(
        self, multi_mask: bool = False, normalize: bool = True, eps: float = 1e-15
    ) -> None:
        super().__init__()
        self.multi_mask, self.normalize, self.eps = multi_mask, normalize, eps

    def forward(self, specgram: Tensor, mask: Tensor | None = None) -> Tensor:
        """The PSD matrices of ``specgram``, weighted by ``mask`` where given."""
        if mask is not None and self.multi_mask:
            mask = mask.mean(dim=-3)
        return beamforming.psd(specgram, mask, self.normalize, self.eps)


class SoudenMVDR(CallTransform):
    """MVDR beamforming by Souden's formula: ``mvdr(specgram, psd_s, psd_n, reference_channel)``.

    Returns the enhanced ``[..., freq, time]`` spectrogram; see
    :func:`~trivium.audio.functional.mvdr_weights_souden`.

    Example:
        >>> import torch
        >>> eye = torch.eye(2, dtype=torch.cfloat).expand(3, 2, 2)
        >>> SoudenMVDR()(torch.ones(2, 3, 4, dtype=torch.cfloat), eye, eye, 0).shape
        torch.Size([3, 4])
    """

    def forward(
        self,
        specgram: Tensor,
        psd_s: Tensor,
        psd_n: Tensor,
        reference_channel: int | Tensor,
        diagonal_loading: bool = True,
        diag_eps: float = 1e-7,
        eps: float = 1e-8,
    ) -> Tensor:
        """The beamformed spectrogram."""
        weights = beamforming.mvdr_weights_souden(
            psd_s, psd_n, reference_channel, diagonal_loading, diag_eps, eps
        )
        return beamforming.apply_beamforming(weights, specgram)


class RTFMVDR(CallTransform):
    """MVDR beamforming from the relative transfer function:
    ``mvdr(specgram, rtf, psd_n, reference_channel)``.

    See :func:`~trivium.audio.functional.mvdr_weights_rtf`.

    Example:
        >>> import torch
        >>> eye = torch.eye(2, dtype=torch.cfloat).expand(3, 2, 2)
        >>> rtf = torch.ones(3, 2, dtype=torch.cfloat)
        >>> RTFMVDR()(torch.ones(2, 3, 4, dtype=torch.cfloat), rtf, eye, 0).shape
        torch.Size([3, 4])
    """

    def forward(
        self,
        specgram: Tensor,
        rtf: Tensor,
        psd_n: Tensor,
        reference_channel: int | Tensor,
        diagonal_loading: bool = True,
        diag_eps: float = 1e-7,
        eps: float = 1e-8,
    ) -> Tensor:
        """The beamformed spectrogram."""
        weights = beamforming.mvdr_weights_rtf(
            rtf, psd_n, reference_channel, diagonal_loading, diag_eps, eps
        )
        return beamforming.apply_beamforming(weights, specgram)
