"""JPEG encode output buffer: outputs larger than its first size guess, and row layouts."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from image_assets import JPEG_DIR, pillow_array
from PIL import Image

from trivium.vision.io import decode_jpeg, encode_jpeg, read_image


def pillow_jpeg(image: torch.Tensor, quality: int, subsampling: str) -> bytes:
    buffer = io.BytesIO()
    hwc = image.permute(1, 2, 0).numpy().squeeze(-1) if image.shape[0] == 1 else None
    array = hwc if hwc is not None else image.permute(1, 2, 0).numpy()
    Image.fromarray(array).save(buffer, "JPEG", quality=quality, subsampling=subsampling)
    return buffer.getvalue()


@pytest.mark.parametrize("channels", [1, 3])
def test_output_larger_than_the_first_guess(channels: int) -> None:
    # Noise at quality 100, 4:4:4 takes far more than an eighth of the raw size.
    generator = torch.Generator().manual_seed(channels)
    image = torch.randint(0, 256, (channels, 240, 320), generator=generator, dtype=torch.uint8)
    data = encode_jpeg(image, quality=100, subsampling="4:4:4")
    assert data.numel() > image.numel() // 8
    # Same library settings as Pillow (ISLOW, standard tables): the same size within
    # the few bytes the headers differ by, and Pillow decodes our file as we do.
    assert abs(data.numel() - len(pillow_jpeg(image, 100, "4:4:4"))) <= 64
    np.testing.assert_array_equal(pillow_array(bytes(data.numpy())), decode_jpeg(data).numpy())


def test_strided_and_contiguous_inputs_encode_alike() -> None:
    photo = read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")  # [C, H, W] view of HWC
    planar = photo.contiguous()  # [C, H, W] memory
    assert torch.equal(encode_jpeg(photo, 90), encode_jpeg(planar, 90))
    assert abs(encode_jpeg(photo, 90).numel() - len(pillow_jpeg(photo, 90, "4:2:0"))) <= 64
