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
from trivium.vision.transforms._image import bits_view, check_image, eager_cpu, image_where
from trivium.vision.transforms.functional.conversion import _max_value
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = [
    "center_crop",
    "crop",
    "crop_batched",
    "five_crop",
    "horizontal_flip",
    "pad",
    "resize",
    "resized_crop",
    "resized_crop_batched",
    "ten_crop",
    "vertical_flip",
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


def resize(
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
        >>> resize(torch.zeros(3, 30, 40, dtype=torch.uint8), 15).shape
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


def crop(img: torch.Tensor, top: int, left: int, height: int, width: int) -> torch.Tensor:
    """Crop the box (top, left, height, width); parts outside the image are zero.

    Inside the image the result is a view (no copy).

    Example:
        >>> import torch
        >>> crop(torch.arange(16.0).view(1, 4, 4), 1, 1, 2, 2)
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


def center_crop(img: torch.Tensor, output_size: int | Sequence[int]) -> torch.Tensor:
    """Crop the center ``output_size`` (``[h, w]`` or one int); pads with zeros if larger.

    Example:
        >>> import torch
        >>> center_crop(torch.arange(16.0).view(1, 4, 4), 2)
        tensor([[[ 5.,  6.],
                 [ 9., 10.]]])
    """
    check_image("center_crop", img)
    crop_h, crop_w = parse_size("center_crop", output_size, "output_size")
    return _center_crop_image(img, crop_h, crop_w)


def resized_crop(
    img: torch.Tensor,
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
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def five_crop(
    img: torch.Tensor, size: int | Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Corner and center crops: (top-left, top-right, bottom-left, bottom-right, center).

    Example:
        >>> import torch
        >>> [tuple(c.shape) for c in five_crop(torch.zeros(1, 5, 5), 2)][0]
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


def ten_crop(
    img: torch.Tensor, size: int | Sequence[int], vertical_flip: bool = False
) -> tuple[torch.Tensor, ...]:
    """:func:`five_crop` of the image, then of its flip (horizontal unless ``vertical_flip``).

    Example:
        >>> import torch
        >>> len(ten_crop(torch.zeros(3, 8, 8), 4))
        10
    """
    flipped = _flip(img, -2 if vertical_flip else -1)
    return five_crop(img, size) + five_crop(flipped, size)


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


def pad(
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
        >>> pad(torch.tensor([[[1.0, 2.0, 3.0]]]), [2, 0], padding_mode="reflect")
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


def horizontal_flip(img: torch.Tensor) -> torch.Tensor:
    """Mirror left-right.

    Example:
        >>> import torch
        >>> horizontal_flip(torch.tensor([[[1, 2, 3]]], dtype=torch.uint8))
        tensor([[[3, 2, 1]]], dtype=torch.uint8)
    """
    check_image("horizontal_flip", img)
    return _flip(img, -1)


def vertical_flip(img: torch.Tensor) -> torch.Tensor:
    """Mirror top-bottom.

    Example:
        >>> import torch
        >>> vertical_flip(torch.tensor([[[1.0], [2.0]]]))
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
        >>> torch.equal(out[1], resized_crop(img[1], 4, 0, 20, 18, [8, 8]))
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
