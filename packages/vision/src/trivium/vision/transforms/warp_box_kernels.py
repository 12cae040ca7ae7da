"""Box and mask kernels of the warps, as ``torchvision.transforms.v2.functional``.

Boxes: ``affine_bounding_boxes``, ``rotate_bounding_boxes`` (with ``expand``: it
also returns the new canvas size), ``perspective_bounding_boxes`` and
``elastic_bounding_boxes`` take a tensor ``[..., 4]`` in ``format`` (``"XYXY"``,
``"XYWH"``, ``"CXCYWH"`` or a :class:`BoundingBoxFormat`) on a canvas
``(height, width)``. Each moves the four corners of every box and returns the
smallest axis-aligned box holding them, clamped to the canvas (``clamping_mode``
``"soft"`` or ``"hard"``, the same for axis-aligned boxes; ``None``: no clamp).
Integer boxes are computed in float32 and cast back (truncated), as torchvision.

Masks: ``affine_mask``, ``rotate_mask``, ``perspective_mask``, ``elastic_mask``
warp masks ``[..., H, W]`` (any integer, bool or float dtype) by nearest
neighbour, the image kernels' grids; pixels from outside get ``fill`` (0 by default).

Example:
    >>> import torch
    >>> boxes = torch.tensor([[10.0, 10.0, 20.0, 30.0]])
    >>> affine_bounding_boxes(boxes, "XYXY", (40, 40), 0.0, [5, -5], 1.0, [0.0, 0.0])
    tensor([[15.,  5., 25., 25.]])
    >>> rotate_bounding_boxes(boxes, "XYXY", (40, 60), 90.0, expand=True)[1]
    (60, 40)
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import torch

from trivium.vision.transforms.functional.warp import (
    _expanded_size,
    _linear_about,
    _rotation_shear,
    affine,
    elastic,
    inverse_affine_matrix,
    perspective,
    perspective_coefficients,
    rotate,
)
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = [
    "affine_bounding_boxes",
    "affine_mask",
    "elastic_bounding_boxes",
    "elastic_mask",
    "perspective_bounding_boxes",
    "perspective_mask",
    "rotate_bounding_boxes",
    "rotate_mask",
]

_AXIS_ALIGNED = ("XYXY", "XYWH", "CXCYWH")
_ROTATED = ("XYWHR", "CXCYWHR", "XYXYXYXY")
_CLAMPING_MODES = ("soft", "hard", None)

# Corners of an XYXY box, as (x index, y index) pairs: top-left, top-right,
# bottom-right, bottom-left (torchvision's order).
_CORNERS = [[0, 1], [2, 1], [2, 3], [0, 3]]


# Checks and format conversion.


def _format_name(owner: str, format: Any) -> str:
    """``format`` (a string or an enum member) as one of ``XYXY``, ``XYWH``, ``CXCYWH``."""
    name = getattr(format, "name", format)
    if isinstance(name, str) and name.upper() in _AXIS_ALIGNED:
        return name.upper()
    if isinstance(name, str) and name.upper() in _ROTATED:
        raise ValueError(f"{owner}: rotated box format {name} is not supported")
    raise ValueError(f"{owner}: format must be one of {', '.join(_AXIS_ALIGNED)}, got {format!r}")


def _check_boxes(owner: str, boxes: Any, canvas_size: Any, clamping_mode: Any) -> tuple[int, int]:
    if not isinstance(boxes, torch.Tensor):
        raise TypeError(f"{owner}: bounding_boxes must be a tensor, got {type(boxes).__name__}")
    if boxes.ndim == 0 or boxes.shape[-1] != 4:
        raise ValueError(
            f"{owner}: bounding_boxes must have shape [..., 4], got {tuple(boxes.shape)}"
        )
    if boxes.dtype == torch.bool or boxes.is_complex():
        raise TypeError(f"{owner}: bounding_boxes must be integer or floating, got {boxes.dtype}")
    if clamping_mode not in _CLAMPING_MODES:
        raise ValueError(
            f"{owner}: clamping_mode must be 'soft', 'hard' or None, got {clamping_mode!r}"
        )
    if not (
        isinstance(canvas_size, Sequence)
        and len(canvas_size) == 2
        and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in canvas_size)
    ):
        raise ValueError(
            f"{owner}: canvas_size must be (height, width), two positive ints, got {canvas_size!r}"
        )
    return int(canvas_size[0]), int(canvas_size[1])


def _to_xyxy(boxes: torch.Tensor, name: str) -> torch.Tensor:
    """Floating boxes [M, 4] in format ``name`` as a new XYXY tensor."""
    if name == "XYXY":
        return boxes.clone()
    a, b, c, d = boxes.unbind(-1)
    if name == "XYWH":
        return torch.stack((a, b, a + c, b + d), dim=-1)
    return torch.stack((a - c / 2, b - d / 2, a + c / 2, b + d / 2), dim=-1)


def _from_xyxy(boxes: torch.Tensor, name: str) -> torch.Tensor:
    """Floating XYXY boxes [M, 4] in format ``name``."""
    if name == "XYXY":
        return boxes
    x1, y1, x2, y2 = boxes.unbind(-1)
    if name == "XYWH":
        return torch.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)
    return torch.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)


def _clamp_xyxy(
    boxes: torch.Tensor, canvas_size: tuple[int, int], clamping_mode: str | None
) -> torch.Tensor:
    if clamping_mode is None:
        return boxes
    boxes[:, 0::2].clamp_(min=0, max=canvas_size[1])
    boxes[:, 1::2].clamp_(min=0, max=canvas_size[0])
    return boxes


def _warp_boxes(
    owner: str,
    bounding_boxes: torch.Tensor,
    format: Any,
    canvas_size: Any,
    clamping_mode: str | None,
    move: Any,
) -> torch.Tensor:
    """Boxes whose corners ``move`` maps ([K, 2] float -> [K, 2]), bounded, clamped, cast back.

    ``move`` may return ``(points, canvas_size)`` to shift the boxes onto a new canvas.
    """
    size = _check_boxes(owner, bounding_boxes, canvas_size, clamping_mode)
    name = _format_name(owner, format)
    if bounding_boxes.numel() == 0:
        return bounding_boxes
    dtype = bounding_boxes.dtype
    work = bounding_boxes if bounding_boxes.is_floating_point() else bounding_boxes.float()
    xyxy = _to_xyxy(work.reshape(-1, 4), name)
    corners = xyxy[:, _CORNERS].reshape(-1, 2)
    moved = move(corners).reshape(-1, 4, 2)
    lo, hi = torch.aminmax(moved, dim=1)
    out = _clamp_xyxy(torch.cat((lo, hi), dim=1), size, clamping_mode)
    return _from_xyxy(out, name).reshape(bounding_boxes.shape).to(dtype)


# Affine and rotation.


def _forward_affine_matrix(
    center: Sequence[float],
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: Sequence[float],
) -> list[float]:
    """torchvision's forward affine map ``T * C * RSS * C^-1`` (6 floats, pixel coordinates)."""
    a, b, c, d = _rotation_shear(angle, shear)
    moved = (center[0] + translate[0], center[1] + translate[1])
    return _linear_about((a * scale, b * scale, c * scale, d * scale), center, moved)


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _affine_args(
    owner: str, angle: Any, translate: Any, scale: Any, shear: Any, center: Any
) -> tuple[float, list[float], float, list[float], list[float] | None]:
    """torchvision's argument rules: a number ``shear`` is ``[shear, 0]``; one value is both."""
    if not _is_number(angle):
        raise TypeError(f"{owner}: angle must be a number, got {angle!r}")
    if not (isinstance(translate, Sequence) and len(translate) == 2):
        raise ValueError(f"{owner}: translate must be a sequence of 2 numbers, got {translate!r}")
    if not _is_number(scale) or scale <= 0:
        raise ValueError(f"{owner}: scale must be a positive number, got {scale!r}")
    if _is_number(shear):
        shear = [shear, 0.0]
    if not (isinstance(shear, Sequence) and len(shear) in (1, 2)):
        raise ValueError(f"{owner}: shear must be a number or a sequence of 1 or 2, got {shear!r}")
    shear = [shear[0], shear[0]] if len(shear) == 1 else shear
    if center is not None and not (isinstance(center, Sequence) and len(center) == 2):
        raise TypeError(f"{owner}: center must be None or a sequence (x, y), got {center!r}")
    return (
        float(angle),
        [float(t) for t in translate],
        float(scale),
        [float(s) for s in shear],
        None if center is None else [float(c) for c in center],
    )


def _affine_with_expand(
    owner: str,
    bounding_boxes: torch.Tensor,
    format: Any,
    canvas_size: Any,
    angle: Any,
    translate: Any,
    scale: Any,
    shear: Any,
    center: Any,
    expand: bool,
    clamping_mode: str | None,
) -> tuple[torch.Tensor, tuple[int, int]]:
    size = _check_boxes(owner, bounding_boxes, canvas_size, clamping_mode)
    angle, translate, scale, shear, center = _affine_args(
        owner, angle, translate, scale, shear, center
    )
    height, width = size
    pivot = [width * 0.5, height * 0.5] if center is None else center
    matrix = _forward_affine_matrix(pivot, angle, translate, scale, shear)
    out_size = size
    shift = [0.0, 0.0]
    if expand:
        # The canvas and placement of the image kernel: its size (whole pixels), and the
        # input's centre at the output's centre. torchvision's box kernel sizes the canvas
        # from a matrix about another origin and shifts by the exact extent of the warped
        # frame, which puts its boxes off the rotated image (and its canvas off its size).
        centred = [pivot[0] - width * 0.5, pivot[1] - height * 0.5]
        if center is None and angle % 90 == 0 and (translate, scale, shear) == ([0, 0], 1, [0, 0]):
            quarter_turns = int(angle // 90) % 2  # rotate's exact rot90 path
            new_w, new_h = (height, width) if quarter_turns else (width, height)
        else:
            inverse = inverse_affine_matrix(centred, angle, translate, scale, shear)
            new_w, new_h = _expanded_size(inverse, width, height)
        out_size = (new_h, new_w)
        shift = [(width - new_w) * 0.5, (height - new_h) * 0.5]

    def move(points: torch.Tensor) -> torch.Tensor:
        m = torch.tensor(matrix, dtype=points.dtype, device=points.device).view(2, 3)
        moved = points @ m[:, :2].T + m[:, 2]
        if expand:
            moved = moved - torch.tensor(shift, dtype=points.dtype, device=points.device)
        return moved

    boxes = _warp_boxes(owner, bounding_boxes, format, out_size, clamping_mode, move)
    return boxes, out_size


def affine_bounding_boxes(
    bounding_boxes: torch.Tensor,
    format: Any,
    canvas_size: tuple[int, int],
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: float | Sequence[float],
    center: Sequence[float] | None = None,
    clamping_mode: str | None = "soft",
) -> torch.Tensor:
    """Boxes after :func:`~trivium.vision.transforms.functional.affine` of their canvas.

    ``angle`` clockwise in degrees, ``translate`` in pixels, about the canvas centre
    or ``center`` (x, y). Each box becomes the smallest box holding its warped corners.

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0]])
        >>> affine_bounding_boxes(boxes, "XYXY", (20, 20), 0.0, [0, 0], 0.5, [0.0, 0.0])
        tensor([[ 5.,  5., 10., 10.]])
    """
    boxes, _ = _affine_with_expand(
        "affine_bounding_boxes",
        bounding_boxes,
        format,
        canvas_size,
        angle,
        translate,
        scale,
        shear,
        center,
        False,
        clamping_mode,
    )
    return boxes


def rotate_bounding_boxes(
    bounding_boxes: torch.Tensor,
    format: Any,
    canvas_size: tuple[int, int],
    angle: float,
    expand: bool = False,
    center: Sequence[float] | None = None,
    clamping_mode: str | None = "soft",
) -> tuple[torch.Tensor, tuple[int, int]]:
    """Boxes after :func:`~trivium.vision.transforms.functional.rotate`, and the canvas size.

    ``angle`` counter-clockwise in degrees. With ``expand=True`` the canvas grows to
    hold the whole rotated image (the size ``rotate`` gives) and the boxes move onto it
    where ``rotate`` puts their pixels (torchvision's box kernel sizes and places them
    by another rule: up to a pixel off its rotated image, more with ``center``).

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[0.0, 0.0, 4.0, 2.0]])
        >>> out, size = rotate_bounding_boxes(boxes, "XYXY", (10, 20), 90.0, expand=True)
        >>> out.round(decimals=4) + 0.0, size
        (tensor([[ 0., 16.,  2., 20.]]), (20, 10))
    """
    return _affine_with_expand(
        "rotate_bounding_boxes",
        bounding_boxes,
        format,
        canvas_size,
        -angle if _is_number(angle) else angle,
        [0.0, 0.0],
        1.0,
        [0.0, 0.0],
        center,
        bool(expand),
        clamping_mode,
    )


# Perspective.


def _perspective_coeffs(
    owner: str, startpoints: Any, endpoints: Any, coefficients: Any
) -> list[float]:
    if coefficients is not None:
        if startpoints is not None or endpoints is not None:
            raise ValueError(f"{owner}: give startpoints and endpoints, or coefficients, not both")
        values = torch.as_tensor(coefficients, dtype=torch.float64).reshape(-1).tolist()
        if len(values) != 8:
            raise ValueError(f"{owner}: coefficients must hold 8 numbers, got {len(values)}")
        return values
    if startpoints is None or endpoints is None:
        raise ValueError(f"{owner}: startpoints and endpoints are required without coefficients")
    start = torch.as_tensor(startpoints, dtype=torch.float64).reshape(1, 4, 2)
    end = torch.as_tensor(endpoints, dtype=torch.float64).reshape(1, 4, 2)
    return perspective_coefficients(start, end)[0].tolist()


def _inverse_perspective(owner: str, c: list[float]) -> list[float]:
    """Coefficients of the map input -> output from those of output -> input (torchvision's)."""
    denom = c[0] * c[4] - c[1] * c[3]
    if denom == 0:
        raise ValueError(f"{owner}: the perspective coefficients {c} cannot be inverted")
    return [
        (c[4] - c[5] * c[7]) / denom,
        (-c[1] + c[2] * c[7]) / denom,
        (c[1] * c[5] - c[2] * c[4]) / denom,
        (-c[3] + c[5] * c[6]) / denom,
        (c[0] - c[2] * c[6]) / denom,
        (-c[0] * c[5] + c[2] * c[3]) / denom,
        (-c[4] * c[6] + c[3] * c[7]) / denom,
        (-c[0] * c[7] + c[1] * c[6]) / denom,
    ]


def perspective_bounding_boxes(
    bounding_boxes: torch.Tensor,
    format: Any,
    canvas_size: tuple[int, int],
    startpoints: Sequence[Sequence[float]] | None,
    endpoints: Sequence[Sequence[float]] | None,
    coefficients: Sequence[float] | None = None,
    clamping_mode: str | None = "soft",
) -> torch.Tensor:
    """Boxes after :func:`~trivium.vision.transforms.functional.perspective` of their canvas.

    Example:
        >>> import torch
        >>> corners = [[0, 0], [9, 0], [9, 9], [0, 9]]
        >>> boxes = torch.tensor([[2.0, 2.0, 6.0, 6.0]])
        >>> perspective_bounding_boxes(boxes, "XYXY", (10, 10), corners, corners)
        tensor([[2., 2., 6., 6.]])
    """
    owner = "perspective_bounding_boxes"
    _check_boxes(owner, bounding_boxes, canvas_size, clamping_mode)
    inv = _inverse_perspective(
        owner, _perspective_coeffs(owner, startpoints, endpoints, coefficients)
    )

    def move(points: torch.Tensor) -> torch.Tensor:
        m = torch.tensor([*inv, 1.0], dtype=points.dtype, device=points.device).view(3, 3)
        homogeneous = points @ m[:, :2].T + m[:, 2]
        return homogeneous[:, :2] / homogeneous[:, 2:]

    return _warp_boxes(owner, bounding_boxes, format, canvas_size, clamping_mode, move)


# Elastic.


def _identity_grid(h: int, w: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """[1, h, w, 2] normalised pixel centres (the grid ``elastic`` adds the displacement to)."""
    xs = torch.linspace((1.0 - w) / w, (w - 1.0) / w, w, device=device, dtype=dtype)
    ys = torch.linspace((1.0 - h) / h, (h - 1.0) / h, h, device=device, dtype=dtype)
    return torch.stack((xs.expand(h, w), ys.unsqueeze(-1).expand(h, w)), dim=-1).unsqueeze(0)


def elastic_bounding_boxes(
    bounding_boxes: torch.Tensor,
    format: Any,
    canvas_size: tuple[int, int],
    displacement: torch.Tensor,
    clamping_mode: str | None = "soft",
) -> torch.Tensor:
    """Boxes after :func:`~trivium.vision.transforms.functional.elastic` (approximate).

    As torchvision: each corner (rounded up to a pixel) moves by minus the
    displacement found there, i.e. the grid is inverted as ``identity -
    displacement``, which holds while the displacement varies slowly.

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[2.0, 2.0, 6.0, 6.0]])
        >>> elastic_bounding_boxes(boxes, "XYXY", (8, 8), torch.zeros(1, 8, 8, 2))
        tensor([[2., 2., 6., 6.]])
    """
    owner = "elastic_bounding_boxes"
    h, w = _check_boxes(owner, bounding_boxes, canvas_size, clamping_mode)
    if not isinstance(displacement, torch.Tensor):
        raise TypeError(
            f"{owner}: displacement must be a tensor, got {type(displacement).__name__}"
        )
    if tuple(displacement.shape) != (1, h, w, 2):
        raise ValueError(
            f"{owner}: displacement must have shape (1, {h}, {w}, 2) for canvas_size "
            f"{(h, w)}, got {tuple(displacement.shape)}"
        )

    def move(points: torch.Tensor) -> torch.Tensor:
        field = displacement.to(dtype=points.dtype, device=points.device)
        inverse = _identity_grid(h, w, points.dtype, points.device) - field
        index = points.ceil().long()
        ix, iy = index[:, 0].clamp(0, w - 1), index[:, 1].clamp(0, h - 1)
        size = torch.tensor([w, h], dtype=points.dtype, device=points.device)
        return (inverse[0, iy, ix] + 1) * (0.5 * size) - 0.5

    return _warp_boxes(owner, bounding_boxes, format, canvas_size, clamping_mode, move)


# Masks: nearest-neighbour warps through the image kernels.


def _mask_as_image(owner: str, mask: Any) -> tuple[torch.Tensor, bool]:
    """``mask`` as a uint8 or floating ``[..., C, H, W]`` tensor, and whether a dim was added."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{owner}: mask must be a tensor, got {type(mask).__name__}")
    if mask.ndim < 2:
        raise ValueError(f"{owner}: mask must have shape [..., H, W], got {tuple(mask.shape)}")
    squeeze = mask.ndim < 3
    img = mask.unsqueeze(0) if squeeze else mask
    if img.dtype == torch.bool:
        img = img.to(torch.uint8)
    elif not (img.dtype == torch.uint8 or img.is_floating_point()):
        # Labels sampled exactly: float32 as torchvision while they fit, float64 beyond.
        exact = img.numel() == 0 or int(img.abs().max()) < 2**24
        img = img.to(torch.float32 if exact else torch.float64)
    return img, squeeze


def _mask_back(out: torch.Tensor, mask: torch.Tensor, squeeze: bool) -> torch.Tensor:
    out = out.squeeze(0) if squeeze else out
    return out if out.dtype == mask.dtype else out.round().to(mask.dtype)


def affine_mask(
    mask: torch.Tensor,
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: float | Sequence[float],
    fill: float | None = None,
    center: Sequence[float] | None = None,
) -> torch.Tensor:
    """``mask`` [..., H, W] warped as :func:`affine_bounding_boxes` warps boxes (nearest).

    Example:
        >>> import torch
        >>> m = torch.zeros(5, 5, dtype=torch.int64); m[2, 3] = 7
        >>> affine_mask(m, 90.0, [0, 0], 1.0, [0.0]).nonzero().tolist()
        [[3, 2]]
    """
    img, squeeze = _mask_as_image("affine_mask", mask)
    out = affine(img, angle, translate, scale, shear, InterpolationMode.NEAREST, fill, center)
    return _mask_back(out, mask, squeeze)


def rotate_mask(
    mask: torch.Tensor,
    angle: float,
    expand: bool = False,
    center: Sequence[float] | None = None,
    fill: float | None = None,
) -> torch.Tensor:
    """``mask`` [..., H, W] rotated ``angle`` degrees counter-clockwise (nearest).

    Example:
        >>> import torch
        >>> rotate_mask(torch.tensor([[1, 2], [3, 4]]), 90.0)
        tensor([[2, 4],
                [1, 3]])
    """
    img, squeeze = _mask_as_image("rotate_mask", mask)
    out = rotate(img, angle, InterpolationMode.NEAREST, expand, center, fill)
    return _mask_back(out, mask, squeeze)


def perspective_mask(
    mask: torch.Tensor,
    startpoints: Sequence[Sequence[float]] | None,
    endpoints: Sequence[Sequence[float]] | None,
    fill: float | None = None,
    coefficients: Sequence[float] | None = None,
) -> torch.Tensor:
    """``mask`` [..., H, W] warped moving ``startpoints`` to ``endpoints`` (nearest).

    Example:
        >>> import torch
        >>> corners = [[0, 0], [3, 0], [3, 3], [0, 3]]
        >>> m = torch.arange(16).view(4, 4)
        >>> bool((perspective_mask(m, corners, corners) == m).all())
        True
    """
    img, squeeze = _mask_as_image("perspective_mask", mask)
    out = perspective(img, startpoints, endpoints, InterpolationMode.NEAREST, fill, coefficients)
    return _mask_back(out, mask, squeeze)


def elastic_mask(
    mask: torch.Tensor,
    displacement: torch.Tensor,
    fill: float | None = None,
) -> torch.Tensor:
    """``mask`` [..., H, W] moved by ``displacement`` [1 or N, H, W, 2] (nearest).

    Example:
        >>> import torch
        >>> m = torch.arange(16).view(4, 4)
        >>> bool((elastic_mask(m, torch.zeros(1, 4, 4, 2)) == m).all())
        True
    """
    img, squeeze = _mask_as_image("elastic_mask", mask)
    out = elastic(img, displacement, InterpolationMode.NEAREST, fill)
    return _mask_back(out, mask, squeeze)
