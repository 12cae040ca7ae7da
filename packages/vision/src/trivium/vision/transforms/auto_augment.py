"""Augmentation policies: ``AutoAugment``, ``RandAugment``, ``TrivialAugmentWide``, ``AugMix``.

Same operation spaces, magnitudes and arguments as ``torchvision.transforms.v2``.
One set of operations is drawn per call and applied to the whole batch (AugMix
mixes with per-image weights, as torchvision). With ``per_sample=True`` every image
of a batch draws its own operations and magnitudes (and AugMix its own chains), in
image order, exactly the draws a loop calling the transform on each image makes
from the same generator, so the batch equals that loop's stacked output. The
operations differ per image, so they are applied image by image. All randomness
comes from ``generator``. Under ``torch.compile(fullgraph=True)`` the operation is chosen
with nested ``torch.cond`` on a tensor index and the magnitude stays a tensor,
so the graph has no data-dependent Python branch (randomness then comes from
torch's default generator).

Example:
    >>> import torch
    >>> t = RandAugment(generator=torch.Generator().manual_seed(0))
    >>> t(torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8)).shape
    torch.Size([3, 32, 32])
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import Any

import torch

from trivium.core.tracing import is_tracing
from trivium.vision.transforms import functional as F
from trivium.vision.transforms._base import ImageTransform
from trivium.vision.transforms._image import check_image
from trivium.vision.transforms._switch import switch
from trivium.vision.transforms.functional.color import _bound
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = ["AugMix", "AutoAugment", "AutoAugmentPolicy", "RandAugment", "TrivialAugmentWide"]

Magnitudes = Callable[[int, int, int], torch.Tensor | None]
Magnitude = float | torch.Tensor
#: One image's drawn operations: ``(name, magnitude)`` in the order they apply.
Plan = list[tuple[str, float]]


class AutoAugmentPolicy(enum.Enum):
    """The AutoAugment policies learned on three datasets (torchvision's names).

    Example:
        >>> AutoAugmentPolicy("imagenet") is AutoAugmentPolicy.IMAGENET
        True
    """

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


def _linear(high: float) -> Magnitudes:
    return lambda bins, height, width: torch.linspace(0.0, high, bins)


def _none(bins: int, height: int, width: int) -> None:
    return None


def _posterize(top: int, spread: int) -> Magnitudes:
    return lambda bins, h, w: (top - torch.arange(bins) / ((bins - 1) / spread)).round().int()


def _solarize(bins: int, height: int, width: int) -> torch.Tensor:
    return torch.linspace(1.0, 0.0, bins)


_Space = dict[str, tuple[Magnitudes, bool]]


def _geometric(
    shear: float, translate_x: Magnitudes, translate_y: Magnitudes, rotate: float
) -> _Space:
    """Shears, translations and rotation: signed magnitudes."""
    return {
        "ShearX": (_linear(shear), True),
        "ShearY": (_linear(shear), True),
        "TranslateX": (translate_x, True),
        "TranslateY": (translate_y, True),
        "Rotate": (_linear(rotate), True),
    }


def _enhancements(top: float) -> _Space:
    """Brightness, colour, contrast and sharpness: signed magnitudes up to ``top``."""
    return {name: (_linear(top), True) for name in ("Brightness", "Color", "Contrast", "Sharpness")}


def _tonal(posterize: Magnitudes) -> _Space:
    """Posterize, solarize, autocontrast and equalize: unsigned."""
    return {
        "Posterize": (posterize, False),
        "Solarize": (_solarize, False),
        "AutoContrast": (_none, False),
        "Equalize": (_none, False),
    }


# name -> (magnitudes for (num_bins, height, width), signed), as torchvision (same order).
_BASE_SPACE: _Space = {
    **_geometric(
        0.3,
        lambda bins, h, w: torch.linspace(0.0, 150.0 / 331.0 * w, bins),
        lambda bins, h, w: torch.linspace(0.0, 150.0 / 331.0 * h, bins),
        30.0,
    ),
    **_enhancements(0.9),
    **_tonal(_posterize(8, 4)),
}
_AUTOAUGMENT_SPACE = {**_BASE_SPACE, "Invert": (_none, False)}
_RANDAUGMENT_SPACE = {"Identity": (_none, False), **_BASE_SPACE}
_TRIVIAL_SPACE: _Space = {
    "Identity": (_none, False),
    **_geometric(0.99, _linear(32.0), _linear(32.0), 135.0),
    **_enhancements(0.99),
    **_tonal(_posterize(8, 6)),
}
_AUGMIX_PARTIAL_SPACE: _Space = {
    **_geometric(
        0.3,
        lambda bins, h, w: torch.linspace(0.0, w / 3.0, bins),
        lambda bins, h, w: torch.linspace(0.0, h / 3.0, bins),
        30.0,
    ),
    **_tonal(_posterize(4, 4)),
}
_AUGMIX_SPACE = {**_AUGMIX_PARTIAL_SPACE, **_enhancements(0.9)}


def _write_plan(names: list[str], plan: Plan, ops: torch.Tensor, magnitudes: torch.Tensor) -> None:
    """Write ``plan`` into one row of operation indices (into ``names``) and magnitudes."""
    for k, (name, magnitude) in enumerate(plan):
        ops[k], magnitudes[k] = names.index(name), magnitude


_Policy = tuple[tuple[str, float, int | None], tuple[str, float, int | None]]

_POLICIES: dict[AutoAugmentPolicy, list[_Policy]] = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
        (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)),
        (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)),
        (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)),
        (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)),
        (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)),
        (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)),
        (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)),
        (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)),
        (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)),
        (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)),
        (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)),
        (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)),
        (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)),
        (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)),
        (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)),
        (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)),
        (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)),
        (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)),
        (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)),
        (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)),
        (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)),
        (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)),
        (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)),
        (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)),
        (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}


def _check_bins(owner: str, num_magnitude_bins: Any) -> None:
    if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 2:
        raise ValueError(
            f"{owner}: num_magnitude_bins must be an integer >= 2, got {num_magnitude_bins!r}"
        )


def _shear_degrees(magnitude: Magnitude) -> Magnitude:
    # torchvision shears by atan(magnitude) so that the matrix entry is the magnitude.
    if isinstance(magnitude, torch.Tensor):
        return torch.rad2deg(torch.atan(magnitude))
    return math.degrees(math.atan(magnitude))


def _pick(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``table[index]`` for a 0-dim tensor index, without reading it on the host."""
    return table.index_select(0, index.reshape(1)).squeeze(0)


class _AutoAugmentBase(ImageTransform):
    """Shared parts: arguments, the operation kernels, op and magnitude draws."""

    def __init__(
        self,
        *,
        interpolation: InterpolationMode | str = InterpolationMode.NEAREST,
        fill: float | list[float] | None = None,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        self.interpolation = InterpolationMode(interpolation)
        if self.interpolation not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR):
            raise ValueError(
                f"{type(self).__name__}: interpolation must be NEAREST or BILINEAR, "
                f"got {self.interpolation}"
            )
        self.fill = fill

    # One row per image (per_sample): the operations and magnitudes each image drew.
    _per_image_params = ("ops", "magnitudes", "mix")

    def _check(self, img: torch.Tensor) -> None:
        check_image(type(self).__name__, img, channels=(1, 3))

    def _space(self) -> dict[str, tuple[Magnitudes, bool]]:
        """The operations this policy draws from (a plan's names index into it)."""
        raise NotImplementedError

    def _draw_plan(self, size: tuple[int, int]) -> Plan:
        """Draw one image's operations, in the order of the generator calls of one call."""
        raise NotImplementedError

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        """With ``per_sample``: each image's plan, as ``[N, ops]`` tensors (else nothing).

        Example:
            >>> import torch
            >>> t = RandAugment(num_ops=2, per_sample=True)
            >>> t.make_params([torch.zeros(4, 3, 8, 8)])["ops"].shape
            torch.Size([4, 2])
        """
        if not self.per_sample:
            return {}
        if is_tracing():
            raise NotImplementedError(
                f"{type(self).__name__}: per_sample=True draws each image's operations in "
                "Python, which torch.compile cannot trace; use per_sample=False there"
            )
        img = inputs[0]
        self._check(img)
        return self._draw_params(img)

    def _draw_params(self, img: torch.Tensor) -> dict[str, Any]:
        """Each image's plan (eager, ``img`` checked), as ``[N, ops]`` tensors."""
        size = (img.shape[-2], img.shape[-1])
        return self._encode([self._draw_plan(size) for _ in range(self.num_samples(img))])

    def _encode(self, plans: list[Plan]) -> dict[str, Any]:
        names = list(self._space())
        width = max((len(p) for p in plans), default=0)
        ops = torch.full((len(plans), width), -1, dtype=torch.int64)
        magnitudes = torch.zeros((len(plans), width), dtype=torch.float64)
        for i, plan in enumerate(plans):
            _write_plan(names, plan, ops[i], magnitudes[i])
        return {"ops": ops, "magnitudes": magnitudes}

    def _decode(self, params: dict[str, Any], i: int) -> Plan:
        return self._read_plan(params["ops"][i].tolist(), params["magnitudes"][i].tolist())

    def _read_plan(self, ops: list[int], magnitudes: list[float]) -> Plan:
        """The plan of one row of operation indices (-1: none) and magnitudes."""
        names = list(self._space())
        return [(names[op], m) for op, m in zip(ops, magnitudes, strict=True) if op >= 0]

    def _apply_plan(self, img: torch.Tensor, plan: Plan) -> torch.Tensor:
        for name, magnitude in plan:
            img = self._apply_op(img, name, magnitude)
        return img

    def _per_image(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Apply each image's own plan (``per_sample``): the images of the chunk in turn."""
        batch = inpt.reshape(-1, *inpt.shape[-3:])
        outs = [self._apply_one(batch[i : i + 1], params, i)[0] for i in range(batch.shape[0])]
        return torch.stack(outs).reshape(inpt.shape[:-3] + outs[0].shape)

    def _apply_one(self, img: torch.Tensor, params: dict[str, Any], i: int) -> torch.Tensor:
        return self._apply_plan(img, self._decode(params, i))

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Apply the operations: each image's plan with ``per_sample``, else one plan for all.

        Example:
            >>> import torch
            >>> t = RandAugment(generator=torch.Generator().manual_seed(0))
            >>> t.transform(torch.zeros(3, 8, 8, dtype=torch.uint8), {}).shape
            torch.Size([3, 8, 8])
        """
        self._check(inpt)
        if "ops" in params:
            return self._per_image(inpt, params)
        return self._apply_plan(inpt, self._draw_plan((inpt.shape[-2], inpt.shape[-1])))

    def transform_traced(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """The traceable form: operations drawn as tensors, selected with ``torch.cond``.

        Example:
            >>> import torch
            >>> t = RandAugment()
            >>> t.transform_traced(torch.zeros(3, 8, 8, dtype=torch.uint8), {}).shape
            torch.Size([3, 8, 8])
        """
        self._check(inpt)
        return self._compiled(inpt, (inpt.shape[-2], inpt.shape[-1]))

    def _compiled(self, img: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        """The operations of :meth:`transform_traced` on ``img`` of ``size``."""
        raise NotImplementedError

    def _apply_op(self, img: torch.Tensor, name: str, magnitude: Magnitude) -> torch.Tensor:
        """One named operation at ``magnitude`` (a float, or a 0-dim tensor under compile)."""
        tensor = isinstance(magnitude, torch.Tensor)
        zero = torch.zeros_like(magnitude) if tensor else 0.0
        geometry = {"interpolation": self.interpolation, "fill": self.fill}
        if name == "Identity":
            return img.clone()
        if name in ("ShearX", "ShearY"):
            degrees = _shear_degrees(magnitude)
            shear = (degrees, zero) if name == "ShearX" else (zero, degrees)
            if tensor:
                shear = torch.stack(shear).view(1, 2)
            return F.affine_image(img, 0.0, [0.0, 0.0], 1.0, shear, center=[0.0, 0.0], **geometry)
        if name in ("TranslateX", "TranslateY"):
            pixels = magnitude.trunc() if tensor else float(int(magnitude))
            shift = (pixels, zero) if name == "TranslateX" else (zero, pixels)
            translate = torch.stack(shift).view(1, 2) if tensor else list(shift)
            return F.affine_image(img, 0.0, translate, 1.0, [0.0, 0.0], **geometry)
        if name == "Rotate":
            return F.rotate_image(img, magnitude, **geometry)
        if name == "Brightness":
            return F.adjust_brightness_image(img, 1.0 + magnitude)
        if name == "Color":
            return F.adjust_saturation_image(img, 1.0 + magnitude)
        if name == "Contrast":
            return F.adjust_contrast_image(img, 1.0 + magnitude)
        if name == "Sharpness":
            return F.adjust_sharpness_image(img, 1.0 + magnitude)
        if name == "Posterize":
            return F.posterize_image(img, magnitude if tensor else int(magnitude))
        if name == "Solarize":
            return F.solarize_image(img, _bound(img) * magnitude)
        if name == "AutoContrast":
            return F.autocontrast_image(img)
        if name == "Equalize":
            return F.equalize_image(img)
        if name == "Invert":
            return F.invert_image(img)
        raise ValueError(f"{type(self).__name__}: no operation named {name!r}")

    # Eager draws (Python numbers from the generator).

    def _magnitude(
        self,
        space: dict[str, tuple[Magnitudes, bool]],
        name: str,
        bins: int,
        index: int,
        size: tuple[int, int],
    ) -> float:
        fn, signed = space[name]
        values = fn(bins, *size)
        if values is None:
            return 0.0
        magnitude = float(values[index])
        if signed and float(self._rand()) <= 0.5:
            magnitude = -magnitude
        return magnitude

    # Compile draws: tensors, no host reads.

    def _magnitude_table(
        self, space: dict[str, tuple[Magnitudes, bool]], bins: int, size: tuple[int, int]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``[ops, bins]`` magnitudes (0 where an op has none) and ``[ops]`` signed flags."""
        rows, signed = [], []
        for fn, is_signed in space.values():
            values = fn(bins, *size)
            rows.append(torch.zeros(bins) if values is None else values.to(torch.float32))
            signed.append(is_signed)
        return torch.stack(rows), torch.tensor(signed)

    def _traced_op(
        self,
        img: torch.Tensor,
        names: list[str],
        op: torch.Tensor,
        magnitude: torch.Tensor,
    ) -> torch.Tensor:
        """Apply ``names[op]`` at ``magnitude`` with ``torch.cond`` (compile path)."""
        branches = [
            (lambda x, name=name: self._apply_op(x, name, magnitude.to(x.device))) for name in names
        ]
        return switch(op, branches, img)

    def _signed(
        self, table: torch.Tensor, signs: torch.Tensor, op: torch.Tensor, index: Any
    ) -> torch.Tensor:
        flip = torch.rand(()) <= 0.5
        value = _pick(_pick(table, op), torch.as_tensor(index))
        return torch.where(_pick(signs, op) & flip, -value, value)


class AutoAugment(_AutoAugmentBase):
    """AutoAugment (Cubuk et al., 2018): one of the learned sub-policy pairs per call.

    Example:
        >>> import torch
        >>> t = AutoAugment(AutoAugmentPolicy.IMAGENET, generator=torch.Generator().manual_seed(0))
        >>> t(torch.randint(0, 256, (3, 16, 16), dtype=torch.uint8)).dtype
        torch.uint8
    """

    def __init__(
        self,
        policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
        interpolation: InterpolationMode | str = InterpolationMode.NEAREST,
        fill: float | list[float] | None = None,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(
            interpolation=interpolation, fill=fill, per_sample=per_sample, generator=generator
        )
        self.policy = AutoAugmentPolicy(policy)
        self._policies = _POLICIES[self.policy]

    def _space(self) -> dict[str, tuple[Magnitudes, bool]]:
        return _AUTOAUGMENT_SPACE

    def _draw_plan(self, size: tuple[int, int]) -> Plan:
        policy = self._policies[int(self._randint(0, len(self._policies), ()))]
        plan = []
        for name, probability, index in policy:
            if not float(self._rand()) <= probability:
                continue
            magnitude = 0.0
            if index is not None:
                magnitude = self._magnitude(_AUTOAUGMENT_SPACE, name, 10, index, size)
            plan.append((name, magnitude))
        return plan

    def _compiled(self, img: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        names = [*_AUTOAUGMENT_SPACE, "Identity"]
        table, signs = self._magnitude_table(_AUTOAUGMENT_SPACE, 10, size)
        op_ids = torch.tensor([[names.index(n) for n, _, _ in pair] for pair in self._policies])
        probs = torch.tensor([[p for _, p, _ in pair] for pair in self._policies])
        bins = torch.tensor([[i or 0 for _, _, i in pair] for pair in self._policies])
        choice = torch.randint(len(self._policies), ())
        for slot in range(2):
            op = _pick(op_ids[:, slot], choice)
            magnitude = self._signed(table, signs, op, _pick(bins[:, slot], choice))
            keep = torch.rand(()) <= _pick(probs[:, slot], choice)
            op = torch.where(keep, op, len(names) - 1)
            img = self._traced_op(img, names, op.to(img.device), magnitude)
        return img


class RandAugment(_AutoAugmentBase):
    """RandAugment (Cubuk et al., 2019): ``num_ops`` random operations at one ``magnitude``.

    Example:
        >>> import torch
        >>> t = RandAugment(num_ops=2, magnitude=9, generator=torch.Generator().manual_seed(0))
        >>> t(torch.rand(3, 16, 16)).shape
        torch.Size([3, 16, 16])
    """

    def __init__(
        self,
        num_ops: int = 2,
        magnitude: int = 9,
        num_magnitude_bins: int = 31,
        interpolation: InterpolationMode | str = InterpolationMode.NEAREST,
        fill: float | list[float] | None = None,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(
            interpolation=interpolation, fill=fill, per_sample=per_sample, generator=generator
        )
        if isinstance(num_ops, bool) or not isinstance(num_ops, int) or num_ops < 0:
            raise ValueError(f"RandAugment: num_ops must be an integer >= 0, got {num_ops!r}")
        _check_bins("RandAugment", num_magnitude_bins)
        if not isinstance(magnitude, int) or not 0 <= magnitude < num_magnitude_bins:
            raise ValueError(
                f"RandAugment: magnitude must be an integer in [0, {num_magnitude_bins - 1}], "
                f"got {magnitude!r}"
            )
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins

    def _space(self) -> dict[str, tuple[Magnitudes, bool]]:
        return _RANDAUGMENT_SPACE

    def _draw_plan(self, size: tuple[int, int]) -> Plan:
        names = list(_RANDAUGMENT_SPACE)
        plan = []
        for _ in range(self.num_ops):
            name = names[int(self._randint(0, len(names), ()))]
            bins = self.num_magnitude_bins
            plan.append(
                (name, self._magnitude(_RANDAUGMENT_SPACE, name, bins, self.magnitude, size))
            )
        return plan

    def _compiled(self, img: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        names = list(_RANDAUGMENT_SPACE)
        table, signs = self._magnitude_table(_RANDAUGMENT_SPACE, self.num_magnitude_bins, size)
        for _ in range(self.num_ops):
            op = torch.randint(len(names), ())
            magnitude = self._signed(table, signs, op, self.magnitude)
            img = self._traced_op(img, names, op.to(img.device), magnitude)
        return img


class TrivialAugmentWide(_AutoAugmentBase):
    """TrivialAugment Wide (Müller & Hutter, 2021): one random op at a random magnitude.

    Example:
        >>> import torch
        >>> t = TrivialAugmentWide(generator=torch.Generator().manual_seed(0))
        >>> t(torch.randint(0, 256, (2, 3, 16, 16), dtype=torch.uint8)).shape
        torch.Size([2, 3, 16, 16])
    """

    def __init__(
        self,
        num_magnitude_bins: int = 31,
        interpolation: InterpolationMode | str = InterpolationMode.NEAREST,
        fill: float | list[float] | None = None,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(
            interpolation=interpolation, fill=fill, per_sample=per_sample, generator=generator
        )
        _check_bins("TrivialAugmentWide", num_magnitude_bins)
        self.num_magnitude_bins = num_magnitude_bins

    def _space(self) -> dict[str, tuple[Magnitudes, bool]]:
        return _TRIVIAL_SPACE

    def _draw_plan(self, size: tuple[int, int]) -> Plan:
        names = list(_TRIVIAL_SPACE)
        bins = self.num_magnitude_bins
        name = names[int(self._randint(0, len(names), ()))]
        index = int(self._randint(0, bins, ()))
        return [(name, self._magnitude(_TRIVIAL_SPACE, name, bins, index, size))]

    def _compiled(self, img: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        names = list(_TRIVIAL_SPACE)
        bins = self.num_magnitude_bins
        table, signs = self._magnitude_table(_TRIVIAL_SPACE, bins, size)
        op = torch.randint(len(names), ())
        magnitude = self._signed(table, signs, op, torch.randint(bins, ()))
        return self._traced_op(img, names, op.to(img.device), magnitude)


class AugMix(_AutoAugmentBase):
    """AugMix (Hendrycks et al., 2020): mix the image with ``mixture_width`` augmented chains.

    Chain weights come from Dirichlet(``alpha``) and the original/mixed weight from
    Beta(``alpha``, ``alpha``), per image of the batch (drawn through two Gamma
    samples from ``generator``); the chains' operations are shared by the batch,
    or drawn per image with ``per_sample=True``.

    Example:
        >>> import torch
        >>> t = AugMix(generator=torch.Generator().manual_seed(0))
        >>> t(torch.randint(0, 256, (2, 3, 16, 16), dtype=torch.uint8)).dtype
        torch.uint8
    """

    _PARAMETER_MAX = 10

    def __init__(
        self,
        severity: int = 3,
        mixture_width: int = 3,
        chain_depth: int = -1,
        alpha: float = 1.0,
        all_ops: bool = True,
        interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
        fill: float | list[float] | None = None,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(
            interpolation=interpolation, fill=fill, per_sample=per_sample, generator=generator
        )
        if not isinstance(severity, int) or not 1 <= severity <= self._PARAMETER_MAX:
            raise ValueError(f"AugMix: severity must be an integer in [1, 10], got {severity!r}")
        if not isinstance(mixture_width, int) or mixture_width < 1:
            raise ValueError(
                f"AugMix: mixture_width must be an integer >= 1, got {mixture_width!r}"
            )
        if not isinstance(chain_depth, int) or chain_depth == 0:
            raise ValueError(
                f"AugMix: chain_depth must be a non-zero integer (< 0: random in [1, 3]), "
                f"got {chain_depth!r}"
            )
        if not alpha > 0:
            raise ValueError(f"AugMix: alpha must be > 0, got {alpha!r}")
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = float(alpha)
        self.all_ops = bool(all_ops)

    def _dirichlet(self, n: int, k: int, device: torch.device) -> torch.Tensor:
        """``[n, k]`` Dirichlet(alpha) samples: normalised Gamma draws from the generator."""
        concentration = torch.full((n, k), self.alpha, dtype=torch.float32)
        gamma = self._sample(
            lambda where, **gen: torch._standard_gamma(concentration.to(where), **gen), device
        )
        return gamma / gamma.sum(-1, keepdim=True)

    def _space(self) -> dict[str, tuple[Magnitudes, bool]]:
        return _AUGMIX_SPACE if self.all_ops else _AUGMIX_PARTIAL_SPACE

    def _draw_mix(self, n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """``[n, 1]`` weights of the original and ``[n, width]`` weights of the chains."""
        m = self._dirichlet(n, 2, device)
        return m[:, :1], self._dirichlet(n, self.mixture_width, device) * m[:, 1:]

    def _mix(
        self, batch: torch.Tensor, original: torch.Tensor, weights: torch.Tensor, chains: Any
    ) -> torch.Tensor:
        n = batch.shape[0]
        mix = original.view(n, 1, 1, 1) * batch
        for i, chain in enumerate(chains):
            mix = mix + weights[:, i].view(n, 1, 1, 1) * chain(batch)
        return mix

    def _draw_params(self, img: torch.Tensor) -> dict[str, Any]:
        """Each image's mixing weights and chains, one row per image.

        Example:
            >>> import torch
            >>> t = AugMix(mixture_width=2, per_sample=True)
            >>> t.make_params([torch.zeros(4, 3, 8, 8)])["ops"].shape
            torch.Size([4, 2, 3])
        """
        size, n = (img.shape[-2], img.shape[-1]), self.num_samples(img)
        mix = torch.zeros((n, 1 + self.mixture_width), dtype=torch.float32)
        ops = torch.full((n, self.mixture_width, 3), -1, dtype=torch.int64)
        magnitudes = torch.zeros((n, self.mixture_width, 3), dtype=torch.float64)
        names = list(self._space())
        for i in range(n):
            original, weights = self._draw_mix(1, torch.device("cpu"))
            mix[i] = torch.cat([original, weights], dim=1)[0]
            for c in range(self.mixture_width):
                _write_plan(names, self._draw_plan(size), ops[i, c], magnitudes[i, c])
        return {"ops": ops, "magnitudes": magnitudes, "mix": mix}

    def _apply_one(self, img: torch.Tensor, params: dict[str, Any], i: int) -> torch.Tensor:
        mix = params["mix"][i : i + 1].to(img.device)
        rows = zip(params["ops"][i].tolist(), params["magnitudes"][i].tolist(), strict=True)
        plans = [self._read_plan(ops, mags) for ops, mags in rows]
        chains = [lambda x, plan=plan: self._apply_plan(x, plan) for plan in plans]
        return self._mix(img, mix[:, 0], mix[:, 1:], chains).to(img.dtype)

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        self._check(inpt)
        if "ops" in params:
            return self._per_image(inpt, params)
        size = (inpt.shape[-2], inpt.shape[-1])
        return self._mix_chains(inpt, lambda x: self._apply_plan(x, self._draw_plan(size)))

    def _compiled(self, img: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        return self._mix_chains(img, lambda x: self._traced_chain(x, self._space(), size))

    def _mix_chains(
        self, inpt: torch.Tensor, chain: Callable[[torch.Tensor], torch.Tensor]
    ) -> torch.Tensor:
        """``inpt`` mixed with ``mixture_width`` runs of ``chain`` (one batch of weights)."""
        batch = inpt.reshape(-1, *inpt.shape[-3:])
        original, weights = self._draw_mix(batch.shape[0], inpt.device)
        chains = [chain] * self.mixture_width
        return self._mix(batch, original, weights, chains).reshape(inpt.shape).to(inpt.dtype)

    def _draw_plan(self, size: tuple[int, int]) -> Plan:
        """One chain's operations (``depth`` of them), drawn as the eager chain draws them."""
        space = self._space()
        names = list(space)
        depth = self.chain_depth if self.chain_depth > 0 else int(self._randint(1, 4, ()))
        plan = []
        for _ in range(depth):
            name = names[int(self._randint(0, len(names), ()))]
            index = int(self._randint(0, self.severity, ()))
            plan.append((name, self._magnitude(space, name, self._PARAMETER_MAX, index, size)))
        return plan

    def _traced_chain(
        self, img: torch.Tensor, space: dict[str, tuple[Magnitudes, bool]], size: tuple[int, int]
    ) -> torch.Tensor:
        """One chain drawn as tensors: ``chain_depth`` (or up to 3) steps, the rest Identity."""
        names = list(space)
        table, signs = self._magnitude_table(space, self._PARAMETER_MAX, size)
        all_names = [*names, "Identity"]
        depth = self.chain_depth if self.chain_depth > 0 else torch.randint(1, 4, ())
        for step in range(self.chain_depth if self.chain_depth > 0 else 3):
            op = torch.randint(len(names), ())
            magnitude = self._signed(table, signs, op, torch.randint(self.severity, ()))
            op = torch.where(torch.as_tensor(step) < depth, op, len(names))
            img = self._traced_op(img, all_names, op.to(img.device), magnitude)
        return img
