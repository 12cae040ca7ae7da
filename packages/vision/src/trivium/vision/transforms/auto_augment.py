"""Augmentation policies: ``AutoAugment``, ``RandAugment``, ``TrivialAugmentWide``, ``AugMix``.

Same operation spaces, magnitudes and arguments as ``torchvision.transforms.v2``.
One set of operations is drawn per call and applied to the whole batch (AugMix
mixes with per-image weights, as torchvision). All randomness comes from
``generator``. Under ``torch.compile(fullgraph=True)`` the operation is chosen
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

from trivium.vision.transforms import functional as F
from trivium.vision.transforms._base import ImageTransform
from trivium.vision.transforms._image import check_image
from trivium.vision.transforms._switch import switch
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = ["AugMix", "AutoAugment", "AutoAugmentPolicy", "RandAugment", "TrivialAugmentWide"]

Magnitudes = Callable[[int, int, int], torch.Tensor | None]
Magnitude = float | torch.Tensor


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


# name -> (magnitudes for (num_bins, height, width), signed), as torchvision.
_BASE_SPACE: dict[str, tuple[Magnitudes, bool]] = {
    "ShearX": (_linear(0.3), True),
    "ShearY": (_linear(0.3), True),
    "TranslateX": (lambda bins, h, w: torch.linspace(0.0, 150.0 / 331.0 * w, bins), True),
    "TranslateY": (lambda bins, h, w: torch.linspace(0.0, 150.0 / 331.0 * h, bins), True),
    "Rotate": (_linear(30.0), True),
    "Brightness": (_linear(0.9), True),
    "Color": (_linear(0.9), True),
    "Contrast": (_linear(0.9), True),
    "Sharpness": (_linear(0.9), True),
    "Posterize": (_posterize(8, 4), False),
    "Solarize": (_solarize, False),
    "AutoContrast": (_none, False),
    "Equalize": (_none, False),
}
_AUTOAUGMENT_SPACE = {**_BASE_SPACE, "Invert": (_none, False)}
_RANDAUGMENT_SPACE = {"Identity": (_none, False), **_BASE_SPACE}
_TRIVIAL_SPACE: dict[str, tuple[Magnitudes, bool]] = {
    "Identity": (_none, False),
    "ShearX": (_linear(0.99), True),
    "ShearY": (_linear(0.99), True),
    "TranslateX": (_linear(32.0), True),
    "TranslateY": (_linear(32.0), True),
    "Rotate": (_linear(135.0), True),
    "Brightness": (_linear(0.99), True),
    "Color": (_linear(0.99), True),
    "Contrast": (_linear(0.99), True),
    "Sharpness": (_linear(0.99), True),
    "Posterize": (_posterize(8, 6), False),
    "Solarize": (_solarize, False),
    "AutoContrast": (_none, False),
    "Equalize": (_none, False),
}
_AUGMIX_PARTIAL_SPACE: dict[str, tuple[Magnitudes, bool]] = {
    "ShearX": (_linear(0.3), True),
    "ShearY": (_linear(0.3), True),
    "TranslateX": (lambda bins, h, w: torch.linspace(0.0, w / 3.0, bins), True),
    "TranslateY": (lambda bins, h, w: torch.linspace(0.0, h / 3.0, bins), True),
    "Rotate": (_linear(30.0), True),
    "Posterize": (_posterize(4, 4), False),
    "Solarize": (_solarize, False),
    "AutoContrast": (_none, False),
    "Equalize": (_none, False),
}
_AUGMIX_SPACE = {
    **_AUGMIX_PARTIAL_SPACE,
    "Brightness": (_linear(0.9), True),
    "Color": (_linear(0.9), True),
    "Contrast": (_linear(0.9), True),
    "Sharpness": (_linear(0.9), True),
}

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
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator=generator)
        self.interpolation = InterpolationMode(interpolation)
        if self.interpolation not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR):
            raise ValueError(
                f"{type(self).__name__}: interpolation must be NEAREST or BILINEAR, "
                f"got {self.interpolation}"
            )
        self.fill = fill

    def _check(self, img: torch.Tensor) -> None:
        check_image(type(self).__name__, img, channels=(1, 3))

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
            return F.affine(img, 0.0, [0.0, 0.0], 1.0, shear, center=[0.0, 0.0], **geometry)
        if name in ("TranslateX", "TranslateY"):
            pixels = magnitude.trunc() if tensor else float(int(magnitude))
            shift = (pixels, zero) if name == "TranslateX" else (zero, pixels)
            translate = torch.stack(shift).view(1, 2) if tensor else list(shift)
            return F.affine(img, 0.0, translate, 1.0, [0.0, 0.0], **geometry)
        if name == "Rotate":
            return F.rotate(img, magnitude, **geometry)
        if name == "Brightness":
            return F.adjust_brightness(img, 1.0 + magnitude)
        if name == "Color":
            return F.adjust_saturation(img, 1.0 + magnitude)
        if name == "Contrast":
            return F.adjust_contrast(img, 1.0 + magnitude)
        if name == "Sharpness":
            return F.adjust_sharpness(img, 1.0 + magnitude)
        if name == "Posterize":
            return F.posterize(img, magnitude if tensor else int(magnitude))
        if name == "Solarize":
            bound = 1.0 if img.is_floating_point() else 255.0
            return F.solarize(img, bound * magnitude)
        if name == "AutoContrast":
            return F.autocontrast(img)
        if name == "Equalize":
            return F.equalize(img)
        if name == "Invert":
            return F.invert(img)
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
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        self.policy = AutoAugmentPolicy(policy)
        self._policies = _POLICIES[self.policy]

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        self._check(inpt)
        size = (inpt.shape[-2], inpt.shape[-1])
        if torch.compiler.is_compiling():
            return self._compiled(inpt, size)
        policy = self._policies[int(self._randint(0, len(self._policies), ()))]
        for name, probability, index in policy:
            if not float(self._rand()) <= probability:
                continue
            magnitude = 0.0
            if index is not None:
                magnitude = self._magnitude(_AUTOAUGMENT_SPACE, name, 10, index, size)
            inpt = self._apply_op(inpt, name, magnitude)
        return inpt

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
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        if isinstance(num_ops, bool) or not isinstance(num_ops, int) or num_ops < 0:
            raise ValueError(f"RandAugment: num_ops must be an integer >= 0, got {num_ops!r}")
        if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 2:
            raise ValueError(
                "RandAugment: num_magnitude_bins must be an integer >= 2, "
                f"got {num_magnitude_bins!r}"
            )
        if not isinstance(magnitude, int) or not 0 <= magnitude < num_magnitude_bins:
            raise ValueError(
                f"RandAugment: magnitude must be an integer in [0, {num_magnitude_bins - 1}], "
                f"got {magnitude!r}"
            )
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        self._check(inpt)
        size = (inpt.shape[-2], inpt.shape[-1])
        names = list(_RANDAUGMENT_SPACE)
        bins = self.num_magnitude_bins
        if torch.compiler.is_compiling():
            table, signs = self._magnitude_table(_RANDAUGMENT_SPACE, bins, size)
            for _ in range(self.num_ops):
                op = torch.randint(len(names), ())
                magnitude = self._signed(table, signs, op, self.magnitude)
                inpt = self._traced_op(inpt, names, op.to(inpt.device), magnitude)
            return inpt
        for _ in range(self.num_ops):
            name = names[int(self._randint(0, len(names), ()))]
            magnitude = self._magnitude(_RANDAUGMENT_SPACE, name, bins, self.magnitude, size)
            inpt = self._apply_op(inpt, name, magnitude)
        return inpt


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
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 2:
            raise ValueError(
                f"TrivialAugmentWide: num_magnitude_bins must be an integer >= 2, "
                f"got {num_magnitude_bins!r}"
            )
        self.num_magnitude_bins = num_magnitude_bins

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        self._check(inpt)
        size = (inpt.shape[-2], inpt.shape[-1])
        names = list(_TRIVIAL_SPACE)
        bins = self.num_magnitude_bins
        if torch.compiler.is_compiling():
            table, signs = self._magnitude_table(_TRIVIAL_SPACE, bins, size)
            op = torch.randint(len(names), ())
            magnitude = self._signed(table, signs, op, torch.randint(bins, ()))
            return self._traced_op(inpt, names, op.to(inpt.device), magnitude)
        name = names[int(self._randint(0, len(names), ()))]
        index = int(self._randint(0, bins, ()))
        magnitude = self._magnitude(_TRIVIAL_SPACE, name, bins, index, size)
        return self._apply_op(inpt, name, magnitude)


class AugMix(_AutoAugmentBase):
    """AugMix (Hendrycks et al., 2020): mix the image with ``mixture_width`` augmented chains.

    Chain weights come from Dirichlet(``alpha``) and the original/mixed weight from
    Beta(``alpha``, ``alpha``), per image of the batch (drawn through two Gamma
    samples from ``generator``); the chains' operations are shared by the batch.

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
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
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
        if torch.compiler.is_compiling():
            gamma = torch._standard_gamma(concentration.to(device))
        else:
            gamma = torch._standard_gamma(
                concentration.to(self._device()), generator=self._active_generator()
            ).to(device)
        return gamma / gamma.sum(-1, keepdim=True)

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        self._check(inpt)
        space = _AUGMIX_SPACE if self.all_ops else _AUGMIX_PARTIAL_SPACE
        size = (inpt.shape[-2], inpt.shape[-1])
        batch = inpt.reshape(-1, *inpt.shape[-3:])
        n = batch.shape[0]
        m = self._dirichlet(n, 2, inpt.device)
        weights = self._dirichlet(n, self.mixture_width, inpt.device) * m[:, 1:]
        mix = m[:, 0].view(n, 1, 1, 1) * batch
        for i in range(self.mixture_width):
            aug = self._chain(batch, space, size)
            mix = mix + weights[:, i].view(n, 1, 1, 1) * aug
        return mix.reshape(inpt.shape).to(inpt.dtype)

    def _chain(
        self, img: torch.Tensor, space: dict[str, tuple[Magnitudes, bool]], size: tuple[int, int]
    ) -> torch.Tensor:
        names = list(space)
        if torch.compiler.is_compiling():
            table, signs = self._magnitude_table(space, self._PARAMETER_MAX, size)
            all_names = [*names, "Identity"]
            depth = self.chain_depth if self.chain_depth > 0 else torch.randint(1, 4, ())
            for step in range(self.chain_depth if self.chain_depth > 0 else 3):
                op = torch.randint(len(names), ())
                magnitude = self._signed(table, signs, op, torch.randint(self.severity, ()))
                op = torch.where(torch.as_tensor(step) < depth, op, len(names))
                img = self._traced_op(img, all_names, op.to(img.device), magnitude)
            return img
        depth = self.chain_depth if self.chain_depth > 0 else int(self._randint(1, 4, ()))
        for _ in range(depth):
            name = names[int(self._randint(0, len(names), ()))]
            index = int(self._randint(0, self.severity, ()))
            magnitude = self._magnitude(space, name, self._PARAMETER_MAX, index, size)
            img = self._apply_op(img, name, magnitude)
        return img
