"""The ImageNet classification recipes of torchvision's ``references/classification/presets.py``.

Example:
    >>> import torch
    >>> train = ImageClassificationTrain(crop_size=32, generator=torch.Generator().manual_seed(0))
    >>> train(torch.zeros(3, 48, 64, dtype=torch.uint8)).shape
    torch.Size([3, 32, 32])
    >>> ImageClassificationEval(crop_size=32, resize_size=36)(torch.zeros(3, 48, 64)).shape
    torch.Size([3, 32, 32])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from trivium.core import Compose
from trivium.vision.transforms._scriptable import SequentialModule
from trivium.vision.transforms.conversion import Normalize, ToDtype, ToImage
from trivium.vision.transforms.geometry import (
    CenterCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
)
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = ["ImageClassificationEval", "ImageClassificationTrain"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _policy(
    name: str,
    interpolation: InterpolationMode,
    ra_magnitude: int,
    augmix_severity: int,
    generator: Any,
) -> nn.Module:
    """The auto-augment transform named as in torchvision's presets ("ra", "ta_wide", ...)."""
    # Imported here: the policies live in a separate module of the package.
    from trivium.vision.transforms import auto_augment as aa

    if name == "ra":
        return aa.RandAugment(
            interpolation=interpolation, magnitude=ra_magnitude, generator=generator
        )
    if name == "ta_wide":
        return aa.TrivialAugmentWide(interpolation=interpolation, generator=generator)
    if name == "augmix":
        return aa.AugMix(interpolation=interpolation, severity=augmix_severity, generator=generator)
    try:
        policy = aa.AutoAugmentPolicy(name)
    except ValueError:
        choices = ["ra", "ta_wide", "augmix", *(p.value for p in aa.AutoAugmentPolicy)]
        raise ValueError(
            f"ImageClassificationTrain: auto_augment_policy must be one of {choices}, got {name!r}"
        ) from None
    return aa.AutoAugment(policy=policy, interpolation=interpolation, generator=generator)


class ImageClassificationTrain(Compose):
    """Training recipe: RandomResizedCrop, flip, optional auto-augment, float, Normalize, erasing.

    Takes uint8 tensors ``[..., 3, H, W]`` or PIL images; returns normalised float32.
    ``auto_augment_policy``: None, ``"ra"``, ``"ta_wide"``, ``"augmix"`` or an
    ``AutoAugmentPolicy`` value (``"imagenet"``, ...). ``generator`` seeds every
    random step.

    Example:
        >>> import torch
        >>> t = ImageClassificationTrain(crop_size=16, auto_augment_policy="ta_wide")
        >>> t(torch.zeros(3, 20, 20, dtype=torch.uint8)).dtype
        torch.float32
    """

    def __init__(
        self,
        crop_size: int | Sequence[int],
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
        hflip_prob: float = 0.5,
        auto_augment_policy: str | None = None,
        ra_magnitude: int = 9,
        augmix_severity: int = 3,
        random_erase_prob: float = 0.0,
        generator: torch.Generator | None = None,
    ) -> None:
        crop = RandomResizedCrop(
            crop_size, interpolation=interpolation, antialias=True, generator=generator
        )
        steps: list[nn.Module] = [crop]
        if hflip_prob > 0:
            steps.append(RandomHorizontalFlip(hflip_prob, generator=generator))
        if auto_augment_policy is not None:
            steps.append(
                _policy(
                    auto_augment_policy,
                    crop.interpolation,
                    ra_magnitude,
                    augmix_severity,
                    generator,
                )
            )
        steps += [ToImage(), ToDtype(torch.float32, scale=True), Normalize(mean=mean, std=std)]
        if random_erase_prob > 0:
            from trivium.vision.transforms.erasing import RandomErasing

            steps.append(RandomErasing(p=random_erase_prob, generator=generator))
        super().__init__(steps)


class ImageClassificationEval(Compose):
    """Evaluation recipe: Resize(resize_size), CenterCrop(crop_size), float, Normalize.

    Takes uint8 or float tensors ``[..., 3, H, W]`` or PIL images; returns
    normalised float32. Works under ``torch.jit.script`` and ``torch.export``.

    Example:
        >>> import torch
        >>> t = ImageClassificationEval(crop_size=8, resize_size=10)
        >>> torch.jit.script(t)(torch.zeros(3, 20, 30, dtype=torch.uint8)).shape
        torch.Size([3, 8, 8])
    """

    def __init__(
        self,
        crop_size: int | Sequence[int],
        resize_size: int | Sequence[int] = 256,
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        interpolation: InterpolationMode | str = InterpolationMode.BILINEAR,
    ) -> None:
        super().__init__(
            [
                Resize(resize_size, interpolation=interpolation, antialias=True),
                CenterCrop(crop_size),
                ToImage(),
                ToDtype(torch.float32, scale=True),
                Normalize(mean=mean, std=std),
            ]
        )

    def __prepare_scriptable__(self) -> nn.Module:
        tensor_steps = [t for t in self.transforms if not isinstance(t, ToImage)]
        return SequentialModule(*(t.__prepare_scriptable__() for t in tensor_steps))
