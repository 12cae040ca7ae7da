"""Spectral transforms (``nn.Module``s named and built like ``torchaudio.transforms``).

Windows, filter banks and DCT matrices are buffers: they move with ``.to(device)``,
and every transform computes on its input's device. Inputs take any leading batch
shape: ``[..., time]`` for waveforms, ``[..., freq, time]`` for spectrograms.

Example:
    >>> import torch
    >>> mel = MelSpectrogram(sample_rate=16000, n_fft=400, hop_length=160, n_mels=80)
    >>> mel(torch.zeros(4, 1, 16000)).shape
    torch.Size([4, 1, 80, 101])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from trivium.audio.functional import spectral as F
from trivium.audio.transforms.base import CallTransform
from trivium.core.transform import Transform

__all__ = [
    "MFCC",
    "AmplitudeToDB",
    "GriffinLim",
    "InverseMelScale",
    "InverseSpectrogram",
    "MelScale",
    "MelSpectrogram",
    "Spectrogram",
    "TimeStretch",
]

WindowFn = Callable[..., Tensor]


def _frames(n_fft: int, win_length: int | None, hop_length: int | None) -> tuple[int, int]:
    if n_fft <= 0:
        raise ValueError(f"n_fft must be positive, got {n_fft}")
    win_length = n_fft if win_length is None else win_length
    hop_length = win_length // 2 if hop_length is None else hop_length
    if not 0 < win_length <= n_fft:
        raise ValueError(f"win_length must be in (0, n_fft={n_fft}], got {win_length}")
    if hop_length <= 0:
        raise ValueError(f"hop_length must be positive, got {hop_length}")
    return win_length, hop_length


def _set_stft(
    module: torch.nn.Module,
    n_fft: int,
    win_length: int | None,
    hop_length: int | None,
    window_fn: WindowFn,
    wkwargs: dict | None,
) -> None:
    """Set ``n_fft``, ``win_length``, ``hop_length`` (torchaudio's defaults) and the
    ``window`` buffer of a transform built on the STFT."""
    module.n_fft = n_fft
    module.win_length, module.hop_length = _frames(n_fft, win_length, hop_length)
    module.register_buffer("window", window_fn(module.win_length, **(wkwargs or {})))


def _set_framing(
    module: torch.nn.Module,
    pad: int,
    normalized: bool | str,
    center: bool,
    pad_mode: str,
    onesided: bool,
) -> None:
    """Set the padding, normalisation and sidedness a (possibly inverse) STFT transform uses."""
    module.pad = pad
    module.normalized = normalized
    module.center = center
    module.pad_mode = pad_mode
    module.onesided = onesided


class Spectrogram(Transform):
    """``[..., time]`` waveform to a ``[..., n_fft // 2 + 1, frames]`` spectrogram.

    ``power=None`` gives the complex STFT, else ``|STFT| ** power``. Arguments and
    defaults are torchaudio's (``win_length = n_fft``, ``hop_length = win_length // 2``).

    Example:
        >>> import torch
        >>> Spectrogram(n_fft=512, hop_length=128)(torch.zeros(2, 4000)).shape
        torch.Size([2, 257, 32])
    """

    def __init__(
        self,
        n_fft: int = 400,
        win_length: int | None = None,
        hop_length: int | None = None,
        pad: int = 0,
        window_fn: WindowFn = torch.hann_window,
        power: float | None = 2.0,
        normalized: bool | str = False,
        wkwargs: dict | None = None,
        center: bool = True,
        pad_mode: str = "reflect",
        onesided: bool = True,
    ) -> None:
        super().__init__()
        _set_stft(self, n_fft, win_length, hop_length, window_fn, wkwargs)
        _set_framing(self, pad, normalized, center, pad_mode, onesided)
        self.power = power

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Compute the spectrogram of one waveform tensor."""
        return F.spectrogram(
            inpt,
            self.pad,
            self.window,
            self.n_fft,
            self.hop_length,
            self.win_length,
            self.power,
            self.normalized,
            self.center,
            self.pad_mode,
            self.onesided,
        )


class InverseSpectrogram(CallTransform):
    """Complex spectrogram ``[..., freq, frames]`` back to a waveform ``[..., time]``.

    Call it as ``inv(spectrogram, length=None)``.

    Example:
        >>> import torch
        >>> x = torch.randn(2, 4000)
        >>> z = Spectrogram(n_fft=512, power=None)(x)
        >>> y = InverseSpectrogram(n_fft=512)(z, length=4000)
        >>> bool(torch.allclose(x, y, atol=1e-5))
        True
    """

    def __init__(
        self,
        n_fft: int = 400,
        win_length: int | None = None,
        hop_length: int | None = None,
        pad: int = 0,
        window_fn: WindowFn = torch.hann_window,
        normalized: bool | str = False,
        wkwargs: dict | None = None,
        center: bool = True,
        pad_mode: str = "reflect",
        onesided: bool = True,
    ) -> None:
        super().__init__()
        _set_stft(self, n_fft, win_length, hop_length, window_fn, wkwargs)
        _set_framing(self, pad, normalized, center, pad_mode, onesided)

    def forward(self, spectrogram: Tensor, length: int | None = None) -> Tensor:
        """Invert ``spectrogram``; ``length`` trims or pads to that many samples."""
        return F.inverse_spectrogram(
            spectrogram,
            length,
            self.pad,
            self.window,
            self.n_fft,
            self.hop_length,
            self.win_length,
            self.normalized,
            self.center,
            self.pad_mode,
            self.onesided,
        )


class MelScale(Transform):
    """Linear-frequency spectrogram ``[..., n_stft, time]`` to mel ``[..., n_mels, time]``.

    The filter bank ``[n_stft, n_mels]`` is the ``fb`` buffer, as in torchaudio;
    ``mel_scale`` is ``"htk"`` or ``"slaney"`` and ``norm`` ``None`` or ``"slaney"``.

    Example:
        >>> import torch
        >>> m = MelScale(n_mels=40, sample_rate=16000, n_stft=201)
        >>> m.fb.shape, m(torch.ones(3, 201, 7)).shape
        (torch.Size([201, 40]), torch.Size([3, 40, 7]))
    """

    def __init__(
        self,
        n_mels: int = 128,
        sample_rate: int = 16000,
        f_min: float = 0.0,
        f_max: float | None = None,
        n_stft: int = 201,
        norm: str | None = None,
        mel_scale: str = "htk",
    ) -> None:
        super().__init__()
        self.n_mels = n_mels
        self.sample_rate = sample_rate
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.f_min = f_min
        self.norm = norm
        self.mel_scale = mel_scale
        fb = F.melscale_fbanks(n_stft, f_min, self.f_max, n_mels, sample_rate, norm, mel_scale)
        self.register_buffer("fb", fb)

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Project one spectrogram onto the mel filter bank."""
        if inpt.shape[-2] != self.fb.shape[0]:
            raise ValueError(
                f"MelScale: expected {self.fb.shape[0]} frequency bins (dim -2), "
                f"got shape {tuple(inpt.shape)}"
            )
        return torch.matmul(inpt.transpose(-1, -2), self.fb.to(inpt.dtype)).transpose(-1, -2)


class InverseMelScale(Transform):
    """Mel spectrogram ``[..., n_mels, time]`` back to linear ``[..., n_stft, time]``.

    Takes the minimum-norm least-squares solution of ``fb.T @ X = mel`` and clamps
    negatives to 0, as torchaudio does. The solution uses the filter bank's
    pseudo-inverse (the ``fb_pinv`` buffer, computed once), so it also exists when
    ``fb`` is rank deficient (empty low mel bands), where LAPACK's ``gels`` fails;
    ``driver`` is accepted for torchaudio compatibility and must be a LAPACK
    least-squares driver name.

    Example:
        >>> import torch
        >>> inv = InverseMelScale(n_stft=201, n_mels=80)
        >>> inv(torch.rand(2, 80, 5)).shape
        torch.Size([2, 201, 5])
    """

    def __init__(
        self,
        n_stft: int,
        n_mels: int = 128,
        sample_rate: int = 16000,
        f_min: float = 0.0,
        f_max: float | None = None,
        norm: str | None = None,
        mel_scale: str = "htk",
        driver: str = "gels",
    ) -> None:
        super().__init__()
        self.n_mels = n_mels
        self.sample_rate = sample_rate
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.f_min = f_min
        if driver not in ("gels", "gelsy", "gelsd", "gelss"):
            raise ValueError(f"driver must be gels, gelsy, gelsd or gelss, got {driver!r}")
        self.driver = driver
        fb = F.melscale_fbanks(n_stft, f_min, self.f_max, n_mels, sample_rate, norm, mel_scale)
        self.register_buffer("fb", fb)
        pinv = torch.linalg.pinv(fb.transpose(0, 1).double()).to(fb.dtype)  # [n_stft, n_mels]
        self.register_buffer("fb_pinv", pinv)

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Invert one mel spectrogram."""
        if inpt.shape[-2] != self.n_mels:
            raise ValueError(
                f"InverseMelScale: expected {self.n_mels} mel bins (dim -2), "
                f"got shape {tuple(inpt.shape)}"
            )
        return torch.matmul(self.fb_pinv.to(inpt.dtype), inpt).clamp(min=0)


class MelSpectrogram(Transform):
    """``[..., time]`` waveform to a ``[..., n_mels, frames]`` mel spectrogram.

    :class:`Spectrogram` followed by :class:`MelScale` (``.spectrogram`` and
    ``.mel_scale``), with torchaudio's arguments and defaults.

    Example:
        >>> import torch
        >>> MelSpectrogram(16000, n_fft=400, hop_length=160, n_mels=80)(torch.zeros(1600)).shape
        torch.Size([80, 11])
    """

    def __init__(
        self,
        sample_rate: int = 16000,
        n_fft: int = 400,
        win_length: int | None = None,
        hop_length: int | None = None,
        f_min: float = 0.0,
        f_max: float | None = None,
        pad: int = 0,
        n_mels: int = 128,
        window_fn: WindowFn = torch.hann_window,
        power: float = 2.0,
        normalized: bool | str = False,
        wkwargs: dict | None = None,
        center: bool = True,
        pad_mode: str = "reflect",
        norm: str | None = None,
        mel_scale: str = "htk",
    ) -> None:
        super().__init__()
        self.sample_rate = sample_rate
        self.n_fft = n_fft
        self.n_mels = n_mels
        self.spectrogram = Spectrogram(
            n_fft=n_fft,
            win_length=win_length,
            hop_length=hop_length,
            pad=pad,
            window_fn=window_fn,
            power=power,
            normalized=normalized,
            wkwargs=wkwargs,
            center=center,
            pad_mode=pad_mode,
            onesided=True,
        )
        self.win_length = self.spectrogram.win_length
        self.hop_length = self.spectrogram.hop_length
        self.mel_scale = MelScale(
            n_mels, sample_rate, f_min, f_max, n_fft // 2 + 1, norm, mel_scale
        )

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Mel spectrogram of one waveform tensor."""
        return self.mel_scale.transform(self.spectrogram.transform(inpt, params), params)


class AmplitudeToDB(Transform):
    """Power (``stype="power"``) or amplitude (``"magnitude"``) spectrogram to decibels.

    ``10 * log10(max(x, 1e-10))`` for power, ``20 *`` for magnitude; ``top_db`` floors
    each spectrogram at its maximum minus ``top_db``.

    Example:
        >>> import torch
        >>> AmplitudeToDB("power", top_db=80.0)(torch.tensor([[1.0, 1e-3]]))
        tensor([[  0., -30.]])
    """

    def __init__(self, stype: str = "power", top_db: float | None = None) -> None:
        super().__init__()
        if stype not in ("power", "magnitude"):
            raise ValueError(f"stype must be 'power' or 'magnitude', got {stype!r}")
        if top_db is not None and top_db < 0:
            raise ValueError(f"top_db must be >= 0, got {top_db}")
        self.stype = stype
        self.top_db = top_db
        self.multiplier = 10.0 if stype == "power" else 20.0
        self.amin = 1e-10
        self.ref_value = 1.0
        self.db_multiplier = math.log10(max(self.amin, self.ref_value))

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Convert one spectrogram to dB."""
        return F.amplitude_to_DB(inpt, self.multiplier, self.amin, self.db_multiplier, self.top_db)


def _cepstrum(bands: Tensor, log: bool, to_db: AmplitudeToDB, dct: Tensor) -> Tensor:
    """Cepstral coefficients ``[..., n, frames]`` of filter-bank energies ``[..., bands, frames]``:
    ``log(x + 1e-6)`` (``log``) or dB, then the DCT matrix ``[bands, n]``."""
    bands = torch.log(bands + 1e-6) if log else to_db.transform(bands, {})
    return torch.matmul(bands.transpose(-1, -2), dct.to(bands.dtype)).transpose(-1, -2)


class MFCC(Transform):
    """``[..., time]`` waveform to ``[..., n_mfcc, frames]`` mel-frequency cepstral coefficients.

    A :class:`MelSpectrogram` (``melkwargs``), then dB with ``top_db=80`` (or
    ``log(mel + 1e-6)`` with ``log_mels=True``), then a DCT-II (``dct_mat`` buffer,
    ``norm="ortho"`` by default), as torchaudio.

    Example:
        >>> import torch
        >>> mfcc = MFCC(16000, n_mfcc=13, melkwargs={"n_fft": 400, "hop_length": 160, "n_mels": 40})
        >>> mfcc(torch.randn(2, 16000)).shape
        torch.Size([2, 13, 101])
    """

    def __init__(
        self,
        sample_rate: int = 16000,
        n_mfcc: int = 40,
        dct_type: int = 2,
        norm: str = "ortho",
        log_mels: bool = False,
        melkwargs: dict | None = None,
    ) -> None:
        super().__init__()
        if dct_type != 2:
            raise ValueError(f"only DCT type 2 is supported, got {dct_type}")
        self.sample_rate = sample_rate
        self.n_mfcc = n_mfcc
        self.dct_type = dct_type
        self.norm = norm
        self.log_mels = log_mels
        self.top_db = 80.0
        self.amplitude_to_DB = AmplitudeToDB("power", self.top_db)
        self.MelSpectrogram = MelSpectrogram(sample_rate=sample_rate, **(melkwargs or {}))
        n_mels = self.MelSpectrogram.n_mels
        if n_mfcc > n_mels:
            raise ValueError(f"n_mfcc ({n_mfcc}) cannot exceed n_mels ({n_mels})")
        self.register_buffer("dct_mat", F.create_dct(n_mfcc, n_mels, norm))

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """MFCCs of one waveform tensor."""
        mel = self.MelSpectrogram.transform(inpt, params)
        return _cepstrum(mel, self.log_mels, self.amplitude_to_DB, self.dct_mat)


class LFCC(Transform):
    """``[..., time]`` waveform to ``[..., n_lfcc, frames]`` linear-frequency cepstral coefficients.

    A :class:`Spectrogram` (``speckwargs``), a bank of ``n_filter`` triangles evenly
    spaced in Hz (``filter_mat`` buffer, :func:`~trivium.audio.functional.linear_fbanks`),
    dB with ``top_db=80`` (or ``log(x + 1e-6)`` with ``log_lf=True``), then a DCT-II
    (``dct_mat``), as torchaudio.

    Example:
        >>> import torch
        >>> lfcc = LFCC(16000, n_filter=64, n_lfcc=20, speckwargs={"n_fft": 400, "hop_length": 160})
        >>> lfcc(torch.randn(2, 16000)).shape
        torch.Size([2, 20, 101])
    """

    def __init__(
        self,
        sample_rate: int = 16000,
        n_filter: int = 128,
        f_min: float = 0.0,
        f_max: float | None = None,
        n_lfcc: int = 40,
        dct_type: int = 2,
        norm: str = "ortho",
        log_lf: bool = False,
        speckwargs: dict | None = None,
    ) -> None:
        super().__init__()
        if dct_type != 2:
            raise ValueError(f"only DCT type 2 is supported, got {dct_type}")
        self.sample_rate, self.n_filter, self.n_lfcc = sample_rate, n_filter, n_lfcc
        self.f_min = f_min
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.dct_type, self.norm, self.log_lf = dct_type, norm, log_lf
        self.Spectrogram = Spectrogram(**(speckwargs or {}))
        if n_lfcc > self.Spectrogram.n_fft:
            raise ValueError(f"n_lfcc ({n_lfcc}) cannot exceed n_fft ({self.Spectrogram.n_fft})")
        self.amplitude_to_DB = AmplitudeToDB("power", 80.0)
        n_freqs = self.Spectrogram.n_fft // 2 + 1
        fb = F.linear_fbanks(n_freqs, self.f_min, self.f_max, n_filter, sample_rate)
        self.register_buffer("filter_mat", fb)
        self.register_buffer("dct_mat", F.create_dct(n_lfcc, n_filter, norm))

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """LFCCs of one waveform tensor."""
        spec = self.Spectrogram.transform(inpt, params)
        bands = torch.matmul(spec.transpose(-1, -2), self.filter_mat.to(spec.dtype))
        return _cepstrum(bands.transpose(-1, -2), self.log_lf, self.amplitude_to_DB, self.dct_mat)


class GriffinLim(Transform):
    """Magnitude spectrogram ``[..., freq, frames]`` to a waveform by Griffin-Lim.

    Random initial phases (``rand_init=True``) come from ``generator``.

    Example:
        >>> import torch
        >>> spec = Spectrogram(n_fft=256)(torch.randn(1, 2000))
        >>> GriffinLim(n_fft=256, n_iter=2, length=2000)(spec).shape
        torch.Size([1, 2000])
    """

    def __init__(
        self,
        n_fft: int = 400,
        n_iter: int = 32,
        win_length: int | None = None,
        hop_length: int | None = None,
        window_fn: WindowFn = torch.hann_window,
        power: float = 2.0,
        wkwargs: dict | None = None,
        momentum: float = 0.99,
        length: int | None = None,
        rand_init: bool = True,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator)
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}")
        self.n_iter = n_iter
        _set_stft(self, n_fft, win_length, hop_length, window_fn, wkwargs)
        self.power = power
        self.momentum = momentum
        self.length = length
        self.rand_init = rand_init

    def transform(self, inpt: Tensor, params: dict[str, Any]) -> Tensor:
        """Reconstruct one waveform tensor."""
        return F.griffinlim(
            inpt,
            self.window,
            self.n_fft,
            self.hop_length,
            self.win_length,
            self.power,
            self.n_iter,
            self.momentum,
            self.length,
            self.rand_init,
            self.active_generator(),
        )


class TimeStretch(CallTransform):
    """Stretch a complex STFT ``[..., freq, frames]`` in time by a phase vocoder.

    Call it as ``stretch(spec, overriding_rate=None)``; ``rate > 1`` speeds up.

    Example:
        >>> import torch
        >>> z = torch.randn(2, 201, 100, dtype=torch.cfloat)
        >>> TimeStretch(hop_length=200, n_freq=201, fixed_rate=2.0)(z).shape
        torch.Size([2, 201, 50])
    """

    def __init__(
        self, hop_length: int | None = None, n_freq: int = 201, fixed_rate: float | None = None
    ) -> None:
        super().__init__()
        self.fixed_rate = fixed_rate
        n_fft = (n_freq - 1) * 2
        self.hop_length = hop_length if hop_length is not None else n_fft // 2
        advance = torch.linspace(0, math.pi * self.hop_length, n_freq)[..., None]
        self.register_buffer("phase_advance", advance)

    def forward(self, complex_specgrams: Tensor, overriding_rate: float | None = None) -> Tensor:
        """Stretch by ``overriding_rate`` or, when omitted, ``fixed_rate``."""
        if not complex_specgrams.is_complex():
            raise TypeError("TimeStretch: expected a complex spectrogram (Spectrogram(power=None))")
        rate = self.fixed_rate if overriding_rate is None else overriding_rate
        if rate is None:
            raise ValueError("TimeStretch: give fixed_rate at construction or overriding_rate")
        return F.phase_vocoder(complex_specgrams, rate, self.phase_advance)
