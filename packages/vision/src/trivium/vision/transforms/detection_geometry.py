"""Detection geometry: ``RandomZoomOut``, ``RandomIoUCrop``, random resizes (``ScaleJitter``...).

The SSD and detection-reference augmentations of ``torchvision.transforms.v2``, with
their arguments and draws: from the same seed of torch's global generator (no
``generator=``) they make the same choices as torchvision's. A sample is one image
(``[..., C, H, W]`` tensor, ``tv_tensors.Image`` or PIL image) with its
``BoundingBoxes`` and ``Mask`` (any nesting, e.g. ``(image, {"boxes": ..., "labels":
...})``); the boxes and masks move with the image, labels pass through. Masks are
resampled by nearest neighbour and padded with 0.

Example:
    >>> import torch
    >>> from trivium.vision import tv_tensors
    >>> boxes = tv_tensors.BoundingBoxes([[2, 2, 6, 6]], format="XYXY", canvas_size=(8, 8))
    >>> zoom = RandomZoomOut(side_range=(2.0, 2.0), p=1.0, generator=torch.Generator())
    >>> img, target = zoom(torch.zeros(3, 8, 8), {"boxes": boxes, "labels": [1]})
    >>> img.shape, target["boxes"].canvas_size
    (torch.Size([3, 16, 16]), (16, 16))
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from trivium.core.transform import check_probability
from trivium.vision import tv_tensors
from trivium.vision.transforms import functional as F
from trivium.vision.transforms._base import ImageTransform
from trivium.vision.transforms.functional.geometry import (
    _check_fill_channels,
    convert_bounding_box_format,
    crop_image,
    interpolation_mode,
    pad_image,
    parse_fill,
    resize_image,
)
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = ["RandomIoUCrop", "RandomResize", "RandomShortestSize", "RandomZoomOut", "ScaleJitter"]


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _plain(inpt: torch.Tensor) -> torch.Tensor:
    return inpt.as_subclass(torch.Tensor)


# RandomZoomOut.


def _fill_for(owner: str, fill: Any) -> tuple[list[float] | None, float]:
    """(image fill, mask fill) from a number, a sequence, or torchvision's dict by type.

    A dict is keyed by ``tv_tensors.Image`` (the image, whatever its type),
    ``tv_tensors.Mask`` and ``"others"``. Without a dict, masks get 0.
    """
    if not isinstance(fill, Mapping):
        return parse_fill(owner, fill), 0.0
    others = fill.get("others", 0)
    image_fill = parse_fill(owner, fill.get(tv_tensors.Image, others))
    mask_fill = parse_fill(owner, fill.get(tv_tensors.Mask, others))
    if mask_fill is not None and len(mask_fill) != 1:
        raise ValueError(f"{owner}: the fill of masks must be one number, got {mask_fill}")
    return image_fill, 0.0 if mask_fill is None else mask_fill[0]


class RandomZoomOut(ImageTransform):
    """With probability ``p``, place the image on a canvas ``r`` times its size (SSD's zoom out).

    ``r`` is drawn from ``side_range`` (``side_range[0] >= 1``) and the image's place
    on the canvas at random; the rest is ``fill`` (a number, one per channel, or
    torchvision's dict ``{tv_tensors.Image: ..., tv_tensors.Mask: ..., "others":
    ...}``; masks get 0 unless the dict names them). Boxes move with the image.

    Example:
        >>> import torch
        >>> t = RandomZoomOut(fill=(124, 116, 104), side_range=(1.0, 2.0), p=1.0,
        ...                   generator=torch.Generator().manual_seed(0))
        >>> out = t(torch.zeros(3, 10, 10, dtype=torch.uint8))
        >>> out.shape[-2] >= 10 and out.shape[-2] == out.shape[-1]
        True
    """

    def __init__(
        self,
        fill: Any = 0,
        side_range: Sequence[float] = (1.0, 4.0),
        p: float = 0.5,
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator=generator)
        name = type(self).__name__
        self.fill = fill
        self._image_fill, self._mask_fill = _fill_for(name, fill)
        if not (
            isinstance(side_range, Sequence)
            and len(side_range) == 2
            and all(_is_number(s) for s in side_range)
        ):
            raise TypeError(
                f"{name}: side_range must be a sequence of 2 numbers, got {side_range!r}"
            )
        if side_range[0] < 1.0 or side_range[0] > side_range[1]:
            raise ValueError(
                f"{name}: side_range must satisfy 1 <= side_range[0] <= side_range[1], "
                f"got {tuple(side_range)}"
            )
        self.side_range = [float(s) for s in side_range]
        self.p = check_probability(name, p)

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        h, w = inputs[0].shape[-2], inputs[0].shape[-1]
        if float(self._rand((1,))) >= self.p:
            return {"padding": None}
        lo, hi = self.side_range
        # float32 tensor arithmetic, as torchvision's (the same sizes from the same draws).
        r = lo + self._rand((1,)) * (hi - lo)
        canvas_w, canvas_h = int(w * r), int(h * r)
        r = self._rand((2,))
        left = int((canvas_w - w) * r[0])
        top = int((canvas_h - h) * r[1])
        return {"padding": [left, top, canvas_w - (left + w), canvas_h - (top + h)]}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Pad one image tensor onto the drawn canvas (or return it when not applied)."""
        if params["padding"] is None:
            return inpt
        _check_fill_channels(type(self).__name__, self._image_fill, inpt.shape[-3])
        return pad_image(inpt, params["padding"], self._image_fill)

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes, masks (the mask fill) and a user's types: ``F.pad`` onto the canvas."""
        if not self._has_kernel(F.pad, inpt) or params["padding"] is None:
            return inpt
        fill = self._mask_fill if isinstance(inpt, tv_tensors.Mask) else None
        return F.pad(inpt, params["padding"], fill)


# RandomIoUCrop.

# Crops tried before a sample is left as it is (torchvision keeps drawing, for ever when
# nothing can satisfy the options). Options that no crop can meet by the bound of
# _best_iou_bound are not tried at all.
_MAX_TRIALS = 10_000


def _box_iou(boxes: torch.Tensor, box: list[int]) -> torch.Tensor:
    """IoU of XYXY ``boxes`` [N, 4] with one XYXY ``box`` (as ``torchvision.ops.box_iou``)."""
    dtype = boxes.dtype if boxes.is_floating_point() else torch.float32
    boxes = boxes.to(dtype)
    other = torch.tensor(box, dtype=dtype, device=boxes.device)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    other_area = (other[2] - other[0]) * (other[3] - other[1])
    lt = torch.maximum(boxes[:, :2], other[:2])
    rb = torch.minimum(boxes[:, 2:], other[2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, 0] * wh[:, 1]
    return inter / (area + other_area - inter)


def _best_iou_bound(xyxy: torch.Tensor, h: int, w: int, scales: tuple[float, float]) -> float:
    """An upper bound on the IoU any crop can reach with a box centred in the image.

    A crop has between ``int(w * lo) * int(h * lo)`` and ``int(w * hi) * int(h * hi)``
    pixels, and ``IoU(a, b) <= min(area a, area b) / max(area a, area b)``.
    """
    cx = 0.5 * (xyxy[..., 0] + xyxy[..., 2])
    cy = 0.5 * (xyxy[..., 1] + xyxy[..., 3])
    centred = (cx > 0) & (cx < w) & (cy > 0) & (cy < h)
    if not bool(centred.any()):
        return -1.0  # no crop can hold a box centre: not even IoU >= 0
    lo, hi = scales
    least = max(1, int(w * lo) * int(h * lo))
    most = max(least, int(w * hi) * int(h * hi))
    areas = ((xyxy[..., 2] - xyxy[..., 0]) * (xyxy[..., 3] - xyxy[..., 1]))[centred].double()
    bound = torch.minimum(areas / least, most / areas).clamp(max=1.0)
    return float(bound.nan_to_num(0.0).max())


class RandomIoUCrop(ImageTransform):
    """SSD's random crop: a crop where some box keeps at least a drawn IoU with it.

    Each call draws a minimal IoU from ``sampler_options`` (default ``[0.0, 0.1,
    0.3, 0.5, 0.7, 0.9, 1.0]``; a value >= 1 leaves the sample as it is), then up
    to ``trials`` crops of ``min_scale``..``max_scale`` of each side with an aspect
    ratio in ``min_aspect_ratio``..``max_aspect_ratio``; the first crop holding the
    centre of some box, whose boxes with centres inside have IoU >= the drawn value
    with the crop (at least one of them), is taken; otherwise another value is
    drawn. Boxes whose centre falls outside the crop become ``[0, 0, 0, 0]``
    (degenerate): follow with ``SanitizeBoundingBoxes`` to drop them and their
    labels. The sample must hold ``BoundingBoxes``. Where torchvision would keep
    drawing for ever (no crop can meet any option below 1), and after 10 000 crops
    tried in vain, the sample is left as it is.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([[4, 4, 20, 20]], format="XYXY", canvas_size=(32, 32))
        >>> t = RandomIoUCrop(generator=torch.Generator().manual_seed(0))
        >>> img, target = t(torch.zeros(3, 32, 32), {"boxes": boxes})
        >>> tuple(img.shape[-2:]) == target["boxes"].canvas_size
        True
    """

    def __init__(
        self,
        min_scale: float = 0.3,
        max_scale: float = 1.0,
        min_aspect_ratio: float = 0.5,
        max_aspect_ratio: float = 2.0,
        sampler_options: Sequence[float] | None = None,
        trials: int = 40,
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator=generator)
        name = type(self).__name__
        for arg, value in (
            ("min_scale", min_scale),
            ("max_scale", max_scale),
            ("min_aspect_ratio", min_aspect_ratio),
            ("max_aspect_ratio", max_aspect_ratio),
        ):
            if not _is_number(value) or value <= 0:
                raise ValueError(f"{name}: {arg} must be a positive number, got {value!r}")
        if min_scale > max_scale or min_aspect_ratio > max_aspect_ratio:
            raise ValueError(
                f"{name}: min_scale <= max_scale and min_aspect_ratio <= max_aspect_ratio "
                f"are required, got scales ({min_scale}, {max_scale}) and aspect ratios "
                f"({min_aspect_ratio}, {max_aspect_ratio})"
            )
        if sampler_options is None:
            sampler_options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]
        if not (
            isinstance(sampler_options, Sequence)
            and len(sampler_options) > 0
            and all(_is_number(o) for o in sampler_options)
        ):
            raise TypeError(
                f"{name}: sampler_options must be a non-empty sequence of numbers, "
                f"got {sampler_options!r}"
            )
        if not isinstance(trials, int) or isinstance(trials, bool) or trials < 1:
            raise ValueError(f"{name}: trials must be a positive int, got {trials!r}")
        self.min_scale, self.max_scale = float(min_scale), float(max_scale)
        self.min_aspect_ratio, self.max_aspect_ratio = (
            float(min_aspect_ratio),
            float(max_aspect_ratio),
        )
        self.options = [float(o) for o in sampler_options]
        self.trials = trials

    def make_sample_params(self, images: list[torch.Tensor], sample: list[Any]) -> dict[str, Any]:
        """Draw the crop for the sample's first ``BoundingBoxes`` (see the class docstring).

        Example:
            >>> import torch
            >>> RandomIoUCrop()(torch.zeros(3, 8, 8))
            Traceback (most recent call last):
            ...
            TypeError: RandomIoUCrop needs a sample with an image and tv_tensors.BoundingBoxes ...
        """
        boxes = [x for x in sample if isinstance(x, tv_tensors.BoundingBoxes)]
        if not boxes:
            raise TypeError(
                f"{type(self).__name__} needs a sample with an image and tv_tensors.BoundingBoxes "
                f"(e.g. (image, {{'boxes': boxes, 'labels': labels}})), got "
                f"{', '.join(type(x).__name__ for x in sample)}"
            )
        return self._draw_crop(images[0].shape[-2], images[0].shape[-1], boxes[0])

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        """The images alone hold no boxes: a clear error (see :meth:`make_sample_params`)."""
        return self.make_sample_params(inputs, inputs)

    def _draw_crop(self, h: int, w: int, boxes: tv_tensors.BoundingBoxes) -> dict[str, Any]:
        """The crop's parameters for an ``h`` x ``w`` image holding ``boxes``, or ``{}``."""
        if boxes.canvas_size != (h, w):
            raise ValueError(
                f"{type(self).__name__}: the boxes' canvas_size {boxes.canvas_size} is not the "
                f"image size {(h, w)}"
            )
        xyxy = convert_bounding_box_format(
            _plain(boxes), old_format=boxes.format, new_format=tv_tensors.BoundingBoxFormat.XYXY
        )
        bound = _best_iou_bound(xyxy, h, w, (self.min_scale, self.max_scale))
        if all(option < 1.0 and option > bound for option in self.options):
            return {}  # no option can be met (torchvision loops for ever): leave the sample
        cx = 0.5 * (xyxy[..., 0] + xyxy[..., 2])
        cy = 0.5 * (xyxy[..., 1] + xyxy[..., 3])
        for _ in range(-(-_MAX_TRIALS // self.trials)):
            option = self.options[int(self._randint(0, len(self.options), (1,)))]
            if option >= 1.0:
                return {}
            crop_box = self._try_crops(h, w, xyxy, cx, cy, option)
            if crop_box is not None:
                return crop_box
        return {}

    def _try_crops(
        self,
        h: int,
        w: int,
        xyxy: torch.Tensor,
        cx: torch.Tensor,
        cy: torch.Tensor,
        min_iou: float,
    ) -> dict[str, Any] | None:
        """Up to ``trials`` crops for one minimal IoU: the first that fits, or None."""
        for _ in range(self.trials):
            r = self.min_scale + (self.max_scale - self.min_scale) * self._rand((2,))
            new_w, new_h = int(w * r[0]), int(h * r[1])
            if new_h == 0 or not (self.min_aspect_ratio <= new_w / new_h <= self.max_aspect_ratio):
                continue
            r = self._rand((2,))
            left, top = int((w - new_w) * r[0]), int((h - new_h) * r[1])
            right, bottom = left + new_w, top + new_h
            if left == right or top == bottom:
                continue
            inside = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
            if not inside.any():
                continue
            if _box_iou(xyxy[inside], [left, top, right, bottom]).max() < min_iou:
                continue
            return {
                "top": top,
                "left": left,
                "height": new_h,
                "width": new_w,
                "is_within_crop_area": inside,
            }
        return None

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Crop one image tensor (or return it when the draw left the sample as is)."""
        if not params:
            return inpt
        return crop_image(inpt, params["top"], params["left"], params["height"], params["width"])

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes (those outside the crop made degenerate), masks, a user's types: ``F.crop``."""
        if not self._has_kernel(F.crop, inpt) or not params:
            return inpt
        out = F.crop(inpt, params["top"], params["left"], params["height"], params["width"])
        if not isinstance(out, tv_tensors.BoundingBoxes):
            return out
        plain = out.as_subclass(torch.Tensor).clone()
        if plain.shape[:-1] == params["is_within_crop_area"].shape:
            # Degenerate boxes: SanitizeBoundingBoxes drops them.
            plain[~params["is_within_crop_area"]] = 0
        return tv_tensors.wrap(plain, like=out)


# RandomShortestSize.


class _RandomSize(ImageTransform):
    """Resize the sample (images, boxes, masks) to a size drawn by ``make_params``."""

    def __init__(
        self,
        interpolation: InterpolationMode | str,
        antialias: bool | None,
        generator: torch.Generator | None,
    ) -> None:
        super().__init__(generator=generator)
        self.interpolation = interpolation_mode(type(self).__name__, interpolation)
        self.antialias = antialias

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Resize one image tensor to the drawn size."""
        return resize_image(inpt, params["size"], self.interpolation, antialias=self.antialias)

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes, masks (nearest) and a user's types: ``F.resize`` to the drawn size."""
        return self._call_kernel(
            F.resize, inpt, params["size"], self.interpolation, antialias=self.antialias
        )


class RandomShortestSize(_RandomSize):
    """Resize so the shorter side is one of ``min_size`` (drawn), the longer at most ``max_size``.

    As torchvision's: the scale is ``min_size / shorter side``, lowered to
    ``max_size / longer side`` if that is smaller; both sides are scaled and
    truncated. Boxes and masks (nearest) follow.

    Example:
        >>> import torch
        >>> t = RandomShortestSize([16, 20], max_size=30, generator=torch.Generator())
        >>> t(torch.zeros(3, 10, 20)).shape  # either size would take the long side past 30
        torch.Size([3, 15, 30])
    """

    def __init__(
        self,
        min_size: int | Sequence[int],
        max_size: int | None = None,
        interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
        antialias: bool | None = True,
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation, antialias, generator)
        name = type(self).__name__
        sizes = [min_size] if isinstance(min_size, int) else min_size
        if not (
            isinstance(sizes, Sequence)
            and len(sizes) > 0
            and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes)
        ):
            raise ValueError(
                f"{name}: min_size must be a positive int or a non-empty sequence of them, "
                f"got {min_size!r}"
            )
        if max_size is not None and (
            not isinstance(max_size, int) or isinstance(max_size, bool) or max_size <= 0
        ):
            raise ValueError(f"{name}: max_size must be None or a positive int, got {max_size!r}")
        self.min_size = list(sizes)
        self.max_size = max_size

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        h, w = inputs[0].shape[-2], inputs[0].shape[-1]
        min_size = self.min_size[int(self._randint(0, len(self.min_size), ()))]
        r = min_size / min(h, w)
        if self.max_size is not None:
            r = min(r, self.max_size / max(h, w))
        return {"size": [int(h * r), int(w * r)]}


class ScaleJitter(_RandomSize):
    """Large scale jitter (Simple Copy-Paste): resize by a random factor of a target size.

    As torchvision's: ``r = min(target_size[1] / height, target_size[0] / width)``
    times a scale drawn uniformly from ``scale_range``; both sides are scaled by
    ``r`` and truncated. Boxes and masks (nearest) follow.

    Example:
        >>> import torch
        >>> t = ScaleJitter((32, 32), scale_range=(0.5, 0.5))
        >>> t(torch.zeros(3, 16, 8)).shape
        torch.Size([3, 16, 8])
    """

    def __init__(
        self,
        target_size: tuple[int, int],
        scale_range: tuple[float, float] = (0.1, 2.0),
        interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
        antialias: bool | None = True,
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation, antialias, generator)
        name = type(self).__name__
        if not (
            isinstance(target_size, Sequence)
            and len(target_size) == 2
            and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in target_size)
        ):
            raise ValueError(f"{name}: target_size must be two positive ints, got {target_size!r}")
        if not (
            isinstance(scale_range, Sequence)
            and len(scale_range) == 2
            and all(_is_number(s) for s in scale_range)
            and 0 < scale_range[0] <= scale_range[1]
        ):
            raise ValueError(
                f"{name}: scale_range must be (min, max) with 0 < min <= max, got {scale_range!r}"
            )
        self.target_size = (target_size[0], target_size[1])
        self.scale_range = (float(scale_range[0]), float(scale_range[1]))

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        h, w = inputs[0].shape[-2], inputs[0].shape[-1]
        low, high = self.scale_range
        # A float32 tensor, as torchvision's: the sizes are truncated from the same values.
        scale = low + self._rand((1,)) * (high - low)
        r = min(self.target_size[1] / h, self.target_size[0] / w) * scale
        return {"size": [int(h * r), int(w * r)]}


class RandomResize(_RandomSize):
    """Resize so the shorter side is an int drawn from ``[min_size, max_size)``.

    As torchvision's (``F.resize(inpt, [size])``: the aspect ratio is kept). Boxes
    and masks (nearest) follow.

    Example:
        >>> import torch
        >>> RandomResize(8, 9)(torch.zeros(3, 16, 32)).shape
        torch.Size([3, 8, 16])
    """

    def __init__(
        self,
        min_size: int,
        max_size: int,
        interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
        antialias: bool | None = True,
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation, antialias, generator)
        sizes = (min_size, max_size)
        if not all(isinstance(s, int) and not isinstance(s, bool) for s in sizes) or not (
            0 < min_size < max_size
        ):
            raise ValueError(
                f"{type(self).__name__}: min_size and max_size must be ints with "
                f"0 < min_size < max_size, got {min_size!r} and {max_size!r}"
            )
        self.min_size = min_size
        self.max_size = max_size

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        return {"size": [int(self._randint(self.min_size, self.max_size, ()))]}
