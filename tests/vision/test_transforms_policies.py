"""AutoAugment, RandAugment, TrivialAugmentWide, AugMix: op spaces, magnitudes, seeds, dtypes.

The operations are the tested kernels; here we check which operations are drawn
with which magnitudes (recorded through ``_apply_op``), the geometric operations
against Pillow's affine transforms, reproducibility, dtypes and compile.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR
from peers import require_torchvision
from PIL import Image

from trivium.vision import transforms as T
from trivium.vision.io import read_image


def seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.fixture(scope="module")
def photo() -> torch.Tensor:
    return read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")[:, 120:168, 220:260].contiguous()


def record_ops(t, img: torch.Tensor, seeds: range) -> list[tuple[str, float]]:
    """Every (operation, magnitude) ``t`` applies over the seeds."""
    calls: list[tuple[str, float]] = []
    apply = t._apply_op

    def spy(x, name, magnitude):
        calls.append((name, float(magnitude)))
        return apply(x, name, magnitude)

    t._apply_op = spy
    for s in seeds:
        t.generator = seeded(s)
        t(img)
    return calls


def linspace(high: float, bins: int) -> list[float]:
    return torch.linspace(0.0, high, bins).tolist()


def posterize_bins(top: int, spread: int, bins: int) -> list[float]:
    return (top - torch.arange(bins) / ((bins - 1) / spread)).round().int().tolist()


def test_rand_augment_draws_the_torchvision_space_at_one_magnitude(photo: torch.Tensor):
    calls = record_ops(T.RandAugment(num_ops=2, magnitude=9), photo, range(150))
    assert len(calls) == 300
    names = Counter(name for name, _ in calls)
    space = {
        "Identity",
        "ShearX",
        "ShearY",
        "TranslateX",
        "TranslateY",
        "Rotate",
        "Brightness",
        "Color",
        "Contrast",
        "Sharpness",
        "Posterize",
        "Solarize",
        "AutoContrast",
        "Equalize",
    }
    assert set(names) == space  # 14 ops, all drawn
    h, w = photo.shape[-2:]
    expected = {
        "ShearX": 0.3 * 9 / 30,
        "ShearY": 0.3 * 9 / 30,
        "Rotate": 30.0 * 9 / 30,
        "TranslateX": 150 / 331 * w * 9 / 30,
        "TranslateY": 150 / 331 * h * 9 / 30,
        "Brightness": 0.9 * 9 / 30,
        "Color": 0.9 * 9 / 30,
        "Contrast": 0.9 * 9 / 30,
        "Sharpness": 0.9 * 9 / 30,
        "Posterize": posterize_bins(8, 4, 31)[9],
        "Solarize": 1.0 - 9 / 30,
    }
    signs: dict[str, set[bool]] = {}
    for name, magnitude in calls:
        if name in expected:
            assert abs(abs(magnitude) - expected[name]) < 1e-5, name
            signs.setdefault(name, set()).add(magnitude < 0)
        else:
            assert magnitude == 0.0
    assert signs["Rotate"] == {True, False} and signs["Brightness"] == {True, False}
    assert signs["Posterize"] == {False} and signs["Solarize"] == {False}


def test_trivial_augment_draws_one_op_at_a_random_bin(photo: torch.Tensor):
    calls = record_ops(T.TrivialAugmentWide(), photo, range(200))
    assert len(calls) == 200
    rotations = {abs(m) for name, m in calls if name == "Rotate"}
    assert rotations and rotations <= {round(v, 4) for v in linspace(135.0, 31)} | rotations
    allowed = {round(v, 4) for v in linspace(135.0, 31)}
    assert {round(v, 4) for v in rotations} <= allowed
    posterize = {m for name, m in calls if name == "Posterize"}
    assert posterize <= set(posterize_bins(8, 6, 31))
    assert len(Counter(name for name, _ in calls)) == 14


def test_auto_augment_applies_imagenet_sub_policies(photo: torch.Tensor):
    calls = record_ops(T.AutoAugment(T.AutoAugmentPolicy.IMAGENET), photo, range(200))
    names = {name for name, _ in calls}
    assert names <= {
        "Posterize",
        "Rotate",
        "Solarize",
        "AutoContrast",
        "Equalize",
        "Color",
        "Contrast",
        "Sharpness",
        "Invert",
        "ShearX",
    }
    assert {"Posterize", "Rotate", "Equalize", "Invert"} <= names
    # Magnitude bins index a 10-bin space: Rotate bins 3, 8, 9 -> 10, 26.67, 30 degrees.
    rotations = {round(abs(m), 3) for name, m in calls if name == "Rotate"}
    assert rotations <= {10.0, 26.667, 30.0}
    posterize = {m for name, m in calls if name == "Posterize"}
    assert posterize <= {4.0, 5.0, 6.0}  # bins 5..8 of 8 - i / 2.25, rounded
    # Each sub-policy has two ops that each fire with their probability.
    assert 150 < len(calls) < 330


def test_augmix_mixes_chains_with_per_image_weights(photo: torch.Tensor):
    batch = torch.stack([photo, photo.flip(-1), photo.flip(-2)]).float() / 255
    calls = record_ops(T.AugMix(severity=3, mixture_width=2, chain_depth=2), batch, range(30))
    assert len(calls) == 30 * 2 * 2
    assert {name for name, _ in calls} <= {
        "ShearX",
        "ShearY",
        "TranslateX",
        "TranslateY",
        "Rotate",
        "Posterize",
        "Solarize",
        "AutoContrast",
        "Equalize",
        "Brightness",
        "Color",
        "Contrast",
        "Sharpness",
    }
    # severity 3: bins 0..2 of a 10-bin space.
    assert {round(abs(m), 4) for name, m in calls if name == "Rotate"} <= {0.0, 3.3333, 6.6667}
    partial = record_ops(T.AugMix(all_ops=False), batch, range(30))
    assert not {"Brightness", "Color", "Contrast", "Sharpness"} & {name for name, _ in partial}
    # Mixing with Dirichlet/Beta weights: a convex combination of the chains and the image.
    out = T.AugMix(generator=seeded(0))(batch)
    assert out.shape == batch.shape and float(out.min()) >= 0 and float(out.max()) <= 1


@pytest.mark.parametrize(
    "make",
    [
        lambda g: T.AutoAugment(T.AutoAugmentPolicy.IMAGENET, generator=g),
        lambda g: T.AutoAugment(T.AutoAugmentPolicy.CIFAR10, generator=g),
        lambda g: T.AutoAugment(T.AutoAugmentPolicy.SVHN, generator=g),
        lambda g: T.RandAugment(generator=g),
        lambda g: T.TrivialAugmentWide(generator=g),
        lambda g: T.AugMix(generator=g),
    ],
)
def test_seeded_reproducible_and_uint8_float_agree(photo: torch.Tensor, make):
    outs = [make(seeded(s))(photo) for s in (0, 0, 1, 2, 3)]
    assert torch.equal(outs[0], outs[1])
    assert len({bytes(o.numpy()) for o in outs[1:]}) > 1
    for s in range(4):
        from_uint8 = make(seeded(s))(photo)
        from_float = make(seeded(s))(photo.float() / 255)
        assert from_uint8.dtype == torch.uint8 and from_float.dtype == torch.float32
        assert from_uint8.shape == photo.shape == from_float.shape
        diff = (from_uint8.float() - from_float * 255).abs()
        # Chained ops can move a value across a rounding or histogram boundary.
        assert float(diff.mean()) < 1.5, s


def pil_affine(img: torch.Tensor, data: tuple[float, ...]) -> np.ndarray:
    pic = Image.fromarray(img.permute(1, 2, 0).numpy())
    out = pic.transform(pic.size, Image.AFFINE, data, Image.NEAREST)
    return np.asarray(out).transpose(2, 0, 1)


@pytest.mark.parametrize("magnitude", [0.2, -0.3])
def test_geometric_ops_match_pillow(photo: torch.Tensor, magnitude: float):
    t = T.RandAugment()
    same = lambda a, b: float((a == b).all(0).mean())  # noqa: E731
    # Nearest sampling ties (exact half pixels) may round differently: most pixels agree.
    shear_x = t._apply_op(photo, "ShearX", magnitude).numpy()
    assert same(shear_x, pil_affine(photo, (1, magnitude, 0, 0, 1, 0))) > 0.85
    shear_y = t._apply_op(photo, "ShearY", magnitude).numpy()
    assert same(shear_y, pil_affine(photo, (1, 0, 0, magnitude, 1, 0))) > 0.85
    shift = 10 * magnitude
    moved = t._apply_op(photo, "TranslateX", shift).numpy()
    assert same(moved, pil_affine(photo, (1, 0, -int(shift), 0, 1, 0))) > 0.99
    pic = Image.fromarray(photo.permute(1, 2, 0).numpy())
    rotated = np.asarray(pic.rotate(100 * magnitude, Image.NEAREST)).transpose(2, 0, 1)
    assert same(t._apply_op(photo, "Rotate", 100 * magnitude).numpy(), rotated) > 0.98


def test_bad_arguments_raise(photo: torch.Tensor):
    with pytest.raises(ValueError, match="RandAugment: magnitude"):
        T.RandAugment(magnitude=31)
    with pytest.raises(ValueError, match="RandAugment: num_ops"):
        T.RandAugment(num_ops=-1)
    with pytest.raises(ValueError, match="AugMix: severity"):
        T.AugMix(severity=11)
    with pytest.raises(ValueError, match="TrivialAugmentWide: interpolation"):
        T.TrivialAugmentWide(interpolation=T.InterpolationMode.BICUBIC)
    with pytest.raises(ValueError):
        T.AutoAugment("imagenet21k")
    with pytest.raises(ValueError, match="RandAugment: expected an image with 1 or 3 channels"):
        T.RandAugment()(torch.zeros(4, 8, 8))


def test_pil_and_grayscale_inputs(photo: torch.Tensor):
    pic = Image.fromarray(photo.permute(1, 2, 0).numpy())
    out = T.TrivialAugmentWide(generator=seeded(5))(pic)
    expected = T.TrivialAugmentWide(generator=seeded(5))(photo)
    np.testing.assert_array_equal(np.asarray(out), expected.permute(1, 2, 0).numpy())
    gray = T.RandAugment(generator=seeded(0))(photo[:1])
    assert gray.shape == (1, 48, 40)


def test_trivial_augment_compiles_with_fullgraph(photo: torch.Tensor):
    torch._dynamo.reset()
    small = photo[None, :, :16, :16].contiguous()
    compiled = torch.compile(T.TrivialAugmentWide(), fullgraph=True, backend="eager")
    torch.manual_seed(0)
    outs = [compiled(small) for _ in range(3)]
    assert all(o.shape == small.shape and o.dtype == torch.uint8 for o in outs)
    torch._dynamo.reset()


@pytest.mark.slow
@pytest.mark.parametrize(
    "make",
    [
        lambda: T.AutoAugment(),
        lambda: T.RandAugment(num_ops=1),
        lambda: T.AugMix(mixture_width=1, chain_depth=1),
    ],
)
def test_other_policies_compile_with_fullgraph(photo: torch.Tensor, make):
    torch._dynamo.reset()
    small = photo[None, :, :16, :16].contiguous()
    out = torch.compile(make(), fullgraph=True, backend="eager")(small)
    assert out.shape == small.shape and out.dtype == torch.uint8
    torch._dynamo.reset()


@pytest.mark.parametrize(
    "name",
    [
        "ShearX",
        "TranslateY",
        "Rotate",
        "Color",
        "Contrast",
        "Sharpness",
        "Posterize",
        "Solarize",
        "Equalize",
    ],
)
def test_ops_match_torchvision(photo: torch.Tensor, name: str):
    tv = require_torchvision().transforms.v2
    magnitude = {"Posterize": 4.0, "Solarize": 0.6}.get(name, 0.25)
    ours = T.RandAugment()._apply_op(photo, name, magnitude)
    theirs_t = tv.RandAugment()
    theirs = theirs_t._apply_image_or_video_transform(
        photo, name, magnitude, interpolation=tv.InterpolationMode.NEAREST, fill=theirs_t._fill
    )
    assert (ours.int() - theirs.int()).abs().float().mean() < 0.5


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(photo: torch.Tensor):
    for make in (T.RandAugment, T.TrivialAugmentWide, T.AugMix, T.AutoAugment):
        for s in range(3):
            cpu = make(generator=seeded(s))(photo)
            gpu = make(generator=seeded(s))(photo.cuda())
            assert gpu.device.type == "cuda"
            assert float((gpu.cpu().float() - cpu.float()).abs().mean()) < 1.0
