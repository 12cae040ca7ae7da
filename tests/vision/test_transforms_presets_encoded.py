"""Classification presets on encoded images: the fused decode against decode-then-preset.

The reference is the same preset on ``decode_image(data, RGB)``; the fused path's
documented tolerance is a PSNR of 30 dB (JPEG DCT scaling); PNG gives the same pixels.
torchvision's v2 presets on the decoded image are the reference for the recipe itself.
"""

from __future__ import annotations

import pytest
import torch
from image_assets import JPEG_DIR
from image_assets import psnr as psnr_arrays

from trivium.vision.io import ImageReadMode, decode_image, encode_png
from trivium.vision.transforms.presets import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    ImageClassificationEval,
    ImageClassificationTrain,
)

JPEGS = ["tv-grace_hopper_517x606.jpg", "pil-hopper.jpg", "tv-rgb_pytorch.jpg"]


def pixels(normalised: torch.Tensor) -> torch.Tensor:
    """Undo Normalize: back to [0, 255] for a PSNR against 8-bit peaks."""
    mean = torch.tensor(IMAGENET_MEAN)[:, None, None]
    std = torch.tensor(IMAGENET_STD)[:, None, None]
    return ((normalised * std + mean) * 255).round().clamp(0, 255).to(torch.uint8)


def psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    return psnr_arrays(pixels(a).numpy(), pixels(b).numpy())


def encoded_inputs(data: bytes) -> list:
    return [data, torch.frombuffer(bytearray(data), dtype=torch.uint8), bytearray(data)]


@pytest.mark.parametrize("name", JPEGS)
def test_eval_on_jpeg_bytes_matches_decode_then_preset(name: str) -> None:
    data = (JPEG_DIR / name).read_bytes()
    preset = ImageClassificationEval(crop_size=96, resize_size=112)
    reference = preset(decode_image(data, ImageReadMode.RGB))
    for encoded in encoded_inputs(data):
        out = preset(encoded)
        assert out.shape == reference.shape == (3, 96, 96) and out.dtype == torch.float32
        assert psnr(out, reference) >= 30.0, name


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("policy", [None, "ta_wide"])
def test_train_on_jpeg_bytes_draws_what_decode_then_preset_draws(seed: int, policy) -> None:
    data = (JPEG_DIR / JPEGS[0]).read_bytes()

    def preset() -> ImageClassificationTrain:
        generator = torch.Generator().manual_seed(seed)
        return ImageClassificationTrain(224, auto_augment_policy=policy, generator=generator)

    reference = preset()(decode_image(data, ImageReadMode.RGB))
    out = preset()(data)
    assert out.shape == reference.shape == (3, 224, 224)
    assert psnr(out, reference) >= 30.0


def test_png_bytes_give_exactly_decode_then_preset() -> None:
    data = encode_png(decode_image((JPEG_DIR / JPEGS[1]).read_bytes(), ImageReadMode.RGB))
    ev = ImageClassificationEval(crop_size=24, resize_size=28)
    same_pixels(ev(data), ev(decode_image(data, ImageReadMode.RGB)))
    train = [ImageClassificationTrain(24, generator=torch.Generator().manual_seed(3)) for _ in "ab"]
    same_pixels(train[0](data), train[1](decode_image(data, ImageReadMode.RGB)))


def same_pixels(a: torch.Tensor, b: torch.Tensor) -> None:
    """Equal up to float rounding (the fused path's batch is channels-last in memory)."""
    torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    assert torch.equal(pixels(a), pixels(b))


def test_the_recipe_matches_torchvisions_presets_on_the_decoded_image() -> None:
    from peers import import_torchvision

    tv = import_torchvision()
    if tv is None:
        pytest.skip("torchvision is not importable")
    v2 = tv.transforms.v2
    data = (JPEG_DIR / JPEGS[0]).read_bytes()
    image = decode_image(data, ImageReadMode.RGB)
    theirs = v2.Compose(
        [
            v2.Resize(112, antialias=True),
            v2.CenterCrop(96),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize(IMAGENET_MEAN, IMAGENET_STD),
        ]
    )(image)
    ours = ImageClassificationEval(crop_size=96, resize_size=112)(data)
    assert psnr(ours, theirs) >= 30.0


def test_a_batch_of_images_and_other_inputs_are_unchanged() -> None:
    images = torch.randint(0, 256, (2, 3, 40, 40), dtype=torch.uint8)
    ev = ImageClassificationEval(crop_size=16, resize_size=20)
    assert ev(images).shape == (2, 3, 16, 16)
    with pytest.raises((TypeError, ValueError)):
        ev(torch.zeros(5, dtype=torch.float32))
