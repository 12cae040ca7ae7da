"""Every functional kernel against ``torchvision.transforms.v2.functional``, where it imports.

Each case runs on a real photo and on random pixels, as uint8 and as float. The
tolerance is on uint8 levels (float results are scaled by 255 first):
``max_diff`` bounds every pixel, ``frac`` bounds the share of pixels more than
one level apart (interpolating kernels round differently at some pixels).

uint16 runs on a real 16-bit photo and on 16-bit noise, in uint16 levels: torchvision
where it takes uint16, else (``uint16_ref="float"``) our float kernel on ``x / 65535``,
scaled back and rounded. Exact kernels stay exact; kernels that resample or blend may
be one level apart (torchvision truncates resized uint16 values, we round; the float
reference rounds where the integer kernels truncate, as torchvision's do); warps keep
their uint8 share of boundary pixels that may differ wholly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from image_assets import JPEG_DIR, PNG_DIR
from peers import require_torchvision

from trivium.vision.io import decode_jpeg, read_image
from trivium.vision.transforms import functional as F


@dataclass(frozen=True)
class Case:
    name: str
    call: Callable[[Any, torch.Tensor], torch.Tensor]  # (functional module, image) -> image
    max_diff: float = 0.0
    frac: float = 0.0
    float_only: bool = False
    int_only: bool = False
    # uint16: "torchvision", or "float" where torchvision's uint16 result is wrong or
    # missing: its bicubic resize wraps instead of clamping, its float -> uint16 step
    # (x * 65535.999, which is 65536 in float32) wraps 1.0 to 0 in hue and gamma, and
    # torch has no uint16 flip or >=.
    uint16_ref: str = "torchvision"


def _half(img: torch.Tensor) -> float:
    """The middle of ``img``'s scale: 128 for uint8, 32768 for uint16, 0.5 for floats."""
    return 0.5 if img.is_floating_point() else (torch.iinfo(img.dtype).max + 1) / 2


def _corners(img: torch.Tensor) -> tuple[list[list[int]], list[list[int]]]:
    h, w = img.shape[-2:]
    start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
    end = [[5, 3], [w - 8, 0], [w - 1, h - 9], [2, h - 4]]
    return start, end


CASES = [
    # geometry
    Case("resize bilinear", lambda f, x: f.resize(x, [97, 131], antialias=True), 1, 0.0),
    Case("resize up", lambda f, x: f.resize(x, [301, 257], antialias=True), 1, 0.0),
    Case(
        "resize bicubic",
        lambda f, x: f.resize(x, [90, 70], f.InterpolationMode.BICUBIC),
        2,
        0.01,
        uint16_ref="float",
    ),
    Case("resize nearest", lambda f, x: f.resize(x, [77, 91], f.InterpolationMode.NEAREST)),
    Case("resize max_size", lambda f, x: f.resize(x, 100, max_size=120), 1, 0.0),
    Case("crop", lambda f, x: f.crop(x, -3, 5, 40, 50)),
    Case("center_crop", lambda f, x: f.center_crop(x, [310, 20])),
    Case("resized_crop", lambda f, x: f.resized_crop(x, 5, 6, 100, 90, [32, 40]), 1, 0.0),
    Case("pad constant", lambda f, x: f.pad(x, [3, 4], fill=7)),
    Case("pad edge", lambda f, x: f.pad(x, [1, 2, 3, 4], padding_mode="edge")),
    Case("pad reflect", lambda f, x: f.pad(x, [4, 3], padding_mode="reflect")),
    Case("pad symmetric", lambda f, x: f.pad(x, [1, 2, 3, 4], padding_mode="symmetric")),
    Case("horizontal_flip", lambda f, x: f.horizontal_flip(x), uint16_ref="float"),
    Case("vertical_flip", lambda f, x: f.vertical_flip(x)),
    Case("five_crop", lambda f, x: torch.stack(f.five_crop(x, [30, 40]))),
    Case("ten_crop", lambda f, x: torch.stack(f.ten_crop(x, [30, 40], vertical_flip=True))),
    Case(
        "ten_crop horizontal", lambda f, x: torch.stack(f.ten_crop(x, [30, 40])), uint16_ref="float"
    ),
    Case("rotate", lambda f, x: f.rotate(x, 33.0), 255, 0.002),
    Case(
        "rotate expand bilinear",
        lambda f, x: f.rotate(x, 33.0, f.InterpolationMode.BILINEAR, expand=True),
        255,
        0.002,
    ),
    Case("affine", lambda f, x: f.affine(x, 12.0, [4, -3], 0.9, [5.0, 2.0]), 255, 0.002),
    Case("perspective", lambda f, x: f.perspective(x, *_corners(x)), 255, 0.005),
    # conversion
    Case("to_dtype", lambda f, x: f.to_dtype(x, torch.float32, scale=True).mul(255)),
    Case(
        "normalize",
        lambda f, x: f.normalize(x, [0.4, 0.5, 0.6], [0.2, 0.3, 0.4]),
        1e-3,
        0.0,
        float_only=True,
    ),
    # colour
    Case("rgb_to_grayscale", lambda f, x: f.rgb_to_grayscale(x, 3), 1, 0.0),
    Case("adjust_brightness", lambda f, x: f.adjust_brightness(x, 1.3), 1, 0.0),
    Case("adjust_contrast", lambda f, x: f.adjust_contrast(x, 0.6), 1, 0.0),
    Case("adjust_saturation", lambda f, x: f.adjust_saturation(x, 1.7), 1, 0.0),
    Case("adjust_hue", lambda f, x: f.adjust_hue(x, 0.2), 2, 0.01, uint16_ref="float"),
    Case("adjust_gamma", lambda f, x: f.adjust_gamma(x, 0.7, 1.1), 1, 0.0, uint16_ref="float"),
    Case("adjust_sharpness", lambda f, x: f.adjust_sharpness(x, 2.0), 1, 0.0),
    Case("invert", lambda f, x: f.invert(x)),
    Case("posterize", lambda f, x: f.posterize(x, 3), int_only=True),
    Case("solarize", lambda f, x: f.solarize(x, _half(x)), int_only=True, uint16_ref="float"),
    Case("autocontrast", lambda f, x: f.autocontrast(x), 1, 0.0),
    Case("equalize", lambda f, x: f.equalize(x), 1, 0.0, int_only=True),
    Case("gaussian_blur", lambda f, x: f.gaussian_blur(x, [7, 5], [1.5, 0.8]), 1, 0.0),
    Case("erase", lambda f, x: f.erase(x, 10, 20, 30, 40, torch.tensor(0))),
]


@pytest.fixture(scope="module")
def tvf() -> Any:
    return require_torchvision().transforms.v2.functional


@pytest.fixture(scope="module")
def images() -> dict[str, torch.Tensor]:
    photo = decode_jpeg((JPEG_DIR / "tv-grace_hopper_517x606.jpg").read_bytes())[:, :300, :280]
    noise = torch.randint(
        0, 256, (2, 3, 61, 83), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
    )
    return {"photo": photo.contiguous(), "random batch": noise}


@pytest.fixture(scope="module")
def images16() -> dict[str, torch.Tensor]:
    photo = read_image(PNG_DIR / "tv-rgb_pytorch16.png")  # 100 x 100 RGB, 16 bits
    noise = torch.randint(
        0, 65536, (2, 3, 61, 83), dtype=torch.int32, generator=torch.Generator().manual_seed(0)
    )
    gradient = read_image(PNG_DIR / "basn2c16.png").repeat(1, 4, 4)  # 128 x 128, up to 65535
    return {"photo": photo, "gradient": gradient, "random batch": noise.to(torch.uint16)}


def _levels(x: torch.Tensor) -> torch.Tensor:
    return x.double() if x.dtype == torch.uint8 else x.double() * 255


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernel_on_uint16_matches_torchvision(case: Case, tvf: Any, images16) -> None:
    if case.float_only:
        with pytest.raises(TypeError, match="floating"):
            case.call(F, images16["photo"])
        return
    for label, image in images16.items():
        ours = case.call(F, image)
        if case.uint16_ref == "float":
            reference = case.call(F, image.float() / 65535).mul(65535).round().clamp(0, 65535)
        else:
            reference = case.call(tvf, image)
            assert reference.dtype == ours.dtype, (case.name, label)
        assert ours.shape == reference.shape, (case.name, label)
        assert ours.dtype == (torch.float32 if case.name == "to_dtype" else torch.uint16)
        scale = 65535 if ours.is_floating_point() else 1  # to_dtype: compare in levels
        diff = (ours.double() * scale - reference.double() * scale).abs()
        max_diff = 65535 if case.max_diff > 2 else min(case.max_diff, 1)
        assert diff.max() <= max_diff + 1e-6, (case.name, label, float(diff.max()))
        assert diff.gt(1 + 1e-6).double().mean() <= case.frac, (case.name, label)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32], ids=["uint8", "float"])
def test_kernel_matches_torchvision(case: Case, dtype: torch.dtype, tvf: Any, images) -> None:
    if (case.float_only and dtype == torch.uint8) or (case.int_only and dtype != torch.uint8):
        pytest.skip(f"{case.name} takes {'float' if case.float_only else 'integer'} images only")
    for label, image in images.items():
        x = image if dtype == torch.uint8 else image.float() / 255
        ours, theirs = case.call(F, x), case.call(tvf, x)
        assert ours.shape == theirs.shape, (case.name, label)
        assert ours.dtype == theirs.dtype, (case.name, label)
        diff = (_levels(ours) - _levels(theirs)).abs()
        assert diff.max() <= case.max_diff + 1e-6, (case.name, label, float(diff.max()))
        assert diff.gt(1 + 1e-6).double().mean() <= case.frac, (case.name, label)
