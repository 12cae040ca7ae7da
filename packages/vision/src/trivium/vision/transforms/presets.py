"""The ImageNet classification recipes of torchvision's ``references/classification/presets.py``.

Example:
    >>> import torch
    >>> train = ImageClassificationTrain(crop_size=32, generator=torch.Generator().manual_seed(0))
    >>> train(torch.zeros(3, 48, 64, dtype=torch.uint8)).shape
    torch.Size([3, 32, 32])
    >>> ImageClassificationEval(crop_size=32, resize_size=36)(torch.zeros(3, 48, 64)).shape
    torch.Size([3, 32, 32])

Both also take one *encoded* JPEG or PNG (bytes, or a 1-D uint8 tensor or array of the
file's bytes): its first geometric step then runs as the fused decode
(``DecodeRandomResizedCrop`` / ``DecodeResize``, decoding to RGB), which draws the same
box from the same generator and differs from decode-then-preset only by the JPEG DCT
scaling (PSNR above 30 dB at 224 x 224; a PNG is decoded in full and gives the same pixels).

    >>> from trivium.vision.io import encode_jpeg
    >>> data = encode_jpeg(torch.full((3, 48, 64), 128, dtype=torch.uint8))
    >>> ImageClassificationEval(crop_size=32, resize_size=36)(data).shape
    torch.Size([3, 32, 32])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from trivium.vision.transforms._base import Compose
from trivium.vision.transforms._scriptable import SequentialModule
from trivium.vision.transforms.conversion import Normalize, ToDtype, ToImage
from trivium.vision.transforms.fused_decode import DecodeRandomResizedCrop, DecodeResize
from trivium.vision.transforms.geometry import (
    CenterCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
)
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = ["ImageClassificationEval", "ImageClassificationTrain", "auto_augment_transform"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def auto_augment_transform(
    name: str,
    interpolation: InterpolationMode = InterpolationMode.BILINEAR,
    ra_magnitude: int = 9,
    augmix_severity: int = 3,
    generator: Any = None,
) -> nn.Module:
    """The auto-augment transform that torchvision's presets' ``auto_augment_policy`` names.

    ``"ra"`` (RandAugment), ``"ta_wide"`` (TrivialAugmentWide), ``"augmix"`` or an
    ``AutoAugmentPolicy`` value (``"imagenet"``, ``"cifar10"``, ``"svhn"``).

    Example:
        >>> type(auto_augment_transform("ta_wide")).__name__
        'TrivialAugmentWide'
    """
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
        raise ValueError(f"auto_augment_policy must be one of {choices}, got {name!r}") from None
    return aa.AutoAugment(policy=policy, interpolation=interpolation, generator=generator)


def is_encoded(data: Any) -> bool:
    """Whether ``data`` is an encoded image (bytes, or a 1-D uint8 tensor or array).

    An image tensor has at least 3 dimensions, so a 1-D uint8 input is unambiguous.

    Example:
        >>> import torch
        >>> is_encoded(b"\\xff\\xd8"), is_encoded(torch.zeros(3, 2, 2, dtype=torch.uint8))
        (True, False)
    """
    if isinstance(data, bytes | bytearray | memoryview):
        return True
    if isinstance(data, np.ndarray | torch.Tensor):
        uint8 = data.dtype == (np.uint8 if isinstance(data, np.ndarray) else torch.uint8)
        return data.ndim == 1 and uint8
    return False


class _DecodesFirst(Compose):
    """A preset whose first step has a fused decode twin used for encoded input."""

    def _use_fused_decode(self, decode: nn.Module) -> None:
        # Kept outside the module tree: the same transform, so state_dict, repr and
        # scripting stay those of the recipe.
        object.__setattr__(self, "_fused_decode", decode)

    def forward(self, *inputs: Any) -> Any:
        """Apply the recipe; one encoded image goes through the fused decode first."""
        if len(inputs) == 1 and is_encoded(inputs[0]):
            image = self._fused_decode(inputs[0])
            for step in self.transforms[1:]:
                image = step(image)
            return image
        return super().forward(*inputs)


class ImageClassificationTrain(_DecodesFirst):
    """Training recipe: RandomResizedCrop, flip, optional auto-augment, float, Normalize, erasing.

    Takes uint8 or uint16 tensors ``[..., 3, H, W]``, PIL images or one encoded JPEG/PNG (see
    the module docstring); returns normalised float32.
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
        fused = DecodeRandomResizedCrop(
            crop_size, interpolation=crop.interpolation, antialias=True, generator=generator
        )
        fused.crop = crop  # one transform, one generator: the same draws either way
        steps: list[nn.Module] = [crop]
        if hflip_prob > 0:
            steps.append(RandomHorizontalFlip(hflip_prob, generator=generator))
        if auto_augment_policy is not None:
            steps.append(
                auto_augment_transform(
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
        self._use_fused_decode(fused)


class ImageClassificationEval(_DecodesFirst):
    """Evaluation recipe: Resize(resize_size), CenterCrop(crop_size), float, Normalize.

    Takes uint8, uint16 or float tensors ``[..., 3, H, W]``, PIL images or one encoded
    JPEG/PNG (see the module docstring); returns normalised float32. Works under
    ``torch.jit.script`` and ``torch.export`` (on tensors).

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
        resize = Resize(resize_size, interpolation=interpolation, antialias=True)
        super().__init__(
            [
                resize,
                CenterCrop(crop_size),
                ToImage(),
                ToDtype(torch.float32, scale=True),
                Normalize(mean=mean, std=std),
            ]
        )
        fused = DecodeResize(resize_size, interpolation=resize.interpolation, antialias=True)
        fused.resize = resize
        self._use_fused_decode(fused)

    def __prepare_scriptable__(self) -> nn.Module:
        tensor_steps = [t for t in self.transforms if not isinstance(t, ToImage)]
        return SequentialModule(*(t.__prepare_scriptable__() for t in tensor_steps))
