"""Rotate, affine, perspective, elastic: against Pillow / NumPy, batched warps, transforms."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from peers import require_torchvision
from PIL import Image

from trivium.vision import transforms as T
from trivium.vision.io import decode_jpeg, read_file
from trivium.vision.transforms import functional as F

PHOTO = Path(__file__).parents[1] / "assets" / "images" / "jpeg" / "tv-grace_hopper_517x606.jpg"


@pytest.fixture(scope="module")
def photo() -> torch.Tensor:
    return decode_jpeg(read_file(PHOTO))[:, 100:400, 50:450]  # uint8 [3, 300, 400]


def hwc(img: torch.Tensor) -> np.ndarray:
    return img.permute(1, 2, 0).numpy()


def pil(img: torch.Tensor) -> Image.Image:
    return Image.fromarray(np.ascontiguousarray(hwc(img)))


def assert_close_to_pillow(ours: torch.Tensor, ref: np.ndarray, bad_fraction: float) -> None:
    """Nearly all pixels within 2 levels; sampling ties on edges may flip a few pixels."""
    diff = np.abs(hwc(ours).astype(int) - ref.astype(int))
    assert diff.shape == ref.shape
    assert (diff > 2).mean() <= bad_fraction, (diff > 2).mean()


def forward_affine(center, angle, translate, scale, shear) -> np.ndarray:
    """torchvision's documented forward map T * C * RSS * C^-1 (pixel coordinates), as 3x3."""
    rot, sx, sy = (math.radians(v) for v in (angle, *shear))
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    rss = np.array([[a * scale, b * scale, 0], [c * scale, d * scale, 0], [0, 0, 1]])
    to_center = np.array([[1, 0, center[0]], [0, 1, center[1]], [0, 0, 1]], dtype=float)
    shift = np.array([[1, 0, translate[0]], [0, 1, translate[1]], [0, 0, 1]], dtype=float)
    return shift @ to_center @ rss @ np.linalg.inv(to_center)


@pytest.mark.parametrize(
    ("angle", "translate", "scale", "shear"),
    [
        (30.0, (0, 0), 1.0, (0.0, 0.0)),
        (-12.0, (15, -7), 0.8, (10.0, 0.0)),
        (5.0, (3, 4), 1.2, (-8.0, 6.0)),
    ],
)
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_affine_matches_pillow(
    photo: torch.Tensor, angle, translate, scale, shear, mode: str
) -> None:
    h, w = photo.shape[-2:]
    inverse = np.linalg.inv(forward_affine((w * 0.5, h * 0.5), angle, translate, scale, shear))
    resample = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR}[mode]
    ref = np.asarray(
        pil(photo).transform((w, h), Image.AFFINE, inverse[:2].flatten().tolist(), resample)
    )
    ours = F.affine(photo, angle, list(translate), scale, list(shear), mode)
    assert_close_to_pillow(ours, ref, 0.01)


@pytest.mark.parametrize("angle", [30.0, -45.0, 17.0, 180.0])
@pytest.mark.parametrize("expand", [False, True])
def test_rotate_matches_pillow(photo: torch.Tensor, angle: float, expand: bool) -> None:
    ref = np.asarray(pil(photo).rotate(angle, Image.NEAREST, expand=expand))
    assert_close_to_pillow(F.rotate(photo, angle, expand=expand), ref, 0.005)
    ref = np.asarray(pil(photo).rotate(angle, Image.BILINEAR, expand=expand, center=(100, 80)))
    if not expand:
        assert_close_to_pillow(F.rotate(photo, angle, "bilinear", center=[100, 80]), ref, 0.01)


def test_rotate_multiples_of_90_are_exact() -> None:
    img = torch.randint(0, 256, (2, 3, 6, 6), dtype=torch.uint8)
    np.testing.assert_array_equal(
        F.rotate(img, 90.0).numpy(), np.rot90(img.numpy(), 1, axes=(-2, -1))
    )
    wide = torch.rand(3, 4, 7)
    assert F.rotate(wide, 270.0, expand=True).shape == (3, 7, 4)
    torch.testing.assert_close(F.rotate(wide, -180.0), wide.flip(-1).flip(-2))


def test_fill_fills_what_comes_from_outside() -> None:
    img = torch.full((3, 9, 9), 100, dtype=torch.uint8)
    out = F.affine(img, 0.0, [4, 0], 1.0, [0.0, 0.0], fill=[10, 20, 30])
    assert out[:, :, :4].tolist() == [[[v] * 4] * 9 for v in (10, 20, 30)]
    assert bool((out[:, :, 4:] == 100).all())
    out = F.rotate(torch.ones(1, 8, 8), 45.0, "bilinear", fill=0.5)
    assert abs(float(out[0, 0, 0]) - 0.5) < 1e-6 and abs(float(out[0, 4, 4]) - 1.0) < 1e-6


def test_perspective_matches_pillow(photo: torch.Tensor) -> None:
    h, w = photo.shape[-2:]
    start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
    end = [[20, 10], [w - 31, 5], [w - 1, h - 41], [12, h - 9]]
    # Independent solve: coefficients mapping output (end) points to input (start) points.
    rows, rhs = [], []
    for (x, y), (u, v) in zip(end, start, strict=True):
        rows += [[x, y, 1, 0, 0, 0, -u * x, -u * y], [0, 0, 0, x, y, 1, -v * x, -v * y]]
        rhs += [u, v]
    coeffs = np.linalg.solve(np.array(rows, float), np.array(rhs, float))
    for mode, resample in (("nearest", Image.NEAREST), ("bilinear", Image.BILINEAR)):
        ref = np.asarray(pil(photo).transform((w, h), Image.PERSPECTIVE, coeffs.tolist(), resample))
        assert_close_to_pillow(F.perspective(photo, start, end, mode), ref, 0.01)
        assert_close_to_pillow(
            F.perspective(photo, None, None, mode, coefficients=coeffs.tolist()), ref, 0.01
        )


def test_elastic_displacement_of_one_pixel_shifts_the_image() -> None:
    img = torch.rand(2, 3, 8, 10)
    displacement = torch.zeros(1, 8, 10, 2)
    displacement[..., 0] = 2.0 / 10  # one pixel to the right, in normalised units
    out = F.elastic(img, displacement, "nearest")
    torch.testing.assert_close(out[..., :-1], img[..., 1:])
    assert bool((out[..., -1] == 0).all())
    with pytest.raises(ValueError, match="displacement"):
        F.elastic(img, torch.zeros(1, 8, 8, 2))


def test_batched_affine_equals_per_image_affine() -> None:
    img = torch.rand(4, 3, 20, 24)
    angle = torch.tensor([0.0, 30.0, -50.0, 90.0])
    translate = torch.tensor([[0.0, 0.0], [2.0, -3.0], [1.0, 1.0], [-4.0, 0.0]])
    scale = torch.tensor([1.0, 0.9, 1.3, 1.0])
    shear = torch.tensor([[0.0, 0.0], [5.0, 0.0], [-10.0, 3.0], [0.0, 0.0]])
    out = F.affine(img, angle, translate, scale, shear, "bilinear", fill=[0.2, 0.3, 0.4])
    for n in range(4):
        ref = F.affine(
            img[n],
            float(angle[n]),
            translate[n].tolist(),
            float(scale[n]),
            shear[n].tolist(),
            "bilinear",
            fill=[0.2, 0.3, 0.4],
        )
        torch.testing.assert_close(out[n], ref, atol=1e-4, rtol=0)
    rotated = F.rotate(img, angle, "bilinear")
    for n in range(1, 3):
        torch.testing.assert_close(
            rotated[n], F.rotate(img[n], float(angle[n]), "bilinear"), atol=1e-4, rtol=0
        )


def test_batched_perspective_equals_per_image() -> None:
    img = torch.rand(3, 1, 16, 16)
    start = torch.tensor([[0, 0], [15, 0], [15, 15], [0, 15]], dtype=torch.float64).expand(3, 4, 2)
    end = start + torch.tensor([[1.0, 2.0], [-3.0, 1.0], [0.0, -2.0], [2.0, 0.0]]) * torch.arange(
        3
    ).view(3, 1, 1)
    out = F.perspective(img, start, end)
    for n in range(3):
        torch.testing.assert_close(
            out[n], F.perspective(img[n], start[n].tolist(), end[n].tolist()), atol=1e-4, rtol=0
        )


def test_uint8_warp_agrees_with_float(photo: torch.Tensor) -> None:
    ours = F.affine(photo, 20.0, [3, 4], 1.1, [5.0, 0.0], "bilinear").int()
    as_float = F.affine(photo.float() / 255, 20.0, [3, 4], 1.1, [5.0, 0.0], "bilinear")
    assert ((ours - (as_float * 255).round().int()).abs() > 1).sum() == 0


# Transforms.


def test_random_rotation_draws_in_range_and_is_reproducible() -> None:
    img = torch.zeros(1, 21, 21)
    img[0, 10, 15:] = 1  # a ray from the centre to the right
    g = torch.Generator().manual_seed(0)
    t = T.RandomRotation((10, 80), interpolation="bilinear", generator=g)
    for _ in range(5):
        out = t(img)
        ys, xs = torch.nonzero(out[0] > 0.5, as_tuple=True)
        angle = math.degrees(
            math.atan2(-(float(ys.double().mean()) - 10), float(xs.double().mean()) - 10)
        )
        assert 5 <= angle <= 85  # counter-clockwise, within the range
    x = torch.rand(3, 9, 9)
    a = T.RandomRotation(45, generator=torch.Generator().manual_seed(1))(x)
    assert torch.equal(a, T.RandomRotation(45, generator=torch.Generator().manual_seed(1))(x))
    assert not torch.equal(a, T.RandomRotation(45, generator=torch.Generator().manual_seed(2))(x))


def test_per_sample_affine_warps_each_image_differently() -> None:
    img = torch.rand(1, 3, 16, 16).expand(8, 3, 16, 16)
    out = T.RandomAffine(
        30, translate=(0.2, 0.2), per_sample=True, generator=torch.Generator().manual_seed(0)
    )(img)
    distinct = {tuple(o.flatten()[:50].tolist()) for o in out}
    assert len(distinct) == 8
    same = T.RandomAffine(30, translate=(0.2, 0.2), generator=torch.Generator().manual_seed(0))(img)
    assert all(torch.equal(s, same[0]) for s in same)


def test_random_perspective_p_and_per_sample() -> None:
    img = torch.rand(16, 3, 12, 12)
    assert torch.equal(T.RandomPerspective(p=0.0)(img), img)
    out = T.RandomPerspective(p=0.5, per_sample=True, generator=torch.Generator().manual_seed(0))(
        img
    )
    unchanged = [bool(torch.equal(o, i)) for o, i in zip(out, img, strict=True)]
    assert 0 < sum(unchanged) < 16


def test_elastic_transform_is_smooth_and_reproducible() -> None:
    img = torch.linspace(0, 1, 32).expand(1, 32, 32).contiguous()
    a = T.ElasticTransform(alpha=5.0, sigma=4.0, generator=torch.Generator().manual_seed(0))(img)
    b = T.ElasticTransform(alpha=5.0, sigma=4.0, generator=torch.Generator().manual_seed(0))(img)
    assert torch.equal(a, b) and not torch.equal(a, img)
    inner = (a - img)[:, 4:-4, 4:-4].abs()
    assert float(inner.max()) < 0.2  # a small, smooth displacement keeps the gradient
    per = T.ElasticTransform(per_sample=True)(torch.rand(3, 1, 32, 32))
    assert per.shape == (3, 1, 32, 32)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: T.RandomRotation(-5), ValueError, "RandomRotation: degrees"),
        (lambda: T.RandomRotation(5, expand=True, per_sample=True), ValueError, "expand"),
        (lambda: T.RandomAffine(5, translate=(2, 0)), ValueError, "translate"),
        (lambda: T.RandomAffine(5, scale=(0, 1)), ValueError, "scale"),
        (lambda: T.RandomAffine(5, shear=(1, 2, 3)), TypeError, "shear"),
        (lambda: T.RandomPerspective(1.5), ValueError, "distortion_scale"),
        (lambda: T.ElasticTransform(alpha=-1.0), ValueError, "alpha"),
        (lambda: T.RandomRotation(5, interpolation="nearest-exact"), ValueError, "interpolation"),
    ],
)
def test_bad_arguments(make, error, match) -> None:
    with pytest.raises(error, match=match):
        make()


def test_bad_images_and_fill() -> None:
    with pytest.raises(ValueError, match="RandomAffine: fill has 3 values"):
        T.RandomAffine(5, fill=[1, 2, 3])(torch.zeros(1, 4, 4))
    with pytest.raises(TypeError, match="RandomRotation"):
        T.RandomRotation(5)(torch.zeros(3, 4, 4, dtype=torch.int16))


def test_pil_in_pil_out(photo: torch.Tensor) -> None:
    t = T.RandomAffine(20, scale=(0.9, 1.1), generator=torch.Generator().manual_seed(0))
    expected = T.RandomAffine(20, scale=(0.9, 1.1), generator=torch.Generator().manual_seed(0))(
        photo
    )
    out = t(pil(photo))
    assert isinstance(out, Image.Image)
    np.testing.assert_array_equal(np.asarray(out), hwc(expected))


def test_compile_fullgraph_every_warp_transform() -> None:
    img = torch.randint(0, 256, (2, 3, 12, 12), dtype=torch.uint8)
    cases = [
        T.RandomRotation(20),
        T.RandomAffine(10, (0.1, 0.1), (0.9, 1.1), (-5, 5, -5, 5)),
        T.RandomPerspective(),
        T.ElasticTransform(sigma=2.0),
        T.RandomAffine(10, per_sample=True),
    ]
    with torch._dynamo.config.patch(recompile_limit=64):
        for t in cases:
            out = torch.compile(t, fullgraph=True, backend="eager")(img)
            assert out.shape == img.shape and out.dtype == img.dtype


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(photo: torch.Tensor) -> None:
    gpu = photo.cuda()
    for fn in (
        lambda x: F.rotate(x, 33.0, "bilinear", expand=True, fill=[1, 2, 3]),
        lambda x: F.affine(x, -10.0, [5, 3], 1.2, [4.0, 1.0], "nearest"),
        lambda x: F.perspective(
            x, [[0, 0], [399, 0], [399, 299], [0, 299]], [[9, 3], [390, 0], [399, 280], [5, 290]]
        ),
    ):
        out, ref = fn(gpu), fn(photo)
        assert out.device.type == "cuda"
        assert (out.cpu().int() - ref.int()).abs().gt(1).float().mean() < 0.001
    t = T.RandomAffine(15, per_sample=True, generator=torch.Generator(device="cuda").manual_seed(0))
    assert t(torch.stack([gpu, gpu])).device.type == "cuda"


def test_kernels_match_torchvision(photo: torch.Tensor) -> None:
    tvf = require_torchvision().transforms.v2.functional
    pairs = [
        (F.rotate(photo, 33.0, expand=True), tvf.rotate(photo, 33.0, expand=True)),
        (
            F.affine(photo, 12.0, [4, -3], 0.9, [5.0, 2.0]),
            tvf.affine(photo, 12.0, [4, -3], 0.9, [5.0, 2.0]),
        ),
        (
            F.perspective(
                photo,
                [[0, 0], [399, 0], [399, 299], [0, 299]],
                [[9, 3], [390, 0], [399, 280], [5, 290]],
            ),
            tvf.perspective(
                photo,
                [[0, 0], [399, 0], [399, 299], [0, 299]],
                [[9, 3], [390, 0], [399, 280], [5, 290]],
            ),
        ),
    ]
    for ours, theirs in pairs:
        assert ours.shape == theirs.shape
        assert (ours.int() - theirs.int()).abs().gt(1).float().mean() < 0.001
