"""Warp kernels: ``affine``, ``rotate``, ``perspective``, ``elastic`` (torchvision v2 functional).

Each builds a sampling grid and calls ``grid_sample`` once for the whole batch.
Parameters are Python numbers (one warp for every image, torchvision's math), or
tensors with one row per image of the flattened batch (*batched*: every image
gets its own warp, still one ``grid_sample`` call, and no Python branch on the
values, so it also runs under ``torch.compile(fullgraph=True)``).

Example:
    >>> import torch
    >>> img = torch.rand(2, 3, 16, 16)
    >>> affine(img, angle=30.0, translate=[2, 0], scale=1.1, shear=[5.0, 0.0]).shape
    torch.Size([2, 3, 16, 16])
    >>> rotate(img, torch.tensor([10.0, -20.0])).shape  # one angle per image
    torch.Size([2, 3, 16, 16])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import torch
from torch.nn.functional import grid_sample

from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import _register_kernel_internal, get_kernel
from trivium.vision.transforms._image import bits_view, check_image
from trivium.vision.transforms.functional.conversion import _max_value
from trivium.vision.transforms.functional.geometry import (
    _check_fill_channels,
    _clamp,
    _convert,
    _parallelogram_to_rectangle,
    interpolation_mode,
    parse_fill,
)
from trivium.vision.transforms.interpolation import InterpolationMode
from trivium.vision.tv_tensors import BoundingBoxFormat

__all__ = [
    "affine",
    "affine_bounding_boxes",
    "affine_image",
    "affine_mask",
    "affine_video",
    "elastic",
    "elastic_bounding_boxes",
    "elastic_image",
    "elastic_mask",
    "elastic_transform",
    "elastic_video",
    "perspective",
    "perspective_bounding_boxes",
    "perspective_image",
    "perspective_mask",
    "perspective_video",
    "rotate",
    "rotate_bounding_boxes",
    "rotate_image",
    "rotate_mask",
    "rotate_video",
]

_GRID_MODES = ("nearest", "bilinear", "bicubic")


def _grid_mode(owner: str, interpolation: Any) -> str:
    mode = interpolation_mode(owner, interpolation).value
    if mode not in _GRID_MODES:
        raise ValueError(f"{owner}: interpolation must be one of {_GRID_MODES}, got {mode!r}")
    return mode


def _warp_args(
    owner: str, img: Any, interpolation: Any, fill: Any
) -> tuple[str, list[float] | None]:
    """Check the arguments every warp takes: the grid mode and the fill values of ``img``."""
    check_image(owner, img)
    mode = _grid_mode(owner, interpolation)
    fill_values = parse_fill(owner, fill)
    _check_fill_channels(owner, fill_values, img.shape[-3])
    return mode, fill_values


def _apply_grid(
    img: torch.Tensor, grid: torch.Tensor, mode: str, fill: list[float] | None
) -> torch.Tensor:
    """Sample ``img`` [..., C, H, W] at ``grid`` [1 or N, oh, ow, 2]; outside gets ``fill``."""
    shape = img.shape
    c, h, w = shape[-3], shape[-2], shape[-1]
    oh, ow = grid.shape[1], grid.shape[2]
    out_shape = (*shape[:-3], c, oh, ow)
    if img.numel() == 0:
        return img.new_empty(out_shape)
    x = img.reshape(-1, c, h, w)
    n = x.shape[0]
    float_img = x if x.is_floating_point() else x.to(grid.dtype)
    if float_img.dtype != grid.dtype:
        grid = grid.to(float_img.dtype)
    grid = grid.expand(n, oh, ow, 2)
    needs_mask = fill is not None and any(f != 0.0 for f in fill)
    if needs_mask:
        # One extra all-ones channel tells where the grid left the image (one grid_sample call).
        ones = torch.ones((n, 1, h, w), dtype=float_img.dtype, device=x.device)
        float_img = torch.cat((float_img, ones), dim=1)
    out = grid_sample(float_img, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if needs_mask:
        out, mask = out[:, :c], out[:, c:]
        color = torch.tensor(fill, dtype=out.dtype, device=out.device).view(1, -1, 1, 1)
        if mode == "nearest":
            out = torch.where(mask < 0.5, color.expand_as(out), out)
        else:
            out = out.sub_(color).mul_(mask).add_(color)
    if not x.is_floating_point():
        if mode == "bicubic":
            out = out.clamp_(0, _max_value(x.dtype))
        out = out.round_().to(x.dtype)
    return out.reshape(out_shape)


def _affine_grid(theta: torch.Tensor, w: int, h: int, ow: int, oh: int) -> torch.Tensor:
    """Grid [N, oh, ow, 2] for inverse matrices ``theta`` [N, 2, 3] in centred pixel units.

    ``grid[n, i, j] = m[n] @ (x_j, y_i, 1)``, as a sum of a row term and a column term
    broadcast into the grid: one pass over it (the [oh * ow, 3] @ [3, 2] matrix
    product torchvision uses took 4x longer than the nearest-neighbour sampling).
    """
    dtype, device = theta.dtype, theta.device
    xs = torch.linspace((1.0 - ow) * 0.5, (ow - 1.0) * 0.5, steps=ow, device=device, dtype=dtype)
    ys = torch.linspace((1.0 - oh) * 0.5, (oh - 1.0) * 0.5, steps=oh, device=device, dtype=dtype)
    scale = torch.tensor([0.5 * w, 0.5 * h], dtype=dtype, device=device)
    m = theta / scale.view(1, 2, 1)  # [N, 2, 3]
    along_x = m[:, :, 0].view(-1, 2, 1, 1) * xs.view(1, 1, 1, ow)
    along_y = (m[:, :, 1].view(-1, 2, 1, 1) * ys.view(1, 1, oh, 1)).add_(m[:, :, 2, None, None])
    # x and y planes, seen as [N, oh, ow, 2] (grid_sample reads either layout as fast).
    return (along_x + along_y).permute(0, 2, 3, 1)


def _rotation_shear(angle: float, shear: Sequence[float]) -> tuple[float, float, float, float]:
    """``[[a, b], [c, d]]``: torchvision's rotation times shear (degrees in), before the scale."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    a = math.cos(rot - sy) / math.cos(sy)
    b = -(a * math.tan(sx) + math.sin(rot))
    c = math.sin(rot - sy) / math.cos(sy)
    d = math.cos(rot) - c * math.tan(sx)
    return a, b, c, d


def inverse_affine_matrix(
    center: Sequence[float],
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: Sequence[float],
) -> list[float]:
    """torchvision's inverse affine matrix (6 floats, centred pixel units) for one warp.

    The forward map is ``T * C * R(angle) * S(scale) * Shear(shear) * C^-1``.

    Example:
        >>> [round(v, 6) + 0.0 for v in inverse_affine_matrix([0, 0], 0.0, [1, 2], 2.0, [0, 0])]
        [0.5, 0.0, -0.5, 0.0, 0.5, -1.0]
    """
    a, b, c, d = _rotation_shear(angle, shear)
    moved = (center[0] + translate[0], center[1] + translate[1])
    return _linear_about((d / scale, -b / scale, -c / scale, a / scale), moved, center)


def _linear_about(
    linear: Sequence[float], source: Sequence[float], target: Sequence[float]
) -> list[float]:
    """The affine map ``p -> linear @ (p - source) + target`` as 6 floats (rows of [2, 3]).

    ``linear`` is ``[[a, b], [c, d]]`` flattened.

    Example:
        >>> _linear_about([2.0, 0.0, 0.0, 2.0], [1.0, 1.0], [0.0, 5.0])
        [2.0, 0.0, -2.0, 0.0, 2.0, 3.0]
    """
    a, b, c, d = linear
    (sx, sy), (tx, ty) = source, target
    return [a, b, 0.0 + (tx - a * sx - b * sy), c, d, 0.0 + (ty - c * sx - d * sy)]


def inverse_affine_matrices(
    center: torch.Tensor,
    angle: torch.Tensor,
    translate: torch.Tensor,
    scale: torch.Tensor,
    shear: torch.Tensor,
) -> torch.Tensor:
    """*Batched* :func:`inverse_affine_matrix`: tensors [N] / [N, 2] in, [N, 2, 3] out.

    Example:
        >>> import torch
        >>> shift, scale = torch.tensor([[1.0, 2.0]]), torch.tensor([2.0])
        >>> zero = torch.zeros(1, 2)
        >>> m = inverse_affine_matrices(zero, torch.zeros(1), shift, scale, zero)
        >>> (m.view(-1) + 0.0).tolist()
        [0.5, 0.0, -0.5, 0.0, 0.5, -1.0]
    """
    rot = torch.deg2rad(angle)
    sx, sy = torch.deg2rad(shear[:, 0]), torch.deg2rad(shear[:, 1])
    cx, cy = center[:, 0], center[:, 1]
    cxt, cyt = cx + translate[:, 0], cy + translate[:, 1]
    a = torch.cos(rot - sy) / torch.cos(sy)
    b = -(a * torch.tan(sx) + torch.sin(rot))
    c = torch.sin(rot - sy) / torch.cos(sy)
    d = torch.cos(rot) - c * torch.tan(sx)
    m0, m1, m3, m4 = d / scale, -b / scale, -c / scale, a / scale
    m2 = cx - m0 * cxt - m1 * cyt
    m5 = cy - m3 * cxt - m4 * cyt
    return torch.stack((m0, m1, m2, m3, m4, m5), dim=-1).view(-1, 2, 3)


def _centre_offset(owner: str, center: Sequence[float] | None, w: int, h: int) -> list[float]:
    if center is None:
        return [0.0, 0.0]
    if not (isinstance(center, Sequence) and len(center) == 2):
        raise TypeError(f"{owner}: center must be a sequence of 2 numbers (x, y), got {center!r}")
    return [float(center[0]) - 0.5 * w, float(center[1]) - 0.5 * h]


def _pair(owner: str, name: str, value: Any) -> list[float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value), 0.0] if name == "shear" else [float(value), float(value)]
    if (
        isinstance(value, Sequence)
        and len(value) in (1, 2)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        vals = [float(v) for v in value]
        return vals * 2 if len(vals) == 1 else vals
    raise TypeError(
        f"{owner}: {name} must be a number or a sequence of 1 or 2 numbers, got {value!r}"
    )


def _column(
    value: Any, n: int, width: int, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """A parameter as a tensor [n] (width 1) or [n, 2], broadcasting numbers and sequences."""
    t = torch.as_tensor(value, dtype=dtype, device=device)
    if width == 1:
        return t.reshape(-1).expand(n)
    if t.ndim <= 1:
        t = t.reshape(1, -1).expand(1, 2) if t.numel() == 1 else t.reshape(1, 2)
    return t.expand(n, 2)


def _batch_size(img: torch.Tensor) -> int:
    n = 1
    for d in img.shape[:-3]:
        n *= d
    return n


def _affine_thetas(
    img: torch.Tensor,
    angle: float | torch.Tensor,
    translate: float | Sequence[float] | torch.Tensor,
    scale: float | torch.Tensor,
    shear: float | Sequence[float] | torch.Tensor,
    center: Sequence[float] | None,
) -> torch.Tensor:
    """Inverse matrices [N, 2, 3] of the batched ``affine`` of ``img`` (any number broadcasts).

    ``angle`` is clockwise, as in :func:`affine`; computed in the dtype the warp of
    ``img`` samples in.
    """
    h, w = img.shape[-2], img.shape[-1]
    center_f = _centre_offset("affine", center, w, h)
    dtype = img.dtype if img.is_floating_point() else torch.float32
    n, dev = _batch_size(img), img.device
    return inverse_affine_matrices(
        torch.tensor(center_f, dtype=dtype, device=dev).expand(n, 2),
        _column(angle, n, 1, dtype, dev),
        _column(translate, n, 2, dtype, dev),
        _column(scale, n, 1, dtype, dev),
        _column(shear, n, 2, dtype, dev),
    )


def _warp_affine(
    img: torch.Tensor, theta: torch.Tensor, mode: str, fill: list[float] | None
) -> torch.Tensor:
    """``img`` [..., C, H, W] warped by inverse matrices ``theta`` [1 or N, 2, 3] (same size)."""
    h, w = img.shape[-2], img.shape[-1]
    dtype = img.dtype if img.is_floating_point() else torch.float32
    return _apply_grid(img, _affine_grid(theta.to(dtype), w, h, w, h), mode, fill)


def affine_image(
    img: torch.Tensor,
    angle: float | torch.Tensor,
    translate: Sequence[float] | torch.Tensor,
    scale: float | torch.Tensor,
    shear: float | Sequence[float] | torch.Tensor,
    interpolation: InterpolationMode | str = InterpolationMode.NEAREST,
    fill: float | Sequence[float] | None = None,
    center: Sequence[float] | None = None,
) -> torch.Tensor:
    """Rotate by ``angle`` degrees clockwise, translate, scale and shear (as torchvision).

    Same geometry as torchvision (the centre, or ``center`` (x, y) in pixels, stays
    fixed). *Batched*: ``angle``/``scale`` as tensors [N] and ``translate``/``shear``
    as tensors [N, 2] warp each image of the flattened batch on its own. Pixels
    coming from outside the image get ``fill``.

    Example:
        >>> import torch
        >>> img = torch.zeros(1, 5, 5); img[0, 2, 3] = 1
        >>> out = affine_image(img, angle=90.0, translate=[0, 0], scale=1.0, shear=[0.0])
        >>> out[0].nonzero().tolist()  # (row 2, col 3) -> (row 3, col 2)
        [[3, 2]]
    """
    mode, fill_values = _warp_args("affine", img, interpolation, fill)
    h, w = img.shape[-2], img.shape[-1]
    center_f = _centre_offset("affine", center, w, h)
    dtype = img.dtype if img.is_floating_point() else torch.float32
    batched = any(isinstance(v, torch.Tensor) for v in (angle, translate, scale, shear))
    if batched:
        theta = _affine_thetas(img, angle, translate, scale, shear, center)
    else:
        if not isinstance(scale, (int, float)) or scale <= 0:
            raise ValueError(f"affine: scale must be a positive number, got {scale!r}")
        translate_f = _pair("affine", "translate", translate)
        shear_f = _pair("affine", "shear", shear)
        matrix = inverse_affine_matrix(center_f, float(angle), translate_f, float(scale), shear_f)
        theta = torch.tensor(matrix, dtype=dtype, device=img.device).view(1, 2, 3)
    return _apply_grid(img, _affine_grid(theta, w, h, w, h), mode, fill_values)


def _expanded_size(matrix: list[float], w: int, h: int) -> tuple[int, int]:
    """Output (w, h) that holds the whole rotated image (Pillow's rule, as torchvision)."""
    hw, hh = 0.5 * w, 0.5 * h
    xs, ys = [], []
    for px, py in ((-hw, -hh), (-hw, hh), (hw, hh), (hw, -hh)):
        xs.append(matrix[0] * px + matrix[1] * py + matrix[2] + hw)
        ys.append(matrix[3] * px + matrix[4] * py + matrix[5] + hh)

    def trunc(v: float) -> float:
        return math.trunc(v * 1e4) * 1e-4

    new_w = math.ceil(trunc(max(xs))) - math.floor(trunc(min(xs)))
    new_h = math.ceil(trunc(max(ys))) - math.floor(trunc(min(ys)))
    return int(new_w), int(new_h)


def rotate_image(
    img: torch.Tensor,
    angle: float | torch.Tensor,
    interpolation: InterpolationMode | str = InterpolationMode.NEAREST,
    expand: bool = False,
    center: Sequence[float] | None = None,
    fill: float | Sequence[float] | None = None,
) -> torch.Tensor:
    """Rotate by ``angle`` degrees counter-clockwise about the centre (or ``center`` (x, y)).

    ``expand=True`` enlarges the output to hold the whole rotated image.
    Multiples of 90 degrees are exact (``rot90``). *Batched*: ``angle`` as a tensor
    [N] rotates each image of the flattened batch on its own (not with ``expand``).

    Example:
        >>> import torch
        >>> rotate_image(torch.arange(4.0).view(1, 2, 2), 90.0)
        tensor([[[1., 3.],
                 [0., 2.]]])
    """
    mode, fill_values = _warp_args("rotate", img, interpolation, fill)
    h, w = img.shape[-2], img.shape[-1]
    center_f = _centre_offset("rotate", center, w, h)
    dtype = img.dtype if img.is_floating_point() else torch.float32
    if isinstance(angle, torch.Tensor):
        if expand:
            raise ValueError("rotate: expand=True needs one angle for the whole batch")
        theta = _affine_thetas(img, -angle, 0.0, 1.0, 0.0, center)
        return _apply_grid(img, _affine_grid(theta, w, h, w, h), mode, fill_values)
    angle = float(angle) % 360
    if center is None:
        if angle == 0:
            return img.clone()
        turns = {90.0: 1, 180.0: 2, 270.0: 3}.get(angle, 0)
        if turns == 2 or (turns and (expand or h == w)):
            return torch.rot90(bits_view(img), k=turns, dims=(-2, -1)).view(img.dtype)
    matrix = inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    ow, oh = _expanded_size(matrix, w, h) if expand else (w, h)
    theta = torch.tensor(matrix, dtype=dtype, device=img.device).view(1, 2, 3)
    return _apply_grid(img, _affine_grid(theta, w, h, ow, oh), mode, fill_values)


def perspective_coefficients(startpoints: torch.Tensor, endpoints: torch.Tensor) -> torch.Tensor:
    """*Batched* 8 coefficients [N, 8] mapping output pixels to input ones (Pillow's convention).

    ``startpoints`` / ``endpoints``: [N, 4, 2] (x, y) corners before / after the
    warp. Solved in float64.

    Example:
        >>> import torch
        >>> pts = torch.tensor([[[0.0, 0], [9, 0], [9, 9], [0, 9]]])
        >>> perspective_coefficients(pts, pts).round(decimals=6).tolist()
        [[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]
    """
    start = startpoints.to(torch.float64)
    end = endpoints.to(torch.float64)
    x, y = end[..., 0], end[..., 1]
    u, v = start[..., 0], start[..., 1]
    one, zero = torch.ones_like(x), torch.zeros_like(x)
    rows_u = torch.stack((x, y, one, zero, zero, zero, -u * x, -u * y), dim=-1)
    rows_v = torch.stack((zero, zero, zero, x, y, one, -v * x, -v * y), dim=-1)
    a = torch.stack((rows_u, rows_v), dim=2).reshape(-1, 8, 8)
    b = torch.stack((u, v), dim=2).reshape(-1, 8, 1)
    return torch.linalg.solve(a, b).squeeze(-1)


def _perspective_grid(coeffs: torch.Tensor, ow: int, oh: int) -> torch.Tensor:
    """Grid [N, oh, ow, 2] from coefficients [N, 8] (pixel centres at k + 0.5, as torchvision)."""
    dtype, device = coeffs.dtype, coeffs.device
    xs = torch.linspace(0.5, ow - 0.5, steps=ow, device=device, dtype=dtype).view(1, 1, ow)
    ys = torch.linspace(0.5, oh - 0.5, steps=oh, device=device, dtype=dtype).view(1, oh, 1)
    c = coeffs.view(-1, 8, 1, 1)
    den = c[:, 6] * xs + c[:, 7] * ys + 1.0
    gx = (c[:, 0] * xs + c[:, 1] * ys + c[:, 2]) / den / (0.5 * ow) - 1.0
    gy = (c[:, 3] * xs + c[:, 4] * ys + c[:, 5]) / den / (0.5 * oh) - 1.0
    return torch.stack((gx, gy), dim=1).permute(0, 2, 3, 1)  # planes: fast to write


def perspective_image(
    img: torch.Tensor,
    startpoints: Sequence[Sequence[int]] | torch.Tensor | None,
    endpoints: Sequence[Sequence[int]] | torch.Tensor | None,
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    fill: float | Sequence[float] | None = None,
    coefficients: Sequence[float] | torch.Tensor | None = None,
) -> torch.Tensor:
    """Perspective warp moving the 4 ``startpoints`` (x, y) corners to ``endpoints``.

    Or give the 8 ``coefficients`` directly. *Batched*: points as tensors
    [N, 4, 2] (or coefficients [N, 8]) warp each image of the flattened batch.

    Example:
        >>> import torch
        >>> img = torch.rand(3, 10, 10)
        >>> corners = [[0, 0], [9, 0], [9, 9], [0, 9]]
        >>> torch.allclose(perspective_image(img, corners, corners), img, atol=1e-5)
        True
    """
    mode, fill_values = _warp_args("perspective", img, interpolation, fill)
    dtype = img.dtype if img.is_floating_point() else torch.float32
    if coefficients is not None:
        if startpoints is not None or endpoints is not None:
            raise ValueError(
                "perspective: give startpoints and endpoints, or coefficients, not both"
            )
        coeffs = torch.as_tensor(coefficients, dtype=torch.float64, device=img.device).view(-1, 8)
    else:
        if startpoints is None or endpoints is None:
            raise ValueError("perspective: startpoints and endpoints are required")
        start = torch.as_tensor(startpoints, dtype=torch.float64, device=img.device).view(-1, 4, 2)
        end = torch.as_tensor(endpoints, dtype=torch.float64, device=img.device).view(-1, 4, 2)
        coeffs = perspective_coefficients(start, end)
    h, w = img.shape[-2], img.shape[-1]
    grid = _perspective_grid(coeffs.to(dtype), w, h)
    return _apply_grid(img, grid, mode, fill_values)


def elastic_image(
    img: torch.Tensor,
    displacement: torch.Tensor,
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    fill: float | Sequence[float] | None = None,
) -> torch.Tensor:
    """Move every pixel by ``displacement`` [1 or N, H, W, 2] (normalised units, as torchvision).

    Example:
        >>> import torch
        >>> img = torch.rand(3, 8, 8)
        >>> torch.allclose(elastic_image(img, torch.zeros(1, 8, 8, 2)), img, atol=1e-5)
        True
    """
    mode, fill_values = _warp_args("elastic", img, interpolation, fill)
    if not isinstance(displacement, torch.Tensor):
        raise TypeError(
            f"elastic: displacement must be a tensor, got {type(displacement).__name__}"
        )
    h, w = img.shape[-2], img.shape[-1]
    if displacement.ndim != 4 or tuple(displacement.shape[1:]) != (h, w, 2):
        raise ValueError(
            f"elastic: displacement must have shape [1 or N, {h}, {w}, 2], "
            f"got {tuple(displacement.shape)}"
        )
    dtype = img.dtype if img.is_floating_point() else torch.float32
    if dtype == torch.float16 and img.device.type == "cpu":
        dtype = torch.float32
    xs = torch.linspace((1.0 - w) / w, (w - 1.0) / w, w, device=img.device, dtype=dtype)
    ys = torch.linspace((1.0 - h) / h, (h - 1.0) / h, h, device=img.device, dtype=dtype)
    identity = torch.stack((xs.expand(h, w), ys.unsqueeze(-1).expand(h, w)))  # planes
    displacement = displacement.to(dtype=dtype, device=img.device).permute(0, 3, 1, 2)
    grid = (identity.unsqueeze(0) + displacement).permute(0, 2, 3, 1)
    if img.dtype != dtype and img.is_floating_point():
        return _apply_grid(img.to(dtype), grid, mode, fill_values).to(img.dtype)
    return _apply_grid(img, grid, mode, fill_values)


# Bounding boxes and masks: the warps of the image kernels applied to boxes and label maps
# (torchvision v2's box and mask kernels).

_AXIS_ALIGNED = ("XYXY", "XYWH", "CXCYWH")
_ROTATED = ("XYWHR", "CXCYWHR", "XYXYXYXY")
_CLAMPING_MODES = ("soft", "hard", None)

# Corners of an XYXY box, as (x index, y index) pairs: top-left, top-right,
# bottom-right, bottom-left (torchvision's order).
_CORNERS = [[0, 1], [2, 1], [2, 3], [0, 3]]


# Checks and format conversion.


def _format_name(owner: str, format: Any) -> str:
    """``format`` (a string or an enum member) as the name of a ``BoundingBoxFormat``."""
    name = getattr(format, "name", format)
    if isinstance(name, str) and name.upper() in (*_AXIS_ALIGNED, *_ROTATED):
        return name.upper()
    names = ", ".join((*_AXIS_ALIGNED, *_ROTATED))
    raise ValueError(f"{owner}: format must be one of {names}, got {format!r}")


def _check_boxes(
    owner: str, boxes: Any, canvas_size: Any, clamping_mode: Any, format: Any
) -> tuple[int, int]:
    if not isinstance(boxes, torch.Tensor):
        raise TypeError(f"{owner}: bounding_boxes must be a tensor, got {type(boxes).__name__}")
    name = _format_name(owner, format)
    size = 8 if name == "XYXYXYXY" else 5 if name in _ROTATED else 4
    if boxes.ndim == 0 or boxes.shape[-1] != size:
        raise ValueError(
            f"{owner}: {name} bounding_boxes must have shape [..., {size}], "
            f"got {tuple(boxes.shape)}"
        )
    if boxes.dtype == torch.bool or boxes.is_complex():
        raise TypeError(f"{owner}: bounding_boxes must be integer or floating, got {boxes.dtype}")
    if name in _ROTATED and not boxes.is_floating_point():
        raise TypeError(f"{owner}: rotated bounding_boxes must be floating, got {boxes.dtype}")
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
    size = _check_boxes(owner, bounding_boxes, canvas_size, clamping_mode, format)
    name = _format_name(owner, format)
    if bounding_boxes.numel() == 0:
        return bounding_boxes
    if name in _ROTATED:
        return _warp_rotated(bounding_boxes, BoundingBoxFormat[name], size, clamping_mode, move)
    dtype = bounding_boxes.dtype
    work = bounding_boxes if bounding_boxes.is_floating_point() else bounding_boxes.float()
    xyxy = _to_xyxy(work.reshape(-1, 4), name)
    corners = xyxy[:, _CORNERS].reshape(-1, 2)
    moved = move(corners).reshape(-1, 4, 2)
    lo, hi = torch.aminmax(moved, dim=1)
    out = _clamp_xyxy(torch.cat((lo, hi), dim=1), size, clamping_mode)
    return _from_xyxy(out, name).reshape(bounding_boxes.shape).to(dtype)


def _warp_rotated(
    boxes: torch.Tensor,
    fmt: BoundingBoxFormat,
    canvas_size: tuple[int, int],
    clamping_mode: str | None,
    move: Any,
    *,
    centres_only: bool = False,
) -> torch.Tensor:
    """Rotated boxes whose corners ``move`` maps (the rectangle of the moved parallelogram),
    or with ``centres_only`` whose centres it maps; clamped, in their format and dtype."""
    if centres_only:
        work = _convert(boxes.clone(), fmt, BoundingBoxFormat.CXCYWHR).reshape(-1, 5)
        out = torch.cat((move(work[:, :2]), work[:, 2:]), dim=1)
        inner = BoundingBoxFormat.CXCYWHR
    else:
        work = _convert(boxes.clone(), fmt, BoundingBoxFormat.XYXYXYXY).reshape(-1, 8)
        out = _parallelogram_to_rectangle(move(work.reshape(-1, 2)).reshape(-1, 8))
        inner = BoundingBoxFormat.XYXYXYXY
    out = _clamp(out, inner, canvas_size, clamping_mode)
    return _convert(out, inner, fmt).reshape(boxes.shape).to(boxes.dtype)


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


def _affine_move(
    owner: str,
    size: tuple[int, int],
    angle: Any,
    translate: Any,
    scale: Any,
    shear: Any,
    center: Any,
    expand: bool,
) -> tuple[Any, tuple[int, int]]:
    """The map of points ([K, 2] -> [K, 2]) under ``affine`` of a ``size`` canvas, and the
    canvas it lands on (the image kernel's with ``expand``)."""
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

    return move, out_size


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
    size = _check_boxes(owner, bounding_boxes, canvas_size, clamping_mode, format)
    move, out_size = _affine_move(owner, size, angle, translate, scale, shear, center, expand)
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
    or ``center`` (x, y). Each box becomes the smallest box holding its warped corners;
    a rotated box (``XYWHR``, ``CXCYWHR``, ``XYXYXYXY``) the rectangle on the longer
    diagonal of its warped corners (torchvision's rule), clamped by ``clamping_mode``.

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
    _check_boxes(owner, bounding_boxes, canvas_size, clamping_mode, format)
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
    displacement``, which holds while the displacement varies slowly; a rotated
    box moves its centre that way and keeps its size and angle.

    Example:
        >>> import torch
        >>> boxes = torch.tensor([[2.0, 2.0, 6.0, 6.0]])
        >>> elastic_bounding_boxes(boxes, "XYXY", (8, 8), torch.zeros(1, 8, 8, 2))
        tensor([[2., 2., 6., 6.]])
    """
    owner = "elastic_bounding_boxes"
    h, w = _check_boxes(owner, bounding_boxes, canvas_size, clamping_mode, format)
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

    if _format_name(owner, format) in _ROTATED and bounding_boxes.numel():
        # As torchvision: a rotated box's centre moves, its size and angle stay.
        fmt = BoundingBoxFormat[_format_name(owner, format)]
        return _warp_rotated(bounding_boxes, fmt, (h, w), clamping_mode, move, centres_only=True)
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
    out = affine_image(img, angle, translate, scale, shear, InterpolationMode.NEAREST, fill, center)
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
    out = rotate_image(img, angle, InterpolationMode.NEAREST, expand, center, fill)
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
    out = perspective_image(
        img, startpoints, endpoints, InterpolationMode.NEAREST, fill, coefficients
    )
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
    out = elastic_image(img, displacement, InterpolationMode.NEAREST, fill)
    return _mask_back(out, mask, squeeze)


# Boxes and masks as tv_tensors: the kernels above with their metadata.


def _box_meta(boxes: tv_tensors.BoundingBoxes) -> dict[str, Any]:
    return {
        "format": boxes.format,
        "canvas_size": boxes.canvas_size,
        "clamping_mode": boxes.clamping_mode,
    }


def _plain(inpt: torch.Tensor) -> torch.Tensor:
    return inpt.as_subclass(torch.Tensor)


def _affine_boxes_dispatch(
    inpt: tv_tensors.BoundingBoxes,
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: float | Sequence[float],
    center: Sequence[float] | None = None,
    **kwargs: Any,
) -> tv_tensors.BoundingBoxes:
    out = affine_bounding_boxes(
        _plain(inpt), angle=angle, translate=translate, scale=scale, shear=shear,
        center=center, **_box_meta(inpt),
    )  # fmt: skip
    return tv_tensors.wrap(out, like=inpt)


def _affine_mask_dispatch(
    inpt: torch.Tensor,
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: float | Sequence[float],
    fill: float | None = None,
    center: Sequence[float] | None = None,
    **kwargs: Any,
) -> torch.Tensor:
    return affine_mask(inpt, angle, translate, scale, shear, fill=fill, center=center)


def _rotate_boxes_dispatch(
    inpt: tv_tensors.BoundingBoxes,
    angle: float,
    expand: bool = False,
    center: Sequence[float] | None = None,
    **kwargs: Any,
) -> tv_tensors.BoundingBoxes:
    out, size = rotate_bounding_boxes(
        _plain(inpt), angle=angle, expand=expand, center=center, **_box_meta(inpt)
    )
    return tv_tensors.wrap(out, like=inpt, canvas_size=size)


def _rotate_mask_dispatch(
    inpt: torch.Tensor,
    angle: float,
    expand: bool = False,
    center: Sequence[float] | None = None,
    fill: float | None = None,
    **kwargs: Any,
) -> torch.Tensor:
    return rotate_mask(inpt, angle, expand, center, fill=fill)


def _perspective_boxes_dispatch(
    inpt: tv_tensors.BoundingBoxes,
    startpoints: Sequence[Sequence[float]] | None,
    endpoints: Sequence[Sequence[float]] | None,
    coefficients: Sequence[float] | None = None,
    **kwargs: Any,
) -> tv_tensors.BoundingBoxes:
    out = perspective_bounding_boxes(
        _plain(inpt), startpoints=startpoints, endpoints=endpoints, coefficients=coefficients,
        **_box_meta(inpt),
    )  # fmt: skip
    return tv_tensors.wrap(out, like=inpt)


def _perspective_mask_dispatch(
    inpt: torch.Tensor,
    startpoints: Sequence[Sequence[float]] | None,
    endpoints: Sequence[Sequence[float]] | None,
    fill: float | None = None,
    coefficients: Sequence[float] | None = None,
    **kwargs: Any,
) -> torch.Tensor:
    return perspective_mask(inpt, startpoints, endpoints, fill=fill, coefficients=coefficients)


def _elastic_boxes_dispatch(
    inpt: tv_tensors.BoundingBoxes, displacement: torch.Tensor, **kwargs: Any
) -> tv_tensors.BoundingBoxes:
    out = elastic_bounding_boxes(_plain(inpt), displacement=displacement, **_box_meta(inpt))
    return tv_tensors.wrap(out, like=inpt)


def _elastic_mask_dispatch(
    inpt: torch.Tensor, displacement: torch.Tensor, fill: float | None = None, **kwargs: Any
) -> torch.Tensor:
    return elastic_mask(inpt, displacement, fill=fill)


# The functionals: one per warp, dispatching on the type of the input.


def affine(
    inpt: torch.Tensor,
    angle: float | torch.Tensor,
    translate: Sequence[float] | torch.Tensor,
    scale: float | torch.Tensor,
    shear: float | Sequence[float] | torch.Tensor,
    interpolation: InterpolationMode | str = InterpolationMode.NEAREST,
    fill: float | Sequence[float] | None = None,
    center: Sequence[float] | None = None,
) -> torch.Tensor:
    """Affine warp: rotate ``angle`` degrees, translate, scale and shear about the center.

    Images and videos (see :func:`affine_image`), masks (nearest) and boxes (the
    smallest boxes holding their warped corners).

    Example:
        >>> import torch
        >>> affine(torch.zeros(1, 5, 5), 90.0, [0, 0], 1.0, [0.0]).shape
        torch.Size([1, 5, 5])
    """
    kernel = get_kernel(affine, type(inpt))
    return kernel(
        inpt, angle=angle, translate=translate, scale=scale, shear=shear,
        interpolation=interpolation, fill=fill, center=center,
    )  # fmt: skip


def rotate(
    inpt: torch.Tensor,
    angle: float | torch.Tensor,
    interpolation: InterpolationMode | str = InterpolationMode.NEAREST,
    expand: bool = False,
    center: Sequence[float] | None = None,
    fill: float | Sequence[float] | None = None,
) -> torch.Tensor:
    """Rotate ``angle`` degrees counter-clockwise (images, videos, masks, boxes).

    Example:
        >>> import torch
        >>> rotate(torch.arange(4.0).view(1, 2, 2), 90.0)
        tensor([[[1., 3.],
                 [0., 2.]]])
    """
    kernel = get_kernel(rotate, type(inpt))
    return kernel(
        inpt, angle=angle, interpolation=interpolation, expand=expand, center=center, fill=fill
    )


def perspective(
    inpt: torch.Tensor,
    startpoints: Sequence[Sequence[int]] | torch.Tensor | None,
    endpoints: Sequence[Sequence[int]] | torch.Tensor | None,
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    fill: float | Sequence[float] | None = None,
    coefficients: Sequence[float] | torch.Tensor | None = None,
) -> torch.Tensor:
    """Perspective warp moving the 4 ``startpoints`` to ``endpoints`` (or by ``coefficients``).

    Example:
        >>> import torch
        >>> corners = [[0, 0], [3, 0], [3, 3], [0, 3]]
        >>> perspective(torch.ones(1, 4, 4), corners, corners).shape
        torch.Size([1, 4, 4])
    """
    kernel = get_kernel(perspective, type(inpt))
    return kernel(
        inpt, startpoints=startpoints, endpoints=endpoints, interpolation=interpolation,
        fill=fill, coefficients=coefficients,
    )  # fmt: skip


def elastic(
    inpt: torch.Tensor,
    displacement: torch.Tensor,
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    fill: float | Sequence[float] | None = None,
) -> torch.Tensor:
    """Move every pixel by ``displacement`` [1 or N, H, W, 2] (images, videos, masks, boxes).

    Example:
        >>> import torch
        >>> elastic(torch.ones(1, 4, 4), torch.zeros(1, 4, 4, 2)).shape
        torch.Size([1, 4, 4])
    """
    kernel = get_kernel(elastic, type(inpt))
    return kernel(inpt, displacement=displacement, interpolation=interpolation, fill=fill)


# The video kernels are the image kernels: a video is a batch of images [..., T, C, H, W].
affine_video = affine_image
rotate_video = rotate_image
perspective_video = perspective_image
elastic_video = elastic_image


def _register_warp_kernels() -> None:
    warps = {
        affine: (affine_image, _affine_mask_dispatch, _affine_boxes_dispatch),
        rotate: (rotate_image, _rotate_mask_dispatch, _rotate_boxes_dispatch),
        perspective: (perspective_image, _perspective_mask_dispatch, _perspective_boxes_dispatch),
        elastic: (elastic_image, _elastic_mask_dispatch, _elastic_boxes_dispatch),
    }
    for functional, (image, mask, boxes) in warps.items():
        for input_type in (torch.Tensor, tv_tensors.Image, tv_tensors.Video):
            _register_kernel_internal(functional, input_type)(image)
        _register_kernel_internal(functional, tv_tensors.Mask)(mask)
        _register_kernel_internal(functional, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)(
            boxes
        )


_register_warp_kernels()

#: torchvision's other name of :func:`elastic`.
elastic_transform = elastic
