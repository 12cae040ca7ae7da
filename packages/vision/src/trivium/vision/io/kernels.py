"""The decode kernels: plain arguments in, a tensor out, straight over ``trivium.vision._C``.

Not public API: call :func:`~trivium.vision.io.decode_jpeg`,
:func:`~trivium.vision.io.decode_png` or :func:`~trivium.vision.io.decode_image`.
Calls go one way: the public functions check and normalise their arguments, then
call a kernel directly (eager mode) or the custom op of :mod:`trivium.vision.io.ops`
(inside ``torch.compile``), whose implementation calls the same kernel with the
same arguments. So both modes give the same result and the same errors.

Arguments as the ops take them: ``mode`` an ``ImageReadMode`` value, ``scale`` a
float M/8 or None, ``min_size`` and ``roi`` int sequences or None, ``max_pixels``
as :func:`~trivium.vision.io.codec.max_pixels_arg` gives it (-1: the process-wide
limit), ``path`` only names the file in errors.

Example:
    >>> import torch
    >>> from trivium.vision.io import encode_jpeg
    >>> data = encode_jpeg(torch.zeros(3, 32, 32, dtype=torch.uint8))
    >>> decode_jpeg_kernel(data, 1, False, 0.5, None, None, True, -1, None).shape
    torch.Size([1, 16, 16])
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from trivium.vision import _C
from trivium.vision.io.codec import (
    Buffer,
    EncodedData,
    ImageReadMode,
    PathLike,
    as_buffer,
    check_damage,
    make_output,
    native_errors,
    native_max_pixels,
    sniff_format,
)
from trivium.vision.io.orientation import apply_exif_orientation as _orient

#: The scales libjpeg-turbo decodes at natively (M/8 for M in 1..8).
SUPPORTED_SCALES = tuple(Fraction(m, 8) for m in range(1, 9))
_CPU = torch.device("cpu")


def scale_to_eighths(scale: float | Fraction) -> int:
    """The numerator M of a supported scale M/8.

    Example:
        >>> scale_to_eighths(0.25), scale_to_eighths(Fraction(3, 8))
        (2, 3)
    """
    fraction = Fraction(scale).limit_denominator(1 << 16)
    if fraction not in SUPPORTED_SCALES:
        names = ", ".join(str(s) for s in SUPPORTED_SCALES)
        raise ValueError(f"decode_jpeg: scale must be one of {names}, got {scale}")
    return int(fraction * 8)


def eighths_for_min_size(height: int, width: int, min_size: Sequence[int]) -> int:
    """The smallest M such that an (height, width) area scaled by M/8 still covers min_size.

    Example:
        >>> eighths_for_min_size(480, 640, (224, 224))  # 3/8 gives 180 rows: too few
        4
    """
    if len(min_size) != 2:
        raise ValueError(f"decode_jpeg: min_size must be (height, width), got {min_size!r}")
    min_h, min_w = (int(v) for v in min_size)
    for m in range(1, 8):
        if math.ceil(height * m / 8) >= min_h and math.ceil(width * m / 8) >= min_w:
            return m
    return 8


def check_roi(roi: Sequence[int] | None) -> tuple[int, int, int, int] | None:
    """``roi`` as a (top, left, height, width) tuple of ints, or None.

    Example:
        >>> check_roi([1, 2, 3, 4])
        (1, 2, 3, 4)
    """
    if roi is None:
        return None
    if len(roi) != 4:
        raise ValueError(f"decode_jpeg: roi must be (top, left, height, width), got {roi!r}")
    return tuple(int(v) for v in roi)  # type: ignore[return-value]


def convert_dtype(image: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    """Convert decoded uint8/uint16 samples to ``dtype`` (floats scaled to [0, 1]).

    uint16 to uint8 keeps the high byte, as Pillow does.

    Example:
        >>> import torch
        >>> convert_dtype(torch.tensor([0, 65535], dtype=torch.uint16), torch.float32)
        tensor([0., 1.])
    """
    if dtype is None or dtype == image.dtype:
        return image
    top = 65535.0 if image.dtype == torch.uint16 else 255.0
    if dtype.is_floating_point:
        return image.to(dtype).div_(top)
    if dtype == torch.uint8 and image.dtype == torch.uint16:
        return (image.to(torch.int32) >> 8).to(torch.uint8)
    if dtype == torch.uint16 and image.dtype == torch.uint8:
        return (image.to(torch.int32) * 257).to(torch.uint16)
    raise TypeError(f"cannot convert decoded {image.dtype} samples to {dtype}")


def decode_buffer(
    buffer: Buffer,
    mode: ImageReadMode,
    eighths: int,
    roi: tuple[int, int, int, int] | None,
    strict: bool,
    max_pixels: int,
    target: Any = None,
    path: PathLike | None = None,
) -> np.ndarray:
    """Native JPEG decode of a buffer from ``as_buffer``: an (H, W, C) array, or ``target`` filled.

    Damage raises (``strict``) or warns; errors name ``path``; ``max_pixels`` is
    the native limit (0: none). The arguments are not checked again.

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_jpeg
        >>> from trivium.vision.io.codec import as_buffer
        >>> data = as_buffer(encode_jpeg(torch.zeros(3, 16, 16, dtype=torch.uint8)), "example")
        >>> decode_buffer(data, ImageReadMode.RGB, 4, None, True, 0).shape
        (8, 8, 3)
    """
    with native_errors(path):
        array, messages, corrupt = _C.decode_jpeg(
            buffer, int(mode), eighths, roi, strict, max_pixels, target
        )
    check_damage(messages, corrupt, strict, path, stacklevel=5)  # the caller of decode_jpeg
    return array


def decode_jpeg_kernel(
    data: EncodedData,
    mode: int,
    apply_exif_orientation: bool,
    scale: float | Fraction | None,
    min_size: Sequence[int] | None,
    roi: Sequence[int] | None,
    strict: bool,
    max_pixels: int,
    path: PathLike | None,
    device: torch.device = _CPU,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Decode one JPEG (see :func:`~trivium.vision.io.decode_jpeg` for the arguments).

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_jpeg
        >>> data = encode_jpeg(torch.zeros(3, 40, 32, dtype=torch.uint8))
        >>> decode_jpeg_kernel(data, 3, False, None, None, (8, 0, 16, 16), True, 0, None).shape
        torch.Size([3, 16, 16])
    """
    read_mode = ImageReadMode(mode)
    if scale is not None and min_size is not None:
        raise ValueError("decode_jpeg: pass scale or min_size, not both")
    box = check_roi(roi)
    buffer = as_buffer(data, "decode_jpeg")
    with native_errors(path):
        header = _C.jpeg_info(buffer) if (min_size is not None or apply_exif_orientation) else {}
    if min_size is not None:
        h, w = (box[2], box[3]) if box else (header["height"], header["width"])
        # Lossless JPEG has no DCT scaling; its full size covers any min_size.
        eighths = 8 if header["lossless"] else eighths_for_min_size(h, w, min_size)
    else:
        eighths = 8 if scale is None else scale_to_eighths(scale)
    target, finish = make_output(out, device)
    limit = native_max_pixels(max_pixels)
    image = finish(decode_buffer(buffer, read_mode, eighths, box, strict, limit, target, path))
    if apply_exif_orientation:
        image = _orient(image, header["orientation"])
    return image


def decode_png_kernel(
    data: EncodedData,
    mode: int,
    apply_exif_orientation: bool,
    dtype: torch.dtype | None,
    strict: bool,
    max_pixels: int,
    path: PathLike | None,
    device: torch.device = _CPU,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Decode one PNG (see :func:`~trivium.vision.io.decode_png` for the arguments).

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(1, 4, 6, dtype=torch.uint16))
        >>> decode_png_kernel(data, 0, False, torch.float32, True, -1, None).dtype
        torch.float32
    """
    read_mode = ImageReadMode(mode)
    buffer = as_buffer(data, "decode_png")
    limit = native_max_pixels(max_pixels)
    with native_errors(path):
        target, finish = make_output(out, device)
        array, messages, corrupt = _C.decode_png(buffer, int(read_mode), not strict, limit, target)
        orientation = _C.png_info(buffer)["orientation"] if apply_exif_orientation else 0
    check_damage(messages, corrupt, strict, path)
    image = convert_dtype(finish(array), dtype)
    return _orient(image, orientation)


def decode_image_kernel(
    data: EncodedData,
    mode: int,
    apply_exif_orientation: bool,
    dtype: torch.dtype | None,
    strict: bool,
    max_pixels: int,
    path: PathLike | None,
    device: torch.device = _CPU,
) -> torch.Tensor:
    """Decode one JPEG or PNG, sniffed from its bytes (see :func:`~trivium.vision.io.decode_image`).

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(3, 4, 6, dtype=torch.uint8))
        >>> decode_image_kernel(data, 1, False, None, True, -1, None).shape
        torch.Size([1, 4, 6])
    """
    args = (mode, apply_exif_orientation)
    if sniff_format(data, path=path) == "png":
        return decode_png_kernel(data, *args, dtype, strict, max_pixels, path, device)
    image = decode_jpeg_kernel(data, *args, None, None, None, strict, max_pixels, path, device)
    return convert_dtype(image, dtype)


def path_arg(path: PathLike | None) -> str | None:
    """A path as the ops take it (a str), or None.

    Example:
        >>> from pathlib import Path
        >>> path_arg(Path("a") / "b.jpg")
        'a/b.jpg'
    """
    return None if path is None else os.fspath(path)
