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

from collections.abc import Sequence
from fractions import Fraction

import torch

from trivium.core.threads import parallel_map
from trivium.vision.io.image import ops
from trivium.vision.io.image.codec import (
    EncodedData,
    ImageFormat,
    ImageReadMode,
    PathLike,
    encode_with,
    max_pixels_arg,
    register_format,
)
from trivium.vision.io.image.file import write_file
from trivium.vision.io.image.kernels import (  # noqa: F401  (the scale helpers: re-exported)
    SUPPORTED_SCALES,
    check_roi,
    eighths_for_min_size,
    scale_to_eighths,
)

_SUBSAMPLINGS = {"4:4:4": 444, "4:2:2": 422, "4:2:0": 420, "4:4:0": 440}


_ops = ops.decode_ops("decode_jpeg")


def decode_jpeg(
    input: EncodedData | list[EncodedData],
    mode: ImageReadMode = ImageReadMode.UNCHANGED,
    device: str | torch.device = "cpu",
    apply_exif_orientation: bool = False,
    *,
    scale: float | Fraction | None = None,
    min_size: Sequence[int] | None = None,
    roi: Sequence[int] | None = None,
    strict: bool | None = None,
    max_pixels: int | None = ...,  # type: ignore[assignment]
    out: torch.Tensor | None = None,
    path: PathLike | None = None,
) -> torch.Tensor | list[torch.Tensor]:
    """Decode a JPEG to a [C, H, W] tensor (a list of them for a list of inputs).

    Every process is decoded: baseline, extended (12-bit, arithmetic), progressive
    and lossless (SOF3, 2 to 16 bits). Up to 8 bits per sample give uint8; 12-bit
    and 9- to 16-bit lossless JPEGs give uint16 with each stored value ``v``
    bit-replicated to the full 16-bit range (a 12-bit ``v`` becomes
    ``v << 4 | v >> 8``), so 4095 reads 65535 and ``ToDtype(..., scale=True)``
    treats them as 16-bit PNGs; ``x >> (16 - image_info(data).bit_depth)`` gives
    the stored values back. Lossless JPEGs below 8 bits are replicated to uint8 alike.

    Arguments follow torchvision.io.decode_jpeg; beyond it:

    - ``scale``: decode at a DCT scale M/8 (``0.5``, ``Fraction(3, 8)``, ...), far
      cheaper than decoding at full size and resizing. Lossless JPEG has no DCT:
      a scale other than 1 raises ``UnsupportedFormatError``.
    - ``min_size=(h, w)``: the smallest such scale whose output still covers (h, w)
      (lossless JPEGs decode at full size).
    - ``roi=(top, left, height, width)``: decode only that region, given in source
      pixels. With a scale the output covers the scaled box (start floored, end
      rounded up). A region not inside the image raises ``ValueError``.
    - ``strict``: what damaged data gives. By default (``None``) damage libjpeg
      recovers from (bad Huffman codes, a marker inside the data, extraneous bytes,
      a progressive file missing a scan) gives the image, the pixels Pillow gives,
      with one ``DecodeWarning`` ``"{path}: {reason}; ..."``, and a truncated file
      ("Premature end of JPEG file") raises ``DecodeError``, as Pillow and
      torchvision refuse it. ``True`` raises ``DecodeError`` for any damage (for
      validation); ``False`` also returns a truncated file's decoded part, with a
      ``DecodeWarning``.
    - ``max_pixels``: the decompression-bomb limit (default:
      ``get_max_image_pixels()``), checked from the header before allocating.
    - ``out``: a [C, H, W] tensor of the decoded dtype to decode into (e.g. pinned
      memory). Its [H, W, C] view must be contiguous to be filled in place;
      otherwise it is copied to.
    - ``device="cuda"``: decoded on the CPU into pinned memory, then copied.

    The result is a [C, H, W] view of an [H, W, C] buffer (as torchvision's); CMYK
    and YCCK images (8-bit) are converted to RGB; lossless JPEGs must be gray or
    RGB. A list of inputs is decoded in parallel on ``trivium.core.get_num_threads()``
    threads (set it with ``set_num_threads``); an error names the first bad item in
    list order (``<batch item i>``, or ``path``). Inside ``torch.compile`` it runs as the custom op
    ``torch.ops.trivium.decode_jpeg`` with every argument above except ``out``
    (which raises there); the input must then be a uint8 tensor, and the image
    8-bit (a uint16 result raises ``TypeError``: decode 12-bit and wide lossless
    JPEGs with ``decode_image(data, dtype=torch.uint16)`` there).

    Example:
        >>> import torch
        >>> data = encode_jpeg(torch.full((3, 32, 32), 128, dtype=torch.uint8))
        >>> decode_jpeg(data, mode=ImageReadMode.GRAY).shape
        torch.Size([1, 32, 32])
        >>> decode_jpeg(data, roi=(8, 8, 16, 16), scale=0.5).shape
        torch.Size([3, 8, 8])
    """
    code = _MODES.get(mode) if type(mode) in _MODE_TYPES else None
    mode = int(ImageReadMode(mode)) if code is None else code  # a bad mode raises there
    if scale is not None and min_size is not None:
        raise ValueError("decode_jpeg: pass scale or min_size, not both")
    if scale is not None:
        scale = scale_to_eighths(scale) / 8  # errors name the scales
    size = None if min_size is None else [int(v) for v in min_size]
    box = None if roi is None else list(check_roi(roi))  # type: ignore[arg-type]
    strict = None if strict is None else bool(strict)
    args = (
        mode,
        bool(apply_exif_orientation),
        scale,
        size,
        box,
        strict,
        max_pixels_arg(max_pixels),
    )
    return ops.run_decoder(_ops, input, args, path=path, device=device, out=out)


_MODES = {m: int(m) for m in ImageReadMode} | {int(m): int(m) for m in ImageReadMode}
_MODE_TYPES = (ImageReadMode, int)


register_format(ImageFormat("jpeg", decode_jpeg, _ops.default))


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
    """Encode a [C, H, W] tensor (C = 1 or 3) to JPEG bytes as a 1-D uint8 tensor.

    uint8 gives an 8-bit JPEG; uint16 gives a 12-bit JPEG of each sample's top 12
    bits (``x >> 4``: the inverse of how :func:`decode_jpeg` widens 12-bit samples,
    so a decoded 12-bit image encodes from the values it was decoded from).
    ``quality`` is libjpeg's 1..100; ``subsampling`` of the chroma is "4:4:4",
    "4:2:2", "4:2:0" (default, as Pillow and libjpeg) or "4:4:0". A list of images
    is encoded in parallel and gives a list.

    Example:
        >>> import torch
        >>> data = encode_jpeg(torch.zeros(1, 8, 8, dtype=torch.uint8), quality=95)
        >>> data.dtype, bytes(data[:2].tolist())
        (torch.uint8, b'\\xff\\xd8')
        >>> deep = torch.full((1, 8, 8), 4095 << 4, dtype=torch.uint16)
        >>> decode_jpeg(encode_jpeg(deep, quality=100)).dtype
        torch.uint16
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
    dtypes = (torch.uint8, torch.uint16)
    return encode_with(ops.encode_jpeg_op, input, "encode_jpeg", (1, 3), dtypes, *options)


def write_jpeg(input: torch.Tensor, filename: PathLike, quality: int = 75) -> None:
    """Encode a [C, H, W] tensor as JPEG (see :func:`encode_jpeg`) and write it to ``filename``.

    Example:
        >>> import torch, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "black.jpg")
        >>> write_jpeg(torch.zeros(3, 8, 8, dtype=torch.uint8), path)
        >>> os.path.getsize(path) > 0
        True
    """
    write_file(filename, encode_jpeg(input, quality))
