"""Spectral functions and transforms against librosa / NumPy on real speech, plus batching,
autograd, torch.compile and CUDA."""

from __future__ import annotations

import math
from pathlib import Path

import librosa
import numpy as np
import pytest
import soundfile as sf
import torch

import trivium.audio.functional as F
import trivium.audio.transforms as T

AUDIO = Path(__file__).resolve().parents[1] / "assets" / "audio"


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    """2 s of real 16 kHz speech (TIMIT LDC93S1), float32."""
    data, sr = sf.read(AUDIO / "ds-LDC93S1.wav", dtype="float32")
    assert sr == 16000
    return data[:32000]


# ------------------------------------------------------------------------- mel banks


@pytest.mark.parametrize("mel_scale", ["htk", "slaney"])
@pytest.mark.parametrize("norm", [None, "slaney"])
@pytest.mark.parametrize(
    ("sr", "n_fft", "n_mels", "f_min", "f_max"),
    [(16000, 400, 80, 0.0, 8000.0), (22050, 1024, 128, 20.0, 8000.0), (8000, 256, 40, 0.0, None)],
)
def test_mel_filter_banks_equal_librosa(
    mel_scale: str, norm: str | None, sr: int, n_fft: int, n_mels: int, f_min: float, f_max
) -> None:
    f_max_hz = f_max if f_max is not None else sr / 2
    fb = F.melscale_fbanks(n_fft // 2 + 1, f_min, f_max_hz, n_mels, sr, norm, mel_scale)
    ref = librosa.filters.mel(
        sr=sr,
        n_fft=n_fft,
        n_mels=n_mels,
        fmin=f_min,
        fmax=f_max_hz,
        htk=mel_scale == "htk",
        norm=norm,
        dtype=np.float64,
    )
    assert fb.shape == (n_fft // 2 + 1, n_mels)
    np.testing.assert_allclose(fb.numpy(), ref.T, rtol=0, atol=1e-5)
    melscale = T.MelScale(n_mels, sr, f_min, f_max, n_fft // 2 + 1, norm, mel_scale)
    torch.testing.assert_close(melscale.fb, fb)


def test_mel_argument_errors() -> None:
    with pytest.raises(ValueError, match="mel_scale"):
        F.melscale_fbanks(201, 0.0, 8000.0, 40, 16000, mel_scale="bark")
    with pytest.raises(ValueError, match="norm"):
        F.melscale_fbanks(201, 0.0, 8000.0, 40, 16000, norm="l2")
    with pytest.raises(ValueError, match="f_min"):
        F.melscale_fbanks(201, 9000.0, 8000.0, 40, 16000)
    with pytest.warns(UserWarning, match="all zero"):
        F.melscale_fbanks(33, 0.0, 8000.0, 128, 16000)
    with pytest.raises(ValueError, match="frequency bins"):
        T.MelScale(n_mels=40, n_stft=201)(torch.ones(100, 5))


# ----------------------------------------------------------------------- spectrogram


@pytest.mark.parametrize(
    ("n_fft", "hop", "win"), [(400, 160, 400), (512, 128, 384), (256, 64, None)]
)
def test_spectrogram_matches_librosa_stft(speech: np.ndarray, n_fft: int, hop: int, win) -> None:
    ref = librosa.stft(speech, n_fft=n_fft, hop_length=hop, win_length=win, pad_mode="reflect")
    complex_spec = T.Spectrogram(n_fft=n_fft, win_length=win, hop_length=hop, power=None)
    z = complex_spec(torch.from_numpy(speech))
    assert z.shape == ref.shape and z.is_complex()
    np.testing.assert_allclose(z.numpy(), ref, rtol=1e-4, atol=1e-4)
    power = T.Spectrogram(n_fft=n_fft, win_length=win, hop_length=hop)(torch.from_numpy(speech))
    np.testing.assert_allclose(power.numpy(), np.abs(ref) ** 2, rtol=1e-4, atol=1e-5)
    mag = T.Spectrogram(n_fft=n_fft, win_length=win, hop_length=hop, power=1.0)
    np.testing.assert_allclose(mag(torch.from_numpy(speech)).numpy(), np.abs(ref), atol=1e-4)


def test_spectrogram_normalisations_against_numpy(speech: np.ndarray) -> None:
    x = speech[:4000].astype(np.float64)
    n_fft, hop = 256, 100
    window = np.hanning(n_fft + 1)[:-1]  # periodic Hann
    padded = np.pad(x, n_fft // 2, mode="reflect")
    frames = np.stack([padded[i : i + n_fft] for i in range(0, len(padded) - n_fft + 1, hop)])
    ref = np.fft.rfft(frames * window, axis=-1).T
    xt = torch.from_numpy(x)
    w = torch.hann_window(n_fft, dtype=torch.float64)
    plain = F.spectrogram(xt, 0, w, n_fft, hop, n_fft, None, False)
    np.testing.assert_allclose(plain.numpy(), ref, atol=1e-9)
    by_window = F.spectrogram(xt, 0, w, n_fft, hop, n_fft, None, "window")
    np.testing.assert_allclose(by_window.numpy(), ref / np.sqrt(np.sum(window**2)), atol=1e-9)
    by_frame = F.spectrogram(xt, 0, w, n_fft, hop, n_fft, None, "frame_length")
    np.testing.assert_allclose(by_frame.numpy(), ref / np.sqrt(n_fft), atol=1e-9)
    padded_spec = F.spectrogram(xt, 50, w, n_fft, hop, n_fft, 2.0, False)
    np.testing.assert_allclose(
        padded_spec.numpy(),
        np.abs(
            F.spectrogram(
                torch.nn.functional.pad(xt, (50, 50)), 0, w, n_fft, hop, n_fft, None, False
            ).numpy()
        )
        ** 2,
        rtol=1e-10,
    )
    with pytest.raises(ValueError, match="normalized"):
        F.spectrogram(xt, 0, w, n_fft, hop, n_fft, None, "energy")
    with pytest.raises(TypeError, match="floating"):
        F.spectrogram(torch.zeros(100, dtype=torch.int16), 0, w, n_fft, hop, n_fft, None, False)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_mels": 80},
        {"n_mels": 64, "norm": "slaney", "mel_scale": "slaney", "f_min": 20.0, "f_max": 7600.0},
    ],
)
def test_melspectrogram_matches_librosa(speech: np.ndarray, kwargs: dict) -> None:
    mel = T.MelSpectrogram(16000, n_fft=400, hop_length=160, **kwargs)
    out = mel(torch.from_numpy(speech))
    ref = librosa.feature.melspectrogram(
        y=speech,
        sr=16000,
        n_fft=400,
        hop_length=160,
        pad_mode="reflect",
        power=2.0,
        n_mels=kwargs["n_mels"],
        fmin=kwargs.get("f_min", 0.0),
        fmax=kwargs.get("f_max", 8000.0),
        htk=kwargs.get("mel_scale", "htk") == "htk",
        norm=kwargs.get("norm"),
    )
    assert out.shape == ref.shape
    # float32 sums of up to 200 bins: relative error 1e-4 of each band, plus a tiny floor.
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-6 * ref.max())


@pytest.mark.parametrize(("log_mels", "n_mfcc"), [(False, 13), (False, 40), (True, 20)])
def test_mfcc_matches_librosa(speech: np.ndarray, log_mels: bool, n_mfcc: int) -> None:
    melkwargs = {"n_fft": 400, "hop_length": 160, "n_mels": 40}
    out = T.MFCC(16000, n_mfcc=n_mfcc, log_mels=log_mels, melkwargs=melkwargs)(
        torch.from_numpy(speech)
    )
    mel = librosa.feature.melspectrogram(
        y=speech, sr=16000, pad_mode="reflect", htk=True, norm=None, fmax=8000.0, **melkwargs
    ).astype(np.float64)
    log_mel = np.log(mel + 1e-6) if log_mels else librosa.power_to_db(mel, top_db=80.0)
    ref = librosa.feature.mfcc(S=log_mel, n_mfcc=n_mfcc, dct_type=2, norm="ortho")
    assert out.shape == ref.shape
    # Coefficients are O(100) dB sums of 40 float32 terms: absolute 2e-3 is ~1e-5 relative.
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=2e-3)


def test_create_dct_matches_scipy() -> None:
    from scipy.fft import dct

    eye = np.eye(32)
    np.testing.assert_allclose(
        F.create_dct(13, 32, "ortho").numpy(), dct(eye, type=2, norm="ortho")[:, :13], atol=1e-6
    )
    np.testing.assert_allclose(
        F.create_dct(13, 32, None).numpy(), dct(eye, type=2)[:, :13], atol=1e-5
    )


def test_amplitude_to_db(speech: np.ndarray) -> None:
    power = T.Spectrogram(n_fft=400)(torch.from_numpy(speech))
    db = T.AmplitudeToDB("power", top_db=80.0)(power)
    np.testing.assert_allclose(
        db.numpy(), librosa.power_to_db(power.numpy().astype(np.float64), top_db=80.0), atol=1e-3
    )
    mag = power.sqrt()
    np.testing.assert_allclose(
        T.AmplitudeToDB("magnitude")(mag).numpy(),
        20 * np.log10(np.maximum(mag.numpy().astype(np.float64), 1e-10)),
        atol=1e-3,
    )
    # top_db applies per example ([batch, channel, freq, time]): a loud example does not
    # raise the floor of a quiet one.
    batch = torch.stack([power[None], power[None] * 1e-3])
    out = T.AmplitudeToDB("power", top_db=80.0)(batch)
    for example in out:
        assert math.isclose(float(example.min()), float(example.max()) - 80.0, abs_tol=1e-3)
    assert math.isclose(float(out[1].max()), float(out[0].max()) - 30.0, abs_tol=1e-3)
    back = F.DB_to_amplitude(T.AmplitudeToDB("power")(power), 1.0, 1.0)
    torch.testing.assert_close(back, power.clamp(min=1e-10), rtol=1e-4, atol=0)
    with pytest.raises(ValueError, match="stype"):
        T.AmplitudeToDB("energy")


# --------------------------------------------------------------------- inversions


def test_inverse_spectrogram_round_trip(speech: np.ndarray) -> None:
    x = torch.from_numpy(speech).reshape(2, 1, -1)
    for normalized in (False, True, "frame_length"):
        z = T.Spectrogram(n_fft=512, hop_length=128, pad=7, power=None, normalized=normalized)(x)
        inverse = T.InverseSpectrogram(n_fft=512, hop_length=128, pad=7, normalized=normalized)
        y = inverse(z, length=x.shape[-1])
        assert y.shape == x.shape
        torch.testing.assert_close(y, x, atol=1e-5, rtol=0)
    with pytest.raises(TypeError, match="complex"):
        inverse(z.abs())


def test_griffinlim_converges_and_is_seeded(speech: np.ndarray) -> None:
    x = torch.from_numpy(speech[:16000])
    mag = T.Spectrogram(n_fft=512, hop_length=128)(x)

    def convergence(n_iter: int, **kwargs) -> float:
        gl = T.GriffinLim(n_fft=512, hop_length=128, n_iter=n_iter, length=16000, **kwargs)
        rebuilt = T.Spectrogram(n_fft=512, hop_length=128, power=1.0)(gl(mag))
        return float(torch.linalg.norm(rebuilt - mag.sqrt()) / torch.linalg.norm(mag.sqrt()))

    assert convergence(32, rand_init=False) < 0.1 < convergence(1, rand_init=False)
    g = lambda: torch.Generator().manual_seed(3)  # noqa: E731
    a = T.GriffinLim(n_fft=512, hop_length=128, n_iter=2, generator=g())(mag)
    b = T.GriffinLim(n_fft=512, hop_length=128, n_iter=2, generator=g())(mag)
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="momentum"):
        T.GriffinLim(momentum=1.0)


def test_inverse_mel_scale_is_least_squares(speech: np.ndarray) -> None:
    spec = T.Spectrogram(n_fft=512, hop_length=128)(torch.from_numpy(speech[:8000]))
    melscale = T.MelScale(40, 16000, n_stft=257)
    mel = melscale(spec)
    rebuilt = T.InverseMelScale(n_stft=257, n_mels=40, sample_rate=16000)(mel)
    fb_t = melscale.fb.numpy().astype(np.float64).T
    ref = np.linalg.lstsq(fb_t, mel.numpy().astype(np.float64), rcond=None)[0].clip(0)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(rebuilt.numpy(), ref, atol=1e-4 * scale)
    # Rank-deficient banks (empty low bands) still invert.
    with pytest.warns(UserWarning, match="all zero"):
        inv = T.InverseMelScale(n_stft=201, n_mels=128)
    assert inv(torch.rand(2, 128, 3)).shape == (2, 201, 3)


def test_time_stretch_matches_librosa(speech: np.ndarray) -> None:
    y = speech[:16000]
    stft = librosa.stft(y, n_fft=512, hop_length=128, pad_mode="reflect")
    z = T.Spectrogram(n_fft=512, hop_length=128, power=None)(torch.from_numpy(y))
    for rate in (0.8, 1.3):
        ref = librosa.phase_vocoder(stft, rate=rate, hop_length=128)
        out = T.TimeStretch(hop_length=128, n_freq=257, fixed_rate=rate)(z)
        assert out.shape == ref.shape
        np.testing.assert_allclose(np.abs(out.numpy()), np.abs(ref), atol=1e-4)
        # phases accumulate over frames in float32: compare complex values loosely
        np.testing.assert_allclose(out.numpy(), ref, atol=1e-2)
    stretch = T.TimeStretch(hop_length=128, n_freq=257)
    assert stretch(z, 2.0).shape[-1] == math.ceil(z.shape[-1] / 2)
    assert torch.equal(stretch(z, 1.0), z)
    with pytest.raises(ValueError, match="fixed_rate"):
        stretch(z)
    with pytest.raises(TypeError, match="complex"):
        stretch(z.abs(), 1.5)


# ------------------------------------------------------------- batching and autograd


def test_any_leading_batch_shape(speech: np.ndarray) -> None:
    x = torch.from_numpy(speech[:8000].copy())
    batch = torch.stack([x, x.flip(0), 0.5 * x]).reshape(3, 1, -1).expand(3, 2, -1)
    transforms = [
        T.Spectrogram(n_fft=256),
        T.MelSpectrogram(n_fft=256, n_mels=32),
        T.MFCC(n_mfcc=10, melkwargs={"n_fft": 256, "n_mels": 32}),
    ]
    for t in transforms:
        out = t(batch)
        for i in range(3):
            for c in range(2):
                torch.testing.assert_close(out[i, c], t(batch[i, c]), rtol=1e-5, atol=1e-4)
    spec = T.Spectrogram(n_fft=256)(batch)
    db = T.AmplitudeToDB()(spec)
    torch.testing.assert_close(db[1, 0], T.AmplitudeToDB()(spec[1, 0]))


def test_gradients() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 48, dtype=torch.float64, generator=g, requires_grad=True)
    spec = T.Spectrogram(n_fft=16, hop_length=8).double()
    assert torch.autograd.gradcheck(spec, (x,), fast_mode=True)
    mel = T.MelSpectrogram(8000, n_fft=16, hop_length=8, n_mels=4).double()
    assert torch.autograd.gradcheck(mel, (x,), fast_mode=True)
    mfcc = T.MFCC(8000, n_mfcc=4, log_mels=True, melkwargs={"n_fft": 64, "n_mels": 8})
    y = torch.randn(2, 4000, requires_grad=True)
    mfcc(y).sum().backward()
    assert y.grad is not None and torch.isfinite(y.grad).all() and y.grad.abs().sum() > 0


@pytest.mark.parametrize(
    ("make", "shape", "positive"),
    [
        (lambda: T.MelSpectrogram(8000, n_fft=128, hop_length=32, n_mels=16), (2, 1, 1000), False),
        (lambda: T.AmplitudeToDB("power", top_db=80.0), (2, 16, 20), True),
    ],
    ids=["MelSpectrogram", "AmplitudeToDB"],
)
@pytest.mark.filterwarnings("ignore:Torchinductor does not support code generation for complex")
def test_torch_compile(make, shape: tuple[int, ...], positive: bool) -> None:
    module = make()
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    if positive:
        x = x.abs()
    compiled = torch.compile(module)
    torch.testing.assert_close(compiled(x), module(x), rtol=1e-5, atol=1e-5)


def test_buffers_follow_dtype_and_state_dict() -> None:
    mel = T.MelSpectrogram(n_mels=20).double()
    assert mel.mel_scale.fb.dtype == torch.float64
    assert mel(torch.zeros(800, dtype=torch.float64)).dtype == torch.float64
    names = set(T.MFCC(melkwargs={"n_mels": 64}).state_dict())
    assert {"dct_mat", "MelSpectrogram.mel_scale.fb", "MelSpectrogram.spectrogram.window"} <= names


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.cuda
def test_cuda_matches_cpu(speech: np.ndarray) -> None:
    x = torch.from_numpy(speech).reshape(2, -1)
    modules = [
        T.Spectrogram(n_fft=400),
        T.MelSpectrogram(n_mels=80),
        T.MFCC(),
        T.AmplitudeToDB(top_db=80.0),
        T.InverseMelScale(n_stft=201, n_mels=40),
    ]
    inputs = [x, x, x, x.abs(), torch.rand(2, 40, 30)]
    for module, inp in zip(modules, inputs, strict=True):
        cpu = module(inp)
        gpu = module.to("cuda")(inp.cuda())
        assert gpu.device.type == "cuda"
        torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-3, atol=1e-3)
    z = T.Spectrogram(n_fft=512, power=None).cuda()(x.cuda())
    assert T.TimeStretch(n_freq=257, fixed_rate=1.2).cuda()(z).device.type == "cuda"
    assert T.GriffinLim(n_iter=2).cuda()(z.abs().pow(2)[..., :201, :]).device.type == "cuda"


def test_matches_torchaudio_when_it_imports(speech: np.ndarray) -> None:
    from peers import require_torchaudio

    torchaudio = require_torchaudio()
    x = torch.from_numpy(speech).reshape(2, -1)
    pairs = [
        (
            T.Spectrogram(n_fft=400, hop_length=160),
            torchaudio.transforms.Spectrogram(400, hop_length=160),
        ),
        (
            T.MelSpectrogram(16000, n_fft=400, hop_length=160, n_mels=80),
            torchaudio.transforms.MelSpectrogram(16000, n_fft=400, hop_length=160, n_mels=80),
        ),
        (
            T.MelSpectrogram(16000, n_mels=64, norm="slaney", mel_scale="slaney"),
            torchaudio.transforms.MelSpectrogram(
                16000, n_mels=64, norm="slaney", mel_scale="slaney"
            ),
        ),
        (T.MFCC(16000, n_mfcc=13), torchaudio.transforms.MFCC(16000, n_mfcc=13)),
    ]
    for ours, theirs in pairs:
        torch.testing.assert_close(ours(x), theirs(x), rtol=1e-4, atol=1e-4)
    fb = torchaudio.functional.melscale_fbanks(201, 0.0, 8000.0, 80, 16000, "slaney", "slaney")
    torch.testing.assert_close(
        F.melscale_fbanks(201, 0.0, 8000.0, 80, 16000, "slaney", "slaney"), fb
    )
