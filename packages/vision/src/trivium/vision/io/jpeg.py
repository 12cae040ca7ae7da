"""JPEG decode and encode (libjpeg-turbo), with DCT-scaled and region decode.

Example:
    >>> import torch
    >>> from trivium.vision.io import decode_jpeg, encode_jpeg
    >>> image = torch.zeros(3, 64, 48, dtype=torch.uint8)
    >>> data = encode_jpeg(image, quality=90)
    >>> decode_jpeg(data, scale=0.25).shape
    torch.Size([3, 16, 12])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from trivium.core.threads import parallel_map
from trivium.vision import _C
from trivium.vision.io.codec import (
    Buffer,
    EncodedData,
    ImageReadMode,
    PathLike,
    as_buffer,
    check_damage,
    decode_batch,
    encode_with,
    make_output,
    native_errors,
    resolve_max_pixels,
)
from trivium.vision.io.file import write_file
from trivium.vision.io.orientation import apply_exif_orientation as _orient

#: The scales libjpeg-turbo decodes at natively (M/8 for M in 1..8).
SUPPORTED_SCALES = tuple(Fraction(m, 8) for m in range(1, 9))
_SUBSAMPLINGS = {"4:4:4": 444, "4:2:2": 422, "4:2:0": 420, "4:4:0": 440}


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
    min_h, min_w = (int(v) for v in min_size)
    for m in range(1, 8):
        if math.ceil(height * m / 8) >= min_h and math.ceil(width * m / 8) >= min_w:
            return m
    return 8


def _check_roi(roi: Sequence[int] | None) -> tuple[int, int, int, int] | None:
    if roi is None:
        return None
    if len(roi) != 4:
        raise ValueError(f"decode_jpeg: roi must be (top, left, height, width), got {roi!r}")
    return tuple(int(v) for v in roi)  # type: ignore[return-value]


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
    """The native decode of a buffer from ``as_buffer``: an (H, W, C) array, or ``target`` filled.

    Damage raises (``strict``) or warns; errors name ``path``. The arguments are
    not checked again: :func:`decode_jpeg` is the public entry point.

    Example:
        >>> import torch
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


def _decode_one(
    data: EncodedData,
    mode: ImageReadMode,
    device: torch.device,
    apply_exif_orientation: bool,
    scale: float | Fraction | None,
    min_size: Sequence[int] | None,
    roi: tuple[int, int, int, int] | None,
    strict: bool,
    max_pixels: int,
    out: torch.Tensor | None,
    path: PathLike | None,
) -> torch.Tensor:
    buffer = as_buffer(data, "decode_jpeg")
    with native_errors(path):
        header = _C.jpeg_info(buffer) if (min_size is not None or apply_exif_orientation) else {}
        if min_size is not None:
            h, w = (roi[2], roi[3]) if roi else (header["height"], header["width"])
            eighths = eighths_for_min_size(h, w, min_size)
        else:
            eighths = 8 if scale is None else scale_to_eighths(scale)
    target, finish = make_output(out, device)
    image = finish(decode_buffer(buffer, mode, eighths, roi, strict, max_pixels, target, path))
    if apply_exif_orientation:
        image = _orient(image, header["orientation"])
    return image


def decode_jpeg(
    input: EncodedData | list[EncodedData],
    mode: ImageReadMode = ImageReadMode.UNCHANGED,
    device: str | torch.device = "cpu",
    apply_exif_orientation: bool = False,
    *,
    scale: float | Fraction | None = None,
    min_size: Sequence[int] | None = None,
    roi: Sequence[int] | None = None,
    strict: bool = True,
    max_pixels: int | None = ...,  # type: ignore[assignment]
    out: torch.Tensor | None = None,
    path: PathLike | None = None,
) -> torch.Tensor | list[torch.Tensor]:
    """Decode a JPEG to a uint8 [C, H, W] tensor (a list of them for a list of inputs).

    Arguments follow torchvision.io.decode_jpeg; beyond it:

    - ``scale``: decode at a DCT scale M/8 (``0.5``, ``Fraction(3, 8)``, ...), far
      cheaper than decoding at full size and resizing.
    - ``min_size=(h, w)``: the smallest such scale whose output still covers (h, w).
    - ``roi=(top, left, height, width)``: decode only that region, given in source
      pixels. With a scale the output covers the scaled box (start floored, end
      rounded up).
    - ``strict``: damaged data (a premature end, bad entropy codes) raises
      ``DecodeError``; with ``strict=False`` the decoded part is returned and a
      ``DecodeWarning`` issued.
    - ``max_pixels``: the decompression-bomb limit (default:
      ``get_max_image_pixels()``), checked from the header before allocating.
    - ``out``: a uint8 [C, H, W] tensor to decode into (e.g. pinned memory). Its
      [H, W, C] view must be contiguous to be filled in place; otherwise it is copied to.
    - ``device="cuda"``: decoded on the CPU into pinned memory, then copied.

    The result is a [C, H, W] view of an [H, W, C] buffer (as torchvision's); CMYK
    and YCCK images are converted to RGB. A list of inputs is decoded in parallel
    on the ``trivium.core`` thread pool.

    Example:
        >>> import torch
        >>> data = encode_jpeg(torch.full((3, 32, 32), 128, dtype=torch.uint8))
        >>> decode_jpeg(data, mode=ImageReadMode.GRAY).shape
        torch.Size([1, 32, 32])
        >>> decode_jpeg(data, roi=(8, 8, 16, 16), scale=0.5).shape
        torch.Size([3, 8, 8])
    """
    mode = ImageReadMode(mode)
    if scale is not None and min_size is not None:
        raise ValueError("decode_jpeg: pass scale or min_size, not both")
    box = _check_roi(roi)
    limit = resolve_max_pixels(max_pixels)
    if torch.compiler.is_compiling():
        from trivium.vision.io import ops

        if out is not None:
            raise ValueError("decode_jpeg: out= is not supported inside torch.compile")
        eighths = 8 if scale is None else scale_to_eighths(scale)
        image = ops.decode_jpeg_op(input, int(mode), eighths, box, apply_exif_orientation)
        return image.to(device)
    device = torch.device(device)
    args = (mode, device, apply_exif_orientation, scale, min_size, box, strict, limit)
    if isinstance(input, list | tuple):
        return decode_batch(
            lambda data, where: _decode_one(data, *args, None, where), input, path, out
        )
    return _decode_one(input, *args, out, path)


def _subsampling_code(subsampling: int | str) -> int:
    if isinstance(subsampling, str):
        if subsampling in _SUBSAMPLINGS:
            return _SUBSAMPLINGS[subsampling]
        subsampling = int(subsampling.replace(":", ""))
    if subsampling not in _SUBSAMPLINGS.values():
        raise ValueError(f"encode_jpeg: subsampling must be one of {list(_SUBSAMPLINGS)}")
    return int(subsampling)


def encode_jpeg(
    input: torch.Tensor | list[torch.Tensor],
    quality: int = 75,
    *,
    subsampling: int | str = "4:2:0",
    progressive: bool = False,
    optimize: bool = False,
) -> torch.Tensor | list[torch.Tensor]:
    """Encode a uint8 [C, H, W] tensor (C = 1 or 3) to JPEG bytes as a 1-D uint8 tensor.

    ``quality`` is libjpeg's 1..100; ``subsampling`` of the chroma is "4:4:4",
    "4:2:2", "4:2:0" (default, as Pillow and libjpeg) or "4:4:0". A list of images
    is encoded in parallel and gives a list.

    Example:
        >>> import torch
        >>> data = encode_jpeg(torch.zeros(1, 8, 8, dtype=torch.uint8), quality=95)
        >>> data.dtype, bytes(data[:2].tolist())
        (torch.uint8, b'\\xff\\xd8')
    """
    if isinstance(input, list | tuple):
        return parallel_map(
            lambda img: encode_jpeg(
                img, quality, subsampling=subsampling, progressive=progressive, optimize=optimize
            ),
            list(input),
        )
    code = _subsampling_code(subsampling)
    options = (int(quality), code, bool(progressive), bool(optimize))
    return encode_with(_C.encode_jpeg, input, "encode_jpeg", (1, 3), (torch.uint8,), *options)


def write_jpeg(input: torch.Tensor, filename: PathLike, quality: int = 75) -> None:
    """Encode a uint8 [C, H, W] tensor as JPEG and write it to ``filename``.

    Example:
        >>> import torch, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "black.jpg")
        >>> write_jpeg(torch.zeros(3, 8, 8, dtype=torch.uint8), path)
        >>> os.path.getsize(path) > 0
        True
    """
    write_file(filename, encode_jpeg(input, quality))
