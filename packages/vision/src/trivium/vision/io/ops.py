"""The decoders as ``torch.library`` custom ops, so compiled code can call them.

``decode_jpeg``, ``decode_png`` and ``decode_image`` route here when called inside
``torch.compile``: the op runs the native decoder eagerly, and its fake (meta)
implementation gives the compiler an output of data-dependent height and width.
Inside compiled code the output is a contiguous uint8 [C, H, W] tensor (16-bit
PNGs are narrowed to 8 bits; pass ``dtype=`` to the caller to get floats).

Example:
    >>> import torch
    >>> from trivium.vision.io import decode_image, encode_png
    >>> data = encode_png(torch.zeros(3, 4, 4, dtype=torch.uint8))
    >>> torch.ops.trivium.decode_image(data, 0, False).shape
    torch.Size([3, 4, 4])
"""

from __future__ import annotations

import torch

from trivium.vision.io.codec import ImageReadMode


def _fake_image(data: torch.Tensor, mode: int) -> torch.Tensor:
    ctx = torch.library.get_ctx()
    channels = ImageReadMode(mode).channels
    if channels is None:
        channels = ctx.new_dynamic_size(min=1, max=4)
    height = ctx.new_dynamic_size(min=1)
    width = ctx.new_dynamic_size(min=1)
    return data.new_empty((channels, height, width), dtype=torch.uint8)


@torch.library.custom_op("trivium::decode_jpeg", mutates_args=())
def decode_jpeg_op(
    data: torch.Tensor,
    mode: int,
    scale_eighths: int,
    roi: list[int] | None,
    apply_exif_orientation: bool,
) -> torch.Tensor:
    """Decode a JPEG (see :func:`trivium.vision.io.decode_jpeg`) as a custom op."""
    from trivium.vision.io.jpeg import decode_jpeg

    mode_ = ImageReadMode(mode)
    image = decode_jpeg(
        data, mode_, "cpu", apply_exif_orientation, scale=scale_eighths / 8, roi=roi
    )
    return image.contiguous()


@decode_jpeg_op.register_fake
def _(data, mode, scale_eighths, roi, apply_exif_orientation):
    return _fake_image(data, mode)


@torch.library.custom_op("trivium::decode_png", mutates_args=())
def decode_png_op(data: torch.Tensor, mode: int, apply_exif_orientation: bool) -> torch.Tensor:
    """Decode a PNG to uint8 (see :func:`trivium.vision.io.decode_png`) as a custom op."""
    from trivium.vision.io.png import decode_png

    image = decode_png(data, ImageReadMode(mode), apply_exif_orientation, dtype=torch.uint8)
    return image.contiguous()


@decode_png_op.register_fake
def _(data, mode, apply_exif_orientation):
    return _fake_image(data, mode)


@torch.library.custom_op("trivium::decode_image", mutates_args=())
def decode_image_op(data: torch.Tensor, mode: int, apply_exif_orientation: bool) -> torch.Tensor:
    """Decode a JPEG or PNG to uint8 (see :func:`trivium.vision.io.decode_image`)."""
    from trivium.vision.io.image import decode_image

    image = decode_image(data, ImageReadMode(mode), apply_exif_orientation, dtype=torch.uint8)
    return image.contiguous()


@decode_image_op.register_fake
def _(data, mode, apply_exif_orientation):
    return _fake_image(data, mode)
