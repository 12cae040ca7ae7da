"""Spectral functions: STFT magnitude and its inverse, mel filter banks, DCT, dB, phase vocoder.

Names, arguments and results follow ``torchaudio.functional``. Every function takes
any leading batch shape, computes on the input's device and is differentiable where
the math is.

Example:
    >>> import torch
    >>> spec = spectrogram(
    ...     torch.zeros(2, 1600), pad=0, window=torch.hann_window(400), n_fft=400,
    ...     hop_length=160, win_length=400, power=2.0, normalized=False,
    ... )
    >>> spec.shape
    torch.Size([2, 201, 11])
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor

__all__ = [
    "DB_to_amplitude",
    "amplitude_to_DB",
    "create_dct",
    "griffinlim",
    "inverse_spectrogram",
    "linear_fbanks",
    "melscale_fbanks",
    "phase_vocoder",
    "spectral_centroid",
    "spectrogram",
]


def _spec_norms(normalized: bool | str) -> tuple[bool, bool]:
    """(normalise by frame length in torch.stft, normalise by the window's energy)."""
    if normalized is True or normalized == "window":
        return False, True
    if normalized is False:
        return False, False
    if normalized == "frame_length":
        return True, False
    raise ValueError(f"normalized must be a bool, 'window' or 'frame_length', got {normalized!r}")


def _power(spec: Tensor, power: float) -> Tensor:
    if power == 2.0:  # |z|^2 without the square root and square of abs().pow(2)
        return spec.real.square() + spec.imag.square()
    if power == 1.0:
        return spec.abs()
    return spec.abs().pow(power)


def spectrogram(
    waveform: Tensor,
    pad: int,
    window: Tensor,
    n_fft: int,
    hop_length: int,
    win_length: int,
    power: float | None,
    normalized: bool | str,
    center: bool = True,
    pad_mode: str = "reflect",
    onesided: bool = True,
) -> Tensor:
    """Spectrogram ``[..., freq, frames]`` of ``waveform`` ``[..., time]`` (torchaudio's).

    ``power=None`` returns the complex STFT; otherwise ``|STFT| ** power``.
    ``normalized`` is ``False``, ``True``/``"window"`` (divide by the window's L2
    norm) or ``"frame_length"`` (torch.stft's normalisation).

    Example:
        >>> import torch
        >>> x = torch.randn(3, 2, 800)
        >>> spectrogram(x, 0, torch.hann_window(256), 256, 64, 256, None, False).shape
        torch.Size([3, 2, 129, 13])
    """
    if not isinstance(waveform, Tensor) or not waveform.is_floating_point():
        raise TypeError("spectrogram: waveform must be a floating point tensor")
    frame_norm, window_norm = _spec_norms(normalized)
    if pad > 0:
        waveform = torch.nn.functional.pad(waveform, (pad, pad), "constant")
    shape = waveform.shape
    spec = torch.stft(
        waveform.reshape(-1, shape[-1]),
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=window,
        center=center,
        pad_mode=pad_mode,
        normalized=frame_norm,
        onesided=onesided,
        return_complex=True,
    )
    if window_norm:
        spec = spec / window.pow(2.0).sum().sqrt()
    if power is not None:
        # torch.stft's [freq, frames] result is a transposed view: compute in memory order.
        spec = _power(spec.transpose(-1, -2), power).transpose(-1, -2)
    return spec.reshape(shape[:-1] + spec.shape[-2:])


def inverse_spectrogram(
    spectrogram: Tensor,
    length: int | None,
    pad: int,
    window: Tensor,
    n_fft: int,
    hop_length: int,
    win_length: int,
    normalized: bool | str,
    center: bool = True,
    pad_mode: str = "reflect",
    onesided: bool = True,
) -> Tensor:
    """Waveform ``[..., time]`` from a complex spectrogram ``[..., freq, frames]`` (inverse STFT).

    ``length`` trims or pads the result to that many samples. ``pad_mode`` is accepted
    for symmetry with :func:`spectrogram` and unused, as in torchaudio.

    Example:
        >>> import torch
        >>> w = torch.hann_window(256)
        >>> x = torch.randn(2, 1000)
        >>> z = spectrogram(x, 0, w, 256, 64, 256, None, False)
        >>> y = inverse_spectrogram(z, 1000, 0, w, 256, 64, 256, False)
        >>> bool(torch.allclose(x, y, atol=1e-5))
        True
    """
    if not isinstance(spectrogram, Tensor) or not spectrogram.is_complex():
        raise TypeError("inverse_spectrogram: expected a complex spectrogram tensor")
    frame_norm, window_norm = _spec_norms(normalized)
    if window_norm:
        spectrogram = spectrogram * window.pow(2.0).sum().sqrt()
    shape = spectrogram.shape
    waveform = torch.istft(
        spectrogram.reshape(-1, shape[-2], shape[-1]),
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=window,
        center=center,
        normalized=frame_norm,
        onesided=onesided,
        length=length + 2 * pad if length is not None else None,
        return_complex=False,
    )
    if length is not None and pad > 0:
        waveform = waveform[:, pad:-pad]
    return waveform.reshape(shape[:-2] + waveform.shape[-1:])


def griffinlim(
    specgram: Tensor,
    window: Tensor,
    n_fft: int,
    hop_length: int,
    win_length: int,
    power: float,
    n_iter: int,
    momentum: float,
    length: int | None,
    rand_init: bool,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Waveform from a magnitude spectrogram by the (fast) Griffin-Lim algorithm.

    ``specgram`` is ``[..., freq, frames]`` holding ``|STFT| ** power``. With
    ``rand_init`` the phases start random, drawn from ``generator``.

    Example:
        >>> import torch
        >>> w = torch.hann_window(256)
        >>> mag = spectrogram(torch.randn(1, 2048), 0, w, 256, 64, 256, 2.0, False)
        >>> griffinlim(mag, w, 256, 64, 256, 2.0, 4, 0.99, 2048, False).shape
        torch.Size([1, 2048])
    """
    if not 0 <= momentum < 1:
        raise ValueError(f"griffinlim: momentum must be in [0, 1), got {momentum}")
    shape = specgram.shape
    specgram = specgram.reshape(-1, shape[-2], shape[-1]).pow(1 / power)
    complex_dtype = torch.complex128 if specgram.dtype == torch.float64 else torch.complex64
    if rand_init:
        device = specgram.device if generator is None else generator.device
        angles = torch.rand(specgram.shape, dtype=complex_dtype, generator=generator, device=device)
        angles = angles.to(specgram.device)
    else:
        angles = torch.ones(specgram.shape, dtype=complex_dtype, device=specgram.device)
    stft_args = {
        "n_fft": n_fft,
        "hop_length": hop_length,
        "win_length": win_length,
        "window": window,
    }
    previous = torch.zeros((), dtype=complex_dtype, device=specgram.device)
    for _ in range(n_iter):
        inverse = torch.istft(specgram * angles, length=length, **stft_args)
        rebuilt = torch.stft(inverse, pad_mode="reflect", return_complex=True, **stft_args)
        angles = rebuilt - previous * (momentum / (1 + momentum)) if momentum else rebuilt
        angles = angles / (angles.abs() + 1e-16)
        previous = rebuilt
    waveform = torch.istft(specgram * angles, length=length, **stft_args)
    return waveform.reshape(shape[:-2] + waveform.shape[-1:])


# --------------------------------------------------------------------------- mel scale


def _hz_to_mel(freq: float, mel_scale: str) -> float:
    if mel_scale == "htk":
        return 2595.0 * math.log10(1.0 + freq / 700.0)
    # Slaney: linear below 1 kHz, logarithmic above.
    f_sp = 200.0 / 3
    min_log_hz, logstep = 1000.0, math.log(6.4) / 27.0
    if freq >= min_log_hz:
        return min_log_hz / f_sp + math.log(freq / min_log_hz) / logstep
    return freq / f_sp


def _mel_to_hz(mels: Tensor, mel_scale: str) -> Tensor:
    if mel_scale == "htk":
        return 700.0 * (10.0 ** (mels / 2595.0) - 1.0)
    f_sp = 200.0 / 3
    min_log_hz, logstep = 1000.0, math.log(6.4) / 27.0
    min_log_mel = min_log_hz / f_sp
    log_part = min_log_hz * torch.exp(logstep * (mels - min_log_mel))
    return torch.where(mels >= min_log_mel, log_part, f_sp * mels)


def _check_mel_args(norm: str | None, mel_scale: str) -> None:
    if norm is not None and norm != "slaney":
        raise ValueError(f"norm must be None or 'slaney', got {norm!r}")
    if mel_scale not in ("htk", "slaney"):
        raise ValueError(f"mel_scale must be 'htk' or 'slaney', got {mel_scale!r}")


def melscale_fbanks(
    n_freqs: int,
    f_min: float,
    f_max: float,
    n_mels: int,
    sample_rate: int,
    norm: str | None = None,
    mel_scale: str = "htk",
) -> Tensor:
    """Triangular mel filter bank ``[n_freqs, n_mels]`` (torchaudio's layout; librosa's values).

    ``mel_scale`` is ``"htk"`` or ``"slaney"``; ``norm="slaney"`` scales each
    triangle to unit area (constant energy per band). Computed in float64 and
    returned as float32, it equals ``librosa.filters.mel(...).T`` to float32 precision.

    Example:
        >>> fb = melscale_fbanks(201, 0.0, 8000.0, 80, 16000)
        >>> fb.shape, fb.dtype
        (torch.Size([201, 80]), torch.float32)
    """
    _check_mel_args(norm, mel_scale)
    if n_mels <= 0 or n_freqs <= 0:
        raise ValueError(f"n_freqs and n_mels must be positive, got {n_freqs}, {n_mels}")
    if not 0 <= f_min < f_max:
        raise ValueError(f"need 0 <= f_min < f_max, got f_min={f_min}, f_max={f_max}")
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs, dtype=torch.float64)
    m_pts = torch.linspace(
        _hz_to_mel(f_min, mel_scale), _hz_to_mel(f_max, mel_scale), n_mels + 2, dtype=torch.float64
    )
    f_pts = _mel_to_hz(m_pts, mel_scale)
    fb = _triangles(all_freqs, f_pts)
    if norm == "slaney":
        fb = fb * (2.0 / (f_pts[2 : n_mels + 2] - f_pts[:n_mels])).unsqueeze(0)
    if bool((fb.max(dim=0).values == 0.0).any()):
        warnings.warn(
            "At least one mel filterbank has all zero values: n_mels "
            f"({n_mels}) may be too high for n_freqs ({n_freqs}).",
            stacklevel=2,
        )
    return fb.to(torch.float32)


def linear_fbanks(
    n_freqs: int, f_min: float, f_max: float, n_filter: int, sample_rate: int
) -> Tensor:
    """Triangular filters ``[n_freqs, n_filter]`` spaced evenly in Hz (the bank of ``LFCC``).

    Example:
        >>> fb = linear_fbanks(201, 0.0, 8000.0, 40, 16000)
        >>> fb.shape, float(fb.max()) <= 1.0
        (torch.Size([201, 40]), True)
    """
    if n_filter <= 0 or n_freqs <= 0:
        raise ValueError(f"n_freqs and n_filter must be positive, got {n_freqs}, {n_filter}")
    if not 0 <= f_min < f_max:
        raise ValueError(f"need 0 <= f_min < f_max, got f_min={f_min}, f_max={f_max}")
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs, dtype=torch.float64)
    f_pts = torch.linspace(f_min, f_max, n_filter + 2, dtype=torch.float64)
    return _triangles(all_freqs, f_pts).to(torch.float32)


def _triangles(all_freqs: Tensor, f_pts: Tensor) -> Tensor:
    """Filter ``k``: up from ``f_pts[k]`` to 1 at ``f_pts[k + 1]``, down to ``f_pts[k + 2]``."""
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)  # [n_freqs, n_filters + 2]
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return torch.clamp(torch.minimum(down, up), min=0.0)


def spectral_centroid(
    waveform: Tensor,
    sample_rate: int,
    pad: int,
    window: Tensor,
    n_fft: int,
    hop_length: int,
    win_length: int,
) -> Tensor:
    """The magnitude-weighted mean frequency (Hz) of each frame: ``[..., frames]``.

    Example:
        >>> import math, torch
        >>> t = torch.arange(16000) / 16000
        >>> tone = torch.sin(2 * math.pi * 1000 * t)
        >>> centroid = spectral_centroid(tone, 16000, 0, torch.hann_window(400), 400, 200, 400)
        >>> abs(float(centroid.median()) - 1000) < 10
        True
    """
    magnitude = spectrogram(waveform, pad, window, n_fft, hop_length, win_length, 1.0, False)
    freqs = torch.linspace(
        0, sample_rate // 2, 1 + n_fft // 2, device=magnitude.device, dtype=magnitude.dtype
    )
    return (freqs[:, None] * magnitude).sum(dim=-2) / magnitude.sum(dim=-2)


def create_dct(n_mfcc: int, n_mels: int, norm: str | None) -> Tensor:
    """DCT-II matrix ``[n_mels, n_mfcc]``; ``norm="ortho"`` or ``None`` (scipy's conventions).

    Example:
        >>> import torch
        >>> d = create_dct(4, 4, "ortho")
        >>> bool(torch.allclose(d.T @ d, torch.eye(4), atol=1e-6))
        True
    """
    if norm is not None and norm != "ortho":
        raise ValueError(f"norm must be None or 'ortho', got {norm!r}")
    n = torch.arange(float(n_mels), dtype=torch.float64)
    k = torch.arange(float(n_mfcc), dtype=torch.float64).unsqueeze(1)
    dct = torch.cos(math.pi / float(n_mels) * (n + 0.5) * k)  # [n_mfcc, n_mels]
    if norm is None:
        dct = dct * 2.0
    else:
        dct[0] *= 1.0 / math.sqrt(2.0)
        dct = dct * math.sqrt(2.0 / float(n_mels))
    return dct.t().to(torch.float32)


# -------------------------------------------------------------------------- decibels


def amplitude_to_DB(
    x: Tensor,
    multiplier: float,
    amin: float,
    db_multiplier: float,
    top_db: float | None = None,
) -> Tensor:
    """``multiplier * log10(max(x, amin)) - multiplier * db_multiplier``, floored at max - top_db.

    As torchaudio, ``top_db`` applies per spectrogram: over the last two dimensions,
    together with the channel dimension (``-3``) when the input has one.

    Example:
        >>> import torch
        >>> amplitude_to_DB(torch.tensor([[1.0, 0.1, 1e-12]]), 10.0, 1e-10, 0.0, top_db=80.0)
        tensor([[  0., -10., -80.]])
    """
    x_db = multiplier * torch.log10(torch.clamp(x, min=amin))
    x_db = x_db - multiplier * db_multiplier
    if top_db is not None:
        shape = x_db.shape
        channels = shape[-3] if x_db.dim() > 2 else 1
        packed = x_db.reshape(-1, channels, shape[-2], shape[-1])
        floor = (packed.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1)
        x_db = torch.max(packed, floor).reshape(shape)
    return x_db


def DB_to_amplitude(x: Tensor, ref: float, power: float) -> Tensor:
    """Undo :func:`amplitude_to_DB`: ``ref * (10 ** (x / 10)) ** power``.

    Example:
        >>> import torch
        >>> DB_to_amplitude(torch.tensor([0.0, 20.0]), 1.0, 0.5)
        tensor([ 1., 10.])
    """
    return ref * torch.pow(torch.pow(10.0, 0.1 * x), power)


# ------------------------------------------------------------------------ time stretch


def phase_vocoder(complex_specgrams: Tensor, rate: float, phase_advance: Tensor) -> Tensor:
    """Speed up (``rate > 1``) or slow down a complex STFT ``[..., freq, frames]`` in time.

    ``phase_advance`` is ``[freq, 1]``: the expected phase advance per hop of each bin,
    ``linspace(0, pi * hop_length, freq)[..., None]``.

    Example:
        >>> import math, torch
        >>> z = torch.randn(2, 201, 100, dtype=torch.cfloat)
        >>> adv = torch.linspace(0, math.pi * 100, 201)[..., None]
        >>> phase_vocoder(z, 1.25, adv).shape
        torch.Size([2, 201, 80])
    """
    if rate <= 0:
        raise ValueError(f"phase_vocoder: rate must be > 0, got {rate}")
    if rate == 1.0:
        return complex_specgrams
    shape = complex_specgrams.shape
    specs = complex_specgrams.reshape(-1, shape[-2], shape[-1])
    real_dtype = torch.real(specs).dtype
    steps = torch.arange(0, specs.shape[-1], rate, device=specs.device, dtype=real_dtype)
    alphas = steps % 1.0
    phase_0 = specs[..., :1].angle()
    specs = torch.nn.functional.pad(specs, [0, 2])
    spec_0 = specs.index_select(-1, steps.long())
    spec_1 = specs.index_select(-1, (steps + 1).long())
    phase = spec_1.angle() - spec_0.angle() - phase_advance
    phase = phase - 2 * math.pi * torch.round(phase / (2 * math.pi)) + phase_advance
    phase = torch.cumsum(torch.cat([phase_0, phase[..., :-1]], dim=-1), -1)
    mag = alphas * spec_1.abs() + (1 - alphas) * spec_0.abs()
    stretched = torch.polar(mag, phase)
    return stretched.reshape(shape[:-2] + stretched.shape[1:])
