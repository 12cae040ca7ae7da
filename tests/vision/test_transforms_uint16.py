"""16-bit images (uint16: 16-bit PNGs, 12-bit and lossless JPEGs) through every transform.

Every transform class of ``trivium.vision.transforms`` that takes uint8 images runs on
real 16-bit PNGs, one at a time and as a batch, and must keep the dtype: a 100 x 100
photo (``tv-rgb_pytorch16.png``, whose samples are 8-bit ones widened) and PngSuite's
32 x 32 RGB gradients (``basn2c16.png``, ``basn6a16.png``), whose low bytes vary. The
reference is torchvision v2 where the transform's result depends on the image only
(deterministic, or ``p=1`` with fixed arguments) and torchvision's kernel takes uint16;
otherwise the same transform, from the same generator state, on the float image
``x / 65535``, scaled back by 65535 and rounded.

Tolerances, in uint16 levels (1 level = 1/65535):

* 0 where values are moved or compared (crops, flips, pads, nearest warps, invert,
  posterize, solarize, erasing, mixing with a box);
* 1 where a kernel resamples or blends once: torchvision truncates a resized uint16
  value where we round, and the float reference rounds where the integer kernels
  truncate (as torchvision's do);
* 6 for ``ColorJitter``: each of its four steps truncates (up to one level) and the
  steps after it scale that by their factor (up to 1.4): 1 + 1.4 (1 + 1.4 (1 + 1.4));
* for the policies, 256 levels but on up to 5% of the pixels more: ``Equalize`` works
  on 8 bits and maps its table back with ``v << 8`` (torchvision's ``to_dtype``), the
  float reference with ``v * 257``, up to 255 levels apart; and a posterize or solarize
  after a blend in a chain turns a one-level difference into a whole step at the
  pixels on a step's edge. Their operations are checked one by one against
  torchvision at the end of this file.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from image_assets import PNG_DIR
from PIL import Image

from trivium.vision import transforms as T
from trivium.vision import tv_tensors
from trivium.vision.io import read_image

PHOTO = PNG_DIR / "tv-rgb_pytorch16.png"  # 100 x 100 RGB, 16 bits per sample
GRADIENTS = PNG_DIR / "basn2c16.png", PNG_DIR / "basn6a16.png"  # 32 x 32 RGB(A), 16 bits
MAX = 65535


def seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@dataclass(frozen=True)
class Spec:
    """How one transform class is built and checked on uint16 images.

    ``make(generator, scale)`` builds it; ``scale`` is the image's max value (65535 for
    uint16, 1.0 for the float reference) for arguments on the image's scale. ``tv``
    builds torchvision's equivalent (None: the float reference is used). ``call`` runs
    a transform on an image (default: ``t(x)``).
    """

    make: Callable[[torch.Generator, float], Any]
    tol: float = 0
    tv: Callable[[Any], Any] | None = None
    call: Callable[[Any, torch.Tensor], Any] | None = None
    frac: float = 0.0  # the share of values that may be further apart than tol


def _labels(t: Any, x: torch.Tensor) -> Any:
    return t(x, torch.arange(x.shape[0]) % 3)[0]


def _with_boxes(t: Any, x: torch.Tensor) -> Any:
    h, w = x.shape[-2:]
    boxes = tv_tensors.BoundingBoxes(
        torch.tensor([[2, 3, 20, 24], [10, 8, 30, 31]]), format="XYXY", canvas_size=(h, w)
    )
    return t(tv_tensors.Image(x), boxes, torch.tensor([1, 2]))[0].as_subclass(torch.Tensor)


_NORMALIZED = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])

SPECS: dict[str, Spec] = {
    # Geometry.
    "Resize": Spec(lambda g, s: T.Resize(37), 1, lambda tv: tv.Resize(37)),
    "CenterCrop": Spec(
        lambda g, s: T.CenterCrop([40, 120]), 0, lambda tv: tv.CenterCrop([40, 120])
    ),
    "Pad": Spec(
        lambda g, s: T.Pad([3, 5], fill=[v * s / MAX for v in (1000, 2, 60000)]),
        0,
        lambda tv: tv.Pad([3, 5], fill=[1000, 2, 60000]),
    ),
    "FiveCrop": Spec(lambda g, s: T.FiveCrop(30), 0, lambda tv: tv.FiveCrop(30)),
    "TenCrop": Spec(lambda g, s: T.TenCrop(30), 0, lambda tv: tv.TenCrop(30)),
    "RandomCrop": Spec(lambda g, s: T.RandomCrop(28, padding=4, generator=g)),
    "RandomHorizontalFlip": Spec(
        lambda g, s: T.RandomHorizontalFlip(1.0), 0, lambda tv: tv.RandomHorizontalFlip(1.0)
    ),
    "RandomVerticalFlip": Spec(
        lambda g, s: T.RandomVerticalFlip(1.0), 0, lambda tv: tv.RandomVerticalFlip(1.0)
    ),
    "RandomResizedCrop": Spec(lambda g, s: T.RandomResizedCrop(40, generator=g), 1),
    "RandomShortestSize": Spec(lambda g, s: T.RandomShortestSize([40, 50], generator=g), 1),
    "RandomZoomOut": Spec(lambda g, s: T.RandomZoomOut(fill=0.2 * s, p=1.0, generator=g), 0),
    "RandomIoUCrop": Spec(lambda g, s: T.RandomIoUCrop(generator=g), 0, call=_with_boxes),
    "ScaleJitter": Spec(lambda g, s: T.ScaleJitter((40, 40), generator=g), 1),
    "RandomResize": Spec(lambda g, s: T.RandomResize(30, 50, generator=g), 1),
    # Warps.
    "RandomRotation": Spec(lambda g, s: T.RandomRotation(30, generator=g), 0),
    "RandomAffine": Spec(
        lambda g, s: T.RandomAffine(
            20, (0.1, 0.1), (0.8, 1.2), 10, interpolation="bilinear", fill=0.5 * s, generator=g
        ),
        1,
    ),
    "RandomPerspective": Spec(lambda g, s: T.RandomPerspective(p=1.0, generator=g), 1),
    "ElasticTransform": Spec(lambda g, s: T.ElasticTransform(20.0, generator=g), 1),
    # Colour.
    "Grayscale": Spec(lambda g, s: T.Grayscale(3), 0, lambda tv: tv.Grayscale(3)),
    "RandomGrayscale": Spec(
        lambda g, s: T.RandomGrayscale(1.0), 0, lambda tv: tv.RandomGrayscale(1.0)
    ),
    "ColorJitter": Spec(lambda g, s: T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g), 6),
    "GaussianBlur": Spec(lambda g, s: T.GaussianBlur(5, generator=g), 1),
    "RGB": Spec(lambda g, s: T.RGB(), 0, lambda tv: tv.RGB()),
    "RandomChannelPermutation": Spec(lambda g, s: T.RandomChannelPermutation(generator=g), 0),
    # Each step truncates, as ColorJitter's.
    "RandomPhotometricDistort": Spec(
        lambda g, s: T.RandomPhotometricDistort(p=1.0, generator=g), 6
    ),
    # The noise truncated to levels, the float reference rounded: 1.5 levels apart at most.
    "GaussianNoise": Spec(lambda g, s: T.GaussianNoise(generator=g), 2),
    "RandomAdjustSharpness": Spec(
        lambda g, s: T.RandomAdjustSharpness(2.0, 1.0),
        1,
        lambda tv: tv.RandomAdjustSharpness(2.0, 1.0),
    ),
    "RandomAutocontrast": Spec(
        lambda g, s: T.RandomAutocontrast(1.0), 1, lambda tv: tv.RandomAutocontrast(1.0)
    ),
    "RandomEqualize": Spec(
        lambda g, s: T.RandomEqualize(1.0), 0, lambda tv: tv.RandomEqualize(1.0)
    ),
    "RandomInvert": Spec(lambda g, s: T.RandomInvert(1.0), 0, lambda tv: tv.RandomInvert(1.0)),
    "RandomPosterize": Spec(
        lambda g, s: T.RandomPosterize(3, 1.0), 0, lambda tv: tv.RandomPosterize(3, 1.0)
    ),
    "RandomSolarize": Spec(
        lambda g, s: T.RandomSolarize(0.5 * s, 1.0), 0, lambda tv: tv.RandomSolarize(0.5 * MAX, 1.0)
    ),
    # Erasing, mixing.
    "RandomErasing": Spec(lambda g, s: T.RandomErasing(1.0, value=0.2 * s, generator=g), 0),
    "MixUp": Spec(lambda g, s: T.MixUp(num_classes=3, generator=g), 1, call=_labels),
    "CutMix": Spec(lambda g, s: T.CutMix(num_classes=3, generator=g), 0, call=_labels),
    # Policies.
    "AutoAugment": Spec(lambda g, s: T.AutoAugment(generator=g), 256, frac=0.05),
    "RandAugment": Spec(lambda g, s: T.RandAugment(generator=g), 256, frac=0.05),
    "TrivialAugmentWide": Spec(lambda g, s: T.TrivialAugmentWide(generator=g), 256, frac=0.05),
    "AugMix": Spec(lambda g, s: T.AugMix(generator=g), 256, frac=0.05),
    # Conversion and containers.
    "ToDtype": Spec(
        lambda g, s: T.ToDtype(torch.uint8, scale=True),
        0,
        lambda tv: tv.ToDtype(torch.uint8, scale=True),
    ),
    "ToImage": Spec(lambda g, s: T.ToImage(), 0, lambda tv: tv.ToImage()),
    "ConvertImageDtype": Spec(
        lambda g, s: T.ConvertImageDtype(torch.uint8),
        0,
        lambda tv: tv.ConvertImageDtype(torch.uint8),
    ),
    "ToPureTensor": Spec(lambda g, s: T.ToPureTensor(), 0, lambda tv: tv.ToPureTensor()),
    "Identity": Spec(lambda g, s: T.Identity(), 0, lambda tv: tv.Identity()),
    "Compose": Spec(
        lambda g, s: T.Compose([T.RandomHorizontalFlip(generator=g), T.RandomCrop(28, generator=g)])
    ),
    "RandomApply": Spec(lambda g, s: T.RandomApply([T.RandomInvert(1.0)], p=0.5, generator=g)),
    "RandomChoice": Spec(
        lambda g, s: T.RandomChoice([T.RandomInvert(1.0), T.CenterCrop(30)], generator=g)
    ),
    "RandomOrder": Spec(
        lambda g, s: T.RandomOrder([T.RandomInvert(1.0), T.CenterCrop(30)], generator=g)
    ),
    # Normalized float outputs: one level of the input, divided by the smallest std.
    "ImageClassificationTrain": Spec(
        lambda g, s: T.ImageClassificationTrain(crop_size=40, generator=g), 1 / 0.225
    ),
    "ImageClassificationEval": Spec(
        lambda g, s: T.ImageClassificationEval(crop_size=40, resize_size=48), 1 / 0.225
    ),
}

# Classes that take no uint8 image tensor (or are not a transform of one), with the reason.
EXEMPT = {
    "Transform": "the base class of every transform",
    "ImageTransform": "the base class of the image transforms",
    "Lambda": "applies the user's function",
    "Normalize": "takes floating images only, as torchvision's (test_normalize_*)",
    "PILToTensor": "takes PIL images (test_pil_16_bit_gray_*)",
    "ClampBoundingBoxes": "transforms boxes only",
    "ClampKeyPoints": "transforms key points only",
    "ConvertBoundingBoxFormat": "transforms boxes only",
    "SanitizeBoundingBoxes": "transforms boxes and labels only",
    "SanitizeKeyPoints": "transforms key points and labels only",
    "DecodeCenterCrop": "takes encoded images (test_transforms_fused_decode.py)",
    "DecodeRandomResizedCrop": "takes encoded images (test_transforms_fused_decode.py)",
    "DecodeResize": "takes encoded images (test_transforms_fused_decode.py)",
    "SetClampingMode": "transforms boxes only",
    "ToTensor": "takes PIL images and arrays (test_transforms_v2_names.py)",
    "ToPILImage": "makes PIL images; torchvision's rules have no mode for uint16",
    "LinearTransformation": "a float matrix: the result is floating whatever the input",
    "UniformTemporalSubsample": "takes videos [..., T, C, H, W] (test_transforms_v2_names.py)",
    "JPEG": "takes integer images only: no float reference (12-bit JPEGs in "
    "test_transforms_v2_names.py)",
}


def _transform_classes() -> set[str]:
    return {
        name
        for name in T.__all__
        if inspect.isclass(getattr(T, name)) and issubclass(getattr(T, name), torch.nn.Module)
    }


def test_every_transform_class_is_checked_or_exempt() -> None:
    classes = _transform_classes()
    assert not set(SPECS) & set(EXEMPT)
    assert set(SPECS) | set(EXEMPT) == classes, (
        f"unchecked: {sorted(classes - set(SPECS) - set(EXEMPT))}, "
        f"gone: {sorted((set(SPECS) | set(EXEMPT)) - classes)}"
    )


@pytest.fixture(scope="module")
def photo() -> torch.Tensor:
    image = read_image(PHOTO)
    assert image.dtype == torch.uint16
    return image


@pytest.fixture(scope="module")
def gradient() -> torch.Tensor:
    image = read_image(GRADIENTS[0])
    # Values over the whole range, not 8-bit ones widened (v * 257).
    wide = image.to(torch.int32)
    assert image.dtype == torch.uint16 and int(wide.max()) == MAX and bool((wide % 257).any())
    return image


@pytest.fixture(scope="module")
def batch(photo: torch.Tensor, gradient: torch.Tensor) -> torch.Tensor:
    """Four different 32 x 32 RGB images: the two gradients and two crops of the photo."""
    other = read_image(GRADIENTS[1])[:3]
    return torch.stack([gradient, other, photo[:, :32, :32], photo[:, 50:82, 40:72]])


def _run(spec: Spec, x: torch.Tensor, seed: int, scale: float) -> Any:
    t = spec.make(seeded(seed), scale)
    return spec.call(t, x) if spec.call is not None else t(x)


def _flat(out: Any) -> list[torch.Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _compare(ours: Any, reference: Any, tol: float, name: str, frac: float = 0.0) -> None:
    for a, b in zip(_flat(ours), _flat(reference), strict=True):
        a = a.as_subclass(torch.Tensor)
        b = b.as_subclass(torch.Tensor)
        assert a.shape == b.shape, name
        if a.is_floating_point():  # a float result (presets): compare on the 16-bit scale
            diff = (a.double() - b.double()).abs() * MAX
        else:
            diff = (a.double() - b.double()).abs()
        if frac:
            assert float(diff.gt(tol + 1e-6).double().mean()) <= frac, name
            assert float(diff.max()) < MAX / 4, (name, float(diff.max()))
        else:
            assert float(diff.max()) <= tol + 1e-6, (name, float(diff.max()))


def _float_reference(spec: Spec, x: torch.Tensor, seed: int, name: str) -> Any:
    out = _run(spec, x.double().div(MAX).float(), seed, 1.0)
    if _expected_dtype(name) == torch.float32:  # normalized floats both ways
        return out
    return [o.mul(MAX).round().clamp(0, MAX) for o in _flat(out)]


def _expected_dtype(name: str) -> torch.dtype:
    if name in ("ToDtype", "ConvertImageDtype"):
        return torch.uint8
    if name.startswith("ImageClassification"):
        return torch.float32
    return torch.uint16


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("shape", ["photo", "gradient", "batch"])
def test_uint16_matches_the_reference(name: str, shape: str, photo, gradient, batch, tv) -> None:
    spec = SPECS[name]
    x = {"photo": photo, "gradient": gradient, "batch": batch}[shape]
    if name in ("MixUp", "CutMix") and shape != "batch":
        x = torch.stack([x, x.transpose(-2, -1)])  # they mix the images of a batch
    for seed in range(3):
        ours = _run(spec, x, seed, MAX)
        for out in _flat(ours):
            assert out.dtype == _expected_dtype(name), (name, out.dtype)
        reference = None
        if spec.tv is not None:
            try:
                reference = spec.tv(tv.transforms.v2)(x)
            except NotImplementedError:  # torch has no uint16 kernel for torchvision's op
                reference = None
        if reference is None:
            reference = _float_reference(spec, x, seed, name)
        _compare(ours, reference, spec.tol, name, spec.frac)


def test_to_dtype_float_divides_by_65535(photo: torch.Tensor, tv) -> None:
    ours = T.ToDtype(torch.float32, scale=True)(photo)
    expected = tv.transforms.v2.ToDtype(torch.float32, scale=True)(photo)
    torch.testing.assert_close(ours, expected, rtol=0, atol=0)
    torch.testing.assert_close(ours, photo.double().div(MAX).float(), rtol=0, atol=1e-7)


def test_to_dtype_uint8_keeps_the_high_byte(photo: torch.Tensor) -> None:
    ours = T.ToDtype(torch.uint8, scale=True)(photo)
    assert torch.equal(ours, (photo.to(torch.int32) >> 8).to(torch.uint8))


def test_normalize_takes_floats_only_as_torchvision(photo: torch.Tensor) -> None:
    with pytest.raises(
        TypeError, match=r"Normalize: expected a floating image, got dtype torch\.uint16"
    ):
        T.Normalize(*_NORMALIZED)(photo)


def test_normalize_after_to_dtype_equals_the_two_steps(photo, batch) -> None:
    fused = T.Compose([T.ToDtype(torch.float32, scale=True), T.Normalize(*_NORMALIZED)])
    for x in (photo, batch, batch.contiguous()):
        expected = T.Normalize(*_NORMALIZED)(x.double().div(MAX).float())
        torch.testing.assert_close(fused(x), expected, rtol=1e-6, atol=1e-6)


def test_pil_16_bit_gray_images_round_trip(tv) -> None:
    pic = Image.open(PNG_DIR / "basn0g16.png")
    assert pic.mode == "I;16"
    tensor = T.PILToTensor()(pic)
    assert tensor.dtype == torch.uint16
    assert torch.equal(tensor, tv.transforms.v2.PILToTensor()(pic))
    flipped = T.RandomHorizontalFlip(1.0)(pic)
    assert flipped.mode == "I;16"
    np.testing.assert_array_equal(np.asarray(flipped), np.asarray(pic)[:, ::-1])


# per_sample, torch.compile and torch.jit.script on a representative subset.

SUBSET = {
    "RandomHorizontalFlip": (lambda g, s, **k: T.RandomHorizontalFlip(generator=g, **k), 0),
    "RandomResizedCrop": (lambda g, s, **k: T.RandomResizedCrop(40, generator=g, **k), 1),
    "ColorJitter": (lambda g, s, **k: T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g, **k), 6),
    "RandomRotation": (
        lambda g, s, **k: T.RandomRotation(30, interpolation="bilinear", generator=g, **k),
        1,
    ),
}


@pytest.mark.parametrize("name", sorted(SUBSET))
def test_per_sample_uint16_matches_the_float_batch(name: str, batch: torch.Tensor) -> None:
    make, tol = SUBSET[name]
    for seed in range(2):
        ours = make(seeded(seed), MAX, per_sample=True)(batch)
        assert ours.dtype == torch.uint16
        reference = make(seeded(seed), 1.0, per_sample=True)(batch.double().div(MAX).float())
        _compare(ours, reference.mul(MAX).round().clamp(0, MAX), tol, name)


@pytest.mark.parametrize("name", sorted(SUBSET))
@pytest.mark.parametrize("per_sample", [False, True])
def test_compiled_uint16_matches_the_float_path(name: str, per_sample: bool, batch) -> None:
    make, tol = SUBSET[name]
    torch._dynamo.reset()
    compiled = torch.compile(
        make(None, MAX, per_sample=per_sample), fullgraph=True, backend="eager"
    )
    reference = torch.compile(
        make(None, 1.0, per_sample=per_sample), fullgraph=True, backend="eager"
    )
    for seed in range(2):
        torch.manual_seed(seed)
        ours = compiled(batch)
        torch.manual_seed(seed)
        expected = reference(batch.double().div(MAX).float())
        assert ours.dtype == torch.uint16
        _compare(ours, expected.mul(MAX).round().clamp(0, MAX), tol, name)
    torch._dynamo.reset()


def test_compiled_to_dtype_normalize_on_uint16(photo: torch.Tensor) -> None:
    torch._dynamo.reset()
    steps = T.Compose([T.ToDtype(torch.float32, scale=True), T.Normalize(*_NORMALIZED)])
    compiled = torch.compile(steps, fullgraph=True, backend="eager")
    expected = T.Normalize(*_NORMALIZED)(photo.double().div(MAX).float())
    torch.testing.assert_close(compiled(photo), expected, rtol=1e-6, atol=1e-6)
    torch._dynamo.reset()


def test_inductor_compiles_uint16_selects(batch: torch.Tensor) -> None:
    """Generated code has no uint16 ``where``: the per-image flip selects int32 values."""
    torch._dynamo.reset()
    compiled = torch.compile(T.RandomHorizontalFlip(per_sample=True), fullgraph=True)
    flips = set()
    for seed in range(4):
        torch.manual_seed(seed)
        out = compiled(batch)
        assert out.dtype == torch.uint16
        for image, done in zip(batch.to(torch.int32), out.to(torch.int32), strict=True):
            flipped = torch.equal(done, image.flip(-1))  # (torch flips no uint16)
            assert flipped or torch.equal(done, image)
            flips.add(flipped)
    assert flips == {True, False}
    torch._dynamo.reset()


@pytest.mark.parametrize(
    "make",
    [
        lambda: T.Resize(37),
        lambda: T.Resize(37, interpolation="bicubic"),
        lambda: T.CenterCrop(30),
        lambda: T.Pad([2, 3], fill=[5000, 0, 65535]),
        lambda: T.Pad(4, padding_mode="reflect"),
        lambda: T.ToDtype(torch.float32, scale=True),
        lambda: T.ToDtype(torch.uint8, scale=True),
        lambda: T.Grayscale(),
    ],
)
def test_scripted_transforms_take_uint16(make, photo: torch.Tensor) -> None:
    t = make()
    scripted = torch.jit.script(t)
    out = scripted(photo)
    assert torch.equal(out, t(photo))
    assert out.dtype == (photo.dtype if not isinstance(t, T.ToDtype) else t.dtype)


# The policies' operations one by one against torchvision's, on uint16.

_OPS = {
    "ShearX": 0.25,
    "ShearY": -0.25,
    "TranslateX": 12.0,
    "TranslateY": -9.0,
    "Rotate": 20.0,
    "Brightness": 0.3,
    "Color": -0.4,
    "Contrast": 0.5,
    "Sharpness": 0.6,
    "Posterize": 5.0,
    "AutoContrast": 0.0,
    "Equalize": 0.0,
    "Invert": 0.0,
}


@pytest.mark.parametrize("name", sorted(_OPS))
def test_policy_ops_on_uint16_match_torchvision(name: str, photo: torch.Tensor, tv) -> None:
    magnitude = _OPS[name]
    ours = T.AutoAugment()._apply_op(photo, name, magnitude)
    policy = tv.transforms.v2.AutoAugment()
    theirs = policy._apply_image_or_video_transform(
        photo,
        name,
        magnitude,
        interpolation=tv.transforms.v2.InterpolationMode.NEAREST,
        fill=policy._fill,
    )
    assert ours.dtype == theirs.dtype == torch.uint16
    assert float((ours.double() - theirs.double()).abs().max()) <= 1, name


def test_policy_solarize_on_uint16_uses_the_whole_range(photo: torch.Tensor) -> None:
    ours = T.AutoAugment()._apply_op(photo, "Solarize", 0.6)
    threshold = 0.6 * MAX
    wide = photo.to(torch.int32)
    expected = torch.where(wide >= threshold, MAX - wide, wide)
    assert torch.equal(ours.to(torch.int32), expected)
