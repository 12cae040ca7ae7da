"""Warps: ``RandomRotation``, ``RandomAffine``, ``RandomPerspective``, ``ElasticTransform``.

With ``per_sample=True`` every image of a batch gets its own warp (one
``grid_sample`` call for the batch on CUDA, one per chunk of images on CPU).

In a detection or segmentation sample (``per_sample=False``) ``BoundingBoxes``
and ``Mask`` move with the image, as in torchvision v2: each box becomes the
smallest box holding its warped corners, clamped to the canvas
(:mod:`~trivium.vision.transforms.warp_box_kernels`); masks are warped by nearest
neighbour and filled with 0 (background) where the image gets ``fill``.
``RandomRotation(expand=True)`` gives the boxes the rotated image's canvas size.
``ElasticTransform`` moves box corners by the displacement at the corner (an
approximate inverse of the warp, as torchvision's: good while the field is smooth).

Example:
    >>> import torch
    >>> t = RandomAffine(degrees=15, translate=(0.1, 0.1), per_sample=True)
    >>> t(torch.zeros(4, 3, 16, 16, dtype=torch.uint8)).shape
    torch.Size([4, 3, 16, 16])
    >>> from trivium.vision import tv_tensors
    >>> boxes = tv_tensors.BoundingBoxes([[2, 4, 6, 10]], format="XYXY", canvas_size=(16, 16))
    >>> img, target = RandomRotation((90, 90))(torch.zeros(3, 16, 16), {"boxes": boxes})
    >>> target["boxes"].tolist()
    [[4, 10, 10, 14]]
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence
from typing import Any

import torch

from trivium.core.tracing import is_tracing
from trivium.core.transform import check_probability
from trivium.vision.transforms import functional as F
from trivium.vision.transforms._base import ImageTransform
from trivium.vision.transforms._image import check_image, eager_cpu
from trivium.vision.transforms.functional.geometry import (
    _check_fill_channels,
    _pad_indices,
    interpolation_mode,
    parse_fill,
)
from trivium.vision.transforms.functional.warp import (
    _affine_thetas,
    _apply_grid,
    _perspective_grid,
    _warp_affine,
    affine_image,
    elastic_image,
    perspective_coefficients,
    rotate_image,
)
from trivium.vision.transforms.geometry import _where_per_image
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = ["ElasticTransform", "RandomAffine", "RandomPerspective", "RandomRotation"]

_GRID_MODES = (InterpolationMode.NEAREST, InterpolationMode.BILINEAR, InterpolationMode.BICUBIC)


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _is_numbers(x: Any, sizes: tuple[int, ...] = (2,)) -> bool:
    """Whether ``x`` is a sequence of numbers of one of the lengths ``sizes``."""
    return isinstance(x, Sequence) and len(x) in sizes and all(_is_number(v) for v in x)


def _symmetric_range(
    owner: str, name: str, value: Any, sizes: tuple[int, ...] = (2,)
) -> list[float]:
    """A number ``d`` as ``[-d, d]``; a sequence (of one of ``sizes`` lengths) as floats."""
    if _is_number(value):
        if value < 0:
            raise ValueError(
                f"{owner}: {name} must be non-negative when a single number, got {value}"
            )
        return [-float(value), float(value)]
    if _is_numbers(value, sizes):
        return [float(v) for v in value]
    lengths = " or ".join(map(str, sizes))
    raise TypeError(
        f"{owner}: {name} must be a number or a sequence of {lengths} numbers, got {value!r}"
    )


def _grid_interpolation(owner: str, interpolation: Any) -> InterpolationMode:
    mode = interpolation_mode(owner, interpolation)
    if mode not in _GRID_MODES:
        raise ValueError(
            f"{owner}: interpolation must be nearest, bilinear or bicubic, got {mode.value!r}"
        )
    return mode


def _center(owner: str, center: Any) -> list[float] | None:
    if center is None:
        return None
    if _is_numbers(center):
        return [float(center[0]), float(center[1])]
    raise TypeError(
        f"{owner}: center must be None or a sequence of 2 numbers (x, y), got {center!r}"
    )


class _Warp(ImageTransform):
    """Shared construction and checks of the warp transforms."""

    _cpu_chunk_values = 4 * 3 * 224 * 224  # the grid's fixed costs, shared by 4 images

    def __init__(
        self,
        interpolation: Any,
        fill: Any,
        *,
        per_sample: bool,
        generator: torch.Generator | None,
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        name = type(self).__name__
        self.interpolation = _grid_interpolation(name, interpolation)
        self.fill = parse_fill(name, fill)

    def _check(self, inpt: torch.Tensor) -> None:
        check_image(type(self).__name__, inpt)
        _check_fill_channels(type(self).__name__, self.fill, inpt.shape[-3])

    def _uniform_tensor(
        self, n: int, low: float, high: float, device: torch.device
    ) -> torch.Tensor:
        return low + (high - low) * self._draw((n,), device)

    def _with_thetas(self, img: torch.Tensor, params: dict[str, Any], **warp: Any) -> dict:
        """``params`` and the per-image inverse matrices of the warp (``affine``'s arguments).

        Computed once for the batch, so a chunk of a per-sample batch only slices them.
        """
        center = getattr(self, "center", None)
        theta = _affine_thetas(img, center=center, **warp)
        return {**params, "theta": theta, "theta_size": tuple(img.shape[-2:])}

    def _warp_thetas(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor | None:
        """``inpt`` warped by the matrices of :meth:`_with_thetas` (None if there are none)."""
        theta = params.get("theta")
        if theta is None or params["theta_size"] != tuple(inpt.shape[-2:]):
            return None  # an input of another size: its own centre, its own matrices
        return _warp_affine(inpt, theta, self.interpolation.value, self.fill)


class RandomRotation(_Warp):
    """Rotate counter-clockwise by an angle drawn from ``degrees`` (``d`` means ``[-d, d]``).

    ``expand=True`` enlarges the output to hold the whole image (not with
    ``per_sample`` or under ``torch.compile``, whose output size must not depend on
    a random angle).

    Example:
        >>> import torch
        >>> RandomRotation(30, per_sample=True)(torch.rand(4, 3, 8, 8)).shape
        torch.Size([4, 3, 8, 8])
    """

    _per_image_params = ("angle", "theta")

    def __init__(
        self,
        degrees: float | Sequence[float],
        interpolation: InterpolationMode | str = InterpolationMode.NEAREST,
        expand: bool = False,
        center: Sequence[float] | None = None,
        fill: float | Sequence[float] = 0,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation, fill, per_sample=per_sample, generator=generator)
        name = type(self).__name__
        self.degrees = _symmetric_range(name, "degrees", degrees)
        self.expand = bool(expand)
        self.center = _center(name, center)
        if self.expand and per_sample:
            raise ValueError(f"{name}: expand=True cannot be combined with per_sample=True")

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        lo, hi = self.degrees
        if self._tensor_params():
            if self.expand:
                raise ValueError(
                    f"{type(self).__name__}: expand=True does not work under torch.compile"
                )
            angle = self._uniform_tensor(self._num_draws(img), lo, hi, img.device)
            return self._with_thetas(
                img, {"angle": angle}, angle=-angle, translate=0.0, scale=1.0, shear=0.0
            )
        return {"angle": self._uniform(lo, hi)}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Rotate one image tensor by the drawn angle."""
        self._check(inpt)
        warped = self._warp_thetas(inpt, params)
        if warped is not None:
            return warped
        return rotate_image(
            inpt, params["angle"], self.interpolation, self.expand, self.center, self.fill
        )

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes (new canvas with ``expand``), masks and a user's types: ``F.rotate``."""
        angle = _number(params["angle"])
        return self._call_kernel(
            F.rotate, inpt, angle, self.interpolation, self.expand, self.center, fill=0
        )


class RandomAffine(_Warp):
    """Random rotation (``degrees``), translation, scale and shear (torchvision's ``RandomAffine``).

    ``translate=(a, b)``: shifts up to ``a * width`` and ``b * height`` pixels;
    ``scale=(lo, hi)``; ``shear``: a number ``s`` (x shear in ``[-s, s]``), 2 numbers
    (x range) or 4 (x and y ranges).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> t = RandomAffine(10, scale=(0.9, 1.1), shear=5, generator=g)
        >>> t(torch.zeros(3, 8, 8, dtype=torch.uint8)).dtype
        torch.uint8
    """

    _per_image_params = ("angle", "translate", "scale", "shear", "theta")

    def __init__(
        self,
        degrees: float | Sequence[float],
        translate: Sequence[float] | None = None,
        scale: Sequence[float] | None = None,
        shear: float | Sequence[float] | None = None,
        interpolation: InterpolationMode | str = InterpolationMode.NEAREST,
        fill: float | Sequence[float] = 0,
        center: Sequence[float] | None = None,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation, fill, per_sample=per_sample, generator=generator)
        name = type(self).__name__
        self.degrees = _symmetric_range(name, "degrees", degrees)
        self.translate = None if translate is None else self._fractions(translate)
        if scale is not None:
            if not _is_numbers(scale):
                raise TypeError(f"{name}: scale must be a sequence of 2 numbers, got {scale!r}")
            if min(scale) <= 0:
                raise ValueError(f"{name}: scale values must be positive, got {scale!r}")
        self.scale = None if scale is None else [float(s) for s in scale]
        self.shear = None if shear is None else _symmetric_range(name, "shear", shear, (2, 4))
        self.center = _center(name, center)

    def _fractions(self, translate: Any) -> list[float]:
        name = type(self).__name__
        if not _is_numbers(translate):
            raise TypeError(f"{name}: translate must be a sequence of 2 numbers, got {translate!r}")
        if not all(0.0 <= t <= 1.0 for t in translate):
            raise ValueError(f"{name}: translate values must be in [0, 1], got {translate!r}")
        return [float(t) for t in translate]

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        h, w = img.shape[-2], img.shape[-1]
        if self._tensor_params():
            params = self._tensor_draws(self._num_draws(img), h, w, img.device)
            return self._with_thetas(img, params, **params)
        angle = self._uniform(*self.degrees)
        tx = ty = 0
        if self.translate is not None:
            max_dx, max_dy = self.translate[0] * w, self.translate[1] * h
            tx = round(self._uniform(-max_dx, max_dx))
            ty = round(self._uniform(-max_dy, max_dy))
        scale = 1.0 if self.scale is None else self._uniform(*self.scale)
        shear_x = shear_y = 0.0
        if self.shear is not None:
            shear_x = self._uniform(self.shear[0], self.shear[1])
            if len(self.shear) == 4:
                shear_y = self._uniform(self.shear[2], self.shear[3])
        return {"angle": angle, "translate": [tx, ty], "scale": scale, "shear": [shear_x, shear_y]}

    def _tensor_draws(self, n: int, h: int, w: int, device: torch.device) -> dict[str, Any]:
        zeros = torch.zeros(n, device=device)
        angle = self._uniform_tensor(n, *self.degrees, device)
        tx = ty = zeros
        if self.translate is not None:
            max_dx, max_dy = self.translate[0] * w, self.translate[1] * h
            tx = torch.round(self._uniform_tensor(n, -max_dx, max_dx, device))
            ty = torch.round(self._uniform_tensor(n, -max_dy, max_dy, device))
        scale = zeros + 1.0 if self.scale is None else self._uniform_tensor(n, *self.scale, device)
        shear_x = shear_y = zeros
        if self.shear is not None:
            shear_x = self._uniform_tensor(n, self.shear[0], self.shear[1], device)
            if len(self.shear) == 4:
                shear_y = self._uniform_tensor(n, self.shear[2], self.shear[3], device)
        return {
            "angle": angle,
            "translate": torch.stack((tx, ty), dim=-1),
            "scale": scale,
            "shear": torch.stack((shear_x, shear_y), dim=-1),
        }

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Warp one image tensor with the drawn parameters."""
        self._check(inpt)
        warped = self._warp_thetas(inpt, params)
        if warped is not None:
            return warped
        return affine_image(
            inpt,
            params["angle"],
            params["translate"],
            params["scale"],
            params["shear"],
            self.interpolation,
            self.fill,
            self.center,
        )

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes, masks and a user's types: ``F.affine`` with the drawn parameters."""
        return self._call_kernel(
            F.affine,
            inpt,
            **_affine_args(params),
            interpolation=self.interpolation,
            fill=0,
            center=self.center,
        )


class RandomPerspective(_Warp):
    """With probability ``p``, move the corners inwards by up to ``distortion_scale`` * half size.

    Example:
        >>> import torch
        >>> t = RandomPerspective(0.3, p=1.0, generator=torch.Generator().manual_seed(0))
        >>> t(torch.rand(3, 16, 16)).shape
        torch.Size([3, 16, 16])
    """

    _per_image_params = ("coefficients", "apply")
    _cpu_chunk_values = 3 * 224 * 224  # one image: an image whose coin says no is not warped

    def __init__(
        self,
        distortion_scale: float = 0.5,
        p: float = 0.5,
        interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
        fill: float | Sequence[float] = 0,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation, fill, per_sample=per_sample, generator=generator)
        name = type(self).__name__
        if not _is_number(distortion_scale) or not 0.0 <= distortion_scale <= 1.0:
            raise ValueError(
                f"{name}: distortion_scale must be in [0, 1], got {distortion_scale!r}"
            )
        self.distortion_scale = float(distortion_scale)
        self.p = check_probability(name, p)

    def _corners(self, u: torch.Tensor, h: int, w: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Start and end corners [N, 4, 2] from uniforms ``u`` [N, 8] (torchvision's ranges)."""
        bound_h = int(self.distortion_scale * (h // 2)) + 1
        bound_w = int(self.distortion_scale * (w // 2)) + 1
        off = torch.floor(u * torch.tensor([bound_w, bound_h] * 4, device=u.device, dtype=u.dtype))
        off = off.view(-1, 4, 2)
        # Corners in order top-left, top-right, bottom-right, bottom-left, moved inwards.
        base = torch.tensor(
            [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], dtype=u.dtype, device=u.device
        )
        sign = torch.tensor([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=u.dtype, device=u.device)
        end = base + sign * off
        return base.expand_as(end), end

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        h, w = img.shape[-2], img.shape[-1]
        n = self._num_draws(img)
        if not self._tensor_params() and float(self._rand(())) >= self.p:
            return {"apply": False}
        u = self._draw((n, 9), img.device).to(torch.float64)
        start, end = self._corners(u[:, :8], h, w)
        params: dict[str, Any] = {"coefficients": perspective_coefficients(start, end)}
        params["apply"] = u[:, 8] < self.p if self._tensor_params() else True
        return params

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Warp one image tensor (or return it when not applied)."""
        self._check(inpt)
        apply = params["apply"]
        one = _one_cpu_image(apply, inpt)  # a per-sample chunk: warp it or not, no select
        if apply is False or (one and not bool(apply)):
            return inpt
        dtype = inpt.dtype if inpt.is_floating_point() else torch.float32
        grid = _perspective_grid(params["coefficients"].to(dtype), inpt.shape[-1], inpt.shape[-2])
        out = _apply_grid(inpt, grid, self.interpolation.value, self.fill)
        return out if apply is True or one else _where_per_image(apply, out, inpt)

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes, masks and a user's types: ``F.perspective`` by the drawn coefficients."""
        coefficients = _perspective_coefficients(params)
        if not self._has_kernel(F.perspective, inpt) or coefficients is None:
            return inpt
        return F.perspective(
            inpt, None, None, self.interpolation, fill=0, coefficients=coefficients
        )


def _one_cpu_image(apply: Any, img: torch.Tensor) -> bool:
    """Whether ``apply`` is the coin of one image on the CPU (a chunk of a per-sample batch)."""
    return isinstance(apply, torch.Tensor) and apply.numel() == 1 and eager_cpu(img)


def _blur_matrix(n: int, sigma: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """[n, n] matrix of a 1-D Gaussian blur with reflect padding: ``x @ m`` blurs rows of ``x``.

    torchvision's kernel size ``int(8 * sigma + 1)`` (made odd); entry ``[i, j]`` is the
    weight of input ``i`` in output ``j`` (taps that fall off the edge are reflected in).
    """
    size = int(8 * sigma + 1)
    size += 1 - size % 2
    half = (size - 1) * 0.5
    xs = torch.linspace(-half, half, size, dtype=dtype, device=device)
    taps = torch.exp(-0.5 * (xs / sigma) ** 2)
    taps = (taps / taps.sum()).to(torch.float64)
    pad = size // 2
    source = _pad_indices(n, pad, pad, "reflect", device).unfold(0, size, 1)  # [n, size]
    output = torch.arange(n, device=device).view(n, 1).expand(n, size)
    matrix = torch.zeros(n, n, dtype=torch.float64, device=device)
    matrix.index_put_((source.reshape(-1), output.reshape(-1)), taps.repeat(n), accumulate=True)
    return matrix.to(dtype)


_BAND_BLOCK = 32  # output samples per block of the banded products


def _band_plan(
    n: int, sigma: float, dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, list[tuple[int, int, int, int]]]:
    """The blur matrix of :func:`_blur_matrix` and its bands: blocks (j0, j1, r0, r1).

    Outputs ``[j0, j1)`` take inputs ``[r0, r1)`` only (every other weight is 0):
    for sigma 5 at 224, a block of 32 outputs reads 72 inputs instead of 224.
    """
    matrix = _blur_matrix(n, sigma, dtype, device)
    used = matrix != 0
    blocks = []
    count = -(-n // _BAND_BLOCK)
    for k in range(count):  # blocks of near-equal widths
        j0, j1 = k * n // count, (k + 1) * n // count
        rows = used[:, j0:j1].any(dim=1).nonzero().flatten().tolist()
        r0, r1 = (rows[0], rows[-1] + 1) if rows else (0, 1)
        blocks.append((j0, j1, r0, r1))
    return matrix, blocks


_cached_band_plan = functools.lru_cache(maxsize=16)(_band_plan)


def _gaussian_blur_displacement(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Gaussian blur of fields ``x`` [..., H, W] (torchvision's kernel, reflect padding).

    Matrix products with the banded blur matrices, block by block of 32 outputs
    over the inputs their band reaches (~3x fewer products than the full matrices
    at 224 x 224, which were already ~2x faster than two depthwise convolutions).
    Every field is blurred alike whether it comes alone or in a batch (a per-sample
    chunk gives the batch's result). Under ``torch.compile``: the full products.
    """
    h, w = x.shape[-2], x.shape[-1]
    if is_tracing():
        rows = _blur_matrix(w, sigma, x.dtype, x.device)
        cols = _blur_matrix(h, sigma, x.dtype, x.device)
        return torch.matmul(cols.t(), torch.matmul(x, rows))
    across = _banded_right_product(x.contiguous(), *_cached_band_plan(w, sigma, x.dtype, x.device))
    # The columns: the same product on the transposed fields (returned as a view).
    down = across.transpose(-1, -2).contiguous()
    return _banded_right_product(down, *_cached_band_plan(h, sigma, x.dtype, x.device)).transpose(
        -1, -2
    )


def _banded_right_product(
    x: torch.Tensor, matrix: torch.Tensor, blocks: list[tuple[int, int, int, int]]
) -> torch.Tensor:
    """``x @ matrix`` for contiguous ``x`` [..., n], block by block of :func:`_band_plan`.

    Each block is one product of all rows of ``x`` (the batch folded into the rows),
    so a row's result does not depend on how many images come with it.
    """
    n = x.shape[-1]
    rows = x.reshape(-1, n)
    out = x.new_empty(rows.shape)
    for j0, j1, r0, r1 in blocks:  # each product written straight into its columns
        torch.mm(rows[:, r0:r1], matrix[r0:r1, j0:j1], out=out[:, j0:j1])
    return out.reshape(x.shape)


class ElasticTransform(_Warp):
    """Move pixels by a smooth random field: noise blurred by ``sigma``, scaled by ``alpha``.

    ``alpha`` and ``sigma``: a number or (x, y) pairs, as torchvision's
    ``ElasticTransform``. With ``per_sample=True`` each image gets its own field.

    Example:
        >>> import torch
        >>> t = ElasticTransform(alpha=20.0, sigma=3.0, generator=torch.Generator().manual_seed(0))
        >>> t(torch.rand(2, 3, 24, 24)).shape
        torch.Size([2, 3, 24, 24])
    """

    _per_image_params = ("noise",)
    # 4 images: fields and grids of ~1.6 MB, and a blur product per 4 images, not per image.
    _cpu_chunk_values = 4 * 3 * 224 * 224

    def __init__(
        self,
        alpha: float | Sequence[float] = 50.0,
        sigma: float | Sequence[float] = 5.0,
        interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
        fill: float | Sequence[float] = 0,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation, fill, per_sample=per_sample, generator=generator)
        name = type(self).__name__
        self.alpha = self._pair(name, "alpha", alpha)
        self.sigma = self._pair(name, "sigma", sigma)

    @staticmethod
    def _pair(owner: str, name: str, value: Any) -> list[float]:
        if _is_number(value):
            value = [value, value]
        if not _is_numbers(value, (1, 2)):
            raise TypeError(
                f"{owner}: {name} must be a number or a sequence of 1 or 2 numbers, got {value!r}"
            )
        values = [float(v) for v in value] * (2 if len(value) == 1 else 1)
        if min(values) < 0 or not all(math.isfinite(v) for v in values):
            raise ValueError(f"{owner}: {name} must be finite and non-negative, got {value!r}")
        return values

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        h, w = inputs[0].shape[-2], inputs[0].shape[-1]
        # Uniform in [0, 1): mapped to [-1, 1] and smoothed per chunk of images
        # (_params_for_chunk), where the buffers stay in cache, not for the whole batch.
        return {"noise": self._draw_per_image(inputs, (2, h, w))}

    def _displacement(self, noise: torch.Tensor) -> torch.Tensor:
        """The displacement field [N, H, W, 2] of uniform ``noise`` [N, 2, H, W] in [0, 1)."""
        h, w = noise.shape[-2], noise.shape[-1]
        noise = noise * 2 - 1
        fields = []
        for axis, extent in ((0, h), (1, w)):
            field = noise[:, axis]
            if self.sigma[axis] > 0.0:
                field = _gaussian_blur_displacement(field, self.sigma[axis])
            fields.append(field * (self.alpha[axis] / extent))
        # torchvision scales dx by alpha/height and dy by alpha/width; kept for parity.
        return torch.stack(fields, dim=1).permute(0, 2, 3, 1)  # planes: fast to write

    def _params_for_chunk(
        self, params: dict[str, Any], rows: slice | None, batch: torch.Size
    ) -> dict[str, Any]:
        params = super()._params_for_chunk(params, rows, batch)
        return {**params, "displacement": self._displacement(params["noise"])}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Warp one image tensor by the drawn displacement field."""
        self._check(inpt)
        displacement = params.get("displacement")
        if displacement is None:  # params straight from make_params
            noise = params["noise"]
            displacement = self._displacement(
                torch.cat(noise) if isinstance(noise, tuple) else noise
            )
        return elastic_image(inpt, displacement, self.interpolation, self.fill)

    def transform_tv_tensor(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Boxes, masks and a user's types: ``F.elastic`` by the drawn displacement."""
        if not self._has_kernel(F.elastic, inpt):
            return inpt
        displacement = _elastic_displacement(self, params)
        return F.elastic(inpt, displacement, self.interpolation, fill=0)


# Boxes, masks and a user's types: the warps call their functional with the drawn
# parameters. A sample with boxes or masks is one image (per_sample=False), so the params
# are one draw: Python numbers, or one-element tensors under torch.compile. Masks get 0
# where the warp brings in pixels from outside.


def _number(value: Any) -> float:
    return float(value.reshape(-1)[0]) if isinstance(value, torch.Tensor) else float(value)


def _numbers(value: Any) -> list[float]:
    if isinstance(value, torch.Tensor):
        return [float(v) for v in value.reshape(-1)]
    return [float(v) for v in value]


def _affine_args(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "angle": _number(params["angle"]),
        "translate": _numbers(params["translate"]),
        "scale": _number(params["scale"]),
        "shear": _numbers(params["shear"]),
    }


def _perspective_coefficients(params: dict[str, Any]) -> list[float] | None:
    """The drawn coefficients, or None when the coin said no."""
    apply = params["apply"]
    if apply is False or (isinstance(apply, torch.Tensor) and not bool(apply.reshape(-1)[0])):
        return None
    return _numbers(params["coefficients"][0])


def _elastic_displacement(t: ElasticTransform, params: dict[str, Any]) -> torch.Tensor:
    displacement = params.get("displacement")
    if displacement is None:
        noise = params["noise"]
        displacement = t._displacement(torch.cat(noise) if isinstance(noise, tuple) else noise)
    return displacement
