"""Tests for trivium.audio.functional (mu-law), against NumPy and torchaudio when present."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from peers import require_torchaudio

from trivium.audio.functional import mu_law_decoding, mu_law_encoding

CHANNELS = [2, 16, 256, 65536]


def np_encode(x: np.ndarray, qc: int) -> np.ndarray:
    mu = qc - 1
    y = np.sign(x) * np.log1p(mu * np.abs(x)) / np.log1p(mu)
    return np.floor((y + 1) / 2 * mu + 0.5).astype(np.int64)


def np_decode(codes: np.ndarray, qc: int) -> np.ndarray:
    mu = qc - 1
    y = codes.astype(np.float64) / mu * 2 - 1
    return np.sign(y) * (np.exp(np.abs(y) * np.log1p(mu)) - 1) / mu


def _signal(shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1
    x = x * x.abs() ** 2  # many small values, where mu-law resolution is finest
    return x.to(dtype)


@pytest.mark.parametrize("qc", CHANNELS)
def test_encoding_matches_numpy_float64(qc: int) -> None:
    x = _signal((2, 3, 4000), torch.float64)
    codes = mu_law_encoding(x, qc)
    assert codes.dtype == torch.int64 and codes.shape == x.shape
    assert codes.min() >= 0 and codes.max() <= qc - 1
    np.testing.assert_array_equal(codes.numpy(), np_encode(x.numpy(), qc))


@pytest.mark.parametrize("qc", CHANNELS)
def test_encoding_matches_numpy_float32(qc: int) -> None:
    x = _signal((8000,), torch.float32)
    diff = mu_law_encoding(x, qc).numpy() - np_encode(x.numpy().astype(np.float64), qc)
    # float32 rounding moves values within an ulp of a code boundary (e.g. tiny negative
    # values, which round to the code of 0) by one code; torchaudio does the same.
    assert np.abs(diff).max() <= 1 and np.count_nonzero(diff) <= 0.005 * diff.size


@pytest.mark.parametrize("qc", CHANNELS)
def test_known_values_and_clipping(qc: int) -> None:
    x = torch.tensor([-1.0, 0.0, 1.0, -3.0, 2.5])
    assert mu_law_encoding(x, qc).tolist() == [0, qc // 2, qc - 1, 0, qc - 1]
    assert mu_law_encoding(torch.tensor(0.25), qc).shape == ()
    assert mu_law_encoding(torch.empty(0, 3), qc).shape == (0, 3)


@pytest.mark.parametrize("qc", CHANNELS)
def test_decoding_matches_numpy(qc: int) -> None:
    codes = torch.arange(qc).reshape(1, -1) if qc <= 256 else torch.randint(0, qc, (3, 999))
    out = mu_law_decoding(codes, qc)
    assert out.dtype == torch.float32 and out.shape == codes.shape
    np.testing.assert_allclose(out.numpy(), np_decode(codes.numpy(), qc), rtol=1e-5, atol=1e-6)
    out64 = mu_law_decoding(codes.double(), qc)
    assert out64.dtype == torch.float64
    np.testing.assert_allclose(out64.numpy(), np_decode(codes.numpy(), qc), rtol=1e-12)
    assert mu_law_decoding(torch.tensor([0, qc - 1]), qc).tolist() == [-1.0, 1.0]


@pytest.mark.parametrize("qc", [16, 256, 4096])
def test_round_trip_error_bound(qc: int) -> None:
    x = _signal((20000,), torch.float64)
    back = mu_law_decoding(mu_law_encoding(x, qc), qc)
    mu = qc - 1
    # Decoding misses the companded value by at most 1/mu; the expansion's slope is
    # log1p(mu) / mu * (1 + mu|x|) at x and grows by at most (1 + mu) ** (1 / mu) over
    # that distance. The output is float32, hence the absolute slack.
    slope = np.log1p(mu) / mu * (1 + mu * x.abs()) * (1 + mu) ** (1 / mu)
    bound = slope / mu * 1.001 + 1e-6
    assert bool(((back - x).abs() <= bound).all())
    small = x.abs() < 0.01  # relative precision is much better near zero
    assert float((back - x)[small].abs().max()) < float(bound.max()) / 10


def test_validation_errors() -> None:
    with pytest.raises(TypeError, match="mu_law_encoding: x must be a floating point tensor"):
        mu_law_encoding(torch.tensor([1, 2]), 256)
    with pytest.raises(TypeError, match="floating point"):
        mu_law_encoding([0.5], 256)  # type: ignore[arg-type]
    for bad in (0, 1, -256):
        with pytest.raises(ValueError, match=">= 2"):
            mu_law_encoding(torch.zeros(2), bad)
        with pytest.raises(ValueError, match="mu_law_decoding: quantization_channels"):
            mu_law_decoding(torch.zeros(2, dtype=torch.int64), bad)
    for bad in (256.0, True, "256"):
        with pytest.raises(TypeError, match="quantization_channels must be an int"):
            mu_law_encoding(torch.zeros(2), bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="x_mu must be a tensor"):
        mu_law_decoding([1, 2], 256)  # type: ignore[arg-type]


def test_matches_torchaudio_when_installed() -> None:
    taf = require_torchaudio().functional
    x = _signal((2, 5000))
    assert torch.equal(mu_law_encoding(x, 256), taf.mu_law_encoding(x, 256))
    codes = torch.randint(0, 256, (2, 5000))
    assert torch.equal(mu_law_decoding(codes, 256), taf.mu_law_decoding(codes, 256))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.cuda
def test_cuda_matches_cpu() -> None:
    x = _signal((2, 4000))
    codes = mu_law_encoding(x.cuda(), 256)
    assert codes.device.type == "cuda" and codes.dtype == torch.int64
    assert int((codes.cpu() - mu_law_encoding(x, 256)).abs().max()) <= 1
    out = mu_law_decoding(codes, 256)
    assert out.device.type == "cuda"
    torch.testing.assert_close(out.cpu(), mu_law_decoding(codes.cpu(), 256))
