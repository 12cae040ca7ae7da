"""Resampling: pure tones against their exact resampled values and scipy.signal.resample_poly,
speech against resample_poly, the kernel cache, batching, autograd, compile and CUDA."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import scipy.signal
import soundfile as sf
import torch

import trivium.audio.functional as F
import trivium.audio.transforms as T
from trivium.audio.functional.resampling import _kernel, _plan, _weight, polyphase_weight

AUDIO = Path(__file__).resolve().parents[1] / "assets" / "audio"
EDGE = 300  # output samples ignored at each end (the filter sees zero padding there)
# resampy's "kaiser_best" settings: a long, sharp filter.
KAISER_BEST = {
    "lowpass_filter_width": 64,
    "rolloff": 0.9475937167399596,
    "resampling_method": "sinc_interp_kaiser",
    "beta": 14.769656459379492,
}


def snr_db(estimate: np.ndarray, reference: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(reference**2) / np.sum((estimate - reference) ** 2)))


def tone(freq: float, rate: int, seconds: float = 1.0) -> np.ndarray:
    return np.sin(2 * np.pi * freq * np.arange(int(rate * seconds)) / rate)


def level_db(x: np.ndarray) -> float:
    """Power relative to a full-scale sine."""
    return float(10 * np.log10(np.mean(x**2) / 0.5))


def poly_reference(x: np.ndarray, up: int, down: int) -> np.ndarray:
    """scipy's polyphase resampler with a long Kaiser FIR (its default filter is ~60 dB)."""
    cutoff = 0.9475937167399596 / max(up, down)
    fir = scipy.signal.firwin(2 * 64 * max(up, down) + 1, cutoff, window=("kaiser", 14.77))
    return scipy.signal.resample_poly(x, up, down, window=fir)


@pytest.mark.parametrize("freq", [440.0, 1000.0, 2000.0, 3000.0])
def test_default_keeps_in_band_tones(freq: float) -> None:
    x = torch.from_numpy(tone(freq, 48000))
    y = F.resample(x, 48000, 16000).numpy()
    exact = tone(freq, 16000)
    assert len(y) == 16000
    assert snr_db(y[EDGE:-EDGE], exact[EDGE:-EDGE]) >= 60.0
    ref = scipy.signal.resample_poly(tone(freq, 48000), 1, 3)
    # scipy's own default filter is only ~60 dB accurate, so agreement is a little lower.
    assert snr_db(y[EDGE:-EDGE], ref[EDGE:-EDGE]) >= 55.0


@pytest.mark.parametrize(
    ("freq", "max_level"), [(10000.0, -45.0), (12000.0, -50.0), (20000.0, -80.0)]
)
def test_default_rejects_out_of_band_tones(freq: float, max_level: float) -> None:
    y = F.resample(torch.from_numpy(tone(freq, 48000)), 48000, 16000).numpy()
    assert level_db(y[EDGE:-EDGE]) <= max_level  # measured: -45.3, -55.1, -83.5 dB


@pytest.mark.parametrize(("orig", "new"), [(48000, 16000), (16000, 44100), (44100, 22050)])
def test_kaiser_best_against_exact_tones_and_resample_poly(orig: int, new: int) -> None:
    nyquist = min(orig, new) / 2
    ratio = Fraction(new, orig)
    for freq in (0.1 * nyquist, 0.5 * nyquist, 0.85 * nyquist):
        x = tone(freq, orig)
        y = F.resample(torch.from_numpy(x), orig, new, **KAISER_BEST).numpy()
        exact = tone(freq, new)[: len(y)]
        assert len(y) == -(-len(x) * new // orig)
        assert snr_db(y[EDGE:-EDGE], exact[EDGE:-EDGE]) >= 100.0
        ref = poly_reference(x, ratio.numerator, ratio.denominator)
        assert snr_db(y[EDGE:-EDGE], ref[EDGE : len(y) - EDGE]) >= 60.0
    if new < orig:
        for freq in (1.1 * nyquist, 1.5 * nyquist):
            y = F.resample(torch.from_numpy(tone(freq, orig)), orig, new, **KAISER_BEST).numpy()
            assert level_db(y[EDGE:-EDGE]) <= -120.0


def test_speech_matches_resample_poly() -> None:
    speech, sr = sf.read(AUDIO / "sb-spk1_snt1.wav", dtype="float64")
    assert sr == 16000
    y = F.resample(torch.from_numpy(speech), 16000, 8000, **KAISER_BEST).numpy()
    ref = poly_reference(speech, 1, 2)
    assert snr_db(y[EDGE:-EDGE], ref[EDGE:-EDGE]) >= 60.0
    y32 = T.Resample(16000, 8000, **KAISER_BEST)(torch.from_numpy(speech).float()).numpy()
    assert snr_db(y32[EDGE:-EDGE], ref[EDGE:-EDGE]) >= 60.0


def test_kernel_cached_per_settings_dtype_and_device() -> None:
    _weight.cache_clear()
    x = torch.randn(2, 4800)
    F.resample(x, 48000, 16000)
    F.resample(x, 96000, 32000)  # same reduced pair 3 -> 1
    assert _weight.cache_info().misses == 1 and _weight.cache_info().hits == 1
    F.resample(x.double(), 48000, 16000)
    F.resample(x, 48000, 16000, lowpass_filter_width=8)
    assert _weight.cache_info().misses == 3
    a, _ = F.sinc_resample_kernel(48000, 16000, 16000)
    b, _ = F.sinc_resample_kernel(48000, 16000, 16000)
    assert a is b and _kernel.cache_info().hits >= 1


RATE_PAIRS = (
    (48000, 16000),
    (44100, 16000),
    (16000, 44100),
    (44100, 22050),
    (48000, 44100),
    (44100, 48000),
    (8000, 11025),
    (16000, 8000),
    (8000, 16000),
)


@pytest.mark.parametrize(("orig_freq", "new_freq"), RATE_PAIRS)
@pytest.mark.parametrize(
    "settings",
    [{}, {"resampling_method": "sinc_interp_kaiser", "lowpass_filter_width": 16, "rolloff": 0.9}],
)
def test_polyphase_application_equals_strided_convolution(
    orig_freq: int, new_freq: int, settings: dict
) -> None:
    """The grouped matrix products compute exactly torchaudio's strided convolution.

    They skip the taps outside each output's window, where the sinc is clamped to its
    zero crossing (values of ~1e-23 for Kaiser, not exactly 0): the sums still agree.
    """
    gcd = math.gcd(orig_freq, new_freq)
    orig, new = orig_freq // gcd, new_freq // gcd
    kernel, width = F.sinc_resample_kernel(
        orig_freq, new_freq, gcd, dtype=torch.float64, **settings
    )
    for length in (1, 7, 1000, 4411):
        x = torch.randn(2, 3, length, dtype=torch.float64)
        padded = torch.nn.functional.pad(x.reshape(-1, 1, length), (width, width + orig))
        ref = torch.nn.functional.conv1d(padded, kernel, stride=orig)
        ref = ref.transpose(1, 2).reshape(6, -1)[:, : -(-new * length // orig)]
        out = F.resample(x, orig_freq, new_freq, **settings)
        assert out.shape == (2, 3, ref.shape[-1])
        torch.testing.assert_close(out.reshape(6, -1), ref, rtol=0, atol=1e-12)


def test_weight_holds_every_tap_that_can_be_nonzero() -> None:
    """Each output's window in the grouped weight carries its whole kernel row's support."""
    for orig_freq, new_freq in RATE_PAIRS:
        gcd = math.gcd(orig_freq, new_freq)
        orig, new = orig_freq // gcd, new_freq // gcd
        kernel, width = F.sinc_resample_kernel(orig_freq, new_freq, gcd, dtype=torch.float64)
        weight = polyphase_weight(kernel, orig)
        plan = _plan(orig, new, width)
        # Outside the window only the clamped sinc's rounding residue remains.
        outside = kernel.abs().sum() - weight.abs().sum() * new / plan.outputs
        assert abs(float(outside)) < 1e-12
        assert weight.shape == (plan.groups, plan.size, plan.step)
        assert plan.step <= 64 and plan.size <= plan.span  # a view of the input, no copy
        # Far fewer multiply-adds per output than the kernel's 2 * width + orig taps.
        assert plan.groups * plan.step * plan.size / plan.outputs <= 3 * (2 * width + 1)


def test_empty_and_short_inputs() -> None:
    assert F.resample(torch.zeros(3, 0), 44100, 16000).shape == (3, 0)
    assert F.resample(torch.zeros(0, 441), 44100, 16000).shape == (0, 160)
    assert F.resample(torch.ones(1), 44100, 16000).shape == (1,)


@pytest.mark.parametrize("freq", [440.0, 1000.0, 3000.0])
def test_44k1_to_16k_keeps_in_band_tones_against_soxr(freq: float) -> None:
    soxr = pytest.importorskip("soxr", reason="soxr is the reference resampler here")
    x = tone(freq, 44100)
    y = F.resample(torch.from_numpy(x), 44100, 16000).numpy()
    y32 = T.Resample(44100, 16000)(torch.from_numpy(x).float()).numpy()
    exact = tone(freq, 16000)
    ref = soxr.resample(x, 44100, 16000)  # "HQ": > 130 dB accurate on these tones
    assert len(y) == len(ref) == 16000
    for out in (y, y32):
        assert snr_db(out[EDGE:-EDGE], exact[EDGE:-EDGE]) >= 65.0  # measured 73 / 68 / 65.8
        assert snr_db(out[EDGE:-EDGE], ref[EDGE:-EDGE]) >= 65.0


@pytest.mark.parametrize(
    ("freq", "max_level"), [(10000.0, -45.0), (12000.0, -55.0), (16000.0, -100.0), (20000.0, -84.0)]
)
def test_44k1_to_16k_rejects_out_of_band_tones(freq: float, max_level: float) -> None:
    y = F.resample(torch.from_numpy(tone(freq, 44100)), 44100, 16000).numpy()
    assert level_db(y[EDGE:-EDGE]) <= max_level  # measured -45.3, -55.1, -102.1, -84.5 dB


def test_transform_matches_functional_and_batches() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 2, 4410, generator=g)
    for method in ("sinc_interp_hann", "sinc_interp_kaiser"):
        r = T.Resample(44100, 16000, resampling_method=method, lowpass_filter_width=8, rolloff=0.9)
        out = r(x)
        assert out.shape == (3, 2, 1600)
        ref = F.resample(x, 44100, 16000, 8, 0.9, method)
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(out[1, 1], r(x[1, 1]))
    assert T.Resample(16000, 16000)(x) is x
    assert "kernel" not in T.Resample(2, 1).state_dict()  # not persistent, as torchaudio


def test_argument_errors() -> None:
    x = torch.zeros(10)
    with pytest.raises(ValueError, match="resampling_method"):
        F.resample(x, 2, 1, resampling_method="linear")
    with pytest.raises(ValueError, match="lowpass_filter_width"):
        F.resample(x, 2, 1, lowpass_filter_width=0)
    with pytest.raises(ValueError, match="rolloff"):
        F.resample(x, 2, 1, rolloff=1.5)
    with pytest.raises(ValueError, match="orig_freq"):
        F.resample(x, 0, 1)
    with pytest.raises(TypeError, match="floating"):
        F.resample(torch.zeros(10, dtype=torch.int16), 2, 1)


@pytest.mark.slow  # compiles or runs long; the quick tier keeps smaller checks
def test_gradcheck_and_compile() -> None:
    x = torch.randn(2, 60, dtype=torch.float64, requires_grad=True)
    r = T.Resample(3, 2, dtype=torch.float64)
    assert torch.autograd.gradcheck(r, (x,), fast_mode=True)
    module = T.Resample(48000, 16000)
    inp = torch.randn(2, 1, 2400)
    torch.testing.assert_close(torch.compile(module)(inp), module(inp))


def test_speed_and_speed_perturbation() -> None:
    x = torch.from_numpy(tone(1000.0, 16000)).float().reshape(1, -1)
    y, lengths = F.speed(x, 16000, 1.25, torch.tensor([16000]))
    assert y.shape[-1] == 12800 and lengths.tolist() == [12800]
    # Played 1.25x faster, the 1 kHz tone becomes 1.25 kHz.
    spectrum = np.abs(np.fft.rfft(y[0].numpy()))
    assert abs(np.argmax(spectrum) * 16000 / y.shape[-1] - 1250.0) < 2.0
    sp = T.SpeedPerturbation(16000, [0.9, 1.1, 1.0], generator=torch.Generator().manual_seed(0))
    seen = {sp(x, torch.tensor([16000]))[0].shape[-1] for _ in range(20)}
    assert seen == {17778, 14546, 16000}

    def factors_drawn(seed: int) -> list[int]:
        generator = torch.Generator().manual_seed(seed)
        perturb = T.SpeedPerturbation(16000, [0.9, 1.1], generator=generator)
        return [perturb(x)[0].shape[-1] for _ in range(8)]

    assert factors_drawn(5) == factors_drawn(5)
    assert len(set(factors_drawn(5))) == 2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.cuda
def test_cuda_matches_cpu() -> None:
    x = torch.randn(4, 1, 48000)
    r = T.Resample(48000, 16000)
    gpu = r.to("cuda")(x.cuda())
    assert gpu.device.type == "cuda" and r.kernel.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), T.Resample(48000, 16000)(x), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(
        F.resample(x.cuda(), 16000, 44100).cpu(), F.resample(x, 16000, 44100), rtol=1e-4, atol=1e-5
    )


def test_matches_torchaudio_when_installed() -> None:
    from peers import require_torchaudio

    taf = require_torchaudio().functional
    x = torch.randn(2, 44100)
    for orig, new in ((44100, 16000), (16000, 48000)):
        for method in ("sinc_interp_hann", "sinc_interp_kaiser"):
            torch.testing.assert_close(
                F.resample(x, orig, new, resampling_method=method),
                taf.resample(x, orig, new, resampling_method=method),
                rtol=1e-5,
                atol=5e-5,  # float32 sums in another order, on samples of magnitude up to ~4
            )
