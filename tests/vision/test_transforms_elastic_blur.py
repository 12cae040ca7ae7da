"""ElasticTransform's field blur: banded matrix products against SciPy's Gaussian filter.

The blur (torchvision's kernel: ``int(8 * sigma + 1)`` taps made odd, reflect
padding) runs as products with the banded blur matrices, block by block over the
inputs each block of outputs reaches. SciPy's ``gaussian_filter1d`` with
``mode="mirror"`` and ``truncate=4`` is the same filter; a field must blur the
same alone or in a batch, so a per-sample chunk gives the per-image result.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR

from trivium.vision import transforms as T
from trivium.vision.io import read_image
from trivium.vision.transforms.warp import _band_plan, _gaussian_blur_displacement

ndimage = pytest.importorskip("scipy.ndimage")


def scipy_blur(x: np.ndarray, sigma: float) -> np.ndarray:
    """Both axes of the last two, float64, SciPy's reflect-without-edge ("mirror")."""
    for axis in (-1, -2):
        x = ndimage.gaussian_filter1d(x, sigma, axis=axis, mode="mirror", truncate=4.0)
    return x


@pytest.mark.parametrize("sigma", [0.7, 3.0, 5.0, 9.0])
@pytest.mark.parametrize("shape", [(37, 41), (224, 224), (150, 257)])
def test_blur_is_scipys_gaussian_filter(sigma: float, shape: tuple[int, int]) -> None:
    g = torch.Generator().manual_seed(int(sigma * 10))
    x = torch.rand(3, *shape, generator=g, dtype=torch.float64) * 2 - 1
    expected = scipy_blur(x.numpy(), sigma)
    out = _gaussian_blur_displacement(x, sigma)
    np.testing.assert_allclose(out.numpy(), expected, rtol=0, atol=1e-12)
    out32 = _gaussian_blur_displacement(x.float(), sigma)
    np.testing.assert_allclose(out32.numpy(), expected, rtol=0, atol=2e-6)


def test_the_bands_hold_every_weight() -> None:
    for n, sigma in [(224, 5.0), (41, 3.0), (300, 1.5), (8, 5.0)]:
        matrix, blocks = _band_plan(n, sigma, torch.float64, torch.device("cpu"))
        covered = torch.zeros_like(matrix)
        assert [b[0] for b in blocks] == sorted(b[0] for b in blocks)
        assert blocks[0][0] == 0 and blocks[-1][1] == n
        for j0, j1, r0, r1 in blocks:
            covered[r0:r1, j0:j1] = matrix[r0:r1, j0:j1]
        assert torch.equal(covered, matrix)
    _, blocks = _band_plan(224, 5.0, torch.float32, torch.device("cpu"))
    assert max(r1 - r0 for _, _, r0, r1 in blocks) <= 32 + 2 * 20  # 41 taps: 20 each side


@pytest.mark.parametrize("shape", [(37, 41), (224, 224), (300, 257)])
def test_a_field_blurs_the_same_alone_or_in_a_batch(shape: tuple[int, int]) -> None:
    x = torch.rand(9, 2, *shape, generator=torch.Generator().manual_seed(1))
    each = torch.cat([_gaussian_blur_displacement(x[i : i + 1], 5.0) for i in range(9)])
    for n in (2, 4, 9):
        assert torch.equal(_gaussian_blur_displacement(x[:n], 5.0), each[:n])


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32], ids=["uint8", "float32"])
def test_per_sample_elastic_equals_each_image_with_its_noise(dtype: torch.dtype) -> None:
    photo = read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")
    batch = torch.stack([photo[:, 9 * k : 9 * k + 224, 7 * k : 7 * k + 224] for k in range(6)])
    batch = batch if dtype == torch.uint8 else batch.to(dtype) / 255
    out = T.ElasticTransform(per_sample=True, generator=torch.Generator().manual_seed(5))(batch)
    # The per-sample noise is one draw of [6, 2, H, W]: image k's field is row k.
    noise = torch.rand(6, 2, 224, 224, generator=torch.Generator().manual_seed(5))
    single = T.ElasticTransform()
    for k in range(6):
        expected = single.transform(batch[k], {"noise": noise[k : k + 1]})
        assert torch.equal(out[k], expected), k
