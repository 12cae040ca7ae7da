"""SoX's dither, flanger, phaser and vad against torchaudio.functional / transforms.

torchaudio is the reference (its pure-Python functional runs beside a CPU torch). Where
torchaudio draws random numbers (``dither``) both run from the same seed of torch's
default generator; gradients are checked with ``gradcheck`` in float64.
"""

from __future__ import annotations

import pathlib

import pytest
import torch
from peers import require_torchaudio

import trivium.audio as ta
import trivium.audio.functional as F
import trivium.audio.transforms as T

ASSETS = pathlib.Path(__file__).resolve().parent.parent / "assets" / "audio"


@pytest.fixture(scope="module")
def peer():
    return require_torchaudio()


@pytest.fixture(scope="module")
def speech() -> torch.Tensor:
    waveform, _ = ta.load(str(ASSETS / "ds-LDC93S1.wav"))
    return waveform


def noise(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) * 2 - 1


@pytest.mark.parametrize("density_function", ["TPDF", "RPDF", "GPDF"])
@pytest.mark.parametrize("noise_shaping", [False, True])
def test_dither_equals_torchaudio_from_the_same_seed(
    peer, density_function: str, noise_shaping: bool
) -> None:
    x = noise(2, 3, 500) * 0.7
    before = x.clone()
    torch.manual_seed(7)
    ours = F.dither(x, density_function, noise_shaping)
    assert torch.equal(x, before)  # the input is left alone
    torch.manual_seed(7)
    theirs = peer.functional.dither(x.clone(), density_function, noise_shaping)
    if density_function == "GPDF" and noise_shaping:
        # torchaudio sums GPDF's draws into one sample of its input, and its noise shaping
        # then reads that overwritten sample: only the sample after it can differ.
        assert (ours != theirs).sum() <= 1
    else:
        assert torch.equal(ours, theirs)


def test_dither_quantises_to_16_bits_and_takes_a_generator() -> None:
    x = noise(1, 2000) * 0.5
    out = F.dither(x, "RPDF", generator=torch.Generator().manual_seed(1))
    assert torch.equal(out * 2**15, torch.round(out * 2**15))
    assert (out - x).abs().max() < 2e-4
    again = F.dither(x, "RPDF", generator=torch.Generator().manual_seed(1))
    assert torch.equal(out, again)
    assert F.dither(noise(2000)[None], "GPDF").shape == (1, 2000)  # one channel works
    with pytest.raises(ValueError, match="density_function"):
        F.dither(x, "XPDF")


FLANGER_CASES = [
    {},
    {"regen": 50.0, "width": 40.0},
    {"regen": -30.0, "delay": 1.0, "depth": 3.0, "interpolation": "quadratic"},
    {"modulation": "triangular", "phase": 60.0, "speed": 2.0, "regen": 90.0},
    {"delay": 0.0, "depth": 0.5, "regen": 20.0},
]


@pytest.mark.parametrize("kwargs", FLANGER_CASES)
def test_flanger_equals_torchaudio(peer, kwargs: dict) -> None:
    x = noise(2, 3, 2500) * 0.8  # batch of two, three channels of different LFO phase
    ours = F.flanger(x, 8000, **kwargs)
    assert torch.allclose(ours, peer.functional.flanger(x, 8000, **kwargs), atol=1e-6)


def test_flanger_on_speech_and_errors(peer, speech: torch.Tensor) -> None:
    clip = speech[:, :6000]
    ours = F.flanger(clip, 16000, regen=30.0)
    assert torch.allclose(ours, peer.functional.flanger(clip, 16000, regen=30.0), atol=1e-6)
    with pytest.raises(ValueError, match="4 channels"):
        F.flanger(noise(5, 100), 8000)
    with pytest.raises(ValueError, match="modulation"):
        F.flanger(clip, 8000, modulation="square")
    with pytest.raises(ValueError, match="interpolation"):
        F.flanger(clip, 8000, interpolation="cubic")


PHASER_CASES = [
    {},
    {"sinusoidal": False, "decay": 0.9, "delay_ms": 5.0},
    {"delay_ms": 0.3, "mod_speed": 2.0},
    {"gain_in": 1.0, "gain_out": 2.0, "decay": 0.5},
]


@pytest.mark.parametrize("kwargs", PHASER_CASES)
def test_phaser_equals_torchaudio(peer, kwargs: dict) -> None:
    x = noise(2, 2, 3000, seed=3) * 0.8
    ours = F.phaser(x, 8000, **kwargs)
    assert torch.allclose(ours, peer.functional.phaser(x, 8000, **kwargs), atol=1e-6)


def test_phaser_errors() -> None:
    with pytest.raises(ValueError, match="delay_ms"):
        F.phaser(noise(1, 100), 8000, delay_ms=0.01)
    with pytest.raises(ValueError, match="mod_speed"):
        F.phaser(noise(1, 100), 8000, mod_speed=0.0)


def test_flanger_and_phaser_are_differentiable() -> None:
    x = (noise(1, 2, 150) * 0.3).double().requires_grad_()
    assert torch.autograd.gradcheck(lambda v: F.flanger(v, 8000, regen=40.0), (x,), fast_mode=True)
    assert torch.autograd.gradcheck(lambda v: F.phaser(v, 8000, delay_ms=1.0), (x,), fast_mode=True)


def _with_lead(speech: torch.Tensor, seconds: float, seed: int = 0) -> torch.Tensor:
    lead = noise(speech.shape[0], int(16000 * seconds), seed=seed) * 0.002
    return torch.cat([lead, speech], -1)


VAD_CASES = [
    {},
    {"pre_trigger_time": 0.1, "allowed_gap": 0.5, "search_time": 0.5},
    {"trigger_level": 5.0, "trigger_time": 0.1, "boot_time": 0.2},
    {"measure_duration": 0.05, "noise_reduction_amount": 0.5, "measure_freq": 25.0},
    {"hp_filter_freq": 100.0, "lp_filter_freq": 4000.0, "hp_lifter_freq": 200.0},
    {"noise_up_time": 0.2, "noise_down_time": 0.05, "measure_smooth_time": 0.2},
    {"lp_lifter_freq": 1500.0, "trigger_level": 6.0},
]


@pytest.mark.parametrize("kwargs", VAD_CASES)
def test_vad_equals_torchaudio(peer, speech: torch.Tensor, kwargs: dict) -> None:
    x = _with_lead(speech, 0.7)
    ours = F.vad(x, 16000, **kwargs)
    theirs = peer.functional.vad(x, 16000, **kwargs)
    assert ours.shape == theirs.shape and torch.equal(ours, theirs)
    assert 0 < ours.shape[-1] < x.shape[-1]  # something was trimmed, speech kept


def test_vad_channels_trim_together_and_edge_cases(peer, speech: torch.Tensor) -> None:
    stereo = torch.cat([_with_lead(speech, 1.2), _with_lead(speech * 0.5, 1.2, seed=1)])
    mono = stereo[0]
    for x in (stereo, mono):
        assert torch.equal(F.vad(x, 16000), peer.functional.vad(x, 16000))
    silent = torch.zeros(1, 20000)
    assert F.vad(silent, 16000).shape == peer.functional.vad(silent, 16000).shape == (1, 0)
    short = torch.zeros(1, 100)
    kept = F.vad(short, 16000, pre_trigger_time=0.1)
    assert torch.equal(kept, peer.functional.vad(short, 16000, pre_trigger_time=0.1))
    with pytest.raises(ValueError, match="cepstrum"):
        F.vad(mono, 16000, hp_lifter_freq=3000.0)
    with pytest.raises(ValueError, match="sample_rate"):
        F.vad(mono, 0)


def test_vad_transform_equals_torchaudio(peer, speech: torch.Tensor) -> None:
    x = _with_lead(speech, 0.5)
    kwargs = {"trigger_level": 6.0, "pre_trigger_time": 0.05}
    ours = T.Vad(16000, **kwargs)(x)
    assert torch.equal(ours, peer.transforms.Vad(16000, **kwargs)(x))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.cuda
def test_cuda_matches_cpu(speech: torch.Tensor) -> None:
    x = noise(2, 2, 3000) * 0.8
    for fn in (
        lambda v: F.flanger(v, 8000, regen=40.0),
        lambda v: F.phaser(v, 8000),
        lambda v: F.dither(v, "TPDF", True),
    ):
        out = fn(x.cuda())
        assert out.device.type == "cuda"
        torch.testing.assert_close(out.cpu(), fn(x), atol=1e-5, rtol=1e-5)
    lead = _with_lead(speech, 0.7)
    assert F.vad(lead.cuda(), 16000).shape == F.vad(lead, 16000).shape
