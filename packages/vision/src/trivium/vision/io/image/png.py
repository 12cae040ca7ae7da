"""PNG decode and encode (libspng): every color type and bit depth, interlaced too.

Example:
    >>> import torch
    >>> from trivium.vision.io import decode_png, encode_png
    >>> image = torch.randint(0, 256, (4, 5, 6), dtype=torch.uint8)
    >>> torch.equal(decode_png(encode_png(image)), image)
    True
"""

from __future__ import annotations

import torch

from trivium.vision.io.image import ops
from trivium.vision.io.image.codec import (
    EncodedData,
    ImageFormat,
    ImageReadMode,
    PathLike,
    encode_with,
    image_op_args,
    register_format,
)
from trivium.vision.io.image.file import write_file

_ops = ops.decode_ops("decode_png")


def decode_png(
    input: EncodedData | list[EncodedData],
    mode: ImageReadMode = ImageReadMode.UNCHANGED,
    apply_exif_orientation: bool = False,
    *,
    dtype: torch.dtype | None = None,
    device: str | torch.device = "cpu",
    strict: bool | None = None,
    max_pixels: int | None = ...,  # type: ignore[assignment]
    out: torch.Tensor | None = None,
    path: PathLike | None = None,
) -> torch.Tensor | list[torch.Tensor]:
    """Decode a PNG to a [C, H, W] tensor: uint8, or uint16 for 16-bit PNGs.

    Gray, gray+alpha, RGB, RGBA and palette images of 1 to 16 bits, interlaced or
    not. ``UNCHANGED`` keeps the image's channels and adds alpha when a tRNS chunk
    makes some pixels transparent (palette images become RGB or RGBA).
    ``dtype=torch.float32`` scales to [0, 1]; ``dtype=torch.uint8`` narrows 16-bit
    samples. Damage follows :func:`~trivium.vision.io.decode_jpeg`'s rule: a stream
    that breaks or is cut short raises by default; ``strict=False`` returns what a
    damaged file let us decode (rows not reached are zero) with a ``DecodeWarning``.
    Other arguments as :func:`~trivium.vision.io.decode_jpeg`. Inside
    ``torch.compile`` it runs as the custom op ``torch.ops.trivium.decode_png``
    (``out`` raises there), and the dtype must be known before decoding: without
    ``dtype`` a 16-bit PNG raises ``TypeError``.

    Example:
        >>> import torch
        >>> image = torch.zeros(1, 2, 2, dtype=torch.uint16)
        >>> decode_png(encode_png(image)).dtype
        torch.uint16
        >>> decode_png(encode_png(image), ImageReadMode.RGB, dtype=torch.float32).shape
        torch.Size([3, 2, 2])
    """
    args = image_op_args(mode, apply_exif_orientation, dtype, strict, max_pixels)
    return ops.run_decoder(_ops, input, args, path=path, device=device, out=out)


register_format(ImageFormat("png", decode_png, _ops.default))


def encode_png(input: torch.Tensor, compression_level: int = 6) -> torch.Tensor:
    """Encode a uint8 or uint16 [C, H, W] tensor (C = 1..4) as PNG bytes (1-D uint8 tensor).

    ``compression_level`` is zlib's 0 (none) .. 9 (smallest). Channels map to gray,
    gray+alpha, RGB and RGBA; uint16 gives a 16-bit PNG.

    Example:
        >>> import torch
        >>> bytes(encode_png(torch.zeros(3, 4, 4, dtype=torch.uint8))[1:4].tolist())
        b'PNG'
    """
    dtypes = (torch.uint8, torch.uint16)
    return encode_with(
        ops.encode_png_op, input, "encode_png", (1, 2, 3, 4), dtypes, int(compression_level)
    )


def write_png(input: torch.Tensor, filename: PathLike, compression_level: int = 6) -> None:
    """Encode a [C, H, W] tensor as PNG and write it to ``filename``.

    Example:
        >>> import torch, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "x.png")
        >>> write_png(torch.zeros(1, 4, 4, dtype=torch.uint8), path)
        >>> open(path, "rb").read(4)
        b'\\x89PNG'
    """
    write_file(filename, encode_png(input, compression_level))
