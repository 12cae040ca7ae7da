"""``RandomErasing``: erase a random box of the image (Zhong et al., 2017), as torchvision v2.

Example:
    >>> import torch
    >>> t = RandomErasing(p=1.0, value=0, generator=torch.Generator().manual_seed(0))
    >>> bool((t(torch.ones(3, 32, 32)) == 0).any())
    True
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import torch

from trivium.core.transform import check_probability
from trivium.vision.transforms import functional as F
from trivium.vision.transforms._base import ImageTransform
from trivium.vision.transforms._image import check_image

__all__ = ["RandomErasing"]

# Box draws tried per image before giving up (as torchvision).
_ATTEMPTS = 10


def _check_range(name: str, value: Sequence[float], positive: bool) -> tuple[float, float]:
    if not isinstance(value, Sequence) or len(value) != 2:
        raise TypeError(f"RandomErasing: {name} must be a (min, max) pair, got {value!r}")
    low, high = float(value[0]), float(value[1])
    if low > high or low < 0 or (positive and low <= 0):
        raise ValueError(
            f"RandomErasing: {name} must satisfy 0 {'<' if positive else '<='} "
            f"min <= max, got {list(value)}"
        )
    return low, high


class RandomErasing(ImageTransform):
    """Erase a random rectangle with probability ``p`` (torchvision's arguments).

    ``scale`` bounds the box area as a fraction of the image, ``ratio`` its aspect
    ratio (drawn log-uniformly); ``value`` is a number, one number per channel, or
    ``"random"`` (standard normal noise). With ``per_sample=True`` every image
    gets its own coin flip and box, erased at once through a mask (on CPU, where
    the batch goes image by image, by slices).

    Example:
        >>> import torch
        >>> t = RandomErasing(p=1.0, value="random", per_sample=True)
        >>> t(torch.zeros(4, 3, 16, 16)).shape
        torch.Size([4, 3, 16, 16])
    """

    def __init__(
        self,
        p: float = 0.5,
        scale: Sequence[float] = (0.02, 0.33),
        ratio: Sequence[float] = (0.3, 3.3),
        value: float | Sequence[float] | str = 0.0,
        inplace: bool = False,
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        self.p = check_probability(type(self).__name__, p)
        self.scale = _check_range("scale", scale, positive=False)
        self.ratio = _check_range("ratio", ratio, positive=True)
        if self.scale[1] > 1:
            raise ValueError(f"RandomErasing: scale must be within [0, 1], got {list(scale)}")
        if isinstance(value, str):
            if value != "random":
                raise ValueError(
                    f"RandomErasing: value must be a number, numbers or 'random', got {value!r}"
                )
            self.value: list[float] | None = None
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            self.value = [float(value)]
        elif isinstance(value, Sequence) and all(isinstance(v, numbers.Real) for v in value):
            self.value = [float(v) for v in value]
        else:
            raise TypeError(
                f"RandomErasing: value must be a number, numbers or 'random', got {value!r}"
            )
        self.inplace = bool(inplace)

    @property
    def _per_image_params(self) -> tuple[str, ...]:  # type: ignore[override]
        # "v" is per image only as noise; a fill value [C, 1, 1] is shared.
        return ("i", "j", "h", "w") if self.value is not None else ("i", "j", "h", "w", "v")

    def _normal(self, shape: Sequence[int], device: torch.device) -> torch.Tensor:
        return self._sample(
            lambda where, **gen: torch.randn(tuple(shape), device=where, **gen), device
        )

    def _boxes(self, n: int, height: int, width: int, device: torch.device | None) -> dict:
        """One box per image as tensors ``[n]``: the first of 10 draws that fits, as torchvision."""
        area = height * width
        u = self._draw((5, n, _ATTEMPTS), device)
        erase_area = area * (self.scale[0] + (self.scale[1] - self.scale[0]) * u[0])
        log_low, log_high = math.log(self.ratio[0]), math.log(self.ratio[1])
        aspect = torch.exp(log_low + (log_high - log_low) * u[1])
        h = torch.sqrt(erase_area * aspect).round().long()
        w = torch.sqrt(erase_area / aspect).round().long()
        fits = (h < height) & (w < width)
        first = fits.long().argmax(dim=1, keepdim=True)
        h, w = h.gather(1, first)[:, 0], w.gather(1, first)[:, 0]
        i = (u[2, :, 0] * (height - h + 1)).long()
        j = (u[3, :, 0] * (width - w + 1)).long()
        apply = fits.any(dim=1) & (u[4, :, 0] < self.p)
        zero = torch.zeros_like(h)
        return {"i": i, "j": j, "h": torch.where(apply, h, zero), "w": torch.where(apply, w, zero)}

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        check_image(type(self).__name__, img)
        channels, height, width = img.shape[-3:]
        if self.value is not None and len(self.value) not in (1, channels):
            raise ValueError(
                f"RandomErasing: value must have 1 or {channels} (the image's channels) "
                f"entries, got {len(self.value)}"
            )
        tensors = self._tensor_params()
        n = self._num_draws(img)
        boxes = self._boxes(n, height, width, img.device if tensors else None)
        if not tensors:
            box = {k: int(v) for k, v in boxes.items()}
            if self.value is None:
                box["v"] = self._normal((channels, box["h"], box["w"]), img.device)
            else:
                box["v"] = torch.tensor(self.value, device=img.device).view(-1, 1, 1)
            return box
        if self.value is None:
            v = self._normal((*img.shape[:-3], channels, height, width), img.device)
        else:
            v = torch.tensor(self.value, device=img.device).view(-1, 1, 1)
        if n == 1:  # one box for the whole batch, as a mask
            boxes = {k: t.expand(self.num_samples(img)) for k, t in boxes.items()}
        return {**boxes, "v": v}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        if isinstance(params["h"], int) and params["h"] * params["w"] == 0:
            return inpt
        return F.erase_image(
            inpt, params["i"], params["j"], params["h"], params["w"], params["v"], self.inplace
        )
