"""Key point kernels: every geometry functional applied to ``tv_tensors.KeyPoints``.

The names, arguments and results of ``torchvision.transforms.v2.functional``'s key
point kernels: each takes the points as a plain tensor ``[..., 2]`` (x, y) with the
``canvas_size`` (height, width) where it matters, and returns the moved points (with
the new canvas size where it changes). Points are not clamped: ``clamp_keypoints``
and ``sanitize_keypoints`` do that. The end of the module registers them with the
functionals (``F.resize(keypoints, ...)``), which is all a new tensor type needs.

Example:
    >>> import torch
    >>> from trivium.vision import tv_tensors
    >>> from trivium.vision.transforms import functional as F
    >>> points = tv_tensors.KeyPoints([[1.0, 2.0]], canvas_size=(10, 20))
    >>> F.horizontal_flip(points).tolist()
    [[18.0, 2.0]]
    >>> F.resize(points, [20, 40]).canvas_size
    (20, 40)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import _register_kernel_internal
from trivium.vision.transforms.functional import geometry as G
from trivium.vision.transforms.functional import warp as W

__all__ = [
    "affine_keypoints",
    "center_crop_keypoints",
    "clamp_keypoints",
    "crop_keypoints",
    "elastic_keypoints",
    "horizontal_flip_keypoints",
    "pad_keypoints",
    "perspective_keypoints",
    "resize_keypoints",
    "resized_crop_keypoints",
    "rotate_keypoints",
    "sanitize_keypoints",
    "vertical_flip_keypoints",
]

Canvas = tuple[int, int]


def _check_points(owner: str, keypoints: Any) -> None:
    if not isinstance(keypoints, torch.Tensor):
        raise TypeError(f"{owner}: keypoints must be a tensor, got {type(keypoints).__name__}")
    if keypoints.ndim == 0 or keypoints.shape[-1] != 2:
        raise ValueError(f"{owner}: expected keypoints [..., 2], got {tuple(keypoints.shape)}")


def _shifted(keypoints: torch.Tensor, dx: float, dy: float) -> torch.Tensor:
    return keypoints + torch.tensor([dx, dy], dtype=keypoints.dtype, device=keypoints.device)


def _moved(keypoints: torch.Tensor, move: Any) -> torch.Tensor:
    """``move`` ([K, 2] float -> [K, 2]) applied to every point, back in the points' dtype."""
    if keypoints.numel() == 0:
        return keypoints
    work = keypoints if keypoints.is_floating_point() else keypoints.float()
    return move(work.reshape(-1, 2)).reshape(keypoints.shape).to(keypoints.dtype)


def horizontal_flip_keypoints(keypoints: torch.Tensor, canvas_size: Canvas) -> torch.Tensor:
    """Points mirrored left-right: ``x -> width - 1 - x`` (torchvision's pixel convention).

    Example:
        >>> import torch
        >>> horizontal_flip_keypoints(torch.tensor([[0, 5]]), (10, 20)).tolist()
        [[19, 5]]
    """
    _check_points("horizontal_flip_keypoints", keypoints)
    out = keypoints.clone()
    out[..., 0] = (canvas_size[1] - 1) - keypoints[..., 0]
    return out


def vertical_flip_keypoints(keypoints: torch.Tensor, canvas_size: Canvas) -> torch.Tensor:
    """Points mirrored top-bottom: ``y -> height - 1 - y``.

    Example:
        >>> import torch
        >>> vertical_flip_keypoints(torch.tensor([[0, 5]]), (10, 20)).tolist()
        [[0, 4]]
    """
    _check_points("vertical_flip_keypoints", keypoints)
    out = keypoints.clone()
    out[..., 1] = (canvas_size[0] - 1) - keypoints[..., 1]
    return out


def resize_keypoints(
    keypoints: torch.Tensor,
    size: int | Sequence[int] | None,
    canvas_size: Canvas,
    max_size: int | None = None,
) -> tuple[torch.Tensor, Canvas]:
    """Points scaled as :func:`~trivium.vision.transforms.functional.resize` scales the image.

    Example:
        >>> import torch
        >>> resize_keypoints(torch.tensor([[4.0, 2.0]]), [20, 40], (10, 20))
        (tensor([[8., 4.]]), (20, 40))
    """
    _check_points("resize_keypoints", keypoints)
    old_h, old_w = canvas_size
    new_h, new_w = G.compute_resized_output_size(old_h, old_w, G._size_list(size), max_size)
    if (new_h, new_w) == (old_h, old_w):
        return keypoints, (old_h, old_w)
    ratios = torch.tensor([new_w / old_w, new_h / old_h], device=keypoints.device)
    return keypoints.mul(ratios).to(keypoints.dtype), (new_h, new_w)


def crop_keypoints(
    keypoints: torch.Tensor, top: int, left: int, height: int, width: int
) -> tuple[torch.Tensor, Canvas]:
    """Points on the crop (top, left, height, width): shifted by (-left, -top).

    Example:
        >>> import torch
        >>> crop_keypoints(torch.tensor([[5, 5]]), 2, 3, 4, 4)
        (tensor([[2, 3]]), (4, 4))
    """
    _check_points("crop_keypoints", keypoints)
    return _shifted(keypoints, -left, -top), (int(height), int(width))


def center_crop_keypoints(
    inpt: torch.Tensor, canvas_size: Canvas, output_size: int | Sequence[int]
) -> tuple[torch.Tensor, Canvas]:
    """Points on the center crop of ``output_size``.

    Example:
        >>> import torch
        >>> center_crop_keypoints(torch.tensor([[5, 5]]), (10, 10), 4)
        (tensor([[2, 2]]), (4, 4))
    """
    crop_h, crop_w = G.parse_size("center_crop_keypoints", output_size, "output_size")
    top, left = G.center_crop_anchor(crop_h, crop_w, *canvas_size)
    return crop_keypoints(inpt, top, left, crop_h, crop_w)


def resized_crop_keypoints(
    keypoints: torch.Tensor, top: int, left: int, height: int, width: int, size: Sequence[int]
) -> tuple[torch.Tensor, Canvas]:
    """Points on the crop (top, left, height, width) resized to ``size``.

    Example:
        >>> import torch
        >>> resized_crop_keypoints(torch.tensor([[3.0, 3.0]]), 1, 1, 4, 4, [8, 8])
        (tensor([[4., 4.]]), (8, 8))
    """
    keypoints, canvas = crop_keypoints(keypoints, top, left, height, width)
    return resize_keypoints(keypoints, list(size), canvas)


def pad_keypoints(
    keypoints: torch.Tensor,
    canvas_size: Canvas,
    padding: int | Sequence[int],
    padding_mode: str = "constant",
) -> tuple[torch.Tensor, Canvas]:
    """Points on the padded canvas (``padding`` as :func:`~.pad`'s; ``"constant"`` only).

    Example:
        >>> import torch
        >>> pad_keypoints(torch.tensor([[1, 1]]), (4, 4), [2, 1])
        (tensor([[3, 2]]), (6, 8))
    """
    _check_points("pad_keypoints", keypoints)
    if padding_mode != "constant":
        raise ValueError(
            f"pad_keypoints: padding_mode must be 'constant' for key points (reflected "
            f"content has no points), got {padding_mode!r}"
        )
    left, right, top, bottom = G.parse_padding("pad_keypoints", padding)
    canvas = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    return _shifted(keypoints, left, top), canvas


def affine_keypoints(
    keypoints: torch.Tensor,
    canvas_size: Canvas,
    angle: float,
    translate: Sequence[float],
    scale: float,
    shear: float | Sequence[float],
    center: Sequence[float] | None = None,
) -> tuple[torch.Tensor, Canvas]:
    """Points after :func:`~trivium.vision.transforms.functional.affine` of their canvas.

    Example:
        >>> import torch
        >>> affine_keypoints(torch.tensor([[0.0, 0.0]]), (20, 20), 0.0, [2, 3], 1.0, [0.0])[0]
        tensor([[2., 3.]])
    """
    _check_points("affine_keypoints", keypoints)
    move, canvas = W._affine_move(
        "affine_keypoints", tuple(canvas_size), angle, translate, scale, shear, center, False
    )
    return _moved(keypoints, move), canvas


def rotate_keypoints(
    keypoints: torch.Tensor,
    canvas_size: Canvas,
    angle: float,
    expand: bool = False,
    center: Sequence[float] | None = None,
) -> tuple[torch.Tensor, Canvas]:
    """Points after :func:`~trivium.vision.transforms.functional.rotate`, and the canvas size.

    With ``expand`` the canvas is the rotated image's, as for boxes.

    Example:
        >>> import torch
        >>> rotate_keypoints(torch.tensor([[0.0, 0.0]]), (10, 20), 90.0, expand=True)[1]
        (20, 10)
    """
    _check_points("rotate_keypoints", keypoints)
    angle = -angle if W._is_number(angle) else angle
    move, canvas = W._affine_move(
        "rotate_keypoints", tuple(canvas_size), angle, [0.0, 0.0], 1.0, [0.0, 0.0], center, expand
    )
    return _moved(keypoints, move), canvas


def perspective_keypoints(
    keypoints: torch.Tensor,
    canvas_size: Canvas,
    startpoints: Sequence[Sequence[float]] | None,
    endpoints: Sequence[Sequence[float]] | None,
    coefficients: Sequence[float] | None = None,
) -> torch.Tensor:
    """Points after :func:`~trivium.vision.transforms.functional.perspective`.

    Example:
        >>> import torch
        >>> corners = [[0, 0], [9, 0], [9, 9], [0, 9]]
        >>> perspective_keypoints(torch.tensor([[3.0, 4.0]]), (10, 10), corners, corners)
        tensor([[3., 4.]])
    """
    owner = "perspective_keypoints"
    _check_points(owner, keypoints)
    inverse = W._inverse_perspective(
        owner, W._perspective_coeffs(owner, startpoints, endpoints, coefficients)
    )

    def move(points: torch.Tensor) -> torch.Tensor:
        m = torch.tensor([*inverse, 1.0], dtype=points.dtype, device=points.device).view(3, 3)
        homogeneous = points @ m[:, :2].T + m[:, 2]
        return homogeneous[:, :2] / homogeneous[:, 2:]

    return _moved(keypoints, move)


def elastic_keypoints(
    keypoints: torch.Tensor, canvas_size: Canvas, displacement: torch.Tensor
) -> torch.Tensor:
    """Points after :func:`~trivium.vision.transforms.functional.elastic` (approximate).

    As torchvision: each point (truncated to a pixel) moves by minus the displacement
    found there.

    Example:
        >>> import torch
        >>> elastic_keypoints(torch.tensor([[3.0, 4.0]]), (8, 8), torch.zeros(1, 8, 8, 2))
        tensor([[3., 4.]])
    """
    owner = "elastic_keypoints"
    _check_points(owner, keypoints)
    h, w = canvas_size
    if not isinstance(displacement, torch.Tensor):
        raise TypeError(
            f"{owner}: displacement must be a tensor, got {type(displacement).__name__}"
        )
    if tuple(displacement.shape) != (1, h, w, 2):
        raise ValueError(
            f"{owner}: displacement must have shape (1, {h}, {w}, 2), "
            f"got {tuple(displacement.shape)}"
        )

    def move(points: torch.Tensor) -> torch.Tensor:
        field = displacement.to(dtype=points.dtype, device=points.device)
        inverse = W._identity_grid(h, w, points.dtype, points.device) - field
        index = points.long()
        ix, iy = index[:, 0].clamp(0, w - 1), index[:, 1].clamp(0, h - 1)
        size = torch.tensor([w, h], dtype=points.dtype, device=points.device)
        return (inverse[0, iy, ix] + 1) * (0.5 * size) - 0.5

    return _moved(keypoints, move)


def _canvas_of(owner: str, inpt: torch.Tensor, canvas_size: Canvas | None) -> Canvas:
    """``inpt``'s own canvas (KeyPoints) or ``canvas_size`` (a plain tensor)."""
    if isinstance(inpt, tv_tensors.KeyPoints):
        if canvas_size is not None:
            raise ValueError(f"{owner}: canvas_size must be None for KeyPoints (they have one)")
        return inpt.canvas_size
    if not isinstance(inpt, torch.Tensor) or isinstance(inpt, tv_tensors.TVTensor):
        raise TypeError(f"{owner}: expected KeyPoints or a plain tensor, got {type(inpt).__name__}")
    if canvas_size is None:
        raise ValueError(f"{owner}: canvas_size is required for a plain tensor")
    return canvas_size


def clamp_keypoints(inpt: torch.Tensor, canvas_size: Canvas | None = None) -> torch.Tensor:
    """Points clamped into the canvas: x to [0, width - 1], y to [0, height - 1].

    ``canvas_size`` only for a plain tensor (``KeyPoints`` carry theirs).

    Example:
        >>> import torch
        >>> clamp_keypoints(torch.tensor([[-3.0, 12.0]]), canvas_size=(10, 20)).tolist()
        [[0.0, 9.0]]
    """
    h, w = _canvas_of("clamp_keypoints", inpt, canvas_size)
    _check_points("clamp_keypoints", inpt)
    plain = inpt.as_subclass(torch.Tensor)
    work = plain.clone() if plain.is_floating_point() else plain.float()
    work[..., 0].clamp_(min=0, max=w - 1)
    work[..., 1].clamp_(min=0, max=h - 1)
    out = work.to(plain.dtype)
    return tv_tensors.wrap(out, like=inpt) if isinstance(inpt, tv_tensors.KeyPoints) else out


def sanitize_keypoints(
    key_points: torch.Tensor, canvas_size: Canvas | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The points inside the canvas, and the mask of kept rows (to index their labels).

    Rows of ``[N, ..., 2]`` (a polygon, a skeleton) are kept or dropped whole.

    Example:
        >>> import torch
        >>> points, kept = sanitize_keypoints(torch.tensor([[1, 1], [12, 3]]), (10, 10))
        >>> points.tolist(), kept.tolist()
        ([[1, 1]], [True, False])
    """
    h, w = _canvas_of("sanitize_keypoints", key_points, canvas_size)
    _check_points("sanitize_keypoints", key_points)
    x, y = key_points[..., 0], key_points[..., 1]
    valid = (x >= 0) & (x < w) & (y >= 0) & (y < h)
    valid = valid.as_subclass(torch.Tensor)
    valid = valid.flatten(start_dim=1).all(dim=1) if valid.ndim > 1 else valid
    kept = key_points.as_subclass(torch.Tensor)[valid]
    if isinstance(key_points, tv_tensors.KeyPoints):
        return tv_tensors.wrap(kept, like=key_points), valid
    return kept, valid


# KeyPoints through the functionals: the kernels above with the points' canvas.


def _plain(inpt: torch.Tensor) -> torch.Tensor:
    return inpt.as_subclass(torch.Tensor)


def _wrapped(inpt: tv_tensors.KeyPoints, out: Any) -> tv_tensors.KeyPoints:
    """A kernel's result (points, or (points, canvas)) as KeyPoints like ``inpt``."""
    if isinstance(out, tuple):
        return tv_tensors.wrap(out[0], like=inpt, canvas_size=out[1])
    return tv_tensors.wrap(out, like=inpt)


def _register_keypoint_kernels() -> None:
    kp = tv_tensors.KeyPoints

    def register(functional: Any, kernel: Any) -> None:
        _register_kernel_internal(functional, kp, tv_tensor_wrapper=False)(kernel)

    register(
        G.resize,
        lambda inpt, size, max_size=None, **_: _wrapped(
            inpt, resize_keypoints(_plain(inpt), size, inpt.canvas_size, max_size)
        ),
    )
    register(
        G.horizontal_flip,
        lambda inpt: _wrapped(inpt, horizontal_flip_keypoints(_plain(inpt), inpt.canvas_size)),
    )
    register(
        G.vertical_flip,
        lambda inpt: _wrapped(inpt, vertical_flip_keypoints(_plain(inpt), inpt.canvas_size)),
    )
    register(
        G.crop,
        lambda inpt, top, left, height, width: _wrapped(
            inpt, crop_keypoints(_plain(inpt), top, left, height, width)
        ),
    )
    register(
        G.center_crop,
        lambda inpt, output_size: _wrapped(
            inpt, center_crop_keypoints(_plain(inpt), inpt.canvas_size, output_size)
        ),
    )
    register(
        G.resized_crop,
        lambda inpt, top, left, height, width, size, **_: _wrapped(
            inpt, resized_crop_keypoints(_plain(inpt), top, left, height, width, size)
        ),
    )
    register(
        G.pad,
        lambda inpt, padding, padding_mode="constant", **_: _wrapped(
            inpt, pad_keypoints(_plain(inpt), inpt.canvas_size, padding, padding_mode)
        ),
    )
    register(
        W.affine,
        lambda inpt, angle, translate, scale, shear, center=None, **_: _wrapped(
            inpt,
            affine_keypoints(
                _plain(inpt), inpt.canvas_size, angle, translate, scale, shear, center
            ),
        ),
    )
    register(
        W.rotate,
        lambda inpt, angle, expand=False, center=None, **_: _wrapped(
            inpt, rotate_keypoints(_plain(inpt), inpt.canvas_size, angle, expand, center)
        ),
    )
    register(
        W.perspective,
        lambda inpt, startpoints, endpoints, coefficients=None, **_: _wrapped(
            inpt,
            perspective_keypoints(
                _plain(inpt), inpt.canvas_size, startpoints, endpoints, coefficients
            ),
        ),
    )
    register(
        W.elastic,
        lambda inpt, displacement, **_: _wrapped(
            inpt, elastic_keypoints(_plain(inpt), inpt.canvas_size, displacement)
        ),
    )


_register_keypoint_kernels()
