"""SoX's ``dither``, ``flanger`` and ``phaser`` as torchaudio has them.

``flanger`` and ``phaser`` are delay lines with feedback: sample ``n`` depends on
output ``n - lag(n)``, with a lag that the LFO sets. The lags are known before the
signal is read, so the recursion runs in blocks of samples that only read output
computed before the block (:func:`_blocks`): a few hundred vectorised steps
instead of one per sample, with torchaudio's arithmetic in each.

Example:
    >>> import torch
    >>> phaser(torch.zeros(1, 100), 8000).abs().max().item()
    0.0
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

__all__ = ["DENSITY_FUNCTIONS", "dither", "flanger", "phaser"]

DENSITY_FUNCTIONS = ("TPDF", "RPDF", "GPDF")
_GPDF_TERMS = 6


def _draw(high: int, generator: torch.Generator | None) -> int:
    """``randint(high)`` as torchaudio draws it; 0 without a draw when ``high`` is 0."""
    if high <= 0:
        return 0
    return int(torch.randint(high, (1,), generator=generator).item())


def _dither_offset(
    flat: Tensor, density_function: str, generator: torch.Generator | None
) -> Tensor:
    """What torchaudio adds to the scaled ``[channels, time]`` signal before rounding.

    TPDF adds a Bartlett window over time; RPDF one sample of the input minus 0.5;
    GPDF the sum of seven samples drawn at random (torchaudio accumulates them into
    the first drawn sample itself, so a later draw of that sample reads the running
    sum: reproduced here, the input left unchanged).
    """
    channels, time = flat.shape[0] - 1, flat.shape[1] - 1
    first = (_draw(channels, generator), _draw(time, generator))
    if density_function == "RPDF":
        return flat[first] - 0.5
    if density_function == "GPDF":
        total = flat[first]
        for _ in range(_GPDF_TERMS):
            index = (_draw(channels, generator), _draw(time, generator))
            total = total + (total if index == first else flat[index])
        return total
    return torch.bartlett_window(time + 1, dtype=flat.dtype, device=flat.device)


def dither(
    waveform: Tensor,
    density_function: str = "TPDF",
    noise_shaping: bool = False,
    *,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Quantise to 16 bits with dither, as ``torchaudio.functional.dither``.

    The signal is scaled by ``2**15 - 2``, offset by the density function's term,
    rounded and divided by ``2**15``. As in torchaudio, ``"TPDF"`` adds a triangular
    (Bartlett) window over time, ``"RPDF"`` a sample of the input drawn at random minus
    0.5 and ``"GPDF"`` the sum of seven samples drawn at random; ``noise_shaping`` adds
    each sample's quantisation error to the next sample.

    Args:
        waveform: audio ``[..., time]``.
        density_function: ``"TPDF"``, ``"RPDF"`` or ``"GPDF"``.
        noise_shaping: feed the quantisation error of sample ``n - 1`` into sample ``n``.
        generator: the source of the random draws (torch's default generator when None,
            so that a seed gives torchaudio's result).

    Returns:
        The dithered waveform, the shape of ``waveform``.

    Example:
        >>> import torch
        >>> dither(torch.tensor([[0.0, 0.25, 0.5]]), "TPDF")
        tensor([[0.0000, 0.2500, 0.5000]])
    """
    if density_function not in DENSITY_FUNCTIONS:
        raise ValueError(
            f"density_function must be one of {DENSITY_FUNCTIONS}, got {density_function!r}"
        )
    if waveform.ndim == 0 or waveform.numel() == 0:
        raise ValueError(f"waveform must be a non-empty [..., time] tensor, got {waveform.shape}")
    flat = waveform.reshape(-1, waveform.shape[-1])
    offset = _dither_offset(flat, density_function, generator)
    scaled = flat * (2**15 - 2) + offset
    dithered = (torch.round(scaled) / 2**15).reshape(waveform.shape)
    if not noise_shaping:
        return dithered
    error = dithered - waveform
    return dithered + torch.nn.functional.pad(error[..., :-1], (1, 0))


def _wave_table(
    kind: str, size: int, low: float, high: float, phase: float, as_int: bool
) -> np.ndarray:
    """SoX's ``lsx_generate_wave_table``: a sine or triangle from ``low`` to ``high``."""
    offset = int(phase / math.pi / 2 * size + 0.5)
    point = (np.arange(size, dtype=np.int64) + offset) % size
    if kind == "sine":
        d = (np.sin(point / size * 2 * math.pi) + 1) / 2
    else:
        d = point * 2 / size
        quarter = (4 * point) // size
        d = np.choose(quarter, [d + 0.5, 1.5 - d, 1.5 - d, d - 1.5])
    d = d * (high - low) + low
    if as_int:
        return np.where(d < 0, d - 0.5, d + 0.5).astype(np.int32)
    return d.astype(np.float32)


def _blocks(last_read: np.ndarray) -> list[tuple[int, int]]:
    """Runs ``[start, stop)`` of steps in which every step reads only outputs before ``start``.

    ``last_read[n]`` is the latest output index step ``n`` reads (``< n``).
    """
    blocks, start, n, length = [], 0, 0, len(last_read)
    while start < length:
        n = start + 1
        while n < length and last_read[n] < start:
            n += 1
        blocks.append((start, n))
        start = n
    return blocks


def _check_range(name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")


def phaser(
    waveform: Tensor,
    sample_rate: int,
    gain_in: float = 0.4,
    gain_out: float = 0.74,
    delay_ms: float = 3.0,
    decay: float = 0.4,
    mod_speed: float = 0.5,
    sinusoidal: bool = True,
) -> Tensor:
    """SoX's phaser, as ``torchaudio.functional.phaser``.

    ``y[n] = gain_in * x[n] + decay * y[n - lag(n)]``, the lag swept between 1 and
    ``delay_ms`` by a sine or triangle LFO of ``mod_speed`` Hz; the output is
    ``gain_out * y`` clamped to [-1, 1]. Differentiable in ``waveform``.

    Args:
        waveform: audio ``[..., time]``.
        sample_rate: its sample rate in Hz.
        gain_in: input gain (0 to 1).
        gain_out: output gain (0 to 1e9).
        delay_ms: the longest delay in milliseconds (0 to 5).
        decay: the feedback gain (0 to 0.99).
        mod_speed: the LFO's frequency in Hz (0.1 to 2).
        sinusoidal: a sine LFO (True) or a triangle (False).

    Returns:
        The phased waveform, the shape of ``waveform``.

    Example:
        >>> import torch
        >>> phaser(torch.ones(1, 4) * 0.5, 8000, delay_ms=0.5)
        tensor([[0.1480, 0.2072, 0.2309, 0.2404]])
    """
    delay_len = int(delay_ms * 0.001 * sample_rate + 0.5)
    if delay_len < 1:
        raise ValueError(
            f"delay_ms * sample_rate must give a delay of at least one sample, got "
            f"delay_ms={delay_ms} at sample_rate={sample_rate}"
        )
    if mod_speed <= 0:
        raise ValueError(f"mod_speed must be > 0, got {mod_speed}")
    mod_len = int(sample_rate / mod_speed + 0.5)
    kind = "sine" if sinusoidal else "triangle"
    mod = _wave_table(kind, mod_len, 1.0, float(delay_len), math.pi / 2, as_int=True)
    length = waveform.shape[-1]
    # The ring buffer read at (n + mod) % delay_len was written at step n - lag.
    steps = np.arange(length)
    lag = 1 + (-mod[steps % mod_len].astype(np.int64)) % delay_len
    source = steps - lag
    flat = waveform.reshape(-1, length) * gain_in
    out = torch.zeros_like(flat)
    for start, stop in _blocks(source):
        reads = torch.from_numpy(source[start:stop]).to(flat.device)
        fed = out[:, reads.clamp(min=0)] * decay * (reads >= 0)
        out[:, start:stop] = flat[:, start:stop] + fed
    return (out * gain_out).clamp(-1, 1).reshape(waveform.shape)


def _check_flanger(waveform: Tensor, modulation: str, interpolation: str) -> None:
    if modulation not in ("sinusoidal", "triangular"):
        raise ValueError(f"modulation must be 'sinusoidal' or 'triangular', got {modulation!r}")
    if interpolation not in ("linear", "quadratic"):
        raise ValueError(f"interpolation must be 'linear' or 'quadratic', got {interpolation!r}")
    if waveform.ndim < 2 or waveform.shape[-2] > 4:
        raise ValueError(
            f"waveform must be [..., channels, time] with at most 4 channels, got "
            f"{tuple(waveform.shape)}"
        )


def _flanger_taps(
    sample_rate: int, delay: float, depth: float, speed: float, phase: float, channels: int,
    triangular: bool, length: int,
) -> tuple[np.ndarray, np.ndarray, int]:  # fmt: skip
    """Per channel and step, the whole delay (samples back) and its fraction; the ring length."""
    ring = int((delay + depth) / 1000 * sample_rate + 0.5) + 2
    lfo_len = int(sample_rate / speed)
    table_min = math.floor(delay / 1000 * sample_rate + 0.5)
    kind = "triangle" if triangular else "sine"
    lfo = _wave_table(kind, lfo_len, float(table_min), ring - 2.0, 3 * math.pi / 2, as_int=False)
    shift = (np.arange(channels) * lfo_len * (phase / 100) + 0.5).astype(np.int64)
    table = lfo[(np.arange(length)[None, :] + shift[:, None]) % lfo_len]
    whole = np.floor(table)
    return whole.astype(np.int64), (table - whole).astype(np.float32), ring


def flanger(
    waveform: Tensor,
    sample_rate: int,
    delay: float = 0.0,
    depth: float = 2.0,
    regen: float = 0.0,
    width: float = 71.0,
    speed: float = 0.5,
    phase: float = 25.0,
    modulation: str = "sinusoidal",
    interpolation: str = "linear",
) -> Tensor:
    """SoX's flanger, as ``torchaudio.functional.flanger``.

    Each channel is mixed with a copy delayed by ``delay`` to ``delay + depth`` ms,
    swept by an LFO of ``speed`` Hz (channel ``c`` shifted by ``c * phase`` percent of
    its period), read between samples by linear or quadratic interpolation; ``regen``
    percent of the delayed signal is fed back into the delay line. The result is
    clamped to [-1, 1]. Differentiable in ``waveform``.

    Args:
        waveform: audio ``[..., channels, time]``, at most 4 channels.
        sample_rate: its sample rate in Hz.
        delay: the base delay in ms (0 to 30).
        depth: the swept delay in ms (0 to 10).
        regen: the feedback in percent (-95 to 95).
        width: the delayed signal's gain in percent (0 to 100).
        speed: the LFO's frequency in Hz (0.1 to 10).
        phase: the LFO's shift from channel to channel in percent (0 to 100).
        modulation: ``"sinusoidal"`` or ``"triangular"``.
        interpolation: ``"linear"`` or ``"quadratic"``.

    Returns:
        The flanged waveform, the shape of ``waveform``.

    Example:
        >>> import torch
        >>> flanger(torch.zeros(2, 1, 50), 8000).shape
        torch.Size([2, 1, 50])
    """
    _check_flanger(waveform, modulation, interpolation)
    _check_range("speed", speed, 1e-9, math.inf)
    channels, length = waveform.shape[-2], waveform.shape[-1]
    whole, frac, ring = _flanger_taps(
        sample_rate, delay, depth, speed, phase, channels, modulation == "triangular", length
    )
    feedback = regen / 100
    delay_gain = width / 100
    in_gain = 1.0 / (1 + delay_gain)
    delay_gain = delay_gain / (1 + delay_gain) * (1 - abs(feedback))
    taps = 3 if interpolation == "quadratic" else 2
    # Tap k of step n reads the delay line written at step n - (whole + k) mod ring.
    back = (whole[:, :, None] + np.arange(taps)) % ring
    reads = np.arange(length)[None, :, None] - back  # [channels, time, taps]
    x = waveform.reshape(-1, channels, length)
    frac_t = torch.from_numpy(frac).to(device=x.device, dtype=x.dtype)
    reads_t = torch.from_numpy(reads).to(x.device)
    rows = torch.arange(channels, device=x.device)[:, None, None]

    def delayed(line: Tensor, start: int, stop: int) -> Tensor:
        index = reads_t[:, start:stop]
        got = line[:, rows, index.clamp(min=0)] * (index >= 0)
        return _interpolate(got, frac_t[:, start:stop])

    line = x
    if feedback != 0:
        # Line sample m is x[m] + feedback * wet[m - 1], and wet[m - 1] reads the line at
        # reads[:, m - 1]: all before m.
        line = x.clone()
        last_read = np.concatenate([[-1], reads[:, :-1].max(axis=(0, 2))])
        for start, stop in _blocks(last_read):
            lo = max(start, 1)
            if lo < stop:
                fed = delayed(line, lo - 1, stop - 1) * feedback
                line[..., lo:stop] = x[..., lo:stop] + fed
    wet = delayed(line, 0, length)
    out = x * in_gain + wet * delay_gain
    return out.clamp(-1, 1).reshape(waveform.shape)


def _interpolate(taps: Tensor, frac: Tensor) -> Tensor:
    """SoX's linear (two taps) or quadratic (three taps) read between samples."""
    d0, d1 = taps[..., 0], taps[..., 1]
    if taps.shape[-1] == 2:
        return d0 + (d1 - d0) * frac
    d2 = taps[..., 2] - d0
    d1 = d1 - d0
    a = d2 * 0.5 - d1
    b = d1 * 2 - d2 * 0.5
    return d0 + (a * frac + b) * frac
