"""The corpora's outline distances against polygons of the same shapes (matplotlib's Path)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from matplotlib.path import Path

from trivium.vision.corpora import shapes as corpus_shapes


def _regular(radii: list[float], start: float) -> list[tuple[float, float]]:
    step = 2 * math.pi / len(radii)
    return [
        (r * math.cos(start + k * step), r * math.sin(start + k * step))
        for k, r in enumerate(radii)
    ]


def _cross(arm: float, half: float) -> list[tuple[float, float]]:
    return [
        (arm, half), (half, half), (half, arm), (-half, arm), (-half, half), (-arm, half),
        (-arm, -half), (-half, -half), (-half, -arm), (half, -arm), (half, -half), (arm, -half),
    ]  # fmt: skip


# shape -> (distance at (u, v), the same shape as a polygon)
CASES = {
    "circle": (lambda u, v: corpus_shapes.circle(u, v, 1.0), _regular([1.0] * 720, 0.0)),
    "square": (
        lambda u, v: corpus_shapes.square(u, v, 0.6),
        [(0.6, 0.6), (-0.6, 0.6), (-0.6, -0.6), (0.6, -0.6)],
    ),
    # apothem 0.5: vertices at radius 1, one of them pointing to -v
    "triangle": (
        lambda u, v: corpus_shapes.triangle(u, v, 0.5),
        _regular([1.0] * 3, -math.pi / 2),
    ),
    "star": (lambda u, v: corpus_shapes.star(u, v, 1.0, 0.45), _regular([1.0, 0.45] * 5, 0.0)),
    "cross": (lambda u, v: corpus_shapes.cross(u, v, 0.9, 0.25), _cross(0.9, 0.25)),
}


@pytest.mark.parametrize("shape", sorted(CASES))
def test_inside_is_where_the_polygon_is(shape: str) -> None:
    distance, polygon = CASES[shape]
    axis = np.linspace(-1.2, 1.2, 121)
    u, v = (a.ravel() for a in np.meshgrid(axis, axis))
    d = distance(torch.from_numpy(u), torch.from_numpy(v)).numpy()
    inside = Path(polygon).contains_points(np.stack([u, v], axis=1))
    clear = np.abs(d) > 0.02  # the polygon's vertices sit on the outline
    assert clear.sum() > 10_000
    np.testing.assert_array_equal(d[clear] > 0, inside[clear])


def test_distance_is_in_pixels_near_the_edge() -> None:
    u = torch.tensor([0.0, 3.0, 5.5, 0.0])
    v = torch.tensor([0.0, 4.0, 0.0, -7.0])
    np.testing.assert_allclose(corpus_shapes.circle(u, v, 5.0), [5.0, 0.0, -0.5, -2.0])
    np.testing.assert_allclose(corpus_shapes.square(u, v, 5.0), [5.0, 1.0, -0.5, -2.0])
    # the cross's arm ends 1 pixel beyond (0, -7) on the v axis, its side 2 pixels from it
    np.testing.assert_allclose(corpus_shapes.cross(u, v, 8.0, 2.0)[3], 1.0)
