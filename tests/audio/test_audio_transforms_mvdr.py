"""``transforms.MVDR`` (torchaudio's mask-based MVDR module) against torchaudio's.

torchaudio's module is pure Python on its functional beamforming, so it runs here:
both get the same multi-channel spectrogram (a source mixed into four channels with
noise) and masks, for every solution, single- and multi-channel masks, with and
without diagonal loading, offline and online over successive calls.
"""

from __future__ import annotations

import pytest
import torch
from peers import require_torchaudio

import trivium.audio.transforms as T


@pytest.fixture(scope="module")
def peer_transforms():
    return require_torchaudio().transforms


def scene(seed: int, dtype=torch.cfloat) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A ``[2, 4, 33, 40]`` mixture, its speech mask ``[2, 33, 40]`` and multi-channel mask."""
    g = torch.Generator().manual_seed(seed)
    complex_randn = lambda *s: torch.complex(  # noqa: E731
        torch.randn(*s, generator=g, dtype=torch.float64),
        torch.randn(*s, generator=g, dtype=torch.float64),
    )
    source = complex_randn(2, 1, 33, 40)
    transfer = complex_randn(2, 4, 33, 1)
    mixture = source * transfer + 0.3 * complex_randn(2, 4, 33, 40)
    speech = source.abs() ** 2 / (source.abs() ** 2 + 0.09 * 4)
    multi = (speech + 0.05 * torch.rand(2, 4, 33, 40, generator=g, dtype=torch.float64)).clamp(0, 1)
    return mixture.to(dtype), speech[:, 0].float(), multi.float()


@pytest.mark.parametrize("solution", ["ref_channel", "stv_evd", "stv_power"])
@pytest.mark.parametrize("multi_mask", [False, True])
@pytest.mark.parametrize("diag_loading", [True, False])
def test_mvdr_equals_torchaudio(peer_transforms, solution, multi_mask, diag_loading) -> None:
    specgram, mask, multi = scene(0)
    mask_s = multi if multi_mask else mask
    kwargs = {"ref_channel": 2, "solution": solution, "multi_mask": multi_mask}
    kwargs |= {"diag_loading": diag_loading, "diag_eps": 1e-6}
    ours = T.MVDR(**kwargs)(specgram, mask_s, 1 - mask_s)
    theirs = peer_transforms.MVDR(**kwargs)(specgram, mask_s, 1 - mask_s)
    assert ours.dtype == specgram.dtype == theirs.dtype and ours.shape == (2, 33, 40)
    assert torch.allclose(ours, theirs, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("solution", ["ref_channel", "stv_power"])
def test_online_mvdr_updates_like_torchaudio(peer_transforms, solution: str) -> None:
    ours, theirs = (
        T.MVDR(solution=solution, online=True),
        peer_transforms.MVDR(solution=solution, online=True),
    )
    for seed in range(3):
        specgram, mask, _ = scene(seed, torch.cdouble)
        out = ours(specgram, mask, 1 - mask)
        assert torch.allclose(out, theirs(specgram, mask, 1 - mask), atol=1e-9)
    assert torch.allclose(ours.psd_n, theirs.psd_n, atol=1e-12)
    assert torch.allclose(ours.mask_sum_s, theirs.mask_sum_s)
    assert set(ours.state_dict()) == set(theirs.state_dict())


def test_missing_noise_mask_warns_and_bad_input_raises(peer_transforms) -> None:
    specgram, mask, _ = scene(1)
    with pytest.warns(UserWarning, match="mask_n"):
        ours = T.MVDR()(specgram, mask)
    with pytest.warns(UserWarning):
        theirs = peer_transforms.MVDR()(specgram, mask)
    assert torch.allclose(ours, theirs, atol=1e-5)
    with pytest.raises(ValueError, match="solution"):
        T.MVDR(solution="stv")
    with pytest.raises(ValueError, match="complex"):
        T.MVDR()(specgram.real, mask, 1 - mask)
    with pytest.raises(ValueError, match="3-D"):
        T.MVDR()(specgram[0, 0], mask, 1 - mask)


def test_mvdr_is_differentiable_in_the_mask() -> None:
    specgram, mask, _ = scene(2, torch.cdouble)
    mask = mask.double()[:, :5, :12].requires_grad_()
    spec = specgram[:, :, :5, :12]
    out = T.MVDR(solution="stv_power")(spec, mask, 1 - mask)
    out.abs().sum().backward()
    assert mask.grad is not None and torch.isfinite(mask.grad).all() and mask.grad.abs().sum() > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.cuda
def test_cuda_matches_cpu() -> None:
    specgram, mask, _ = scene(3, torch.cdouble)
    module = T.MVDR(solution="stv_power", online=True)
    out = module.cuda()(specgram.cuda(), mask.cuda(), 1 - mask.cuda())
    assert out.device.type == "cuda"
    expected = T.MVDR(solution="stv_power", online=True)(specgram, mask, 1 - mask)
    torch.testing.assert_close(out.cpu(), expected, atol=1e-8, rtol=1e-6)
