"""IIR filters, as torchaudio's: ``lfilter``, ``filtfilt`` and the biquads of the Audio EQ Cookbook.

``lfilter`` runs the operator ``torch.ops.trivium_audio.lfilter_core``: on the CPU a
native kernel (``csrc/lfilter.cpp``: the recursion sample by sample in float64, the
rows in parallel, the GIL released), on other devices the torch implementation below,
which runs the recursion as matrix products over blocks of samples: inside a block,
the output is the input times the filter's impulse response (a lower-triangular
Toeplitz matrix), plus what the last ``order`` outputs of the previous block ring into
it; only that small state goes from block to block. Both are exact, batched over
channels and filters, and differentiable with respect to the waveform and the
coefficients: the gradient of an IIR filter is the same filter run backwards in time
(torchaudio's design), so the backward pass calls the operator too.

Example:
    >>> import torch
    >>> x = torch.tensor([1.0, 0.0, 0.0, 0.0])
    >>> lfilter(x, torch.tensor([1.0, -0.5]), torch.tensor([1.0, 0.0]))
    tensor([1.0000, 0.5000, 0.2500, 0.1250])
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from trivium.audio import _ops  # noqa: F401  (defines the trivium_audio operators)

__all__ = [
    "allpass_biquad",
    "band_biquad",
    "bandpass_biquad",
    "bandreject_biquad",
    "bass_biquad",
    "biquad",
    "deemph_biquad",
    "equalizer_biquad",
    "filtfilt",
    "highpass_biquad",
    "lfilter",
    "lowpass_biquad",
    "riaa_biquad",
    "treble_biquad",
]

_BLOCK = 32  # samples per block (at least the filter's order)


def lfilter(
    waveform: Tensor,
    a_coeffs: Tensor,
    b_coeffs: Tensor,
    clamp: bool = True,
    batching: bool = True,
) -> Tensor:
    """Filter ``waveform [..., time]`` by the difference equation of ``b`` over ``a``.

    ``a_coeffs`` and ``b_coeffs`` are ``[order + 1]`` (one filter), or ``[filters,
    order + 1]``: with ``batching`` filter ``i`` filters channel ``i`` of a ``[...,
    filters, time]`` waveform, without it every filter filters every waveform (the
    output gains a ``filters`` dimension). Both are divided by ``a[0]``; ``clamp``
    clips the output to [-1, 1].

    Example:
        >>> import torch
        >>> x = torch.ones(2, 4)
        >>> a, b = torch.tensor([[1.0, 0.0], [1.0, -1.0]]), torch.tensor([[0.5, 0.0], [1.0, 0.0]])
        >>> lfilter(x, a, b, clamp=False)
        tensor([[0.5000, 0.5000, 0.5000, 0.5000],
                [1.0000, 2.0000, 3.0000, 4.0000]])
    """
    a, b = _coefficients(a_coeffs, b_coeffs, waveform)
    filters = a.shape[0]
    time = waveform.shape[-1]
    if a_coeffs.ndim == 1:
        x = waveform.reshape(-1, 1, time)
    elif batching:
        if waveform.ndim < 2 or waveform.shape[-2] != filters:
            raise ValueError(
                f"lfilter(batching=True): the waveform's dimension -2 ({tuple(waveform.shape)}) "
                f"must be the number of filters, {filters}"
            )
        x = waveform.reshape(-1, filters, time)
    else:
        x = waveform.reshape(-1, 1, time).expand(-1, filters, time)
    out = torch.ops.trivium_audio.lfilter_core(x, a, b)
    if clamp:
        out = out.clamp(-1.0, 1.0)
    if a_coeffs.ndim == 1 or batching:
        return out.reshape(waveform.shape)
    return out.reshape(*waveform.shape[:-1], filters, time)


def _coefficients(a_coeffs: Tensor, b_coeffs: Tensor, like: Tensor) -> tuple[Tensor, Tensor]:
    """``[filters, taps]`` coefficients in the waveform's dtype and device."""
    a = torch.as_tensor(a_coeffs).to(like)
    b = torch.as_tensor(b_coeffs).to(like)
    if a.shape != b.shape or a.ndim not in (1, 2) or a.shape[-1] < 1:
        raise ValueError(
            "a_coeffs and b_coeffs need one shape, [order + 1] or [filters, order + 1], got "
            f"{tuple(a.shape)} and {tuple(b.shape)}"
        )
    return a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])


# -- the operator: its torch implementation, fake kernel and gradient ---------------------


def _check_core(waveform: Tensor, a_coeffs: Tensor, b_coeffs: Tensor) -> None:
    torch._check(
        waveform.dim() == 3,
        lambda: f"lfilter_core: waveform must be [batch, filters, time], got {waveform.shape}",
    )
    torch._check(
        a_coeffs.dim() == 2 and a_coeffs.shape == b_coeffs.shape,
        lambda: (
            f"lfilter_core: a_coeffs and b_coeffs must be one shape [filters, taps], got "
            f"{a_coeffs.shape} and {b_coeffs.shape}"
        ),
    )
    torch._check(
        a_coeffs.shape[0] == waveform.shape[1],
        lambda: f"lfilter_core: {waveform.shape[1]} rows per item but {a_coeffs.shape[0]} filters",
    )


def _lfilter_torch(waveform: Tensor, a_coeffs: Tensor, b_coeffs: Tensor) -> Tensor:
    """The operator on any device: an FIR convolution, then the all-pole blocks."""
    _check_core(waveform, a_coeffs, b_coeffs)
    a, b = (c.to(waveform) for c in (a_coeffs, b_coeffs))
    first = a[:, :1]
    a, b = a / first, b / first
    filters, taps = a.shape
    x = F.pad(waveform, (taps - 1, 0))
    fir = F.conv1d(x, b.flip(-1).unsqueeze(1), groups=filters)
    # In float64: poles near the unit circle (a 38 Hz high-pass at 48 kHz) make the
    # block products cancel, which float32 cannot afford; the sample loop can.
    wide = torch.float64 if fir.dtype in (torch.float16, torch.bfloat16, torch.float32) else None
    return _all_pole(fir.to(wide), a.to(wide)).to(fir.dtype) if wide else _all_pole(fir, a)


torch.library.impl("trivium_audio::lfilter_core", "CompositeExplicitAutograd", _lfilter_torch)


@torch.library.register_fake("trivium_audio::lfilter_core")
def _(waveform: Tensor, a_coeffs: Tensor, b_coeffs: Tensor) -> Tensor:
    _check_core(waveform, a_coeffs, b_coeffs)
    return waveform.new_empty(waveform.shape)


def _lfilter_setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs, output)


def _lfilter_backward(ctx, grad: Tensor):
    """``A y = B x`` (``A``, ``B`` the Toeplitz matrices of ``a``, ``b``): ``v = A^-T g`` is the
    filter ``1 / A`` run backwards over ``g``, ``dx = B^T v`` the filter ``B`` run
    backwards over ``v``, ``da[k] = -sum v[n] y[n - k]`` and ``db[k] = sum v[n] x[n - k]``."""
    x, a, b, y = ctx.saved_tensors
    unit = torch.zeros_like(a)
    unit[:, 0] = 1.0
    core = torch.ops.trivium_audio.lfilter_core
    v = core(grad.flip(-1), a, unit).flip(-1)
    dx = core(v.flip(-1), unit, b).flip(-1) if ctx.needs_input_grad[0] else None
    da = -_lag_products(v, y, a.shape[1]).to(a.dtype) if ctx.needs_input_grad[1] else None
    db = _lag_products(v, x, b.shape[1]).to(b.dtype) if ctx.needs_input_grad[2] else None
    return dx, da, db


def _lag_products(v: Tensor, s: Tensor, taps: int) -> Tensor:
    """``[filters, taps]``: ``sum over items and n of v[:, f, n] * s[:, f, n - k]``."""
    time = s.shape[-1]
    return torch.stack([(v[..., k:] * s[..., : time - k]).sum((0, 2)) for k in range(taps)], dim=-1)


torch.library.register_autograd(
    "trivium_audio::lfilter_core", _lfilter_backward, setup_context=_lfilter_setup
)


def _all_pole(x: Tensor, a: Tensor) -> Tensor:
    """``y[n] = x[n] - sum_{k>=1} a[k] y[n-k]`` for ``x [batch, filters, time]`` (``a[:, 0]`` 1)."""
    batch, filters, time = x.shape
    order = a.shape[-1] - 1
    if order == 0:
        return x
    size = max(_BLOCK, order)
    blocks = -(-time // size)
    impulse = _impulse_response(a, size)  # [filters, size]
    steps = torch.arange(size, device=x.device)
    lag = steps[:, None] - steps[None, :]
    toeplitz = torch.where(lag >= 0, impulse[:, lag.clamp(min=0)], 0.0)  # [filters, size, size]
    # What output j samples before the block (j = 1..order) rings into it: the
    # impulse response driven by -a[k] at sample k - j of the block.
    drive = torch.zeros(filters, size, order, device=x.device, dtype=x.dtype)
    for j in range(1, order + 1):
        drive[:, : order - j + 1, j - 1] = -a[:, j:]
    ring = toeplitz @ drive  # [filters, size, order]
    padded = F.pad(x, (0, blocks * size - time)).reshape(batch, filters, blocks, size)
    local = torch.einsum("fst,bfkt->bfks", toeplitz, padded)
    # The state after block k (its last outputs, newest first) is its own part plus
    # the state before it carried through: s[k] = c[k] + M s[k - 1], a linear scan.
    carry = ring[:, -order:].flip(1)  # M: [filters, order, order]
    after = _scan(local[:, :, :, -order:].flip(-1), carry)
    before = F.pad(after[:, :, :-1], (0, 0, 1, 0))  # [batch, filters, blocks, order]
    out = local + torch.einsum("fsj,bfkj->bfks", ring, before)
    return out.reshape(batch, filters, blocks * size)[..., :time]


def _scan(c: Tensor, m: Tensor) -> Tensor:
    """``s[k] = c[k] + m s[k - 1]`` (``s[-1] = 0``) along dimension 2 of ``c [batch, filters,
    blocks, order]``, in log2(blocks) doubling steps (Hillis and Steele's scan)."""
    s, power, step = c, m, 1
    while step < c.shape[2]:
        carried = torch.einsum("fij,bfkj->bfki", power, s[:, :, :-step])
        s = torch.cat([s[:, :, :step], s[:, :, step:] + carried], dim=2)
        power, step = power @ power, step * 2
    return s


def _impulse_response(a: Tensor, size: int) -> Tensor:
    """The first ``size`` samples of ``1 / A(z)``'s impulse response, per filter."""
    order = a.shape[-1] - 1
    h = [torch.ones_like(a[:, 0])]
    for n in range(1, size):
        terms = [a[:, k] * h[n - k] for k in range(1, min(n, order) + 1)]
        h.append(-torch.stack(terms).sum(0))
    return torch.stack(h, dim=-1)


def filtfilt(waveform: Tensor, a_coeffs: Tensor, b_coeffs: Tensor, clamp: bool = True) -> Tensor:
    """:func:`lfilter` forwards, then backwards: zero phase, the magnitude response squared.

    Example:
        >>> import torch
        >>> x = torch.zeros(101); x[50] = 1.0
        >>> y = filtfilt(x, torch.tensor([1.0, -0.5]), torch.tensor([0.5, 0.0]))
        >>> int(y.argmax())  # no delay: the peak stays at the impulse
        50
    """
    forward = lfilter(waveform, a_coeffs, b_coeffs, clamp=False)
    return lfilter(forward.flip(-1), a_coeffs, b_coeffs, clamp=clamp).flip(-1)


def biquad(
    waveform: Tensor, b0: float, b1: float, b2: float, a0: float, a1: float, a2: float
) -> Tensor:
    """The second-order filter ``(b0 + b1 z^-1 + b2 z^-2) / (a0 + a1 z^-1 + a2 z^-2)``.

    Example:
        >>> import torch
        >>> biquad(torch.tensor([1.0, 0.0, 0.0]), 0.5, 0.0, 0.0, 1.0, -0.5, 0.0)
        tensor([0.5000, 0.2500, 0.1250])
    """
    like = dict(device=waveform.device, dtype=waveform.dtype)
    a = torch.stack([torch.as_tensor(c, **like) for c in (a0, a1, a2)])
    b = torch.stack([torch.as_tensor(c, **like) for c in (b0, b1, b2)])
    return lfilter(waveform, a, b)


def _cookbook(sample_rate: int, freq: float, Q: float) -> tuple[float, float]:
    """``(cos w0, alpha)`` of the Audio EQ Cookbook for a centre or cutoff ``freq``."""
    w0 = 2 * math.pi * freq / sample_rate
    return math.cos(w0), math.sin(w0) / 2 / Q


def lowpass_biquad(
    waveform: Tensor, sample_rate: int, cutoff_freq: float, Q: float = 0.707
) -> Tensor:
    """Two-pole low-pass filter at ``cutoff_freq`` (Hz).

    Example:
        >>> import math, torch
        >>> t = torch.arange(8000) / 8000
        >>> high = torch.sin(2 * math.pi * 3000 * t) * 0.5
        >>> bool(lowpass_biquad(high, 8000, 300.0).abs()[1000:].max() < 0.05)
        True
    """
    cos, alpha = _cookbook(sample_rate, cutoff_freq, Q)
    return biquad(waveform, (1 - cos) / 2, 1 - cos, (1 - cos) / 2, 1 + alpha, -2 * cos, 1 - alpha)


def highpass_biquad(
    waveform: Tensor, sample_rate: int, cutoff_freq: float, Q: float = 0.707
) -> Tensor:
    """Two-pole high-pass filter at ``cutoff_freq`` (Hz).

    Example:
        >>> import torch
        >>> bool(highpass_biquad(torch.full((4000,), 0.5), 8000, 100.0)[-100:].abs().max() < 1e-3)
        True
    """
    cos, alpha = _cookbook(sample_rate, cutoff_freq, Q)
    return biquad(waveform, (1 + cos) / 2, -1 - cos, (1 + cos) / 2, 1 + alpha, -2 * cos, 1 - alpha)


def allpass_biquad(
    waveform: Tensor, sample_rate: int, central_freq: float, Q: float = 0.707
) -> Tensor:
    """Two-pole all-pass filter: unit gain, the phase turning around ``central_freq``.

    Example:
        >>> import torch
        >>> x = torch.randn(1, 8000) * 0.1
        >>> y = allpass_biquad(x, 8000, 1000.0)
        >>> bool(torch.isclose(y.pow(2).sum(), x.pow(2).sum(), rtol=0.05))
        True
    """
    cos, alpha = _cookbook(sample_rate, central_freq, Q)
    return biquad(waveform, 1 - alpha, -2 * cos, 1 + alpha, 1 + alpha, -2 * cos, 1 - alpha)


def bandpass_biquad(
    waveform: Tensor,
    sample_rate: int,
    central_freq: float,
    Q: float = 0.707,
    const_skirt_gain: bool = False,
) -> Tensor:
    """Two-pole band-pass filter around ``central_freq``: constant 0 dB peak gain, or with
    ``const_skirt_gain`` a constant skirt gain (peak gain ``Q``).

    Example:
        >>> import torch
        >>> bandpass_biquad(torch.zeros(1, 5), 8000, 1000.0).shape
        torch.Size([1, 5])
    """
    cos, alpha = _cookbook(sample_rate, central_freq, Q)
    gain = alpha * Q if const_skirt_gain else alpha  # sin(w0) / 2: the peak gain is Q
    return biquad(waveform, gain, 0.0, -gain, 1 + alpha, -2 * cos, 1 - alpha)


def bandreject_biquad(
    waveform: Tensor, sample_rate: int, central_freq: float, Q: float = 0.707
) -> Tensor:
    """Two-pole band-reject (notch) filter at ``central_freq``.

    Example:
        >>> import math, torch
        >>> t = torch.arange(8000) / 8000
        >>> hum = torch.sin(2 * math.pi * 1000 * t) * 0.5
        >>> bool(bandreject_biquad(hum, 8000, 1000.0, Q=2.0).abs()[4000:].max() < 0.01)
        True
    """
    cos, alpha = _cookbook(sample_rate, central_freq, Q)
    return biquad(waveform, 1.0, -2 * cos, 1.0, 1 + alpha, -2 * cos, 1 - alpha)


def equalizer_biquad(
    waveform: Tensor, sample_rate: int, center_freq: float, gain: float, Q: float = 0.707
) -> Tensor:
    """Peaking equaliser: ``gain`` dB at ``center_freq``, bandwidth set by ``Q``.

    Example:
        >>> import torch
        >>> equalizer_biquad(torch.zeros(3), 8000, 1000.0, 6.0).tolist()
        [0.0, 0.0, 0.0]
    """
    cos, alpha = _cookbook(sample_rate, center_freq, Q)
    A = math.exp(gain / 40.0 * math.log(10))
    return biquad(
        waveform, 1 + alpha * A, -2 * cos, 1 - alpha * A, 1 + alpha / A, -2 * cos, 1 - alpha / A
    )


def _shelf(
    waveform: Tensor,
    sample_rate: int,
    gain: float,
    freq: float,
    Q: float,
    low: bool,
    alpha: float | None = None,
) -> Tensor:
    """The Cookbook's low (``low``) or high shelving filter: ``gain`` dB below or above ``freq``.

    ``alpha`` replaces the one ``Q`` gives (a shelf given by its slope).
    """
    cos, q_alpha = _cookbook(sample_rate, freq, Q)
    alpha = q_alpha if alpha is None else alpha
    A = math.exp(gain / 40 * math.log(10))
    s = 1 if low else -1  # the high shelf is the low one with cos's terms negated
    root = 2 * math.sqrt(A) * alpha
    b0 = A * ((A + 1) - s * (A - 1) * cos + root)
    b1 = 2 * s * A * ((A - 1) - s * (A + 1) * cos)
    b2 = A * ((A + 1) - s * (A - 1) * cos - root)
    a0 = (A + 1) + s * (A - 1) * cos + root
    a1 = -2 * s * ((A - 1) + s * (A + 1) * cos)
    a2 = (A + 1) + s * (A - 1) * cos - root
    return biquad(waveform, b0, b1, b2, a0, a1, a2)


def bass_biquad(
    waveform: Tensor, sample_rate: int, gain: float, central_freq: float = 100, Q: float = 0.707
) -> Tensor:
    """Boost (or cut, ``gain < 0``) the bass below ``central_freq`` by ``gain`` dB.

    Example:
        >>> import torch
        >>> y = bass_biquad(torch.full((8000,), 0.1), 8000, 6.0)
        >>> round(float(y[-1] / 0.1), 2)  # DC gains 6 dB
        2.0
    """
    return _shelf(waveform, sample_rate, gain, central_freq, Q, low=True)


def treble_biquad(
    waveform: Tensor, sample_rate: int, gain: float, central_freq: float = 3000, Q: float = 0.707
) -> Tensor:
    """Boost (or cut) the treble above ``central_freq`` by ``gain`` dB.

    Example:
        >>> import torch
        >>> y = treble_biquad(torch.full((8000,), 0.1), 8000, 6.0)
        >>> round(float(y[-1] / 0.1), 2)  # DC is left alone
        1.0
    """
    return _shelf(waveform, sample_rate, gain, central_freq, Q, low=False)


def deemph_biquad(waveform: Tensor, sample_rate: int) -> Tensor:
    """ISO 908 CD de-emphasis (a treble shelf of about -9.5 dB), at 44.1 or 48 kHz.

    Example:
        >>> import torch
        >>> deemph_biquad(torch.zeros(1, 4), 44100).shape
        torch.Size([1, 4])
    """
    shelves = {44100: (5283.0, 0.4845, -9.477), 48000: (5356.0, 0.479, -9.62)}
    if sample_rate not in shelves:
        raise ValueError(f"sample_rate must be 44100 (audio CD) or 48000 (DAT), got {sample_rate}")
    freq, slope, gain = shelves[sample_rate]
    A = math.exp(gain / 40 * math.log(10))
    w0 = 2 * math.pi * freq / sample_rate
    alpha = math.sin(w0) / 2 * math.sqrt((A + 1 / A) * (1 / slope - 1) + 2)
    return _shelf(waveform, sample_rate, gain, freq, 0.707, low=False, alpha=alpha)


def band_biquad(
    waveform: Tensor, sample_rate: int, central_freq: float, Q: float = 0.707, noise: bool = False
) -> Tensor:
    """SoX's ``band`` filter: a resonance at ``central_freq`` of bandwidth ``central_freq / Q``.

    ``noise`` scales it for unpitched audio (noise) rather than tones.

    Example:
        >>> import torch
        >>> band_biquad(torch.zeros(4), 8000, 1000.0).tolist()
        [0.0, 0.0, 0.0, 0.0]
    """
    w0 = 2 * math.pi * central_freq / sample_rate
    bandwidth = central_freq / Q
    a2 = math.exp(-2 * math.pi * bandwidth / sample_rate)
    a1 = -4 * a2 / (1 + a2) * math.cos(w0)
    b0 = math.sqrt(1 - a1 * a1 / (4 * a2)) * (1 - a2)
    if noise:
        b0 *= math.sqrt(((1 + a2) ** 2 - a1 * a1) * (1 - a2) / (1 + a2)) / b0
    return biquad(waveform, b0, 0.0, 0.0, 1.0, a1, a2)


# SoX's RIAA poles and zeros, per sample rate.
_RIAA = {
    44100: ((-0.2014898, 0.9233820), (0.7083149, 0.9924091)),
    48000: ((-0.1766069, 0.9321590), (0.7396325, 0.9931330)),
    88200: ((-0.1168735, 0.9648312), (0.8590646, 0.9964002)),
    96000: ((-0.1141486, 0.9676817), (0.8699137, 0.9966946)),
}


def riaa_biquad(waveform: Tensor, sample_rate: int) -> Tensor:
    """RIAA vinyl playback equalisation (SoX's ``riaa``), 0 dB at 1 kHz.

    Example:
        >>> import torch
        >>> riaa_biquad(torch.zeros(1, 4), 44100).shape
        torch.Size([1, 4])
    """
    if sample_rate not in _RIAA:
        raise ValueError(f"sample_rate must be one of {sorted(_RIAA)}, got {sample_rate}")
    (z0, z1), (p0, p1) = _RIAA[sample_rate]
    b = (1.0, -(z0 + z1), z0 * z1)
    a = (1.0, -(p0 + p1), p0 * p1)
    w = 2 * math.pi * 1000 / sample_rate  # the gain at 1 kHz, |B / A| at e^(jw)
    at_1k = abs(sum(c * complex(math.cos(k * w), -math.sin(k * w)) for k, c in enumerate(b)))
    at_1k /= abs(sum(c * complex(math.cos(k * w), -math.sin(k * w)) for k, c in enumerate(a)))
    b = tuple(c / at_1k for c in b)
    return biquad(waveform, *b, *a)
