"""Masking, effects and mu-law transforms: NumPy references, seeding, batching and devices."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import trivium.audio.functional as F
import trivium.audio.transforms as T
from trivium.core.transform import Transform


def masked_spans(out: torch.Tensor, axis: int) -> list[tuple[int, int]]:
    """(start, width) of the zeroed band of each [freq, time] slice of an all-ones input."""
    spans = []
    for m in out.reshape(-1, *out.shape[-2:]):
        zero = (m == 0).all(dim=1 if axis == -2 else 0).nonzero().flatten().tolist()
        spans.append((zero[0], len(zero)) if zero else (0, 0))
        if zero:
            assert zero == list(range(zero[0], zero[0] + len(zero)))  # one contiguous band
    return spans


@pytest.mark.parametrize(("cls", "axis"), [(T.FrequencyMasking, -2), (T.TimeMasking, -1)])
def test_masking_shared_and_iid(cls, axis: int) -> None:
    spec = torch.ones(6, 2, 40, 50)
    g = torch.Generator().manual_seed(0)
    shared = cls(30, generator=g)(spec)
    spans = masked_spans(shared, axis)
    assert len(set(spans)) == 1 and 0 < spans[0][1] < 30
    iid = cls(30, iid_masks=True, generator=torch.Generator().manual_seed(0))(spec)
    spans = masked_spans(iid, axis)
    assert len(set(spans)) > 3  # per example and channel
    assert all(w < 30 and s + w <= spec.shape[axis] for s, w in spans)
    again = cls(30, iid_masks=True, generator=torch.Generator().manual_seed(0))(spec)
    assert torch.equal(iid, again)
    filled = cls(30, generator=torch.Generator().manual_seed(1))(spec, mask_value=-5.0)
    assert set(filled.unique().tolist()) == {-5.0, 1.0}


def test_masking_statistics_and_p() -> None:
    g = torch.Generator().manual_seed(0)
    widths = [
        masked_spans(T.TimeMasking(20, generator=g)(torch.ones(1, 4, 100)), -1)[0][1]
        for _ in range(400)
    ]
    # width = floor(U[0, 20)): mean 9.5
    assert abs(np.mean(widths) - 9.5) < 1.0 and max(widths) <= 19
    capped = T.TimeMasking(80, p=0.1, generator=g)
    assert all(masked_spans(capped(torch.ones(1, 4, 100)), -1)[0][1] <= 9 for _ in range(50))
    assert torch.equal(T.TimeMasking(0)(torch.ones(3, 4)), torch.ones(3, 4))
    with pytest.raises(ValueError, match="p must be"):
        T.TimeMasking(10, p=1.5)
    with pytest.raises(ValueError, match="axis"):
        F.mask_along_axis(torch.ones(2, 3, 4), 2, 0.0, axis=0)


def test_masking_cuda_generator_free_and_grad() -> None:
    spec = torch.rand(2, 8, 20, requires_grad=True)
    out = T.FrequencyMasking(4)(spec)
    out.sum().backward()
    assert set(spec.grad.unique().tolist()) <= {0.0, 1.0}


@pytest.mark.parametrize(
    "shape", ["linear", "exponential", "logarithmic", "quarter_sine", "half_sine"]
)
def test_fade_matches_numpy(shape: str) -> None:
    n_in, n_out, length = 100, 60, 400
    x = torch.ones(2, length, dtype=torch.float64)
    out = T.Fade(n_in, n_out, shape)(x)
    r_in, r_out = np.linspace(0, 1, n_in), np.linspace(0, 1, n_out)
    curves = {
        "linear": (r_in, 1 - r_out),
        "exponential": (2 ** ((r_in - 1) * 5), 2 ** (-r_out * 5)),
        "logarithmic": (np.log10(0.1 + r_in) + 1, np.log10(1.1 - r_out) + 1),
        "quarter_sine": (np.sin(r_in * np.pi / 2), np.sin(r_out * np.pi / 2 + np.pi / 2)),
        "half_sine": (
            np.sin(r_in * np.pi - np.pi / 2) / 2 + 0.5,
            np.sin(r_out * np.pi + np.pi / 2) / 2 + 0.5,
        ),
    }
    fade_in, fade_out = (np.clip(c, 0, 1) for c in curves[shape])
    expected = np.ones(length)
    expected[:n_in] = fade_in
    expected[length - n_out :] *= fade_out
    np.testing.assert_allclose(out[1].numpy(), expected, atol=1e-12)
    with pytest.raises(ValueError, match="fade_shape"):
        T.Fade(1, 1, "cubic")
    with pytest.raises(ValueError, match="exceed"):
        T.Fade(500, 0)(x)


def test_vol() -> None:
    x = torch.tensor([0.1, -0.2, 0.6])
    torch.testing.assert_close(T.Vol(2.0)(x), torch.tensor([0.2, -0.4, 1.0]))
    torch.testing.assert_close(T.Vol(-6.0, "db")(x), x * 10 ** (-6 / 20))
    torch.testing.assert_close(T.Vol(0.25, "power")(x), x * 0.5)
    with pytest.raises(ValueError, match="gain_type"):
        T.Vol(1.0, "bel")
    with pytest.raises(ValueError, match="gain must be"):
        T.Vol(-1.0)


def test_add_noise_reaches_the_snr() -> None:
    g = torch.Generator().manual_seed(0)
    signal = torch.randn(3, 2, 8000, generator=g, dtype=torch.float64)
    noise = torch.randn(3, 2, 8000, generator=g, dtype=torch.float64)
    snr = torch.tensor([0.0, 10.0, 30.0], dtype=torch.float64)[:, None].expand(3, 2)
    out = T.AddNoise()(signal, noise, snr)
    added = out - signal
    measured = 10 * torch.log10(signal.pow(2).sum(-1) / added.pow(2).sum(-1))
    torch.testing.assert_close(measured, snr)
    torch.testing.assert_close(added / noise, (added / noise)[..., :1].expand_as(noise))
    lengths = torch.tensor([[4000, 8000]] * 3)
    out = F.add_noise(signal, noise, snr, lengths)
    added = out - signal
    first = 10 * torch.log10(signal[:, 0, :4000].pow(2).sum(-1) / added[:, 0, :4000].pow(2).sum(-1))
    torch.testing.assert_close(first, snr[:, 0])
    with pytest.raises(ValueError, match="same length"):
        F.add_noise(signal, noise[..., :10], snr)


def test_mulaw_transforms_round_trip() -> None:
    x = torch.linspace(-1, 1, 1001)
    codes = T.MuLawEncoding(256)(x)
    assert codes.dtype == torch.int64 and codes.min() == 0 and codes.max() == 255
    back = T.MuLawDecoding(256)(codes)
    # decode(encode(x)) is within one code step of x; steps are largest (~0.03) near |x| = 1
    assert float((back - x).abs().max()) < 0.035
    assert torch.equal(T.MuLawEncoding(256)(back), codes)  # decoded values are fixed points


def test_transforms_are_transforms_with_reprs() -> None:
    for t in (T.Fade(1, 1), T.Vol(0.5), T.Resample(2, 1), T.MelSpectrogram(n_mels=64)):
        assert isinstance(t, Transform)
    # Called with options beside the data (torchaudio's signatures): not sample transforms.
    for t in (
        T.AddNoise(),
        T.TimeMasking(3),
        T.FrequencyMasking(3),
        T.InverseSpectrogram(),
        T.TimeStretch(),
        T.SpeedPerturbation(16000, [1.0]),
    ):
        assert isinstance(t, T.CallTransform) and not isinstance(t, Transform)
    assert "time_mask_param" not in repr(T.TimeMasking(3))
    assert "mask_param=3" in repr(T.TimeMasking(3))
    g = torch.Generator()
    assert repr(T.SpeedPerturbation(8000, [0.9], generator=g)) == (
        "SpeedPerturbation(orig_freq=8000, factors=[0.9], generator=torch.Generator(device='cpu'))"
    )
    with pytest.raises(TypeError, match=r"TimeMasking: generator must be a torch\.Generator"):
        T.TimeMasking(3, generator=0)  # type: ignore[arg-type]


def test_buffers_move_with_to() -> None:
    mel = T.MelSpectrogram(n_mels=40).to(torch.float64)
    assert mel.spectrogram.window.dtype == torch.float64
    meta = T.Resample(3, 2).to("meta")
    assert meta.kernel.device.type == "meta"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.cuda
def test_cuda_effects_and_masks() -> None:
    x = torch.rand(2, 1, 1000, device="cuda") * 2 - 1
    assert T.Fade(100, 100, "half_sine")(x).device.type == "cuda"
    torch.testing.assert_close(T.Fade(100, 100)(x).cpu(), T.Fade(100, 100)(x.cpu()))
    assert T.Vol(3.0, "db")(x).device.type == "cuda"
    noisy = T.AddNoise()(x, torch.randn_like(x), torch.tensor([[5.0]], device="cuda"))
    assert noisy.device.type == "cuda"
    g = torch.Generator(device="cuda").manual_seed(0)
    spec = torch.ones(4, 1, 20, 30, device="cuda")
    out = T.TimeMasking(10, iid_masks=True, generator=g)(spec)
    assert out.device.type == "cuda" and bool((out == 0).any())
    out_cpu_gen = T.FrequencyMasking(10, generator=torch.Generator().manual_seed(0))(spec)
    assert out_cpu_gen.device.type == "cuda"
    y, _ = T.SpeedPerturbation(16000, [1.1])(x)
    assert y.device.type == "cuda" and math.isclose(y.shape[-1], 910, abs_tol=1)
