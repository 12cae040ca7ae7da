"""Format-agnostic image entry points: sniffing, header info, decode_image, read_image.

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

from trivium.core.errors import DecodeError, UnsupportedFormatError
from trivium.vision import _C
from trivium.vision.io.codec import (
    EncodedData,
    ImageInfo,
    ImageReadMode,
    PathLike,
    as_buffer,
    decode_batch,
    native_errors,
)
from trivium.vision.io.file import read_file
from trivium.vision.io.jpeg import decode_jpeg
from trivium.vision.io.png import convert_dtype, decode_png

# Signatures of formats we recognise but do not decode, for a helpful error.
_OTHER_FORMATS = {
    b"GIF87a": "GIF",
    b"GIF89a": "GIF",
    b"BM": "BMP",
    b"II*\x00": "TIFF",
    b"MM\x00*": "TIFF",
    b"\x00\x00\x01\x00": "ICO",
}


def sniff_format(data: EncodedData, *, path: PathLike | None = None) -> str:
    """``"jpeg"`` or ``"png"`` from the first bytes; raises for anything else.

    Example:
        >>> sniff_format(b"\\x89PNG\\r\\n\\x1a\\n....")
        'png'
    """
    try:
        return _sniff(bytes(memoryview(as_buffer(data, "decode_image"))[:12]))
    except DecodeError as e:
        raise type(e)(e.reason, path=path) from None


def _sniff(head: bytes) -> str:
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if not head:
        raise DecodeError("empty input")
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        raise UnsupportedFormatError("WebP images are not supported (JPEG and PNG are)")
    for signature, name in _OTHER_FORMATS.items():
        if head.startswith(signature):
            raise UnsupportedFormatError(f"{name} images are not supported (JPEG and PNG are)")
    raise DecodeError("not a JPEG or PNG image (unknown signature)")


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
    fmt = sniff_format(data, path=path)
    buffer = as_buffer(data, "image_info")
    with native_errors(path):
        header = _C.jpeg_info(buffer) if fmt == "jpeg" else _C.png_info(buffer)
    return ImageInfo(**header)


def decode_image(
    input: EncodedData | PathLike | list[EncodedData],
    mode: ImageReadMode = ImageReadMode.UNCHANGED,
    apply_exif_orientation: bool = False,
    *,
    dtype: torch.dtype | None = None,
    device: str | torch.device = "cpu",
    strict: bool = True,
    max_pixels: int | None = ...,  # type: ignore[assignment]
    path: PathLike | None = None,
) -> torch.Tensor | list[torch.Tensor]:
    """Decode a JPEG or PNG (sniffed from its bytes) to a [C, H, W] tensor.

    ``input`` may also be a path (as torchvision.io.decode_image) or a list of
    encoded images, decoded in parallel. 16-bit PNGs give uint16 unless ``dtype``
    says otherwise; see :func:`decode_jpeg` and :func:`decode_png` for the rest.

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(1, 3, 3, dtype=torch.uint8))
        >>> decode_image(data, ImageReadMode.RGB).shape
        torch.Size([3, 3, 3])
    """
    if torch.compiler.is_compiling():
        from trivium.vision.io import ops

        image = ops.decode_image_op(input, int(mode), apply_exif_orientation)
        return convert_dtype(image, dtype).to(device)
    if isinstance(input, str | os.PathLike):
        path, input = input, read_file(input)
    if isinstance(input, list | tuple):
        options = dict(dtype=dtype, device=device, strict=strict, max_pixels=max_pixels)
        return decode_batch(
            lambda data, where: decode_image(
                data, mode, apply_exif_orientation, path=where, **options
            ),
            input,
            path,
            None,
        )
    fmt = sniff_format(input, path=path)
    options = dict(device=device, strict=strict, max_pixels=max_pixels, path=path)
    if fmt == "png":
        return decode_png(input, mode, apply_exif_orientation, dtype=dtype, **options)
    image = decode_jpeg(input, mode, apply_exif_orientation=apply_exif_orientation, **options)
    return convert_dtype(image, dtype)


def read_image(
    path: PathLike,
    mode: ImageReadMode = ImageReadMode.UNCHANGED,
    apply_exif_orientation: bool = False,
    *,
    dtype: torch.dtype | None = None,
    device: str | torch.device = "cpu",
    strict: bool = True,
) -> torch.Tensor:
    """Read and decode a JPEG or PNG file; errors name the file.

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
