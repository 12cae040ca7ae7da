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
from collections.abc import Sequence
from typing import Any

import torch
from torch.nn.functional import grid_sample

from trivium.vision.transforms._image import bits_view, check_image
from trivium.vision.transforms.functional.conversion import _max_value
from trivium.vision.transforms.functional.geometry import (
    _check_fill_channels,
    interpolation_mode,
    parse_fill,
)
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = ["affine", "elastic", "perspective", "rotate"]

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


def affine(
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
        >>> out = affine(img, angle=90.0, translate=[0, 0], scale=1.0, shear=[0.0])
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


def rotate(
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
        >>> rotate(torch.arange(4.0).view(1, 2, 2), 90.0)
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


def perspective(
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
        >>> torch.allclose(perspective(img, corners, corners), img, atol=1e-5)
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


def elastic(
    img: torch.Tensor,
    displacement: torch.Tensor,
    interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    fill: float | Sequence[float] | None = None,
) -> torch.Tensor:
    """Move every pixel by ``displacement`` [1 or N, H, W, 2] (normalised units, as torchvision).

    Example:
        >>> import torch
        >>> img = torch.rand(3, 8, 8)
        >>> torch.allclose(elastic(img, torch.zeros(1, 8, 8, 2)), img, atol=1e-5)
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
