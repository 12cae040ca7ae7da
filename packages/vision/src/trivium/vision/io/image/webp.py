"""WebP decode and encode (libwebp): lossy, lossless, with alpha, and animated.

Example:
    >>> import torch
    >>> from trivium.vision.io import decode_webp, encode_webp
    >>> image = torch.randint(0, 256, (3, 5, 6), dtype=torch.uint8)
    >>> torch.equal(decode_webp(encode_webp(image, lossless=True)), image)
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

_ops = ops.decode_ops("decode_webp")


def decode_webp(
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
    """Decode a WebP to a uint8 [C, H, W] tensor, or an animation to [T, C, H, W].

    Lossy (VP8), lossless (VP8L) and either with alpha. ``UNCHANGED`` gives RGB, or
    RGBA when the file has alpha; ``GRAY`` is the luma of the RGB pixels (as Pillow's
    ``convert("L")``), ``RGB`` drops the alpha, ``RGB_ALPHA`` adds an opaque one. An
    animation gives its T frames composited on the canvas as a viewer shows them
    (libwebp's ``WebPAnimDecoder``, as torchvision's ``decode_gif`` gives a GIF's), a
    one-frame animation a [C, H, W] image; ``image_info(data).frames`` says how many
    frames a file has. ``max_pixels`` bounds height x width x frames.

    Damage follows :func:`~trivium.vision.io.decode_jpeg`'s rule: a file cut short
    (a still image's rows, an animation's frames) raises by default, and
    ``strict=False`` returns what it let us decode (rows, or frames, not reached are
    zero) with a ``DecodeWarning``; whole image data in a container cut or mis-sized
    after it decodes with a ``DecodeWarning``; ``strict=True`` raises for both. Other
    arguments as :func:`~trivium.vision.io.decode_png`. Inside ``torch.compile`` it
    runs as the custom op ``torch.ops.trivium.decode_webp``, whose result is one
    [C, H, W] image: there an animation of several frames raises
    ``UnsupportedFormatError``.

    Example:
        >>> import torch
        >>> image = torch.zeros(4, 2, 3, dtype=torch.uint8)
        >>> decode_webp(encode_webp(image, lossless=True)).shape
        torch.Size([4, 2, 3])
        >>> decode_webp(encode_webp(image), ImageReadMode.GRAY).shape
        torch.Size([1, 2, 3])
    """
    args = image_op_args(mode, apply_exif_orientation, dtype, strict, max_pixels)
    return ops.run_decoder(_ops, input, args, path=path, device=device, out=out)


register_format(ImageFormat("webp", decode_webp, _ops.default))


def encode_webp(
    input: torch.Tensor,
    quality: float = 75,
    lossless: bool = False,
    *,
    method: int = 4,
    exact: bool = False,
) -> torch.Tensor:
    """Encode a uint8 [C, H, W] tensor (C = 1..4) as WebP bytes (1-D uint8 tensor).

    The arguments are those of Pillow's ``save(format="WEBP", ...)``: ``quality`` is
    0..100 (lossy: the quality; lossless: the effort spent on compression),
    ``lossless`` codes the pixels exactly, ``method`` trades speed (0) for size (6),
    and ``exact`` keeps the RGB values of fully transparent pixels, which are
    otherwise replaced to compress better. Gray and gray+alpha are stored as RGB and
    RGBA (WebP has no gray); alpha is kept.

    Example:
        >>> import torch
        >>> data = encode_webp(torch.zeros(3, 4, 4, dtype=torch.uint8), quality=90)
        >>> bytes(data[8:12].tolist())
        b'WEBP'
    """
    options = (float(quality), bool(lossless), int(method), bool(exact))
    channels, dtypes = (1, 2, 3, 4), (torch.uint8,)
    return encode_with(ops.encode_webp_op, input, "encode_webp", channels, dtypes, *options)


def write_webp(
    input: torch.Tensor,
    filename: PathLike,
    quality: float = 75,
    lossless: bool = False,
    *,
    method: int = 4,
    exact: bool = False,
) -> None:
    """Encode a [C, H, W] tensor as WebP (see :func:`encode_webp`) and write it to ``filename``.

    Example:
        >>> import torch, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "x.webp")
        >>> write_webp(torch.zeros(3, 4, 4, dtype=torch.uint8), path, lossless=True)
        >>> open(path, "rb").read(4)
        b'RIFF'
    """
    write_file(filename, encode_webp(input, quality, lossless, method=method, exact=exact))
