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

from trivium.vision import _C
from trivium.vision.io.codec import (
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


def _decode_one(
    data: EncodedData,
    mode: ImageReadMode,
    device: torch.device,
    apply_exif_orientation: bool,
    dtype: torch.dtype | None,
    strict: bool,
    max_pixels: int,
    out: torch.Tensor | None,
    path: PathLike | None,
) -> torch.Tensor:
    buffer = as_buffer(data, "decode_png")
    with native_errors(path):
        target, finish = make_output(out, device)
        array, messages, corrupt = _C.decode_png(buffer, int(mode), not strict, max_pixels, target)
        orientation = _C.png_info(buffer)["orientation"] if apply_exif_orientation else 0
    check_damage(messages, corrupt, strict, path)
    image = convert_dtype(finish(array), dtype)
    return _orient(image, orientation)


def decode_png(
    input: EncodedData | list[EncodedData],
    mode: ImageReadMode = ImageReadMode.UNCHANGED,
    apply_exif_orientation: bool = False,
    *,
    dtype: torch.dtype | None = None,
    device: str | torch.device = "cpu",
    strict: bool = True,
    max_pixels: int | None = ...,  # type: ignore[assignment]
    out: torch.Tensor | None = None,
    path: PathLike | None = None,
) -> torch.Tensor | list[torch.Tensor]:
    """Decode a PNG to a [C, H, W] tensor: uint8, or uint16 for 16-bit PNGs.

    Gray, gray+alpha, RGB, RGBA and palette images of 1 to 16 bits, interlaced or
    not. ``UNCHANGED`` keeps the image's channels and adds alpha when a tRNS chunk
    makes some pixels transparent (palette images become RGB or RGBA).
    ``dtype=torch.float32`` scales to [0, 1]; ``dtype=torch.uint8`` narrows 16-bit
    samples. ``strict=False`` returns what a damaged file let us decode (rows not
    reached are zero) with a ``DecodeWarning``. Other arguments as
    :func:`~trivium.vision.io.decode_jpeg`.

    Example:
        >>> import torch
        >>> image = torch.zeros(1, 2, 2, dtype=torch.uint16)
        >>> decode_png(encode_png(image)).dtype
        torch.uint16
        >>> decode_png(encode_png(image), ImageReadMode.RGB, dtype=torch.float32).shape
        torch.Size([3, 2, 2])
    """
    mode = ImageReadMode(mode)
    limit = resolve_max_pixels(max_pixels)
    if torch.compiler.is_compiling():
        from trivium.vision.io import ops

        if out is not None:
            raise ValueError("decode_png: out= is not supported inside torch.compile")
        image = ops.decode_png_op(input, int(mode), apply_exif_orientation)
        return convert_dtype(image, dtype).to(device)
    device = torch.device(device)
    args = (mode, device, apply_exif_orientation, dtype, strict, limit)
    if isinstance(input, list | tuple):
        return decode_batch(
            lambda data, where: _decode_one(data, *args, None, where), input, path, out
        )
    return _decode_one(input, *args, out, path)


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
        _C.encode_png, input, "encode_png", (1, 2, 3, 4), dtypes, int(compression_level)
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
