"""Signed distances to the outlines both embedded corpora draw (positive inside).

Each function takes pixel offsets ``u``, ``v`` from the shape's centre and the
shape's own measures in pixels; a corpus chooses those measures from its radius.
The distance is exact near the edge, which is all the antialiasing needs.

Example:
    >>> import torch
    >>> u, v = torch.tensor([0.0, 3.0]), torch.tensor([0.0, 4.0])
    >>> circle(u, v, 5.0).tolist()
    [5.0, 0.0]
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["circle", "cross", "square", "star", "triangle"]


def circle(u: Tensor, v: Tensor, radius: float) -> Tensor:
    """Distance to a circle of ``radius``.

    Example:
        >>> import torch
        >>> circle(torch.tensor([1.0]), torch.tensor([0.0]), 2.0).tolist()
        [1.0]
    """
    return radius - torch.sqrt(u * u + v * v)


def square(u: Tensor, v: Tensor, half: float) -> Tensor:
    """Distance to an axis-aligned square of half side ``half``.

    Example:
        >>> import torch
        >>> square(torch.tensor([1.0]), torch.tensor([-3.0]), 2.0).tolist()
        [-1.0]
    """
    return half - torch.maximum(u.abs(), v.abs())


def triangle(u: Tensor, v: Tensor, apothem: float) -> Tensor:
    """Distance to an equilateral triangle whose edges lie ``apothem`` from the centre.

    The edges face away from the vertices, one vertex pointing to ``-v``.

    Example:
        >>> import torch
        >>> triangle(torch.tensor([0.0]), torch.tensor([0.0]), 2.0).tolist()
        [2.0]
    """
    normals = (math.pi / 2, 7 * math.pi / 6, 11 * math.pi / 6)
    edges = [u * math.cos(a) + v * math.sin(a) for a in normals]
    return apothem - torch.stack(edges).amax(0)


def star(u: Tensor, v: Tensor, outer: float, inner: float) -> Tensor:
    """Distance to a five-pointed star: points at ``outer``, inner corners at ``inner``.

    Every point is folded into the half-sector of the point at angle 0, whose edge
    runs from ``(outer, 0)`` to the inner corner at angle ``pi / 5``.

    Example:
        >>> import torch
        >>> star(torch.tensor([4.0]), torch.tensor([0.0]), 4.0, 2.0).tolist()
        [0.0]
    """
    half = math.pi / 5
    phi = torch.remainder(torch.atan2(v, u), 2 * half)
    phi = torch.minimum(phi, 2 * half - phi)
    rho = torch.sqrt(u * u + v * v)
    qx, qy = rho * torch.cos(phi), rho * torch.sin(phi)
    nx, ny = inner * math.sin(half), outer - inner * math.cos(half)
    return (nx * outer - nx * qx - ny * qy) / math.hypot(nx, ny)


def cross(u: Tensor, v: Tensor, arm: float, half_width: float) -> Tensor:
    """Distance to a plus sign: arms reaching ``arm`` from the centre, ``2 * half_width`` wide.

    Example:
        >>> import torch
        >>> cross(torch.tensor([0.0]), torch.tensor([3.0]), 4.0, 1.0).tolist()
        [1.0]
    """
    across = torch.minimum(arm - u.abs(), half_width - v.abs())
    down = torch.minimum(half_width - u.abs(), arm - v.abs())
    return torch.maximum(across, down)
