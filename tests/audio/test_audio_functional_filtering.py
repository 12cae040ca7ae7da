"""IIR filters, biquads, convolution, filter banks and edit distance against torchaudio.functional.

torchaudio is the reference (its pure-Python functional runs beside a CPU torch);
the inputs are a real recording (``tests/assets/audio``) and random tensors the
tests make; gradients are checked with ``gradcheck`` in float64.
"""

from __future__ import annotations

import pathlib

import pytest
import torch
from peers import require_torchaudio

import trivium.audio as ta
import trivium.audio.functional as F

ASSETS = pathlib.Path(__file__).resolve().parent.parent / "assets" / "audio"


@pytest.fixture(scope="module")
def taf():
    return require_torchaudio().functional


@pytest.fixture(scope="module")
def speech() -> torch.Tensor:
    waveform, _ = ta.load(str(ASSETS / "ds-LDC93S1.wav"))
    return waveform[:, :20000]


def noise(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) * 2 - 1


@pytest.mark.parametrize("win_length", [3, 5, 9])
@pytest.mark.parametrize("mode", ["replicate", "reflect", "constant"])
def test_compute_deltas(taf, win_length: int, mode: str) -> None:
    spec = noise(2, 3, 20, 50)
    assert torch.allclose(
        F.compute_deltas(spec, win_length, mode),
        taf.compute_deltas(spec, win_length, mode),
        atol=1e-6,
    )


@pytest.mark.parametrize("coeff", [0.5, 0.97, 0.999])
def test_preemphasis_and_deemphasis(taf, speech: torch.Tensor, coeff: float) -> None:
    batch = torch.cat([speech, noise(2, speech.shape[-1]) * 0.3])
    emphasised = F.preemphasis(batch, coeff)
    assert torch.allclose(emphasised, taf.preemphasis(batch, coeff), atol=1e-6)
    ours, theirs = F.deemphasis(emphasised, coeff), taf.deemphasis(emphasised, coeff)
    assert torch.allclose(ours, theirs, atol=1e-4)
    assert torch.allclose(ours, batch.clamp(-1, 1), atol=1e-4)  # the inverse of preemphasis


def test_deemphasis_clamps_and_runs_short_signals(taf) -> None:
    loud = noise(3, 77) * 4
    assert torch.allclose(F.deemphasis(loud, 0.9), taf.deemphasis(loud, 0.9), atol=1e-5)
    assert F.deemphasis(loud, 0.9).abs().max() <= 1


def test_lfilter_is_differentiable_in_the_waveform_and_the_coefficients() -> None:
    x = noise(2, 150).double().requires_grad_()  # several blocks: the state carried too
    a = torch.tensor([1.0, -1.2, 0.5], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.2, 0.1, 0.05], dtype=torch.float64, requires_grad=True)
    filtered = lambda *v: F.lfilter(*v, clamp=False)  # noqa: E731
    assert torch.autograd.gradcheck(filtered, (x, a, b), fast_mode=True)


@pytest.mark.parametrize("amount", [0.0, 30.0, 75.0, 100.0])
def test_contrast(taf, speech: torch.Tensor, amount: float) -> None:
    assert torch.allclose(F.contrast(speech, amount), taf.contrast(speech, amount), atol=1e-6)
    with pytest.raises(ValueError):
        F.contrast(speech, 101.0)


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("norm_vars", [False, True])
@pytest.mark.parametrize(("window", "least", "frames"), [(600, 100, 40), (20, 5, 73), (8, 8, 8)])
def test_sliding_window_cmn(
    taf, center: bool, norm_vars: bool, window: int, least: int, frames: int
) -> None:
    spec = noise(2, frames, 13) + 3
    ours = F.sliding_window_cmn(spec, window, least, center, norm_vars)
    theirs = taf.sliding_window_cmn(spec, window, least, center, norm_vars)
    assert torch.allclose(ours, theirs, atol=1e-4)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize(
    ("x_shape", "y_shape"), [((2, 3, 50), (2, 3, 7)), ((1, 9), (4, 30)), ((3, 1, 5), (1, 2, 12))]
)
def test_convolve_and_fftconvolve(taf, mode: str, x_shape: tuple, y_shape: tuple) -> None:
    x, y = noise(*x_shape, seed=1), noise(*y_shape, seed=2)
    expected = taf.convolve(x, y, mode)
    assert torch.allclose(F.convolve(x, y, mode), expected, atol=1e-5)
    assert torch.allclose(F.fftconvolve(x, y, mode), taf.fftconvolve(x, y, mode), atol=1e-5)
    assert torch.allclose(F.fftconvolve(x, y, mode), expected, atol=1e-5)


def test_convolve_refuses_what_does_not_broadcast() -> None:
    with pytest.raises(ValueError, match="mode"):
        F.convolve(torch.ones(3), torch.ones(2), "wide")
    with pytest.raises(ValueError, match="broadcast"):
        F.convolve(torch.ones(2, 3), torch.ones(3, 3))


@pytest.mark.parametrize(
    ("n_freqs", "f_min", "f_max", "n_filter", "rate"),
    [(201, 0.0, 8000.0, 40, 16000), (513, 50.0, 7600.0, 128, 22050)],
)
def test_linear_fbanks(
    taf, n_freqs: int, f_min: float, f_max: float, n_filter: int, rate: int
) -> None:
    ours = F.linear_fbanks(n_freqs, f_min, f_max, n_filter, rate)
    theirs = taf.linear_fbanks(n_freqs, f_min, f_max, n_filter, rate)  # in float32
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_spectral_centroid(taf, speech: torch.Tensor) -> None:
    args = (16000, 0, torch.hann_window(400), 400, 160, 400)
    ours, theirs = F.spectral_centroid(speech, *args), taf.spectral_centroid(speech, *args)
    assert torch.allclose(ours, theirs, rtol=1e-4, atol=1e-2)


def test_edit_distance(taf) -> None:
    pairs = [
        ("kitten", "sitting"),
        ("", "abc"),
        ("abc", ""),
        ("same", "same"),
        (["the", "cat", "sat"], ["a", "cat", "sat", "down"]),
        ([1, 2, 3], [3, 2, 1]),
    ]
    for a, b in pairs:
        assert F.edit_distance(a, b) == taf.edit_distance(a, b)


def test_the_transforms_equal_torchaudios(speech: torch.Tensor) -> None:
    import trivium.audio.transforms as T

    tat = require_torchaudio().transforms
    spec = noise(2, 20, 60)
    pairs = [
        (T.ComputeDeltas(7), tat.ComputeDeltas(7), (spec,)),
        (T.Preemphasis(0.9), tat.Preemphasis(0.9), (speech,)),
        (T.Deemphasis(0.9), tat.Deemphasis(0.9), (speech,)),
        (
            T.SlidingWindowCmn(30, 10, True, True),
            tat.SlidingWindowCmn(30, 10, True, True),
            (spec.transpose(-1, -2),),
        ),
        (
            T.SpectralCentroid(16000, hop_length=160),
            tat.SpectralCentroid(16000, hop_length=160),
            (speech,),
        ),
        (T.Convolve("same"), tat.Convolve("same"), (speech, speech[:, :64])),
        (T.FFTConvolve("valid"), tat.FFTConvolve("valid"), (speech, speech[:, :64])),
    ]
    for ours, theirs, args in pairs:
        assert torch.allclose(ours(*args), theirs(*args), rtol=1e-4, atol=1e-4), ours


BIQUADS = [
    ("lowpass_biquad", (16000, 300.0)),
    ("highpass_biquad", (16000, 3000.0, 2.0)),
    ("allpass_biquad", (16000, 1000.0)),
    ("bandpass_biquad", (16000, 1000.0)),
    ("bandpass_biquad", (16000, 1000.0, 3.0, True)),
    ("bandreject_biquad", (16000, 1000.0)),
    ("equalizer_biquad", (16000, 1000.0, 6.0, 1.5)),
    ("bass_biquad", (16000, 6.0)),
    ("treble_biquad", (16000, -4.0)),
    ("band_biquad", (16000, 800.0, 2.0)),
    ("band_biquad", (16000, 800.0, 2.0, True)),
    ("deemph_biquad", (44100,)),
    ("deemph_biquad", (48000,)),
    ("riaa_biquad", (44100,)),
    ("riaa_biquad", (96000,)),
]


@pytest.mark.parametrize(("name", "args"), BIQUADS)
def test_biquads(taf, speech: torch.Tensor, name: str, args: tuple) -> None:
    ours, theirs = getattr(F, name)(speech, *args), getattr(taf, name)(speech, *args)
    assert torch.allclose(ours, theirs, atol=2e-4)


@pytest.mark.parametrize("batching", [True, False])
def test_lfilter_with_a_bank_of_filters(taf, batching: bool) -> None:
    x = noise(3, 2, 1000) * 0.5
    a = torch.tensor([[1.0, -1.8, 0.85], [2.0, 0.6, 0.0]])  # a[0] != 1: normalised
    b = torch.tensor([[0.1, 0.2, 0.05], [1.0, 0.0, 0.2]])
    ours, theirs = F.lfilter(x, a, b, batching=batching), taf.lfilter(x, a, b, batching=batching)
    assert ours.shape == theirs.shape
    assert torch.allclose(ours, theirs, atol=1e-5)


@pytest.mark.parametrize("length", [1, 5, 31, 32, 33, 700])
def test_lfilter_of_a_fourth_order_filter_across_block_edges(taf, length: int) -> None:
    x = noise(2, length) * 0.5
    a = torch.tensor([1.0, -2.2, 2.0, -0.9, 0.2])
    b = torch.tensor([0.1, 0.0, 0.3, 0.0, 0.1])
    ours = F.lfilter(x, a, b, clamp=False)
    assert torch.allclose(ours, taf.lfilter(x, a, b, clamp=False), atol=1e-5)
    reference = x.double()  # the recursion itself, sample by sample, in float64
    y = torch.zeros_like(reference)
    for n in range(length):
        y[:, n] = sum(b[k] * reference[:, n - k] for k in range(5) if n >= k) - sum(
            a[k] * y[:, n - k] for k in range(1, 5) if n >= k
        )
    assert torch.allclose(ours.double(), y, atol=1e-4)


def test_filtfilt(taf, speech: torch.Tensor) -> None:
    a, b = torch.tensor([1.0, -1.6, 0.7]), torch.tensor([0.03, 0.06, 0.03])
    assert torch.allclose(F.filtfilt(speech, a, b), taf.filtfilt(speech, a, b), atol=1e-4)


def test_lfilter_refuses_coefficients_of_two_shapes() -> None:
    with pytest.raises(ValueError, match="one shape"):
        F.lfilter(torch.zeros(10), torch.ones(3), torch.ones(2))
    with pytest.raises(ValueError, match="number of filters"):
        F.lfilter(torch.zeros(3, 10), torch.ones(2, 3), torch.ones(2, 3))


def test_loudness(taf, speech: torch.Tensor) -> None:
    import math

    tone = 0.5 * torch.sin(2 * math.pi * 1000 * torch.arange(48000) / 48000)
    cases = [
        (speech, 16000),
        (torch.cat([speech, 0.3 * speech]), 16000),
        (tone.expand(2, -1), 48000),  # a 1 kHz sine at -6 dBFS: -6 LUFS
        (torch.stack([tone, 0.1 * tone, 0.2 * tone, 0.05 * tone, tone]), 48000),
    ]
    for waveform, rate in cases:
        ours, theirs = F.loudness(waveform, rate), taf.loudness(waveform, rate)
        assert abs(float(ours) - float(theirs)) < 1e-3
    assert abs(float(F.loudness(tone.expand(2, -1), 48000)) + 6.0) < 0.1
    with pytest.raises(ValueError, match="5 channels"):
        F.loudness(torch.zeros(6, 48000), 48000)


@pytest.mark.parametrize("log_lf", [False, True])
def test_lfcc(speech: torch.Tensor, log_lf: bool) -> None:
    import trivium.audio.transforms as T

    tat = require_torchaudio().transforms
    kwargs = {"n_filter": 64, "n_lfcc": 20, "log_lf": log_lf, "speckwargs": {"hop_length": 160}}
    ours, theirs = T.LFCC(16000, **kwargs)(speech), tat.LFCC(16000, **kwargs)(speech)
    assert ours.shape == theirs.shape
    assert torch.allclose(ours, theirs, rtol=1e-4, atol=1e-3)


def masked_columns(out: torch.Tensor, value: float) -> torch.Tensor:
    """How many time frames of each [freq, time] example are masked whole."""
    return (out == value).all(dim=-2).sum(-1)


def test_spec_augment_masks_like_torchaudios_on_average() -> None:
    import trivium.audio.transforms as T

    tat = require_torchaudio().transforms
    spec = torch.rand(64, 1, 40, 100) + 1
    ours = T.SpecAugment(2, 12, 2, 6, zero_masking=True, generator=torch.Generator().manual_seed(0))
    theirs = tat.SpecAugment(2, 12, 2, 6, zero_masking=True)
    torch.manual_seed(0)
    fractions = [float((m(spec) == 0).float().mean()) for m in (ours, theirs) for _ in range(10)]
    ours_mean, theirs_mean = sum(fractions[:10]) / 10, sum(fractions[10:]) / 10
    assert abs(ours_mean - theirs_mean) < 0.02  # masks of the same widths, drawn alike
    out = ours(spec)
    assert bool((masked_columns(out, 0.0) <= 2 * 11).all())  # two bands of < 12 frames
    assert len({tuple(c.tolist()) for c in masked_columns(out, 0.0)}) > 1  # iid: their own


def test_spec_augment_fills_with_the_mean_and_shares_bands_without_iid() -> None:
    import trivium.audio.transforms as T

    spec = torch.rand(3, 40, 100)
    shared = T.SpecAugment(
        1, 20, 1, 10, iid_masks=False, generator=torch.Generator().manual_seed(1)
    )(spec)
    mean = float(spec.mean())
    filled = torch.isclose(shared, torch.tensor(mean))
    assert bool(filled.any()) and bool((filled == filled[0]).all())  # one band for all
    again = T.SpecAugment(
        1, 20, 1, 10, iid_masks=False, generator=torch.Generator().manual_seed(1)
    )(spec)
    assert torch.equal(shared, again)
    assert torch.equal(T.SpecAugment(0, 20, 0, 10)(spec), spec)


def test_frechet_distance(taf) -> None:
    g = torch.Generator().manual_seed(3)
    a, b = (
        torch.randn(50, 6, generator=g, dtype=torch.float64),
        torch.randn(50, 6, generator=g, dtype=torch.float64),
    )
    mu_x, mu_y, sigma_x, sigma_y = a.mean(0), b.mean(0) + 0.5, a.T.cov(), (2 * b).T.cov()
    ours, theirs = (
        F.frechet_distance(mu_x, sigma_x, mu_y, sigma_y),
        taf.frechet_distance(mu_x, sigma_x, mu_y, sigma_y),
    )
    assert torch.allclose(ours, theirs)
    assert float(F.frechet_distance(mu_x, sigma_x, mu_x, sigma_x)) == pytest.approx(0, abs=1e-9)


def test_speed_transform(speech: torch.Tensor) -> None:
    import trivium.audio.transforms as T

    tat = require_torchaudio().transforms
    lengths = torch.tensor([20000])
    for factor in (0.9, 1.1):
        ours, ours_lengths = T.Speed(16000, factor)(speech, lengths)
        theirs, theirs_lengths = tat.Speed(16000, factor)(speech, lengths)
        assert ours.shape == theirs.shape and torch.equal(ours_lengths, theirs_lengths)
        assert torch.allclose(ours, theirs, atol=1e-4)


@pytest.mark.parametrize("n_steps", [4, -3])
def test_pitch_shift(taf, speech: torch.Tensor, n_steps: int) -> None:
    import trivium.audio.transforms as T

    ours, theirs = F.pitch_shift(speech, 16000, n_steps), taf.pitch_shift(speech, 16000, n_steps)
    assert ours.shape == theirs.shape == speech.shape
    assert torch.allclose(ours, theirs, atol=1e-4)
    shifted = T.PitchShift(16000, n_steps, n_fft=256)(speech)
    expected = require_torchaudio().transforms.PitchShift(16000, n_steps, n_fft=256)(speech)
    assert torch.allclose(shifted, expected, atol=1e-4)


@pytest.mark.parametrize(
    ("shift", "limiter_gain"), [(0.3, None), (-0.4, None), (0.3, 0.05), (-0.4, 0.05), (-1.2, 0.02)]
)
def test_dcshift(taf, speech: torch.Tensor, shift: float, limiter_gain: float | None) -> None:
    ramp = torch.cat([torch.linspace(-1, 1, 2001)[None], speech[:, :2001]])
    before = ramp.clone()
    ours = F.dcshift(ramp, shift, limiter_gain)
    assert torch.equal(ramp, before)  # torchaudio's changes its input; ours does not
    assert torch.allclose(ours, taf.dcshift(ramp.clone(), shift, limiter_gain), atol=1e-7)


def two_sources(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A 4-channel complex STFT [channel, freq, time] of speech-like source + noise, masks."""
    g = torch.Generator().manual_seed(seed)
    source = torch.randn(1, 33, 40, generator=g, dtype=torch.cdouble)
    gains = torch.randn(4, 33, 1, generator=g, dtype=torch.cdouble)
    noise = 0.3 * torch.randn(4, 33, 40, generator=g, dtype=torch.cdouble)
    mask = torch.rand(33, 40, generator=g, dtype=torch.float64)
    return gains * source + noise, mask, 1 - mask


def test_beamforming_equals_torchaudios(taf) -> None:
    spec, mask_s, mask_n = two_sources()
    psd_s, psd_n = F.psd(spec, mask_s), F.psd(spec, mask_n)
    assert torch.allclose(psd_s, taf.psd(spec, mask_s))
    assert torch.allclose(F.psd(spec, mask_s, normalize=False), taf.psd(spec, mask_s, False))
    assert torch.allclose(F.psd(spec), taf.psd(spec))
    one_hot = torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    for reference in (0, 2, one_hot):
        for loading in (True, False):
            ours = F.mvdr_weights_souden(psd_s, psd_n, reference, loading)
            assert torch.allclose(ours, taf.mvdr_weights_souden(psd_s, psd_n, reference, loading))
        for n_iter in (1, 2, 4):
            ours = F.rtf_power(psd_s, psd_n, reference, n_iter)
            assert torch.allclose(ours, taf.rtf_power(psd_s, psd_n, reference, n_iter))
    rtf = F.rtf_power(psd_s, psd_n, 0)
    for reference in (None, 1, one_hot):
        ours = F.mvdr_weights_rtf(rtf, psd_n, reference)
        assert torch.allclose(ours, taf.mvdr_weights_rtf(rtf, psd_n, reference))
    evd = F.rtf_evd(psd_s)  # an eigenvector: equal up to a phase per bin
    theirs = taf.rtf_evd(psd_s)
    assert torch.allclose((evd.conj() * theirs).sum(-1).abs(), torch.ones(33, dtype=torch.float64))
    weights = F.mvdr_weights_souden(psd_s, psd_n, 0)
    enhanced = F.apply_beamforming(weights, spec)
    assert torch.allclose(enhanced, taf.apply_beamforming(weights, spec))


def test_the_psd_and_mvdr_transforms() -> None:
    import trivium.audio.transforms as T

    spec, mask, _ = two_sources(1)
    tat = require_torchaudio().transforms
    multi = mask.expand(4, -1, -1)
    assert torch.allclose(T.PSD()(spec, mask), tat.PSD()(spec, mask))
    assert torch.allclose(
        T.PSD(multi_mask=True)(spec, multi), tat.PSD(multi_mask=True)(spec, multi)
    )
    psd_s, psd_n = T.PSD()(spec, mask), T.PSD()(spec, 1 - mask)
    souden = T.SoudenMVDR()(spec, psd_s, psd_n, 0)
    assert torch.allclose(souden, tat.SoudenMVDR()(spec, psd_s, psd_n, 0))
    rtf = require_torchaudio().functional.rtf_evd(psd_s)
    assert torch.allclose(T.RTFMVDR()(spec, rtf, psd_n, 1), tat.RTFMVDR()(spec, rtf, psd_n, 1))


@pytest.mark.parametrize(("gain", "colour"), [(20, 20), (5, 0), (40, 80)])
def test_overdrive(taf, speech: torch.Tensor, gain: float, colour: float) -> None:
    ours = F.overdrive(speech, gain, colour)
    assert torch.allclose(ours, taf.overdrive(speech.clone(), gain, colour), atol=1e-5)


def test_detect_pitch_frequency(taf, speech: torch.Tensor) -> None:
    import math

    tones = torch.stack(
        [torch.sin(2 * math.pi * f * torch.arange(8000) / 8000) for f in (150, 300)]
    )
    for waveform, rate, kwargs in [
        (speech, 16000, {}),
        (tones, 8000, {"win_length": 5}),
        (tones[None], 8000, {"freq_low": 100, "freq_high": 1000}),
    ]:
        ours = F.detect_pitch_frequency(waveform, rate, **kwargs)
        assert torch.allclose(ours, taf.detect_pitch_frequency(waveform, rate, **kwargs))
    found = F.detect_pitch_frequency(tones, 8000).median(-1).values
    assert torch.allclose(found, torch.tensor([150.0, 300.0]), rtol=0.02)


class _Spectrograms(torch.utils.data.Dataset):
    """The same spectrogram eight times: what differs in a batch is the augmentation."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.rand(1, 40, 60, generator=torch.Generator().manual_seed(0)) + 1


def _augmented(num_workers: int) -> torch.Tensor:
    import trivium.audio.transforms as T
    from trivium.data import DataLoader, MapPipe

    augment = T.SpecAugment(1, 15, 1, 8, zero_masking=True)
    emphasis = T.Preemphasis(0.9)
    pipe = MapPipe(_Spectrograms()).to_iter_pipe().map(augment).map(emphasis)
    return torch.cat(list(DataLoader(pipe, 4, num_workers=num_workers, seed=7)))


def test_random_and_iir_transforms_in_dataloader_workers() -> None:
    in_workers = _augmented(num_workers=2)
    assert len({tuple((x == 0).flatten().nonzero().flatten().tolist()) for x in in_workers}) > 1
    assert torch.equal(in_workers, _augmented(num_workers=0))  # the seed decides, not workers
    assert bool((in_workers != 0).any())
