"""Argument helpers of the decoders, and the JPEG region decode the fused transforms use.

Not public API. The public decoders check their arguments with these helpers, then
call the C++ operators of :mod:`trivium.vision.io.image.ops` (eager and compiled alike);
:func:`decode_buffer` is the scaled region decode of the fused ``Decode*``
transforms, through the same op.

Example:
    >>> scale_to_eighths(0.5), check_roi((0, 0, 8, 8))
    (4, (0, 0, 8, 8))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import torch

from trivium.vision.io.image import ops
from trivium.vision.io.image.codec import ImageReadMode, PathLike, path_arg

#: The scales libjpeg-turbo decodes at natively (M/8 for M in 1..8).
SUPPORTED_SCALES = tuple(Fraction(m, 8) for m in range(1, 9))


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


def decode_buffer(
    data: Any,
    mode: ImageReadMode,
    eighths: int,
    roi: tuple[int, int, int, int] | None,
    strict: bool | None,
    max_pixels: int,
    path: PathLike | None = None,
) -> torch.Tensor:
    """JPEG decode of encoded ``data`` at the DCT scale ``eighths``/8, of ``roi`` (None: all).

    One call of the op ``trivium::decode_jpeg`` (its ``.status`` overload) and
    :func:`~trivium.vision.io.image.ops.check_status`: the [C, H, W] view of an [H, W, C]
    buffer, as ``decode_jpeg`` gives it. ``max_pixels`` is the native limit (0: none);
    errors name ``path``. The arguments are not checked again.

    Example:
        >>> from trivium.vision.io import encode_jpeg
        >>> data = encode_jpeg(torch.zeros(3, 16, 16, dtype=torch.uint8))
        >>> decode_buffer(data, ImageReadMode.RGB, 4, None, None, 0).shape
        torch.Size([3, 8, 8])
    """
    tensor = ops.encoded_tensor(data, "decode_jpeg")
    box = None if roi is None else list(roi)
    args = (int(mode), False, eighths / 8, None, box, strict, max_pixels)
    image, error, message = _STATUS(tensor, *args)
    if error or message:  # the warning points at the caller of the transform
        values = [tensor, *args, path_arg(path)]
        image = ops.check_status(image, error, message, values, "decode_jpeg", stacklevel=4)
    return image


_STATUS = ops.decode_ops("decode_jpeg").status
