"""Geometry transforms: resize, crops, padding and flips (``torchvision.transforms.v2`` names).

Random ones take ``generator=`` and ``per_sample=True`` (independent parameters for
every image of a batch, applied by the batched kernel: in one call on CUDA, chunk by
chunk on CPU, see :class:`~trivium.vision.transforms.ImageTransform`).

Example:
    >>> import torch
    >>> from trivium.core import Compose
    >>> t = Compose([RandomResizedCrop(8, generator=torch.Generator().manual_seed(0)),
    ...              RandomHorizontalFlip()])
    >>> t(torch.zeros(2, 3, 32, 48, dtype=torch.uint8)).shape
    torch.Size([2, 3, 8, 8])
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from trivium.core.tracing import is_tracing
from trivium.core.transform import check_probability
from trivium.vision.transforms import functional as F
from trivium.vision.transforms._base import ImageTransform
from trivium.vision.transforms._image import check_image, eager_cpu, image_where
from trivium.vision.transforms._scriptable import CenterCropModule, PadModule, ResizeModule
from trivium.vision.transforms.functional.geometry import (
    _center_crop_image,
    _check_fill_channels,
    _flip,
    _pad_image,
    _resize_image,
    _resized_crops_each,
    compute_resized_output_size,
    crop_batched,
    five_crop_image,
    interpolation_mode,
    parse_fill,
    parse_padding,
    parse_size,
    resized_crop_batched,
    ten_crop_image,
)
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = [
    "CenterCrop",
    "FiveCrop",
    "Pad",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "RandomVerticalFlip",
    "Resize",
    "TenCrop",
    "random_resized_crop_box",
]


def _as_words(flat: torch.Tensor) -> torch.Tensor:
    """``flat`` [N, M] reinterpreted with the widest integer type its rows allow (a bit view)."""
    row_bytes = flat.shape[1] * flat.element_size()
    for word in (torch.int64, torch.int32, torch.int16):
        size = torch.empty((), dtype=word).element_size()
        if (
            row_bytes > 0
            and row_bytes % size == 0
            and flat.storage_offset() * flat.element_size() % size == 0
        ):
            return flat.view(word)
    return flat


def _where_per_image(
    mask: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, overwrite_a: bool = False
) -> torch.Tensor:
    """``a`` where ``mask`` (one entry per image of the flattened batch, or one) else ``b``.

    Images of one dtype are selected whole, as wide integer words: up to 8x fewer
    elements than uint8 pixels for ``torch.where`` to visit (selecting is a bit copy).
    ``overwrite_a``: ``a`` is a temporary, write the result over it (a batch-sized
    allocation less: its page faults cost as much as the select). Under ``torch.compile``,
    which fuses the select anyway, the pixels are selected as they are.
    """
    c, h, w = a.shape[-3:]
    flat_a = a.reshape(math.prod(a.shape[:-3]), c * h * w)
    flat_b = b.reshape(flat_a.shape)
    select = mask.to(a.device).view(-1, 1)
    if a.dtype == b.dtype and not is_tracing():
        words_a, words_b = _as_words(flat_a.contiguous()), _as_words(flat_b.contiguous())
        if words_a.dtype == words_b.dtype:  # else differently aligned: select the pixels
            out = words_a if overwrite_a else None
            words = torch.where(select, words_a, words_b, out=out)
            return words.view(a.dtype).reshape(a.shape)
    return image_where(select, flat_a, flat_b).reshape(a.shape)


def _flip_per_image(img: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """Flip along ``dim`` (-1 or -2) the images where ``mask``.

    On CUDA (and under ``torch.compile``), flipping the whole batch, then selecting
    whole images into it (as wide words), beats both a gather with per-image reversed
    indices and copying only the flipped images in (``index_copy_``/``index_put_`` on
    uint8 run element by element). On the CPU each run of images flipped alike is
    copied (flipped or not) straight into the output: every pixel is read and written
    once, as a loop over the images would, with a call per run instead of per image.
    """
    if not eager_cpu(img):
        return _where_per_image(mask, _flip(img, dim), img, overwrite_a=True)
    x = img.reshape(-1, *img.shape[-3:])
    flags = mask.reshape(-1).expand(x.shape[0]).tolist()
    if all(flags) or not any(flags):
        return _flip(img, dim) if flags[0] else img
    return _write_runs(x, flags, lambda a, b: b.copy_(_flip(a, dim))).reshape(img.shape)


def _write_runs(
    x: torch.Tensor, flags: list[bool], write: Callable[[torch.Tensor, torch.Tensor], object]
) -> torch.Tensor:
    """A new ``[N, C, H, W]`` batch: each run of flagged images of ``x`` written by ``write``.

    ``write(images, into)`` fills ``into`` from ``images``; the other images are copied.
    Every pixel is read and written once, with a call per run instead of per image.

    Example:
        >>> import torch
        >>> x = torch.arange(4.0).view(4, 1, 1, 1)
        >>> neg = lambda images, into: torch.neg(images, out=into)
        >>> _write_runs(x, [True, True, False, True], neg).flatten().tolist()
        [-0.0, -1.0, 2.0, -3.0]
    """
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    start = 0
    for flag, run in itertools.groupby(flags):
        stop = start + len(list(run))
        if flag:
            write(x[start:stop], out[start:stop])
        else:
            out[start:stop] = x[start:stop]
        start = stop
    return out


# Resize.


class Resize(ImageTransform):
    """Resize to ``size`` (``[h, w]``, or one int for the smaller edge, capped by ``max_size``).

    ``antialias`` applies to bilinear and bicubic. Works under ``torch.jit.script``
    and ``torch.export``.

    Example:
        >>> import torch
        >>> Resize(16)(torch.zeros(3, 32, 64, dtype=torch.uint8)).shape
        torch.Size([3, 16, 32])
    """

    def __init__(
        self,
        size: int | Sequence[int] | None,
        interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
        max_size: int | None = None,
        antialias: bool | None = True,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if size is None:
            if max_size is None:
                raise ValueError(f"{name}: size=None needs max_size")
            self.size: list[int] | None = None
        elif isinstance(size, int) and not isinstance(size, bool):
            self.size = parse_size(name, size)[:1]
        else:
            if not isinstance(size, Sequence) or len(size) not in (1, 2):
                raise TypeError(
                    f"{name}: size must be an int or a sequence of 1 or 2 ints, got {size!r}"
                )
            self.size = parse_size(name, size)[: len(size)]
        if max_size is not None:
            if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size <= 0:
                raise ValueError(f"{name}: max_size must be a positive int, got {max_size!r}")
            if self.size is not None and len(self.size) == 2:
                raise ValueError(f"{name}: max_size is only supported when size is a single int")
            if self.size is not None and max_size <= self.size[0]:
                raise ValueError(
                    f"{name}: max_size ({max_size}) must be larger than size ({self.size[0]})"
                )
        self.interpolation = interpolation_mode(name, interpolation)
        self.max_size = max_size
        self.antialias = bool(antialias)

    def output_size(self, height: int, width: int) -> list[int]:
        """The ``[h, w]`` this transform gives an image of ``height`` x ``width``.

        Example:
            >>> Resize(100, max_size=150).output_size(300, 600)
            [75, 150]
        """
        return compute_resized_output_size(height, width, self.size, self.max_size)

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Resize one image tensor (see the class docstring)."""
        check_image(type(self).__name__, inpt)
        h, w = self.output_size(inpt.shape[-2], inpt.shape[-1])
        return _resize_image(inpt, h, w, self.interpolation.value, self.antialias)

    def __prepare_scriptable__(self) -> nn.Module:
        return ResizeModule(self.size, self.interpolation.value, self.max_size, self.antialias)

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes (new canvas), masks (nearest) and a user's types: ``F.resize``."""
        return self._call_kernel(
            F.resize, inpt, self.size, self.interpolation, self.max_size, self.antialias
        )


# Deterministic crops and padding.


class CenterCrop(ImageTransform):
    """Crop the center ``size`` (``[h, w]`` or one int); pads with zeros when the image is smaller.

    Works under ``torch.jit.script`` and ``torch.export``.

    Example:
        >>> import torch
        >>> CenterCrop(4)(torch.zeros(3, 10, 2)).shape
        torch.Size([3, 4, 4])
    """

    def __init__(self, size: int | Sequence[int]) -> None:
        super().__init__()
        self.size = parse_size(type(self).__name__, size)

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Crop one image tensor (see the class docstring)."""
        check_image(type(self).__name__, inpt)
        return _center_crop_image(inpt, self.size[0], self.size[1])

    def __prepare_scriptable__(self) -> nn.Module:
        return CenterCropModule(self.size)

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes, masks and a user's types: ``F.center_crop``."""
        return self._call_kernel(F.center_crop, inpt, self.size)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric")


def _check_pad_mode(owner: str, padding_mode: str) -> str:
    if padding_mode not in _PAD_MODES:
        raise ValueError(f"{owner}: padding_mode must be one of {_PAD_MODES}, got {padding_mode!r}")
    return padding_mode


class Pad(ImageTransform):
    """Pad: ``padding`` is an int, [left/right, top/bottom] or [left, top, right, bottom].

    ``padding_mode``: ``"constant"`` (``fill``: a number or one per channel),
    ``"edge"``, ``"reflect"`` or ``"symmetric"``. Works under ``torch.jit.script``
    and ``torch.export``.

    Example:
        >>> import torch
        >>> Pad([1, 2], padding_mode="edge")(torch.zeros(3, 4, 4)).shape
        torch.Size([3, 8, 6])
    """

    def __init__(
        self,
        padding: int | Sequence[int],
        fill: float | Sequence[float] = 0,
        padding_mode: str = "constant",
    ) -> None:
        super().__init__()
        name = type(self).__name__
        self.padding = parse_padding(name, padding)
        self.fill = parse_fill(name, fill)
        self.padding_mode = _check_pad_mode(name, padding_mode)

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Pad one image tensor (see the class docstring)."""
        name = type(self).__name__
        check_image(name, inpt)
        _check_fill_channels(name, self.fill, inpt.shape[-3])
        h, w = inpt.shape[-2], inpt.shape[-1]
        left, right, top, bottom = self.padding
        if h + top + bottom <= 0 or w + left + right <= 0:
            raise ValueError(f"{name}: padding {self.padding} leaves nothing of a {h}x{w} image")
        return _pad_image(inpt, self.padding, self.fill, self.padding_mode)

    def __prepare_scriptable__(self) -> nn.Module:
        return PadModule(self.padding, self.fill, self.padding_mode)

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes, masks (zeros where padding adds pixels) and a user's types: ``F.pad``."""
        padding = _torchvision_padding(self.padding)
        return self._call_kernel(F.pad, inpt, padding, None, self.padding_mode)


class FiveCrop(ImageTransform):
    """The four corner crops and the center crop of ``size``, as a tuple of 5 images.

    Example:
        >>> import torch
        >>> [tuple(c.shape) for c in FiveCrop(2)(torch.zeros(3, 4, 4))][-1]
        (3, 2, 2)
    """

    _labels_as_image = True  # crops move pixels only: a palette image's indices stay

    def __init__(self, size: int | Sequence[int]) -> None:
        super().__init__()
        self.size = parse_size(type(self).__name__, size)

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> tuple[torch.Tensor, ...]:
        """Crop one image tensor (see the class docstring)."""
        self._check(inpt)
        return five_crop_image(inpt, self.size)

    def _check(self, inpt: torch.Tensor) -> None:
        name = type(self).__name__
        check_image(name, inpt)
        if self.size[0] > inpt.shape[-2] or self.size[1] > inpt.shape[-1]:
            raise ValueError(
                f"{name}: crop size {self.size} is larger than the image {list(inpt.shape[-2:])}"
            )


class TenCrop(FiveCrop):
    """:class:`FiveCrop` of the image and of its flip (vertical when ``vertical_flip``): 10 images.

    Example:
        >>> import torch
        >>> len(TenCrop(2, vertical_flip=True)(torch.zeros(3, 4, 4)))
        10
    """

    def __init__(self, size: int | Sequence[int], vertical_flip: bool = False) -> None:
        super().__init__(size)
        self.vertical_flip = bool(vertical_flip)

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> tuple[torch.Tensor, ...]:
        """Crop one image tensor (see the class docstring)."""
        self._check(inpt)
        return ten_crop_image(inpt, self.size, self.vertical_flip)


# Flips.


class _RandomFlip(ImageTransform):
    """Flip along ``_dim`` with probability ``p`` (per image with ``per_sample``)."""

    _dim = -1
    _per_image_params = ("flip",)
    _cpu_chunk_values = None  # the kernel goes run by run on the CPU (_flip_per_image)

    def __init__(
        self, p: float = 0.5, *, per_sample: bool = False, generator: torch.Generator | None = None
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        self.p = check_probability(type(self).__name__, p)

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        if self._tensor_params():
            return {"flip": self._draw((self._num_draws(img),), img.device) < self.p}
        return {"flip": float(self._rand(())) < self.p}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        check_image(type(self).__name__, inpt)
        flip = params["flip"]
        if isinstance(flip, torch.Tensor):
            return _flip_per_image(inpt, flip, self._dim)
        return _flip(inpt, self._dim) if flip else inpt

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes, masks and a user's types: ``F.horizontal_flip`` / ``F.vertical_flip``."""
        flip = F.horizontal_flip if self._dim == -1 else F.vertical_flip
        if not self._has_kernel(flip, inpt) or not _scalar(params["flip"]):
            return inpt
        return flip(inpt)


class RandomHorizontalFlip(_RandomFlip):
    """Mirror left-right with probability ``p``.

    Example:
        >>> import torch
        >>> RandomHorizontalFlip(p=1.0)(torch.tensor([[[1.0, 2.0]]]))
        tensor([[[2., 1.]]])
    """

    _dim = -1


class RandomVerticalFlip(_RandomFlip):
    """Mirror top-bottom with probability ``p``.

    Example:
        >>> import torch
        >>> RandomVerticalFlip(p=1.0)(torch.tensor([[[1.0], [2.0]]])).view(-1).tolist()
        [2.0, 1.0]
    """

    _dim = -2


# Random crops.


class RandomCrop(ImageTransform):
    """Crop ``size`` at a random place after optional ``padding`` (torchvision's ``RandomCrop``).

    ``pad_if_needed`` pads images smaller than ``size`` (``fill``/``padding_mode``
    as :class:`Pad`). With ``per_sample=True`` every image of a batch gets its own
    offset (one gather for the batch on CUDA; slices of each image on CPU).

    Example:
        >>> import torch
        >>> RandomCrop(4, padding=2, per_sample=True)(torch.zeros(8, 3, 6, 6)).shape
        torch.Size([8, 3, 4, 4])
    """

    _per_image_params = ("top", "left")

    def __init__(
        self,
        size: int | Sequence[int],
        padding: int | Sequence[int] | None = None,
        pad_if_needed: bool = False,
        fill: float | Sequence[float] = 0,
        padding_mode: str = "constant",
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        name = type(self).__name__
        self.size = parse_size(name, size)
        self.padding = None if padding is None else parse_padding(name, padding)
        self.pad_if_needed = bool(pad_if_needed)
        self.fill = parse_fill(name, fill)
        self.padding_mode = _check_pad_mode(name, padding_mode)

    def _padding_for(self, height: int, width: int) -> list[int]:
        """[left, right, top, bottom] padding for an image of this size (torchvision's rule)."""
        left, right, top, bottom = self.padding if self.padding is not None else [0, 0, 0, 0]
        ph, pw = height + top + bottom, width + left + right
        crop_h, crop_w = self.size
        if self.pad_if_needed and ph < crop_h:
            top, bottom = top + crop_h - ph, bottom + crop_h - ph
            ph += 2 * (crop_h - ph)
        if self.pad_if_needed and pw < crop_w:
            left, right = left + crop_w - pw, right + crop_w - pw
            pw += 2 * (crop_w - pw)
        if ph < crop_h or pw < crop_w:
            raise ValueError(
                f"{type(self).__name__}: crop size {self.size} is larger than the "
                f"{'padded ' if any((left, right, top, bottom)) else ''}image {[ph, pw]}"
            )
        return [left, right, top, bottom]

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        check_image(type(self).__name__, img)
        padding = self._padding_for(img.shape[-2], img.shape[-1])
        room_h = img.shape[-2] + padding[2] + padding[3] - self.size[0] + 1
        room_w = img.shape[-1] + padding[0] + padding[1] - self.size[1] + 1
        if self._tensor_params():
            u = self._draw((self._num_draws(img), 2), img.device)
            top = (u[:, 0] * room_h).floor().long().clamp(max=room_h - 1)
            left = (u[:, 1] * room_w).floor().long().clamp(max=room_w - 1)
        else:
            top = int(self._randint(0, room_h)) if room_h > 1 else 0
            left = int(self._randint(0, room_w)) if room_w > 1 else 0
        return {"padding": padding, "top": top, "left": left}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Pad and crop one image tensor with the drawn offsets."""
        check_image(type(self).__name__, inpt)
        padding, top, left = params["padding"], params["top"], params["left"]
        if any(padding):
            _check_fill_channels(type(self).__name__, self.fill, inpt.shape[-3])
            inpt = _pad_image(inpt, padding, self.fill, self.padding_mode)
        crop_h, crop_w = self.size
        if isinstance(top, torch.Tensor):
            return crop_batched(inpt, top, left, crop_h, crop_w)
        return inpt[..., top : top + crop_h, left : left + crop_w]

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes, masks and a user's types: ``F.pad`` by the drawn padding, then ``F.crop``."""
        if not self._has_kernel(F.crop, inpt):
            return inpt
        if any(params["padding"]):
            padding = _torchvision_padding(params["padding"])
            inpt = self._call_kernel(F.pad, inpt, padding, None, self.padding_mode)
        top, left = _scalar(params["top"]), _scalar(params["left"])
        return F.crop(inpt, top, left, *self.size)


def _check_range(owner: str, name: str, value: Any) -> tuple[float, float]:
    if not (isinstance(value, Sequence) and len(value) == 2):
        raise TypeError(f"{owner}: {name} must be a sequence of 2 numbers, got {value!r}")
    lo, hi = float(value[0]), float(value[1])
    if not (0 < lo <= hi and math.isfinite(hi)):
        raise ValueError(f"{owner}: {name} must satisfy 0 < {name}[0] <= {name}[1], got {value!r}")
    return lo, hi


def random_resized_crop_box(
    height: int,
    width: int,
    scale: Sequence[float] = (0.08, 1.0),
    ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    generator: torch.Generator | None = None,
) -> tuple[int, int, int, int]:
    """Sample a ``RandomResizedCrop`` box (top, left, height, width) for an image of this size.

    torchvision's algorithm and draws: up to 10 tries of an area fraction in
    ``scale`` and a log-uniform aspect ratio in ``ratio``, then a center crop with
    the ratio clamped. With ``generator=None`` it uses torch's default generator,
    so under ``torch.manual_seed`` it picks the same box as torchvision.

    Example:
        >>> import torch
        >>> random_resized_crop_box(480, 640, generator=torch.Generator().manual_seed(0))
        (98, 42, 376, 439)
    """
    device = generator.device if generator is not None else torch.device("cpu")
    area = height * width
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        target_area = (
            area
            * torch.empty(1, device=device).uniform_(scale[0], scale[1], generator=generator).item()
        )
        aspect = math.exp(
            torch.empty(1, device=device).uniform_(log_lo, log_hi, generator=generator).item()
        )
        w = round(math.sqrt(target_area * aspect))
        h = round(math.sqrt(target_area / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = int(
                torch.randint(
                    0, height - h + 1, size=(1,), generator=generator, device=device
                ).item()
            )
            left = int(
                torch.randint(
                    0, width - w + 1, size=(1,), generator=generator, device=device
                ).item()
            )
            return top, left, h, w
    return _center_box(height, width, ratio)


def _center_box(height: int, width: int, ratio: Sequence[float]) -> tuple[int, int, int, int]:
    """torchvision's fallback: the largest center box whose aspect ratio is within ``ratio``."""
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, round(width / min(ratio))
    elif in_ratio > max(ratio):
        h, w = height, round(height * max(ratio))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def random_resized_crop_boxes(
    u: torch.Tensor,
    height: int,
    width: int,
    scale: Sequence[float] = (0.08, 1.0),
    ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """*Batched* box sampling from uniforms ``u`` [N, 10, 4]: tensors (top, left, height, width).

    Same distribution as :func:`random_resized_crop_box` (the first of 10 tries
    that fits, else the center box), without a Python loop or data-dependent branch.

    Example:
        >>> import torch
        >>> top, left, h, w = random_resized_crop_boxes(torch.rand(5, 10, 4), 100, 200)
        >>> bool(((top + h <= 100) & (left + w <= 200)).all())
        True
    """
    u = u.to(torch.float64)
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    target_area = (height * width) * (scale[0] + (scale[1] - scale[0]) * u[..., 0])
    aspect = torch.exp(log_lo + (log_hi - log_lo) * u[..., 1])
    w = torch.round(torch.sqrt(target_area * aspect))
    h = torch.round(torch.sqrt(target_area / aspect))
    fits = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = fits.to(torch.uint8).argmax(dim=1, keepdim=True)  # index of the first try that fits
    w, h = w.gather(1, first).squeeze(1), h.gather(1, first).squeeze(1)
    u_top, u_left = u[..., 2].gather(1, first).squeeze(1), u[..., 3].gather(1, first).squeeze(1)
    top = torch.floor(u_top * (height - h + 1)).clamp(min=0)
    left = torch.floor(u_left * (width - w + 1)).clamp(min=0)
    top = torch.minimum(top, height - h)
    left = torch.minimum(left, width - w)
    any_fit = fits.any(dim=1)
    ct, cl, ch, cw = _center_box(height, width, ratio)
    pick = torch.where
    return (
        pick(any_fit, top, ct).long(),
        pick(any_fit, left, cl).long(),
        pick(any_fit, h, ch).long(),
        pick(any_fit, w, cw).long(),
    )


class RandomResizedCrop(ImageTransform):
    """Crop a random box (area fraction in ``scale``, aspect ratio in ``ratio``); resize it.

    ``size``: ``[h, w]`` or one int for a square. The box is drawn by
    :meth:`get_params` (torchvision's algorithm). With ``per_sample=True`` every
    image of a batch gets its own box. On CPU each image is then cropped and
    resized exactly as without ``per_sample``, pixel for pixel, straight into one
    output (antialiased uint8 batches by a native kernel that runs torch's arithmetic
    on the whole batch without the GIL); on CUDA and under ``torch.compile`` all
    boxes are resampled in one ``grid_sample`` call (see
    :func:`~trivium.vision.transforms.functional.resized_crop_batched` for how
    antialiasing is approximated there).

    Example:
        >>> import torch
        >>> t = RandomResizedCrop(224, generator=torch.Generator().manual_seed(0))
        >>> t(torch.zeros(3, 480, 640, dtype=torch.uint8)).shape
        torch.Size([3, 224, 224])
    """

    _per_image_params = ("box",)
    # On CPU ``transform`` resizes image by image into one output: no chunks to copy.
    _cpu_chunk_values = None

    def __init__(
        self,
        size: int | Sequence[int],
        scale: Sequence[float] = (0.08, 1.0),
        ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
        antialias: bool | None = True,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        name = type(self).__name__
        self.size = parse_size(name, size)
        self.scale = _check_range(name, "scale", scale)
        self.ratio = _check_range(name, "ratio", ratio)
        self.interpolation = interpolation_mode(name, interpolation)
        self.antialias = bool(antialias)

    def get_params(self, height: int, width: int) -> tuple[int, int, int, int]:
        """Draw one box (top, left, height, width) for an image of ``height`` x ``width``.

        Uses this transform's generator, so the fused decode path and this
        transform pick the same box from the same generator state.

        Example:
            >>> import torch
            >>> t = RandomResizedCrop(8, generator=torch.Generator().manual_seed(0))
            >>> t.get_params(480, 640)
            (98, 42, 376, 439)
        """
        if height <= 0 or width <= 0:
            raise ValueError(
                f"{type(self).__name__}: image size must be positive, got {height}x{width}"
            )
        return random_resized_crop_box(
            height, width, self.scale, self.ratio, self.active_generator()
        )

    sample_box = get_params

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        check_image(type(self).__name__, img)
        height, width = img.shape[-2], img.shape[-1]
        if self._tensor_params():
            u = self._draw((self._num_draws(img), 10, 4), img.device)
            return {"box": random_resized_crop_boxes(u, height, width, self.scale, self.ratio)}
        return {"box": self.get_params(height, width)}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Crop and resize one image tensor with the drawn box."""
        check_image(type(self).__name__, inpt)
        top, left, h, w = params["box"]
        if isinstance(top, torch.Tensor):
            if eager_cpu(inpt):
                return _resized_crops_each(
                    inpt, top, left, h, w, self.size, self.interpolation, self.antialias
                )
            return resized_crop_batched(
                inpt, top, left, h, w, self.size, self.interpolation, self.antialias
            )
        box = inpt[..., top : top + h, left : left + w]
        return _resize_image(
            box, self.size[0], self.size[1], self.interpolation.value, self.antialias
        )

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes, masks (nearest) and a user's types: ``F.resized_crop`` of the drawn box."""
        top, left, h, w = (_scalar(v) for v in params["box"])
        return self._call_kernel(
            F.resized_crop, inpt, top, left, h, w, self.size, self.interpolation, self.antialias
        )


def _scalar(value: Any) -> Any:
    """A drawn parameter as a Python number (tensor params hold one value here)."""
    return value.item() if isinstance(value, torch.Tensor) else value


def _torchvision_padding(padding: list[int]) -> list[int]:
    """Padding [left, right, top, bottom] (torch's order) as [left, top, right, bottom]."""
    left, right, top, bottom = padding
    return [left, top, right, bottom]
