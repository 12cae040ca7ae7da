"""Format-agnostic image entry points: sniffing, header info, decode_image, read_image.

They know no format by name: ``image_info`` asks the format registry
(:mod:`trivium.vision.io.image.codec`) which format the bytes are and reads its header;
``decode_image`` runs ``trivium::decode_image``, which does the same in C++.

Example:
    >>> import torch
    >>> from trivium.vision.io import decode_image, encode_png, image_info
    >>> data = encode_png(torch.zeros(3, 5, 7, dtype=torch.uint8))
    >>> image_info(data).width, decode_image(data).shape
    (7, torch.Size([3, 5, 7]))
"""

from __future__ import annotations

import os

import torch

from trivium.vision.io.image import ops
from trivium.vision.io.image.codec import (
    EncodedData,
    ImageInfo,
    ImageReadMode,
    PathLike,
    as_buffer,
    format_of,
    image_op_args,
    native_errors,
)
from trivium.vision.io.image.file import read_file

_ops = ops.decode_ops("decode_image")


def image_info(data: EncodedData | PathLike, *, path: PathLike | None = None) -> ImageInfo:
    """Read only the header: format, size, channels, bit depth and EXIF orientation.

    ``data`` is encoded bytes or a file path. ``channels`` is what an
    ``ImageReadMode.UNCHANGED`` decode would give.

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_jpeg
        >>> info = image_info(encode_jpeg(torch.zeros(3, 40, 30, dtype=torch.uint8)))
        >>> (info.format, info.height, info.width, info.channels, info.bit_depth)
        ('jpeg', 40, 30, 3, 8)
    """
    if isinstance(data, str | os.PathLike):
        path, data = data, read_file(data)
    buffer = as_buffer(data, "image_info")
    image_format = format_of(buffer, path)
    with native_errors(path):
        return ImageInfo(**image_format.read_header(buffer))


def decode_image(
    input: EncodedData | PathLike | list[EncodedData],
    mode: ImageReadMode = ImageReadMode.UNCHANGED,
    apply_exif_orientation: bool = False,
    *,
    dtype: torch.dtype | None = None,
    device: str | torch.device = "cpu",
    strict: bool | None = None,
    max_pixels: int | None = ...,  # type: ignore[assignment]
    path: PathLike | None = None,
) -> torch.Tensor | list[torch.Tensor]:
    """Decode an image (its format sniffed from its bytes) to a [C, H, W] tensor.

    JPEG, PNG and WebP natively (an animated WebP gives ``[T, C, H, W]``, see
    :func:`decode_webp`); GIF, BMP, TIFF, PPM/PGM, AVIF and HEIC through Pillow (see
    :mod:`trivium.vision.io.image.pillow`; an animated GIF gives ``[N, C, H, W]``, as
    torchvision's). ``input`` may also be a path (as torchvision.io.decode_image) or
    a list of encoded images, decoded in parallel. 16-bit images give uint16 unless
    ``dtype`` says otherwise; ``strict`` follows :func:`decode_jpeg`'s rule for
    damaged data; see :func:`decode_jpeg`, :func:`decode_png` and :func:`decode_webp`
    for the rest.

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(1, 3, 3, dtype=torch.uint8))
        >>> decode_image(data, ImageReadMode.RGB).shape
        torch.Size([3, 3, 3])
    """
    args = image_op_args(mode, apply_exif_orientation, dtype, strict, max_pixels)
    return ops.run_decoder(_ops, input, args, path=path, device=device, paths=True)


def read_image(
    path: PathLike,
    mode: ImageReadMode = ImageReadMode.UNCHANGED,
    apply_exif_orientation: bool = False,
    *,
    dtype: torch.dtype | None = None,
    device: str | torch.device = "cpu",
    strict: bool | None = None,
) -> torch.Tensor:
    """Read and decode an image file (as :func:`decode_image`); errors name the file.

    Example:
        >>> import torch, tempfile, os
        >>> from trivium.vision.io import write_png
        >>> file = os.path.join(tempfile.mkdtemp(), "a.png")
        >>> write_png(torch.zeros(3, 2, 2, dtype=torch.uint8), file)
        >>> read_image(file, ImageReadMode.GRAY).shape
        torch.Size([1, 2, 2])
    """
    options = dict(dtype=dtype, device=device, strict=strict, path=path)
    return decode_image(read_file(path), mode, apply_exif_orientation, **options)
