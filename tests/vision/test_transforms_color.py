"""Color and photometric kernels against independent references.

References: NumPy implementations of torchvision's documented formulas (float64),
Pillow's ImageOps / ImageEnhance on the same pixels, ``colorsys`` for hue and
SciPy's ``convolve1d`` for the Gaussian blur. torchvision itself is compared
where it imports. Tolerances are stated per test.
"""

from __future__ import annotations

import colorsys

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR
from peers import require_torchvision
from PIL import Image, ImageEnhance, ImageFilter, ImageOps
from scipy import ndimage

from trivium.vision.io import read_image
from trivium.vision.transforms import functional as F


@pytest.fixture(scope="module")
def photo() -> torch.Tensor:
    """A real 3 x 96 x 80 uint8 crop (face and background) of a JPEG photo."""
    return read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")[:, 100:196, 200:280].contiguous()


@pytest.fixture(scope="module")
def batch(photo: torch.Tensor) -> torch.Tensor:
    """The photo plus two random images: [3, 3, 96, 80] uint8."""
    g = torch.Generator().manual_seed(0)
    noise = torch.randint(0, 256, (2, 3, 96, 80), dtype=torch.uint8, generator=g)
    return torch.cat((photo[None], noise))


def to_pil(img: torch.Tensor) -> Image.Image:
    array = img.permute(1, 2, 0).numpy()
    return Image.fromarray(array[:, :, 0] if array.shape[2] == 1 else array)


def from_pil(pic: Image.Image) -> np.ndarray:
    array = np.asarray(pic)
    return (array[None] if array.ndim == 2 else array.transpose(2, 0, 1)).astype(np.int64)


def level_diff(a: torch.Tensor | np.ndarray, b: torch.Tensor | np.ndarray) -> np.ndarray:
    return np.abs(np.asarray(a, dtype=np.int64) - np.asarray(b, dtype=np.int64))


# NumPy versions of torchvision's formulas (float64; uint8 results truncated).


def np_gray(x: np.ndarray) -> np.ndarray:
    return (0.2989 * x[..., 0, :, :] + 0.587 * x[..., 1, :, :] + 0.114 * x[..., 2, :, :])[
        ..., None, :, :
    ]


def np_blend(x: np.ndarray, y: np.ndarray, ratio: float, bound: float) -> np.ndarray:
    return np.clip(ratio * x + (1.0 - ratio) * y, 0, bound)


def np_adjust(name: str, img: torch.Tensor, factor: float) -> np.ndarray:
    x = img.numpy().astype(np.float64)
    integer = img.dtype == torch.uint8
    bound = 255.0 if integer else 1.0
    if name == "brightness":
        out = np.clip(x * factor, 0, bound)
    elif name == "saturation":
        gray = np_gray(x)
        out = np_blend(x, np.floor(gray) if integer else gray, factor, bound)
    else:  # contrast
        gray = np_gray(x)
        mean = (np.floor(gray) if integer else gray).mean(axis=(-3, -2, -1), keepdims=True)
        out = np_blend(x, mean, factor, bound)
    return np.trunc(out) if integer else out


KERNELS = {
    "brightness": F.adjust_brightness,
    "contrast": F.adjust_contrast,
    "saturation": F.adjust_saturation,
}


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("factor", [0.0, 0.35, 1.0, 1.7])
def test_blend_kernels_match_the_numpy_formula(batch: torch.Tensor, name: str, factor: float):
    out = KERNELS[name](batch, factor)
    assert out.dtype == torch.uint8 and out.shape == batch.shape
    diff = level_diff(out, np_adjust(name, batch, factor))
    # float32 (ours, torchvision) vs float64 (reference) only flips a floor/truncation
    # next to an integer: at most 1 level, on a few percent of the values.
    assert diff.max() <= 1 and diff.mean() < 0.05
    as_float = batch.to(torch.float64) / 255
    np.testing.assert_allclose(
        KERNELS[name](as_float, factor).numpy(), np_adjust(name, as_float, factor), atol=1e-12
    )


@pytest.mark.parametrize("factor", [0.3, 1.0, 1.8])
def test_blend_kernels_are_close_to_pillow_imageenhance(photo: torch.Tensor, factor: float):
    pic = to_pil(photo)
    enhancers = {
        "brightness": ImageEnhance.Brightness,
        "contrast": ImageEnhance.Contrast,
        "saturation": ImageEnhance.Color,
    }
    for name, enhancer in enhancers.items():
        ours = KERNELS[name](photo, factor)
        diff = level_diff(ours, from_pil(enhancer(pic).enhance(factor)))
        # Pillow rounds its gray image and its mean where torchvision floors/truncates.
        assert diff.max() <= 2, name
        assert diff.mean() < 0.8, name


@pytest.mark.parametrize("name", [*sorted(KERNELS), "hue", "sharpness"])
def test_uint8_and_float_paths_agree(batch: torch.Tensor, name: str):
    kernels = {**KERNELS, "hue": F.adjust_hue, "sharpness": F.adjust_sharpness}
    factor = 0.2 if name == "hue" else 1.6
    from_uint8 = kernels[name](batch, factor).to(torch.int64)
    from_float = kernels[name](batch.float() / 255, factor) * 255
    diff = (from_uint8 - from_float).abs()
    assert diff.max() <= 2 and diff.mean() < 0.6


@pytest.mark.parametrize(
    "kernel, factors",
    [
        (F.adjust_brightness, [0.5, 1.0, 1.5]),
        (F.adjust_contrast, [0.2, 1.0, 1.9]),
        (F.adjust_saturation, [0.0, 0.7, 2.0]),
        (F.adjust_hue, [-0.4, 0.0, 0.25]),
        (F.adjust_sharpness, [0.0, 1.0, 3.0]),
        (F.posterize, [1.0, 4.0, 8.0]),
        (F.solarize, [0.0, 100.0, 200.0]),
    ],
)
def test_per_image_factors_equal_a_loop_over_images(batch: torch.Tensor, kernel, factors):
    batched = kernel(batch, torch.tensor(factors))
    for k, factor in enumerate(factors):
        one = kernel(batch[k], int(factor) if kernel is F.posterize else factor)
        torch.testing.assert_close(batched[k], one, atol=1, rtol=0)
    # Leading batch dims are flattened in order.
    nested = kernel(batch.repeat(2, 1, 1, 1).view(2, 3, 3, 96, 80), torch.tensor(factors * 2))
    torch.testing.assert_close(nested[1], batched, atol=1, rtol=0)


def test_grayscale_matches_pillow_l(photo: torch.Tensor):
    ours = F.rgb_to_grayscale(photo)
    assert ours.shape == (1, 96, 80)
    # Pillow rounds (L = (19595 R + 38470 G + 7471 B + 2^15) >> 16); torchvision truncates.
    diff = level_diff(ours, from_pil(to_pil(photo).convert("L")))
    assert diff.max() <= 1
    three = F.rgb_to_grayscale(photo, num_output_channels=3)
    assert torch.equal(three, ours.expand(3, -1, -1))
    np.testing.assert_allclose(
        F.rgb_to_grayscale(photo.double() / 255).numpy(), np_gray(photo.numpy() / 255), atol=1e-12
    )


def test_grayscale_of_one_channel_is_a_copy_and_bad_channels_raise(photo: torch.Tensor):
    gray = photo[:1]
    assert torch.equal(F.rgb_to_grayscale(gray), gray)
    assert F.rgb_to_grayscale(gray, 3).shape == (3, 96, 80)
    with pytest.raises(ValueError, match=r"rgb_to_grayscale.*1 or 3 channels"):
        F.rgb_to_grayscale(torch.zeros(4, 5, 5))
    with pytest.raises(ValueError, match="num_output_channels"):
        F.rgb_to_grayscale(photo, 2)


def colorsys_hue(img: np.ndarray, shift: float) -> np.ndarray:
    """Hue rotation through Python's colorsys, pixel by pixel ([3, H, W] floats in [0, 1])."""
    out = np.empty_like(img)
    for y in range(img.shape[1]):
        for x in range(img.shape[2]):
            h, s, v = colorsys.rgb_to_hsv(*img[:, y, x])
            out[:, y, x] = colorsys.hsv_to_rgb((h + shift) % 1.0, s, v)
    return out


@pytest.mark.parametrize("shift", [-0.5, -0.1, 0.3])
def test_adjust_hue_matches_colorsys(photo: torch.Tensor, shift: float):
    small = photo[:, ::6, ::5]
    ref = colorsys_hue(small.double().numpy() / 255, shift)
    np.testing.assert_allclose(F.adjust_hue(small.double() / 255, shift).numpy(), ref, atol=1e-9)
    # uint8: torchvision's conversion back (x * 255.999, truncated).
    expected = np.trunc(ref * 255.999)
    assert level_diff(F.adjust_hue(small, shift), expected).max() <= 1


def test_adjust_hue_keeps_gray_and_single_channel(photo: torch.Tensor):
    gray = photo[:1].expand(3, -1, -1)
    assert level_diff(F.adjust_hue(gray, 0.3), gray).max() <= 1
    assert torch.equal(F.adjust_hue(photo[:1], 0.3), photo[:1])
    with pytest.raises(ValueError, match="hue_factor must be in"):
        F.adjust_hue(photo, 0.7)


def test_adjust_gamma_matches_numpy(batch: torch.Tensor):
    x = batch.double() / 255
    np.testing.assert_allclose(
        F.adjust_gamma(x, 0.5, 1.2).numpy(), np.clip(1.2 * x.numpy() ** 0.5, 0, 1), atol=1e-12
    )
    expected = np.trunc((batch.numpy() / 255.0) ** 2.2 * 255.999)
    assert level_diff(F.adjust_gamma(batch, 2.2), expected).max() <= 1


@pytest.mark.parametrize("bits", [1, 3, 7, 8])
def test_posterize_invert_solarize_equal_pillow(photo: torch.Tensor, bits: int):
    pic = to_pil(photo)
    np.testing.assert_array_equal(
        F.posterize(photo, bits).numpy(), from_pil(ImageOps.posterize(pic, bits))
    )
    threshold = 30 * bits
    np.testing.assert_array_equal(
        F.solarize(photo, threshold).numpy(), from_pil(ImageOps.solarize(pic, threshold))
    )
    np.testing.assert_array_equal(F.invert(photo).numpy(), from_pil(ImageOps.invert(pic)))
    # Float inputs: torchvision's levels on the [0, 1] scale.
    x = photo.double() / 255
    levels = 2**bits
    np.testing.assert_allclose(
        F.posterize(x, bits).numpy(),
        np.clip(np.floor(x.numpy() * levels), 0, levels - 1) / levels,
        atol=1e-12,
    )
    np.testing.assert_array_equal(F.invert(x).numpy(), 1 - x.numpy())


def test_posterize_to_zero_bits_is_black(photo: torch.Tensor):
    assert int(F.posterize(photo, 0).max()) == 0
    assert float(F.posterize(photo.float() / 255, 0).max()) == 0.0


def test_autocontrast_matches_pillow(photo: torch.Tensor):
    low_contrast = (photo.float() * 0.5 + 40).to(torch.uint8)
    ours = F.autocontrast(low_contrast)
    # Pillow stretches each band with a truncated lookup table; rounding differs by <= 1.
    diff = level_diff(ours, from_pil(ImageOps.autocontrast(to_pil(low_contrast))))
    assert diff.max() <= 1
    assert [int(ours[c].min()) for c in range(3)] == [0, 0, 0]
    assert [int(ours[c].max()) for c in range(3)] == [255, 255, 255]
    flat = torch.full((3, 4, 4), 0.3)
    assert torch.equal(F.autocontrast(flat), flat)


def test_equalize_equals_pillow_on_every_image(batch: torch.Tensor, photo: torch.Tensor):
    dark = (photo.float() * 0.3).to(torch.uint8)  # a narrow histogram
    images = torch.cat((batch, dark[None], torch.full((1, 3, 96, 80), 7, dtype=torch.uint8)))
    ours = F.equalize(images)
    for k in range(images.shape[0]):
        expected = from_pil(ImageOps.equalize(to_pil(images[k])))
        np.testing.assert_array_equal(ours[k].numpy(), expected, err_msg=f"image {k}")
    gray = F.equalize(photo[:1])
    np.testing.assert_array_equal(gray.numpy(), from_pil(ImageOps.equalize(to_pil(photo[:1]))))


def np_gaussian_blur(x: np.ndarray, ksize: int, sigma: float) -> np.ndarray:
    half = (ksize - 1) * 0.5
    taps = np.exp(-0.5 * (np.linspace(-half, half, ksize) / sigma) ** 2)
    taps /= taps.sum()
    # scipy's "mirror" is torch's "reflect" (edge not repeated).
    out = ndimage.convolve1d(x, taps, axis=-1, mode="mirror")
    return ndimage.convolve1d(out, taps, axis=-2, mode="mirror")


@pytest.mark.parametrize("ksize, sigma", [(3, 0.8), (7, 1.5), (11, 3.0)])
def test_gaussian_blur_matches_scipy(batch: torch.Tensor, ksize: int, sigma: float):
    x = batch.double() / 255
    np.testing.assert_allclose(
        F.gaussian_blur(x, [ksize, ksize], [sigma, sigma]).numpy(),
        np_gaussian_blur(x.numpy(), ksize, sigma),
        atol=1e-12,
    )
    expected = np.round(np_gaussian_blur(batch.numpy().astype(np.float64), ksize, sigma))
    diff = level_diff(F.gaussian_blur(batch, ksize, sigma), expected)
    assert diff.max() <= 1 and diff.mean() < 0.01


def test_gaussian_blur_per_image_sigma_and_pillow_sanity(batch: torch.Tensor, photo: torch.Tensor):
    sigmas = torch.tensor([0.5, 1.0, 2.0])
    batched = F.gaussian_blur(batch, [9, 9], sigmas)
    for k in range(3):
        torch.testing.assert_close(
            batched[k], F.gaussian_blur(batch[k], 9, float(sigmas[k])), atol=1, rtol=0
        )
    # Pillow's GaussianBlur is a box approximation: only roughly equal.
    pil = from_pil(to_pil(photo).filter(ImageFilter.GaussianBlur(2.0)))
    ours = F.gaussian_blur(photo, 13, 2.0)
    assert level_diff(ours[:, 8:-8, 8:-8], pil[:, 8:-8, 8:-8]).mean() < 2.0
    with pytest.raises(ValueError, match="odd"):
        F.gaussian_blur(photo, 4)
    with pytest.raises(ValueError, match="too large"):
        F.gaussian_blur(photo[:, :4, :4], 9)


def test_adjust_sharpness_is_close_to_pillow(photo: torch.Tensor):
    pic = to_pil(photo)
    for factor in (0.0, 0.5, 2.0):
        ours = F.adjust_sharpness(photo, factor)
        diff = level_diff(ours, from_pil(ImageEnhance.Sharpness(pic).enhance(factor)))
        assert diff.max() <= 2 and diff.mean() < 0.6, factor
        assert torch.equal(ours[:, 0], photo[:, 0]) and torch.equal(ours[:, :, -1], photo[:, :, -1])


def test_kernels_reject_bad_input(photo: torch.Tensor):
    with pytest.raises(ValueError, match=r"adjust_brightness.*1 or 3 channels"):
        F.adjust_brightness(torch.zeros(4, 5, 5), 1.0)
    with pytest.raises(ValueError, match=r"adjust_contrast.*\[0.0, inf\]"):
        F.adjust_contrast(photo, -0.5)
    with pytest.raises(TypeError, match=r"adjust_saturation.*uint8, uint16 or floating"):
        F.adjust_saturation(photo.to(torch.int32), 1.0)
    with pytest.raises(ValueError, match=r"adjust_hue.*image tensor"):
        F.adjust_hue(torch.zeros(5, 5), 0.1)
    with pytest.raises(ValueError, match="one value per image"):
        F.adjust_brightness(torch.zeros(2, 3, 4, 4), torch.ones(3))
    with pytest.raises(ValueError, match="posterize: bits"):
        F.posterize(photo, 9)
    with pytest.raises(ValueError, match="solarize: threshold"):
        F.solarize(photo.float() / 255, 128)


@pytest.mark.parametrize(
    "ours_name, args",
    [
        ("adjust_brightness", (1.4,)),
        ("adjust_contrast", (0.6,)),
        ("adjust_saturation", (1.7,)),
        ("adjust_hue", (0.2,)),
        ("adjust_gamma", (0.7,)),
        ("adjust_sharpness", (1.8,)),
        ("rgb_to_grayscale", ()),
        ("invert", ()),
        ("posterize", (3,)),
        ("solarize", (100,)),
        ("autocontrast", ()),
        ("equalize", ()),
        ("gaussian_blur", ([5, 5], [1.2, 1.2])),
    ],
)
def test_matches_torchvision(batch: torch.Tensor, ours_name: str, args: tuple):
    tvf = require_torchvision().transforms.v2.functional
    ours = getattr(F, ours_name)(batch, *args)
    theirs = getattr(tvf, ours_name)(batch, *args)
    assert level_diff(ours, theirs).max() <= 1
    as_float = batch.float() / 255
    float_args = (100 / 255,) if ours_name == "solarize" else args
    torch.testing.assert_close(
        getattr(F, ours_name)(as_float, *float_args),
        getattr(tvf, ours_name)(as_float, *float_args),
        atol=1e-5,
        rtol=0,
    )
