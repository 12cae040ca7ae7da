"""Bounding-box kernels: the geometry of the image transforms applied to boxes.

The names, arguments and results of ``torchvision.transforms.v2.functional``'s box
kernels: each takes the boxes as a plain tensor ``[..., 4]`` with their ``format``
(and ``canvas_size``, the image's (height, width), where it matters) and returns
the moved boxes, with the new canvas size where it changes. Integer boxes stay
integer (results truncated, as torchvision). ``convert_bounding_box_format`` and
``clamp_bounding_boxes`` also take a ``tv_tensors.BoundingBoxes`` and return one.

Example:
    >>> import torch
    >>> boxes = torch.tensor([[10.0, 20.0, 30.0, 60.0]])
    >>> horizontal_flip_bounding_boxes(boxes, "XYXY", canvas_size=(100, 200)).tolist()
    [[170.0, 20.0, 190.0, 60.0]]
    >>> out, canvas = resize_bounding_boxes(boxes, canvas_size=(100, 200), size=[50, 100])
    >>> out.tolist(), canvas
    ([[5.0, 10.0, 15.0, 30.0]], (50, 100))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from trivium.vision import tv_tensors
from trivium.vision.transforms.functional.geometry import compute_resized_output_size
from trivium.vision.tv_tensors import BoundingBoxFormat, _as_format

__all__ = [
    "center_crop_bounding_boxes",
    "clamp_bounding_boxes",
    "convert_bounding_box_format",
    "crop_bounding_boxes",
    "horizontal_flip_bounding_boxes",
    "pad_bounding_boxes",
    "resize_bounding_boxes",
    "resized_crop_bounding_boxes",
    "vertical_flip_bounding_boxes",
]

Format = BoundingBoxFormat | str
_XYXY, _XYWH, _CXCYWH = BoundingBoxFormat.XYXY, BoundingBoxFormat.XYWH, BoundingBoxFormat.CXCYWH
_CLAMPING_MODES = ("soft", "hard", None)


def _is_plain(inpt: Any) -> bool:
    return isinstance(inpt, torch.Tensor) and not isinstance(inpt, tv_tensors.TVTensor)


def _check_boxes(owner: str, boxes: Any) -> None:
    if not isinstance(boxes, torch.Tensor):
        raise TypeError(f"{owner}: expected boxes as a tensor, got {type(boxes).__name__}")
    if boxes.ndim == 0 or boxes.shape[-1] != 4:
        raise ValueError(f"{owner}: expected boxes [..., 4], got shape {tuple(boxes.shape)}")


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


def _convert(boxes: torch.Tensor, old: BoundingBoxFormat, new: BoundingBoxFormat) -> torch.Tensor:
    """``boxes`` (a copy the caller owns) from ``old`` to ``new`` format."""
    if old == new:
        return boxes
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
    _check_boxes(name, inpt)
    if not _is_plain(inpt):
        raise TypeError(f"{name}: expected a plain tensor or BoundingBoxes, got {type(inpt)}")
    if old_format is None:
        raise ValueError(f"{name}: old_format is needed for a plain tensor")
    return _convert(inpt if inplace else inpt.clone(), _as_format(old_format), new)


def _clamp(
    boxes: torch.Tensor,
    format: BoundingBoxFormat,
    canvas_size: tuple[int, int],
    clamping_mode: str | None,
) -> torch.Tensor:
    # "soft" and "hard" are the same for axis-aligned boxes; None leaves them as they are.
    if clamping_mode is None:
        return boxes.clone()
    dtype = boxes.dtype
    xyxy = _convert(boxes.clone() if boxes.is_floating_point() else boxes.float(), format, _XYXY)
    xyxy[..., 0::2].clamp_(min=0, max=canvas_size[1])
    xyxy[..., 1::2].clamp_(min=0, max=canvas_size[0])
    return _convert(xyxy, _XYXY, format).to(dtype)


def clamp_bounding_boxes(
    inpt: torch.Tensor,
    format: Format | None = None,
    canvas_size: tuple[int, int] | None = None,
    clamping_mode: str | None = "auto",
) -> torch.Tensor:
    """Clamp boxes to their canvas (``format``/``canvas_size`` only for a plain tensor).

    ``clamping_mode``: "soft" or "hard" clamp, None leaves the boxes unchanged,
    "auto" (BoundingBoxes only) takes the boxes' own mode.

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
    _check_boxes(name, inpt)
    if not _is_plain(inpt):
        raise TypeError(f"{name}: expected a plain tensor or BoundingBoxes, got {type(inpt)}")
    if format is None or canvas_size is None or clamping_mode == "auto":
        raise ValueError(f"{name}: a plain tensor needs format, canvas_size and clamping_mode")
    return _clamp(inpt, _as_format(format), tuple(canvas_size), clamping_mode)


# Flips.


def _flip(boxes: torch.Tensor, fmt: BoundingBoxFormat, axis: int, extent: int) -> torch.Tensor:
    # Mirror coordinate `axis` (0: x, 1: y) on [0, extent]: columns axis and axis + 2.
    lo, hi = axis, axis + 2
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
    _check_boxes("horizontal_flip_bounding_boxes", bounding_boxes)
    return _flip(bounding_boxes, _as_format(format), 0, canvas_size[1])


def vertical_flip_bounding_boxes(
    bounding_boxes: torch.Tensor, format: Format, canvas_size: tuple[int, int]
) -> torch.Tensor:
    """Boxes mirrored top-bottom on a canvas of ``canvas_size`` (height, width).

    Example:
        >>> import torch
        >>> vertical_flip_bounding_boxes(torch.tensor([[0, 0, 2, 3]]), "XYXY", (4, 10)).tolist()
        [[0, 1, 2, 4]]
    """
    _check_boxes("vertical_flip_bounding_boxes", bounding_boxes)
    return _flip(bounding_boxes, _as_format(format), 1, canvas_size[0])


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
    were inside, so ``clamping_mode`` changes nothing here (kept for torchvision's
    signature).

    Example:
        >>> import torch
        >>> out, canvas = resize_bounding_boxes(torch.tensor([[4, 4, 8, 8]]), (16, 32), 8)
        >>> out.tolist(), canvas
        ([[2, 2, 4, 4]], (8, 16))
    """
    _check_boxes("resize_bounding_boxes", bounding_boxes)
    _as_format(format)
    old_h, old_w = canvas_size
    new_h, new_w = compute_resized_output_size(old_h, old_w, _size_list(size), max_size)
    if (new_h, new_w) == (old_h, old_w):
        return bounding_boxes, (old_h, old_w)
    ratios = torch.tensor([new_w / old_w, new_h / old_h] * 2, device=bounding_boxes.device)
    return bounding_boxes.mul(ratios).to(bounding_boxes.dtype), (new_h, new_w)


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
    """``boxes`` moved by (dx, dy): both corners in XYXY, the first point otherwise."""
    shift = [dx, dy, dx, dy] if format == _XYXY else [dx, dy, 0, 0]
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
    _check_boxes("crop_bounding_boxes", bounding_boxes)
    fmt = _as_format(format)
    moved = _shift(bounding_boxes, fmt, -int(left), -int(top))
    canvas = (int(height), int(width))
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
    _check_boxes("pad_bounding_boxes", bounding_boxes)
    if padding_mode != "constant":
        raise ValueError(
            f"pad_bounding_boxes: padding_mode {padding_mode!r} is not supported with boxes "
            f"(only 'constant')"
        )
    fmt = _as_format(format)
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
