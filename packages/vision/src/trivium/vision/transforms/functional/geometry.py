"""Geometry kernels: resize, crops, padding and flips (``torchvision.transforms.v2.functional``).

All kernels take tensors ``[..., C, H, W]`` (``uint8``, ``uint16`` or floating) and
keep their dtype and device; resampling computes integer images in float32 and rounds
back, clamped to the dtype's range. Kernels marked *batched* also accept per-image parameters (one
row per image of the flattened batch) and apply them in one call.

Example:
    >>> import torch
    >>> img = torch.arange(2 * 3 * 4 * 5, dtype=torch.uint8).view(2, 3, 4, 5)
    >>> resize(img, [8, 10]).shape, center_crop(img, [2, 2]).shape, pad(img, [1]).shape
    (torch.Size([2, 3, 8, 10]), torch.Size([2, 3, 2, 2]), torch.Size([2, 3, 6, 7]))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.nn.functional import grid_sample, interpolate
from torch.nn.functional import pad as torch_pad

from trivium.core.tracing import is_tracing
from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import _register_kernel_internal, get_kernel
from trivium.vision.transforms._image import bits_view, check_image, eager_cpu, image_where
from trivium.vision.transforms.functional.conversion import _max_value
from trivium.vision.transforms.interpolation import InterpolationMode
from trivium.vision.tv_tensors import (
    BoundingBoxFormat,
    _as_format,
    _box_size,
    is_rotated_bounding_format,
)

__all__ = [
    "center_crop",
    "center_crop_bounding_boxes",
    "center_crop_image",
    "center_crop_mask",
    "center_crop_video",
    "clamp_bounding_boxes",
    "convert_bounding_box_format",
    "crop",
    "crop_batched",
    "crop_bounding_boxes",
    "crop_image",
    "crop_mask",
    "crop_video",
    "five_crop",
    "five_crop_image",
    "five_crop_video",
    "hflip",
    "horizontal_flip",
    "horizontal_flip_bounding_boxes",
    "horizontal_flip_image",
    "horizontal_flip_mask",
    "horizontal_flip_video",
    "pad",
    "pad_bounding_boxes",
    "pad_image",
    "pad_mask",
    "pad_video",
    "resize",
    "resize_bounding_boxes",
    "resize_image",
    "resize_mask",
    "resize_video",
    "resized_crop",
    "resized_crop_batched",
    "resized_crop_bounding_boxes",
    "resized_crop_image",
    "resized_crop_mask",
    "resized_crop_video",
    "ten_crop",
    "ten_crop_image",
    "ten_crop_video",
    "vertical_flip",
    "vertical_flip_bounding_boxes",
    "vertical_flip_image",
    "vertical_flip_mask",
    "vertical_flip_video",
    "vflip",
]

_PIL_CODES = {
    0: InterpolationMode.NEAREST,
    2: InterpolationMode.BILINEAR,
    3: InterpolationMode.BICUBIC,
}
_PAD_MODES = ("constant", "edge", "reflect", "symmetric")


# Argument parsing (Python only; the scriptable kernels below take parsed values).


def interpolation_mode(owner: str, interpolation: Any) -> InterpolationMode:
    """Parse ``interpolation`` (an :class:`InterpolationMode`, its string value or a PIL code).

    Example:
        >>> interpolation_mode("resize", "bicubic")
        <InterpolationMode.BICUBIC: 'bicubic'>
    """
    if isinstance(interpolation, InterpolationMode):
        return interpolation
    if isinstance(interpolation, str):
        try:
            return InterpolationMode(interpolation.lower())
        except ValueError:
            pass
    elif _is_int(interpolation) and interpolation in _PIL_CODES:
        return _PIL_CODES[interpolation]
    names = ", ".join(m.value for m in InterpolationMode)
    raise ValueError(f"{owner}: interpolation must be one of {names}, got {interpolation!r}")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def parse_size(owner: str, size: Any, name: str = "size") -> list[int]:
    """``size`` as ``[h, w]`` (an int or a one-element sequence means a square); all > 0.

    Example:
        >>> parse_size("CenterCrop", 3), parse_size("CenterCrop", (4, 5))
        ([3, 3], [4, 5])
    """
    if _is_int(size):
        size = [size, size]
    elif isinstance(size, Sequence) and len(size) == 1 and _is_int(size[0]):
        size = [size[0], size[0]]
    if not (isinstance(size, Sequence) and len(size) == 2 and all(_is_int(s) for s in size)):
        raise TypeError(
            f"{owner}: {name} must be an int or a sequence of 1 or 2 ints, got {size!r}"
        )
    if min(size) <= 0:
        raise ValueError(f"{owner}: {name} must be positive, got {list(size)}")
    return [int(size[0]), int(size[1])]


def parse_padding(owner: str, padding: Any) -> list[int]:
    """torchvision's ``padding`` (int, or 1, 2 or 4 ints: left, top, right, bottom) as l, r, t, b.

    Example:
        >>> parse_padding("Pad", [1, 2])
        [1, 1, 2, 2]
    """
    if _is_int(padding):
        padding = [padding]
    if not (isinstance(padding, Sequence) and all(_is_int(p) for p in padding)):
        raise TypeError(f"{owner}: padding must be an int or a sequence of ints, got {padding!r}")
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[0], padding[1], padding[1]]
    if len(padding) == 4:
        return [padding[0], padding[2], padding[1], padding[3]]
    raise ValueError(f"{owner}: padding must have 1, 2 or 4 elements, got {len(padding)}")


def parse_fill(owner: str, fill: Any) -> list[float] | None:
    """``fill`` (None, a number, or one number per channel) as a list of floats.

    Example:
        >>> parse_fill("Pad", 3), parse_fill("Pad", (1, 2, 3))
        ([3.0], [1.0, 2.0, 3.0])
    """
    if fill is None:
        return None
    if isinstance(fill, (int, float)) and not isinstance(fill, bool):
        return [float(fill)]
    if (
        isinstance(fill, Sequence)
        and len(fill) > 0
        and all(isinstance(f, (int, float)) and not isinstance(f, bool) for f in fill)
    ):
        return [float(f) for f in fill]
    raise TypeError(f"{owner}: fill must be a number or a sequence of numbers, got {fill!r}")


def _check_fill_channels(owner: str, fill: list[float] | None, channels: int) -> None:
    if fill is not None and len(fill) != 1 and len(fill) != channels:
        raise ValueError(
            f"{owner}: fill has {len(fill)} values but the image has {channels} channels"
        )


def compute_resized_output_size(
    height: int, width: int, size: list[int] | None, max_size: int | None = None
) -> list[int]:
    """The ``[h, w]`` that :func:`resize` produces (torchvision's rule: one int = smaller edge).

    Example:
        >>> compute_resized_output_size(300, 400, [150])
        [150, 200]
        >>> compute_resized_output_size(300, 400, [150], max_size=180)
        [135, 180]
    """
    if size is not None and len(size) == 2:
        return [size[0], size[1]]
    short, long = (width, height) if width <= height else (height, width)
    if size is None:
        if max_size is None:
            raise ValueError("resize: size=None needs max_size")
        new_long = max_size
        new_short = int(max_size * short / long)
    else:
        new_short = size[0]
        new_long = int(new_short * long / short)
        if max_size is not None:
            if max_size <= new_short:
                raise ValueError(
                    f"resize: max_size ({max_size}) must be larger than the requested size "
                    f"of the smaller edge ({new_short})"
                )
            if new_long > max_size:
                new_short = int(max_size * new_short / new_long)
                new_long = max_size
    new_short = max(new_short, 1)
    return [new_long, new_short] if width <= height else [new_short, new_long]


# Resize.


def _channels_last_batch(x: torch.Tensor) -> torch.Tensor:
    """``x`` ``[1, C, H, W]`` over ``[H, W, C]`` memory, with the batch stride torch expects.

    Adding the batch dim to a ``[C, H, W]`` view of ``[H, W, C]`` memory (what image
    decoders return) gives it stride ``C``; torch's uint8 antialiased resize then
    misses its channels-last kernel and runs ~1.6x slower. The batch stride of a
    size-1 dim never addresses memory, so setting it to ``H * W * C`` is free. A crop
    of such an image has its rows further apart than ``W * C``: torch's fast kernel
    needs packed rows, so a uint8 CPU crop is packed channels-last first (one copy of
    the crop costs less than the slow kernel's extra time).
    """
    n, c, h, w = x.shape
    if n == 1 and x.stride(1) == 1 and x.stride(3) == c:
        if x.stride(2) == w * c:
            return x.as_strided([n, c, h, w], [h * w * c, 1, w * c, c])
        if x.dtype == torch.uint8 and x.device.type == "cpu":
            return x.contiguous(memory_format=torch.channels_last)
    return x


def _resize_image(
    img: torch.Tensor, new_h: int, new_w: int, mode: str, antialias: bool
) -> torch.Tensor:
    """Resize ``[..., C, H, W]`` to (new_h, new_w); scriptable (``mode``: a mode value)."""
    shape = img.shape
    c, h, w = shape[-3], shape[-2], shape[-1]
    if new_h == h and new_w == w:
        return img
    out_shape = list(shape[:-2]) + [new_h, new_w]  # noqa: RUF005 (TorchScript)
    if img.numel() == 0:
        return img.new_empty(out_shape)
    if mode == "bilinear" or mode == "bicubic":
        align_corners: bool | None = False
    else:
        align_corners = None
        antialias = False
    dtype = img.dtype
    x = _channels_last_batch(img.reshape(-1, c, h, w))
    # torch resizes uint8 natively on CPU for these modes (faster than a float round trip);
    # elsewhere (CUDA bilinear/bicubic, uint16) compute in float32 and round back.
    native = dtype == torch.float32 or dtype == torch.float64
    if dtype == torch.uint8:
        native = mode == "nearest" or mode == "nearest-exact" or x.device.type == "cpu"
    if not native:
        x = x.to(torch.float32)
    x = interpolate(
        x, size=[new_h, new_w], mode=mode, align_corners=align_corners, antialias=antialias
    )
    if not native:
        if dtype == torch.uint8 or dtype == torch.uint16:
            x = x.round_().clamp_(0, _max_value(dtype))
        x = x.to(dtype)
    return x.reshape(out_shape)


def resize_image(
    img: torch.Tensor,
    size: int | Sequence[int] | None,
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    max_size: int | None = None,
    antialias: bool | None = True,
) -> torch.Tensor:
    """Resize to ``size`` (``[h, w]``, or one int for the smaller edge, as torchvision).

    ``antialias`` applies to bilinear and bicubic; an integer result is rounded and clamped.

    Example:
        >>> import torch
        >>> resize_image(torch.zeros(3, 30, 40, dtype=torch.uint8), 15).shape
        torch.Size([3, 15, 20])
    """
    check_image("resize", img)
    mode = interpolation_mode("resize", interpolation)
    if size is None:
        parsed = None
        if max_size is None:
            raise ValueError("resize: size=None needs max_size")
    elif _is_int(size):
        parsed = [size]
    elif isinstance(size, Sequence) and len(size) in (1, 2) and all(_is_int(s) for s in size):
        parsed = [int(s) for s in size]
    else:
        raise TypeError(f"resize: size must be an int or a sequence of 1 or 2 ints, got {size!r}")
    if parsed is not None and min(parsed) <= 0:
        raise ValueError(f"resize: size must be positive, got {size!r}")
    if max_size is not None:
        if parsed is not None and len(parsed) == 2:
            raise ValueError("resize: max_size is only supported for a single int size")
        if not _is_int(max_size) or max_size <= 0:
            raise ValueError(f"resize: max_size must be a positive int, got {max_size!r}")
    new_h, new_w = compute_resized_output_size(img.shape[-2], img.shape[-1], parsed, max_size)
    return _resize_image(img, new_h, new_w, mode.value, bool(antialias))


# Crops.


def _crop_image(img: torch.Tensor, top: int, left: int, height: int, width: int) -> torch.Tensor:
    """Crop (a view when inside the image, zero padding where the box leaves it); scriptable."""
    h, w = img.shape[-2], img.shape[-1]
    right = left + width
    bottom = top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        inside = img[..., max(top, 0) : max(bottom, 0), max(left, 0) : max(right, 0)]
        padding = [max(-left, 0), max(right - w, 0), max(-top, 0), max(bottom - h, 0)]
        if min(right, w) - max(left, 0) <= 0 or min(bottom, h) - max(top, 0) <= 0:
            return img.new_zeros(list(img.shape[:-2]) + [height, width])  # noqa: RUF005
        return torch_pad(inside, padding, value=0.0)
    return img[..., top:bottom, left:right]


def crop_image(img: torch.Tensor, top: int, left: int, height: int, width: int) -> torch.Tensor:
    """Crop the box (top, left, height, width); parts outside the image are zero.

    Inside the image the result is a view (no copy).

    Example:
        >>> import torch
        >>> crop_image(torch.arange(16.0).view(1, 4, 4), 1, 1, 2, 2)
        tensor([[[ 5.,  6.],
                 [ 9., 10.]]])
    """
    check_image("crop", img)
    if height <= 0 or width <= 0:
        raise ValueError(f"crop: height and width must be positive, got {height}x{width}")
    return _crop_image(img, int(top), int(left), int(height), int(width))


def _center_crop_image(img: torch.Tensor, crop_h: int, crop_w: int) -> torch.Tensor:
    """Center crop, zero-padding (as torchvision) when the crop is larger; scriptable."""
    h, w = img.shape[-2], img.shape[-1]
    if crop_h > h or crop_w > w:
        padding = [
            (crop_w - w) // 2 if crop_w > w else 0,
            (crop_w - w + 1) // 2 if crop_w > w else 0,
            (crop_h - h) // 2 if crop_h > h else 0,
            (crop_h - h + 1) // 2 if crop_h > h else 0,
        ]
        img = torch_pad(img, padding, value=0.0)
        h, w = img.shape[-2], img.shape[-1]
        if crop_h == h and crop_w == w:
            return img
    # int(): TorchScript's round returns a float.
    top = int(round((h - crop_h) / 2.0))  # noqa: RUF046
    left = int(round((w - crop_w) / 2.0))  # noqa: RUF046
    return img[..., top : top + crop_h, left : left + crop_w]


def center_crop_image(img: torch.Tensor, output_size: int | Sequence[int]) -> torch.Tensor:
    """The image kernel of :func:`center_crop`, which documents the arguments.

    Example:
        >>> center_crop_image(torch.arange(16.0).view(1, 4, 4), 2)
        tensor([[[ 5.,  6.],
                 [ 9., 10.]]])
    """
    check_image("center_crop", img)
    crop_h, crop_w = parse_size("center_crop", output_size, "output_size")
    return _center_crop_image(img, crop_h, crop_w)


def resized_crop_image(
    img: torch.Tensor,
    top: int,
    left: int,
    height: int,
    width: int,
    size: int | Sequence[int],
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    antialias: bool | None = True,
) -> torch.Tensor:
    """The image kernel of :func:`resized_crop`, which documents the arguments.

    Example:
        >>> resized_crop_image(torch.zeros(3, 50, 60), 5, 5, 20, 30, [8, 8]).shape
        torch.Size([3, 8, 8])
    """
    return resize_image(
        crop_image(img, top, left, height, width), size, interpolation, antialias=antialias
    )


def five_crop_image(
    img: torch.Tensor, size: int | Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The image kernel of :func:`five_crop`, which documents the arguments.

    Example:
        >>> [tuple(c.shape) for c in five_crop_image(torch.zeros(1, 5, 5), 2)][0]
        (1, 2, 2)
    """
    check_image("five_crop", img)
    crop_h, crop_w = parse_size("five_crop", size)
    h, w = img.shape[-2], img.shape[-1]
    if crop_h > h or crop_w > w:
        raise ValueError(
            f"five_crop: crop size {[crop_h, crop_w]} is larger than the image {[h, w]}"
        )
    return (
        img[..., :crop_h, :crop_w],
        img[..., :crop_h, w - crop_w :],
        img[..., h - crop_h :, :crop_w],
        img[..., h - crop_h :, w - crop_w :],
        _center_crop_image(img, crop_h, crop_w),
    )


def ten_crop_image(
    img: torch.Tensor, size: int | Sequence[int], vertical_flip: bool = False
) -> tuple[torch.Tensor, ...]:
    """The image kernel of :func:`ten_crop`, which documents the arguments.

    Example:
        >>> len(ten_crop_image(torch.zeros(3, 8, 8), 4))
        10
    """
    flipped = _flip(img, -2 if vertical_flip else -1)
    return five_crop_image(img, size) + five_crop_image(flipped, size)


# Padding.


def _pad_indices(n: int, before: int, after: int, mode: str, device: torch.device) -> torch.Tensor:
    """Source index of each padded position along an axis of ``n`` (edge/reflect/symmetric)."""
    idx = torch.arange(-before, n + after, device=device)
    if mode == "edge":
        return idx.clamp(0, n - 1)
    if mode == "reflect":
        if n == 1:
            return torch.zeros_like(idx)
        period = 2 * (n - 1)
        idx = torch.remainder(idx, period)
        return torch.where(idx >= n, period - idx, idx)
    period = 2 * n  # symmetric: the edge pixel is repeated
    idx = torch.remainder(idx, period)
    return torch.where(idx >= n, period - 1 - idx, idx)


def _pad_image(
    img: torch.Tensor, padding: list[int], fill: list[float] | None, padding_mode: str
) -> torch.Tensor:
    """Pad by ``padding`` = [left, right, top, bottom] (negative crops); scriptable."""
    left, right, top, bottom = padding[0], padding[1], padding[2], padding[3]
    if padding_mode == "constant":
        if fill is None or len(fill) == 1:
            value = 0.0 if fill is None else fill[0]
            return torch_pad(img, padding, value=value)
        out = torch_pad(img, padding, value=0.0)
        color = torch.tensor(fill, dtype=img.dtype, device=img.device).view(-1, 1, 1)
        h, w = out.shape[-2], out.shape[-1]
        rows = torch.arange(h, device=img.device).view(-1, 1)
        cols = torch.arange(w, device=img.device).view(1, -1)
        border = (rows < top) | (rows >= h - bottom) | (cols < left) | (cols >= w - right)
        return image_where(border, color, out)
    # Index gathers: exact on every dtype and device, and any padding size.
    h, w = img.shape[-2], img.shape[-1]
    rows = _pad_indices(h, top, bottom, padding_mode, img.device)
    cols = _pad_indices(w, left, right, padding_mode, img.device)
    return img.index_select(-2, rows).index_select(-1, cols)


def pad_image(
    img: torch.Tensor,
    padding: int | Sequence[int],
    fill: float | Sequence[float] | None = None,
    padding_mode: str = "constant",
) -> torch.Tensor:
    """Pad the borders (``padding``: int, [left/right, top/bottom] or [left, top, right, bottom]).

    ``padding_mode``: ``"constant"`` (with ``fill``, a number or one per channel),
    ``"edge"``, ``"reflect"`` (mirror without the edge pixel) or ``"symmetric"``
    (mirror with it). Negative padding crops.

    Example:
        >>> import torch
        >>> pad_image(torch.tensor([[[1.0, 2.0, 3.0]]]), [2, 0], padding_mode="reflect")
        tensor([[[3., 2., 1., 2., 3., 2., 1.]]])
    """
    check_image("pad", img)
    torch_padding = parse_padding("pad", padding)
    if padding_mode not in _PAD_MODES:
        raise ValueError(f"pad: padding_mode must be one of {_PAD_MODES}, got {padding_mode!r}")
    fill_values = parse_fill("pad", fill)
    _check_fill_channels("pad", fill_values, img.shape[-3])
    h, w = img.shape[-2], img.shape[-1]
    if h + torch_padding[2] + torch_padding[3] <= 0 or w + torch_padding[0] + torch_padding[1] <= 0:
        raise ValueError(f"pad: padding {list(padding)!r} leaves nothing of a {h}x{w} image")
    if padding_mode != "constant" and (h == 0 or w == 0):
        raise ValueError(f"pad: cannot pad an empty image with padding_mode={padding_mode!r}")
    return _pad_image(img, torch_padding, fill_values, padding_mode)


# Flips.


def horizontal_flip_image(img: torch.Tensor) -> torch.Tensor:
    """Mirror left-right.

    Example:
        >>> import torch
        >>> horizontal_flip_image(torch.tensor([[[1, 2, 3]]], dtype=torch.uint8))
        tensor([[[3, 2, 1]]], dtype=torch.uint8)
    """
    check_image("horizontal_flip", img)
    return _flip(img, -1)


def vertical_flip_image(img: torch.Tensor) -> torch.Tensor:
    """Mirror top-bottom.

    Example:
        >>> import torch
        >>> vertical_flip_image(torch.tensor([[[1.0], [2.0]]]))
        tensor([[[2.],
                 [1.]]])
    """
    check_image("vertical_flip", img)
    return _flip(img, -2)


def _flip(img: torch.Tensor, dim: int) -> torch.Tensor:
    """``img.flip(dim)`` for every image dtype (uint16 flips as its int16 bits); no checks.

    Example:
        >>> import torch
        >>> _flip(torch.tensor([[[1, 65535]]], dtype=torch.uint16), -1)
        tensor([[[65535,     1]]], dtype=torch.uint16)
    """
    if img.dtype != torch.uint16:
        return img.flip(dim)
    return bits_view(img).flip(dim).view(img.dtype)


# Batched crops: one box per image of the flattened batch, one kernel call.


def crop_batched(
    img: torch.Tensor, top: torch.Tensor, left: torch.Tensor, height: int, width: int
) -> torch.Tensor:
    """*Batched* crop: image ``n`` of the flattened batch is cropped at (top[n], left[n]).

    All boxes have the same ``height`` x ``width`` and must lie inside the image.
    Gathers rows then columns, so it runs on every dtype and under ``torch.compile``;
    one image on the CPU is sliced instead (a view, as :func:`crop` returns).

    Example:
        >>> import torch
        >>> img = torch.arange(32).view(2, 1, 4, 4)
        >>> crop_batched(img, torch.tensor([0, 2]), torch.tensor([0, 1]), 2, 2)[:, 0]
        tensor([[[ 0,  1],
                 [ 4,  5]],
        <BLANKLINE>
                [[25, 26],
                 [29, 30]]])
    """
    shape = img.shape
    c, h, w = shape[-3], shape[-2], shape[-1]
    x = img.reshape(-1, c, h, w)
    n = x.shape[0]
    if n == 1 and eager_cpu(img):
        y, x0 = int(top.reshape(-1)[0]), int(left.reshape(-1)[0])
        return img[..., y : y + height, x0 : x0 + width]
    top = top.to(device=img.device, dtype=torch.long).reshape(-1).expand(n)
    left = left.to(device=img.device, dtype=torch.long).reshape(-1).expand(n)
    rows = top.view(n, 1, 1, 1) + torch.arange(height, device=img.device).view(1, 1, height, 1)
    x = bits_view(x).gather(2, rows.expand(n, c, height, w))
    cols = left.view(n, 1, 1, 1) + torch.arange(width, device=img.device).view(1, 1, 1, width)
    x = x.gather(3, cols.expand(n, c, height, width))
    return x.view(img.dtype).reshape((*shape[:-2], height, width))


def _box_grid(
    top: torch.Tensor,
    left: torch.Tensor,
    height: torch.Tensor,
    width: torch.Tensor,
    in_h: int,
    in_w: int,
    out_h: int,
    out_w: int,
) -> torch.Tensor:
    """``grid_sample`` grid [N, out_h, out_w, 2] that samples each box like ``interpolate``."""
    dtype = torch.float32
    top, left = top.to(dtype).view(-1, 1), left.to(dtype).view(-1, 1)
    height, width = height.to(dtype).view(-1, 1), width.to(dtype).view(-1, 1)
    ys = torch.arange(out_h, device=top.device, dtype=dtype).view(1, -1) + 0.5
    xs = torch.arange(out_w, device=top.device, dtype=dtype).view(1, -1) + 0.5
    # Source pixel (in the full image, pixel centres at k + 0.5) of each output pixel centre.
    src_y = top + ys * (height / out_h)
    src_x = left + xs * (width / out_w)
    grid = torch.empty((top.shape[0], 2, out_h, out_w), dtype=dtype, device=top.device)
    grid[:, 0] = (src_x * (2.0 / in_w) - 1.0).unsqueeze(1)
    grid[:, 1] = (src_y * (2.0 / in_h) - 1.0).unsqueeze(2)
    # x and y planes (broadcast copies along whole rows), seen as [N, oh, ow, 2]:
    # grid_sample reads either layout as fast, and interleaving costs ~6x more to write.
    return grid.permute(0, 2, 3, 1)


def _pyramid_levels(
    height: torch.Tensor, width: torch.Tensor, out_h: int, out_w: int
) -> torch.Tensor:
    """Per box, the k of the 2**k area reduction that leaves less than 2x for the bilinear step."""
    # floor(log2(shrink)) capped at 6, by integer comparisons (exact, whatever the batch):
    # shrink >= 2**k exactly when both integer quotients are.
    quotient = torch.minimum(height.long() // out_h, width.long() // out_w)
    powers = torch.tensor([2, 4, 8, 16, 32, 64], device=quotient.device)
    return torch.bucketize(quotient, powers, right=True)


def _sample_boxes(
    x: torch.Tensor,
    boxes: tuple[torch.Tensor, ...],
    out_h: int,
    out_w: int,
    mode: str,
) -> torch.Tensor:
    """One ``grid_sample`` of the boxes (in pixels of ``x``) to (out_h, out_w)."""
    grid = _box_grid(*boxes, x.shape[-2], x.shape[-1], out_h, out_w).to(x.dtype)
    return grid_sample(x, grid, mode=mode, padding_mode="border", align_corners=False)


def _box_batch(
    owner: str,
    img: torch.Tensor,
    boxes: tuple[torch.Tensor, ...],
    size: Sequence[int],
    interpolation: InterpolationMode | str,
) -> tuple[torch.Tensor, tuple[torch.Tensor, ...], str, tuple[int, int]]:
    """What the batched resized crops start from: ``img`` as [N, C, H, W], one box per image.

    Returns the batch, ``boxes`` (top, left, height, width) as N values each on the
    batch's device, the interpolation mode's name and the output (height, width);
    bad arguments raise naming ``owner``.
    """
    mode = interpolation_mode(owner, interpolation).value
    out_h, out_w = parse_size(owner, list(size))
    x = img.reshape(-1, *img.shape[-3:])
    n = x.shape[0]
    batch_boxes = tuple(b.to(device=img.device).reshape(-1).expand(n) for b in boxes)
    return x, batch_boxes, mode, (out_h, out_w)


def _resized_crops_each(
    img: torch.Tensor,
    top: torch.Tensor,
    left: torch.Tensor,
    height: torch.Tensor,
    width: torch.Tensor,
    size: Sequence[int],
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    antialias: bool = True,
) -> torch.Tensor:
    """Box ``n`` of the flattened batch to one output ``size``, image by image (the CPU way).

    Each image is cropped to its box and resized exactly as :func:`resized_crop`
    does, into one output, so the result equals :func:`resized_crop` applied to
    every image. Antialiased bilinear and bicubic uint8 batches go through the
    native kernel (``trivium.vision._C.resized_crops_u8``: torch's arithmetic, bit
    for bit, on the planes where they lie, GIL released, images shared out to
    ``torch.get_num_threads()`` threads); other batches through torch's kernel image
    by image. On a CPU this is faster than :func:`resized_crop_batched`, whose one
    ``grid_sample`` call suits CUDA.

    Example:
        >>> import torch
        >>> img = torch.randint(0, 256, (2, 3, 32, 32), dtype=torch.uint8)
        >>> t, l, h, w = (torch.tensor(v) for v in ([0, 4], [2, 0], [16, 20], [24, 18]))
        >>> out = _resized_crops_each(img, t, l, h, w, [8, 8])
        >>> torch.equal(out[1], resized_crop_image(img[1], 4, 0, 20, 18, [8, 8]))
        True
    """
    x, boxes, mode, (out_h, out_w) = _box_batch(
        "_resized_crops_each", img, (top, left, height, width), size, interpolation
    )
    shape = img.shape
    n, c, h, w = x.shape
    native = _native_resized_crops(x, mode, antialias)
    if native is not None:
        out = x.new_empty((n, c, out_h, out_w))
        table = torch.stack(boxes, 1).to(torch.int64)
        native(x.numpy(), table.numpy(), out.numpy(), mode, torch.get_num_threads())
        return out.reshape((*shape[:-2], out_h, out_w))
    out = x.new_empty((n, c, out_h, out_w))
    # The antialiased kernel interpolate calls, called with out=: no copy of each result.
    kernel = _AA_KERNELS.get(mode) if antialias and x.dtype in _AA_NATIVE_DTYPES else None
    for k, (t, l, bh, bw) in enumerate(zip(*(b.tolist() for b in boxes), strict=True)):
        if min(t, l) < 0 or min(bh, bw) <= 0 or t + bh > h or l + bw > w:
            raise ValueError(
                f"resized crop: box {k} (top={t}, left={l}, height={bh}, width={bw}) "
                f"is not inside the {h}x{w} image"
            )
        crop = x[k : k + 1, :, t : t + bh, l : l + bw]
        if kernel is None or (bh, bw) == (out_h, out_w):
            out[k : k + 1] = _resize_image(crop, out_h, out_w, mode, antialias)
        else:
            slot = out[k : k + 1]
            kernel(_channels_last_batch(crop), [out_h, out_w], False, None, None, out=slot)
    return out.reshape((*shape[:-2], out_h, out_w))


def _native_resized_crops(x: torch.Tensor, mode: str, antialias: bool) -> Any:
    """The native crop + resize kernel when it computes this batch exactly as torch, else None.

    That is antialiased bilinear or bicubic on uint8 CPU tensors whose rows are
    contiguous (torch's kernel is as fast on channels-last images, which it need not
    repack), outside ``torch.compile`` (which cannot trace a NumPy call), with the
    extension built.
    """
    if (
        x.dtype != torch.uint8
        or not antialias
        or mode not in ("bilinear", "bicubic")
        or (x.stride(-1) != 1 and x.shape[-1] > 1)
        or not eager_cpu(x)
    ):
        return None
    try:
        from trivium.vision import _C
    except ImportError:
        return None
    return getattr(_C, "resized_crops_u8", None)


# torch's antialiased CPU kernels, and the dtypes it runs them on natively (see _resize_image).
_AA_KERNELS = {
    "bilinear": torch._C._nn._upsample_bilinear2d_aa,
    "bicubic": torch._C._nn._upsample_bicubic2d_aa,
}
_AA_NATIVE_DTYPES = (torch.uint8, torch.float32, torch.float64)


def resized_crop_batched(
    img: torch.Tensor,
    top: torch.Tensor,
    left: torch.Tensor,
    height: torch.Tensor,
    width: torch.Tensor,
    size: Sequence[int],
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    antialias: bool = True,
) -> torch.Tensor:
    """*Batched* :func:`resized_crop`: box ``n`` of the flattened batch to one output ``size``.

    One ``grid_sample`` call samples every box at the same points as
    ``interpolate(align_corners=False)`` (bilinear, bicubic or nearest). Pixels next
    to a box edge may blend in the pixel just outside it (``interpolate`` on the
    crop repeats the edge). With ``antialias``, a box at least 2**k times the output
    size (k >= 1) is sampled from its image area-averaged by 2**k (a mip-map level),
    so the bilinear step never reduces by 2x or more; that keeps the result within
    about 30 dB PSNR of the exact antialiased resize. Under ``torch.compile`` the
    pre-reduction is skipped (plain bilinear sampling).

    Example:
        >>> import torch
        >>> img = torch.rand(4, 3, 32, 32)
        >>> t, l = torch.tensor([0, 4, 8, 0]), torch.tensor([0, 2, 4, 6])
        >>> h = w = torch.tensor([16, 20, 24, 26])
        >>> resized_crop_batched(img, t, l, h, w, [8, 8]).shape
        torch.Size([4, 3, 8, 8])
    """
    x, boxes, mode, (out_h, out_w) = _box_batch(
        "resized_crop_batched", img, (top, left, height, width), size, interpolation
    )
    if mode == "nearest-exact":
        mode = "nearest"
    shape = img.shape
    n, c = x.shape[0], x.shape[1]
    dtype = x.dtype
    if not x.is_floating_point():
        x = x.to(torch.float32)
    height, width = boxes[2], boxes[3]
    levels = None
    if antialias and mode != "nearest" and not is_tracing():
        levels = _pyramid_levels(height, width, out_h, out_w)
    if levels is None or not bool(levels.any()):
        out = _sample_boxes(x, boxes, out_h, out_w, mode)
    else:
        # Boxes that shrink 2**k times (k >= 1) are sampled from the batch area-reduced by
        # 2**k: one pass per level present (at most 7), never one per image.
        out = x.new_empty((n, c, out_h, out_w))
        for k in levels.unique().tolist():
            index = (levels == k).nonzero().squeeze(1)
            factor = 2**k
            part = x.index_select(0, index)
            if factor > 1:
                part = torch.nn.functional.avg_pool2d(part, factor, ceil_mode=True)
            scaled = tuple(b.index_select(0, index) / factor for b in boxes)
            out.index_copy_(0, index, _sample_boxes(part, scaled, out_h, out_w, mode))
    if out.dtype != dtype:
        if mode == "bicubic":  # the only mode that can overshoot the input's range
            out = out.clamp_(0, _max_value(dtype))
        out = out.round_().to(dtype)
    return out.reshape((*shape[:-2], out_h, out_w))


# Bounding boxes: the geometry of the image kernels applied to boxes (torchvision v2's
# box kernels: plain boxes with their format and canvas size in, moved boxes out).

Format = BoundingBoxFormat | str
_XYXY, _XYWH, _CXCYWH = BoundingBoxFormat.XYXY, BoundingBoxFormat.XYWH, BoundingBoxFormat.CXCYWH
_XYWHR, _CXCYWHR, _XYXYXYXY = (
    BoundingBoxFormat.XYWHR,
    BoundingBoxFormat.CXCYWHR,
    BoundingBoxFormat.XYXYXYXY,
)
_CLAMPING_MODES = ("soft", "hard", None)


def _is_plain(inpt: Any) -> bool:
    return isinstance(inpt, torch.Tensor) and not isinstance(inpt, tv_tensors.TVTensor)


def _check_boxes(owner: str, boxes: Any, format: BoundingBoxFormat = _XYXY) -> None:
    if not isinstance(boxes, torch.Tensor):
        raise TypeError(f"{owner}: expected boxes as a tensor, got {type(boxes).__name__}")
    size = _box_size(format)
    if boxes.ndim == 0 or boxes.shape[-1] != size:
        raise ValueError(
            f"{owner}: expected {format.value} boxes [..., {size}], got shape {tuple(boxes.shape)}"
        )
    if is_rotated_bounding_format(format) and not boxes.is_floating_point():
        raise TypeError(f"{owner}: rotated boxes must be floating point, got {boxes.dtype}")


# Format conversion (torchvision's integer rounding: floor halves, truncating casts).


def _xywh_to_xyxy(boxes: torch.Tensor) -> torch.Tensor:
    boxes[..., 2:] += boxes[..., :2]
    return boxes


def _xyxy_to_xywh(boxes: torch.Tensor) -> torch.Tensor:
    boxes[..., 2:] -= boxes[..., :2]
    return boxes


def _half(t: torch.Tensor) -> torch.Tensor:
    return t.div(2, rounding_mode=None if t.is_floating_point() else "floor")


def _xywh_to_cxcywh(boxes: torch.Tensor) -> torch.Tensor:
    boxes[..., :2] += _half(boxes[..., 2:])
    return boxes


def _xyxy_to_cxcywh(boxes: torch.Tensor) -> torch.Tensor:
    boxes[..., 2:] -= boxes[..., :2]
    boxes[..., :2] = _half(boxes[..., :2] * 2 + boxes[..., 2:])
    return boxes


def _cxcywh_to_xyxy(boxes: torch.Tensor) -> torch.Tensor:
    # Integer boxes are computed in float and truncated, as torchvision.
    out = boxes.float() if not boxes.is_floating_point() else boxes
    out[..., :2] -= out[..., 2:] / 2
    out[..., 2:] += out[..., :2]
    return out.to(boxes.dtype)


def _cxcywh_to_xywh(boxes: torch.Tensor) -> torch.Tensor:
    if boxes.is_floating_point():
        boxes[..., :2] -= boxes[..., 2:] / 2
        return boxes
    # Integer: the two-step CXCYWH -> XYXY -> XYWH, so truncation keeps x2 and y2.
    return _xyxy_to_xywh(_cxcywh_to_xyxy(boxes))


# Rotated formats: r in degrees, counter-clockwise; XYWHR is the hub between them.


def _half_sides(boxes: torch.Tensor) -> torch.Tensor:
    return (
        boxes[..., 2:4].div(-2, rounding_mode=None if boxes.is_floating_point() else "floor").abs_()
    )


def _cos_sin(boxes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    radians = boxes[..., 4].mul(torch.pi).div(180.0)
    return radians.cos(), radians.sin()


def _cxcywhr_to_xywhr(boxes: torch.Tensor) -> torch.Tensor:
    half, (cos, sin) = _half_sides(boxes), _cos_sin(boxes)
    boxes[..., 0].sub_(half[..., 0].mul(cos)).sub_(half[..., 1].mul(sin))
    boxes[..., 1].add_(half[..., 0].mul(sin)).sub_(half[..., 1].mul(cos))
    return boxes


def _xywhr_to_cxcywhr(boxes: torch.Tensor) -> torch.Tensor:
    half, (cos, sin) = _half_sides(boxes), _cos_sin(boxes)
    boxes[..., 0].add_(half[..., 0].mul(cos)).add_(half[..., 1].mul(sin))
    boxes[..., 1].sub_(half[..., 0].mul(sin)).add_(half[..., 1].mul(cos))
    return boxes


def _xywhr_to_xyxyxyxy(boxes: torch.Tensor) -> torch.Tensor:
    # The first corner, then along the width (angle r) and the height (r - 90 degrees).
    w, h = boxes[..., 2], boxes[..., 3]
    cos, sin = _cos_sin(boxes)
    out = boxes[..., :2].tile(4)
    out[..., 2].add_(w.mul(cos))
    out[..., 3].sub_(w.mul(sin))
    out[..., 4].add_(w.mul(cos).add(h.mul(sin)))
    out[..., 5].sub_(w.mul(sin).sub(h.mul(cos)))
    out[..., 6].add_(h.mul(sin))
    out[..., 7].add_(h.mul(cos))
    return out


def _xyxyxyxy_to_xywhr(boxes: torch.Tensor) -> torch.Tensor:
    dtype = boxes.dtype
    # Squares overflow half precision: computed in float32, as torchvision.
    work = boxes if dtype in (torch.float32, torch.float64) else boxes.to(torch.float32)
    x1, y1, x2, y2, x3, y3 = work[..., :6].unbind(-1)
    angle = torch.atan2(y1 - y2, x2 - x1).div(torch.pi).mul(180.0)
    width = (x2 - x1).pow(2).add((y2 - y1).pow(2)).sqrt()
    height = (x3 - x2).pow(2).add((y3 - y2).pow(2)).sqrt()
    return torch.stack((x1, y1, width, height, angle), dim=-1).to(dtype)


def _convert_rotated(
    boxes: torch.Tensor, old: BoundingBoxFormat, new: BoundingBoxFormat
) -> torch.Tensor:
    if old == _CXCYWHR:
        boxes = _cxcywhr_to_xywhr(boxes)
    elif old == _XYXYXYXY:
        boxes = _xyxyxyxy_to_xywhr(boxes)
    if new == _CXCYWHR:
        return _xywhr_to_cxcywhr(boxes)
    if new == _XYXYXYXY:
        return _xywhr_to_xyxyxyxy(boxes)
    return boxes


def _convert(boxes: torch.Tensor, old: BoundingBoxFormat, new: BoundingBoxFormat) -> torch.Tensor:
    """``boxes`` (a copy the caller owns) from ``old`` to ``new`` format."""
    if old == new:
        return boxes
    if is_rotated_bounding_format(old) != is_rotated_bounding_format(new):
        raise ValueError(
            f"cannot convert boxes between {old.value} and {new.value}: "
            "rotated and axis-aligned formats do not convert into each other"
        )
    if is_rotated_bounding_format(old):
        return _convert_rotated(boxes, old, new)
    if (old, new) == (_XYWH, _CXCYWH):
        return _xywh_to_cxcywh(boxes)
    if (old, new) == (_CXCYWH, _XYWH):
        return _cxcywh_to_xywh(boxes)
    if old == _XYWH:
        boxes = _xywh_to_xyxy(boxes)
    elif old == _CXCYWH:
        boxes = _cxcywh_to_xyxy(boxes)
    if new == _XYWH:
        return _xyxy_to_xywh(boxes)
    if new == _CXCYWH:
        return _xyxy_to_cxcywh(boxes)
    return boxes


def convert_bounding_box_format(
    inpt: torch.Tensor,
    old_format: Format | None = None,
    new_format: Format | None = None,
    inplace: bool = False,
) -> torch.Tensor:
    """Boxes in ``new_format``; ``old_format`` for a plain tensor, from the boxes' own otherwise.

    Example:
        >>> import torch
        >>> convert_bounding_box_format(torch.tensor([[1, 2, 4, 6]]), "XYWH", "XYXY").tolist()
        [[1, 2, 5, 8]]
        >>> boxes = tv_tensors.BoundingBoxes([0, 0, 4, 2], format="XYXY", canvas_size=(8, 8))
        >>> out = convert_bounding_box_format(boxes, new_format="CXCYWH")
        >>> out.tolist(), out.format.value
        ([[2, 1, 4, 2]], 'CXCYWH')
    """
    name = "convert_bounding_box_format"
    if new_format is None:
        raise TypeError(f"{name}() missing 1 required argument: 'new_format'")
    new = _as_format(new_format)
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        if old_format is not None:
            raise ValueError(f"{name}: old_format must not be given for BoundingBoxes inputs")
        plain = inpt.as_subclass(torch.Tensor)
        out = _convert(plain if inplace else plain.clone(), inpt.format, new)
        return tv_tensors.wrap(out, like=inpt, format=new)
    if not _is_plain(inpt):
        raise TypeError(f"{name}: expected a plain tensor or BoundingBoxes, got {type(inpt)}")
    if old_format is None:
        raise ValueError(f"{name}: old_format is needed for a plain tensor")
    old = _as_format(old_format)
    _check_boxes(name, inpt, old)
    return _convert(inpt if inplace else inpt.clone(), old, new)


def _clamp(
    boxes: torch.Tensor,
    format: BoundingBoxFormat,
    canvas_size: tuple[int, int],
    clamping_mode: str | None,
) -> torch.Tensor:
    # "soft" and "hard" are the same for axis-aligned boxes; None leaves them as they are.
    if clamping_mode is None:
        return boxes.clone()
    if is_rotated_bounding_format(format):
        return _clamp_rotated(boxes, format, canvas_size, clamping_mode)
    dtype = boxes.dtype
    xyxy = _convert(boxes.clone() if boxes.is_floating_point() else boxes.float(), format, _XYXY)
    xyxy[..., 0::2].clamp_(min=0, max=canvas_size[1])
    xyxy[..., 1::2].clamp_(min=0, max=canvas_size[0])
    return _convert(xyxy, _XYXY, format).to(dtype)


# Clamping rotated boxes (torchvision's rule): in XYXYXYXY, four times: order the corners
# from the leftmost, pull the edges that cross x = 0 back along their own lines
# (keeping the angle), then turn the canvas a quarter turn so the next side is x = 0.


def _ordered(boxes: torch.Tensor, order: torch.Tensor | None = None) -> tuple[Any, Any]:
    """``(order, boxes)``: corners rolled to start at the leftmost (then topmost) one."""
    if order is None:
        x, y = boxes[:, 0::2], boxes[:, 1::2]
        x_max = x.abs().amax(dim=1, keepdim=True)
        y_max = y.abs().amax(dim=1, keepdim=True)
        first = (y / y_max + (x / x_max) * 100).argmin(dim=1)
        order = torch.ones_like(boxes)
        order[:, 0] = first * 2
        order = order.cumsum(1).remainder(8)
    return order, boxes.gather(1, order.to(torch.int64))


def _lines(boxes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Slope a and intercept b (y = a x + b) of the 4 edges, corner i to corner i + 1."""
    x, y = boxes[..., 0::2], boxes[..., 1::2]
    slope = y.diff(append=y[..., :1]) / x.diff(append=x[..., :1])
    return slope, y - slope * x


def _crossings(slope: torch.Tensor, intercept: torch.Tensor) -> torch.Tensor:
    """Corner i as the crossing of edges i - 1 and i: [N, 8]."""
    x = intercept.diff(prepend=intercept[..., 3:]).neg() / slope.diff(prepend=slope[..., 3:])
    y = slope * x + intercept
    return torch.stack((x, y), dim=-1).reshape(slope.shape[0], 8)


def _clamped_intercepts(
    boxes: torch.Tensor, original: torch.Tensor, canvas_size: tuple[int, int], mode: str
) -> torch.Tensor:
    slope, intercept = _lines(boxes)
    a1, a2, a3, a4 = slope.unbind(-1)
    b1, b2, b3, b4 = intercept.unbind(-1)
    m1, m2, m3, m4 = _lines(original)[1].unbind(-1)
    height, width = canvas_size
    b1 = b2.clamp(b1, b3).clamp(0, height)
    b4 = b3.clamp(b2, b4).clamp(0, height)
    if mode == "hard":  # the largest box of the same angle inside the canvas
        b1 = b4 = (b1 + b4) / 2
        b2 = (
            torch.stack(
                (b1 * a2 / a1, b3 * a2 / a3, (a1 - a2) * width + b1, (a3 - a2) * width + b3), dim=1
            )
            .amax(dim=1)
            .clamp(max=b2)
        )
        b3 = (
            torch.stack(
                (
                    height * (1 - a3 / a4) + b4 * a3 / a4,
                    height * (1 - a3 / a2) + b2 * a3 / a2,
                    (a2 - a3) * width + b2,
                    (a4 - a3) * width + b4,
                ),
                dim=1,
            )
            .amin(dim=1)
            .clamp(min=b3)
        )
        # Edges 1 and 4 share one intercept here, and both bounds apply to it.
        b1 = b4 = b1.clamp(m1, m3).clamp(m2, m4)
    else:
        b1, b4 = b1.clamp(m1, m3), b4.clamp(m2, m4)
    return torch.stack((b1, b2.clamp(m2, m4), b3.clamp(m1, m3), b4), dim=-1)


def _clamp_left(
    boxes: torch.Tensor, original: torch.Tensor, canvas_size: tuple[int, int], mode: str
) -> torch.Tensor:
    """Boxes (corners from the leftmost) pulled right of x = 0."""
    x1, y1, x2, y2, x3, y3, x4, y4 = boxes.unbind(-1)
    crossed = _crossings(_lines(boxes)[0], _clamped_intercepts(boxes, original, canvas_size, mode))
    level = y1.isclose(y2) | y3.isclose(y4)
    shifted = boxes.clone()
    shifted[:, 0].clamp_(min=0)
    shifted[:, 6].clamp_(min=0)
    gone = ((x1 <= 0) & (x2 <= 0) & (x3 <= 0) & (x4 <= 0)) | y1.isclose(y4) | y2.isclose(y3)
    gone = gone | (level & x1.isclose(x2))
    out = torch.where(((x1 < 0) & ~crossed.isnan().any(-1)).unsqueeze(1), crossed, boxes)
    out = torch.where(level.unsqueeze(1), shifted, out)
    return torch.where(gone.unsqueeze(1), torch.zeros_like(out), out)


def _quarter_turn(boxes: torch.Tensor, width: int) -> torch.Tensor:
    """Corners turned a quarter counter-clockwise on a canvas ``width`` wide: (y, width - x)."""
    return torch.stack((boxes[:, 1::2], width - boxes[:, 0::2]), dim=-1).reshape(-1, 8)


def _clamp_rotated(
    boxes: torch.Tensor, format: BoundingBoxFormat, canvas_size: tuple[int, int], mode: str
) -> torch.Tensor:
    shape = boxes.shape
    out = _convert(boxes.clone(), format, _XYXYXYXY).reshape(-1, 8)
    original = out.clone()
    for _ in range(4):
        order, out = _ordered(out)
        original = _ordered(original, order)[1]
        out = _ordered(_clamp_left(out, original, canvas_size, mode), order)[1]
        original = _ordered(original, order)[1]
        out, original = _quarter_turn(out, canvas_size[1]), _quarter_turn(original, canvas_size[1])
        canvas_size = (canvas_size[1], canvas_size[0])
    return _convert(out, _XYXYXYXY, format).reshape(shape)


def _parallelogram_to_rectangle(corners: torch.Tensor) -> torch.Tensor:
    """XYXYXYXY parallelograms as rectangles keeping the longer diagonal (torchvision's rule).

    An affine map turns a rotated box into a parallelogram; the rectangle has its centre,
    the direction of its longer side, and that side's length plus the other's projection.
    """
    dtype = corners.dtype
    work = corners if dtype in (torch.float32, torch.float64) else corners.to(torch.float32)
    x1, y1, x2, y2, x3, y3, x4, y4 = work.unbind(-1)
    cx, cy = (x1 + x3) / 2, (y1 + y3) / 2
    side_w = ((x2 - x1).pow(2) + (y2 - y1).pow(2)).sqrt()
    side_h = ((x4 - x1).pow(2) + (y4 - y1).pow(2)).sqrt()
    angle_w, angle_h = torch.atan2(y1 - y2, x2 - x1), torch.atan2(y1 - y4, x4 - x1)
    between = angle_w - angle_h
    sign = torch.where(between > torch.pi / 2, -1, 1)
    cos, sin = between.cos(), between.sin()
    w = torch.where(side_w < side_h, side_w * sin, side_w + side_h * cos * sign)
    h = torch.where(side_w > side_h, side_h * sin, side_h + side_w * cos * sign)
    angle = torch.where(side_h > side_w, angle_h + torch.pi / 2, angle_w)
    cos, sin = angle.cos(), angle.sin()
    out = torch.stack(
        (
            cx - w / 2 * cos - h / 2 * sin,
            cy - h / 2 * cos + w / 2 * sin,
            cx + w / 2 * cos - h / 2 * sin,
            cy - h / 2 * cos - w / 2 * sin,
            cx + w / 2 * cos + h / 2 * sin,
            cy + h / 2 * cos - w / 2 * sin,
            cx - w / 2 * cos + h / 2 * sin,
            cy + h / 2 * cos + w / 2 * sin,
        ),
        dim=-1,
    )
    return out.to(dtype)


def clamp_bounding_boxes(
    inpt: torch.Tensor,
    format: Format | None = None,
    canvas_size: tuple[int, int] | None = None,
    clamping_mode: str | None = "auto",
) -> torch.Tensor:
    """Clamp boxes to their canvas (``format``/``canvas_size`` only for a plain tensor).

    ``clamping_mode``: "soft" or "hard" clamp, None leaves the boxes unchanged,
    "auto" (BoundingBoxes only) takes the boxes' own mode. A rotated box keeps its
    angle: "soft" gives the smallest such box holding its part inside the canvas,
    "hard" the largest one inside both (torchvision's rule).

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[-5.0, 2.0, 12.0, 9.0]])
        >>> clamp_bounding_boxes(boxes, "XYXY", (8, 10), "soft").tolist()
        [[0.0, 2.0, 10.0, 8.0]]
    """
    name = "clamp_bounding_boxes"
    if clamping_mode not in (*_CLAMPING_MODES, "auto"):
        raise ValueError(
            f"{name}: clamping_mode must be soft, hard, auto or None, got {clamping_mode!r}"
        )
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        if format is not None or canvas_size is not None:
            raise ValueError(f"{name}: format and canvas_size must not be given for BoundingBoxes")
        mode = inpt.clamping_mode if clamping_mode == "auto" else clamping_mode
        out = _clamp(inpt.as_subclass(torch.Tensor), inpt.format, inpt.canvas_size, mode)
        return tv_tensors.wrap(out, like=inpt)
    if not _is_plain(inpt):
        raise TypeError(f"{name}: expected a plain tensor or BoundingBoxes, got {type(inpt)}")
    if format is None or canvas_size is None or clamping_mode == "auto":
        raise ValueError(f"{name}: a plain tensor needs format, canvas_size and clamping_mode")
    fmt = _as_format(format)
    _check_boxes(name, inpt, fmt)
    return _clamp(inpt, fmt, tuple(canvas_size), clamping_mode)


# Flips.


def _flip_rotated(
    boxes: torch.Tensor, fmt: BoundingBoxFormat, axis: int, extent: int
) -> torch.Tensor:
    """Rotated boxes [M, K] mirrored: the angle turns to -r (left-right) or 180 - r."""
    if fmt == _XYXYXYXY:  # the mirrored corners, in the order that keeps the turn
        boxes[:, axis::2].sub_(extent).neg_()
        return boxes[:, [2, 3, 0, 1, 6, 7, 4, 5]]
    if fmt == _XYWHR:  # the first corner becomes the mirror of the second
        cos, sin = _cos_sin(boxes)
        if axis == 0:
            boxes[:, 0].add_(boxes[:, 2].mul(cos)).sub_(extent).neg_()
            boxes[:, 1].sub_(boxes[:, 2].mul(sin))
        else:
            boxes[:, 1].sub_(boxes[:, 2].mul(sin)).sub_(extent).neg_()
            boxes[:, 0].add_(boxes[:, 2].mul(cos))
    else:  # CXCYWHR: the centre moves
        boxes[:, axis].sub_(extent).neg_()
    boxes[:, 4].neg_()
    if axis == 1:
        boxes[:, 4].add_(180)
    return boxes


def _flip_boxes(
    boxes: torch.Tensor, fmt: BoundingBoxFormat, axis: int, extent: int
) -> torch.Tensor:
    # Mirror coordinate `axis` (0: x, 1: y) on [0, extent]: columns axis and axis + 2.
    lo, hi = axis, axis + 2
    if is_rotated_bounding_format(fmt):
        out = _flip_rotated(boxes.clone().reshape(-1, _box_size(fmt)), fmt, axis, extent)
        return out.reshape(boxes.shape)
    out = boxes.clone().reshape(-1, 4)
    if fmt == _XYXY:
        out[:, [lo, hi]] = out[:, [hi, lo]].sub_(extent).neg_()
    elif fmt == _XYWH:
        out[:, lo].add_(out[:, hi]).sub_(extent).neg_()
    else:  # CXCYWH: the centre moves, the size stays
        out[:, lo].sub_(extent).neg_()
    return out.reshape(boxes.shape)


def horizontal_flip_bounding_boxes(
    bounding_boxes: torch.Tensor, format: Format, canvas_size: tuple[int, int]
) -> torch.Tensor:
    """Boxes mirrored left-right on a canvas of ``canvas_size`` (height, width).

    Example:
        >>> import torch
        >>> horizontal_flip_bounding_boxes(torch.tensor([[0, 0, 2, 3]]), "XYWH", (4, 10)).tolist()
        [[8, 0, 2, 3]]
    """
    fmt = _as_format(format)
    _check_boxes("horizontal_flip_bounding_boxes", bounding_boxes, fmt)
    return _flip_boxes(bounding_boxes, fmt, 0, canvas_size[1])


def vertical_flip_bounding_boxes(
    bounding_boxes: torch.Tensor, format: Format, canvas_size: tuple[int, int]
) -> torch.Tensor:
    """Boxes mirrored top-bottom on a canvas of ``canvas_size`` (height, width).

    Example:
        >>> import torch
        >>> vertical_flip_bounding_boxes(torch.tensor([[0, 0, 2, 3]]), "XYXY", (4, 10)).tolist()
        [[0, 1, 2, 4]]
    """
    fmt = _as_format(format)
    _check_boxes("vertical_flip_bounding_boxes", bounding_boxes, fmt)
    return _flip_boxes(bounding_boxes, fmt, 1, canvas_size[0])


# Resize, crop, pad.


def _size_list(size: int | Sequence[int] | None) -> list[int] | None:
    if size is None:
        return None
    return [int(size)] if isinstance(size, int) else [int(s) for s in size]


def resize_bounding_boxes(
    bounding_boxes: torch.Tensor,
    canvas_size: tuple[int, int],
    size: int | Sequence[int] | None,
    max_size: int | None = None,
    format: Format = BoundingBoxFormat.XYXY,
    clamping_mode: str | None = "soft",
) -> tuple[torch.Tensor, tuple[int, int]]:
    """Boxes scaled as :func:`~trivium.vision.transforms.functional.resize` scales the image.

    ``size`` as ``Resize``'s (``[h, w]``, or one int for the smaller edge). Returns
    the boxes and the new canvas size. Axis-aligned boxes stay inside a canvas they
    were inside, so ``clamping_mode`` changes nothing for them; a rotated box
    scaled unevenly becomes the rectangle around the longer diagonal of its
    parallelogram (torchvision's rule), clamped by ``clamping_mode``.

    Example:
        >>> import torch
        >>> out, canvas = resize_bounding_boxes(torch.tensor([[4, 4, 8, 8]]), (16, 32), 8)
        >>> out.tolist(), canvas
        ([[2, 2, 4, 4]], (8, 16))
    """
    fmt = _as_format(format)
    _check_boxes("resize_bounding_boxes", bounding_boxes, fmt)
    old_h, old_w = canvas_size
    new_h, new_w = compute_resized_output_size(old_h, old_w, _size_list(size), max_size)
    if (new_h, new_w) == (old_h, old_w):
        return bounding_boxes, (old_h, old_w)
    if is_rotated_bounding_format(fmt):
        out = _resize_rotated(bounding_boxes, fmt, new_w / old_w, new_h / old_h)
        out = _clamp(out, _XYXYXYXY, (new_h, new_w), clamping_mode)
        out = _convert(out, _XYXYXYXY, fmt).to(bounding_boxes.dtype)
        return out.reshape(bounding_boxes.shape), (new_h, new_w)
    ratios = torch.tensor([new_w / old_w, new_h / old_h] * 2, device=bounding_boxes.device)
    return bounding_boxes.mul(ratios).to(bounding_boxes.dtype), (new_h, new_w)


def _resize_rotated(
    boxes: torch.Tensor, fmt: BoundingBoxFormat, x_ratio: float, y_ratio: float
) -> torch.Tensor:
    """Rotated boxes scaled by the ratios: their corners scaled, then a rectangle again."""
    corners = _convert(boxes.clone(), fmt, _XYXYXYXY).reshape(-1, 8)
    ratios = torch.tensor([x_ratio, y_ratio] * 4, device=boxes.device)
    return _parallelogram_to_rectangle(corners.mul(ratios))


def _resize_typed_boxes(
    boxes: tv_tensors.BoundingBoxes, size: int | Sequence[int] | None, max_size: int | None = None
) -> tv_tensors.BoundingBoxes:
    """:func:`resize_bounding_boxes` of ``BoundingBoxes``: its format, and the new canvas.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> b = tv_tensors.BoundingBoxes(torch.tensor([[4, 4, 8, 8]]), format="XYXY",
        ...                              canvas_size=(16, 32))
        >>> out = _resize_typed_boxes(b, 8)
        >>> out.tolist(), out.canvas_size
        ([[2, 2, 4, 4]], (8, 16))
    """
    out, canvas = resize_bounding_boxes(
        boxes.as_subclass(torch.Tensor),
        boxes.canvas_size,
        size,
        max_size,
        format=boxes.format,
        clamping_mode=boxes.clamping_mode,
    )
    return tv_tensors.wrap(out, like=boxes, canvas_size=canvas)


def _shift(boxes: torch.Tensor, format: BoundingBoxFormat, dx: int, dy: int) -> torch.Tensor:
    """``boxes`` moved by (dx, dy): every corner in XYXY/XYXYXYXY, the first point otherwise."""
    if format in (_XYXY, _XYXYXYXY):
        shift = [dx, dy] * (_box_size(format) // 2)
    else:
        shift = [dx, dy] + [0] * (_box_size(format) - 2)
    return boxes + torch.tensor(shift, dtype=boxes.dtype, device=boxes.device)


def crop_bounding_boxes(
    bounding_boxes: torch.Tensor,
    format: Format,
    top: int,
    left: int,
    height: int,
    width: int,
    clamping_mode: str | None = "soft",
) -> tuple[torch.Tensor, tuple[int, int]]:
    """Boxes in the crop ``(top, left, height, width)``, clamped to it, and the crop's size.

    Negative ``top``/``left`` mean the image was padded there (as torchvision).

    Example:
        >>> import torch
        >>> out, canvas = crop_bounding_boxes(torch.tensor([[2, 2, 9, 9]]), "XYXY", 1, 3, 5, 5)
        >>> out.tolist(), canvas
        ([[0, 1, 5, 5]], (5, 5))
    """
    fmt = _as_format(format)
    _check_boxes("crop_bounding_boxes", bounding_boxes, fmt)
    moved = _shift(bounding_boxes, fmt, -int(left), -int(top))
    canvas = (int(height), int(width))
    if fmt == _XYXYXYXY:  # as torchvision: corners that are no rectangle become one
        moved = _parallelogram_to_rectangle(moved)
    return _clamp(moved, fmt, canvas, clamping_mode), canvas


def _parse_padding(padding: int | Sequence[int]) -> list[int]:
    """[left, right, top, bottom] from torchvision's 1-, 2- or 4-number padding."""
    if isinstance(padding, int):
        return [padding] * 4
    if isinstance(padding, Sequence) and len(padding) in (1, 2, 4):
        p = [int(v) for v in padding]
        if len(p) == 1:
            return p * 4
        if len(p) == 2:
            return [p[0], p[0], p[1], p[1]]
        return [p[0], p[2], p[1], p[3]]
    raise ValueError(
        f"pad_bounding_boxes: padding must be an int or 1, 2 or 4 ints, got {padding!r}"
    )


def pad_bounding_boxes(
    bounding_boxes: torch.Tensor,
    format: Format,
    canvas_size: tuple[int, int],
    padding: int | Sequence[int],
    padding_mode: str = "constant",
    clamping_mode: str | None = "soft",
) -> tuple[torch.Tensor, tuple[int, int]]:
    """Boxes on the image padded by ``padding`` (torchvision's order: left, top, right, bottom).

    Only ``padding_mode="constant"``: reflected content has no boxes (as torchvision).

    Example:
        >>> import torch
        >>> out, canvas = pad_bounding_boxes(torch.tensor([[0, 0, 2, 2]]), "XYXY", (4, 4), [1, 2])
        >>> out.tolist(), canvas
        ([[1, 2, 3, 4]], (8, 6))
    """
    fmt = _as_format(format)
    _check_boxes("pad_bounding_boxes", bounding_boxes, fmt)
    if padding_mode != "constant":
        raise ValueError(
            f"pad_bounding_boxes: padding_mode {padding_mode!r} is not supported with boxes "
            f"(only 'constant')"
        )
    left, right, top, bottom = _parse_padding(padding)
    moved = _shift(bounding_boxes, fmt, left, top)
    canvas = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    return _clamp(moved, fmt, canvas, clamping_mode), canvas


def center_crop_anchor(
    crop_height: int, crop_width: int, height: int, width: int
) -> tuple[int, int]:
    """(top, left) of a ``crop_height`` x ``crop_width`` center crop of ``height`` x ``width``.

    Negative where the crop is larger (the image is padded there).

    Example:
        >>> center_crop_anchor(4, 4, 10, 7)
        (3, 2)
    """
    return round((height - crop_height) / 2.0), round((width - crop_width) / 2.0)


def center_crop_bounding_boxes(
    bounding_boxes: torch.Tensor,
    format: Format,
    canvas_size: tuple[int, int],
    output_size: int | Sequence[int],
    clamping_mode: str | None = "soft",
) -> tuple[torch.Tensor, tuple[int, int]]:
    """Boxes in the center crop of ``output_size`` (``[h, w]`` or one int).

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[0, 0, 6, 6]])
        >>> out, canvas = center_crop_bounding_boxes(boxes, "XYXY", (10, 10), 4)
        >>> out.tolist(), canvas
        ([[0, 0, 3, 3]], (4, 4))
    """
    size = _size_list(output_size) or []
    crop_h, crop_w = (size[0], size[0]) if len(size) == 1 else (size[0], size[1])
    top, left = center_crop_anchor(crop_h, crop_w, *canvas_size)
    return crop_bounding_boxes(bounding_boxes, format, top, left, crop_h, crop_w, clamping_mode)


def resized_crop_bounding_boxes(
    bounding_boxes: torch.Tensor,
    format: Format,
    top: int,
    left: int,
    height: int,
    width: int,
    size: Sequence[int],
    clamping_mode: str | None = "soft",
) -> tuple[torch.Tensor, tuple[int, int]]:
    """Boxes in the crop ``(top, left, height, width)`` resized to ``size`` (``RandomResizedCrop``).

    Example:
        >>> import torch
        >>> out, canvas = resized_crop_bounding_boxes(
        ...     torch.tensor([[4.0, 4.0, 8.0, 8.0]]), "XYXY", 4, 4, 8, 8, [16, 16])
        >>> out.tolist(), canvas
        ([[0.0, 0.0, 8.0, 8.0]], (16, 16))
    """
    boxes, canvas = crop_bounding_boxes(
        bounding_boxes, format, top, left, height, width, clamping_mode
    )
    return resize_bounding_boxes(boxes, canvas, size, format=format, clamping_mode=clamping_mode)


# Masks: the image kernels on ``[..., H, W]`` label maps, nearest neighbour, zeros where
# padding adds pixels.


def _mask_op(mask: torch.Tensor, op: Any, *, resamples: bool = False) -> torch.Tensor:
    """``op`` applied to ``mask`` seen as an image ``[..., C, H, W]`` (a 2-D mask gets C = 1).

    ``resamples``: ``op`` interpolates, so bool and wide integer masks go through
    uint8 / float64 (exact for labels below 2**53) and come back in their dtype.
    """
    if not isinstance(mask, torch.Tensor) or mask.ndim < 2:
        shape = tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"mask: expected a tensor [..., H, W], got {shape}")
    flat = mask.ndim < 3
    x = mask.unsqueeze(0) if flat else mask
    dtype = x.dtype
    if resamples and dtype == torch.bool:
        x = x.to(torch.uint8)
    elif resamples and not (dtype == torch.uint8 or dtype.is_floating_point):
        x = x.to(torch.float64)
    out = op(x).to(dtype)
    return out.squeeze(0) if flat else out


def resize_mask(
    mask: torch.Tensor, size: int | Sequence[int] | None, max_size: int | None = None
) -> torch.Tensor:
    """``mask`` ``[..., H, W]`` resized as :func:`resize` resizes its image (nearest).

    Example:
        >>> import torch
        >>> resize_mask(torch.tensor([[1, 2], [3, 4]]), [4, 4])[0].tolist()
        [1, 1, 2, 2]
    """
    new_h, new_w = compute_resized_output_size(
        mask.shape[-2], mask.shape[-1], _size_list(size), max_size
    )
    return _mask_op(
        mask, lambda x: _resize_image(x, new_h, new_w, "nearest", False), resamples=True
    )


def horizontal_flip_mask(mask: torch.Tensor) -> torch.Tensor:
    """``mask`` ``[..., H, W]`` mirrored left-right.

    Example:
        >>> import torch
        >>> horizontal_flip_mask(torch.tensor([[1, 2]])).tolist()
        [[2, 1]]
    """
    return _mask_op(mask, lambda x: _flip(x, -1))


def vertical_flip_mask(mask: torch.Tensor) -> torch.Tensor:
    """``mask`` ``[..., H, W]`` mirrored top-bottom.

    Example:
        >>> import torch
        >>> vertical_flip_mask(torch.tensor([[1], [2]])).tolist()
        [[2], [1]]
    """
    return _mask_op(mask, lambda x: _flip(x, -2))


def crop_mask(mask: torch.Tensor, top: int, left: int, height: int, width: int) -> torch.Tensor:
    """``mask`` ``[..., H, W]`` cropped to the box (top, left, height, width); zeros outside.

    Example:
        >>> import torch
        >>> crop_mask(torch.arange(9).view(3, 3), 1, 1, 2, 2).tolist()
        [[4, 5], [7, 8]]
    """
    return _mask_op(mask, lambda x: _crop_image(x, int(top), int(left), int(height), int(width)))


def center_crop_mask(mask: torch.Tensor, output_size: int | Sequence[int]) -> torch.Tensor:
    """``mask`` ``[..., H, W]`` center-cropped as :func:`center_crop` crops its image.

    Example:
        >>> import torch
        >>> center_crop_mask(torch.arange(9).view(3, 3), 1).tolist()
        [[4]]
    """
    crop_h, crop_w = parse_size("center_crop_mask", output_size, "output_size")
    return _mask_op(mask, lambda x: _center_crop_image(x, crop_h, crop_w))


def resized_crop_mask(
    mask: torch.Tensor, top: int, left: int, height: int, width: int, size: Sequence[int]
) -> torch.Tensor:
    """``mask`` ``[..., H, W]`` cropped, then resized to ``size`` (nearest).

    Example:
        >>> import torch
        >>> resized_crop_mask(torch.arange(9).view(3, 3), 1, 1, 1, 1, [2, 2]).tolist()
        [[4, 4], [4, 4]]
    """
    return resize_mask(crop_mask(mask, top, left, height, width), list(size))


def pad_mask(
    mask: torch.Tensor,
    padding: int | Sequence[int],
    fill: float | None = None,
    padding_mode: str = "constant",
) -> torch.Tensor:
    """``mask`` ``[..., H, W]`` padded as :func:`pad` pads its image (``fill``: 0 when None).

    Example:
        >>> import torch
        >>> pad_mask(torch.tensor([[1, 2]]), [1, 0]).tolist()
        [[0, 1, 2, 0]]
    """
    torch_padding = parse_padding("pad_mask", padding)
    if padding_mode not in _PAD_MODES:
        raise ValueError(
            f"pad_mask: padding_mode must be one of {_PAD_MODES}, got {padding_mode!r}"
        )
    fill_values = parse_fill("pad_mask", fill)
    return _mask_op(mask, lambda x: _pad_image(x, torch_padding, fill_values, padding_mode))


# Boxes as tv_tensors: the box kernels with the metadata of BoundingBoxes.


def _moved_boxes(
    boxes: tv_tensors.BoundingBoxes, kernel: Any, *args: Any, **kwargs: Any
) -> tv_tensors.BoundingBoxes:
    """``kernel(plain boxes, format, *args, clamping_mode=...)`` -> (boxes, canvas), re-typed."""
    out, canvas = kernel(
        boxes.as_subclass(torch.Tensor),
        boxes.format,
        *args,
        clamping_mode=boxes.clamping_mode,
        **kwargs,
    )
    return tv_tensors.wrap(out, like=boxes, canvas_size=canvas)


def _resize_boxes_dispatch(
    inpt: tv_tensors.BoundingBoxes,
    size: int | Sequence[int] | None,
    max_size: int | None = None,
    **kwargs: Any,
) -> tv_tensors.BoundingBoxes:
    out, canvas = resize_bounding_boxes(
        inpt.as_subclass(torch.Tensor),
        inpt.canvas_size,
        size,
        max_size,
        format=inpt.format,
        clamping_mode=inpt.clamping_mode,
    )
    return tv_tensors.wrap(out, like=inpt, canvas_size=canvas)


def _horizontal_flip_boxes_dispatch(inpt: tv_tensors.BoundingBoxes) -> tv_tensors.BoundingBoxes:
    out = horizontal_flip_bounding_boxes(
        inpt.as_subclass(torch.Tensor), inpt.format, inpt.canvas_size
    )
    return tv_tensors.wrap(out, like=inpt)


def _vertical_flip_boxes_dispatch(inpt: tv_tensors.BoundingBoxes) -> tv_tensors.BoundingBoxes:
    out = vertical_flip_bounding_boxes(
        inpt.as_subclass(torch.Tensor), inpt.format, inpt.canvas_size
    )
    return tv_tensors.wrap(out, like=inpt)


def _crop_boxes_dispatch(
    inpt: tv_tensors.BoundingBoxes, top: int, left: int, height: int, width: int
) -> tv_tensors.BoundingBoxes:
    return _moved_boxes(inpt, crop_bounding_boxes, top, left, height, width)


def _center_crop_boxes_dispatch(
    inpt: tv_tensors.BoundingBoxes, output_size: int | Sequence[int]
) -> tv_tensors.BoundingBoxes:
    return _moved_boxes(inpt, center_crop_bounding_boxes, inpt.canvas_size, output_size)


def _resized_crop_boxes_dispatch(
    inpt: tv_tensors.BoundingBoxes,
    top: int,
    left: int,
    height: int,
    width: int,
    size: Sequence[int],
    **kwargs: Any,
) -> tv_tensors.BoundingBoxes:
    return _moved_boxes(inpt, resized_crop_bounding_boxes, top, left, height, width, size)


def _pad_boxes_dispatch(
    inpt: tv_tensors.BoundingBoxes,
    padding: int | Sequence[int],
    padding_mode: str = "constant",
    **kwargs: Any,
) -> tv_tensors.BoundingBoxes:
    return _moved_boxes(inpt, pad_bounding_boxes, inpt.canvas_size, padding, padding_mode)


def _resize_mask_dispatch(
    inpt: torch.Tensor, size: int | Sequence[int] | None, max_size: int | None = None, **kwargs: Any
) -> torch.Tensor:
    return resize_mask(inpt, size, max_size)


def _resized_crop_mask_dispatch(
    inpt: torch.Tensor,
    top: int,
    left: int,
    height: int,
    width: int,
    size: Sequence[int],
    **kwargs: Any,
) -> torch.Tensor:
    return resized_crop_mask(inpt, top, left, height, width, size)


# The functionals: one per operation, dispatching on the type of the input.


def resize(
    inpt: torch.Tensor,
    size: int | Sequence[int] | None,
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    max_size: int | None = None,
    antialias: bool | None = True,
) -> torch.Tensor:
    """Resize to ``size`` (``[h, w]``, or one int for the smaller edge, as torchvision).

    Takes an image tensor ``[..., C, H, W]``, ``tv_tensors.Image``/``Video``, ``Mask``
    (nearest) or ``BoundingBoxes`` (new ``canvas_size``); ``antialias`` applies to
    bilinear and bicubic; an integer image is rounded and clamped.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> resize(torch.zeros(3, 30, 40, dtype=torch.uint8), 15).shape
        torch.Size([3, 15, 20])
        >>> resize(tv_tensors.BoundingBoxes([[4, 4, 8, 8]], format="XYXY", canvas_size=(16, 32)),
        ...        8).canvas_size
        (8, 16)
    """
    kernel = get_kernel(resize, type(inpt))
    return kernel(
        inpt, size=size, interpolation=interpolation, max_size=max_size, antialias=antialias
    )


def crop(inpt: torch.Tensor, top: int, left: int, height: int, width: int) -> torch.Tensor:
    """Crop the box (top, left, height, width); parts outside the image are zero.

    Inside the image the result is a view (no copy). Boxes are shifted onto the new canvas.

    Example:
        >>> import torch
        >>> crop(torch.arange(16.0).view(1, 4, 4), 1, 1, 2, 2)
        tensor([[[ 5.,  6.],
                 [ 9., 10.]]])
    """
    kernel = get_kernel(crop, type(inpt))
    return kernel(inpt, top=top, left=left, height=height, width=width)


def center_crop(inpt: torch.Tensor, output_size: int | Sequence[int]) -> torch.Tensor:
    """Crop the center ``output_size`` (``[h, w]`` or one int); pads with zeros if larger.

    Example:
        >>> import torch
        >>> center_crop(torch.arange(16.0).view(1, 4, 4), 2)
        tensor([[[ 5.,  6.],
                 [ 9., 10.]]])
    """
    kernel = get_kernel(center_crop, type(inpt))
    return kernel(inpt, output_size=output_size)


def resized_crop(
    inpt: torch.Tensor,
    top: int,
    left: int,
    height: int,
    width: int,
    size: int | Sequence[int],
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    antialias: bool | None = True,
) -> torch.Tensor:
    """Crop the box (top, left, height, width), then :func:`resize` it to ``size``.

    Example:
        >>> import torch
        >>> resized_crop(torch.zeros(3, 50, 60), 5, 5, 20, 30, [8, 8]).shape
        torch.Size([3, 8, 8])
    """
    kernel = get_kernel(resized_crop, type(inpt))
    return kernel(
        inpt,
        top=top,
        left=left,
        height=height,
        width=width,
        size=size,
        interpolation=interpolation,
        antialias=antialias,
    )


def five_crop(
    inpt: torch.Tensor, size: int | Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Corner and center crops: (top-left, top-right, bottom-left, bottom-right, center).

    Example:
        >>> import torch
        >>> [tuple(c.shape) for c in five_crop(torch.zeros(1, 5, 5), 2)][0]
        (1, 2, 2)
    """
    kernel = get_kernel(five_crop, type(inpt))
    return kernel(inpt, size=size)


def ten_crop(
    inpt: torch.Tensor, size: int | Sequence[int], vertical_flip: bool = False
) -> tuple[torch.Tensor, ...]:
    """:func:`five_crop` of the image, then of its flip (horizontal unless ``vertical_flip``).

    Example:
        >>> import torch
        >>> len(ten_crop(torch.zeros(3, 8, 8), 4))
        10
    """
    kernel = get_kernel(ten_crop, type(inpt))
    return kernel(inpt, size=size, vertical_flip=vertical_flip)


def pad(
    inpt: torch.Tensor,
    padding: int | Sequence[int],
    fill: float | Sequence[float] | None = None,
    padding_mode: str = "constant",
) -> torch.Tensor:
    """Pad the borders (``padding``: int, [left/right, top/bottom] or [left, top, right, bottom]).

    ``padding_mode``: ``"constant"`` (with ``fill``, a number or one per channel),
    ``"edge"``, ``"reflect"`` (mirror without the edge pixel) or ``"symmetric"``
    (mirror with it). Negative padding crops. Boxes move onto the padded canvas
    (``"constant"`` only, as torchvision).

    Example:
        >>> import torch
        >>> pad(torch.tensor([[[1.0, 2.0, 3.0]]]), [2, 0], padding_mode="reflect")
        tensor([[[3., 2., 1., 2., 3., 2., 1.]]])
    """
    kernel = get_kernel(pad, type(inpt))
    return kernel(inpt, padding=padding, fill=fill, padding_mode=padding_mode)


def horizontal_flip(inpt: torch.Tensor) -> torch.Tensor:
    """Mirror left-right (images, videos, masks, boxes).

    Example:
        >>> import torch
        >>> horizontal_flip(torch.tensor([[[1, 2, 3]]], dtype=torch.uint8))
        tensor([[[3, 2, 1]]], dtype=torch.uint8)
    """
    return get_kernel(horizontal_flip, type(inpt))(inpt)


def vertical_flip(inpt: torch.Tensor) -> torch.Tensor:
    """Mirror top-bottom (images, videos, masks, boxes).

    Example:
        >>> import torch
        >>> vertical_flip(torch.tensor([[[1.0], [2.0]]]))
        tensor([[[2.],
                 [1.]]])
    """
    return get_kernel(vertical_flip, type(inpt))(inpt)


# The video kernels are the image kernels: a video is a batch of images [..., T, C, H, W].
resize_video = resize_image
crop_video = crop_image
center_crop_video = center_crop_image
resized_crop_video = resized_crop_image
five_crop_video = five_crop_image
ten_crop_video = ten_crop_image
pad_video = pad_image
horizontal_flip_video = horizontal_flip_image
vertical_flip_video = vertical_flip_image


def _register_geometry_kernels() -> None:
    image_kernels = {
        resize: resize_image,
        crop: crop_image,
        center_crop: center_crop_image,
        resized_crop: resized_crop_image,
        five_crop: five_crop_image,
        ten_crop: ten_crop_image,
        pad: pad_image,
        horizontal_flip: horizontal_flip_image,
        vertical_flip: vertical_flip_image,
    }
    for functional, kernel in image_kernels.items():
        for input_type in (torch.Tensor, tv_tensors.Image, tv_tensors.Video):
            _register_kernel_internal(functional, input_type)(kernel)
    masks = {
        resize: _resize_mask_dispatch,
        crop: crop_mask,
        center_crop: center_crop_mask,
        resized_crop: _resized_crop_mask_dispatch,
        pad: pad_mask,
        horizontal_flip: horizontal_flip_mask,
        vertical_flip: vertical_flip_mask,
    }
    for functional, kernel in masks.items():
        _register_kernel_internal(functional, tv_tensors.Mask)(kernel)
    boxes = {
        resize: _resize_boxes_dispatch,
        crop: _crop_boxes_dispatch,
        center_crop: _center_crop_boxes_dispatch,
        resized_crop: _resized_crop_boxes_dispatch,
        pad: _pad_boxes_dispatch,
        horizontal_flip: _horizontal_flip_boxes_dispatch,
        vertical_flip: _vertical_flip_boxes_dispatch,
    }
    for functional, kernel in boxes.items():
        _register_kernel_internal(functional, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)(
            kernel
        )


_register_geometry_kernels()

#: torchvision's short names of :func:`horizontal_flip` and :func:`vertical_flip`.
hflip = horizontal_flip
vflip = vertical_flip
