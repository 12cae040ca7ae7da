"""The decoders as ``torch.library`` custom ops, so compiled code can call them.

``decode_jpeg``, ``decode_png`` and ``decode_image`` call these ops inside
``torch.compile`` (and the decode kernels of :mod:`trivium.vision.io.kernels`
directly in eager mode); each op's implementation calls the same kernel with the
same arguments, so both modes give the same pixels and the same errors. The
schemas use plain types and mirror the Python API, ``strict`` and ``max_pixels``
included::

    trivium::decode_jpeg(Tensor data, int mode=0, bool apply_exif_orientation=False,
        float? scale=None, int[]? min_size=None, int[]? roi=None, bool strict=True,
        int max_pixels=-1, str? path=None) -> Tensor
    trivium::decode_png(Tensor data, int mode=0, bool apply_exif_orientation=False,
        ScalarType? dtype=None, bool strict=True, int max_pixels=-1, str? path=None) -> Tensor
    trivium::decode_image(... the same as decode_png ...) -> Tensor

``data`` is a 1-D uint8 tensor of the encoded bytes; ``mode`` an
``ImageReadMode`` value; ``max_pixels`` -1 for the process-wide limit
(``set_max_image_pixels``, read when the op runs), 0 for none. The output is a
contiguous [C, H, W] CPU tensor of data-dependent height and width (moving it to a
``device`` happens after the op, in the compiled graph). Its dtype must be known
before decoding: ``dtype``, or uint8 when ``dtype`` is None, so a 16-bit PNG with
``dtype=None`` raises ``TypeError`` (pass ``dtype=torch.uint16``).

Example:
    >>> import torch
    >>> from trivium.vision.io import encode_png
    >>> data = encode_png(torch.zeros(3, 4, 4, dtype=torch.uint8))
    >>> torch.ops.trivium.decode_image(data, 0, False).shape
    torch.Size([3, 4, 4])
    >>> torch.ops.trivium.decode_image(data, max_pixels=8)
    Traceback (most recent call last):
    ...
    trivium.core.errors.DecodeError: 4x4 image exceeds the limit of 8 pixels
"""

from __future__ import annotations

from typing import Any

import torch

from trivium.vision.io.codec import ImageReadMode, PathLike
from trivium.vision.io.kernels import (
    decode_image_kernel,
    decode_jpeg_kernel,
    decode_png_kernel,
    path_arg,
)

_JPEG_SCHEMA = (
    "(Tensor data, int mode=0, bool apply_exif_orientation=False, float? scale=None, "
    "int[]? min_size=None, int[]? roi=None, bool strict=True, int max_pixels=-1, "
    "str? path=None) -> Tensor"
)
_PNG_SCHEMA = (
    "(Tensor data, int mode=0, bool apply_exif_orientation=False, ScalarType? dtype=None, "
    "bool strict=True, int max_pixels=-1, str? path=None) -> Tensor"
)


def check_traceable(data: Any, func: str) -> None:
    """Inside ``torch.compile`` encoded data must be a tensor: bytes and arrays cannot be traced.

    Example:
        >>> check_traceable(b"\\xff\\xd8", "decode_jpeg")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: decode_jpeg: inside torch.compile, pass the encoded image as ... not bytes
    """
    if not isinstance(data, torch.Tensor):
        raise TypeError(
            f"{func}: inside torch.compile, pass the encoded image as a 1-D uint8 tensor "
            f"(e.g. from read_file), not {type(data).__name__}"
        )


def decode_traced(
    op: Any,
    input: Any,
    args: tuple[Any, ...],
    path: PathLike | None,
    device: str | torch.device,
    func: str,
) -> torch.Tensor | list[torch.Tensor]:
    """Inside ``torch.compile``: ``op(data, *args, path)`` on one encoded tensor or each of a list.

    Errors name ``path``, else an item's place in the list (as eager batches do);
    the results are then moved to ``device``.

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(1, 2, 3, dtype=torch.uint8))
        >>> [t.shape for t in decode_traced(decode_png_op, [data], (3,), None, "cpu", "x")]
        [torch.Size([3, 2, 3])]
    """
    many = isinstance(input, list | tuple)
    images = []
    for i, data in enumerate(input if many else [input]):
        check_traceable(data, func)
        where = path_arg(path) if path is not None or not many else f"<batch item {i}>"
        images.append(op(data, *args, path=where).to(device))
    return images if many else images[0]


def _as_op_output(image: torch.Tensor, dtype: torch.dtype | None, func: str) -> torch.Tensor:
    """The kernel's result in the layout and dtype the fake kernel promises."""
    want = torch.uint8 if dtype is None else dtype
    if image.dtype != want:
        raise TypeError(
            f"{func}: this image decodes to {image.dtype}, and inside torch.compile the "
            f"output dtype must be known before decoding: pass dtype= (e.g. dtype={image.dtype})"
        )
    return image.contiguous()


def _fake_image(data: torch.Tensor, mode: int, dtype: torch.dtype | None) -> torch.Tensor:
    ctx = torch.library.get_ctx()
    channels = ImageReadMode(mode).channels
    if channels is None:
        channels = ctx.new_dynamic_size(min=1, max=4)
    height = ctx.new_dynamic_size(min=1)
    width = ctx.new_dynamic_size(min=1)
    dtype = torch.uint8 if dtype is None else dtype
    return data.new_empty((channels, height, width), dtype=dtype, device="cpu")


@torch.library.custom_op("trivium::decode_jpeg", mutates_args=(), schema=_JPEG_SCHEMA)
def decode_jpeg_op(
    data: torch.Tensor,
    mode: int = 0,
    apply_exif_orientation: bool = False,
    scale: float | None = None,
    min_size: list[int] | None = None,
    roi: list[int] | None = None,
    strict: bool = True,
    max_pixels: int = -1,
    path: str | None = None,
) -> torch.Tensor:
    """Decode a JPEG (see :func:`trivium.vision.io.decode_jpeg`) as a custom op."""
    args = (mode, apply_exif_orientation, scale, min_size, roi, strict, max_pixels, path)
    return _as_op_output(decode_jpeg_kernel(data, *args), None, "decode_jpeg")


@decode_jpeg_op.register_fake
def _(data, mode=0, apply_exif_orientation=False, *args, **kwargs):
    return _fake_image(data, mode, None)


@torch.library.custom_op("trivium::decode_png", mutates_args=(), schema=_PNG_SCHEMA)
def decode_png_op(
    data: torch.Tensor,
    mode: int = 0,
    apply_exif_orientation: bool = False,
    dtype: torch.dtype | None = None,
    strict: bool = True,
    max_pixels: int = -1,
    path: str | None = None,
) -> torch.Tensor:
    """Decode a PNG (see :func:`trivium.vision.io.decode_png`) as a custom op."""
    args = (mode, apply_exif_orientation, dtype, strict, max_pixels, path)
    return _as_op_output(decode_png_kernel(data, *args), dtype, "decode_png")


@decode_png_op.register_fake
def _(data, mode=0, apply_exif_orientation=False, dtype=None, *args, **kwargs):
    return _fake_image(data, mode, dtype)


@torch.library.custom_op("trivium::decode_image", mutates_args=(), schema=_PNG_SCHEMA)
def decode_image_op(
    data: torch.Tensor,
    mode: int = 0,
    apply_exif_orientation: bool = False,
    dtype: torch.dtype | None = None,
    strict: bool = True,
    max_pixels: int = -1,
    path: str | None = None,
) -> torch.Tensor:
    """Decode a JPEG or PNG (see :func:`trivium.vision.io.decode_image`) as a custom op."""
    args = (mode, apply_exif_orientation, dtype, strict, max_pixels, path)
    return _as_op_output(decode_image_kernel(data, *args), dtype, "decode_image")


@decode_image_op.register_fake
def _(data, mode=0, apply_exif_orientation=False, dtype=None, *args, **kwargs):
    return _fake_image(data, mode, dtype)
