"""Filter transforms, as torchaudio's: ``ComputeDeltas``, ``Preemphasis``, ``Deemphasis``,
``SlidingWindowCmn``, ``SpectralCentroid``, ``Loudness``, ``Convolve``, ``FFTConvolve``,
and beamforming: ``PSD``, ``MVDR``, ``SoudenMVDR``, ``RTFMVDR``.

Example:
    >>> import torch
    >>> Preemphasis(0.5)(torch.tensor([1.0, 1.0]))
    tensor([1.0000, 0.5000])
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import Tensor

from trivium.audio.functional import beamforming, convolution, filtering, spectral
from trivium.audio.functional.loudness import loudness
from trivium.audio.transforms.base import CallTransform
from trivium.audio.transforms.spectral import WindowFn, _set_stft
from trivium.core.transform import Transform

__all__ = [
    "MVDR",
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


MVDR_SOLUTIONS = ("ref_channel", "stv_evd", "stv_power")


class MVDR(CallTransform):
    """MVDR beamforming from time-frequency masks: ``mvdr(specgram, mask_s, mask_n=None)``
    (torchaudio's ``MVDR`` module).

    The speech and noise PSD matrices come from the masks (``mask_n`` defaults to
    ``1 - mask_s``, with a warning); the weights from Souden's formula
    (``solution="ref_channel"``) or from a steering vector, the principal eigenvector
    (``"stv_evd"``) or power iterations (``"stv_power"``) of the speech PSD. With
    ``online``, each call's PSD matrices are merged with the previous calls' (weighted by
    the masks' sums; kept in the buffers ``psd_s``, ``psd_n``, ``mask_sum_s``,
    ``mask_sum_n``). Computes in complex128; returns the input's dtype.

    Args:
        ref_channel: the reference channel.
        solution: ``"ref_channel"``, ``"stv_evd"`` or ``"stv_power"``.
        multi_mask: the masks are ``[..., channel, freq, time]``, averaged over channels.
        diag_loading: regularise the noise PSD by ``diag_eps`` times its trace.
        diag_eps: the diagonal loading's factor.
        online: update the PSD matrices recursively from call to call.

    Example:
        >>> import torch
        >>> specgram = torch.randn(3, 5, 20, dtype=torch.cfloat)
        >>> mask = torch.rand(5, 20)
        >>> MVDR(solution="stv_power")(specgram, mask, 1 - mask).shape
        torch.Size([5, 20])
    """

    def __init__(
        self,
        ref_channel: int = 0,
        solution: str = "ref_channel",
        multi_mask: bool = False,
        diag_loading: bool = True,
        diag_eps: float = 1e-7,
        online: bool = False,
    ) -> None:
        super().__init__()
        if solution not in MVDR_SOLUTIONS:
            raise ValueError(f"solution must be one of {list(MVDR_SOLUTIONS)}, got {solution!r}")
        self.ref_channel, self.solution, self.multi_mask = ref_channel, solution, multi_mask
        self.diag_loading, self.diag_eps, self.online = diag_loading, diag_eps, online
        for name in ("psd_s", "psd_n", "mask_sum_s", "mask_sum_n"):
            self.register_buffer(name, torch.zeros(1))  # 1-D: no call seen yet

    def _weights(self, psd_s: Tensor, psd_n: Tensor) -> Tensor:
        """The beamforming weights ``[..., freq, channel]`` by ``solution``."""
        loading = (self.diag_loading, self.diag_eps)
        if self.solution == "ref_channel":
            return beamforming.mvdr_weights_souden(psd_s, psd_n, self.ref_channel, *loading)
        if self.solution == "stv_evd":
            rtf = beamforming.rtf_evd(psd_s)
        else:
            rtf = beamforming.rtf_power(psd_s, psd_n, self.ref_channel, 3, *loading)
        return beamforming.mvdr_weights_rtf(rtf, psd_n, self.ref_channel, *loading)

    def _merged(self, psd: Tensor, mask: Tensor, which: str) -> Tensor:
        """``psd`` merged into the running PSD ``which`` (torchaudio's recursive update)."""
        mask_sum = mask.sum(dim=-1)
        previous, previous_sum = getattr(self, f"psd_{which}"), getattr(self, f"mask_sum_{which}")
        if previous.ndim > 1:
            total = previous_sum + mask_sum
            psd = (
                previous * (previous_sum / total)[..., None, None]
                + psd * (1 / total)[..., None, None]
            )
            mask_sum = total
        setattr(self, f"psd_{which}", psd)
        setattr(self, f"mask_sum_{which}", mask_sum)
        return psd

    def forward(self, specgram: Tensor, mask_s: Tensor, mask_n: Tensor | None = None) -> Tensor:
        """The enhanced single-channel spectrogram ``[..., freq, time]``."""
        if specgram.ndim < 3:
            raise ValueError(
                f"specgram must be at least 3-D (..., channel, freq, time), got {specgram.shape}"
            )
        if not specgram.is_complex():
            raise ValueError(f"specgram must be complex (cfloat or cdouble), got {specgram.dtype}")
        if mask_n is None:
            warnings.warn(
                "``mask_n`` is not provided, use ``1 - mask_s`` as ``mask_n``.", stacklevel=2
            )
            mask_n = 1 - mask_s
        if self.multi_mask:
            mask_s, mask_n = mask_s.mean(dim=-3), mask_n.mean(dim=-3)
        work = specgram.to(torch.cdouble)
        psd_s, psd_n = beamforming.psd(work, mask_s), beamforming.psd(work, mask_n)
        if self.online:
            psd_s, psd_n = self._merged(psd_s, mask_s, "s"), self._merged(psd_n, mask_n, "n")
        weights = self._weights(psd_s, psd_n)
        return beamforming.apply_beamforming(weights, work).to(specgram.dtype)
